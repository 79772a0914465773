import Foundation
import MBaaSCore
import Synchronization

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
        let fileLinks = links.get(cls) ?? mapping.fileLinkFields(cls)
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

    /// The ACL with user principals rewritten through the id map (unmapped ones kept, with a warning) and, for a
    /// target without roles, role and group grants left out (the record becomes more private, never less).
    func mapACL(_ acl: ACL, maps: Maps, className cls: String, sourceId: String, reporting: Bool) -> ACL {
        var mapped = ACL()
        mapped.entries.reserveCapacity(acl.entries.count)
        let roles = traits.roles
        for (principal, access) in acl.entries {
            if !roles, principal.isRoleOrGroup {
                if reporting {
                    box.update { $0.problem("ACL grants to roles and groups are left out: \(self.target.adapterName) has no roles\(self.noted(.roles))") }
                }
                continue
            }
            if case .user(let id) = principal {
                if let t = maps.users[id] { mapped.entries[.user(t)] = access } else {
                    mapped.entries[principal] = access
                    if reporting {
                        box.update { $0.warn(.init(kind: "acl", className: cls, sourceId: sourceId, detail: "ACL names user \(id), who was not migrated; kept as it was")) }
                    }
                }
            } else {
                mapped.entries[principal] = access
            }
        }
        return mapped
    }

    /// What the target stores for each distinct mapped ACL of `records` (targets with
    /// ``MBaaSCore/Capabilities/Feature/aclNarrowing`` only; empty for the others): its own form of the same grants,
    /// or a narrowed ACL. Each distinct ACL is asked for and its answer kept for the run (batches running at once may
    /// both ask); one whose answer changes someone's access (``grantsLess(_:than:)`` either way: access taken away, or
    /// the writing user's added) is a warning, once, naming
    /// the first record that has it. An ACL the target cannot answer for is left as it is (the write then says why it
    /// is refused).
    ///
    /// With `perRecordWidening`, an ACL the target would store wider (``widens(_:than:)``) is not warned of here: the
    /// caller fails or lists each record that has it (``aclLoss(_:maps:narrowed:)``).
    func narrowings(for records: [Record], maps: Maps, reporting: Bool, perRecordWidening: Bool = false) async -> [ACL: ACL] {
        guard traits.narrowsACLs else { return [:] }
        var out: [ACL: ACL] = [:]
        for r in records {
            guard let acl = r.acl else { continue }
            let mapped = mapACL(acl, maps: maps, className: r.className, sourceId: r.id ?? "", reporting: false)
            guard out[mapped] == nil else { continue }
            if let known = aclNarrowings.get(mapped) { out[mapped] = known; continue }
            guard let narrowed = try? await withRetry({ try await self.target.narrowedACL(mapped) }) else { continue }
            out[mapped] = narrowed
            // Said when someone's access changes (taken away, or the writer's own added), not for the same grants in
            // the target's own form.
            let changes = Self.grantsLess(narrowed, than: mapped) || Self.grantsLess(mapped, than: narrowed)
            let perRecord = perRecordWidening && Self.widens(narrowed, than: mapped)
            if aclNarrowings.set(mapped, narrowed), changes, reporting, !perRecord {
                box.update {
                    $0.warn(.init(kind: "acl", className: r.className, sourceId: r.id,
                                  detail: "ACL \(mapped.json.printed()) cannot be stored on \(self.target.adapterName): records with it are written with \(narrowed.json.printed()), which grants nobody else more"))
                }
            }
        }
        return out
    }

    /// Whether some principal of `acl` may do less under `narrowed` (its own grant or everyone's): the target took
    /// access away, not only wrote the same grants in its own form.
    static func grantsLess(_ narrowed: ACL, than acl: ACL) -> Bool {
        let everyone = narrowed.entries[.everyone]
        return acl.entries.contains { principal, access in
            let kept = narrowed.entries[principal]
            return (access.read && !(kept?.read ?? false) && !(everyone?.read ?? false))
                || (access.write && !(kept?.write ?? false) && !(everyone?.write ?? false))
        }
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

    // MARK: Phase 1

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
                }
            }
        }
        try await copyAttachments(className: cls, targetClass: plan.target, state)
        let targetName = target.adapterName
        box.update { $0.warnEmptyStrings(className: cls, target: targetName) }
        observer(.classFinished(box.value.classes[index]))
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
            if seen.insert(id).inserted { unique.append(r) }
        }
        let uniqueIds = unique.map { $0.id! }
        let already = try await offPool { try state.mapped(.record, className: cls, sourceIds: uniqueIds) }
        box.update { $0.classes[index].skipped += already.count }
        var unmapped = unique.filter { already[$0.id!] == nil }
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
                for f in prepared[i].inlineFiles + prepared[i].attachments where f.ref.attachment == nil { unwrittenLinks.insert(f.ref.name) }
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

    struct CreateOutcome {
        var created: [String: String] = [:]
        var failed: [String: MBaaSError] = [:]
        /// Failed writes whose outcome is unknown (the last attempt may have been applied, and the target could not
        /// be asked): their in-flight mark must outlive this batch, so that the next run looks them up first.
        var unknown: [String] = []
    }

    /// Creates the records, retrying transient failures; a write whose outcome is unknown is looked up on the target
    /// before it is tried again.
    func createWithRetry(_ prepared: [Prepared], className cls: String) async throws -> CreateOutcome {
        var outcome = CreateOutcome()
        var remaining = prepared
        var attempt = 0
        while !remaining.isEmpty {
            var retry: [Prepared] = []
            var lastError: MBaaSError?
            do {
                let results = try await create(remaining.map(\.record))
                // An all-or-nothing batch with a failure applied nothing: one at a time finds the culprit.
                if target.capabilities.has(.atomicBatch), remaining.count > 1,
                   results.contains(where: { if case .failure(let e) = $0 { !isTransient(e) } else { false } })
                {
                    for p in remaining {
                        let single = try await createWithRetry([p], className: cls)
                        outcome.created.merge(single.created) { a, _ in a }
                        outcome.failed.merge(single.failed) { a, _ in a }
                        outcome.unknown += single.unknown
                    }
                    return outcome
                }
                for (p, result) in zip(remaining, results) {
                    switch result {
                    case .success(let r): outcome.created[p.sourceId] = r.id ?? p.record.id ?? ""
                    case .failure(let e):
                        if isTransient(e) { retry.append(p); lastError = e } else if Self.retriesWithoutId(e, p.record) {
                            var again = p
                            again.record.id = nil   // the target refused this id: let it make one
                            retry.append(again)
                        } else if e.kind == .duplicate, let found = try await findExisting(className: p.record.className, sourceIds: [p.key])[p.key] {
                            outcome.created[p.sourceId] = found
                        } else {
                            outcome.failed[p.sourceId] = e
                        }
                    }
                }
            } catch {
                let e = MBaaSError.wrap(error)
                guard isTransient(e) else {
                    // The call may have applied writes before it failed (a response that could not be read, a count
                    // that did not match): find them before anything is written again.
                    let found = try await findExistingRetrying(className: remaining[0].record.className, sourceIds: remaining.map(\.key))
                    for p in remaining { if let t = found[p.key] { outcome.created[p.sourceId] = t } }
                    remaining = remaining.filter { found[$0.key] == nil }
                    if remaining.count > 1 {
                        // A batch refused as a whole (an atomic batch, or a request error): one at a time finds the culprit.
                        for p in remaining {
                            let single = try await createWithRetry([p], className: cls)
                            outcome.created.merge(single.created) { a, _ in a }
                            outcome.failed.merge(single.failed) { a, _ in a }
                            outcome.unknown += single.unknown
                        }
                        return outcome
                    }
                    for p in remaining { outcome.failed[p.sourceId] = e }
                    return outcome
                }
                retry = remaining
                lastError = e
            }
            guard !retry.isEmpty else { break }
            attempt += 1
            if attempt >= options.maxAttempts {
                // The last attempt may have been applied before it failed (a timeout, a reset): ask once more. What
                // is found was written; what cannot be asked about stays unknown and keeps an in-flight mark.
                let found: [String: String]?
                do { found = try await findExisting(className: retry[0].record.className, sourceIds: retry.map(\.key)) } catch { found = nil }
                for p in retry {
                    if let t = found?[p.key] { outcome.created[p.sourceId] = t; continue }
                    outcome.failed[p.sourceId] = lastError ?? MBaaSError(.unavailable, "gave up after \(attempt) attempts")
                    if found == nil { outcome.unknown.append(p.sourceId) }
                }
                break
            }
            observer(.note("\(cls): retrying \(retry.count) writes (attempt \(attempt + 1)): \(lastError?.description ?? "")"))
            try await backoff(attempt: attempt, error: lastError)
            // The failed call may have written some records before it failed: find them first.
            let found = try await findExistingRetrying(className: retry.first!.record.className, sourceIds: retry.map(\.key))
            for p in retry { if let t = found[p.key] { outcome.created[p.sourceId] = t } }
            remaining = retry.filter { found[$0.key] == nil }
        }
        return outcome
    }

    /// Whether a create refused for `record` is written again without its id: only when the target said it refused
    /// the record's id (``MBaaSCore/MBaaSError/refusesRecordId``, set by the adapter), never on the wording of the
    /// message. Any other refusal fails the record as it is.
    static func retriesWithoutId(_ error: MBaaSError, _ record: Record) -> Bool {
        record.id != nil && error.refusesRecordId && [.invalidRequest, .unsupported].contains(error.kind)
    }

    /// One batch call when the target has batches, else one create at a time.
    func create(_ records: [Record]) async throws -> [BatchResult] {
        if target.capabilities.has(.batch) && target.capabilities.maxBatchSize > 0 {
            var results: [BatchResult] = []
            for start in stride(from: 0, to: records.count, by: target.capabilities.maxBatchSize) {
                let chunk = records[start..<min(start + target.capabilities.maxBatchSize, records.count)]
                let r = try await target.batch(chunk.map { .create($0) })
                guard r.count == chunk.count else {
                    throw MBaaSError(.decoding, "\(target.adapterName) answered \(r.count) results for a batch of \(chunk.count)")
                }
                results += r
            }
            return results
        }
        var results: [BatchResult] = []
        for r in records {
            do { results.append(.success(try await target.create(r))) } catch {
                let e = MBaaSError.wrap(error)
                if isTransient(e) && results.isEmpty { throw e }
                results.append(.failure(e))
            }
        }
        return results
    }

    func findExistingRetrying(className: String, sourceIds: [String]) async throws -> [String: String] {
        var attempt = 0
        while true {
            do { return try await findExisting(className: className, sourceIds: sourceIds) } catch {
                let e = MBaaSError.wrap(error)
                attempt += 1
                guard isTransient(e), attempt < options.maxAttempts else { throw e }
                try await backoff(attempt: attempt, error: e)
            }
        }
    }

    /// The target ids of records an earlier write may have created: by the source-id field, else by id where the
    /// target keeps ids.
    func findExisting(className: String, sourceIds: [String]) async throws -> [String: String] {
        guard !sourceIds.isEmpty else { return [:] }
        var found: [String: String] = [:]
        if let field = mapping.sourceIdField, target.capabilities.has(.operator(.in)) {
            for start in stride(from: 0, to: sourceIds.count, by: 50) {
                let part = Array(sourceIds[start..<min(start + 50, sourceIds.count)])
                let q = Query(className, predicate: .in(field, part.map(Value.string)), limit: part.count * 2)
                do {
                    for try await r in target.records(matching: q, pageSize: min(target.capabilities.maxPageSize, part.count * 2)) {
                        if let s = r.fields[field]?.stringValue, let id = r.id { found[s] = id }
                    }
                } catch let e as MBaaSError where e.kind == .notFound {
                    continue   // the class does not exist yet
                }
            }
            return found
        }
        if let bundle = target as? BundleBackend {
            return Dictionary(uniqueKeysWithValues: try await bundle.existingIds(className: className, among: Set(sourceIds)).map { ($0, $0) })
        }
        if target.capabilities.has(.clientIds) {
            for id in sourceIds {
                do { _ = try await target.get(className: className, id: id); found[id] = id } catch let e as MBaaSError where e.kind == .notFound {}
            }
            return found
        }
        box.update { $0.problem("\(target.adapterName) can neither query by '\(mapping.sourceIdField ?? "-")' nor keep ids: interrupted writes cannot be checked for duplicates") }
        return found
    }

    // MARK: Files

    /// The state's key of a source file: its name, or for an attachment its record, field and name.
    static func fileKey(_ ref: FileReference) -> String {
        ref.attachment.map { "\($0.className)/\($0.objectId)/\($0.field)/\(ref.name)" } ?? ref.name
    }

    /// Copies one source file into the target's store, once however many batches link it at the same moment (they
    /// share the copy): what it came to (``copyFileOnce(_:key:linked:_:)``); a failure is remembered for the run.
    func copySharedFile(
        _ ref: FileReference, key: String, linked: Bool, allowACLLoss: Bool, _ state: MigrationState
    ) async throws -> LinkedFileCopy {
        try await fileCopies.once(key) { try await self.copyFileOnce(ref, key: key, linked: linked, allowACLLoss: allowACLLoss, state) }
    }

    /// Reports a record linking a file the source's file store does not have.
    func warnMissingFile(_ ref: FileReference, className: String, sourceId: String?) {
        box.update {
            $0.warn(.init(kind: "sourceFile", className: className, sourceId: sourceId,
                         detail: "file '\(ref.name)' is not in the source's file store; the field keeps its value"))
        }
    }

    /// The state's class name for the in-flight marks of linked files.
    static let linkedFiles = "(linked files)"

    /// One file's copy. Its mark is committed before the upload and cleared with the file's record: a run killed in
    /// between leaves it, and the next run adopts the target's file with that name and content instead of uploading
    /// it again (where the target can list its files; a store whose names are unique answers `duplicate`, which is
    /// resolved the same way).
    ///
    /// ``LinkedFileCopy/missing`` when the source does not have the file (its callers report it, each for its own
    /// record); ``LinkedFileCopy/failed(_:)`` when the source cannot read it or list it (for its ACL), a look-up of
    /// an earlier run's upload fails, or the target refuses it after retries
    /// (counted here, once for the run; each caller fails its own records). Only cancellation and the state's own
    /// errors end the run.
    ///
    /// A file whose ACL the target's store cannot hold fails (``fileACLLoss(_:allow:)``), unless `allowACLLoss`.
    func copyFileOnce(
        _ ref: FileReference, key: String, linked: Bool, allowACLLoss: Bool, _ state: MigrationState
    ) async throws -> LinkedFileCopy {
        if let copied = try await offPool({ try state.copiedFile(key) }) { return .copied(copied.target) }
        box.update { $0.files.read += 1 }
        func failed(_ error: any Error, _ what: String) throws -> LinkedFileCopy {
            .failed(try fileFailed(error, ref.name, what, className: Self.linkedFiles, sourceId: key))
        }
        let data: Data
        do { data = try await withRetry { try await self.source.download(ref) } } catch let e as MBaaSError where e.kind == .notFound {
            return .missing
        } catch {
            return try failed(error, "cannot be read")
        }
        let size = Int64(data.count)
        let sha = sha256Hex(data)
        func record(_ stored: FileReference) async throws {
            let copied = MigrationState.CopiedFile(sourceName: key, target: stored, sha256: sha, size: size, linked: linked)
            try await offPool { try state.recordFile(copied, clearingPendingIn: Self.linkedFiles) }
        }
        if try await offPool({ try state.isPending(.file, className: Self.linkedFiles, sourceId: key) }) {
            // An earlier run's upload may have reached the target: adopted, not uploaded twice. A target that cannot
            // be asked fails this file alone, as a refused upload does.
            let existing: FileReference?
            do { existing = try await findCopiedFile(ref.name, size: size, sha256: sha) } catch {
                return try failed(error, "cannot be looked up on \(target.adapterName)")
            }
            if let existing {
                try await record(existing)
                box.update { $0.files.skipped += 1 }
                return .copied(existing)
            }
        }
        // Its own ACL in the source's store, found before anything is marked: a file whose ACL cannot be found is not
        // uploaded at all (without one it would be open to everyone on most stores).
        let sourceACL: ACL?
        do { sourceACL = try await sourceFileACL(ref) } catch {
            return try failed(error, "cannot be looked up on \(source.adapterName) (for its ACL)")
        }
        if let refusal = fileACLLoss(sourceACL, allow: allowACLLoss) { return try failed(refusal, "is not copied") }
        try await offPool { try state.addPending(.file, className: Self.linkedFiles, sourceIds: [key]) }
        let acl = try await targetFileACL(sourceACL, name: ref.name, className: Self.linkedFiles, state)
        let upload = FileUpload(name: ref.name, source: .data(data), contentType: ref.contentType ?? guessContentType(forFileName: ref.name),
                                acl: acl)
        let stored: FileReference
        do {
            do { stored = try await uploadAsTargetNames(upload) } catch let e as MBaaSError where e.kind == .duplicate {
                guard let existing = try await findCopiedFile(ref.name, size: size, sha256: sha) else { throw e }
                stored = existing
            }
        } catch {
            // Its in-flight mark stays: the next run looks for it on the target before uploading it again.
            return try failed(error, "cannot be copied to \(target.adapterName)")
        }
        try await record(stored)
        box.update { $0.files.written += 1 }
        return .copied(stored)
    }

    /// Attaches the files of the records written in phase 1 (targets with ``Capabilities/Feature/fileAttachment``).
    func copyAttachments(className cls: String, targetClass: String, _ state: MigrationState) async throws {
        var after = ""
        var announced = false
        while true {
            // A page at a time, so memory stays flat however many records link files.
            let page = after
            let todo = try await offPool { try state.attachments(className: cls, done: false, after: page, limit: 500) }
            guard let last = todo.last else { break }
            after = last.sourceId
            if !announced { observer(.phase("attachments")); announced = true }
            let sourceIds = Array(Set(todo.map(\.sourceId)))
            let ids = try await offPool { try state.mapped(.record, className: cls, sourceIds: sourceIds) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                var inFlight = 0
                for a in todo {
                    guard let targetId = ids[a.sourceId] else { continue }
                    if inFlight >= options.fileCopiesInFlight { try await group.next(); inFlight -= 1 }
                    group.addTask { try await self.attach(a, targetClass: targetClass, targetId: targetId, state) }
                    inFlight += 1
                }
                try await group.waitForAll()
            }
        }
    }

    /// Copies one attachment; a failure is reported for its record (and tried again by the next run), never the end
    /// of the run.
    func attach(_ a: MigrationState.Attachment, targetClass: String, targetId: String, _ state: MigrationState) async throws {
        box.update { $0.files.read += 1 }
        let data: Data
        do { data = try await withRetry { try await self.source.download(a.ref) } } catch let e as MBaaSError where e.kind == .notFound {
            // Keep what the source held (a file name that points nowhere) rather than lose it, where the field can hold it.
            let original = RecordUpdate(changes: [a.field: .set(a.original)])
            var kept = "the field keeps its value"
            var outcome = MigrationState.keptOriginal
            do { _ = try await withRetry { try await self.target.update(className: targetClass, id: targetId, original) } } catch {
                kept = "the target's field cannot hold the name (\(MBaaSError.wrap(error).message)), so it stays empty"
                outcome = MigrationState.droppedOriginal
            }
            let done = outcome
            try await offPool { try state.attachmentDone(a, sha256: nil, size: nil, targetName: done) }
            box.update {
                $0.warn(.init(kind: "sourceFile", className: a.className, sourceId: a.sourceId,
                             detail: "file '\(a.ref.name)' (field \(a.field)) is not in the source's file store; \(kept)"))
            }
            return
        } catch {
            box.update {
                $0.files.failed += 1
                $0.add(.init(kind: "failed", className: a.className, sourceId: a.sourceId, detail: "file '\(a.ref.name)' cannot be read: \(MBaaSError.wrap(error))"))
            }
            return
        }
        // A file of the source's separate store keeps its own ACL where an attachment can have one; elsewhere it is
        // reachable as its record is, which is said. Its ACL not found, it is not attached (the next run tries again).
        var acl: ACL?
        if target.capabilities.has(.attachmentACL) {
            let own: ACL?
            do { own = try await sourceFileACL(a.ref) } catch {
                _ = try fileFailed(error, a.ref.name, "cannot be looked up on \(source.adapterName) (for its ACL), so it was not attached (field \(a.field))",
                                   className: a.className, sourceId: a.sourceId)
                return
            }
            if let refusal = fileACLLoss(own, allow: allowsACLLoss(a.className)) {
                box.update {
                    $0.files.failed += 1
                    $0.add(.init(kind: "failed", className: a.className, sourceId: a.sourceId, detail: "file '\(a.ref.name)' (field \(a.field)) is not attached: \(refusal)"))
                }
                return
            }
            acl = try await targetFileACL(own, name: a.ref.name, className: a.className, state)
        } else if let own = try await ownACLDropped(a) {
            // Attached, it would be reachable as its record is, which grants more than its own ACL: not attached (the
            // next run tries again), unless the class allows the loss.
            let detail = "file '\(a.ref.name)' (field \(a.field)): attached to its record on \(target.adapterName), it is reachable as the record is; its own ACL \(own.json.printed([.sortedKeys])) is not kept"
            guard allowsACLLoss(a.className) else {
                box.update {
                    $0.files.failed += 1
                    $0.add(.init(kind: "failed", className: a.className, sourceId: a.sourceId,
                                 detail: "\(detail), so it was not attached (--acl-loss allow attaches it)"))
                }
                return
            }
            box.update {
                $0.problem(self.attachedFileACLProblem)
                $0.warn(.init(kind: "acl", className: a.className, sourceId: a.sourceId, detail: detail))
            }
        }
        let upload = FileUpload(name: Self.attachmentUploadName(a.ref, className: a.className, sourceId: a.sourceId), source: .data(data),
                                contentType: a.ref.contentType ?? guessContentType(forFileName: a.ref.name),
                                acl: acl, attachment: FileAttachment(className: targetClass, objectId: targetId, field: a.field))
        do {
            let stored = try await uploadAsTargetNames(upload)
            let (sha, size, name) = (sha256Hex(data), Int64(data.count), Value.file(stored).json.printed())
            try await offPool { try state.attachmentDone(a, sha256: sha, size: size, targetName: name) }
            box.update { $0.files.written += 1 }
        } catch {
            box.update {
                $0.files.failed += 1
                $0.add(.init(kind: "failed", className: a.className, sourceId: a.sourceId, detail: "file '\(a.ref.name)' cannot be attached: \(MBaaSError.wrap(error))"))
            }
        }
    }

    /// The name an attachment is uploaded under: the source's, without the `<Class>/<id>/<field>/` that a store keeping
    /// attachments under their record put before it (its own attachment's, or the record's class and id with any
    /// field), since the target adds its own: a name does not grow a prefix per hop. Any other name as it is.
    static func attachmentUploadName(_ ref: FileReference, className: String, sourceId: String) -> String {
        if let at = ref.attachment {
            let prefix = "\(at.className)/\(at.objectId)/\(at.field)/"
            if ref.name.hasPrefix(prefix), ref.name.count > prefix.count { return String(ref.name.dropFirst(prefix.count)) }
        }
        let prefix = "\(className)/\(sourceId)/"
        guard ref.name.hasPrefix(prefix) else { return ref.name }
        let rest = ref.name.dropFirst(prefix.count)
        guard let slash = rest.firstIndex(of: "/"), rest.index(after: slash) < rest.endIndex else { return ref.name }
        return String(rest[rest.index(after: slash)...])
    }

    /// A file with an ACL of its own attached to its record on a target without
    /// ``MBaaSCore/Capabilities/Feature/attachmentACL``: there it is reachable as its record is, so its own ACL is not
    /// kept. That loses something for a file of the source's separate store whose ACL is not open to everyone, and for
    /// an attachment whose own ACL (where the source's attachments have one) grants someone less than its record's.
    /// A file whose ACL cannot be looked up is said as such (and attached). Returns the own ACL that would not be kept, for the caller to fail the file or say so
    /// (``allowsACLLoss(_:)``); `nil` where nothing is lost.
    func ownACLDropped(_ a: MigrationState.Attachment) async throws -> ACL? {
        // Attached on the source without an ACL of its own: it followed its record there as well.
        if a.ref.attachment != nil && !source.capabilities.has(.attachmentACL) { return nil }
        let own: ACL?
        do { own = try await sourceFileACL(a.ref) } catch {
            if error is CancellationError || Task.isCancelled { throw CancellationError() }
            box.update {
                $0.warn(.init(kind: "acl", className: a.className, sourceId: a.sourceId,
                              detail: "file '\(a.ref.name)' (field \(a.field)): its own ACL cannot be looked up on \(self.source.adapterName) (\(MBaaSError.wrap(error))); attached to its record, it is reachable as the record is"))
            }
            return nil
        }
        guard let own, !Self.isOpen(own) else { return nil }
        if a.ref.attachment != nil {
            let record: Record
            do { record = try await withRetry { try await self.source.get(className: a.className, id: a.sourceId) } } catch {
                if error is CancellationError || Task.isCancelled { throw CancellationError() }
                box.update {
                    $0.warn(.init(kind: "acl", className: a.className, sourceId: a.sourceId,
                                  detail: "file '\(a.ref.name)' (field \(a.field)): its record cannot be read on \(self.source.adapterName) to compare its ACL with the file's own \(own.json.printed([.sortedKeys])) (\(MBaaSError.wrap(error))); attached to its record, it is reachable as the record is"))
                }
                return nil
            }
            // No ACL on a record is access for everyone.
            guard Self.grantsLess(own, than: record.acl ?? .publicReadWrite) else { return nil }
        }
        return own
    }

    /// What the plan and the report say where files records link to are attached to their records on the target
    /// while the source's files have ACLs of their own.
    var attachedFileACLProblem: String {
        "file ACLs: files records link to are attached to their records on \(target.adapterName) and reachable as the record is; "
            + (options.aclLoss == .allow
                ? "their own ACLs are not kept"
                : "one whose own ACL grants less than its record's is not attached: it fails, named (--acl-loss allow attaches it without, with a warning per file)")
            + (target.capabilities.has(.fileACL) && target.capabilities.has(.files) ? " (files no record links to keep theirs)" : "")
            + aclLossExceptions
    }

    /// Files that no record links to, into the target's file store.
    func copyStandaloneFiles(_ state: MigrationState) async throws {
        guard source.capabilities.has(.fileList) else { return }
        let files = try await withRetry { try await self.source.listFiles(prefix: nil, limit: nil) }
        // A file records link to that could not be copied for them is not tried again as one no record links to.
        // Nor is one linked only by records left unwritten for their ACL: it goes with them.
        let unattached = files.filter {
            $0.reference.attachment == nil && !fileCopies.hasFailed($0.reference.name) && !unwrittenLinks.contains($0.reference.name)
        }
        let standalone = try await offPool {
            try unattached.filter { try state.copiedFile($0.reference.name) == nil && !state.isLinkedByAttachment($0.reference.name) }
        }
        guard !standalone.isEmpty else { return }
        guard target.capabilities.has(.files) else {
            box.update { $0.problem("\(standalone.count) files no record links to were not copied: \(target.adapterName) has no separate file store") }
            return
        }
        let pending = Set(try await offPool { try state.pending(.file, className: Self.standaloneFiles) })
        // Up to `fileConcurrency` at a time: one after another, each file's round trips set the pace.
        try await concurrently(standalone, limit: options.fileCopiesInFlight) { info in
            try await self.copyStandaloneFile(info, wasPending: pending.contains(info.reference.name), state)
        }
    }

    /// Copies one file no record links to. A failure to read, look up or upload it (the target refusing its name or
    /// its ACL, say) is counted and listed for that file, and the run goes on; cancellation and the state's own
    /// errors end the run.
    func copyStandaloneFile(_ info: FileInfo, wasPending: Bool, _ state: MigrationState) async throws {
        let name = info.reference.name
        func failed(_ error: any Error, _ what: String) throws {
            _ = try fileFailed(error, name, what, className: Self.standaloneFiles, sourceId: name)
        }
        let data: Data
        do { data = try await withRetry { try await self.source.download(info.reference) } } catch { return try failed(error, "cannot be read") }
        box.update { $0.files.read += 1 }
        let sha = sha256Hex(data)
        func record(_ stored: FileReference) async throws {
            let copied = MigrationState.CopiedFile(sourceName: name, target: stored, sha256: sha, size: Int64(data.count), linked: false)
            try await offPool { try state.recordFile(copied, clearingPendingIn: Self.standaloneFiles) }
        }
        // An upload an earlier run made just before it died (or that reached the target before a failure): the
        // target's file with this name, size and content is adopted, not uploaded twice.
        if wasPending {
            let existing: FileReference?
            do { existing = try await findCopiedFile(name, size: Int64(data.count), sha256: sha) } catch {
                return try failed(error, "cannot be looked up on \(target.adapterName)")
            }
            if let existing {
                try await record(existing)
                box.update { $0.files.skipped += 1 }
                return
            }
        }
        // Its ACL, where the listing does not carry it, read before anything is marked: a file whose ACL cannot be
        // read is not uploaded at all (without one it would be open to everyone on most stores).
        var given = info.acl
        if readsFileACLs {
            do { given = try await readFileACL(info.reference) } catch {
                return try failed(error, "cannot be looked up on \(source.adapterName) (for its ACL)")
            }
        }
        if let refusal = fileACLLoss(given, allow: options.aclLoss == .allow) { return try failed(refusal, "is not copied") }
        try await offPool { try state.addPending(.file, className: Self.standaloneFiles, sourceIds: [name]) }
        let acl = try await targetFileACL(given, name: name, className: Self.standaloneFiles, state)
        let upload = FileUpload(name: name, source: .data(data),
                                contentType: info.reference.contentType ?? guessContentType(forFileName: name), acl: acl)
        let stored: FileReference
        do {
            do { stored = try await withRetry { try await self.target.upload(upload) } } catch let e as MBaaSError where e.kind == .duplicate {
                guard let existing = try await findCopiedFile(name, size: Int64(data.count), sha256: sha) else { throw e }
                stored = existing
            }
        } catch {
            // Its in-flight mark stays: the next run looks for it on the target before uploading it again.
            return try failed(error, "cannot be copied to \(target.adapterName)")
        }
        try await record(stored)
        box.update { $0.files.written += 1 }
    }

    /// Counts and lists one file that could not be copied, and returns the error as the report has it; cancellation
    /// (the error, or a cancelled task) is thrown instead: it ends the run.
    func fileFailed(_ error: any Error, _ name: String, _ what: String, className: String, sourceId: String) throws -> MBaaSError {
        if error is CancellationError { throw error }
        if Task.isCancelled { throw CancellationError() }
        let e = MBaaSError.wrap(error)
        box.update {
            $0.files.failed += 1
            $0.add(.init(kind: "failed", className: className, sourceId: sourceId, detail: "file '\(name)' \(what): \(e)"))
        }
        return e
    }

    /// The source's ACL of a file records link to: looked up in its file list (every file whose name starts with
    /// this one, in whatever order the store lists them) where the source keeps and lists file ACLs
    /// (``MBaaSCore/Capabilities/Feature/fileACLListing``), or read on its own where the store reads them per file
    /// (``MBaaSCore/Capabilities/Feature/fileACLRead``); a file attached to a record has one of its own only where
    /// the source's attachments have ACLs (``MBaaSCore/Capabilities/Feature/attachmentACL``). A file the list does not
    /// show is `notFound`: the caller fails it rather than upload it without the ACL it may have.
    func sourceFileACL(_ ref: FileReference) async throws -> ACL? {
        guard source.capabilities.has(.fileACL), ref.attachment == nil || source.capabilities.has(.attachmentACL) else { return nil }
        if source.capabilities.has(.fileList), source.capabilities.has(.fileACLListing) {
            let listed = try await withRetry { try await self.source.listFiles(prefix: ref.name, limit: nil) }
            guard let info = listed.first(where: { $0.reference.name == ref.name }) else {
                throw MBaaSError(.notFound, "\(source.adapterName) does not list the file, so its ACL is unknown")
            }
            return info.acl
        }
        return try await readFileACL(ref)
    }

    /// Whether the source's records are read without their ACL, which it reads apart
    /// (``MBaaSCore/Capabilities/Feature/aclRead``), and the target keeps ACLs.
    var readsRecordACLs: Bool { !source.capabilities.has(.acl) && source.capabilities.has(.aclRead) && traits.acl }

    /// Whether the source's records are read without their ACL, which it reads apart, and the target keeps none: each
    /// record's is read to tell those whose ACL would be lost (``aclLoss(_:maps:narrowed:)``).
    var readsRecordACLsForLoss: Bool { !source.capabilities.has(.acl) && source.capabilities.has(.aclRead) && !traits.acl }

    /// Whether an ACL opens a record to everyone anyway (read and write): a target that keeps no ACL loses nothing of it.
    static func opensToEveryone(_ acl: ACL) -> Bool {
        let everyone = acl.entries[.everyone]
        return everyone?.read == true && everyone?.write == true
    }

    /// Whether `stored` (what the target keeps for `acl`) grants more than `acl` to anyone but one user: the writing
    /// user may gain its own record on a store whose records belong to their writer
    /// (``MBaaSCore/ObjectStore/narrowedACL(_:)``); everyone, a role, a group or a second user may not.
    static func widens(_ stored: ACL, than acl: ACL) -> Bool {
        let everyone = acl.entries[.everyone]
        var gainers: [ACL.Principal] = []
        for (principal, access) in stored.entries {
            let had = acl.entries[principal]
            if (access.read && !(had?.read ?? false) && !(everyone?.read ?? false))
                || (access.write && !(had?.write ?? false) && !(everyone?.write ?? false)) { gainers.append(principal) }
        }
        return gainers.count > 1 || gainers.contains { if case .user = $0 { false } else { true } }
    }

    /// Why a source record's ACL would be lost on the target, or `nil`: a target without per-record ACLs loses every
    /// ACL not open to everyone (no ACL is open to everyone); a target that stores some ACLs narrowed loses one it would
    /// store wider (``widens(_:than:)``).
    func aclLoss(_ source: Record, maps: Maps, narrowed: [ACL: ACL]) -> String? {
        if !traits.acl {
            guard let acl = source.acl, !Self.opensToEveryone(acl) else { return nil }
            return "its ACL \(acl.json.printed([.sortedKeys])) cannot be kept: \(target.adapterName) does not enforce per-record ACLs, so the record would be readable by everyone there"
        }
        guard traits.narrowsACLs, let acl = source.acl else { return nil }
        let mapped = mapACL(acl, maps: maps, className: source.className, sourceId: source.id ?? "", reporting: false)
        guard let stored = narrowed[mapped], Self.widens(stored, than: mapped) else { return nil }
        return "its ACL \(mapped.json.printed([.sortedKeys])) would be stored on \(target.adapterName) as \(stored.json.printed([.sortedKeys])), which grants more"
    }

    /// The records with their ACLs read from the source (``MBaaSCore/ObjectStore/recordACLs(className:ids:)``, with
    /// retries; a batch whose read is refused is read again record by record, so that one refusal fails one record), and
    /// apart those whose ACL could not be read, with why: the read failed, or the record is gone. Cancellation is
    /// thrown.
    func withSourceACLs(_ records: [Record], className cls: String) async throws -> (records: [Record], failed: [(String, String)]) {
        let ids = records.compactMap(\.id)
        var acls: [String: ACL] = [:]
        var reasons: [String: String] = [:]
        func why(_ error: any Error) throws -> String {
            if error is CancellationError || Task.isCancelled { throw CancellationError() }
            return "its ACL cannot be read on \(source.adapterName): \(MBaaSError.wrap(error))"
        }
        do { acls = try await withRetry { try await self.source.recordACLs(className: cls, ids: ids) } } catch {
            let reason = try why(error)
            // Still failing after the retries (the source unavailable, say): the whole batch fails with it, and the
            // next run tries again. A refusal (one record's ACL the caller may not read, say) fails that record alone:
            // the batch's are read again one by one, once each, since a refusal does not pass with retries.
            if isTransient(MBaaSError.wrap(error)) { return ([], ids.map { ($0, reason) }) }
            for id in ids {
                do { acls.merge(try await self.source.recordACLs(className: cls, ids: [id])) { a, _ in a } } catch {
                    reasons[id] = try why(error)
                }
            }
        }
        var out: [Record] = []
        var failed: [(String, String)] = []
        out.reserveCapacity(records.count)
        for var r in records {
            guard let id = r.id, let acl = acls[id] else {
                failed.append((r.id ?? "", r.id.flatMap { reasons[$0] } ?? "its ACL cannot be read on \(source.adapterName): the record is gone"))
                continue
            }
            r.acl = acl
            out.append(r)
        }
        return (out, failed)
    }

    /// Whether the source's file ACLs are read one file at a time: it keeps them, and reads but does not list them.
    var readsFileACLs: Bool {
        let c = source.capabilities
        return c.has(.fileACL) && c.has(.fileACLRead) && !(c.has(.fileList) && c.has(.fileACLListing))
    }

    /// A file's ACL read on its own (``MBaaSCore/FileStore/fileACL(_:)``) where the source reads them per file; `nil`
    /// where it cannot (the plan says its files go without theirs).
    func readFileACL(_ ref: FileReference) async throws -> ACL? {
        guard readsFileACLs else { return nil }
        return try await withRetry { try await self.source.fileACL(ref) }
    }

    /// Whether a file's ACL opens it to everyone anyway: copied without it into a store whose files have none, it
    /// loses nothing, and neither the plan nor the report says so.
    static func isOpen(_ acl: ACL) -> Bool { acl == .publicReadWrite }

    /// The ACL a copied file gets on the target: the source's, with user ids through the id map (as a record's; roles
    /// left out where the target has none), where the target keeps file ACLs. A store whose files have no ACLs
    /// (AppPot, Parse) gets the file without it: said per file, and once for the run (the plan says so); the file is
    /// then as open as every file of that store.
    func targetFileACL(_ given: ACL?, name: String, className: String, _ state: MigrationState) async throws -> ACL? {
        guard let given else { return nil }
        guard target.capabilities.has(.fileACL) else {
            if Self.isOpen(given) { return nil }
            box.update {
                $0.problem(self.fileACLProblem)
                $0.warn(.init(kind: "acl", className: className, sourceId: name, detail: "file '\(name)': its ACL is not kept"))
            }
            return nil
        }
        return try await mappedFileACL(given, name: name, className: className, reporting: true, state)
    }

    /// A file's ACL with user ids through the id map, as a record's is mapped (roles left out where the target has
    /// none): what the copy gives the target, and what verification expects there.
    func mappedFileACL(_ given: ACL, name: String, className: String, reporting: Bool, _ state: MigrationState) async throws -> ACL {
        let maps = try await offPool { try self.maps(for: [Record(className: className, acl: given)], state) }
        return mapACL(given, maps: maps, className: className, sourceId: name, reporting: reporting)
    }

    /// The state's class name for files no record links to.
    static let standaloneFiles = "(files)"

    /// What the plan and the report say of file ACLs on a target without ``MBaaSCore/Capabilities/Feature/fileACL``.
    var fileACLProblem: String {
        "file ACLs: \(target.adapterName) does not keep them\(noted(.fileACL)); "
            + (options.aclLoss == .allow
                ? "files are copied without theirs, as open as the store's other files"
                : "a file whose ACL is not open to everyone would be as open as the store's other files, so it is not copied: it fails, named, and so do the records linking it (--acl-loss allow copies it without, with a warning per file)")
            + aclLossExceptions
    }

    /// Why a file with this ACL is not copied into the target's store, or `nil`: a store without
    /// ``MBaaSCore/Capabilities/Feature/fileACL`` would hold it as open as its other files, which loses an ACL not open
    /// to everyone, unless `allow` (then ``targetFileACL(_:name:className:_:)`` says so per file).
    func fileACLLoss(_ given: ACL?, allow: Bool) -> MBaaSError? {
        guard !allow, let given, !target.capabilities.has(.fileACL), !Self.isOpen(given) else { return nil }
        return MBaaSError(.unsupported, "its ACL \(given.json.printed([.sortedKeys])) cannot be kept: \(target.adapterName)'s files have none, so the copy would be as open as its other files (--acl-loss allow copies it without)")
    }

    /// Uploads a file to the target. A name with `/` (a Local attachment's, `Class/id/field/name`) that the target
    /// refuses as a name (`invalidRequest` or `unsupported`, as NCMB, Parse and AppPot do) is uploaded again with each
    /// `/` as `_`: the copy's reference, which the record's link, the state and verification keep, carries the name the
    /// target took. Transient failures are retried.
    func uploadAsTargetNames(_ upload: FileUpload) async throws -> FileReference {
        do { return try await withRetry { try await self.target.upload(upload) } } catch let e as MBaaSError
            where upload.name.contains("/") && [.invalidRequest, .unsupported].contains(e.kind)
        {
            var renamed = upload
            renamed.name = Self.flatFileName(upload.name)
            let flat = renamed
            return try await withRetry { try await self.target.upload(flat) }
        }
    }

    /// A file name with each `/` as `_` (`Note/n1/photo/a.png` → `Note_n1_photo_a.png`).
    static func flatFileName(_ name: String) -> String { name.replacingOccurrences(of: "/", with: "_") }

    /// A file of the target's store with this content, named like `name` (targets may add a suffix to a name).
    func findCopiedFile(_ name: String, size: Int64, sha256: String) async throws -> FileReference? {
        guard target.capabilities.has(.fileList) else { return nil }
        let stem = (name as NSString).deletingPathExtension
        for candidate in try await withRetry({ try await self.target.listFiles(prefix: stem, limit: 100) })
        where candidate.reference.size.map({ $0 == size }) ?? true {
            let data = try await withRetry { try await self.target.download(candidate.reference) }
            if Int64(data.count) == size && sha256Hex(data) == sha256 { return candidate.reference }
        }
        return nil
    }

    /// Runs an idempotent call, retrying transient failures with backoff.
    func withRetry<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            do { return try await body() } catch {
                let e = MBaaSError.wrap(error)
                attempt += 1
                guard isTransient(e), attempt < options.maxAttempts else { throw e }
                try await backoff(attempt: attempt, error: e)
            }
        }
    }

    // MARK: Phase 2

    /// Sets the pointer fields phase 1 left, through the id map; reports pointers to records that were not migrated.
    func rewritePointers(_ state: MigrationState) async throws {
        let keepsIds = target.capabilities.has(.clientIds)
        for cls in try await offPool({ try state.fixupClasses() }) {
            let targetClass = mapping.targetClass(cls)
            var after = ""
            while true {
                let page = after
                let rows = try await offPool { try state.fixups(className: cls, after: page, limit: 200) }
                guard let last = rows.last else { break }
                after = last.sourceId
                var probes: [Record] = []
                for row in rows {
                    var probe = Record(className: cls, id: row.sourceId)
                    for (k, v) in row.pointers {
                        if k == Self.aclFixupKey { probe.acl = try ACL(json: v) } else { probe.fields[k] = try Value(json: v) }
                    }
                    probes.append(probe)
                }
                let probed = probes
                let maps = try await offPool { try self.maps(for: probed, state) }
                let narrowed = await narrowings(for: probed, maps: maps, reporting: true)
                var done: [String] = []
                var updates: [(String, String, RecordUpdate)] = []
                for row in rows {
                    var changes: [String: FieldOperation] = [:]
                    var resolved = true
                    var aclUpdate: ACL?
                    for (field, json) in row.pointers {
                        if field == Self.aclFixupKey {
                            let original = try ACL(json: json)
                            var mapped = mapACL(original, maps: maps, className: cls, sourceId: row.sourceId, reporting: false)
                            mapped = narrowed[mapped] ?? mapped
                            // As for pointers below: with kept ids, an ACL whose users all keep their ids was
                            // written as it is (a target that cannot update, a bundle, is never asked to).
                            if !(keepsIds && mapped == original) { aclUpdate = mapped }
                            continue
                        }
                        let original = try Value(json: json)
                        var unresolved = false
                        let rewritten = rewrite(original, maps: maps, unresolved: &unresolved)
                        if unresolved {
                            resolved = false
                            box.update { $0.warn(.init(kind: "pointer", className: cls, sourceId: row.sourceId,
                                                      detail: "field \(field) points at a record that was not migrated (\(describe(original))); kept with the source id")) }
                        }
                        // With kept ids phase 1 already wrote `rewritten` unless an id changed.
                        var unchanged = false
                        if keepsIds { var u = false; unchanged = rewrite(original, maps: Maps(), unresolved: &u) == rewritten }
                        if !unchanged { changes[field] = .set(rewritten) }
                    }
                    if !changes.isEmpty || aclUpdate != nil {
                        updates.append((row.sourceId, row.targetId, RecordUpdate(changes: changes, acl: aclUpdate)))
                    }
                    // Unresolved pointers stay in the state: a later run that migrates their records sets them.
                    if resolved { done.append(row.sourceId) }
                }
                let failed = try await applyUpdates(updates, className: cls, targetClass: targetClass)
                let settled = done.filter { !failed.contains($0) }
                try await offPool { try state.removeFixups(className: cls, sourceIds: settled) }
            }
        }
    }

    /// Applies phase-2 updates: in batch calls where the target has them, else `concurrency` at a time. Returns the
    /// source ids whose update failed (reported; the next run tries them again).
    func applyUpdates(_ updates: [(String, String, RecordUpdate)], className cls: String, targetClass: String) async throws -> Set<String> {
        guard !updates.isEmpty else { return [] }
        var failed: Set<String> = []
        func fail(_ sourceId: String, _ e: MBaaSError) {
            failed.insert(sourceId)
            box.update { $0.add(.init(kind: "failed", className: cls, sourceId: sourceId, detail: "pointers could not be set: \(e)")) }
        }
        if target.capabilities.has(.batch), target.capabilities.maxBatchSize > 0 {
            for start in stride(from: 0, to: updates.count, by: target.capabilities.maxBatchSize) {
                let chunk = Array(updates[start..<min(start + target.capabilities.maxBatchSize, updates.count)])
                let ops = chunk.map { BatchOperation.update(className: targetClass, id: $0.1, $0.2) }
                let results: [BatchResult]
                do { results = try await withRetry { try await self.target.batch(ops) } } catch {
                    for u in chunk { fail(u.0, MBaaSError.wrap(error)) }
                    continue
                }
                // Setting a field is idempotent, so an all-or-nothing batch with a failure is simply retried one by one.
                if results.contains(where: { if case .failure = $0 { true } else { false } }) {
                    for u in chunk {
                        do { _ = try await withRetry { try await self.target.update(className: targetClass, id: u.1, u.2) } } catch { fail(u.0, MBaaSError.wrap(error)) }
                    }
                }
            }
            return failed
        }
        let outcomes = try await withThrowingTaskGroup(of: (String, MBaaSError?).self) { group in
            var inFlight = 0
            var out: [(String, MBaaSError?)] = []
            for u in updates {
                if inFlight >= max(1, options.concurrency), let r = try await group.next() { out.append(r); inFlight -= 1 }
                group.addTask {
                    do { _ = try await self.withRetry { try await self.target.update(className: targetClass, id: u.1, u.2) }; return (u.0, nil) } catch {
                        return (u.0, MBaaSError.wrap(error))
                    }
                }
                inFlight += 1
            }
            while let r = try await group.next() { out.append(r) }
            return out
        }
        for (id, e) in outcomes { if let e { fail(id, e) } }
        return failed
    }

    func describe(_ v: Value) -> String {
        switch v {
        case .pointer(let p): "\(p.className)/\(p.objectId)"
        case .array(let items): items.map(describe).joined(separator: ", ")
        default: v.typeName
        }
    }
}

/// What copying one linked file came to.
enum LinkedFileCopy: Sendable {
    /// In the target's store (copied now, or by an earlier batch or run).
    case copied(FileReference)
    /// Not in the source's file store.
    case missing
    /// It could not be copied (the source could not read or list it, or the target refused it, after retries): the
    /// records linking it fail, and the next run tries again.
    case failed(MBaaSError)
}

/// Copies in progress, by key: a caller that finds one running waits for it instead of starting another. An entry
/// lives only while its copy runs (the copy records its result in the state first, where later callers find it);
/// a copy that failed is remembered for the rest of the run, so that later batches linking the file fail their
/// records without asking again (the next run does).
final class SharedFileCopies: Sendable {
    private let running = Mutex<(tasks: [String: Task<LinkedFileCopy, any Error>], failed: [String: MBaaSError])>(([:], [:]))

    /// Whether the copy of `key` failed in this run.
    func hasFailed(_ key: String) -> Bool { running.withLock { $0.failed[key] != nil } }

    func once(_ key: String, _ body: @escaping @Sendable () async throws -> LinkedFileCopy) async throws -> LinkedFileCopy {
        let task = running.withLock { running in
            if let failed = running.failed[key] { return Task<LinkedFileCopy, any Error> { .failed(failed) } }
            if let task = running.tasks[key] { return task }
            // Created and entered under the lock: the task's own removal waits for the entry to exist.
            let task = Task {
                let outcome: LinkedFileCopy
                do { outcome = try await body() } catch {
                    self.running.withLock { $0.tasks[key] = nil }
                    throw error
                }
                self.running.withLock {
                    $0.tasks[key] = nil
                    if case .failed(let e) = outcome { $0.failed[key] = e }
                }
                return outcome
            }
            running.tasks[key] = task
            return task
        }
        // A cancelled caller (its task group failed) cancels the copy rather than wait for its retries.
        return try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
    }
}
