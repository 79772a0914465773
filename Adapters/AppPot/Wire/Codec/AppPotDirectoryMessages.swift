public import MBaaSCore

/// AppPot's fixed role names (A5, `groupsAndRoles`; the JS SDK `Role` enum: Super Admin 2, Admin 3, Manager 4,
/// User 5). A user holds one role per group.
public enum AppPotRoleName {
    public static let superAdmin = "Super Admin"
    public static let admin = "Admin"
    public static let manager = "Manager"
    public static let user = "User"
    /// The roles that may create, change and delete users and groups [doc: reference A10 "POST/PUT/DELETE
    /// users[/{id}] require the SuperAdmin or Admin role"].
    public static let administrators: Set<String> = [superAdmin, admin]
    /// Every fixed role, in the SDK's order.
    public static let all = [superAdmin, admin, manager, user]
}

/// The body of `POST users` and `PUT users/{id}` [doc: reference A10; sdk: apppot-sdk-js v2.3 `src/ts/user.ts`
/// `_getObjForUserAPI`]: `{"account","firstName","lastName","password","groupRoleMap":[{"group":{"groupId":1},
/// "role":{"roleName":"User"}}]}`. The answer is `{"user":{…}}` (``AppPotDirectoryCodec/user(_:)``).
public struct AppPotUserRequest: Sendable, Hashable {
    public var account: String
    public var firstName: String?
    public var lastName: String?
    /// Absent in an update that keeps the password.
    public var password: String?
    /// The user's groups, each with the role held in it.
    public var groups: [AppPotGroupRole]

    public init(account: String, firstName: String? = nil, lastName: String? = nil, password: String? = nil,
                groups: [AppPotGroupRole] = []) {
        self.account = account
        self.firstName = firstName
        self.lastName = lastName
        self.password = password
        self.groups = groups
    }

    public var json: JSON {
        var o: JSONObject = ["account": .string(account)]
        o["firstName"] = .string(firstName ?? "")
        o["lastName"] = .string(lastName ?? "")
        if let password { o["password"] = .string(password) }
        o["groupRoleMap"] = .array(groups.map { g in
            .object(["group": .object(["groupId": AppPotGroupRole.idJSON(g.groupId)]),
                     "role": .object(["roleName": .string(g.roleName ?? AppPotRoleName.user)])])
        })
        return .object(o)
    }

    /// Reads a request body (server side); a missing account is errCode 198 (input parameters are required).
    public init(json: JSON) throws(MBaaSError) {
        guard let account = json["account"]?.stringValue, !account.isEmpty else {
            throw MBaaSError(.invalidRequest, "account is required", vendorCode: "198")
        }
        var groups: [AppPotGroupRole] = []
        for entry in json["groupRoleMap"]?.arrayValue ?? [] { groups.append(try AppPotGroupRole(json: entry)) }
        self.init(account: account, firstName: json["firstName"]?.stringValue, lastName: json["lastName"]?.stringValue,
                  password: json["password"]?.stringValue, groups: groups)
    }
}

/// A group of the company's directory [doc: reference A10 "GET groups returns {groups:[{groupId,groupName,
/// description}]}; POST/PUT groups[/{id}] return {group}"; sdk: apppot-sdk-js v2.3 `src/ts/group.ts`, whose create
/// sends `{groupId:null, groupName, isAddCurrentApp, description}`].
public struct AppPotGroup: Sendable, Hashable {
    public var id: String?
    public var name: String
    public var description: String?

    public init(id: String? = nil, name: String, description: String? = nil) {
        self.id = id
        self.name = name
        self.description = description
    }

    /// The `POST groups` body, and each entry of `GET groups`.
    public var json: JSON {
        .object(["groupId": id.map(AppPotGroupRole.idJSON) ?? .null, "groupName": .string(name),
                 "description": .string(description ?? ""), "isAddCurrentApp": .bool(true)])
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let name = json["groupName"]?.stringValue else {
            throw MBaaSError(.decoding, "AppPot group without groupName: \(json.printed())")
        }
        self.init(id: AppPotGroupRole.idString(json["groupId"]), name: name,
                  description: json["description"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 })
    }

    /// `{"groups":[…]}`.
    public static func list(_ json: JSON?) throws(MBaaSError) -> [AppPotGroup] {
        guard let list = json?["groups"]?.arrayValue else { throw MBaaSError(.decoding, "AppPot groups response has no 'groups' array") }
        var out: [AppPotGroup] = []
        for entry in list { out.append(try AppPotGroup(json: entry)) }
        return out
    }
}
