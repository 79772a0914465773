public import Foundation
public import MBaaSCore

/// Where an AppPot app lives and how this client identifies itself.
///
/// As a backend URL:
/// ```
/// apppot://APP_KEY@trial.apppot.net/apppot?company=24&app=jp.co.example.App&version=1.0
/// apppot+http://APP_KEY@127.0.0.1:8080/apppot?company=24&app=jp.co.example.App&version=1.0&device=UDID
/// apppot://APP_KEY:PASSWORD@host/apppot?company=24&app=...&version=1.0&user=alice   (log in when opened)
/// ```
/// - user part: the app key (required); the secret, when given with `user=`, is that user's password.
/// - path: the context root (`apppot` when empty).
/// - `company`, `app`, `version`: the company id, app id and app version (required; `version` is an opaque path
///   segment: `1.0`, `1.0.0`, `1_0_0`).
/// - `device`: the device UDID sent with the anonymous token request and the login (default `mbaaskit`).
/// - `user`: log in as this user (the URL's secret is the password) on the first call that needs a session.
/// - `anonymousData=true`: send data and file calls made without a user session with the anonymous token
///   instead of refusing them (for servers that allow it; see ``AppPotBackend``).
/// - `transactions=true`: give every write a `transactionId` (duplicate-submit guard) and make it safe to retry
///   (see ``AppPotBackend``).
/// - `generation=v2|v3|v4|auto`: the server API generation (default `v2`; see ``AppPotGeneration`` for what
///   differs and what `auto` can detect).
/// - `timeout=SECONDS`: how long each request may take (default: the transport's).
/// - `clientGroupIds=true`: an ACL granting a subset of the writer's groups is written as group scope with the
///   record's `groupIds` set by the client (docs 05.2 shows a client-sent `groupIds`; whether every server
///   honours it is not verified, hence opt-in). Without it such ACLs are `unsupported`.
/// - `untypedReads=true`: read rows of classes whose column types this client does not know as the server
///   answers them (strings) instead of refusing (see ``AppPotBackend``'s "Classes").
/// - `defaultScope=user|group|all`: the `scopeType` of a record written without an ACL (default `group`, the
///   default of every AppPot SDK: the writer's groups may read and write it; see ``AppPotScope``).
/// - `schemas=FILE`: a JSON file declaring the column types of classes that exist on the server (class → field →
///   type name, `{"Memo":{"title":"string","n":"int"}}`; see ``AppPotFieldTypes``), read when the backend is
///   opened, so their values read back typed and they can be written to (a relative path is the process's).
public struct AppPotConfiguration: Sendable, Hashable {
    /// `https://host[:port]` (or `http://` for `apppot+http`).
    public var serverBase: String
    public var contextRoot: String
    public var companyId: String
    public var appId: String
    public var appVersion: String
    public var appKey: String
    public var deviceUDID: String
    /// A user to log in as on the first call that needs a session, with ``loginPassword``.
    public var loginUser: String?
    public var loginPassword: String?
    public var anonymousData: Bool
    /// Send a `transactionId` with every write.
    public var transactionIds: Bool
    /// The server API generation (``detectGeneration`` may replace it with what the server shows).
    public var generation: AppPotGeneration
    /// `generation=auto`: find out whether the server is v4 from its first anonymous-token answer.
    public var detectGeneration: Bool
    /// The scope of a record written without an ACL (the AppPot SDKs' default: ``AppPotScope/group``).
    public var defaultScope: AppPotScope
    /// Read rows of classes with unknown column types as strings instead of refusing them.
    public var untypedReads: Bool
    /// Send `groupIds` for ACLs that grant a subset of the writer's groups.
    public var clientGroupIds: Bool
    /// Seconds each request may take (URL option `timeout`); the transport's default when `nil`.
    public var timeout: Double?
    /// A file declaring classes' column types (URL option `schemas`), read when the backend is opened.
    public var schemasFile: String?

    public static let defaultContextRoot = "apppot"
    public static let defaultDeviceUDID = "mbaaskit"

    public init(
        serverBase: String, contextRoot: String = AppPotConfiguration.defaultContextRoot, companyId: String,
        appId: String, appVersion: String, appKey: String, deviceUDID: String = AppPotConfiguration.defaultDeviceUDID,
        loginUser: String? = nil, loginPassword: String? = nil, anonymousData: Bool = false, transactionIds: Bool = false,
        generation: AppPotGeneration = .v2, detectGeneration: Bool = false, defaultScope: AppPotScope = .group,
        untypedReads: Bool = false, clientGroupIds: Bool = false, timeout: Double? = nil, schemasFile: String? = nil
    ) {
        self.serverBase = serverBase
        self.contextRoot = contextRoot
        self.companyId = companyId
        self.appId = appId
        self.appVersion = appVersion
        self.appKey = appKey
        self.deviceUDID = deviceUDID
        self.loginUser = loginUser
        self.loginPassword = loginPassword
        self.anonymousData = anonymousData
        self.transactionIds = transactionIds
        self.generation = generation
        self.detectGeneration = detectGeneration
        self.defaultScope = defaultScope
        self.untypedReads = untypedReads
        self.clientGroupIds = clientGroupIds
        self.timeout = timeout
        self.schemasFile = schemasFile
    }

    /// Reads a backend URL (see the type's documentation); errors name the missing or wrong part.
    public init(url: BackendURL) throws(MBaaSError) {
        guard url.scheme == "apppot" else {
            throw MBaaSError(.invalidRequest, "not an AppPot URL (scheme '\(url.scheme)'; expected apppot or apppot+http)")
        }
        guard url.host != nil else { throw MBaaSError(.invalidRequest, "AppPot URL has no host") }
        guard let key = url.user, !key.isEmpty else {
            throw MBaaSError(.invalidRequest, "AppPot URL needs the app key as its user part: apppot://APP_KEY@host/apppot?company=..&app=..&version=..")
        }
        func required(_ name: String, _ what: String) throws(MBaaSError) -> String {
            guard let v = url.option(name), !v.isEmpty else {
                throw MBaaSError(.invalidRequest, "AppPot URL needs the \(what) as '?\(name)=...' (e.g. apppot://APP_KEY@host/apppot?company=24&app=jp.co.example.App&version=1.0)")
            }
            return v
        }
        let company = try required("company", "company id")
        let app = try required("app", "app id")
        let version = try required("version", "app version")
        let root = url.path.split(separator: "/").joined(separator: "/")
        let known: Set<String> = ["company", "app", "version", "device", "user", "anonymousData", "transactions",
                                   "generation", "defaultScope", "untypedReads", "clientGroupIds", "timeout", "schemas"]
        try url.requireKnownOptions(known, adapter: "AppPot")
        let user = url.option("user").flatMap { $0.isEmpty ? nil : $0 }
        if user != nil, url.secret == nil {
            throw MBaaSError(.invalidRequest, "AppPot URL option 'user' needs the password as the URL's secret (apppot://APP_KEY:PASSWORD@...)")
        }
        func flag(_ name: String) throws(MBaaSError) -> Bool {
            guard let a = url.option(name) else { return false }
            switch a.lowercased() {
            case "", "1", "true", "yes": return true
            case "0", "false", "no": return false
            default: throw MBaaSError(.invalidRequest, "AppPot URL option \(name) takes true or false, got '\(a)'")
            }
        }
        var generation = AppPotGeneration.v2
        var detect = false
        if let g = url.option("generation"), !g.isEmpty {
            if g.lowercased() == "auto" {
                detect = true
            } else if let parsed = AppPotGeneration(option: g) {
                generation = parsed
            } else {
                throw MBaaSError(.invalidRequest, "AppPot URL option generation takes v2, v3, v4 or auto, got '\(g)'")
            }
        }
        var scope = AppPotScope.group
        if let d = url.option("defaultScope"), !d.isEmpty {
            guard let parsed = AppPotScope(name: d) else {
                throw MBaaSError(.invalidRequest, "AppPot URL option defaultScope takes user, group or all (or 1, 2, 3), got '\(d)'")
            }
            scope = parsed
        }
        if let file = url.option("schemas"), file.isEmpty {
            throw MBaaSError(.invalidRequest, "AppPot URL option schemas needs a file name (schemas=FILE, a JSON file {\"Class\":{\"field\":\"type\"}})")
        }
        self.init(
            serverBase: url.httpBase, contextRoot: root.isEmpty ? AppPotConfiguration.defaultContextRoot : root,
            companyId: company, appId: app, appVersion: version, appKey: key,
            deviceUDID: url.option("device").flatMap { $0.isEmpty ? nil : $0 } ?? AppPotConfiguration.defaultDeviceUDID,
            loginUser: user, loginPassword: user == nil ? nil : url.secret, anonymousData: try flag("anonymousData"),
            transactionIds: try flag("transactions"), generation: generation, detectGeneration: detect,
            defaultScope: scope, untypedReads: try flag("untypedReads"),
            clientGroupIds: try flag("clientGroupIds"), timeout: try url.timeoutOption(), schemasFile: url.option("schemas"))
    }

    /// The API base path: `/{contextRoot}/api/{companyId}/{appId}/{appVersion}` (each segment percent-encoded).
    public var apiPath: String {
        "/" + contextRoot.split(separator: "/").map { percentEncode(String($0)) }.joined(separator: "/") + "/api/"
            + [companyId, appId, appVersion].map(percentEncode).joined(separator: "/")
    }

    /// The URL of a resource below the API base; path segments are percent-encoded here.
    public func url(_ segments: [String], query: [(String, String)] = []) throws -> URL {
        try URL.build(base: serverBase, path: apiPath + "/" + segments.map(percentEncode).joined(separator: "/"), query: query)
    }
}
