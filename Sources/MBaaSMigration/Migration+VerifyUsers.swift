import Foundation
import MBaaSCore

extension Migration {
    /// Compares every source user with the user the id map names on the target: present, with the same user name and
    /// e-mail (where the source has them; the e-mail where the target keeps it, ``MBaaSCore/Capabilities/Feature/userEmail``) and, where the target keeps users' fields (``MBaaSCore/Capabilities/Feature/userFields``),
    /// every field the import gave it (the source's fields and the source-id field) equal by value, as records are
    /// compared (numbers by value, dates to the millisecond). Fields the target
    /// adds of its own (a users collection's other columns, defaults) are not differences; passwords are never
    /// compared (they were not carried).
    ///
    /// The target's users are read once into the state's scratch table (keyed by target id, so memory stays flat
    /// however many users there are), then the source's are checked against it in groups.
    func verifyUsers(target: any Backend, _ state: MigrationState) async throws {
        try await offPool { try state.resetVerification() }
        let keepsFields = target.capabilities.has(.userFields), keepsEmail = target.capabilities.has(.userEmail)
        var rows: [(key: String, targetId: String, digest: Data)] = []
        func flush() async throws {
            let taken = rows
            _ = try await offPool { try state.addVerificationTargets(taken) }   // target ids are unique
            rows = []
        }
        for try await user in target.allUsers() {
            rows.append((user.id, user.id, Self.userContent(user)))
            if rows.count >= 2000 { try await flush() }
        }
        try await flush()
        var group: [DirectoryUser] = []
        func check() async throws {
            let users = group
            group = []
            let mapped = try await offPool { try state.mapped(.user, className: "_User", sourceIds: users.map(\.id)) }
            // Kept, not taken: a source that lists a user twice names one target user twice.
            let found = try await offPool { try state.takeVerificationTargets(Array(Set(mapped.values)), keeping: true) }
            var verified = 0
            var mismatches: [MigrationReport.Mismatch] = []
            for user in users {
                let name = user.username ?? user.email ?? user.id
                guard let targetId = mapped[user.id] else {
                    mismatches.append(.init(kind: "missing", className: "_User", sourceId: user.id, detail: "user \(name) was not migrated"))
                    continue
                }
                guard let content = found[targetId] else {
                    mismatches.append(.init(kind: "missing", className: "_User", sourceId: user.id,
                                            detail: "user \(name) (\(targetId)) is not on the target"))
                    continue
                }
                let differences = userDifferences(expected: user, found: content.digest, keepsFields: keepsFields, keepsEmail: keepsEmail)
                if differences.isEmpty { verified += 1 } else {
                    mismatches.append(.init(kind: "content", className: "_User", sourceId: user.id,
                                            detail: "user \(name) (\(targetId)) differs: " + differences.prefix(5).joined(separator: "; ")))
                }
            }
            let (ok, bad) = (verified, mismatches)
            box.update { report in
                report.users.verified += ok
                report.users.mismatched += bad.count
                for m in bad { report.add(m) }
            }
        }
        for try await user in source.allUsers() {
            group.append(user)
            if group.count >= 500 { try await check() }
        }
        if !group.isEmpty { try await check() }
        try await offPool { try state.resetVerification() }
    }

    /// What verification compares of a target user, kept in the scratch table: `{"u":…,"e":…,"f":{…}}`, the fields
    /// in neutral JSON.
    static func userContent(_ user: DirectoryUser) -> Data {
        var fields = JSONObject(minimumCapacity: user.fields.count)
        for (k, v) in user.fields.sorted(by: { $0.key < $1.key }) { fields[k] = v.json }
        let o: JSONObject = ["u": user.username.map(JSON.string) ?? .null, "e": user.email.map(JSON.string) ?? .null, "f": .object(fields)]
        return Data(JSON.object(o).printed().utf8)
    }

    /// How the target user kept in `found` (``userContent(_:)``) differs from what importing `expected` gave it, one
    /// text per difference; empty when it holds everything the import sent. Fields are compared when `keepsFields`,
    /// the e-mail when `keepsEmail`.
    func userDifferences(expected user: DirectoryUser, found: Data, keepsFields: Bool, keepsEmail: Bool = true) -> [String] {
        guard let stored = (try? JSON.parse(found))?.objectValue else { return ["the target user cannot be read back"] }
        var differences: [String] = []
        func text(_ j: JSON?) -> String { j.map { $0 == .null ? "(none)" : $0.printed() } ?? "(none)" }
        // Without e-mail addresses, a user who has only one is named by it (``MBaaSCore/Capabilities/Feature/userEmail``).
        if let name = user.username ?? (keepsEmail ? nil : user.email), stored["u"] != .string(name) {
            differences.append("userName: expected \(JSON.string(name).printed()), found \(text(stored["u"]))")
        }
        if keepsEmail, let email = user.email, stored["e"] != .string(email) {
            differences.append("mailAddress: expected \(JSON.string(email).printed()), found \(text(stored["e"]))")
        }
        // A target that does not keep users' fields said so in the plan: only name (and e-mail) can be compared.
        guard keepsFields else { return differences }
        var expected = user.fields
        if let f = mapping.sourceIdField { expected[f] = .string(user.id) }
        let fields = stored["f"]?.objectValue ?? [:]
        for (key, value) in expected.sorted(by: { $0.key < $1.key }) where !value.isNull {
            let actual = fields[key].flatMap { try? Value(json: $0, path: key) }
            if let actual, Self.sameValue(value, actual) { continue }
            differences.append("\(key): expected \(value.json.printed()), found \(text(fields[key]))")
        }
        return differences
    }

    /// Whether two values are equal as verification compares them (``CanonicalBytes``).
    static func sameValue(_ a: Value, _ b: Value) -> Bool {
        var x = CanonicalBytes(), y = CanonicalBytes()
        x.value(a)
        y.value(b)
        return x.bytes == y.bytes
    }

    /// Every role this state imported: on the target, with every member the import gave it (the source's members
    /// mapped to target user ids). Members the target's role holds besides (its own users) are not differences; a
    /// role whose members were all left behind (not migrated users) is verified when the target holds it with
    /// none, or lacks it where roles exist only through their members. Member roles are not compared.
    func verifyRoles(target: any Backend, _ state: MigrationState) async throws {
        guard target.capabilities.has(.roles) else { return }
        box.update { ($0.roles.verified, $0.roles.mismatched) = (0, 0) }
        let sourceRoles = try await withRetry { try await self.source.listRoles() }
        let targetRoles = Dictionary(try await withRetry { try await target.listRoles() }.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for role in sourceRoles {
            guard try await offPool({ try state.isDone("role:\(role.name)") }) else { continue }
            let members = role.users
            let mapped = try await offPool { try state.mapped(.user, className: "_User", sourceIds: members) }
            let expected = Set(mapped.values)
            let held = Set(targetRoles[role.name]?.users ?? [])
            let missing = expected.subtracting(held).sorted()
            if missing.isEmpty { box.update { $0.roles.verified += 1 }; continue }
            let detail = targetRoles[role.name] == nil
                ? "role \(role.name) is not on the target (\(expected.count == 1 ? "1 member" : "\(expected.count) members") expected)"
                : "role \(role.name): \(missing.count) of \(expected.count) members are not in it on the target: \(missing.prefix(5).joined(separator: ", "))"
            box.update {
                $0.roles.mismatched += 1
                $0.add(.init(kind: "role", className: "_Role", sourceId: role.id ?? role.name, detail: detail))
            }
        }
    }
}
