public import MBaaSCore
import Foundation

/// Auth passes through to the remote and remembers the last user.
///
/// # Contract
/// - Logging in or signing up through a replica logs in on the remote; the session and the user are kept in the
///   replica (the file is 0600) and restored when it is opened again.
/// - ``currentUser()`` asks the remote; when it cannot be reached (`transport`, `unavailable`), the replica acts as the
///   last logged-in user and answers with the remembered one.
/// - ``logOut(confirmWithServer:)`` forgets the remembered user whatever the remote says.
/// - A session the remote refuses pauses sync up (``SyncReport/Outcome/sessionRefused(_:)``); the outbox is kept.
extension ReplicaBackend {
    public var session: Session? { get async { await remote.session } }

    public func restore(_ session: Session?) async {
        await remote.restore(session)
        try? await remember(session: session, user: nil)
    }

    public func signUp(username: String, password: String, email: String?, fields: [String: Value]) async throws -> Session {
        let session = try await remote.signUp(username: username, password: password, email: email, fields: fields)
        try await remember(session: session, user: User(id: session.userId, username: session.username ?? username, email: email))
        return session
    }

    public func logIn(username: String, password: String) async throws -> Session {
        let session = try await remote.logIn(username: username, password: password)
        try await remember(session: session, user: User(id: session.userId, username: session.username ?? username))
        return session
    }

    public func logOut(confirmWithServer: Bool) async throws {
        do {
            try await remote.logOut(confirmWithServer: confirmWithServer)
        } catch {
            try? await forgetUser()
            throw error
        }
        try await forgetUser()
    }

    public func currentUser() async throws -> User {
        do {
            let user = try await remote.currentUser()
            if let session = await remote.session { try await remember(session: session, user: user) }
            return user
        } catch let e as MBaaSError where e.kind == .transport || e.kind == .unavailable {
            guard let user = try await storedUser() else { throw e }
            return user
        }
    }

    // MARK: Remembered user

    func remember(session: Session?, user: User?) async throws {
        let sessionText = try session.map { s -> String in
            String(decoding: try JSONEncoder().encode(s), as: UTF8.self)
        }
        let userText = user.map { $0.json.printed() }
        try await store.write { db in
            try ReplicaStore.setMeta(db, "session", sessionText)
            if let userText { try ReplicaStore.setMeta(db, "user", userText) } else if sessionText == nil {
                try ReplicaStore.setMeta(db, "user", nil)
            }
        }
    }

    func forgetUser() async throws {
        try await store.write { db in
            try ReplicaStore.setMeta(db, "session", nil)
            try ReplicaStore.setMeta(db, "user", nil)
        }
    }

    func storedSession() async throws -> Session? {
        guard let text = try await store.read({ db in try ReplicaStore.meta(db, "session") }) else { return nil }
        return try? JSONDecoder().decode(Session.self, from: Data(text.utf8))
    }

    func storedUser() async throws -> User? {
        guard let text = try await store.read({ db in try ReplicaStore.meta(db, "user") }),
              let o = try? JSON.parse(text).objectValue, let id = o["id"]?.stringValue else { return nil }
        return User(id: id, username: o["username"]?.stringValue, email: o["email"]?.stringValue,
                    groups: o["groups"]?.arrayValue?.compactMap(\.stringValue) ?? [],
                    roles: o["roles"]?.arrayValue?.compactMap(\.stringValue) ?? [])
    }
}
