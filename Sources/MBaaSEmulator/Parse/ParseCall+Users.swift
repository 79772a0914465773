import Foundation
import MBaaSCore
import MBaaSParseWire

/// Users and sessions: sign-up (and anonymous log-in) on `POST /users`, `/login`, `/logout`, `/users/me`.
///
/// A user is two things in the store: credentials (the store's user, scrypt-hashed password, sessions) and a
/// profile record of class `_User` with the same id (`username`, `email`, `authData` and the app's own fields),
/// which is what `GET /users/{id}` and `GET /users?where=…` read, under its ACL.
extension ParseCall {
    func signUp() async throws -> TransportResponse {
        let body = try jsonBody()
        if let anonymous = body["authData"]?["anonymous"] {
            guard let id = anonymous["id"]?.stringValue, !id.isEmpty else {
                throw MBaaSError(.invalidRequest, "This authentication method is unsupported.", vendorCode: "252")
            }
            return try await anonymousLogIn(id: id, body: body)
        }
        if let other = body["authData"], !other.isNull {
            throw MBaaSError(.unsupported, "This authentication method is unsupported.", vendorCode: "252")
        }
        guard let username = body["username"]?.stringValue, !username.isEmpty else {
            throw MBaaSError(.invalidRequest, "bad or missing username", vendorCode: "200")
        }
        guard let password = body["password"]?.stringValue, !password.isEmpty else {
            throw MBaaSError(.invalidRequest, "password is required", vendorCode: "201")
        }
        return try await create(username: username, password: password, email: body["email"]?.stringValue, body: body, authData: nil)
    }

    /// [doc] REST guide, Anonymous users: the `authData.anonymous.id` is the credential; the same id again logs
    /// the same user in (200). The store keeps a password derived from it, never shown.
    func anonymousLogIn(id: String, body: JSONObject) async throws -> TransportResponse {
        let password = "anonymous:" + id
        let existing = try await owner.queryPage(Query(
            ParseWire.userClass, predicate: .compare("authData.anonymous.id", .eq, .string(id)), limit: 1))
        if let profile = existing.records.first, let username = profile.fields["username"]?.stringValue {
            let session = try await dialect.store.sharing(session: nil, administrative: false).logIn(username: username, password: password)
            var object = try render(profile)
            object["sessionToken"] = .string(session.token)
            return Self.json(200, .object(object))
        }
        let username = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(25)
        return try await create(username: String(username), password: password, email: nil, body: body,
                                authData: .object(["anonymous": .object(["id": .string(id)])]))
    }

    private func create(username: String, password: String, email: String?, body: JSONObject, authData: JSON?) async throws -> TransportResponse {
        let signUp = ParseFamilySignUp(
            ignoring: ["username", "password", "email", "authData", "objectId", "createdAt", "updatedAt", "sessionToken", "emailVerified"],
            aclKey: "ACL", checkName: Self.checkFieldName, value: Self.value, acl: Self.acl,
            duplicate: { email in
                email ? MBaaSError(.duplicate, "Account already exists for this email address.", vendorCode: "203")
                    : MBaaSError(.duplicate, "Account already exists for this username.", vendorCode: "202")
            })
        let (session, created) = try await signUp.signUp(in: dialect.store, username: username, password: password, email: email,
                                                          authData: authData, body: body)
        let answer = ParseCreated(objectId: session.userId, createdAt: created.createdAt ?? dialect.clock(),
                                  extras: ["sessionToken": .string(session.token)])
        return Self.json(201, answer.json, headers: HTTPFields([("Location", location(ParseWire.userClass, session.userId))]))
    }

    /// `POST /login` with a JSON body, or the legacy `GET /login?username=…&password=…` [doc].
    func logIn() async throws -> TransportResponse {
        var body: JSONObject = [:]
        if request.method == .post {
            body = try jsonBody()
        } else {
            for (k, v) in queryItems { body[k] = .string(v) }
        }
        let login = try ParseLoginRequest(json: .object(body))
        let session: Session
        do {
            session = try await dialect.store.sharing(session: nil, administrative: false)
                .logIn(username: login.username, password: login.password)
        } catch let e as MBaaSError where e.kind == .unauthorized || e.kind == .notFound {
            throw MBaaSError(.notFound, "Invalid username/password.", vendorCode: "101")
        }
        let profile = try await owner.get(className: ParseWire.userClass, id: session.userId)
        var object = try render(profile)
        object["sessionToken"] = .string(session.token)
        return Self.json(200, .object(object))
    }

    func logOut() async throws -> TransportResponse {
        guard let token else { throw Self.invalidSession }
        let view = dialect.store.sharing(session: Session(token: token, userId: ""), administrative: false)
        do { try await view.logOut(confirmWithServer: true) } catch let e as MBaaSError where e.kind == .unauthorized {
            throw Self.invalidSession
        }
        return Self.json(200, .object([:]))
    }

    func me() async throws -> TransportResponse {
        guard let token else { throw Self.invalidSession }
        let user = try await backend.currentUser()
        let profile = try await owner.get(className: ParseWire.userClass, id: user.id)
        var object = try render(profile)
        object["sessionToken"] = .string(token)
        return Self.json(200, .object(object))
    }
}
