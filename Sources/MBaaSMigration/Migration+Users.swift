import Foundation
import MBaaSCore

extension Migration {
    /// Imports every source user the target lacks. Password hashes never move: each user gets no usable password
    /// (`reset`) or a generated temporary one written only to `temporary-passwords.ndjson` (0600) in the state folder.
    ///
    /// Users go in groups of ``userGroupSize``: the group's pending marks are committed in one transaction before any
    /// of its imports, and its mappings every ``userCommitEvery`` imports and when the group ends or fails. A run
    /// killed in between leaves imported users marked pending, which the next run finds on the target (by user name
    /// or e-mail, checked against `sourceObjectId`, or by `sourceObjectId` for a user with neither: ``findImported(_:_:)``)
    /// instead of creating them again.
    func copyUsers(_ state: MigrationState) async throws {
        let pending = Set(try await offPool { try state.pending(.user, className: "_User") })
        var passwordFile: NDJSONWriter?
        defer { passwordFile?.close() }
        var group: [DirectoryUser] = []
        for try await user in source.allUsers() {
            group.append(user)
            if group.count >= Self.userGroupSize {
                try await copyUserGroup(group, pending: pending, passwordFile: &passwordFile, state)
                group = []
            }
        }
        if !group.isEmpty { try await copyUserGroup(group, pending: pending, passwordFile: &passwordFile, state) }
        let outcomes = try await offPool { try state.userPasswords() }.map { MigrationReport.UserOutcome(sourceId: $0.0, targetId: $0.1, password: $0.2) }
        box.update { $0.userOutcomes = outcomes }
    }

    /// Users per group of ``copyUsers(_:)``.
    static let userGroupSize = 200

    func copyUserGroup(_ users: [DirectoryUser], pending: Set<String>, passwordFile: inout NDJSONWriter?, _ state: MigrationState) async throws {
        box.update { $0.users.read += users.count }
        // Users are keyed by their source id in the state database (SQLite), where a NUL would cut the key short.
        var users = users
        users.removeAll { user in
            do throws(MBaaSError) { try StoreValidation.noNUL(user.id, "source user id") } catch {
                box.update {
                    $0.users.failed += 1
                    $0.add(.init(kind: "failed", className: "_User", sourceId: user.id, detail: error.message))
                }
                return true
            }
            return false
        }
        let ids = users.map(\.id)
        let known = try await offPool { try state.mapped(.user, className: "_User", sourceIds: ids) }
        var seen = Set<String>()
        var adopted: [(sourceId: String, targetId: String)] = []
        var todo: [(user: DirectoryUser, importing: DirectoryUser, password: ImportedPassword)] = []
        for user in users {
            // Mapped by an earlier run, or listed twice by the source.
            guard known[user.id] == nil, seen.insert(user.id).inserted else {
                box.update { $0.users.skipped += 1 }
                continue
            }
            var imported = user
            imported.roles = []   // roles are given by importRole, through the id map
            if let f = mapping.sourceIdField { imported.fields[f] = .string(user.id) }
            if !target.capabilities.has(.clientIds) { imported.acl = nil }
            // A user an earlier run created just before it died is adopted, not created twice.
            if pending.contains(user.id), let existing = try await findImported(user, imported) {
                adopted.append((user.id, existing))
                continue
            }
            let password: ImportedPassword
            switch mapping.passwords {
            case .reset: password = .unusable
            case .temporary:
                let p = Self.temporaryPassword()
                if passwordFile == nil {
                    passwordFile = try NDJSONWriter(url: state.directory.appendingPathComponent("temporary-passwords.ndjson"))
                }
                try passwordFile!.append(.object(["sourceId": .string(user.id), "username": user.username.map(JSON.string) ?? .null,
                                                   "email": user.email.map(JSON.string) ?? .null, "password": .string(p)]))
                password = .temporary(p)
            }
            todo.append((user, imported, password))
        }
        let (found, passwords) = (adopted, mapping.passwords.rawValue)
        try await offPool { try state.recordUsers(found, password: passwords) }
        // Created by an earlier run: already on the target, as the report's "skipped" says.
        box.update { $0.users.skipped += adopted.count }
        guard !todo.isEmpty else { return }
        // A temporary password is on disk before the user who has it exists.
        passwordFile?.sync()
        let marking = todo.map(\.user.id)
        try await offPool { try state.addPending(.user, className: "_User", sourceIds: marking) }
        // Mappings are committed every ``userCommitEvery`` imports and when the group ends, also when it fails: a run
        // killed in between leaves at most that many imported users to be found again by their marks.
        var imported: [(sourceId: String, targetId: String)] = []
        var rejected: [String] = []
        func commit() async throws {
            let (done, refused, passwords) = (imported, rejected, mapping.passwords.rawValue)
            try await offPool {
                try state.recordUsers(done, password: passwords)
                // A user the target refused never reached it: the mark goes, and the next run tries again. A user
                // whose import ended in doubt (retries used up, cancelled) keeps it, to be looked up first next time.
                try state.clearPending(.user, className: "_User", sourceIds: refused)
            }
            box.update { $0.users.written += done.count }
            imported = []
            rejected = []
        }
        func take(_ outcome: (String, ImportOutcome)) async throws {
            switch outcome.1 {
            case .imported(let target): imported.append((outcome.0, target))
            case .rejected: rejected.append(outcome.0)
            case .inDoubt: break
            }
            if imported.count >= Self.userCommitEvery { try await commit() }
        }
        do {
            try await withThrowingTaskGroup(of: (String, ImportOutcome).self) { group in
                var inFlight = 0
                for item in todo {
                    if inFlight >= max(1, options.concurrency), let outcome = try await group.next() {
                        try await take(outcome)
                        inFlight -= 1
                    }
                    group.addTask { (item.user.id, try await self.importOne(item.user, item.importing, password: item.password)) }
                    inFlight += 1
                }
                while let outcome = try await group.next() { try await take(outcome) }
            }
        } catch {
            try? await commit()
            throw error
        }
        try await commit()
    }

    /// Imported mappings committed at a time within a group of ``copyUsers(_:)``.
    static let userCommitEvery = 50

    /// How one user's import ended.
    enum ImportOutcome: Sendable {
        /// On the target, with this id.
        case imported(String)
        /// Refused by the target: nothing of it is there.
        case rejected
        /// Failed in a way that may have left the user on the target (a transient failure after the last retry).
        case inDoubt
    }

    /// Imports one user; a failure is reported for that user, never the end of the run.
    func importOne(_ user: DirectoryUser, _ importing: DirectoryUser, password: ImportedPassword) async throws -> ImportOutcome {
        do {
            return .imported(try await withRetry { try await self.target.importUser(importing, password: password) }.id)
        } catch {
            let e = MBaaSError.wrap(error)
            // A retried import whose first attempt went through: the user is there, with this source id.
            if e.kind == .duplicate, mapping.sourceIdField != nil, let existing = try await findImported(user, importing) {
                return .imported(existing)
            }
            box.update {
                $0.users.failed += 1
                $0.add(.init(kind: "failed", className: "_User", sourceId: user.id, detail: "user \(user.username ?? user.id): \(e)"))
            }
            return isTransient(e) ? .inDoubt : .rejected
        }
    }

    /// The target id of the user an earlier import of `user` created, if any: found by user name (else e-mail) and
    /// checked against the source-id field (on a target without ``MBaaSCore/Capabilities/Feature/userFields``, which
    /// keeps no source id, the user of that name is taken, with a warning); a user with neither is found by the
    /// source-id field itself
    /// (``BackendAdministration/findUser(field:equals:)``). A target that can do neither is reported once, and the
    /// user is imported again.
    func findImported(_ user: DirectoryUser, _ importing: DirectoryUser) async throws -> String? {
        if let name = importing.username ?? importing.email {
            guard let existing = try await withRetry({ try await self.target.findUser(username: name) }) else { return nil }
            // Without a source-id field there is nothing to check the name against.
            guard let field = mapping.sourceIdField else { return existing.id }
            if target.capabilities.has(.userFields) { return existing.fields[field]?.stringValue == user.id ? existing.id : nil }
            // A target that keeps no user fields has no source id to check either: its user of that name is taken
            // as the one this migration imported, and the report says so (it may be a user the target already had).
            box.update {
                $0.warn(.init(kind: "user", className: "_User", sourceId: user.id,
                              detail: "user \(name): matched to the target's user of that name (\(existing.id)); \(self.target.adapterName) keeps no source id to confirm this migration imported it"))
            }
            return existing.id
        }
        guard let field = mapping.sourceIdField else { return nil }
        do {
            return try await withRetry { try await self.target.findUser(field: field, equals: user.id) }?.id
        } catch let e as MBaaSError where e.kind == .unsupported {
            box.update {
                $0.problem("users without a user name or e-mail cannot be looked up on \(self.target.adapterName) (\(e.message)): one an interrupted run imported may be imported again")
            }
            return nil
        }
    }

    /// 20 random characters from an alphabet without look-alikes.
    static func temporaryPassword() -> String {
        let alphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789")
        var rng = SystemRandomNumberGenerator()
        return String((0..<20).map { _ in alphabet[Int(rng.next(upperBound: UInt64(alphabet.count)))] })
    }

    /// Imports every role with its members mapped to the target's user ids (once per role name).
    func copyRoles(_ state: MigrationState) async throws {
        for role in try await withRetry({ try await self.source.listRoles() }) {
            box.update { $0.roles.read += 1 }
            // The state marks a role done by name, in SQLite, where a NUL would cut it short (another role's mark).
            do throws(MBaaSError) { try StoreValidation.noNUL(role.name, "role name") } catch {
                box.update {
                    $0.roles.failed += 1
                    $0.add(.init(kind: "failed", className: "_Role", sourceId: role.id, detail: error.message))
                }
                continue
            }
            if try await offPool({ try state.isDone("role:\(role.name)") }) {
                box.update { $0.roles.skipped += 1 }
                continue
            }
            let members = role.users
            let mapped = try await offPool { try state.mapped(.user, className: "_User", sourceIds: members) }
            for id in role.users where mapped[id] == nil {
                box.update { $0.warn(.init(kind: "role", className: "_Role", sourceId: role.id,
                                          detail: "role \(role.name): member \(id) was not migrated")) }
            }
            if role.users.isEmpty {
                box.update { $0.problem("role \(role.name): the source lists no members (an NCMB export names none; see role-members/)") }
            }
            var imported = role
            imported.users = role.users.compactMap { mapped[$0] }
            let importing = imported
            do {
                try await withRetry { try await self.target.importRole(importing) }
                let step = "role:\(role.name)"
                try await offPool { try state.markDone(step) }
                box.update { $0.roles.written += 1 }
            } catch let e as MBaaSError where e.kind == .unsupported {
                // A target whose roles cannot be created (AppPot's are fixed names held per group) skips them, said.
                box.update {
                    $0.roles.skipped += 1
                    $0.warn(.init(kind: "role", className: "_Role", sourceId: role.id, detail: "role \(role.name) not imported: \(e.message)"))
                }
            } catch {
                let e = MBaaSError.wrap(error)
                box.update {
                    $0.roles.failed += 1
                    $0.add(.init(kind: "failed", className: "_Role", sourceId: role.id, detail: "role \(role.name): \(e)"))
                }
            }
        }
    }
}
