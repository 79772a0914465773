import Foundation
import MBaaSCore

/// An AppPot v2 endpoint, both ways: a client builds its path segments, a server parses a request's path into one.
///
/// Paths are below `/{contextRoot}/api/{companyId}/{appId}/{appVersion}/` (reference A3; see ``AppPotAppPath``),
/// percent-encoded on the wire: ``segments`` are decoded, ``AppPotAppPath/path(_:)`` encodes them. A trailing
/// slash is tolerated when parsing.
///
/// | route | method | path | evidence |
/// |---|---|---|---|
/// | ``anonymousTokens`` | GET (v2, v3), POST (v4) | `anonymousTokens` | [doc] A5 |
/// | ``login``, ``logout`` | POST | `auth/login`, `auth/logout` | [doc] A5 |
/// | ``devices`` | POST | `devices` | [doc] A5 |
/// | ``schemas`` | GET, POST | `schemas` | [doc] A6 |
/// | ``addData``, ``updateData``, ``deleteData`` | POST | `data/batch/addData`… | [doc] A7 |
/// | ``object(className:id:)`` | GET | `data/{Class}/{objectId}` | [doc] A7 |
/// | ``query(className:)``, ``count(className:)`` | POST | `data/query/{Class}`, `data/query/{Class}/count` | [doc] A7, [sdk] count |
/// | ``legacyQuery`` | POST | `data/query` (deprecated v1-style body) | [doc] A7 |
/// | ``files``, ``file(_:)`` | POST; GET, PUT, DELETE | `files`, `files/{name}` | [doc] A9 |
/// | ``users``, ``user(_:)`` | GET, POST; GET, PUT, DELETE | `users`, `users/{id}` | [doc] A10 |
/// | ``groups``, ``group(_:)``, ``roles`` | GET, POST; PUT, DELETE; GET | `groups`, `groups/{id}`, `roles` | [doc] A10 |
/// | ``logs``, ``messages``, ``emails`` | POST | `logs`, `messages`, `emails` | [doc] A10 |
/// | ``gateway(_:)`` | any | `gateway/{service}/…` | [doc] A10 |
public enum AppPotRoute: Sendable, Hashable {
    case anonymousTokens
    case login
    case logout
    case devices
    case schemas
    case addData
    case updateData
    case deleteData
    case object(className: String, id: String)
    case query(className: String)
    case count(className: String)
    case legacyQuery
    case files
    case file(String)
    case users
    case user(String)
    case groups
    case group(String)
    case roles
    case logs
    case logLevel
    case messages
    case emails
    /// `gateway/{rest}`: the segments after `gateway`.
    case gateway([String])

    /// The decoded path segments below the app's base path.
    public var segments: [String] {
        switch self {
        case .anonymousTokens: ["anonymousTokens"]
        case .login: ["auth", "login"]
        case .logout: ["auth", "logout"]
        case .devices: ["devices"]
        case .schemas: ["schemas"]
        case .addData: ["data", "batch", "addData"]
        case .updateData: ["data", "batch", "updateData"]
        case .deleteData: ["data", "batch", "deleteData"]
        case .object(let cls, let id): ["data", cls, id]
        case .query(let cls): ["data", "query", cls]
        case .count(let cls): ["data", "query", cls, "count"]
        case .legacyQuery: ["data", "query"]
        case .files: ["files"]
        case .file(let name): ["files", name]
        case .users: ["users"]
        case .user(let id): ["users", id]
        case .groups: ["groups"]
        case .group(let id): ["groups", id]
        case .roles: ["roles"]
        case .logs: ["logs"]
        case .logLevel: ["logLevel"]
        case .messages: ["messages"]
        case .emails: ["emails"]
        case .gateway(let rest): ["gateway"] + rest
        }
    }

    /// Parses decoded segments below the app's base path; `nil` when they name no AppPot endpoint.
    public init?(segments s: [String]) {
        guard let first = s.first, !s.contains("") else { return nil }
        switch (first, s.count) {
        case ("anonymousTokens", 1): self = .anonymousTokens
        case ("auth", 2) where s[1] == "login": self = .login
        case ("auth", 2) where s[1] == "logout": self = .logout
        case ("devices", 1): self = .devices
        case ("schemas", 1): self = .schemas
        case ("data", 3) where s[1] == "batch":
            switch s[2] {
            case "addData": self = .addData
            case "updateData": self = .updateData
            case "deleteData": self = .deleteData
            default: return nil
            }
        case ("data", 2) where s[1] == "query": self = .legacyQuery
        case ("data", 3) where s[1] == "query": self = .query(className: s[2])
        case ("data", 4) where s[1] == "query" && s[3] == "count": self = .count(className: s[2])
        case ("data", 3): self = .object(className: s[1], id: s[2])
        case ("files", 1): self = .files
        case ("files", 2): self = .file(s[1])
        case ("users", 1): self = .users
        case ("users", 2): self = .user(s[1])
        case ("groups", 1): self = .groups
        case ("groups", 2): self = .group(s[1])
        case ("roles", 1): self = .roles
        case ("logs", 1): self = .logs
        case ("logLevel", 1): self = .logLevel
        case ("messages", 1): self = .messages
        case ("emails", 1): self = .emails
        case ("gateway", 2...): self = .gateway(Array(s.dropFirst()))
        default: return nil
        }
    }
}

/// The base of every v2 path, `/{contextRoot}/api/{companyId}/{appId}/{appVersion}/` (reference A3), and a
/// request path parsed against it.
public struct AppPotAppPath: Sendable, Hashable {
    /// Normally `apppot` (reference A3); may hold several segments (`a/b`).
    public var contextRoot: String
    public var companyId: String
    public var appId: String
    /// An opaque segment (`1.0`, `1.0.0`, `1_0_0`).
    public var appVersion: String

    public init(contextRoot: String = "apppot", companyId: String, appId: String, appVersion: String) {
        self.contextRoot = contextRoot
        self.companyId = companyId
        self.appId = appId
        self.appVersion = appVersion
    }

    /// The percent-encoded path of a route: `/apppot/api/24/jp.co.example.App/1.0/data/Memo/Memo_1`.
    public func path(_ route: AppPotRoute) -> String {
        let root = contextRoot.split(separator: "/").map(String.init)
        return "/" + (root + ["api", companyId, appId, appVersion] + route.segments).map(percentEncode).joined(separator: "/")
    }

    /// What a request path (percent-encoded, without the query) addresses.
    public enum Parsed: Sendable, Hashable {
        /// A route of this app.
        case route(AppPotRoute)
        /// A path under `/{contextRoot}/api/` for another company, app or version: AppPot answers errCode 104/106.
        case otherApp(companyId: String, appId: String, appVersion: String)
        /// Not under `/{contextRoot}/api/{company}/{app}/{version}/`, or no endpoint there.
        case unknown
    }

    /// Parses a request path (percent-encoded, as received, without the query).
    public func parse(_ rawPath: String) -> Parsed {
        var segments: [String] = []
        for raw in rawPath.split(separator: "/", omittingEmptySubsequences: false).dropFirst() {
            guard let s = percentDecode(String(raw)) else { return .unknown }
            segments.append(s)
        }
        if segments.last == "" { segments.removeLast() }  // trailing slash
        let root = contextRoot.split(separator: "/").map(String.init)
        guard segments.count > root.count + 4, Array(segments.prefix(root.count)) == root,
              segments[root.count] == "api"
        else { return .unknown }
        let company = segments[root.count + 1], app = segments[root.count + 2], version = segments[root.count + 3]
        guard let route = AppPotRoute(segments: Array(segments.dropFirst(root.count + 4))) else { return .unknown }
        guard company == companyId, app == appId, version == appVersion else {
            return .otherApp(companyId: company, appId: app, appVersion: version)
        }
        return .route(route)
    }
}
