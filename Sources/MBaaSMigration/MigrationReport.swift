import Foundation
public import MBaaSCore

/// What a migration (or a verification, or a dry run) found, per class, for users, roles and files, with every
/// mismatch. Its JSON form is what `mbaas migrate --report FILE` writes:
///
/// ```json
/// {"from":"..","to":"..","state":"..","dryRun":false,"ok":true,
///  "classes":[{"source":"MemoClass","target":"Memo","read":12,"written":12,"skipped":0,"failed":0,"verified":12,"mismatched":0}],
///  "users":{"read":3,"written":3,"skipped":0,"failed":0,"verified":3,"mismatched":0,"passwords":{"reset":3,"temporary":0},
///           "details":[{"sourceId":"..","targetId":"..","password":"reset"}]},
///  "roles":{"read":1,"written":1,"skipped":0,"failed":0,"verified":1,"mismatched":0},
///  "files":{"read":4,"written":4,"failed":0,"verified":4,"mismatched":0},
///  "plan":{...},  "mismatches":[{"class":"MemoClass","sourceId":"..","kind":"content","detail":".."}],
///  "problems":[".."]}
/// ```
public struct MigrationReport: Sendable {
    public struct ClassCounts: Sendable, Hashable {
        public var source: String
        public var target: String
        public var read = 0
        public var written = 0
        /// Already on the target from an earlier run.
        public var skipped = 0
        public var failed = 0
        public var verified = 0
        public var mismatched = 0
        public init(source: String, target: String) {
            self.source = source
            self.target = target
        }
    }

    public struct Counts: Sendable, Hashable {
        public var read = 0
        public var written = 0
        public var skipped = 0
        public var failed = 0
        public var verified = 0
        public var mismatched = 0
        public init() {}
    }

    /// One difference between source and target, or one thing that could not be carried.
    public struct Mismatch: Sendable, Hashable {
        /// Mismatches: `missing` (not on the target), `unexpected` (on the target, not in the source), `content` (fields
        /// differ), `file` (size or sha256 differ, or unreadable), `failed` (the write failed). Warnings: `pointer` (points
        /// at a record that was not migrated), `acl` (names a user who was not), `sourceFile` (a named file the source's
        /// store lacks), `role` (a member who was not migrated), `emptyString` (records of a class hold an empty string
        /// in a field that a target with ``MBaaSCore/Capabilities/Feature/emptyStringsAbsent`` reads back absent: one
        /// per class and field, with the count and the first record ids).
        public var kind: String
        public var className: String
        public var sourceId: String?
        public var detail: String
        public init(kind: String, className: String, sourceId: String?, detail: String) {
            self.kind = kind
            self.className = className
            self.sourceId = sourceId
            self.detail = detail
        }
        public var json: JSON {
            var o: JSONObject = ["kind": .string(kind), "class": .string(className)]
            if let sourceId { o["sourceId"] = .string(sourceId) }
            o["detail"] = .string(detail)
            return .object(o)
        }
    }

    public struct UserOutcome: Sendable, Hashable {
        public var sourceId: String
        public var targetId: String
        /// `reset` or `temporary`.
        public var password: String
    }

    public var from: String
    public var to: String
    public var stateDirectory: String?
    public var dryRun = false
    public var classes: [ClassCounts] = []
    public var users = Counts()
    public var userOutcomes: [UserOutcome] = []
    public var roles = Counts()
    public var files = Counts()
    public var plan: MigrationPlan?
    /// Every mismatch (a difference between source and target, or a failed write) up to ``maxListed``;
    /// ``mismatchCount`` counts them all, and ``mismatchesFile`` (in the state folder) lists them all, one JSON per
    /// line. Any mismatch makes the run not ``ok``.
    public var mismatches: [Mismatch] = []
    /// `mismatches.ndjson` in the state folder: every mismatch and warning of the run (`"warning":true` on warnings).
    public var mismatchesFile: String?
    public var mismatchCount = 0
    /// Defects of the source that were carried as they are (a pointer to a record that is not in the source, an ACL
    /// naming a user who is not, a file a record names that the source's store lacks, a role member who is not a
    /// user), up to ``maxListed``. Reported, never silently dropped; they do not make the run fail, since the target
    /// holds what the source held.
    public var warnings: [Mismatch] = []
    public var warningCount = 0
    /// Things that were not carried, or carried lossily, said once each.
    public var problems: [String] = []
    /// Whether verification ran.
    public var verified = false

    public static let maxListed = 1000

    public init(from: String, to: String) {
        self.from = from
        self.to = to
    }

    /// True when nothing failed and verification (if it ran) found no mismatch.
    public var ok: Bool {
        mismatchCount == 0 && classes.allSatisfy { $0.failed == 0 } && users.failed == 0 && roles.failed == 0 && files.failed == 0
    }

    /// Entries added since the report box last wrote them to ``mismatchesFile`` (`true` for warnings).
    var unlogged: [(Mismatch, Bool)] = []
    /// Warnings about what this run wrote, not yet kept in the state (``MigrationState/keepWarnings(_:run:)``).
    var unkept: [Mismatch] = []

    mutating func add(_ m: Mismatch) {
        mismatchCount += 1
        if mismatches.count < Self.maxListed { mismatches.append(m) }
        unlogged.append((m, false))
    }

    /// Adds a warning. Unless `keep` is `false`, it is also kept in the state, so that a later run, which skips what
    /// it is about, says it again (``Migration/sayEarlierWarnings(_:)``). `pointer` warnings are not kept: the
    /// pointers stage looks at every pointer left again in each run, and one may since have found its record.
    mutating func warn(_ m: Mismatch, keep: Bool = true) {
        warningCount += 1
        if warnings.count < Self.maxListed { warnings.append(m) }
        unlogged.append((m, true))
        if keep, m.kind != "pointer" { unkept.append(m) }
    }

    /// Empty strings written to a target that reads them back absent, by source class and field: how many records,
    /// and the first ids (up to ``emptyStringIdsListed``). Said as one `emptyString` warning per class and field
    /// when the class ends.
    var emptyStrings: [String: [String: (count: Int, ids: [String])]] = [:]
    static let emptyStringIdsListed = 5

    mutating func noteEmptyStrings(className: String, field: String, sourceId: String) {
        var entry = emptyStrings[className, default: [:]][field] ?? (count: 0, ids: [])
        entry.count += 1
        if entry.ids.count < Self.emptyStringIdsListed { entry.ids.append(sourceId) }
        emptyStrings[className, default: [:]][field] = entry
    }

    /// Warns once per field of `className` whose empty strings will not survive on `target`, and forgets them.
    mutating func warnEmptyStrings(className: String, target: String) {
        guard let fields = emptyStrings.removeValue(forKey: className) else { return }
        for (field, e) in fields.sorted(by: { $0.key < $1.key }) {
            let more = e.count > e.ids.count ? ", …" : ""
            warn(.init(kind: "emptyString", className: className, sourceId: nil,
                       detail: "\(e.count) \(e.count == 1 ? "record holds" : "records hold") an empty string in '\(field)', which \(target) reads back absent (first: \(e.ids.joined(separator: ", "))\(more))"))
        }
    }

    mutating func problem(_ text: String) {
        if !problems.contains(text) { problems.append(text) }
    }

    mutating func counts(for source: String, target: String) -> Int {
        if let i = classes.firstIndex(where: { $0.source == source }) { return i }
        classes.append(ClassCounts(source: source, target: target))
        return classes.count - 1
    }

    public var json: JSON {
        func counts(_ c: Counts, verify: Bool) -> JSONObject {
            var o: JSONObject = ["read": .int(Int64(c.read)), "written": .int(Int64(c.written)), "skipped": .int(Int64(c.skipped)),
                                 "failed": .int(Int64(c.failed))]
            if verify { o["verified"] = .int(Int64(c.verified)); o["mismatched"] = .int(Int64(c.mismatched)) }
            return o
        }
        var users = counts(self.users, verify: verified)
        users["passwords"] = .object([
            "reset": .int(Int64(userOutcomes.filter { $0.password == "reset" }.count)),
            "temporary": .int(Int64(userOutcomes.filter { $0.password == "temporary" }.count)),
        ])
        users["details"] = .array(userOutcomes.map {
            .object(["sourceId": .string($0.sourceId), "targetId": .string($0.targetId), "password": .string($0.password)])
        })
        var o: JSONObject = [
            "from": .string(from), "to": .string(to), "dryRun": .bool(dryRun), "ok": .bool(ok), "verified": .bool(verified),
            "classes": .array(classes.map { c in
                .object(["source": .string(c.source), "target": .string(c.target), "read": .int(Int64(c.read)),
                         "written": .int(Int64(c.written)), "skipped": .int(Int64(c.skipped)), "failed": .int(Int64(c.failed)),
                         "verified": .int(Int64(c.verified)), "mismatched": .int(Int64(c.mismatched))])
            }),
            "users": .object(users), "roles": .object(counts(roles, verify: verified)), "files": .object(counts(files, verify: true)),
            "mismatchCount": .int(Int64(mismatchCount)), "mismatches": .array(mismatches.map(\.json)),
            "warningCount": .int(Int64(warningCount)), "warnings": .array(warnings.map(\.json)),
            "problems": .array(problems.map(JSON.string)),
        ]
        if let stateDirectory { o["state"] = .string(stateDirectory) }
        if let mismatchesFile { o["mismatchesFile"] = .string(mismatchesFile) }
        if let plan { o["plan"] = plan.json }
        return .object(o)
    }

    /// The summary table the CLI prints.
    public var table: String {
        var rows: [[String]] = [["class", "target", "read", "written", "skipped", "failed", "verified", "mismatched"]]
        for c in classes {
            rows.append([c.source, c.target, "\(c.read)", "\(c.written)", "\(c.skipped)", "\(c.failed)",
                         verified ? "\(c.verified)" : "-", verified ? "\(c.mismatched)" : "-"])
        }
        rows.append(["(users)", "", "\(users.read)", "\(users.written)", "\(users.skipped)", "\(users.failed)",
                     verified ? "\(users.verified)" : "-", verified ? "\(users.mismatched)" : "-"])
        rows.append(["(roles)", "", "\(roles.read)", "\(roles.written)", "\(roles.skipped)", "\(roles.failed)",
                     verified ? "\(roles.verified)" : "-", verified ? "\(roles.mismatched)" : "-"])
        rows.append(["(files)", "", "\(files.read)", "\(files.written)", "\(files.skipped)", "\(files.failed)",
                     verified ? "\(files.verified)" : "-", verified ? "\(files.mismatched)" : "-"])
        // Columns on the screen, not characters: a class named in kanji takes two per character.
        let widths = rows[0].indices.map { i in rows.map { $0[i].displayWidth }.max() ?? 0 }
        var out = rows.map { r in r.enumerated().map { $1.padded(toDisplayWidth: widths[$0]) }.joined(separator: "  ") }
            .joined(separator: "\n")
        let temporary = userOutcomes.filter { $0.password == "temporary" }.count
        if !userOutcomes.isEmpty {
            out += "\nusers: \(userOutcomes.count - temporary) without a usable password (reset), \(temporary) with a temporary password"
        }
        for p in problems { out += "\nnote: \(p)" }
        for w in warnings.prefix(20) {
            out += "\nwarning: \(w.kind): \(w.className)\(w.sourceId.map { "/\($0)" } ?? ""): \(w.detail)"
        }
        if warningCount > 20 { out += "\n… \(warningCount - 20) more warnings (see --report)" }
        for m in mismatches.prefix(20) {
            out += "\n\(m.kind): \(m.className)\(m.sourceId.map { "/\($0)" } ?? ""): \(m.detail)"
        }
        if mismatchCount > 20 { out += "\n… \(mismatchCount - 20) more mismatches (see --report)" }
        if let stateDirectory { out += "\nstate: \(stateDirectory)" }
        out += dryRun ? "\ndry run: nothing was written" : (ok ? (verified ? "\nverified: source and target agree" : "\ndone") : "\nNOT OK: see the mismatches above")
        return out
    }
}

/// What a migration will do, from its dry run: classes with counts, conversions, and what the target cannot keep.
public struct MigrationPlan: Sendable {
    public struct ClassPlan: Sendable {
        public var source: String
        public var target: String
        public var count: Int?
        /// Field name → value types seen in the first page (`title: string`, `due: Date`).
        public var fieldTypes: [String: Set<String>]
        public var renames: [String: String]
        public var drops: [String]
        public var fileLinks: [String]
        public var skipped: Bool
    }

    public var classes: [ClassPlan] = []
    public var users: Int?
    public var roles: Int?
    public var files: Int?
    public var passwords: String = "reset"
    /// Conversions the target makes (lossy or not), one sentence each.
    public var conversions: [String] = []
    /// What the target cannot keep.
    public var unsupported: [String] = []

    public var json: JSON {
        .object([
            "classes": .array(classes.map { c in
                var o: JSONObject = ["source": .string(c.source), "target": .string(c.target), "skipped": .bool(c.skipped)]
                if let n = c.count { o["count"] = .int(Int64(n)) }
                o["fields"] = .object(JSONObject(sorting: c.fieldTypes.mapValues { .array($0.sorted().map(JSON.string)) }))
                o["renames"] = .object(JSONObject(sorting: c.renames.mapValues(JSON.string)))
                o["drops"] = .array(c.drops.map(JSON.string))
                o["fileLinks"] = .array(c.fileLinks.map(JSON.string))
                return .object(o)
            }),
            "users": users.map { .int(Int64($0)) } ?? .null, "roles": roles.map { .int(Int64($0)) } ?? .null,
            "files": files.map { .int(Int64($0)) } ?? .null, "passwords": .string(passwords),
            "conversions": .array(conversions.map(JSON.string)), "unsupported": .array(unsupported.map(JSON.string)),
        ])
    }

    public var table: String {
        var out = "plan:\n"
        for c in classes {
            out += "  \(c.source) -> \(c.target)" + (c.skipped ? " (skipped)" : "") + ": \(c.count.map(String.init) ?? "?") records"
            if !c.renames.isEmpty { out += "; renames " + c.renames.sorted(by: { $0.key < $1.key }).map { "\($0.key)->\($0.value)" }.joined(separator: ", ") }
            if !c.drops.isEmpty { out += "; drops " + c.drops.joined(separator: ", ") }
            if !c.fileLinks.isEmpty { out += "; file links " + c.fileLinks.joined(separator: ", ") }
            out += "\n"
            for (field, types) in c.fieldTypes.sorted(by: { $0.key < $1.key }) { out += "      \(field): \(types.sorted().joined(separator: "|"))\n" }
        }
        out += "  users: \(users.map(String.init) ?? "not listed") (passwords: \(passwords))\n"
        out += "  roles: \(roles.map(String.init) ?? "not listed")\n"
        out += "  files: \(files.map(String.init) ?? "not listed")\n"
        for c in conversions { out += "  conversion: \(c)\n" }
        for u in unsupported { out += "  not carried: \(u)\n" }
        return out
    }
}
