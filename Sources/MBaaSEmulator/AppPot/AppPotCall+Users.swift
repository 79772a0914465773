import Foundation
import MBaaSAppPotWire
import MBaaSCore

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

    /// `GET groups`: `{"groups":[{groupId, groupName, description}]}` [doc A10]: the groups of the directory's users
    /// and those administrators created.
    func groups(_ caller: Caller) async throws -> TransportResponse {
        let seen = try await directoryGroups()
        let list = seen.values.sorted { (Int($0.groupId) ?? 0, $0.groupId) < (Int($1.groupId) ?? 0, $1.groupId) }
        return Self.json(AppPotEnvelope.success(extra: [("groups", .array(list.map(\.json)))]))
    }

    // MARK: Administration [doc A10: POST/PUT/DELETE users (and groups) need Super Admin or Admin]

    /// The refusal for a caller who holds neither role in any group: HTTP 403 with errCode 107 [inferred: the
    /// reference documents the requirement, not the refusal's code].
    func requireAdministrator(_ caller: Caller) async throws {
        let profile = try await owner.user(id: caller.user.id)
        guard Self.groups(of: profile.fields).contains(where: { AppPotRoleName.administrators.contains($0.roleName ?? "") }) else {
            throw MBaaSError(.forbidden, "User is not an administrator (Super Admin or Admin)", vendorCode: "107", httpStatus: 403)
        }
    }

    /// `POST users {account, firstName, lastName, password, groupRoleMap}` → `{"user":{…}}`; a taken account is 109.
    func createUser(_ caller: Caller) async throws -> TransportResponse {
        try await requireAdministrator(caller)
        let request = try AppPotUserRequest(json: try jsonBody())
        guard let password = request.password, !password.isEmpty else {
            return AppPotErrorBody(code: 198, description: "Input parameters are required: password").response()
        }
        if try await owner.findUser(username: request.account) != nil {
            return AppPotErrorBody(code: 109, description: "Input data not valid: the account exists").response()
        }
        let known = try await directoryGroups()
        let groups = request.groups.map { g in
            AppPotGroupRole(groupId: g.groupId, groupName: g.groupName ?? known[g.groupId]?.groupName, roleName: g.roleName ?? AppPotRoleName.user)
        }
        var fields: [String: Value] = ["apppotGroups": .string(JSON.array(groups.map(\.json)).printed())]
        if let f = request.firstName { fields["firstName"] = .string(f) }
        if let l = request.lastName { fields["lastName"] = .string(l) }
        let stored = try await owner.importUser(
            DirectoryUser(id: "", username: request.account, roles: AppPotAuthInfo.distinct(groups.compactMap(\.roleName)),
                          groups: AppPotAuthInfo.distinct(groups.map(\.groupId)), fields: fields),
            password: .temporary(password))
        return Self.json(Self.userInfo(id: stored.id, username: stored.username, fields: fields).response)
    }

    func deleteUser(_ caller: Caller, _ id: String) async throws -> TransportResponse {
        try await requireAdministrator(caller)
        do { _ = try await owner.user(id: id) } catch let e as MBaaSError where e.kind == .notFound {
            return AppPotErrorBody(code: 110).response()
        }
        try await owner.deleteUser(id: id)
        return Self.ok()
    }

    /// Groups made by `POST groups` live in the store as records of a hidden class, next to the groups users hold.
    static let groupClass = "__apppotGroups"

    func directoryGroups() async throws -> [String: AppPotGroupRole] {
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
        for record in try await owner.queryPage(Query(Self.groupClass, limit: 1000)).records {
            guard let id = record.fields["groupId"]?.stringValue else { continue }
            if record.fields["deleted"] == true { seen[id] = nil; continue }
            seen[id] = AppPotGroupRole(groupId: id, groupName: record.fields["groupName"]?.stringValue,
                                       description: record.fields["description"]?.stringValue)
        }
        return seen
    }

    func createGroup(_ caller: Caller) async throws -> TransportResponse {
        try await requireAdministrator(caller)
        let group = try AppPotGroup(json: try jsonBody())
        let existing = try await directoryGroups()
        let id = String((existing.keys.compactMap { Int($0) }.max() ?? 0) + 1)
        _ = try await owner.create(Record(className: Self.groupClass, fields: [
            "groupId": .string(id), "groupName": .string(group.name), "description": .string(group.description ?? ""),
        ]))
        let created = AppPotGroup(id: id, name: group.name, description: group.description)
        return Self.json(AppPotEnvelope.success(extra: [("group", created.json)]))
    }

    func deleteGroup(_ caller: Caller, _ id: String) async throws -> TransportResponse {
        try await requireAdministrator(caller)
        guard try await directoryGroups()[id] != nil else {
            return AppPotErrorBody(code: 109, description: "Input data not valid: no group \(id)").response()
        }
        _ = try await owner.create(Record(className: Self.groupClass, fields: ["groupId": .string(id), "deleted": true]))
        return Self.ok()
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
