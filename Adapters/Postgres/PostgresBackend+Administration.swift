import Foundation
public import MBaaSCore
import PostgresNIO

/// Administration (``MBaaSCore/BackendAdministration``): whoever holds the database role owns the store, so these calls
/// need no session. Roles are names on users (a `text[]` column), so a role exists while it has a member.
extension PostgresBackend {
    public func listClasses() async throws -> [String] {
        let store = self.store
        return try await store.direct { conn in
            try await conn.rows(PGSQL("SELECT DISTINCT class COLLATE \"C\" AS class FROM \(store.s)records ORDER BY 1"), logger: store.logger)
                .map { try $0.text(0) }
        }
    }

    static let userColumns = "id, username, email, roles, groups, fields::text, created_at, updated_at"

    /// Users in id order, `limit` at a time (at most 1000).
    public func listUsers(after cursor: String?, limit: Int) async throws -> DirectoryUserPage {
        let limit = max(1, min(limit, 1000))
        let store = self.store
        let users = try await store.direct { conn in
            var q = PGSQL()
            q.sql("SELECT \(Self.userColumns) FROM \(store.s)users WHERE id COLLATE \"C\" > \(q.bind(cursor ?? "")) ORDER BY id COLLATE \"C\" LIMIT \(q.bind(Int64(limit + 1)))")
            return try await conn.rows(q, logger: store.logger).map(Self.directoryUser)
        }
        let page = Array(users.prefix(limit))
        return DirectoryUserPage(users: page, nextCursor: users.count > limit ? page.last?.id : nil)
    }

    public func listRoles() async throws -> [DirectoryRole] {
        let store = self.store
        let rows = try await store.direct { conn in
            try await conn.rows(PGSQL("SELECT r.role, u.id FROM \(store.s)users u, unnest(u.roles) AS r(role) ORDER BY r.role COLLATE \"C\", u.id COLLATE \"C\""),
                                logger: store.logger).map { (try $0.text(0), try $0.text(1)) }
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
        let store = self.store
        return try await store.direct { conn in
            var q = PGSQL()
            q.sql("SELECT \(Self.userColumns) FROM \(store.s)users WHERE username = \(q.bind(username))")
            return try await conn.first(q, logger: store.logger).map(Self.directoryUser)
        }
    }

    public func findUser(field: String, equals value: String) async throws -> DirectoryUser? {
        try StoreValidation.fieldName(field)
        let store = self.store
        return try await store.direct { conn in
            var q = PGSQL()
            let f = q.bind(field)
            q.sql("SELECT \(Self.userColumns) FROM \(store.s)users WHERE jsonb_typeof(fields -> \(f)) = 'string' AND (fields ->> \(f)) = \(q.bind(value)) ORDER BY id COLLATE \"C\" LIMIT 1")
            return try await conn.first(q, logger: store.logger).map(Self.directoryUser)
        }
    }

    /// Creates a user without logging in, as the Local store does: the given id is kept when valid and free; a user
    /// without a user name gets its e-mail, else its id; `emailVerified` is kept as a field.
    public func importUser(_ user: DirectoryUser, password: ImportedPassword) async throws -> DirectoryUser {
        let username = user.username ?? user.email ?? user.id
        do { try StoreValidation.userName(username) } catch {
            throw MBaaSError(.invalidRequest, "user \(user.id): the user name must be 1 to 128 characters without control characters")
        }
        for name in user.roles { try StoreValidation.principalName(name, kind: "role") }
        for name in user.groups { try StoreValidation.principalName(name, kind: "group") }
        var fields = user.fields
        for key in fields.keys where Record.reservedFieldNames.contains(key) { fields[key] = nil }
        if let verified = user.emailVerified { fields["emailVerified"] = .bool(verified) }
        try StoreValidation.fields(fields, limits: .postgres)
        let store = self.store
        let hash: String
        switch password {
        case .unusable: hash = Self.unusablePasswordPrefix + SecureRandom.alphanumeric(16)
        case .temporary(let p):
            guard !p.isEmpty else { throw MBaaSError(.invalidRequest, "a temporary password must not be empty") }
            hash = try await ScryptPasswordHash.hash(p, parameters: store.options.passwordHashing)
        }
        let email = user.email, roles = user.roles, groups = user.groups, wanted = user.id
        let created = user.createdAt.map(ISO8601.millis), updated = user.updatedAt.map(ISO8601.millis)
        let fieldsText = PostgresStore.encodeFields(fields)
        let id = try await store.directWrite { conn -> String in
            if let which = try await store.isTaken(conn, username: username, email: email) {
                throw Self.takenError(username: username, email: email, which: which)
            }
            var id = wanted
            var exists = PGSQL()
            exists.sql("SELECT 1 FROM \(store.s)users WHERE id = \(exists.bind(wanted))")
            let taken = try await conn.first(exists, logger: store.logger) != nil
            if (try? StoreValidation.recordId(wanted)) == nil || taken {
                id = SecureRandom.id()
            }
            let now = store.nowMillis
            var q = PGSQL()
            q.sql("""
                INSERT INTO \(store.s)users (id, username, email, password, roles, groups, fields, created_at, updated_at)
                VALUES (\(q.bind(id)), \(q.bind(username)), \(q.bind(email)), \(q.bind(hash)), \(q.bind(roles))::text[], \(q.bind(groups))::text[],
                        \(q.bind(fieldsText))::jsonb, \(q.bind(created ?? now)), \(q.bind(updated ?? created ?? now)))
                """)
            try await conn.run(q, logger: store.logger)
            return id
        }
        var stored = user
        stored.id = id
        stored.username = username
        stored.fields = fields
        return stored
    }

    /// Adds the role to each member (ids of this store); unknown members are `notFound`.
    public func importRole(_ role: DirectoryRole) async throws {
        try StoreValidation.principalName(role.name, kind: "role")
        let store = self.store, name = role.name, members = role.users
        try await store.directWrite { conn in
            for member in members {
                var q = PGSQL()
                q.sql("UPDATE \(store.s)users SET roles = CASE WHEN \(q.bind(name)) = ANY(roles) THEN roles ELSE array_append(roles, $1) END, updated_at = \(q.bind(store.nowMillis)) WHERE id = \(q.bind(member)) RETURNING 1")
                if try await conn.changed(q, logger: store.logger) == 0 {
                    throw MBaaSError(.notFound, "role \(name): member user \(member) not found")
                }
            }
        }
    }

    static func directoryUser(_ row: PostgresRandomAccessRow) throws -> DirectoryUser {
        var fields: [String: Value] = [:]
        if case .object(let o) = try Value.parse(jsonText: try row.text(5)) { fields = o }
        let verified = fields.removeValue(forKey: "emailVerified")?.boolValue
        return DirectoryUser(id: try row.text(0), username: try row.optionalText(1), email: try row.optionalText(2), emailVerified: verified,
                             createdAt: PostgresTime.date(try row.int(6)), updatedAt: PostgresTime.date(try row.int(7)),
                             roles: try row.strings(3), groups: try row.strings(4), fields: fields)
    }
}
