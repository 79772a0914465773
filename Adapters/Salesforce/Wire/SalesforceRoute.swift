public import Foundation
public import MBaaSCore

/// A Salesforce endpoint, both ways: a client builds its path (``path(version:)``), a server parses a request's path
/// into one (``parse(path:)``). Paths are below the instance URL; REST paths carry the API version
/// (`/services/data/v62.0/...`). A trailing slash is tolerated when parsing (simple-salesforce calls `/query/?q=`;
/// the docs' curl examples end `/sobjects/Account/`) [capture/doc: salesforce.md "Where the sources disagree" 3].
///
/// | route | methods | path |
/// |---|---|---|
/// | ``token`` | POST (form) | `/services/oauth2/token` |
/// | ``revoke`` | POST (form `token=`) | `/services/oauth2/revoke` |
/// | ``userinfo`` | GET | `/services/oauth2/userinfo` |
/// | ``sobjects(_:)`` | POST (create) | `/services/data/vNN.0/sobjects/{Type}` |
/// | ``describe(_:)`` | GET | `/services/data/vNN.0/sobjects/{Type}/describe` |
/// | ``sobject(_:id:)`` | GET (`?fields=`), PATCH, DELETE | `/services/data/vNN.0/sobjects/{Type}/{Id}` |
/// | ``blob(_:id:field:)`` | GET (raw bytes) | `/services/data/vNN.0/sobjects/{Type}/{Id}/{Field}` (ContentVersion/VersionData) |
/// | ``query(all:)`` | GET `?q=SOQL` | `/services/data/vNN.0/query` (`/queryAll` with deleted rows) |
/// | ``queryMore(locator:all:)`` | GET | `/services/data/vNN.0/query/{locator}`, the `nextRecordsUrl` |
/// | ``collections`` | POST (create), PATCH (update), DELETE (`?ids=a,b&allOrNone=`) | `/services/data/vNN.0/composite/sobjects` |
/// | ``collectionRetrieve(_:)`` | POST `{ids,fields}` | `/services/data/vNN.0/composite/sobjects/{Type}` |
/// | ``composite`` | POST `{allOrNone, compositeRequest}` | `/services/data/vNN.0/composite` |
public enum SalesforceRoute: Sendable, Hashable {
    case token
    case revoke
    case userinfo
    case sobjects(String)
    case describe(String)
    case sobject(String, id: String)
    case blob(String, id: String, field: String)
    case query(all: Bool)
    case queryMore(locator: String, all: Bool)
    case collections
    case collectionRetrieve(String)
    case composite

    /// `/services/data/v62.0`, the REST base of an API version given as `62.0` (a leading `v` is accepted).
    public static func dataPath(version: String) -> String {
        "/services/data/" + (version.hasPrefix("v") ? version : "v" + version)
    }

    /// The path relative to the instance URL, with each name percent-encoded.
    public func path(version: String) -> String {
        let base = Self.dataPath(version: version)
        switch self {
        case .token: return "/services/oauth2/token"
        case .revoke: return "/services/oauth2/revoke"
        case .userinfo: return "/services/oauth2/userinfo"
        case .sobjects(let t): return base + "/sobjects/" + percentEncode(t)
        case .describe(let t): return base + "/sobjects/" + percentEncode(t) + "/describe"
        case .sobject(let t, let id): return base + "/sobjects/" + percentEncode(t) + "/" + percentEncode(id)
        case .blob(let t, let id, let f):
            return base + "/sobjects/" + percentEncode(t) + "/" + percentEncode(id) + "/" + percentEncode(f)
        case .query(let all): return base + (all ? "/queryAll" : "/query")
        case .queryMore(let locator, let all): return base + (all ? "/queryAll/" : "/query/") + percentEncode(locator)
        case .collections: return base + "/composite/sobjects"
        case .collectionRetrieve(let t): return base + "/composite/sobjects/" + percentEncode(t)
        case .composite: return base + "/composite"
        }
    }

    /// The route and API version (`62.0`, without the `v`; `nil` for the OAuth routes) of a request path (no query
    /// string). `nil` when the path names no route here, or a segment is not valid percent-encoding, `.` or `..`.
    public static func parse(path: String) -> (route: SalesforceRoute, version: String?)? {
        var raw = path
        while raw.count > 1, raw.hasSuffix("/") { raw.removeLast() }
        let parts = raw.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        var segments: [String] = []
        for p in parts {
            guard let d = percentDecode(p), !d.isEmpty, d != ".", d != "..", !d.contains("/") else { return nil }
            segments.append(d)
        }
        guard segments.count >= 3, segments[0] == "services" else { return nil }
        if segments[1] == "oauth2", segments.count == 3 {
            switch segments[2] {
            case "token": return (.token, nil)
            case "revoke": return (.revoke, nil)
            case "userinfo": return (.userinfo, nil)
            default: return nil
            }
        }
        guard segments[1] == "data", segments[2].hasPrefix("v"), segments.count >= 4 else { return nil }
        let version = String(segments[2].dropFirst())
        guard !version.isEmpty, Double(version) != nil else { return nil }
        let rest = Array(segments[3...])
        let route: SalesforceRoute?
        switch (rest[0], rest.count) {
        case ("sobjects", 2): route = .sobjects(rest[1])
        case ("sobjects", 3): route = rest[2] == "describe" ? .describe(rest[1]) : .sobject(rest[1], id: rest[2])
        case ("sobjects", 4): route = .blob(rest[1], id: rest[2], field: rest[3])
        case ("query", 1): route = .query(all: false)
        case ("queryAll", 1): route = .query(all: true)
        case ("query", 2): route = .queryMore(locator: rest[1], all: false)
        case ("queryAll", 2): route = .queryMore(locator: rest[1], all: true)
        case ("composite", 1): route = .composite
        case ("composite", 2) where rest[1] == "sobjects": route = .collections
        case ("composite", 3) where rest[1] == "sobjects": route = .collectionRetrieve(rest[2])
        default: route = nil
        }
        return route.map { ($0, version) }
    }
}

/// `application/x-www-form-urlencoded` bodies (the token and revoke endpoints), both ways.
public enum SalesforceForm {
    /// `a=1&b=x%20y`, in the order given.
    public static func encode(_ pairs: [(String, String)]) -> Data {
        Data(pairs.map { percentEncode($0.0) + "=" + percentEncode($0.1) }.joined(separator: "&").utf8)
    }

    /// The pairs of a body (`+` is a space); `nil` when an escape is malformed. A repeated name keeps its first value.
    public static func decode(_ body: Data) -> [String: String]? {
        var out: [String: String] = [:]
        for part in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let kv = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let k = percentDecode(kv[0].replacingOccurrences(of: "+", with: " ")),
                  let v = percentDecode((kv.count > 1 ? String(kv[1]) : "").replacingOccurrences(of: "+", with: " "))
            else { return nil }
            if out[k] == nil { out[k] = v }
        }
        return out
    }
}
