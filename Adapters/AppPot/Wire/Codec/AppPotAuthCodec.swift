public import Foundation
public import MBaaSCore

/// The body of `POST auth/login` (reference A5, JS `local-authenticator`):
/// `{"username","password","appId","deviceUDID","isPush":false,"appVersion","companyId"}`.
public struct AppPotLoginRequest: Sendable, Hashable {
    public var username: String
    public var password: String
    public var appId: String
    public var deviceUDID: String
    public var isPush: Bool
    public var appVersion: String
    /// The company id as configured: sent as a JSON number when it is all digits, else as a string.
    public var companyId: String

    public init(username: String, password: String, appId: String, deviceUDID: String, isPush: Bool = false,
                appVersion: String, companyId: String) {
        self.username = username
        self.password = password
        self.appId = appId
        self.deviceUDID = deviceUDID
        self.isPush = isPush
        self.appVersion = appVersion
        self.companyId = companyId
    }

    public var json: JSON {
        .object([
            "username": .string(username), "password": .string(password), "appId": .string(appId),
            "deviceUDID": .string(deviceUDID), "isPush": .bool(isPush), "appVersion": .string(appVersion),
            "companyId": AppPotLoginRequest.companyJSON(companyId),
        ])
    }

    /// Reads the body, accepting `isPush` as a boolean or the string `"false"` (the AngularJS sample's form).
    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue else { throw MBaaSError(.invalidRequest, "login body must be an object") }
        func string(_ key: String) throws(MBaaSError) -> String {
            if let s = o[key]?.stringValue { return s }
            if let i = o[key]?.intValue { return String(i) }
            throw MBaaSError(.invalidRequest, "login body: '\(key)' is required", vendorCode: "198")
        }
        let push = o["isPush"].flatMap { $0.boolValue ?? $0.stringValue.map { $0.lowercased() == "true" } } ?? false
        self.init(username: try string("username"), password: try string("password"), appId: try string("appId"),
                  deviceUDID: try string("deviceUDID"), isPush: push, appVersion: try string("appVersion"),
                  companyId: try string("companyId"))
    }

    /// `24` for an all-digit company id, else `"acme"`.
    public static func companyJSON(_ companyId: String) -> JSON {
        if !companyId.isEmpty, companyId.allSatisfy(\.isASCII), companyId.allSatisfy(\.isNumber),
           let n = Int64(companyId) {
            return .int(n)
        }
        return .string(companyId)
    }
}

/// A group membership with its role, in either of the two shapes AppPot uses (reference A5, JS `GroupsRoles`):
/// flat `{"groupId":12,"groupName":"...","roleName":"User","roleId":4,"description":...}` or nested
/// `{"group":{"groupId":12,"groupName":"...","description":...},"role":{"roleName":"User","roleId":4}}`.
public struct AppPotGroupRole: Sendable, Hashable {
    public var groupId: String
    public var groupName: String?
    public var description: String?
    public var roleName: String?
    /// Deprecated by AppPot in favour of the role name (Super Admin=2, Admin=3, Manager=4, User=5).
    public var roleId: Int?

    public init(groupId: String, groupName: String? = nil, description: String? = nil, roleName: String? = nil,
                roleId: Int? = nil) {
        self.groupId = groupId
        self.groupName = groupName
        self.description = description
        self.roleName = roleName
        self.roleId = roleId
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue else {
            throw MBaaSError(.decoding, "AppPot group/role entry is not an object: \(json.printed())")
        }
        let group = o["group"]?.objectValue ?? o
        let role = o["role"]?.objectValue ?? o
        guard let id = AppPotGroupRole.idString(group["groupId"]) else {
            throw MBaaSError(.decoding, "AppPot group/role entry has no groupId: \(json.printed())")
        }
        self.init(groupId: id, groupName: group["groupName"]?.stringValue,
                  description: group["description"]?.stringValue, roleName: role["roleName"]?.stringValue,
                  roleId: role["roleId"]?.intValue.map { Int($0) })
    }

    /// The flat shape (the one the v1 login sample shows).
    public var json: JSON {
        var o: JSONObject = ["groupId": AppPotGroupRole.idJSON(groupId)]
        if let groupName { o["groupName"] = .string(groupName) }
        if let description { o["description"] = .string(description) }
        if let roleName { o["roleName"] = .string(roleName) }
        if let roleId { o["roleId"] = .int(Int64(roleId)) }
        return .object(o)
    }

    /// The nested shape.
    public var nestedJSON: JSON {
        var g: JSONObject = ["groupId": AppPotGroupRole.idJSON(groupId)]
        if let groupName { g["groupName"] = .string(groupName) }
        if let description { g["description"] = .string(description) }
        var r = JSONObject()
        if let roleName { r["roleName"] = .string(roleName) }
        if let roleId { r["roleId"] = .int(Int64(roleId)) }
        return .object(["group": .object(g), "role": .object(r)])
    }

    /// An id that the server sends as a number or a string, as a string.
    public static func idString(_ json: JSON?) -> String? {
        guard let json else { return nil }
        if let i = json.intValue { return String(i) }
        if let s = json.stringValue, !s.isEmpty { return s }
        return nil
    }

    public static func idJSON(_ id: String) -> JSON {
        if let n = Int64(id), String(n) == id { return .int(n) }
        return .string(id)
    }
}

/// The login result (`authInfor`, or `authInfo`, reference A5).
public struct AppPotAuthInfo: Sendable, Hashable {
    /// The user token (`userTokens` on the wire) to send as `apppot-token`.
    public var userToken: String
    /// `validTime` as sent: an absolute epoch-ms expiry (v2 answers `1470000416960`) or, below 10^12, a
    /// duration in ms (the v1 sample's `18000000`). Read it with ``expiry(now:)``.
    public var validTime: Int64?

    /// Values of `validTime` from here on are absolute epoch-ms times (10^12 ms is September 2001).
    public static let absoluteValidTimeThreshold: Int64 = 1_000_000_000_000

    /// When the token expires: `validTime` itself when absolute, `now + validTime` when a duration.
    public func expiry(now: Date) -> Date? {
        guard let validTime, validTime > 0 else { return nil }
        if validTime >= AppPotAuthInfo.absoluteValidTimeThreshold {
            return Date(timeIntervalSince1970: Double(validTime) / 1000)
        }
        return now.addingTimeInterval(Double(validTime) / 1000)
    }
    public var userId: String
    public var account: String?
    public var firstName: String?
    public var lastName: String?
    public var groupsAndRoles: [AppPotGroupRole]

    public init(userToken: String, validTime: Int64? = nil, userId: String, account: String? = nil,
                firstName: String? = nil, lastName: String? = nil, groupsAndRoles: [AppPotGroupRole] = []) {
        self.userToken = userToken
        self.validTime = validTime
        self.userId = userId
        self.account = account
        self.firstName = firstName
        self.lastName = lastName
        self.groupsAndRoles = groupsAndRoles
    }

    /// Reads a login response body: the member `authInfor` (the server's spelling) or `authInfo`.
    public init(loginResponse json: JSON) throws(MBaaSError) {
        guard let info = json["authInfor"] ?? json["authInfo"], !info.isNull else {
            throw MBaaSError(.decoding, "AppPot login response has neither 'authInfor' nor 'authInfo'")
        }
        try self.init(json: info)
    }

    /// Reads the auth info object itself.
    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue else { throw MBaaSError(.decoding, "AppPot authInfo is not an object") }
        guard let token = o["userTokens"]?.stringValue ?? o["userToken"]?.stringValue, !token.isEmpty else {
            throw MBaaSError(.decoding, "AppPot authInfo has no 'userTokens'")
        }
        let userInfo = o["userInfo"]?.objectValue ?? JSONObject()
        guard let userId = AppPotGroupRole.idString(o["userId"] ?? userInfo["userId"]) else {
            throw MBaaSError(.decoding, "AppPot authInfo has no 'userId'")
        }
        var groups: [AppPotGroupRole] = []
        for entry in (o["groupsAndRoles"] ?? userInfo["groupsAndRoles"])?.arrayValue ?? [] {
            groups.append(try AppPotGroupRole(json: entry))
        }
        self.init(
            userToken: token, validTime: o["validTime"]?.intValue ?? o["validTime"]?.stringValue.flatMap { Int64($0) },
            userId: userId,
            account: userInfo["account"]?.stringValue ?? o["account"]?.stringValue,
            firstName: userInfo["firstName"]?.stringValue ?? userInfo["fistName"]?.stringValue,
            lastName: userInfo["lastName"]?.stringValue, groupsAndRoles: groups)
    }

    /// The auth info object (flat group/role entries).
    public var json: JSON {
        var info: JSONObject = [:]
        if let account { info["account"] = .string(account) }
        if let firstName { info["firstName"] = .string(firstName) }
        if let lastName { info["lastName"] = .string(lastName) }
        var o: JSONObject = ["userTokens": .string(userToken)]
        if let validTime { o["validTime"] = .int(validTime) }
        o["userId"] = AppPotGroupRole.idJSON(userId)
        o["userInfo"] = .object(info)
        o["groupsAndRoles"] = .array(groupsAndRoles.map(\.json))
        return .object(o)
    }

    /// A whole login response as the server sends it: `{"status":"OK","errCode":0,"description":null,"authInfor":{...}}`.
    public var loginResponse: JSON { AppPotEnvelope.success(extra: [("authInfor", json)]) }

    /// Distinct group ids, in order of appearance.
    public var groupIds: [String] { AppPotAuthInfo.distinct(groupsAndRoles.map(\.groupId)) }
    /// Distinct role names, in order of appearance.
    public var roleNames: [String] { AppPotAuthInfo.distinct(groupsAndRoles.compactMap(\.roleName)) }

    /// The core user: id, account as user name, group ids as groups, role names as roles; names and group names
    /// in `fields` (`firstName`, `lastName`, `groupNames` as an object of id to name).
    public var user: User {
        var fields: [String: Value] = [:]
        if let firstName { fields["firstName"] = .string(firstName) }
        if let lastName { fields["lastName"] = .string(lastName) }
        var names: [String: Value] = [:]
        for g in groupsAndRoles { if let n = g.groupName { names[g.groupId] = .string(n) } }
        if !names.isEmpty { fields["groupNames"] = .object(names) }
        return User(id: userId, username: account, email: nil, groups: groupIds, roles: roleNames, fields: fields)
    }

    public static func distinct(_ items: [String]) -> [String] {
        var seen = Set<String>()
        return items.filter { seen.insert($0).inserted }
    }
}

/// The user object of `GET users/{id}` (reference A10: `{"user":{...}}`). Its exact shape is not documented; this
/// reads `userId`/`id`, `account`, `firstName`, `lastName` and groups from `groupsAndRoles` or `groupRoleMap`
/// (either group/role shape).
public struct AppPotUserInfo: Sendable, Hashable {
    public var userId: String
    public var account: String?
    public var firstName: String?
    public var lastName: String?
    public var groupsAndRoles: [AppPotGroupRole]?

    public init(userId: String, account: String? = nil, firstName: String? = nil, lastName: String? = nil,
                groupsAndRoles: [AppPotGroupRole]? = nil) {
        self.userId = userId
        self.account = account
        self.firstName = firstName
        self.lastName = lastName
        self.groupsAndRoles = groupsAndRoles
    }

    /// Reads the `user` member of a response (or the object itself).
    public init(response json: JSON) throws(MBaaSError) {
        let u = json["user"]?.objectValue ?? json.objectValue
        guard let u, let id = AppPotGroupRole.idString(u["userId"] ?? u["id"]) else {
            throw MBaaSError(.decoding, "AppPot user response has no user id")
        }
        var groups: [AppPotGroupRole]?
        if let entries = (u["groupsAndRoles"] ?? u["groupRoleMap"])?.arrayValue {
            var list: [AppPotGroupRole] = []
            for e in entries { list.append(try AppPotGroupRole(json: e)) }
            groups = list
        }
        self.init(userId: id, account: u["account"]?.stringValue, firstName: u["firstName"]?.stringValue,
                  lastName: u["lastName"]?.stringValue, groupsAndRoles: groups)
    }

    /// `{"status":"OK",...,"user":{"userId":..,"account":..,"firstName":..,"lastName":..,"groupRoleMap":[nested]}}`.
    public var response: JSON {
        var u: JSONObject = ["userId": AppPotGroupRole.idJSON(userId)]
        if let account { u["account"] = .string(account) }
        if let firstName { u["firstName"] = .string(firstName) }
        if let lastName { u["lastName"] = .string(lastName) }
        if let groupsAndRoles { u["groupRoleMap"] = .array(groupsAndRoles.map(\.nestedJSON)) }
        return AppPotEnvelope.success(extra: [("user", .object(u))])
    }
}
