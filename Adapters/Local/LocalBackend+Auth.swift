import Foundation
import GRDB
public import MBaaSCore

extension LocalBackend {
    /// The current session of this instance.
    public var session: Session? { currentSession }

    /// Resumes a saved session without checking it; the next call that needs it checks it.
    public func restore(_ session: Session?) { currentSession = session }

    /// Creates a user (scrypt-hashed password) and logs it in. A taken user name or e-mail is `duplicate`.
    /// User names are 1 to 128 characters without control characters; passwords must not be empty.
    public func signUp(username: String, password: String, email: String?, fields: [String: Value]) async throws -> Session {
        try StoreValidation.userName(username)
        guard !password.isEmpty else { throw MBaaSError(.invalidRequest, "the password must not be empty") }
        if let email, !email.contains("@") { throw MBaaSError(.invalidRequest, "'\(email)' is not an e-mail address") }
        if let email { try StoreValidation.noNUL(email, "e-mail address") }
        try StoreValidation.fields(fields)
        let store = self.store
        // Fail fast before the (deliberately slow) hash.
        if let which = try await directRead({ db in try Self.isTaken(db, username: username, email: email) }) {
            throw Self.takenError(username: username, email: email, which: which)
        }
        let hash = try await ScryptPasswordHash.hash(password, parameters: store.options.passwordHashing)
        let token = SessionTokens.newToken()
        let session = try await directWrite { db in
            if let which = try Self.isTaken(db, username: username, email: email) {
                throw Self.takenError(username: username, email: email, which: which)
            }
            let now = store.nowMillis
            let id = SecureRandom.id()
            try db.cachedStatement(sql: """
                INSERT INTO users(id, username, email, password, fields, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                """).execute(arguments: [id, username, email, hash, LocalStore.encodeFields(fields), now, now])
            return try store.newSession(db, userId: id, username: username, token: token, now: now)
        }
        currentSession = session
        store.logger.debug("local: signed up", metadata: ["user": "\(session.userId)"])
        return session
    }

    /// Logs in; a wrong user name or password is `unauthorized` and keeps the previous session.
    public func logIn(username: String, password: String) async throws -> Session {
        let store = self.store
        let row = try await directRead { db -> [String]? in
            // A name holding NUL is no user's (names refuse control characters); bound, it would be cut at the NUL.
            if username.utf8.contains(0) { return nil }
            return try Row.fetchOne(db.cachedStatement(sql: "SELECT id, password FROM users WHERE username = ?"), arguments: [username])
                .map { [$0[0], $0[1]] }
        }
        // Hash even for an unknown user (or one imported without a usable password, stored as `!…`), so timing
        // does not reveal which user names exist.
        let usable = row.map { !$0[1].hasPrefix(LocalBackend.unusablePasswordPrefix) } ?? false
        let stored = usable ? row![1] : Self.dummyHash(store.options.passwordHashing)
        let matches = password.isEmpty ? false : try await ScryptPasswordHash.verify(password, against: stored)
        guard let row, usable, matches else {
            throw MBaaSError(.unauthorized, "wrong user name or password")
        }
        let token = SessionTokens.newToken()
        let session = try await directWrite { db in
            try store.newSession(db, userId: row[0], username: username, token: token, now: store.nowMillis)
        }
        currentSession = session
        store.logger.debug("local: logged in", metadata: ["user": "\(session.userId)"])
        return session
    }

    /// Clears the session and always revokes it in the database (on the embedded store that costs nothing, so a
    /// copied token stops working at once). With `confirmWithServer`, throws `unauthorized` if the database no
    /// longer knew it. Without it, a database that cannot be written (read-only) does not fail the log-out.
    public func logOut(confirmWithServer: Bool) async throws {
        guard let session = currentSession else { return }
        currentSession = nil
        let tokenHash = SessionTokens.hash(session.token)
        let deleted: Int
        do {
            deleted = try await directWrite { db in
                try db.cachedStatement(sql: "DELETE FROM sessions WHERE token_hash = ?").execute(arguments: [tokenHash])
                return db.changesCount
            }
        } catch {
            if confirmWithServer { throw error }
            return
        }
        if confirmWithServer, deleted == 0 {
            throw MBaaSError(.unauthorized, "the database no longer knew this session (already logged out or expired); it is cleared locally")
        }
    }

    /// The session's user, with its roles and groups; `unauthorized` without a valid session.
    public func currentUser() async throws -> User {
        guard currentSession != nil else { throw MBaaSError(.unauthorized, "not logged in") }
        return try await reading { db, principal in
            guard let id = principal.userId, let user = try LocalStore.user(db, id: id) else {
                throw LocalSessionInvalid()
            }
            return user
        }
    }

    // MARK: Roles and groups (administration)

    /// Sets the roles of a user (ACL entries `role:NAME` then apply to it). An administrative call: it needs no
    /// session, as whoever opens the database file owns it.
    public func setRoles(_ roles: [String], forUser userId: String) async throws {
        try await setList("roles", roles, kind: "role", userId: userId)
    }

    /// Sets the groups of a user (ACL entries `group:NAME` then apply to it). Administrative, like ``setRoles(_:forUser:)``.
    public func setGroups(_ groups: [String], forUser userId: String) async throws {
        try await setList("groups", groups, kind: "group", userId: userId)
    }

    /// A user by id (administrative; no session needed).
    public func user(id: String) async throws -> User {
        guard let user = try await directRead({ db in try LocalStore.user(db, id: id) }) else {
            throw MBaaSError(.notFound, "user \(id) not found")
        }
        return user
    }

    /// Deletes a user and ends its sessions (administrative, like ``setRoles(_:forUser:)``); its records stay.
    /// An unknown id is `notFound`.
    public func deleteUser(id: String) async throws {
        // A NUL would cut the bound id short: the user named by the part before it. No user has such an id.
        if id.utf8.contains(0) { throw MBaaSError(.notFound, "user \(id) not found") }
        let deleted = try await directWrite { db in
            try db.execute(sql: "DELETE FROM sessions WHERE user_id = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM users WHERE id = ?", arguments: [id])
            return db.changesCount
        }
        if deleted == 0 { throw MBaaSError(.notFound, "user \(id) not found") }
    }

    private func setList(_ column: String, _ names: [String], kind: String, userId: String) async throws {
        for n in names { try StoreValidation.principalName(n, kind: kind) }
        if userId.utf8.contains(0) { throw MBaaSError(.notFound, "user \(userId) not found") }   // see deleteUser
        var unique: [String] = []
        for n in names where !unique.contains(n) { unique.append(n) }
        let text = JSON.array(unique.map(JSON.string)).printed()
        let store = self.store
        let changed = try await directWrite { db in
            try db.execute(sql: "UPDATE users SET \(column) = ?, updated_at = ? WHERE id = ?", arguments: [text, store.nowMillis, userId])
            return db.changesCount
        }
        if changed == 0 { throw MBaaSError(.notFound, "user \(userId) not found") }
    }

    // MARK: Helpers

    /// A hash with the configured cost that no password matches, verified against when the user name is unknown.
    private static func dummyHash(_ p: ScryptPasswordHash.Parameters) -> String {
        "scrypt$\(p.logN)$\(p.blockSize)$\(p.parallelism)$AAAAAAAAAAAAAAAAAAAAAA==$" + Data(count: 32).base64EncodedString()
    }

    /// `"user name"`, `"e-mail"` or `nil`.
    static func isTaken(_ db: Database, username: String, email: String?) throws -> String? {
        if try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS(SELECT 1 FROM users WHERE username = ?)"), arguments: [username]) == true {
            return "user name"
        }
        if let email, try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS(SELECT 1 FROM users WHERE email = ?)"), arguments: [email]) == true {
            return "e-mail"
        }
        return nil
    }

    /// The `duplicate` of a taken user name or e-mail, with ``MBaaSCore/MBaaSError/refusedField`` naming which
    /// (``MBaaSCore/MBaaSError/usernameKey`` or ``MBaaSCore/MBaaSError/emailKey``): the emulator's dialects answer
    /// their vendor's code for each from it.
    static func takenError(username: String, email: String?, which: String?) -> MBaaSError {
        which == "e-mail"
            ? MBaaSError(.duplicate, "the e-mail \(email ?? "") is already used by another user").refusing(MBaaSError.emailKey)
            : MBaaSError(.duplicate, "the user name '\(username)' is already taken").refusing(MBaaSError.usernameKey)
    }

    /// A read that does not act as the session's user (auth calls work whatever state the session is in).
    func directRead<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try checkExists()
        do { return try await store.writer.read(body) } catch { throw LocalStore.mapError(error) }
    }

    func directWrite<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try checkWritable()
        do { return try await store.writer.write(body) } catch { throw LocalStore.mapError(error) }
    }
}

extension LocalStore {
    /// Stores a new session (token hashed) and returns it.
    func newSession(_ db: Database, userId: String, username: String?, token: String, now: Int64) throws -> Session {
        let expires = now + Int64(options.sessionLifetime * 1000)
        // Expired sessions (of every user) are pruned as new ones are made.
        try db.cachedStatement(sql: "DELETE FROM sessions WHERE expires_at <= ?").execute(arguments: [now])
        try db.cachedStatement(sql: "INSERT INTO sessions(token_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)")
            .execute(arguments: [SessionTokens.hash(token), userId, now, expires])
        return Session(token: token, userId: userId, username: username, expiresAt: LocalTime.date(expires))
    }

    /// The user, or `nil`; an id holding NUL is no user's (bound, it would be cut at the NUL: another id).
    static func user(_ db: Database, id: String) throws -> User? {
        guard !id.utf8.contains(0), let row = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT id, username, email, roles, groups, fields FROM users WHERE id = ?"), arguments: [id])
        else { return nil }
        var fields: [String: Value] = [:]
        if case .object(let o) = try JSON.parse(row[5] as String) {
            for (k, v) in o { fields[k] = try Value(json: v, path: k) }
        }
        return User(id: row[0], username: row[1], email: row[2], groups: try stringList(row[4]), roles: try stringList(row[3]),
                    fields: fields)
    }
}
