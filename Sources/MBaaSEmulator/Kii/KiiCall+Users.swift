import Foundation
import MBaaSCore
import MBaaSKiiWire

/// Users, tokens and groups (kii.md §2, §3.7).
///
/// A user is two things in the store: credentials (the store's user, scrypt-hashed password, sessions, which are
/// the access tokens) and a profile record of class `KiiUser` with the same id (`loginName`, `emailAddress`,
/// `displayName`, `phoneNumber`, `country` and custom attributes), private to the user. Every user holds the
/// store role ``KiiCall/authenticatedRole``.
extension KiiCall {
    static let userClass = "KiiUser"
    static let groupClass = "KiiGroup"

    /// `POST /oauth2/token` (or `/apps/{appID}/oauth2/token`). [capture] KiiPlatform/ebisu `tests/small_test/khc/data/resp-login.txt`: 200
    /// `{id, access_token, expires_in, token_type}` as `application/json;charset=UTF-8`.
    func token() async throws -> TransportResponse {
        let tokenRequest: KiiTokenRequest
        do { tokenRequest = try KiiTokenRequest(json: .object(try jsonBody())) } catch let e as MBaaSError {
            throw KiiFailure(e.vendorCode ?? "invalid_request", e.message)
        }
        let now = dialect.clock()
        switch tokenRequest {
        case .password(let username, let password, _):
            // [inferred] kii.md §2.1: a failed login is 400 invalid_grant.
            let refused = KiiFailure("invalid_grant", "The user was not found or the password is wrong")
            guard let loginName = try await loginName(forUsername: username) else { throw refused }
            let session: Session
            do {
                session = try await dialect.store.sharing(session: nil, administrative: false)
                    .logIn(username: loginName, password: password)
            } catch let e as MBaaSError where e.kind == .unauthorized || e.kind == .notFound || e.kind == .invalidRequest {
                throw refused
            }
            let expires = session.expiresAt.map { max(0, Int64($0.timeIntervalSince(now))) } ?? 2_147_483_646
            let answer = KiiTokenResponse(id: session.userId, accessToken: session.token, expiresIn: expires)
            return Self.json(200, answer.json, contentType: "application/json;charset=UTF-8")
        case .clientCredentials(let clientID, let clientSecret):
            // [doc] the app admin token (kii.md §2.1); issued only when the server was given the credentials.
            guard let id = dialect.configuration.clientID, let secret = dialect.configuration.clientSecret,
                  id == clientID, secret == clientSecret
            else { throw KiiFailure("invalid_client", "The client id or secret is wrong") }
            let answer = KiiTokenResponse(id: id, accessToken: dialect.adminTokens.issue(), expiresIn: 2_147_483_646)
            return Self.json(200, answer.json, contentType: "application/json;charset=UTF-8")
        case .refresh:
            // The emulator issues no refresh tokens, so none is valid ([doc] WRONG_REFRESH_TOKEN 403).
            throw KiiFailure("WRONG_REFRESH_TOKEN", "The refresh token is not valid")
        }
    }

    /// The store user name for a Kii `username`: a login name, `LOGIN_NAME:..`, or an e-mail (`EMAIL:..` or one with
    /// `@`) looked up in the profiles. `PHONE:` and phone numbers are not emulated.
    func loginName(forUsername username: String) async throws -> String? {
        if username.hasPrefix("LOGIN_NAME:") { return String(username.dropFirst(11)) }
        var email: String?
        if username.hasPrefix("EMAIL:") { email = String(username.dropFirst(6)) }
        else if username.contains("@") { email = username }
        guard let email else { return username.hasPrefix("PHONE:") || username.hasPrefix("+") ? nil : username }
        let page = try await owner.queryPage(Query(Self.userClass, predicate: .compare("emailAddress", .eq, .string(email)), limit: 1))
        return page.records.first?.fields["loginName"]?.stringValue
    }

    /// `POST /apps/{appID}/users` [doc kii.md §2.2]: 201 RegistrationResponse with `Location`; a taken name is 409
    /// `USER_ALREADY_EXISTS`; a bad login name or password 400 `INVALID_INPUT_DATA` / `PASSWORD_TOO_SHORT`.
    func register() async throws -> TransportResponse {
        let registration: KiiRegistrationRequest
        do { registration = try KiiRegistrationRequest(json: .object(try jsonBody())) } catch let e as MBaaSError {
            throw KiiFailure("INVALID_INPUT_DATA", e.message)
        }
        guard let loginName = registration.loginName ?? registration.emailAddress, !loginName.isEmpty else {
            throw KiiFailure("INVALID_INPUT_DATA", "loginName is required")
        }
        if registration.password.count < 4 { throw KiiFailure("PASSWORD_TOO_SHORT", "The password is too short") }
        if registration.loginName != nil, let problem = KiiRegistrationRequest.problem(loginName: loginName, password: registration.password) {
            throw KiiFailure("INVALID_INPUT_DATA", problem)
        }
        let session: Session
        do {
            session = try await dialect.store.sharing(session: nil, administrative: false)
                .signUp(username: loginName, password: registration.password, email: registration.emailAddress, fields: [:])
        } catch let e as MBaaSError where e.kind == .duplicate {
            let field = registration.loginName == nil ? "emailAddress" : "loginName"
            throw KiiFailure("USER_ALREADY_EXISTS", "The user already exists",
                             extras: ["field": .string(field), "value": .string(loginName)])
        }
        try await owner.setRoles([Self.authenticatedRole], forUser: session.userId)
        var out: JSONObject = ["userID": .string(session.userId)]
        var profile: [String: Value] = [:]
        func keep(_ key: String, _ value: String?) {
            guard let value else { return }
            out[key] = .string(value)
            profile[key] = .string(value)
        }
        keep("loginName", registration.loginName)
        keep("displayName", registration.displayName)
        keep("emailAddress", registration.emailAddress)
        keep("phoneNumber", registration.phoneNumber)
        // [doc] kii.md §2.2: custom fields are kept; keys starting with `_` are dropped.
        for (key, value) in registration.custom where !key.hasPrefix("_") && !key.isEmpty {
            out[key] = value
            profile[key] = KiiObjectCodec.value(value)
        }
        _ = try await owner.create(Record(className: Self.userClass, id: session.userId, acl: .privateTo(session.userId),
                                          fields: profile))
        // Registration does not log in (no token is returned, kii.md §2.2): end the sign-up's session.
        try? await dialect.store.sharing(session: session, administrative: false).logOut(confirmWithServer: true)
        return Self.json(201, .object(out), contentType: "application/vnd.kii.RegistrationResponse+json",
                         headers: [("Location", absoluteURL(KiiRoute.user(session.userId).path(appID: appID)))])
    }

    /// The user ID a selector names (`me`, an ID, `LOGIN_NAME:..`, `EMAIL:..`), or 404 `USER_NOT_FOUND`.
    func userID(_ selector: String) async throws -> String {
        if selector == "me" {
            // [doc] kii.md §1.2: `me` is the owner of a user token; it does not work with admin or anonymous.
            return try requireUser()
        }
        var name: String?
        if selector.hasPrefix("LOGIN_NAME:") || selector.hasPrefix("EMAIL:") { name = try await loginName(forUsername: selector) }
        if let name {
            if let user = try await owner.findUser(username: name) { return user.id }
        } else if !selector.contains(":"), (try? await owner.user(id: selector)) != nil {
            return selector
        }
        throw KiiFailure("USER_NOT_FOUND", "The user was not found",
                         extras: ["appID": .string(appID), "field": "userID", "value": .string(selector)])
    }

    /// `GET /apps/{appID}/users/{selector}`: the user's own record, for that user or the admin [inferred: the
    /// emulator shows other users nothing]. [doc] UserDataRetrievalResponse.
    func getUser(_ selector: String) async throws -> TransportResponse {
        let id = try await userID(selector)
        guard caller == .admin || caller.userID == id else { throw unauthorized("another user's data is not readable") }
        var out: JSONObject = ["userID": .string(id)]
        if let profile = try? await owner.get(className: Self.userClass, id: id) {
            for (key, value) in profile.fields.sorted(by: { $0.key < $1.key }) { out[key] = KiiObjectCodec.kiiJSON(value) }
        } else if let user = try? await owner.user(id: id) {
            out["loginName"] = user.username.map(JSON.string)
        }
        return Self.json(200, .object(out), contentType: "application/vnd.kii.UserDataRetrievalResponse+json")
    }

    /// `POST /apps/{appID}/groups` `{"name","owner","members"}` [sdk] Unity `KiiGroup.cs`: 201 `{"groupID"}`. The
    /// owner is the calling user (the admin may name another); members and owner join the store group.
    func createGroup() async throws -> TransportResponse {
        let body = try jsonBody()
        guard let name = body["name"]?.stringValue, !name.isEmpty else { throw KiiFailure("INVALID_INPUT_DATA", "a group needs a name") }
        let groupOwner: String
        if caller == .admin, let named = body["owner"]?.stringValue { groupOwner = named }
        else { groupOwner = try requireUser() }
        let members = (body["members"]?.arrayValue ?? []).compactMap(\.stringValue)
        let groupID = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(25).description
        _ = try await owner.create(Record(className: Self.groupClass, id: groupID, acl: Self.bookkeepingACL, fields: [
            "name": .string(name), "owner": .string(groupOwner), "members": .array(members.map(Value.string)),
        ]))
        for member in Set(members + [groupOwner]) {
            guard let user = try? await owner.user(id: member) else { continue }
            try await owner.setGroups(Array(Set(user.groups + [groupID])).sorted(), forUser: member)
        }
        return Self.json(201, .object(["groupID": .string(groupID)]), contentType: "application/vnd.kii.GroupCreationResponse+json")
    }

    /// Whether the caller belongs to a group (its owner is a member).
    func isMember(of groupID: String) async -> Bool {
        guard let id = caller.userID, let user = try? await owner.user(id: id) else { return false }
        return user.groups.contains(groupID)
    }
}
