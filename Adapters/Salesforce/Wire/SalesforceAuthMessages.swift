public import Foundation
public import MBaaSCore

/// A token request (`POST /services/oauth2/token`, form-encoded) [doc/capture: salesforce.md "Authentication"]:
/// the password grant (`client_id`, `client_secret`, `username`, `password` with any security token appended) or
/// the refresh-token grant (`refresh_token`, `client_id`, optional `client_secret`). The Mobile SDK's
/// `hybrid_refresh` is read as a refresh [sdk].
public struct SalesforceTokenRequest: Sendable, Hashable {
    public enum Grant: Sendable, Hashable {
        case password(username: String, password: String)
        case refreshToken(String)
    }

    public var grant: Grant
    public var clientId: String
    public var clientSecret: String?

    public init(grant: Grant, clientId: String, clientSecret: String?) {
        self.grant = grant
        self.clientId = clientId
        self.clientSecret = clientSecret
    }

    /// The form pairs, in the order simple-salesforce and jsforce send them.
    public var formPairs: [(String, String)] {
        var pairs: [(String, String)]
        switch grant {
        case .password(let u, let p): pairs = [("grant_type", "password"), ("client_id", clientId)]
            if let clientSecret { pairs.append(("client_secret", clientSecret)) }
            pairs += [("username", u), ("password", p)]
        case .refreshToken(let t): pairs = [("grant_type", "refresh_token"), ("refresh_token", t), ("client_id", clientId)]
            if let clientSecret { pairs.append(("client_secret", clientSecret)) }
            pairs.append(("format", "json"))
        }
        return pairs
    }

    public var body: Data { SalesforceForm.encode(formPairs) }

    /// Reads a form body; `nil` reason as an OAuth error when the grant type is missing or unknown
    /// (`unsupported_grant_type`) or a member is missing (`invalid_request`).
    public static func parse(form: [String: String]) -> Result<SalesforceTokenRequest, SalesforceOAuthError> {
        guard let type = form["grant_type"] else {
            return .failure(SalesforceOAuthError(error: "unsupported_grant_type", errorDescription: "grant type not supported"))
        }
        guard let clientId = form["client_id"], !clientId.isEmpty else {
            return .failure(SalesforceOAuthError(error: "invalid_client_id", errorDescription: "client identifier invalid"))
        }
        switch type {
        case "password":
            guard let u = form["username"], let p = form["password"] else {
                return .failure(SalesforceOAuthError(error: "invalid_request", errorDescription: "username and password are required"))
            }
            return .success(.init(grant: .password(username: u, password: p), clientId: clientId, clientSecret: form["client_secret"]))
        case "refresh_token", "hybrid_refresh":
            guard let t = form["refresh_token"] else {
                return .failure(SalesforceOAuthError(error: "invalid_request", errorDescription: "refresh_token is required"))
            }
            return .success(.init(grant: .refreshToken(t), clientId: clientId, clientSecret: form["client_secret"]))
        default:
            return .failure(SalesforceOAuthError(error: "unsupported_grant_type", errorDescription: "grant type not supported"))
        }
    }
}

/// The token endpoint's success body [capture: jsforce's TokenResponse; salesforce.md]:
/// `{"access_token","instance_url","id","token_type":"Bearer","issued_at":"<ms epoch>","signature","scope"?,
/// "refresh_token"?}`. A refresh returns no new `refresh_token`; the password grant never issues one (a server
/// may still return one, as the emulator does, to let clients refresh).
public struct SalesforceTokenResponse: Sendable, Hashable {
    public var accessToken: String
    public var instanceURL: String
    /// `https://login.salesforce.com/id/<00D org>/<005 user>`.
    public var identityURL: String
    public var tokenType: String
    public var issuedAt: String
    public var signature: String
    public var scope: String?
    public var refreshToken: String?

    public init(accessToken: String, instanceURL: String, identityURL: String, tokenType: String = "Bearer",
                issuedAt: String, signature: String, scope: String? = nil, refreshToken: String? = nil) {
        self.accessToken = accessToken
        self.instanceURL = instanceURL
        self.identityURL = identityURL
        self.tokenType = tokenType
        self.issuedAt = issuedAt
        self.signature = signature
        self.scope = scope
        self.refreshToken = refreshToken
    }

    /// The user id (`005…`) and org id (`00D…`), the last two segments of ``identityURL``.
    public var userId: String? { identityURL.split(separator: "/").last.map(String.init) }
    public var organizationId: String? {
        let parts = identityURL.split(separator: "/")
        return parts.count >= 2 ? String(parts[parts.count - 2]) : nil
    }

    public var json: JSON {
        var o: JSONObject = ["access_token": .string(accessToken)]
        if let refreshToken { o["refresh_token"] = .string(refreshToken) }
        o["signature"] = .string(signature)
        if let scope { o["scope"] = .string(scope) }
        o["instance_url"] = .string(instanceURL)
        o["id"] = .string(identityURL)
        o["token_type"] = .string(tokenType)
        o["issued_at"] = .string(issuedAt)
        return .object(o)
    }

    /// Reads a token body; `decoding` naming the member when `access_token` or `instance_url` is missing.
    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue else { throw MBaaSError(.decoding, "the token response is not a JSON object") }
        guard let token = o["access_token"]?.stringValue else {
            throw MBaaSError(.decoding, "the token response has no access_token")
        }
        guard let instance = o["instance_url"]?.stringValue else {
            throw MBaaSError(.decoding, "the token response has no instance_url")
        }
        self.init(accessToken: token, instanceURL: instance, identityURL: o["id"]?.stringValue ?? "",
                  tokenType: o["token_type"]?.stringValue ?? "Bearer", issuedAt: o["issued_at"]?.stringValue ?? "",
                  signature: o["signature"]?.stringValue ?? "", scope: o["scope"]?.stringValue,
                  refreshToken: o["refresh_token"]?.stringValue)
    }
}

/// `GET /services/oauth2/userinfo`: an OpenID-style body [doc: salesforce.md "userinfo"]; simple-salesforce's mock
/// has only `user_id`, `name` and `active` [sdk]. Members beyond those kept here are in ``extras``.
public struct SalesforceUserInfo: Sendable, Hashable {
    public var userId: String
    public var organizationId: String?
    public var preferredUsername: String?
    public var name: String?
    public var email: String?
    public var active: Bool?
    public var extras: JSONObject

    public init(userId: String, organizationId: String? = nil, preferredUsername: String? = nil, name: String? = nil,
                email: String? = nil, active: Bool? = nil, extras: JSONObject = [:]) {
        self.userId = userId
        self.organizationId = organizationId
        self.preferredUsername = preferredUsername
        self.name = name
        self.email = email
        self.active = active
        self.extras = extras
    }

    public var json: JSON {
        var o: JSONObject = ["sub": .string("https://login.salesforce.com/id/\(organizationId ?? "")/\(userId)"),
                             "user_id": .string(userId)]
        if let organizationId { o["organization_id"] = .string(organizationId) }
        if let preferredUsername { o["preferred_username"] = .string(preferredUsername) }
        if let name { o["name"] = .string(name) }
        if let email { o["email"] = .string(email) }
        if let active { o["active"] = .bool(active) }
        for (k, v) in extras where o[k] == nil { o[k] = v }
        return .object(o)
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue, let id = o["user_id"]?.stringValue else {
            throw MBaaSError(.decoding, "the userinfo response has no user_id")
        }
        var extras = o
        for k in ["sub", "user_id", "organization_id", "preferred_username", "name", "email", "active"] { extras[k] = nil }
        self.init(userId: id, organizationId: o["organization_id"]?.stringValue,
                  preferredUsername: o["preferred_username"]?.stringValue, name: o["name"]?.stringValue,
                  email: o["email"]?.stringValue, active: o["active"]?.boolValue, extras: extras)
    }
}
