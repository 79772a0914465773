import Foundation
import GRDB
public import MBaaSCore

/// Administration (``BackendAdministration``): whoever opens the database file owns it, so these calls need no
/// session. Roles are names on users (see ``setRoles(_:forUser:)``), so a role exists while it has a member.
extension LocalBackend {
    /// The stored password of a user imported with ``ImportedPassword/unusable`` starts with this; no password
    /// matches it.
    static let unusablePasswordPrefix = "!"

    /// The classes that hold at least one record, sorted.
    public func listClasses() async throws -> [String] {
        try await directRead { db in try String.fetchAll(db, sql: "SELECT DISTINCT class FROM records ORDER BY class") }
    }

    /// Users in id order, `limit` at a time (at most 1000).
    public func listUsers(after cursor: String?, limit: Int) async throws -> DirectoryUserPage {
        let limit = max(1, min(limit, 1000))
        let rows = try await directRead { db in
            try Row.fetchAll(db.cachedStatement(sql: """
                SELECT id, username, email, roles, groups, fields, created_at, updated_at FROM users
                WHERE id > ? ORDER BY id LIMIT ?
                """), arguments: [cursor ?? "", limit + 1]).map(Self.directoryUser)
        }
        let users = Array(rows.prefix(limit))
        return DirectoryUserPage(users: users, nextCursor: rows.count > limit ? users.last?.id : nil)
    }

    /// Every role name found on a user, with its members.
    public func listRoles() async throws -> [DirectoryRole] {
        let rows = try await directRead { db in
            try Row.fetchAll(db, sql: """
                SELECT j.value AS role, u.id FROM users u, json_each(u.roles) j ORDER BY j.value, u.id
                """).map { ($0[0] as String, $0[1] as String) }
        }
        var roles: [DirectoryRole] = []
        for (name, user) in rows {
            if roles.last?.name == name { roles[roles.count - 1].users.append(user) } else {
                roles.append(DirectoryRole(name: name, users: [user]))
            }
        }
        return roles
    }

    public func findUser(username: String) async throws -> DirectoryUser? {
        // GRDB binds text cut at a NUL: such a name would find the user named by its part before the NUL.
        if username.utf8.contains(0) { return nil }
        return try await directRead { db in
            try Row.fetchOne(db.cachedStatement(sql: """
                SELECT id, username, email, roles, groups, fields, created_at, updated_at FROM users WHERE username = ?
                """), arguments: [username]).map(Self.directoryUser)
        }
    }

    /// The first user (in id order) whose field `field` is the string `value`; an invalid field name is
    /// `invalidRequest`. Scans the users (there is no index on fields): a migration calls it only for users an
    /// interrupted run may have imported.
    public func findUser(field: String, equals value: String) async throws -> DirectoryUser? {
        try StoreValidation.fieldName(field)
        if value.utf8.contains(0) { return nil }   // SQLite compares text up to a NUL: it would match another value
        let path = "$.\"\(field)\""   // a valid field name has no '"' or '.'
        return try await directRead { db in
            try Row.fetchOne(db.cachedStatement(sql: """
                SELECT id, username, email, roles, groups, fields, created_at, updated_at FROM users
                WHERE json_extract(fields, ?) = ? AND json_type(fields, ?) = 'text' ORDER BY id LIMIT 1
                """), arguments: [path, value, path]).map(Self.directoryUser)
        }
    }

    /// Creates a user without logging in. The given id is kept when it is a valid Local id that no user has; else
    /// a new one is made. A user without a user name gets its e-mail, else its id, as user name. `emailVerified`
    /// and timestamps are kept as fields (`emailVerified`) and as the row's times.
    public func importUser(_ user: DirectoryUser, password: ImportedPassword) async throws -> DirectoryUser {
        let username = user.username ?? user.email ?? user.id
        do { try StoreValidation.userName(username) } catch { throw MBaaSError(.invalidRequest, "user \(user.id): \(error.message)") }
        if let email = user.email {
            do { try StoreValidation.noNUL(email, "e-mail address") } catch { throw MBaaSError(.invalidRequest, "user \(user.id): \(error.message)") }
        }
        for name in user.roles { try StoreValidation.principalName(name, kind: "role") }
        for name in user.groups { try StoreValidation.principalName(name, kind: "group") }
        var fields = user.fields
        for key in fields.keys where Record.reservedFieldNames.contains(key) { fields[key] = nil }
        if let verified = user.emailVerified { fields["emailVerified"] = .bool(verified) }
        try StoreValidation.fields(fields)
        let hash: String
        switch password {
        case .unusable: hash = Self.unusablePasswordPrefix + SecureRandom.alphanumeric(16)
        case .temporary(let p):
            guard !p.isEmpty else { throw MBaaSError(.invalidRequest, "a temporary password must not be empty") }
            hash = try await ScryptPasswordHash.hash(p, parameters: store.options.passwordHashing)
        }
        let store = self.store
        let email = user.email, roles = user.roles, groups = user.groups, wanted = user.id
        let created = user.createdAt.map(LocalTime.millis), updated = user.updatedAt.map(LocalTime.millis)
        let fieldsText = LocalStore.encodeFields(fields)
        let id = try await directWrite { db -> String in
            if let which = try Self.isTaken(db, username: username, email: email) {
                throw Self.takenError(username: username, email: email, which: which)
            }
            var id = wanted
            let taken = try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS(SELECT 1 FROM users WHERE id = ?)"), arguments: [wanted]) == true
            if (try? StoreValidation.recordId(wanted)) == nil || taken {
                id = SecureRandom.id()
            }
            let now = store.nowMillis
            try db.cachedStatement(sql: """
                INSERT INTO users(id, username, email, password, roles, groups, fields, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """).execute(arguments: [id, username, email, hash, JSON.array(roles.map(JSON.string)).printed(),
                                 JSON.array(groups.map(JSON.string)).printed(), fieldsText, created ?? now, updated ?? created ?? now])
            return id
        }
        var stored = user
        stored.id = id
        stored.username = username
        stored.fields = fields
        return stored
    }

    /// Adds the role to each member (ids of this database); unknown members are `notFound`.
    public func importRole(_ role: DirectoryRole) async throws {
        try StoreValidation.principalName(role.name, kind: "role")
        let store = self.store, name = role.name, members = role.users
        try await directWrite { db in
            for member in members {
                // An id holding NUL is no user's: bound, it would be cut at the NUL and name another.
                guard !member.utf8.contains(0),
                      let text = try String.fetchOne(db, sql: "SELECT roles FROM users WHERE id = ?", arguments: [member]) else {
                    throw MBaaSError(.notFound, "role \(name): member user \(member) not found")
                }
                var list = try LocalStore.stringList(text)
                guard !list.contains(name) else { continue }
                list.append(name)
                try db.execute(sql: "UPDATE users SET roles = ?, updated_at = ? WHERE id = ?",
                               arguments: [JSON.array(list.map(JSON.string)).printed(), store.nowMillis, member])
            }
        }
    }

    static func directoryUser(_ row: Row) throws -> DirectoryUser {
        var fields: [String: Value] = [:]
        if case .object(let o) = try JSON.parse(row[5] as String) {
            for (k, v) in o { fields[k] = try Value(json: v, path: k) }
        }
        let verified = fields.removeValue(forKey: "emailVerified")?.boolValue
        return DirectoryUser(
            id: row[0], username: row[1], email: row[2], emailVerified: verified, createdAt: LocalTime.date(row[6]),
            updatedAt: LocalTime.date(row[7]), roles: try LocalStore.stringList(row[3]), groups: try LocalStore.stringList(row[4]),
            fields: fields)
    }
}
