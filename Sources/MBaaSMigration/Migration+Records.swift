import Foundation
import MBaaSCore

extension ACL.Principal {
    var isRoleOrGroup: Bool {
        switch self {
        case .role, .group: true
        default: false
        }
    }
}

/// Class names under which sources point at users.
let userClassNames: Set<String> = ["_User", "user", "users"]

extension Migration {

    /// A source record made ready for the target.
    struct Prepared {
        var sourceId: String
        var record: Record
        /// Fields to set in phase 2: the source value (pointers with source classes and ids).
        var fixups: JSONObject = JSONObject()
        /// Files to attach after the record exists.
        var attachments: [(field: String, ref: FileReference, original: Value)] = []
        /// Files to copy into the target's store before the record is written (File values).
        var inlineFiles: [(field: String, ref: FileReference, original: Value)] = []
        /// Set when an earlier run wrote this record and died before recording it.
        var existingTargetId: String?
        /// The source id the record carries from an earlier migration, where it differs from ``sourceId``
        /// (``Migration/lineageKey(_:)``): the target's source-id field holds it.
        var carriedId: String?
        /// What the record is found by on the target.
        var key: String { carriedId ?? sourceId }
        /// Why the mapping would overwrite one of this record's values (a field renamed onto a field it also has, a
        /// lineage field it holds data in): it is not written, and fails named (``overwrite(_:rules:)``).
        var overwrites: String?
    }

    /// The id maps a batch needs: records by source class, and users.
    struct Maps {
        var records: [String: [String: String]] = [:]
        var users: [String: String] = [:]

        func resolve(_ p: Pointer) -> String? {
            userClassNames.contains(p.className) ? users[p.objectId] : records[p.className]?[p.objectId]
        }
    }

    /// Looks up every pointer target and ACL user of the records in one query per class.
    func maps(for records: [Record], _ state: MigrationState) throws(MBaaSError) -> Maps {
        var wanted: [String: Set<String>] = [:]
        var users: Set<String> = []
        func collect(_ v: Value) {
            switch v {
            case .pointer(let p):
                if userClassNames.contains(p.className) { users.insert(p.objectId) } else { wanted[p.className, default: []].insert(p.objectId) }
            case .array(let items): items.forEach(collect)
            default: break
            }
        }
        for r in records {
            r.fields.values.forEach(collect)
            for principal in r.acl?.entries.keys ?? [:].keys { if case .user(let id) = principal { users.insert(id) } }
        }
        var maps = Maps()
        for (cls, ids) in wanted { maps.records[cls] = try state.mapped(.record, className: cls, sourceIds: Array(ids)) }
        maps.users = try state.mapped(.user, className: "_User", sourceIds: Array(users))
        return maps
    }

    /// Renames, drops, converts file links, rewrites pointers and ACL principals, and adds the source metadata.
    /// With `verifying`, pointers that are not mapped are kept with their source ids (what phase 2 leaves), and
    /// nothing is reported. A mapped ACL the target stores narrowed becomes what `narrowed` says
    /// (``narrowings(for:maps:reporting:)``).
    func prepare(_ source: Record, maps: Maps, verifying: Bool = false, narrowed: [ACL: ACL] = [:]) -> Prepared {
        let cls = source.className
        let sourceId = source.id ?? ""
        var record = Record(className: mapping.targetClass(cls))
        // The source's fields and up to three added (source id and timestamps): no growing on the way.
        record.fields.reserveCapacity(source.fields.count + 3)
        // Filled in at the end: holding `record` here would make its first change copy the fields.
        var prepared = Prepared(sourceId: sourceId, record: Record(className: record.className))
        let keepsIds = traits.keepsIds
        let attaches = traits.attachesFiles
        let fileLinks = links.withLock { $0[cls] } ?? mapping.fileLinkFields(cls)
        let rules = mapping.classes[cls]?.fields ?? [:]
        for key in source.fields.keys.sorted() {
            var value = source.fields[key]!
            let rule = rules.isEmpty ? nil : rules[key]
            if rule?.drop == true { continue }
            let name = rule?.rename ?? key
            // Vendor-typed values with no neutral form (an NCMB Relation marker, which lists no members) cannot be
            // written anywhere: reported, not carried.
            if case .object(let o) = value, let type = o["__type"]?.stringValue {
                if !verifying {
                    box.update { $0.problem("\(cls).\(key): \(type) values have no neutral form and are not carried (relations are re-created from pointers or roles)") }
                }
                continue
            }
            // File links: File values, and strings the mapping marks as file names.
            var fileRef: FileReference?
            if case .file(let ref) = value { fileRef = ref } else if !fileLinks.isEmpty, fileLinks.contains(key), case .string(let n) = value, !n.isEmpty {
                fileRef = FileReference(name: n)
            }
            if let ref = fileRef {
                // Attached after the record exists; or copied into the store first, the field set from the copy.
                if attaches {
                    prepared.attachments.append((name, ref, value))
                } else {
                    prepared.inlineFiles.append((name, ref, value))
                    record.fields[name] = value
                }
                continue
            }
            // Pointers (alone or in arrays): rewrite what is mapped, keep the rest for phase 2.
            if containsPointer(value) {
                var unresolved = false
                let rewritten = rewrite(value, maps: maps, unresolved: &unresolved)
                if unresolved {
                    prepared.fixups[name] = value.json
                    guard keepsIds || verifying else { continue }
                    value = rewritten   // ids are kept: point at the source id until phase 2 confirms it
                } else {
                    value = rewritten
                }
            }
            record.fields[name] = value
        }
        if let acl = source.acl, traits.acl {
            let mapped = mapACL(acl, maps: maps, className: cls, sourceId: sourceId, reporting: !verifying)
            record.acl = narrowed.isEmpty ? mapped : narrowed[mapped] ?? mapped
        }
        // Lineage: the source id and timestamps, unless the record carries them from an earlier migration (copied
        // above under their own names): then the first source's are kept, through every hop.
        func carries(_ field: String) -> Bool { rules[field] == nil && Self.carriedLineage(source, field) != nil }
        if let f = mapping.sourceIdField, !carries(f) { record.fields[f] = .string(sourceId) }
        if traits.clientTimestamps {
            record.createdAt = source.createdAt
            record.updatedAt = source.updatedAt
        } else if mapping.keepSourceTimestamps {
            if let c = source.createdAt, !carries(mapping.sourceCreatedAtField) { record.fields[mapping.sourceCreatedAtField] = .date(c) }
            if let u = source.updatedAt, !carries(mapping.sourceUpdatedAtField) { record.fields[mapping.sourceUpdatedAtField] = .date(u) }
        }
        if keepsIds { record.id = sourceId }
        let key = lineageKey(source)
        if key != sourceId { prepared.carriedId = key }
        prepared.overwrites = overwrite(source, rules: rules)
        prepared.record = record
        return prepared
    }

    /// The mapping entry that would overwrite a value of `source` (which the plan's checks of the sampled records
    /// did not see): a field renamed onto a field the record also has and keeps, or a lineage field (the source id,
    /// or the source timestamps where the target sets its own) that holds data of the record's own rather than lineage
    /// an earlier migration wrote. Null values lose nothing. `nil`: nothing is overwritten.
    func overwrite(_ source: Record, rules: [String: MigrationMapping.FieldRule]) -> String? {
        let cls = source.className
        func holds(_ f: String) -> Bool { source.fields[f].map { !$0.isNull } ?? false }
        func kept(_ f: String) -> Bool { rules[f].map { !$0.drop && $0.rename == nil } ?? true }
        for (field, rule) in rules.sorted(by: { $0.key < $1.key }) {
            guard !rule.drop, let name = rule.rename, name != field, holds(field), holds(name), kept(name) else { continue }
            return "mapping $.classes.\(cls).fields.\(field).rename: the record also has '\(name)', which the renamed '\(field)' would overwrite, so it was not written"
        }
        func own(_ name: String) -> Bool { holds(name) && rules[name] == nil && Self.carriedLineage(source, name) == nil }
        var lineage: (name: String, path: String)?
        if let f = mapping.sourceIdField, own(f) {
            lineage = (f, "$.sourceIdField")
        } else if mapping.keepSourceTimestamps && !traits.clientTimestamps {
            if own(mapping.sourceCreatedAtField) { lineage = (mapping.sourceCreatedAtField, "$.sourceCreatedAtField") }
            else if own(mapping.sourceUpdatedAtField) { lineage = (mapping.sourceUpdatedAtField, "$.sourceUpdatedAtField") }
        }
        guard let l = lineage else { return nil }
        return "mapping \(l.path): the record has a field '\(l.name)' of its own, which the source's lineage would overwrite, so it was not written"
    }

    /// Every pointer field (renamed) and the ACL of a source record, as phase-2 fix-ups: for a record an earlier run
    /// wrote before it died, whose pointers and ACL may have been written incompletely.
    func fullFixups(_ source: Record) -> JSONObject {
        var fixups = JSONObject()
        for (key, value) in source.fields where containsPointer(value) {
            let rule = mapping.rule(className: source.className, field: key)
            if rule?.drop == true { continue }
            fixups[rule?.rename ?? key] = value.json
        }
        if let acl = source.acl, target.capabilities.has(.acl) { fixups[Self.aclFixupKey] = acl.json }
        return fixups
    }

    /// The key under which a fix-up carries the source ACL (not a field name: fields never start with `$`).
    static let aclFixupKey = "$acl"

    func containsPointer(_ v: Value) -> Bool {
        switch v {
        case .pointer: true
        case .array(let items): items.contains(where: containsPointer)
        default: false
        }
    }

    /// The value with every pointer's class renamed and its id mapped (unmapped ids kept, `unresolved` set).
    func rewrite(_ v: Value, maps: Maps, unresolved: inout Bool) -> Value {
        switch v {
        case .pointer(let p):
            let cls = userClassNames.contains(p.className) ? p.className : mapping.targetClass(p.className)
            if let t = maps.resolve(p) { return .pointer(Pointer(className: cls, objectId: t)) }
            unresolved = true
            return .pointer(Pointer(className: cls, objectId: p.objectId))
        case .array(let items):
            var out: [Value] = []
            for item in items { out.append(rewrite(item, maps: maps, unresolved: &unresolved)) }
            return .array(out)
        default: return v
        }
    }

    func copyRecords(_ plan: MigrationPlan.ClassPlan, _ state: MigrationState) async throws {
        let cls = plan.source
        let index = box.update { $0.counts(for: cls, target: plan.target) }
        observer(.classStarted(source: cls, target: plan.target, total: plan.count))
        // Writes an earlier run left in flight: find what reached the target before writing anything again.
        var resumed: [String: String] = [:]
        let (leftBehind, pending) = try await offPool { (try state.lastPendingBatch(.record, className: cls), try state.pending(.record, className: cls)) }
        if !pending.isEmpty {
            resumed = try await findExisting(className: plan.target, sourceIds: pending)
            observer(.note("\(cls): \(pending.count) writes were in flight when the last run stopped; \(resumed.count) reached the target"))
        }
        // A target class that already holds records this state does not know (a run with another state folder, or
        // one whose state was lost): every batch is looked up by source id before it is written.
        var found = false
        if try await offPool({ try state.mappedCount(.record, className: cls) }) == 0, target.capabilities.has(.count) {
            found = ((try? await target.count(Query(plan.target))) ?? 0) > 0
        }
        let adopt = found
        let pendingSet = Set(pending)
        if adopt { observer(.note("\(cls): the target's \(plan.target) already holds records; each batch is matched by source id first")) }
        let batchSize = writeBatchSize
        let pageSize = max(1, source.capabilities.maxPageSize)
        var batch: [Record] = []
        var done = 0
        // Mappings are committed in groups (``MigrationState/writeBehindLimit``); what waits is committed when the
        // class ends, also when it fails.
        do {
            try await copyBatches()
        } catch {
            _ = try? await offPool { try state.flushWritten() }
            throw error
        }
        try await offPool { try state.flushWritten() }
        // Every record the last run left in flight was found above or has been written again: its marks go.
        if !pending.isEmpty { try await offPool { try state.settlePending(.record, className: cls, through: leftBehind) } }
        func copyBatches() async throws {
            try await withThrowingTaskGroup(of: Int.self) { group in
                var inFlight = 0
                func submit(_ records: [Record]) async throws {
                    if inFlight >= max(1, options.concurrency) {
                        done += try await group.next() ?? 0
                        inFlight -= 1
                        observer(.progress(source: cls, done: done, total: plan.count))
                        try await keepWarnings(state)
                    }
                    let resumedNow = resumed
                    group.addTask {
                        try await self.writeBatch(records, className: cls, index: index, resumed: resumedNow, adopt: adopt, pending: pendingSet, state)
                    }
                    inFlight += 1
                }
                for try await record in source.records(matching: Query(cls), pageSize: pageSize).readingAhead() {
                    batch.append(record)
                    if batch.count >= batchSize {
                        try await submit(batch)
                        batch = []
                    }
                }
                if !batch.isEmpty { try await submit(batch) }
                while let n = try await group.next() {
                    done += n
                    observer(.progress(source: cls, done: done, total: plan.count))
                    try await keepWarnings(state)
                }
            }
        }
        try await copyAttachments(className: cls, targetClass: plan.target, state)
        let targetName = target.adapterName
        box.update { $0.warnEmptyStrings(className: cls, target: targetName) }
        observer(.classFinished(box.value.classes[index]))
    }

    /// The first file a record links whose name holds NUL (a `File` value, or a string in a field the mapping marks as
    /// a file link), with the error naming the field: the state would key the file cut at the NUL, so another file of
    /// that name would count as linked or copied.
    /// `nil` when every linked name is keyable; fields the mapping drops are not looked at (never written).
    func nulFileName(_ record: Record) -> (name: String, error: MBaaSError)? {
        let fileLinks = links.withLock { $0[record.className] } ?? mapping.fileLinkFields(record.className)
        let rules = mapping.classes[record.className]?.fields ?? [:]
        for (key, value) in record.fields where rules[key]?.drop != true {
            let name: String?
            switch value {
            case .file(let ref): name = ref.name
            case .string(let s) where fileLinks.contains(key): name = s
            default: name = nil
            }
            guard let name else { continue }
            do throws(MBaaSError) { try StoreValidation.noNUL(name, "file name in field \(key)") } catch { return (name, error) }
        }
        return nil
    }

    /// Writes one batch; returns how many source records it handled.
    func writeBatch(
        _ records: [Record], className cls: String, index: Int, resumed: [String: String], adopt: Bool, pending: Set<String> = [],
        _ state: MigrationState
    ) async throws -> Int {
        box.update { $0.classes[index].read += records.count }
        var seen = Set<String>()
        var unique: [Record] = []
        for r in records {
            guard let id = r.id, !id.isEmpty else {
                box.update {
                    $0.classes[index].failed += 1
                    $0.add(.init(kind: "failed", className: cls, sourceId: nil, detail: "a source record has no id"))
                }
                continue
            }
            // The state database keys records by their source id, in SQLite: a NUL would cut the key short, so two
            // ids could share one mapping (one record skipped as written, pointers to the wrong one).
            do throws(MBaaSError) { try StoreValidation.noNUL(id, "source record id") } catch {
                box.update {
                    $0.classes[index].failed += 1
                    $0.add(.init(kind: "failed", className: cls, sourceId: id, detail: error.message))
                }
                continue
            }
            if seen.insert(id).inserted { unique.append(r) }
        }
        let uniqueIds = unique.map { $0.id! }
        let already = try await offPool { try state.mapped(.record, className: cls, sourceIds: uniqueIds) }
        box.update { $0.classes[index].skipped += already.count }
        var unmapped = unique.filter { already[$0.id!] == nil }
        // The same for a file a record to write links: the state keys attachments and copies by file name. The file
        // is not tried again as one no record links to (it would fail there a second time).
        unmapped.removeAll { r in
            guard let problem = nulFileName(r) else { return false }
            unwrittenLinks.withLock { _ = $0.insert(problem.name) }
            box.update {
                $0.classes[index].failed += 1
                $0.add(.init(kind: "failed", className: cls, sourceId: r.id, detail: problem.error.message))
            }
            return true
        }
        guard !unmapped.isEmpty else { return records.count }
        if readsRecordACLs || readsRecordACLsForLoss {
            // A record whose ACL cannot be read is not written (without one it would get the target's default, open
            // to everyone on most stores): it fails, named, and the next run tries it again.
            let (read, failed) = try await withSourceACLs(unmapped, className: cls)
            unmapped = read
            if !failed.isEmpty {
                // One that may already be on the target (left in flight by the last run, or on a target adopted
                // with records of its own) keeps a mark of its own: the next run looks it up before writing it,
                // since the class's earlier marks go when it ends.
                let unsure = failed.map(\.0).filter { adopt || resumed[$0] != nil }
                if !unsure.isEmpty { _ = try await offPool { try state.beginWrites(.record, className: cls, sourceIds: unsure) } }
                box.update { report in
                    report.classes[index].failed += failed.count
                    for (id, detail) in failed { report.add(.init(kind: "failed", className: cls, sourceId: id, detail: detail)) }
                }
            }
            guard !unmapped.isEmpty else { return records.count }
        }
        let todo = unmapped
        // An empty string the target reads back absent is lost there: counted per field, warned when the class ends.
        if target.capabilities.has(.emptyStringsAbsent) {
            let empties = todo.flatMap { r in r.fields.filter { $0.value == .string("") }.map { ($0.key, r.id!) } }
            if !empties.isEmpty {
                box.update { report in
                    for (field, id) in empties { report.noteEmptyStrings(className: cls, field: field, sourceId: id) }
                }
            }
        }
        // Pointers to records of classes still being copied are looked up in the state's database, which a
        // mapping commit may hold: off the cooperative pool, like every other state call of a batch.
        let maps = try await offPool { try self.maps(for: todo, state) }
        let narrowed = await narrowings(for: todo, maps: maps, reporting: true, perRecordWidening: true)
        var prepared = todo.map { prepare($0, maps: maps, narrowed: narrowed) }
        var existing = resumed
        // Looked up by the key each is found by (a carried source id, else its id): on an adopted target every record;
        // else those left in flight that carry a source id of an earlier migration (the look-up of the class's
        // in-flight marks went by id).
        let lookUp = adopt ? prepared : prepared.filter { $0.carriedId != nil && pending.contains($0.sourceId) && resumed[$0.sourceId] == nil }
        if !lookUp.isEmpty {
            let found = try await findExistingRetrying(className: mapping.targetClass(cls), sourceIds: lookUp.map(\.key))
            for p in lookUp { if let t = found[p.key] { existing[p.sourceId] = t } }
        }
        for (i, source) in zip(prepared.indices, todo) {
            prepared[i].existingTargetId = existing[prepared[i].sourceId] ?? resumed[prepared[i].sourceId]
            if prepared[i].existingTargetId != nil {
                prepared[i].fixups = fullFixups(source)
                prepared[i].inlineFiles = []
            }
        }
        // A record whose ACL the target cannot hold (it keeps none, or would store a wider one) is not written: it
        // fails, named, and so nothing private becomes readable by more people; unless its class allows the loss
        // (--acl-loss allow, or the mapping's "aclLoss"): then it is written and listed, a warning each.
        let allowLoss = allowsACLLoss(cls)
        var aclRefused: [String: String] = [:]
        for (i, source) in zip(prepared.indices, todo) where prepared[i].existingTargetId == nil {
            guard let why = aclLoss(source, maps: maps, narrowed: narrowed) else { continue }
            let id = prepared[i].sourceId
            if allowLoss {
                box.update { $0.warn(.init(kind: "acl", className: cls, sourceId: id, detail: "\(why); written so (--acl-loss allow)")) }
            } else {
                aclRefused[id] = "\(why), so the record was not written (--acl-loss allow writes it)"
                for f in prepared[i].inlineFiles + prepared[i].attachments where f.ref.attachment == nil { unwrittenLinks.withLock { _ = $0.insert(f.ref.name) } }
                prepared[i].inlineFiles = []
                prepared[i].attachments = []
            }
        }
        // File values go into the target's store before the records that hold them. Those already copied (by this
        // run or an earlier one) are looked up for the whole batch at once, since many records often link one file;
        // the others are copied side by side, up to `fileConcurrency` at a time: one after another, each copy's round
        // trips (source, target, state) set the pace of the whole class.
        var files: [String: LinkedFileCopy] = [:]
        var missing: [(key: String, ref: FileReference)] = []
        for p in prepared where p.existingTargetId == nil {
            for f in p.inlineFiles {
                let key = Self.fileKey(f.ref)
                if files[key] == nil { files[key] = .missing; missing.append((key, f.ref)) }
            }
        }
        if !missing.isEmpty {
            let keys = missing.map(\.key)
            let copiedBefore = try await offPool { try state.copiedFiles(keys) }
            missing.removeAll { copiedBefore[$0.key] != nil }
            for (key, copied) in copiedBefore { files[key] = .copied(copied.target) }
            try await withThrowingTaskGroup(of: (String, LinkedFileCopy).self) { group in
                var inFlight = 0
                for (key, ref) in missing {
                    if inFlight >= options.fileCopiesInFlight, let (k, copied) = try await group.next() {
                        files[k] = copied
                        inFlight -= 1
                    }
                    group.addTask { (key, try await self.copySharedFile(ref, key: key, linked: true, allowACLLoss: allowLoss, state)) }
                    inFlight += 1
                }
                for try await (k, copied) in group { files[k] = copied }
            }
        }
        // A record linking a file that could not be copied is not written: it fails, named with the file and why,
        // and the next run tries it again (written with its field as the source had it, it would be mapped, and its
        // file never tried again).
        var refused: [String: String] = [:]
        for p in prepared where p.existingTargetId == nil { if let why = p.overwrites { refused[p.sourceId] = why } }
        for i in prepared.indices where !prepared[i].inlineFiles.isEmpty && prepared[i].existingTargetId == nil {
            for f in prepared[i].inlineFiles {
                switch files[Self.fileKey(f.ref)] ?? .missing {
                case .copied(let ref):
                    prepared[i].record.fields[f.field] = .file(ref)
                case .missing:
                    // Not in the source's file store: each record linking it is named.
                    warnMissingFile(f.ref, className: cls, sourceId: prepared[i].sourceId)
                    prepared[i].record.fields[f.field] = f.original
                case .failed(let error):
                    refused[prepared[i].sourceId] = refused[prepared[i].sourceId]
                        ?? "file '\(f.ref.name)' (field \(f.field)) could not be copied, so the record was not written: \(error)"
                }
            }
        }
        refused.merge(aclRefused) { a, _ in a }
        let linkFields = Set(prepared.flatMap { ($0.attachments + $0.inlineFiles).map(\.field) })
        if !linkFields.isEmpty { try await offPool { for f in linkFields { try state.addFileField(className: cls, field: f) } } }
        let toCreate = prepared.filter { $0.existingTargetId == nil && refused[$0.sourceId] == nil }
        let creating = toCreate.map(\.sourceId)
        let inFlight = creating.isEmpty ? nil : try await offPool { try state.beginWrites(.record, className: cls, sourceIds: creating) }
        let outcome = try await createWithRetry(toCreate, className: cls)
        var written: [MigrationState.Written] = []
        for p in prepared {
            guard let targetId = p.existingTargetId ?? outcome.created[p.sourceId] else { continue }
            written.append(.init(sourceId: p.sourceId, targetId: targetId, fixups: p.fixups.isEmpty ? nil : .object(p.fixups),
                                 attachments: p.attachments))
        }
        // Failed writes stay in the batch's mark until it is settled with these mappings: nothing of them reached the
        // target, and the next run tries them again. Those whose outcome is unknown get a mark of their own first,
        // committed before the batch's goes: the next run looks them up on the target before writing them again.
        if !outcome.unknown.isEmpty {
            let unknown = outcome.unknown
            _ = try await offPool { try state.beginWrites(.record, className: cls, sourceIds: unknown) }
        }
        let done = written
        try await offPool { try state.recordWritten(.record, className: cls, done, deferred: true, settling: inFlight) }
        // A record an earlier run wrote (found by its in-flight mark, or matched on an adopted target) is already on
        // the target: skipped, as the report says, not written.
        let resumedCount = prepared.count { $0.existingTargetId != nil }
        box.update { report in
            report.classes[index].written += written.count - resumedCount
            report.classes[index].skipped += resumedCount
            report.classes[index].failed += outcome.failed.count + refused.count
            for (id, error) in outcome.failed.sorted(by: { $0.key < $1.key }) {
                report.add(.init(kind: "failed", className: cls, sourceId: id, detail: error.description))
            }
            for (id, detail) in refused.sorted(by: { $0.key < $1.key }) {
                report.add(.init(kind: "failed", className: cls, sourceId: id, detail: detail))
            }
        }
        return records.count
    }
}
