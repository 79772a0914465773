import Foundation
import MBaaSCore
import MBaaSNCMBWire

/// Users and sessions: sign-up on `POST /users`, log-in on `/login`, log-out on `/logout`.
///
/// A user is two things in the store: credentials (the store's user, scrypt-hashed password, sessions) and a
/// profile record of class `_User` with the same id (`username`, `email` and the app's own fields), which is
/// what `GET /users/{id}` and `GET /users?where=…` read, under its ACL.
extension NCMBCall {
    func signUp() async throws -> TransportResponse {
        let body = try jsonBody()
        var username = body["userName"]?.stringValue
        var password = body["password"]?.stringValue
        let email = body["mailAddress"]?.stringValue
        var authData: JSON = .null
        if let anonymous = body["authData"]?["anonymous"], anonymous["id"]?.stringValue != nil {
            // [doc] ncmb.md §1.6: an anonymous user gets a random userName.
            authData = .object(["anonymous": anonymous])
            username = username ?? "anonymous-" + UUID().uuidString.lowercased()
            password = password ?? UUID().uuidString + UUID().uuidString
        } else if let other = body["authData"], !other.isNull {
            throw MBaaSError(.unsupported, "authData other than anonymous is not supported by the emulator.", vendorCode: "E400005")
        }
        guard let username, !username.isEmpty else {
            throw MBaaSError(.invalidRequest, "userName is empty.", vendorCode: "E400003")
        }
        guard let password, !password.isEmpty else {
            throw MBaaSError(.invalidRequest, "password is empty.", vendorCode: "E400003")
        }
        let signUp = ParseFamilySignUp(
            ignoring: ["userName", "password", "mailAddress", "authData", "objectId", "createDate", "updateDate", "sessionToken"],
            aclKey: "acl", checkName: Self.checkFieldName, value: Self.value, acl: Self.acl,
            duplicate: { email in MBaaSError(.duplicate, "\(email ? "mailAddress" : "userName") is duplication.", vendorCode: "E409001") })
        let (session, created) = try await signUp.signUp(in: dialect.store, username: username, password: password, email: email,
                                                          authData: authData.isNull ? nil : authData, body: body)
        let out: JSONObject = [
            "objectId": .string(session.userId),
            "createDate": .string(ISO8601.format(created.createdAt ?? dialect.clock())),
            "sessionToken": .string(session.token),
            "userName": .string(username),
            "authData": authData,
        ]
        return Self.json(201, .object(out))
    }

    /// `POST /login` with a JSON body, or the legacy `GET /login?userName=…&password=…`.
    func logIn() async throws -> TransportResponse {
        var fields: [String: String] = [:]
        if method == "POST" {
            for (k, v) in try jsonBody() { if let s = v.stringValue { fields[k] = s } }
        } else {
            for (k, v) in queryItems { fields[k] = v }
        }
        guard let password = fields["password"], !password.isEmpty else {
            throw MBaaSError(.invalidRequest, "password is empty.", vendorCode: "E400003")
        }
        var username = fields["userName"]
        if username == nil, let mail = fields["mailAddress"] {
            let page = try await owner.queryPage(Query("_User", predicate: .compare("email", .eq, .string(mail)), limit: 1))
            username = page.records.first?.fields["username"]?.stringValue
        }
        guard let username, !username.isEmpty else {
            if fields["mailAddress"] != nil {
                throw MBaaSError(.unauthorized, "Authentication error with ID/PASS incorrect.", vendorCode: "E401002")
            }
            throw MBaaSError(.invalidRequest, "userName is empty.", vendorCode: "E400003")
        }
        let session: Session
        do {
            session = try await dialect.store.sharing(session: nil, administrative: false).logIn(username: username, password: password)
        } catch let e as MBaaSError where e.kind == .unauthorized {
            throw MBaaSError(.unauthorized, "Authentication error with ID/PASS incorrect.", vendorCode: "E401002")
        }
        let profile = try await owner.get(className: "_User", id: session.userId)
        var object = try render(profile, .user)
        object["sessionToken"] = .string(session.token)
        return Self.json(200, .object(object))
    }

    func logOut() async throws -> TransportResponse {
        guard let token else {
            throw MBaaSError(.unauthorized, "Authentication error by header incorrect.", vendorCode: "E401001")
        }
        let view = dialect.store.sharing(session: Session(token: token, userId: ""), administrative: false)
        do { try await view.logOut(confirmWithServer: true) } catch let e as MBaaSError where e.kind == .unauthorized {
            throw MBaaSError(.unauthorized, "Authentication error by header incorrect.", vendorCode: "E401001")
        }
        return Self.empty()
    }
}
