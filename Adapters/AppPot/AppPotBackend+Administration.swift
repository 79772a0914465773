import Foundation
public import MBaaSCore

/// Reading the company's user directory for a migration export (``MBaaSCore/BackendAdministration``).
///
/// - ``listUsers(after:limit:)``: `GET users?token=` (JS v2.3/v4 `src/ts/user.ts` `User.list`) answers every
///   user at once under `users` (no paging on the server); pages are cut here, ordered by user id, and the
///   cursor is the id of the last user of the page. Each user's `groupsRoles` (or `groupsAndRoles`,
///   `groupRoleMap`) gives ``MBaaSCore/DirectoryUser/groups`` (group ids) and ``MBaaSCore/DirectoryUser/roles``
///   (role names); names go to `fields` (`firstName`, `lastName`, `groupNames`). Passwords never leave AppPot.
/// - ``listRoles()``: AppPot roles are fixed names held per group membership (Super Admin, Admin, Manager,
///   User); each role lists the users holding it in any group. Groups themselves are the users' `groups` and the
///   ACL principals of group-scoped records.
/// - ``findUser(username:)``: the user whose `account` is `username`, from the same list.
/// - The server decides who may list users (the JS spec lists as an Admin); a refusal is thrown as the server
///   says it.
/// - ``importUser(_:password:)``: `POST users` as a Super Admin or Admin; roles are AppPot's fixed names, so
///   ``importRole(_:)`` is `unsupported` (members get roles through their groups). Groups: ``listGroups()``,
///   ``createGroup(name:description:)``, ``deleteGroup(id:)``; ``deleteUser(id:)``.
extension AppPotBackend {
    public func listUsers(after cursor: String?, limit: Int) async throws -> DirectoryUserPage {
        guard limit > 0 else { throw MBaaSError(.invalidRequest, "limit must be positive, got \(limit)") }
        let users = try await directory()
        var rest = users[...]
        if let cursor {
            rest = users.drop { AppPotBackend.idOrder($0.id, cursor) || $0.id == cursor }
        }
        let page = Array(rest.prefix(limit))
        let more = rest.count > limit
        return DirectoryUserPage(users: page, nextCursor: more ? page.last?.id : nil)
    }

    public func listRoles() async throws -> [DirectoryRole] {
        let users = try await directory()
        var members: [String: [String]] = [:]
        for u in users { for r in u.roles { members[r, default: []].append(u.id) } }
        return members.keys.sorted().map { DirectoryRole(name: $0, users: members[$0]!) }
    }

    public func findUser(username: String) async throws -> DirectoryUser? {
        try await directory().first { $0.username == username }
    }

    /// Every user of the directory, ordered by id (numeric ids by value).
    func directory() async throws -> [DirectoryUser] {
        guard let session = try await currentSession() else {
            throw MBaaSError(.unauthorized, "listing AppPot users needs a logged-in user (an administrator)")
        }
        let (_, json) = try await call(.get, AppPotRoute.users.segments, query: [("token", session.token)], token: .user)
        return try AppPotDirectoryCodec.users(json).sorted { AppPotBackend.idOrder($0.id, $1.id) }
    }

    /// Creates a user in the company's directory: `POST users` as a logged-in Super Admin or Admin [doc: reference
    /// A10]. `account` is the user name (else the e-mail), `firstName`/`lastName` come from `fields`, and each of
    /// the user's groups (ids of this server) is joined with the role the user holds (its first role, else
    /// `User`). A user without a usable password gets a random one nobody is told: only an administrator's reset
    /// lets them in. Importing logs nobody in.
    public func importUser(_ user: DirectoryUser, password: ImportedPassword) async throws -> DirectoryUser {
        guard let account = user.username ?? user.email, !account.isEmpty else {
            throw MBaaSError(.invalidRequest, "an AppPot user needs an account name")
        }
        let secret: String
        switch password {
        case .unusable: secret = (0..<2).map { _ in UUID().uuidString }.joined()
        case .temporary(let p): secret = p
        }
        let role = user.roles.first { AppPotRoleName.all.contains($0) } ?? AppPotRoleName.user
        let request = AppPotUserRequest(
            account: account, firstName: user.fields["firstName"]?.stringValue, lastName: user.fields["lastName"]?.stringValue,
            password: secret, groups: user.groups.map { AppPotGroupRole(groupId: $0, roleName: role) })
        let (_, json) = try await call(.post, AppPotRoute.users.segments, body: .json(request.json), token: .user)
        return try AppPotDirectoryCodec.user(json?["user"] ?? .null)
    }

    /// AppPot's roles are fixed names held per group (Super Admin, Admin, Manager, User): there is no role to
    /// create. A role's members get it through their groups when they are imported.
    public func importRole(_ role: DirectoryRole) async throws {
        throw MBaaSError.unsupported("importing the role '\(role.name)'", by: "apppot",
                                     reason: "AppPot roles are fixed (Super Admin, Admin, Manager, User) and held per group; import users with their groups instead")
    }

    /// Removes a user from the directory (`DELETE users/{id}?token=`, Super Admin or Admin).
    public func deleteUser(id: String) async throws {
        let session = try await adminSession()
        _ = try await call(.delete, AppPotRoute.user(id).segments, query: [("token", session.token)], token: .user)
    }

    /// The company's groups (`GET groups?token=`).
    public func listGroups() async throws -> [AppPotGroup] {
        let session = try await adminSession()
        let (_, json) = try await call(.get, AppPotRoute.groups.segments, query: [("token", session.token)], token: .user)
        return try AppPotGroup.list(json)
    }

    /// Creates a group (`POST groups`, Super Admin or Admin) and returns it with its id.
    public func createGroup(name: String, description: String? = nil) async throws -> AppPotGroup {
        guard !name.isEmpty else { throw MBaaSError(.invalidRequest, "a group needs a name") }
        _ = try await adminSession()
        let (_, json) = try await call(.post, AppPotRoute.groups.segments, body: .json(AppPotGroup(name: name, description: description).json),
                                       token: .user)
        return try AppPotGroup(json: json?["group"] ?? .null)
    }

    /// Deletes a group (`DELETE groups/{id}?token=`, Super Admin or Admin).
    public func deleteGroup(id: String) async throws {
        let session = try await adminSession()
        _ = try await call(.delete, AppPotRoute.group(id).segments, query: [("token", session.token)], token: .user)
    }

    func adminSession() async throws -> Session {
        guard let session = try await currentSession() else {
            throw MBaaSError(.unauthorized, "AppPot user and group administration needs a logged-in Super Admin or Admin")
        }
        return session
    }

    static func idOrder(_ a: String, _ b: String) -> Bool {
        if let x = Int64(a), let y = Int64(b) { return x < y }
        return a < b
    }
}

/// The answer of `GET users`: `{"users":[{userId, account, firstName, lastName, groupsRoles:[...]}]}`.
public enum AppPotDirectoryCodec {
    public static func users(_ json: JSON?) throws(MBaaSError) -> [DirectoryUser] {
        guard let list = json?["users"]?.arrayValue else {
            throw MBaaSError(.decoding, "AppPot users response has no 'users' array")
        }
        var out: [DirectoryUser] = []
        for entry in list { out.append(try user(entry)) }
        return out
    }

    public static func user(_ json: JSON) throws(MBaaSError) -> DirectoryUser {
        guard let u = json.objectValue, let id = AppPotGroupRole.idString(u["userId"] ?? u["id"]) else {
            throw MBaaSError(.decoding, "AppPot user entry has no userId: \(json.printed())")
        }
        var groups: [AppPotGroupRole] = []
        for e in (u["groupsRoles"] ?? u["groupsAndRoles"] ?? u["groupRoleMap"])?.arrayValue ?? [] {
            groups.append(try AppPotGroupRole(json: e))
        }
        var fields: [String: Value] = [:]
        if let f = u["firstName"]?.stringValue, !f.isEmpty { fields["firstName"] = .string(f) }
        if let l = u["lastName"]?.stringValue, !l.isEmpty { fields["lastName"] = .string(l) }
        var names: [String: Value] = [:]
        for g in groups { if let n = g.groupName { names[g.groupId] = .string(n) } }
        if !names.isEmpty { fields["groupNames"] = .object(names) }
        return DirectoryUser(id: id, username: u["account"]?.stringValue,
                             roles: AppPotAuthInfo.distinct(groups.compactMap(\.roleName)),
                             groups: AppPotAuthInfo.distinct(groups.map(\.groupId)), fields: fields)
    }
}
