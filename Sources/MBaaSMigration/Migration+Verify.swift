import Crypto
import Foundation
import MBaaSCore

extension Migration {
    /// Compares the target with the source through the id map and the mapping, and reports every difference:
    /// counts per class; per record, a checksum over the mapped content (fields, pointers resolved through the id map,
    /// ACL where the target keeps ACLs, timestamps where it keeps them); files by size and sha256, and by ACL where both stores keep file ACLs; users by user name, e-mail
    /// and fields (``verifyUsers(target:_:)``); roles by their members where the target lists roles.
    /// Writes only to the state's scratch table.
    ///
    /// Called again on the same `Migration` (after ``run()``, or a second time), the verified and mismatched counts
    /// are this verification's, but the mismatch list, ``MigrationReport/mismatchCount`` and so
    /// ``MigrationReport/ok`` keep what the copy and earlier verifications found: verify with a new `Migration` on the
    /// same state for a report of this verification alone (as `mbaas verify` does).
    public func verify() async throws -> MigrationReport {
        guard let state else { throw MBaaSError(.invalidRequest, "verification needs the migration's state folder") }
        try await verify(into: state)
        return box.value
    }

    func verify(into state: MigrationState) async throws {
        var target = self.target
        if let bundle = target as? BundleBackend, !bundle.isReadOnly {
            target = try BundleBackend(directory: bundle.directory)   // the finished bundle, read back
        }
        box.update { report in
            report.verified = true
            // Counts of this verification only (a second `verify()` after `run()` does not add to the first's).
            for i in report.classes.indices { (report.classes[i].verified, report.classes[i].mismatched) = (0, 0) }
            (report.users.verified, report.users.mismatched) = (0, 0)
            (report.files.verified, report.files.mismatched) = (0, 0)
        }
        for cls in try await sourceClasses() where !mapping.isSkipped(cls) {
            do { try await verifyClass(cls, target: target, state) } catch {
                let e = MBaaSError.wrap(error)
                guard e.kind != .decoding || !(error is MBaaSError) else { throw e }   // a malformed source stops the run
                box.update {
                    let i = $0.counts(for: cls, target: mapping.targetClass(cls))
                    $0.classes[i].mismatched += 1
                    $0.add(.init(kind: "failed", className: cls, sourceId: nil, detail: "cannot verify: \(e)"))
                }
            }
        }
        try await verifyFiles(target: target, state)
        if options.users && source.capabilities.has(.listUsers) && (target.capabilities.has(.importUsers) || target is BundleBackend) {
            try await verifyUsers(target: target, state)
            try await verifyRoles(target: target, state)
        }
    }

    /// The canonical text of a record's content that verification compares: fields without nulls (nor empty strings
    /// on a target that reads them back absent, ``MBaaSCore/Capabilities/Feature/emptyStringsAbsent``), numbers by value
    /// (`5.0` = `5`), dates to the millisecond, file fields as a marker (files are compared by their bytes), and the
    /// ACL and timestamps where the target keeps them.
    func canonical(_ record: Record, fileFields: Set<String>) -> String {
        func canon(_ v: Value) -> JSON {
            switch v {
            case .double(let d) where d.rounded() == d && abs(d) < 9_007_199_254_740_992: return .int(Int64(d))
            case .array(let items): return .array(items.map(canon))
            case .object(let o): return .object(JSONObject(sorting: o.mapValues(canon)))
            case .file: return .object(["__type": "File"])
            default: return v.json
            }
        }
        var o: [String: JSON] = [:]
        let skipsEmpty = traits.emptyStringsAbsent
        for (k, v) in record.fields where !v.isNull && !(skipsEmpty && v == .string("")) {
            o[k] = fileFields.contains(k) ? .object(["__type": "File"]) : canon(v)
        }
        if traits.acl, let acl = record.acl, !acl.entries.isEmpty { o["$acl"] = acl.json }
        if traits.clientTimestamps {
            if let c = record.createdAt { o["$createdAt"] = .string(ISO8601.format(c)) }
            if let u = record.updatedAt { o["$updatedAt"] = .string(ISO8601.format(u)) }
        }
        return JSON.object(JSONObject(sorting: o)).printed([.sortedKeys])
    }

    /// The SHA-256 of the content ``canonical(_:fileFields:)`` prints, computed without printing it: the same
    /// comparison (fields without nulls, integral doubles as integers, file fields by presence, the ACL and kept
    /// timestamps where the target holds them, dates at the printed precision) over a tagged, length-prefixed byte
    /// form fed to one hash. Verification keeps only this digest per record; the printed form is made again only to
    /// name the fields of a record that differs.
    func canonicalDigest(_ record: Record, fileFields: Set<String>) -> Data {
        var out = CanonicalBytes()
        out.bytes.reserveCapacity(512)
        let skipsEmpty = traits.emptyStringsAbsent
        for (key, value) in record.fields.sorted(by: { $0.key < $1.key }) {
            if value.isNull || (skipsEmpty && value == .string("")) { continue }
            out.tag(UInt8(ascii: "k"))
            out.string(key)
            if fileFields.contains(key) { out.tag(UInt8(ascii: "F")) } else { out.value(value) }
        }
        if traits.acl, let acl = record.acl, !acl.entries.isEmpty {
            out.tag(UInt8(ascii: "A"))
            for principal in acl.entries.keys.sorted() {
                let access = acl.entries[principal]!
                guard access.read || access.write else { continue }
                out.tag(UInt8(ascii: "p"))
                out.string(principal.key)
                out.tag((access.read ? 1 : 0) | (access.write ? 2 : 0))
            }
        }
        if traits.clientTimestamps {
            if let c = record.createdAt { out.tag(UInt8(ascii: "C")); out.string(ISO8601.format(c)) }
            if let u = record.updatedAt { out.tag(UInt8(ascii: "U")); out.string(ISO8601.format(u)) }
        }
        return out.bytes.withUnsafeBytes { Data(SHA256.hash(data: $0)) }
    }

    func verifyClass(_ cls: String, target: any Backend, _ state: MigrationState) async throws {
        let targetClass = mapping.targetClass(cls)
        let index = box.update { $0.counts(for: cls, target: targetClass) }
        // The state's calls that can wait or run long go off the cooperative pool (``offPool(_:)``).
        let (recordedFields, dropped) = try await offPool {
            (try state.fileFields(className: cls), try state.attachments(className: cls, done: true, targetName: MigrationState.droppedOriginal))
        }
        var fileFields = recordedFields
        // Fields a missing source file left empty because the target could not hold the name.
        var emptied: Set<String> = []
        for a in dropped { emptied.insert("\(a.sourceId)\u{1}\(a.field)") }
        for f in mapping.fileLinkFields(cls) { fileFields.insert(mapping.rule(className: cls, field: f)?.rename ?? f) }
        try await offPool { try state.resetVerification() }
        let digestFields = fileFields
        // The target's side, keyed by source id: a page's digests are computed on every core, and its rows go into the
        // state's scratch table thousands at a time, each commit running while the next pages are read.
        var rows: [(key: String, targetId: String, digest: Data)] = []
        var committing: Task<[String], any Error>?
        func settleCommit() async throws {
            guard let commit = committing else { return }
            committing = nil
            for dup in try await commit.value {
                box.update {
                    $0.classes[index].mismatched += 1
                    $0.add(.init(kind: "unexpected", className: cls, sourceId: dup, detail: "the target holds this source record more than once"))
                }
            }
        }
        func flush() async throws {
            try await settleCommit()
            let taken = rows
            rows = []
            // Thousands per transaction: the keys arrive in no order, and small transactions rewrite the same pages
            // over and over.
            committing = Task { try await offPool { try state.addVerificationTargets(taken) } }
        }
        var page: [Record] = []
        func digestPage() async throws {
            let records = page
            page = []
            var keys: [String] = []
            keys.reserveCapacity(records.count)
            for r in records {
                if let field = mapping.sourceIdField, let s = r.fields[field]?.stringValue {
                    keys.append(s)
                } else {
                    let id = r.id ?? ""
                    keys.append(try await offPool { try state.sourceId(.record, className: cls, targetId: id) } ?? id)
                }
            }
            let digests = try await parallelMap(records) { self.canonicalDigest($0, fileFields: digestFields) }
            for i in records.indices { rows.append((keys[i], records[i].id ?? "", digests[i])) }
            if rows.count >= 5000 { try await flush() }
        }
        do {
            do {
                for try await r in target.records(matching: Query(targetClass), pageSize: target.capabilities.maxPageSize).readingAhead() {
                    page.append(r)
                    if page.count >= 1000 { try await digestPage() }
                }
            } catch let e as MBaaSError where e.kind == .notFound {
                // The class does not exist on the target: every source record is missing.
            }
            try await digestPage()
            try await flush()
            try await settleCommit()
        } catch {
            _ = try? await committing?.value   // nothing of this class's writes outlives it
            throw error
        }
        // The source's side, mapped as the migration maps it: the expected digests are computed on every core while
        // the target's side of the same keys is taken from the scratch table.
        let emptiedFields = emptied
        let skipsEmpty = traits.emptyStringsAbsent
        @Sendable func expectedRecord(_ r: Record, id: String, maps: Maps, narrowed: [ACL: ACL]) -> Record {
            var expected = prepare(r, maps: maps, verifying: true, narrowed: narrowed).record
            for f in digestFields {
                // A null link is no file (nulls are not compared); nor is an empty one where "" reads back absent.
                guard let v = r.fields[reverseField(cls, f)], !v.isNull, !(skipsEmpty && v == .string("")) else { continue }
                expected.fields[f] = emptiedFields.contains("\(id)\u{1}\(f)") ? nil : .file(FileReference(name: ""))
            }
            return expected
        }
        var batch: [Record] = []
        func check() async throws {
            var read = batch
            batch = []
            // Records read without their ACL: read apart, as the copy read them; one whose ACL cannot be read is a
            // mismatch (not proven).
            if readsRecordACLs {
                let (withACLs, failed) = try await withSourceACLs(read.filter { $0.id != nil }, className: cls)
                let batchKeys = read.compactMap { r in r.id.map { ($0, self.lineageKey(r)) } }
                read = withACLs
                if !failed.isEmpty {
                    box.update { report in
                        report.classes[index].mismatched += failed.count
                        for (id, detail) in failed { report.add(.init(kind: "content", className: cls, sourceId: id, detail: detail)) }
                    }
                    let keyOf = Dictionary(batchKeys, uniquingKeysWith: { a, _ in a })
                    let gone = failed.map { keyOf[$0.0] ?? $0.0 }
                    _ = try await offPool { try state.takeVerificationTargets(gone) }
                }
            }
            let sources = read
            let maps = try await offPool { try self.maps(for: sources, state) }
            let narrowed = await narrowings(for: sources, maps: maps, reporting: false)
            // The target's side is keyed by its source-id field: the source id a record carries from an earlier
            // migration where it carries one (kept through the hops), else its id.
            let keys = sources.map { $0.id == nil ? nil : self.lineageKey($0) }
            let ids = keys.compactMap { $0 }
            async let taking = offPool { try state.takeVerificationTargets(ids) }
            let expected = try await parallelMap(sources) { r -> Data? in
                r.id.map { self.canonicalDigest(expectedRecord(r, id: $0, maps: maps, narrowed: narrowed), fileFields: digestFields) }
            }
            let found = try await taking
            var verified = 0
            for ((r, digest), key) in zip(zip(sources, expected), keys) {
                guard let id = r.id, let key, let digest else { continue }
                guard let (targetId, stored) = found[key] else {
                    box.update {
                        $0.add(.init(kind: "missing", className: cls, sourceId: id, detail: "not on the target"))
                        $0.classes[index].mismatched += 1
                    }
                    continue
                }
                if digest == stored { verified += 1; continue }
                let want = canonical(expectedRecord(r, id: id, maps: maps, narrowed: narrowed), fileFields: digestFields)
                // Only the checksum was kept: read the record again to say what differs.
                let detail: String
                if let actual = try? await target.get(className: targetClass, id: targetId) {
                    detail = Self.difference(want, canonical(actual, fileFields: digestFields))
                } else {
                    detail = "content differs (checksum); the target record \(targetClass)/\(targetId) cannot be read again"
                }
                box.update {
                    $0.add(.init(kind: "content", className: cls, sourceId: id, detail: detail))
                    $0.classes[index].mismatched += 1
                }
            }
            let ok = verified
            box.update { $0.classes[index].verified += ok }
        }
        for try await r in source.records(matching: Query(cls), pageSize: source.capabilities.maxPageSize).readingAhead() {
            batch.append(r)
            if batch.count >= 1000 { try await check() }
        }
        if !batch.isEmpty { try await check() }
        while true {
            let extra = try await offPool {
                let extra = try state.unseenVerificationTargets(limit: 500)
                _ = try state.takeVerificationTargets(extra.map(\.0))
                return extra
            }
            guard !extra.isEmpty else { break }
            box.update { report in
                for (key, targetId) in extra {
                    report.add(.init(kind: "unexpected", className: cls, sourceId: key,
                                     detail: "target record \(targetClass)/\(targetId) has no source record"))
                    report.classes[index].mismatched += 1
                }
            }
        }
    }

    /// The source field a target field came from.
    func reverseField(_ cls: String, _ targetField: String) -> String {
        mapping.classes[cls]?.fields.first(where: { $0.value.rename == targetField })?.key ?? targetField
    }

    /// The fields two canonical texts differ in.
    static func difference(_ expected: String, _ actual: String) -> String {
        guard let a = (try? JSON.parse(expected))?.objectValue, let b = (try? JSON.parse(actual))?.objectValue else {
            return "content differs"
        }
        let keys = Set(a.dictionary.keys).union(b.dictionary.keys).sorted()
        let diffs = keys.filter { a[$0] != b[$0] }.prefix(5).map { k in
            "\(k): expected \(a[k]?.printed() ?? "(absent)"), found \(b[k]?.printed() ?? "(absent)")"
        }
        return "fields differ: " + diffs.joined(separator: "; ")
    }

    /// Every copied file: downloaded from the target and compared with the source's size and sha256, and by its ACL
    /// where both stores keep and list file ACLs (``fileACLDifference(_:listed:_:_:)``): a file of a separate store,
    /// and an attachment where the target's attachments have ACLs of their own (the copy gave it its file's).
    func verifyFiles(target: any Backend, _ state: MigrationState) async throws {
        // One listing of each store for both kinds of file (names are unique in a store).
        let acls = try await fileACLsToCompare(target: target, attachments: target.capabilities.has(.attachmentACL))
        // Up to `fileConcurrency` files at a time, as they were copied.
        try await concurrently(try await offPool({ try state.copiedFiles() }), limit: options.fileCopiesInFlight) { f in
            var aclDifference = acls?.unreadable[f.sourceName]
            if let acls, let given = acls.source[f.sourceName] {
                aclDifference = try await self.fileACLDifference(given, listed: acls.target[f.target.name], f.sourceName, state)
            }
            try await self.verifyFile(target: target, "(files)", f.sourceName, f.target, f.sha256, f.size, aclDifference: aclDifference)
        }
        for cls in try await sourceClasses() {
            var after = ""
            while true {
                let from = after
                let page = try await offPool { try state.attachments(className: cls, done: true, after: from, limit: 500) }
                guard let last = page.last else { break }
                after = last.sourceId
                try await concurrently(page, limit: options.fileCopiesInFlight) { a in
                    guard let sha = a.sha256, let size = a.size, let text = a.targetName,
                          let ref = (try? Value(json: JSON.parse(text)))?.fileValue else { return }
                    var aclDifference = target.capabilities.has(.attachmentACL) ? acls?.unreadable[Self.fileKey(a.ref)] : nil
                    if let acls, target.capabilities.has(.attachmentACL), let given = acls.source[Self.fileKey(a.ref)] {
                        aclDifference = try await self.fileACLDifference(given, listed: acls.target[ref.name], a.ref.name, state)
                    }
                    try await self.verifyFile(target: target, cls, a.sourceId, ref, sha, size, aclDifference: aclDifference)
                }
            }
        }
    }

    /// The file ACLs verification compares: the source's, by ``fileKey(_:)`` (the state's key of a copied file: its
    /// name, or for an attachment its record, field and name), and the target's, by the name it stored the file
    /// under. The source's are those the copy hands over (``sourceFileACL(_:)``): its separate store's, and its
    /// attachments' where they have ACLs of their own (``MBaaSCore/Capabilities/Feature/attachmentACL``). `nil`
    /// where either store keeps no file ACLs or does not list them (``MBaaSCore/Capabilities/Feature/fileACLListing``;
    /// a source that reads them per file, ``MBaaSCore/Capabilities/Feature/fileACLRead``, is read file by file; the
    /// plan and the copy said what was not kept), or where no source file has an ACL. A listing that fails is a
    /// mismatch (the ACLs were not proven). A file whose ACL read fails is in `unreadable`, with why: that file's
    /// difference, the others being compared.
    ///
    /// `attachments`: the target's list includes the files attached to its records (names are unique in a store).
    func fileACLsToCompare(target: any Backend, attachments: Bool = false) async throws
        -> (source: [String: ACL], target: [String: ACL?], unreadable: [String: String])?
    {
        let lists: Set<Capabilities.Feature> = [.fileACL, .fileList, .fileACLListing]
        guard source.capabilities.features.isSuperset(of: lists) || (readsFileACLs && source.capabilities.has(.fileList)),
              target.capabilities.features.isSuperset(of: lists) else { return nil }
        let sourceAttachments = source.capabilities.has(.attachmentACL)
        do {
            var given: [String: ACL] = [:]
            var unreadable: [String: String] = [:]
            for f in try await withRetry({ try await self.source.listFiles(prefix: nil, limit: nil) })
            where f.reference.attachment == nil || sourceAttachments {
                var acl = f.acl
                if readsFileACLs {
                    // Read one by one: a file whose read fails is that file's difference (its ACL is not proven),
                    // and the others are compared.
                    do { acl = try await readFileACL(f.reference) } catch {
                        if error is CancellationError || Task.isCancelled { throw CancellationError() }
                        unreadable[Self.fileKey(f.reference)] = "its ACL cannot be read on \(source.adapterName): \(MBaaSError.wrap(error))"
                        continue
                    }
                }
                if let acl { given[Self.fileKey(f.reference)] = acl }
            }
            guard !given.isEmpty || !unreadable.isEmpty else { return nil }
            var stored: [String: ACL?] = [:]
            for f in try await withRetry({ try await target.listFiles(prefix: nil, limit: nil) }) where f.reference.attachment == nil || attachments {
                stored[f.reference.name] = f.acl
            }
            return (given, stored, unreadable)
        } catch {
            if error is CancellationError || Task.isCancelled { throw CancellationError() }
            box.update {
                $0.files.mismatched += 1
                $0.add(.init(kind: "file", className: Self.standaloneFiles, sourceId: nil, detail: "file ACLs cannot be compared: \(MBaaSError.wrap(error))"))
            }
            return nil
        }
    }

    /// How a copied file's ACL on the target differs from the source's mapped as the copy maps it (user ids through
    /// the id map, roles left out where the target has none), comparing grants that give some access; `nil` when
    /// they are the same. `listed` is the target's ACL of the file, `nil` when the target does not list the file.
    func fileACLDifference(_ given: ACL, listed: ACL??, _ sourceName: String, _ state: MigrationState) async throws -> String? {
        let expected = try await mappedFileACL(given, name: sourceName, className: Self.standaloneFiles, reporting: false, state)
        guard let listed else { return "the target does not list it, so its ACL cannot be compared" }
        func grants(_ acl: ACL?) -> ACL { ACL((acl?.entries ?? [:]).filter { $0.value.read || $0.value.write }) }
        guard grants(listed) != grants(expected) else { return nil }
        func printed(_ acl: ACL) -> String { acl.entries.isEmpty ? "none" : acl.json.printed([.sortedKeys]) }
        return "ACL \(printed(grants(listed))), expected \(printed(grants(expected)))"
    }

    /// Downloads one copied file from the target and compares its size and sha256 with the source's; a file whose
    /// bytes match but whose ACL differs (`aclDifference`) is a mismatch too.
    func verifyFile(target: any Backend, _ cls: String, _ id: String, _ ref: FileReference, _ sha: String, _ size: Int64,
                    aclDifference: String? = nil) async throws {
        do {
            let data = try await withRetry { try await target.download(ref) }
            var differences: [String] = []
            if Int64(data.count) != size || sha256Hex(data) != sha {
                differences.append("\(data.count) bytes with sha256 \(sha256Hex(data).prefix(12))…, expected \(size) bytes with \(sha.prefix(12))…")
            }
            if let aclDifference { differences.append(aclDifference) }
            if differences.isEmpty {
                box.update { $0.files.verified += 1 }
            } else {
                box.update {
                    $0.files.mismatched += 1
                    $0.add(.init(kind: "file", className: cls, sourceId: id, detail: "file \(ref.name): " + differences.joined(separator: "; ")))
                }
            }
        } catch {
            box.update {
                $0.files.mismatched += 1
                $0.add(.init(kind: "file", className: cls, sourceId: id, detail: "file \(ref.name) cannot be read from the target: \(MBaaSError.wrap(error))"))
            }
        }
    }
}

/// The byte form ``Migration/canonicalDigest(_:fileFields:)`` hashes: a tag byte before every field, ACL entry,
/// timestamp and value, lengths before variable-length contents and counts before arrays and objects, keys in order.
/// No form is a prefix of another, so two records hash alike only when their contents are alike.
struct CanonicalBytes {
    var bytes: [UInt8] = []

    mutating func tag(_ t: UInt8) { bytes.append(t) }

    mutating func integer(_ v: Int64) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }

    mutating func string(_ s: String) {
        integer(Int64(s.utf8.count))
        bytes.append(contentsOf: s.utf8)
    }

    mutating func double(_ d: Double) {
        // As ``Migration/canonical(_:fileFields:)``: an integral double compares equal to the integer.
        if d.rounded() == d && abs(d) < 9_007_199_254_740_992 {
            tag(UInt8(ascii: "i"))
            integer(Int64(d))
        } else {
            tag(UInt8(ascii: "d"))
            integer(Int64(bitPattern: d.bitPattern))
        }
    }

    mutating func value(_ v: Value) {
        switch v {
        case .null: tag(UInt8(ascii: "n"))
        case .bool(let b): tag(b ? UInt8(ascii: "t") : UInt8(ascii: "f"))
        case .int(let i): tag(UInt8(ascii: "i")); integer(i)
        case .double(let d): double(d)
        case .string(let s): tag(UInt8(ascii: "s")); string(s)
        case .date(let d): tag(UInt8(ascii: "D")); string(ISO8601.format(d))
        case .bytes(let b): tag(UInt8(ascii: "B")); integer(Int64(b.count)); bytes.append(contentsOf: b)
        case .array(let items):
            tag(UInt8(ascii: "a"))
            integer(Int64(items.count))
            for item in items { value(item) }
        case .object(let o):
            tag(UInt8(ascii: "o"))
            integer(Int64(o.count))
            for (key, item) in o.sorted(by: { $0.key < $1.key }) { string(key); value(item) }
        case .pointer(let p): tag(UInt8(ascii: "P")); string(p.className); string(p.objectId)
        case .file: tag(UInt8(ascii: "F"))
        case .geoPoint(let g): tag(UInt8(ascii: "G")); double(g.latitude); double(g.longitude)
        }
    }
}
