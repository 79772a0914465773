import Foundation
public import MBaaSCore
import PostgresNIO

/// Users and sessions. Sessions are rows of `sessions` (the SHA-256 of the token, the user, the expiry), read by every
/// call that acts as a user: an instance keeps only its own client's token, so a session issued through one process is
/// accepted by every other, and a log-out (a deleted row) is seen by all at once.
extension PostgresBackend {
    public var session: Session? { sessionState.session }

    public func restore(_ session: Session?) async { sessionState.session = session }

    /// Creates a user (scrypt hash in the Local store's format) and logs it in. A taken user name or e-mail is `duplicate`.
    public func signUp(username: String, password: String, email: String?, fields: [String: Value]) async throws -> Session {
        try StoreValidation.userName(username)
        guard !password.isEmpty else { throw MBaaSError(.invalidRequest, "the password must not be empty") }
        if let email, !email.contains("@") { throw MBaaSError(.invalidRequest, "'\(email)' is not an e-mail address") }
        try StoreValidation.fields(fields, limits: .postgres)
        try self.store.checkWritable()
        let store = self.store
        if let which = try await store.direct({ conn in try await store.isTaken(conn, username: username, email: email) }) {
            throw Self.takenError(username: username, email: email, which: which)
        }
        let hash = try await ScryptPasswordHash.hash(password, parameters: store.options.passwordHashing)
        let token = SessionTokens.newToken()
        let session: Session
        do {
            session = try await store.directWrite { conn in
                let now = store.nowMillis
                let id = SecureRandom.id()
                var q = PGSQL()
                q.sql("""
                    INSERT INTO \(store.s)users (id, username, email, password, fields, created_at, updated_at)
                    VALUES (\(q.bind(id)), \(q.bind(username)), \(q.bind(email)), \(q.bind(hash)), \(q.bind(PostgresStore.encodeFields(fields)))::jsonb, \(q.bind(now)), \(q.bind(now)))
                    """)
                try await conn.run(q, logger: store.logger)
                return try await store.newSession(conn, userId: id, username: username, token: token, now: now)
            }
        } catch let e as MBaaSError where e.kind == .duplicate {
            // Taken between the check and the insert (another instance): say which.
            let which = try await store.direct { conn in try await store.isTaken(conn, username: username, email: email) }
            throw Self.takenError(username: username, email: email, which: which)
        }
        sessionState.session = session
        return session
    }

    /// Logs in; a wrong user name or password is `unauthorized` and keeps the previous session.
    public func logIn(username: String, password: String) async throws -> Session {
        let store = self.store
        let row = try await store.direct { conn -> [String]? in
            var q = PGSQL()
            q.sql("SELECT id, password FROM \(store.s)users WHERE username = \(q.bind(username))")
            return try await conn.first(q, logger: store.logger).map { [try $0.text(0), try $0.text(1)] }
        }
        let usable = row.map { !$0[1].hasPrefix(PostgresBackend.unusablePasswordPrefix) } ?? false
        let stored = usable ? row![1] : Self.dummyHash(store.options.passwordHashing)
        let matches = password.isEmpty ? false : try await ScryptPasswordHash.verify(password, against: stored)
        guard let row, usable, matches else { throw MBaaSError(.unauthorized, "wrong user name or password") }
        let token = SessionTokens.newToken()
        let session = try await store.directWrite { conn in
            try await store.newSession(conn, userId: row[0], username: username, token: token, now: store.nowMillis)
        }
        sessionState.session = session
        return session
    }

    /// Clears the session and revokes it in the database (every instance stops accepting it at once).
    public func logOut(confirmWithServer: Bool) async throws {
        guard let session = sessionState.session else { return }
        sessionState.session = nil
        let tokenHash = SessionTokens.hash(session.token)
        let store = self.store
        let deleted: Int
        do {
            deleted = try await store.directWrite { conn in
                var q = PGSQL()
                q.sql("DELETE FROM \(store.s)sessions WHERE token_hash = \(q.bind(tokenHash)) RETURNING 1")
                return try await conn.changed(q, logger: store.logger)
            }
        } catch {
            if confirmWithServer { throw error }
            return
        }
        if confirmWithServer, deleted == 0 {
            throw MBaaSError(.unauthorized, "the database no longer knew this session (already logged out or expired); it is cleared locally")
        }
    }

    public func currentUser() async throws -> User {
        guard sessionState.session != nil else { throw MBaaSError(.unauthorized, "not logged in") }
        let store = self.store
        return try await reading { conn, principal in
            guard let id = principal.userId, let user = try await store.user(conn, id: id) else { throw PostgresSessionInvalid() }
            return user
        }
    }

    /// Sets the roles of a user (ACL entries `role:NAME` then apply to it). Administrative: no session needed.
    public func setRoles(_ roles: [String], forUser userId: String) async throws {
        try await setList("roles", roles, kind: "role", userId: userId)
    }

    /// Sets the groups of a user (ACL entries `group:NAME`). Administrative.
    public func setGroups(_ groups: [String], forUser userId: String) async throws {
        try await setList("groups", groups, kind: "group", userId: userId)
    }

    private func setList(_ column: String, _ names: [String], kind: String, userId: String) async throws {
        for n in names { try StoreValidation.principalName(n, kind: kind) }
        var unique: [String] = []
        for n in names where !unique.contains(n) { unique.append(n) }
        let store = self.store, list = unique
        let changed = try await store.directWrite { conn in
            var q = PGSQL()
            // `column` is one of two constants ("roles", "groups").
            q.sql("UPDATE \(store.s)users SET \(column) = \(q.bind(list))::text[], updated_at = \(q.bind(store.nowMillis)) WHERE id = \(q.bind(userId)) RETURNING 1")
            return try await conn.changed(q, logger: store.logger)
        }
        if changed == 0 { throw MBaaSError(.notFound, "user \(userId) not found") }
    }

    static let unusablePasswordPrefix = "!"

    private static func dummyHash(_ p: ScryptPasswordHash.Parameters) -> String {
        "scrypt$\(p.logN)$\(p.blockSize)$\(p.parallelism)$AAAAAAAAAAAAAAAAAAAAAA==$" + Data(count: 32).base64EncodedString()
    }

    static func takenError(username: String, email: String?, which: String?) -> MBaaSError {
        which == "e-mail"
            ? MBaaSError(.duplicate, "the e-mail \(email ?? "") is already used by another user").refusing(MBaaSError.emailKey)
            : MBaaSError(.duplicate, "the user name '\(username)' is already taken").refusing(MBaaSError.usernameKey)
    }
}

extension PostgresStore {
    /// `"user name"`, `"e-mail"` or `nil`.
    func isTaken(_ conn: PostgresConnection, username: String, email: String?) async throws -> String? {
        var q = PGSQL()
        q.sql("SELECT 1 FROM \(s)users WHERE username = \(q.bind(username))")
        if try await conn.first(q, logger: logger) != nil { return "user name" }
        if let email {
            var e = PGSQL()
            e.sql("SELECT 1 FROM \(s)users WHERE lower(email) = lower(\(e.bind(email)))")
            if try await conn.first(e, logger: logger) != nil { return "e-mail" }
        }
        return nil
    }

    func newSession(_ conn: PostgresConnection, userId: String, username: String?, token: String, now: Int64) async throws -> Session {
        let expires = now + Int64(options.sessionLifetime * 1000)
        var prune = PGSQL()
        prune.sql("DELETE FROM \(s)sessions WHERE expires_at <= \(prune.bind(now))")
        try await conn.run(prune, logger: logger)
        var q = PGSQL()
        q.sql("INSERT INTO \(s)sessions (token_hash, user_id, created_at, expires_at) VALUES (\(q.bind(SessionTokens.hash(token))), \(q.bind(userId)), \(q.bind(now)), \(q.bind(expires)))")
        try await conn.run(q, logger: logger)
        return Session(token: token, userId: userId, username: username, expiresAt: PostgresTime.date(expires))
    }

    func user(_ conn: PostgresConnection, id: String) async throws -> User? {
        var q = PGSQL()
        q.sql("SELECT id, username, email, roles, groups, fields::text FROM \(s)users WHERE id = \(q.bind(id))")
        guard let row = try await conn.first(q, logger: logger) else { return nil }
        var fields: [String: Value] = [:]
        if case .object(let o) = try Value.parse(jsonText: try row.text(5)) { fields = o }
        return User(id: try row.text(0), username: try row.optionalText(1), email: try row.optionalText(2),
                    groups: try row.strings(4), roles: try row.strings(3), fields: fields)
    }
}
