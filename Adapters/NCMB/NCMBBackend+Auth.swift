public import Foundation
public import MBaaSCore

/// Users and sessions.
///
/// - sign up: `POST /users` `{"userName","password"[,"mailAddress"],…fields}` → `201` with `sessionToken`;
///   a taken name is `E409001` → `duplicate`.
/// - log in: `POST /login` `{"userName","password"}` → `200`, the user with `sessionToken`; a wrong name or
///   password is `E401002` → `unauthorized` (the previous session is kept).
/// - log out: `GET /logout` with the session header → `200`.
/// - current user: `GET /users/{id}` with the session header, then the roles whose `belongUser` relation holds
///   the user, asked through `$relatedTo` as the SDKs do (``roleNames(ofUser:)``; URL option
///   `currentUserRoles=false` skips it and leaves ``User/roles`` empty).
/// - anonymous: `POST /users` `{"authData":{"anonymous":{"id":UUID}}}` (``logInAnonymously(id:)``).
/// - The session travels as `X-NCMB-Apps-Session-Token`; an `E401001` answer ends it.
extension NCMBBackend {
    public func signUp(username: String, password: String, email: String?, fields: [String: Value]) async throws -> Session {
        guard !username.isEmpty else { throw MBaaSError(.invalidRequest, "userName is empty") }
        guard !password.isEmpty else { throw MBaaSError(.invalidRequest, "password is empty") }
        var body: JSONObject = ["userName": .string(username), "password": .string(password)]
        if let email { body["mailAddress"] = .string(email) }
        for key in fields.keys.sorted() {
            guard !["userName", "password", "mailAddress", "authData", "sessionToken"].contains(key) else {
                throw MBaaSError(.invalidRequest, "'\(key)' is set by signUp's own parameters")
            }
            guard !NCMBCodec.userSystemFields.contains(key) else {
                throw MBaaSError(.invalidRequest, "'\(key)' is an NCMB user system field")
            }
            try NCMBCodec.checkFieldName(key)
            body[key] = try NCMBCodec.encode(fields[key]!, path: key)
        }
        let response = try await send(.post, "/users", body: .json(body), useSession: false, context: "sign up")
        return try startSession(fromCreated: try json(response), username: username)
    }

    public func logIn(username: String, password: String) async throws -> Session {
        let body = NCMBLoginRequest(userName: username, password: password)
        let response = try await send(.post, "/login", body: .json(body.json.objectValue!), useSession: false,
                                      context: "log in")
        let user = try NCMBUserObject(json: try json(response))
        guard let token = user.sessionToken else { throw MBaaSError(.decoding, "login response without sessionToken") }
        let session = Session(token: token, userId: user.objectId, username: user.userName ?? username)
        currentSession = session
        return session
    }

    /// Logs in with a mail address instead of a user name (`{"mailAddress","password"}`).
    public func logIn(mailAddress: String, password: String) async throws -> Session {
        let body = NCMBLoginRequest(mailAddress: mailAddress, password: password)
        let response = try await send(.post, "/login", body: .json(body.json.objectValue!), useSession: false,
                                      context: "log in")
        let user = try NCMBUserObject(json: try json(response))
        guard let token = user.sessionToken else { throw MBaaSError(.decoding, "login response without sessionToken") }
        let session = Session(token: token, userId: user.objectId, username: user.userName)
        currentSession = session
        return session
    }

    /// Creates an anonymous user (`authData.anonymous.id`) and logs it in. The id is a UUID the caller may keep
    /// to log the same anonymous user in again.
    public func logInAnonymously(id: String = UUID().uuidString) async throws -> Session {
        let body: JSONObject = ["authData": .object(["anonymous": .object(["id": .string(id)])])]
        let response = try await send(.post, "/users", body: .json(body), useSession: false, context: "anonymous log in")
        return try startSession(fromCreated: try json(response), username: nil, extras: ["anonymousId": id])
    }

    public func logOut(confirmWithServer: Bool) async throws {
        guard let session = currentSession else { return }
        currentSession = nil
        if confirmWithServer {
            // The local session is already gone: send its token explicitly.
            _ = try await send(.get, "/logout", useSession: false, token: session.token, context: "log out")
        }
    }

    public func currentUser() async throws -> User {
        guard let session = currentSession else {
            throw MBaaSError(.unauthorized, "not logged in")
        }
        let response = try await send(.get, "/users/" + percentEncode(session.userId), context: "current user")
        let user = try NCMBUserObject(json: try json(response))
        let roles = configuration.currentUserRoles ? try await roleNames(ofUser: user.objectId) : []
        return try user.user(roles: roles)
    }

    private func startSession(fromCreated json: JSON, username: String?, extras: [String: String] = [:]) throws(MBaaSError) -> Session {
        let created = try NCMBCreated(json: json)
        guard let id = created.objectId, let token = created.extras["sessionToken"]?.stringValue else {
            throw MBaaSError(.decoding, "sign-up response without objectId or sessionToken")
        }
        let session = Session(token: token, userId: id, username: created.extras["userName"]?.stringValue ?? username,
                              extras: extras)
        currentSession = session
        return session
    }
}
