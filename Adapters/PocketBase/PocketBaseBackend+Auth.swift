import Foundation
public import MBaaSCore

/// Users of an auth collection (`users` by default): sign-up creates the user record and logs in; log-in is
/// `auth-with-password` (identity = user name or e-mail); the token goes in the `Authorization` header; it is
/// refreshed with `auth-refresh` when it nears expiry (and by ``currentUser()``). PocketBase has no server
/// logout: tokens are stateless, so ``logOut(confirmWithServer:)`` clears the session locally and, when asked
/// to confirm with the server, throws `unsupported`.
extension PocketBaseBackend {
    public var session: Session? { currentSession }

    public func restore(_ session: Session?) async {
        currentSession = session
        fileToken = nil
    }

    func makeSession(_ auth: PocketBaseAuthResponse, collection: String) -> Session {
        let claims = PocketBaseTokenClaims(token: auth.token)
        return Session(
            token: auth.token, userId: auth.record["id"]?.stringValue ?? claims?.recordId ?? "",
            username: auth.record["username"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 },
            expiresAt: claims?.expiresAt, extras: ["collection": collection])
    }

    func user(from record: JSONObject, collection: String) throws -> User {
        let neutral = try PocketBaseRecordCodec.record(
            from: record, className: collection, schema: nil, baseURL: configuration.baseURL, isAuth: true, onlyTagged: true)
        return User(
            id: record["id"]?.stringValue ?? "",
            username: record["username"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 },
            email: record["email"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 },
            fields: neutral.fields)
    }

    public func signUp(username: String, password: String, email: String?, fields: [String: Value]) async throws -> Session {
        guard !username.isEmpty else { throw MBaaSError(.invalidRequest, "a user name is required") }
        try await prepareUsersCollection()
        let collection = configuration.usersCollection
        let changes = fields.mapValues(Change.set)
        let schema = changes.isEmpty ? nil : try await prepareWrite(className: collection, changes: changes, acl: nil)
        var body: JSONObject = [
            "username": .string(username), "password": .string(password), "passwordConfirm": .string(password),
        ]
        if let email { body["email"] = .string(email) }
        var fieldsSchema = schema
        fieldsSchema?.isAuth = true
        for (k, v) in try PocketBaseRecordCodec.body(changes: changes, schema: fieldsSchema ?? PocketBaseSchema(name: collection, isAuth: true, isManaged: false, columns: [:], isComplete: false)) {
            body[k] = v
        }
        let json = try await sendJSON(.post, PocketBaseWire.recordsPath(collection), json: .object(body), as: .guest, operation: .create)
        guard json["username"] != nil else {
            if let id = json["id"]?.stringValue {
                _ = try? await send(.delete, PocketBaseWire.recordsPath(collection, id: id), as: .superuser)
            }
            throw MBaaSError.unsupported(
                "sign-up with a user name", by: "pocketbase",
                reason: "the auth collection '\(collection)' has no username field; open the backend once with superuser credentials to add it")
        }
        return try await logIn(identity: username, password: password, collection: collection)
    }

    public func logIn(username: String, password: String) async throws -> Session {
        try await logIn(identity: username, password: password, collection: configuration.usersCollection)
    }

    /// Logs in with a user name or e-mail of an auth collection. A wrong identity or password is
    /// `unauthorized` and leaves the current session as it was.
    func logIn(identity: String, password: String, collection: String) async throws -> Session {
        let json = try await sendJSON(
            .post, "/api/collections/\(percentEncode(collection))/auth-with-password",
            json: .object(["identity": .string(identity), "password": .string(password)]), as: .guest,
            operation: .authWithPassword)
        let session = makeSession(try PocketBaseAuthResponse(json: json), collection: collection)
        currentSession = session
        fileToken = nil
        return session
    }

    public func logOut(confirmWithServer: Bool) async throws {
        endSession()
        if confirmWithServer {
            throw MBaaSError.unsupported("server logout", by: "pocketbase", reason: capabilities.note(for: .serverLogout))
        }
    }

    /// Asks the server who the session is (`auth-refresh`, which also renews the token).
    public func currentUser() async throws -> User {
        guard let session = currentSession else { throw MBaaSError(.unauthorized, "no PocketBase session: log in first") }
        let collection = session.extras["collection"] ?? configuration.usersCollection
        let auth = try await refreshSession(collection: collection)
        return try user(from: auth.record, collection: collection)
    }

    /// Renews the session token; a refused refresh ends the session.
    @discardableResult
    func refreshSession(collection: String? = nil) async throws -> PocketBaseAuthResponse {
        guard let session = currentSession else { throw MBaaSError(.unauthorized, "no PocketBase session: log in first") }
        let collection = collection ?? session.extras["collection"] ?? configuration.usersCollection
        var headers: HTTPFields = [.authorization: session.token]
        headers["Content-Type"] = "application/json"
        let request = TransportRequest(
            method: .post, url: try URL.build(base: configuration.baseURL, path: "/api/collections/\(percentEncode(collection))/auth-refresh"),
            headers: headers, body: Data("{}".utf8), timeout: configuration.timeout)
        let response: TransportResponse
        do { response = try await context.transport.send(request) } catch { throw MBaaSError.wrap(error) }
        guard response.isSuccess else {
            let e = PocketBaseWire.error(status: response.status.code, body: response.body, headers: response.headers, now: context.now)
            if e.kind == .unauthorized || e.kind == .notFound || e.kind == .forbidden {
                endSession()
                throw MBaaSError(.unauthorized, "the PocketBase session is no longer valid: \(e.message)", vendorCode: e.vendorCode, httpStatus: e.httpStatus)
            }
            throw e
        }
        let auth = try PocketBaseAuthResponse(json: try response.json())
        currentSession = makeSession(auth, collection: collection)
        return auth
    }
}
