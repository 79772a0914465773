public import Foundation

/// A logged-in session, persistable (the CLI stores it in a 0600 file) and restorable with
/// ``Authenticator/restore(_:)``.
public struct Session: Sendable, Hashable, Codable {
    public var token: String
    public var userId: String
    public var username: String?
    public var expiresAt: Date?
    public var refreshToken: String?
    /// Vendor extras the adapter needs to resume (never secrets beyond the tokens above).
    public var extras: [String: String]

    public init(
        token: String, userId: String, username: String? = nil, expiresAt: Date? = nil, refreshToken: String? = nil,
        extras: [String: String] = [:]
    ) {
        self.token = token
        self.userId = userId
        self.username = username
        self.expiresAt = expiresAt
        self.refreshToken = refreshToken
        self.extras = extras
    }
}

/// A user as the backend describes it, with the groups and roles it belongs to.
public struct User: Sendable, Hashable {
    public var id: String
    public var username: String?
    public var email: String?
    public var groups: [String]
    public var roles: [String]
    public var fields: [String: Value]

    public init(
        id: String, username: String? = nil, email: String? = nil, groups: [String] = [], roles: [String] = [],
        fields: [String: Value] = [:]
    ) {
        self.id = id
        self.username = username
        self.email = email
        self.groups = groups
        self.roles = roles
        self.fields = fields
    }

    /// `{"id":..,"username":..,"email":..,"groups":[..],"roles":[..],"fields":{..}}`
    public var json: JSON {
        var o: JSONObject = ["id": .string(id)]
        if let username { o["username"] = .string(username) }
        if let email { o["email"] = .string(email) }
        o["groups"] = .array(groups.map(JSON.string))
        o["roles"] = .array(roles.map(JSON.string))
        o["fields"] = .object(JSONObject(sorting: fields.mapValues(\.json)))
        return .object(o)
    }
}

/// Signs users up, in and out, and holds the current session of this client instance.
///
/// Every method throws ``MBaaSError`` only.
///
/// # Contract
/// - Sessions belong to the backend instance: two instances (a migration's source and target) never share one.
/// - ``signUp(username:password:email:fields:)`` creates a user and logs it in; a taken name is
///   ``MBaaSError/Kind/duplicate``; a backend without ``Capabilities/Feature/signUp`` throws `unsupported`.
/// - ``logIn(username:password:)`` replaces the current session; a wrong user name or password is
///   ``MBaaSError/Kind/unauthorized`` and leaves the previous session untouched.
/// - ``logOut(confirmWithServer:)`` always clears the local session. With `confirmWithServer` it first tells the
///   server and throws if that fails (the session is still cleared); without it, it works offline.
/// - ``currentUser()`` asks the server who the session belongs to; without a session it is `unauthorized`.
///   A server answer that the session expired ends the session (``session`` becomes `nil`) and is
///   `unauthorized`.
/// - Object and file calls made with a session act as that user (ACL), without one as anonymous — unless the
///   backend URL explicitly opts into an administrative identity for session-less calls (for migrations and
///   admin tools, e.g. an app admin's client credentials or a superuser switch); adapters document such options and
///   never enable them by default.
public protocol Authenticator: Sendable {
    func signUp(username: String, password: String, email: String?, fields: [String: Value]) async throws -> Session
    func logIn(username: String, password: String) async throws -> Session
    func logOut(confirmWithServer: Bool) async throws
    func currentUser() async throws -> User
    /// The current session, if any.
    var session: Session? { get async }
    /// Resumes a session saved earlier (no network call).
    func restore(_ session: Session?) async
}

extension Authenticator {
    public func signUp(username: String, password: String) async throws -> Session {
        try await signUp(username: username, password: password, email: nil, fields: [:])
    }
}
