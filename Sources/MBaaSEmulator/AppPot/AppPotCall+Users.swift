import Foundation
import MBaaSAppPotWire
import MBaaSCore
import MBaaSLocal

/// Tokens, login and the company directory (reference A5, A10).
///
/// A user is the store's user (scrypt-hashed password, sessions, group ids as `groups`, role names as `roles`)
/// with its names and group memberships (`apppotGroups`, the flat `groupsAndRoles` JSON) in its fields.
extension AppPotCall {
    /// `GET anonymousTokens?appKey=&deviceUDID=`: a fresh anonymous token in `results` [doc A5]; a wrong app key is
    /// errCode 101, a missing parameter 198 [doc codes].
    func anonymousToken() -> TransportResponse {
        guard let key = query("appKey"), !key.isEmpty, let udid = query("deviceUDID"), !udid.isEmpty else {
            return AppPotErrorBody(code: 198).response()
        }
        guard key == dialect.configuration.appKey else { return AppPotErrorBody(code: 101).response() }
        return Self.json(AppPotEnvelope.success(results: .string(dialect.state.issueAnonymousToken())))
    }

    /// `POST auth/login` with an anonymous token [doc A5]: the v2 body; `appId`, `appVersion` and `companyId` must be
    /// this app's (104) [doc code]; a wrong name or password is 111 [sdk]. The answer is `authInfor` with the user
    /// token, `validTime` as an absolute epoch-ms expiry [inferred: v2 answers such values, see AppPotAuthInfo],
    /// the user and its groups with roles.
    func logIn() async throws -> TransportResponse {
        let body = try jsonBody()
        if body["username"] == nil, body["account"] != nil {
            // v4's account login: not served.
            return AppPotErrorBody(code: 199, description: "Request not found (this emulator serves AppPot v2: send the v2 login body)").response()
        }
        guard let anonymous = token, dialect.state.isAnonymousToken(anonymous) else { throw Self.tokenMissing() }
        let login = try AppPotLoginRequest(json: body)
        let c = dialect.configuration
        guard login.appId == c.appId, login.companyId == c.companyId, login.appVersion == c.appVersion else {
            return AppPotErrorBody(code: 104).response()
        }
        let session: Session
        do {
            session = try await dialect.store.sharing(session: nil, administrative: false)
                .logIn(username: login.username, password: login.password)
        } catch let e as MBaaSError where e.kind == .unauthorized || e.kind == .invalidRequest {
            return AppPotErrorBody(code: 111).response()
        }
        guard let user = try await owner.findUser(username: login.username) else { return AppPotErrorBody(code: 110).response() }
        let expiry = min(session.expiresAt ?? .distantFuture, dialect.clock().addingTimeInterval(c.sessionLifetime))
        let info = AppPotAuthInfo(
            userToken: session.token, validTime: Int64((expiry.timeIntervalSince1970 * 1000).rounded(.down)),
            userId: user.id, account: user.username, firstName: user.fields["firstName"]?.stringValue,
            lastName: user.fields["lastName"]?.stringValue, groupsAndRoles: Self.groups(of: user.fields))
        return Self.json(info.loginResponse)
    }

    /// `POST auth/logout {}`: `{"status":"OK"}` [sdk: JS spec/logout.test.ts]; the token is unknown afterwards.
    func logOut() async throws -> TransportResponse {
        let caller = try await authenticate()
        try await caller.backend.logOut(confirmWithServer: false)
        return Self.json(.object(["status": "OK"]))
    }

    /// `GET users/{id}?token=`: `{"user":{userId, account, firstName, lastName, groupRoleMap}}` [sdk: JS user.ts
    /// findById; members inferred]. Any user of the app may read any other's directory entry [inferred: the
    /// directory is the company's]; an unknown id is errCode 110 [doc code].
    func user(_ caller: Caller, _ id: String) async throws -> TransportResponse {
        let user: User
        do { user = try await owner.user(id: id) } catch let e as MBaaSError where e.kind == .notFound {
            return AppPotErrorBody(code: 110).response()
        }
        return Self.json(Self.userInfo(id: user.id, username: user.username, fields: user.fields).response)
    }

    /// `GET users[?groupId=]`: `{"users":[…]}` [doc A10], in id order.
    func users(_ caller: Caller) async throws -> TransportResponse {
        var out: [JSON] = []
        var cursor: String?
        repeat {
            let page = try await owner.listUsers(after: cursor, limit: 500)
            for u in page.users {
                let info = Self.userInfo(id: u.id, username: u.username, fields: u.fields)
                if let g = query("groupId"), !(info.groupsAndRoles ?? []).contains(where: { $0.groupId == g }) { continue }
                out.append(info.response["user"] ?? .null)
            }
            cursor = page.nextCursor
        } while cursor != nil
        return Self.json(AppPotEnvelope.success(extra: [("users", .array(out))]))
    }

    /// `GET groups`: `{"groups":[{groupId, groupName, description}]}` [doc A10]: the groups of the directory's users.
    func groups(_ caller: Caller) async throws -> TransportResponse {
        var seen: [String: AppPotGroupRole] = [:]
        var cursor: String?
        repeat {
            let page = try await owner.listUsers(after: cursor, limit: 500)
            for u in page.users {
                for g in Self.groups(of: u.fields) where seen[g.groupId] == nil {
                    seen[g.groupId] = AppPotGroupRole(groupId: g.groupId, groupName: g.groupName, description: g.description)
                }
            }
            cursor = page.nextCursor
        } while cursor != nil
        let list = seen.values.sorted { (Int($0.groupId) ?? 0, $0.groupId) < (Int($1.groupId) ?? 0, $1.groupId) }
        return Self.json(AppPotEnvelope.success(extra: [("groups", .array(list.map(\.json)))]))
    }

    static func groups(of fields: [String: Value]) -> [AppPotGroupRole] {
        guard let text = fields["apppotGroups"]?.stringValue, let json = try? JSON.parse(Data(text.utf8)) else { return [] }
        return (json.arrayValue ?? []).compactMap { try? AppPotGroupRole(json: $0) }
    }

    static func userInfo(id: String, username: String?, fields: [String: Value]) -> AppPotUserInfo {
        AppPotUserInfo(userId: id, account: username, firstName: fields["firstName"]?.stringValue,
                       lastName: fields["lastName"]?.stringValue, groupsAndRoles: groups(of: fields))
    }
}
