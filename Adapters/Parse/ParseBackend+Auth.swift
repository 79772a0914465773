public import Foundation
public import MBaaSCore

/// Users and sessions.
///
/// - sign up: `POST /users` `{"username","password"[,"email"],…fields}` with `X-Parse-Revocable-Session: 1` →
///   `201 {"objectId","createdAt","sessionToken"}`; a taken name is `202` (`203` for an e-mail) → `duplicate`.
/// - log in: `POST /login` `{"username","password"}` with `X-Parse-Revocable-Session: 1` → the user and
///   `sessionToken`; bad credentials are `404 {"code":101}` → `unauthorized` (the previous session is kept).
/// - log out: `POST /logout` with the session token → `200 {}`.
/// - current user: `GET /users/me`, then the names of the roles whose `users` relation holds the user
///   (`GET /roles?where={"users":Pointer(_User)}`; URL option `currentUserRoles=false` skips it).
/// - anonymous: `POST /users` `{"authData":{"anonymous":{"id":UUID}}}` (``logInAnonymously(id:)``).
/// - A `209` answer to a request that carried the session ends it.
extension ParseBackend {
    public func signUp(username: String, password: String, email: String?, fields: [String: Value]) async throws -> Session {
        guard !username.isEmpty else { throw MBaaSError(.invalidRequest, "username is required") }
        guard !password.isEmpty else { throw MBaaSError(.invalidRequest, "password is required") }
        var body: JSONObject = ["username": .string(username), "password": .string(password)]
        if let email { body["email"] = .string(email) }
        for key in fields.keys.sorted() {
            guard !["username", "password", "email", "authData", "sessionToken", "emailVerified"].contains(key) else {
                throw MBaaSError(.invalidRequest, "'\(key)' is set by signUp's own parameters or by the server")
            }
            try ParseCodec.checkFieldName(key)
            if fields[key] == .null { throw ParseCodec.nullUnsupported(key) }
            body[key] = try ParseCodec.encode(fields[key]!, path: key)
        }
        let response = try await send(.post, ParseRoute.objects(ParseWire.userClass).path, body: .json(body),
                                      as: .anonymous, revocable: true, context: "sign up")
        return try startSession(fromCreated: try json(response), username: username)
    }

    public func logIn(username: String, password: String) async throws -> Session {
        let body = ParseLoginRequest(username: username, password: password)
        let response = try await send(.post, ParseRoute.login.path, body: .json(body.json.objectValue!), as: .anonymous,
                                      revocable: true, onLogin: true, context: "log in")
        let user = try ParseUserObject(json: try json(response))
        guard let token = user.sessionToken else { throw MBaaSError(.decoding, "login response without sessionToken") }
        let session = Session(token: token, userId: user.objectId, username: user.username ?? username)
        currentSession = session
        return session
    }

    /// Logs in as an anonymous user (`authData.anonymous.id`), created on first use. Keep the id to log the same
    /// anonymous user in again.
    public func logInAnonymously(id: String = UUID().uuidString.lowercased()) async throws -> Session {
        let body: JSONObject = ["authData": .object(["anonymous": .object(["id": .string(id)])])]
        let response = try await send(.post, ParseRoute.objects(ParseWire.userClass).path, body: .json(body),
                                      as: .anonymous, revocable: true, context: "anonymous log in")
        let json = try json(response)
        if response.status == 201 { return try startSession(fromCreated: json, username: nil, extras: ["anonymousId": id]) }
        // 200: an existing anonymous user, answered as a login.
        let user = try ParseUserObject(json: json)
        guard let token = user.sessionToken else { throw MBaaSError(.decoding, "anonymous login response without sessionToken") }
        let session = Session(token: token, userId: user.objectId, username: user.username, extras: ["anonymousId": id])
        currentSession = session
        return session
    }

    public func logOut(confirmWithServer: Bool) async throws {
        guard let session = currentSession else { return }
        currentSession = nil
        if confirmWithServer {
            _ = try await send(.post, ParseRoute.logout.path, as: .token(session.token), context: "log out")
        }
    }

    public func currentUser() async throws -> User {
        guard currentSession != nil else { throw MBaaSError(.unauthorized, "not logged in") }
        let response = try await send(.get, ParseRoute.me.path, context: "current user")
        let user = try ParseUserObject(json: try json(response))
        let roles = configuration.currentUserRoles ? try await roleNames(ofUser: user.objectId) : []
        return try user.user(roles: roles)
    }

    /// Asks for a password-reset e-mail (`POST /requestPasswordReset {"email"}`).
    public func requestPasswordReset(email: String) async throws {
        _ = try await send(.post, ParseRoute.requestPasswordReset.path, body: .json(["email": .string(email)]),
                           as: .anonymous, context: "request password reset")
    }

    private func startSession(fromCreated json: JSON, username: String?, extras: [String: String] = [:]) throws(MBaaSError) -> Session {
        let created = try ParseCreated(json: json)
        guard let token = created.extras["sessionToken"]?.stringValue else {
            throw MBaaSError(.decoding, "sign-up response without sessionToken")
        }
        let session = Session(token: token, userId: created.objectId, username: username, extras: extras)
        currentSession = session
        return session
    }
}
