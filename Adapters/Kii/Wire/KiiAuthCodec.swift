public import Foundation
public import MBaaSCore

/// A request to `POST /api/oauth2/token` (kii.md §2.1).
public enum KiiTokenRequest: Sendable, Hashable {
    /// `{"username":..,"password":..,"expiresAt"?:ms}`, the SDKs' form (no `grant_type`). `username` is a login name,
    /// an e-mail address, a `+`-phone number, or `EMAIL:`/`PHONE:` prefixed.
    case password(username: String, password: String, expiresAt: Int64?)
    /// `{"grant_type":"refresh_token","refresh_token":..}`.
    case refresh(refreshToken: String)
    /// `{"client_id":..,"client_secret":..}` on `/api/oauth2/token`, no `grant_type`: the app admin token as the
    /// vendor clients ask for it on that endpoint — [sdk] KiiCorp/KiiCloudSDK-JS `KiiSDK.js` (app-admin
    /// authentication), ta2xeo/python3-kii `kii/users.py` (`RequestANewToken` with client id and secret). (kii_go's
    /// `api.go` uses the other endpoint, `/api/apps/{appID}/oauth2/token`, with `grant_type`.)
    case clientCredentials(clientID: String, clientSecret: String)

    /// The SDKs' Content-Type for the token endpoint.
    public static let contentType = "application/vnd.kii.OauthTokenRequest+json"

    public var json: JSON {
        switch self {
        case .password(let u, let p, let exp):
            var o: JSONObject = ["username": .string(u), "password": .string(p)]
            if let exp { o["expiresAt"] = .int(exp) }
            return .object(o)
        case .refresh(let token):
            return .object(["grant_type": "refresh_token", "refresh_token": .string(token)])
        case .clientCredentials(let id, let secret):
            return .object(["client_id": .string(id), "client_secret": .string(secret)])
        }
    }

    /// Reads a token request (for a server). A `grant_type` of `password` is accepted as well as none.
    public init(json: JSON) throws(MBaaSError) {
        let grant = json["grant_type"]?.stringValue
        switch grant {
        case "refresh_token":
            guard let t = json["refresh_token"]?.stringValue else {
                throw MBaaSError(.invalidRequest, "refresh_token grant needs 'refresh_token'", vendorCode: "invalid_request", httpStatus: 400)
            }
            self = .refresh(refreshToken: t)
        case "client_credentials":
            guard let id = json["client_id"]?.stringValue, let secret = json["client_secret"]?.stringValue else {
                throw MBaaSError(.invalidRequest, "client_credentials grant needs 'client_id' and 'client_secret'", vendorCode: "invalid_request", httpStatus: 400)
            }
            self = .clientCredentials(clientID: id, clientSecret: secret)
        case nil where json["client_id"] != nil:
            guard let id = json["client_id"]?.stringValue, let secret = json["client_secret"]?.stringValue else {
                throw MBaaSError(.invalidRequest, "an admin token request needs 'client_id' and 'client_secret'", vendorCode: "invalid_request", httpStatus: 400)
            }
            self = .clientCredentials(clientID: id, clientSecret: secret)
        case nil, "password":
            guard let u = json["username"]?.stringValue, let p = json["password"]?.stringValue else {
                throw MBaaSError(.invalidRequest, "token request needs 'username' and 'password'", vendorCode: "invalid_request", httpStatus: 400)
            }
            self = .password(username: u, password: p, expiresAt: json["expiresAt"]?.intValue)
        case let other?:
            throw MBaaSError(.invalidRequest, "unsupported grant_type '\(other)'", vendorCode: "unsupported_grant_type", httpStatus: 400)
        }
    }
}

/// The token endpoint's answer (kii.md §2.1): `{"id","access_token","expires_in","token_type","refresh_token"?}`.
public struct KiiTokenResponse: Sendable, Hashable {
    public var id: String
    public var accessToken: String
    /// Seconds.
    public var expiresIn: Int64?
    public var tokenType: String
    public var refreshToken: String?

    public init(id: String, accessToken: String, expiresIn: Int64?, tokenType: String = "Bearer", refreshToken: String? = nil) {
        self.id = id
        self.accessToken = accessToken
        self.expiresIn = expiresIn
        self.tokenType = tokenType
        self.refreshToken = refreshToken
    }

    public var json: JSON {
        var o: JSONObject = ["id": .string(id), "access_token": .string(accessToken)]
        if let expiresIn { o["expires_in"] = .int(expiresIn) }
        o["token_type"] = .string(tokenType)
        if let refreshToken { o["refresh_token"] = .string(refreshToken) }
        return .object(o)
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let id = json["id"]?.stringValue, let token = json["access_token"]?.stringValue else {
            throw MBaaSError(.decoding, "Kii token response lacks 'id' or 'access_token'")
        }
        self.init(id: id, accessToken: token, expiresIn: json["expires_in"]?.intValue,
                  tokenType: json["token_type"]?.stringValue ?? "Bearer", refreshToken: json["refresh_token"]?.stringValue)
    }

    /// The neutral session. `expires_in` counts from `now`; Kii's "never" (2147483646 s, about 68 years) is kept as
    /// is.
    public func session(username: String?, now: Date) -> Session {
        Session(token: accessToken, userId: id, username: username,
                expiresAt: expiresIn.map { now.addingTimeInterval(TimeInterval($0)) }, refreshToken: refreshToken)
    }
}

/// A user registration (kii.md §2.2): `POST /apps/{appID}/users`, `application/vnd.kii.RegistrationRequest+json`.
public struct KiiRegistrationRequest: Sendable, Hashable {
    public var loginName: String?
    public var password: String
    public var emailAddress: String?
    public var phoneNumber: String?
    public var displayName: String?
    /// Custom attributes (keys must not start with `_`).
    public var custom: JSONObject

    public static let contentType = "application/vnd.kii.RegistrationRequest+json"

    public init(loginName: String?, password: String, emailAddress: String? = nil, phoneNumber: String? = nil,
                displayName: String? = nil, custom: JSONObject = [:]) {
        self.loginName = loginName
        self.password = password
        self.emailAddress = emailAddress
        self.phoneNumber = phoneNumber
        self.displayName = displayName
        self.custom = custom
    }

    static let standardKeys: Set<String> = ["loginName", "password", "emailAddress", "phoneNumber", "displayName"]

    public var json: JSON {
        var o = JSONObject()
        if let loginName { o["loginName"] = .string(loginName) }
        if let displayName { o["displayName"] = .string(displayName) }
        if let emailAddress { o["emailAddress"] = .string(emailAddress) }
        if let phoneNumber { o["phoneNumber"] = .string(phoneNumber) }
        o["password"] = .string(password)
        for (k, v) in custom where o[k] == nil { o[k] = v }
        return .object(o)
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue, let password = o["password"]?.stringValue else {
            throw MBaaSError(.invalidRequest, "registration needs a 'password'", vendorCode: "INVALID_INPUT_DATA", httpStatus: 400)
        }
        var custom = o
        for k in KiiRegistrationRequest.standardKeys { custom[k] = nil }
        self.init(loginName: o["loginName"]?.stringValue, password: password, emailAddress: o["emailAddress"]?.stringValue,
                  phoneNumber: o["phoneNumber"]?.stringValue, displayName: o["displayName"]?.stringValue, custom: custom)
    }

    /// Kii SDKs' checks (kii.md §2.2): login name `^[a-zA-Z0-9-_.]{3,64}$`, password 4-50 printable ASCII.
    public static func problem(loginName: String, password: String) -> String? {
        let nameOK = (3...64).contains(loginName.count) && loginName.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0)
        }
        if !nameOK { return "a Kii login name has 3-64 characters of A-Z a-z 0-9 - _ ." }
        let passOK = (4...50).contains(password.unicodeScalars.count)
            && password.unicodeScalars.allSatisfy { (0x20...0x7E).contains($0.value) }
        if !passOK { return "a Kii password has 4-50 printable ASCII characters" }
        return nil
    }
}

/// A user as Kii returns it from registration or `GET /apps/{appID}/users/me` (kii.md §2.1, §2.2).
public struct KiiUserRecord: Sendable, Hashable {
    public var userID: String
    public var loginName: String?
    public var displayName: String?
    public var emailAddress: String?
    public var phoneNumber: String?
    /// Every other member (custom attributes, `internalUserID`, `emailAddressVerified`...).
    public var other: JSONObject

    public init(userID: String, loginName: String? = nil, displayName: String? = nil, emailAddress: String? = nil,
                phoneNumber: String? = nil, other: JSONObject = [:]) {
        self.userID = userID
        self.loginName = loginName
        self.displayName = displayName
        self.emailAddress = emailAddress
        self.phoneNumber = phoneNumber
        self.other = other
    }

    public var json: JSON {
        var o: JSONObject = ["userID": .string(userID)]
        if let loginName { o["loginName"] = .string(loginName) }
        if let displayName { o["displayName"] = .string(displayName) }
        if let emailAddress { o["emailAddress"] = .string(emailAddress) }
        if let phoneNumber { o["phoneNumber"] = .string(phoneNumber) }
        for (k, v) in other where o[k] == nil { o[k] = v }
        return .object(o)
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue, let id = o["userID"]?.stringValue else {
            throw MBaaSError(.decoding, "Kii user lacks 'userID'")
        }
        var other = o
        for k in ["userID", "loginName", "displayName", "emailAddress", "phoneNumber"] { other[k] = nil }
        self.init(userID: id, loginName: o["loginName"]?.stringValue, displayName: o["displayName"]?.stringValue,
                  emailAddress: o["emailAddress"]?.stringValue, phoneNumber: o["phoneNumber"]?.stringValue, other: other)
    }

    /// Members that describe the account rather than the user's own attributes.
    static let systemKeys: Set<String> = [
        "internalUserID", "emailAddressVerified", "phoneNumberVerified", "country", "locale", "disabled",
        "hasPassword", "_hasPassword", "_disabled", "password",
    ]

    /// The neutral user: login name, e-mail, and custom attributes as fields (groups are not listed by Kii's
    /// `users/me`, so ``User/groups`` stays empty).
    public var user: User {
        var fields: [String: Value] = [:]
        for (k, v) in other where !k.hasPrefix("_") && !KiiUserRecord.systemKeys.contains(k) {
            fields[k] = KiiObjectCodec.value(v)
        }
        if let displayName { fields["displayName"] = .string(displayName) }
        if let phoneNumber { fields["phoneNumber"] = .string(phoneNumber) }
        return User(id: userID, username: loginName, email: emailAddress, fields: fields)
    }
}
