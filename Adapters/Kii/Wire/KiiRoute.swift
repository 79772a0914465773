import Foundation
import MBaaSCore

/// What a Kii ACL path is about: a bucket or an object (kii.md §6.1).
public enum KiiACLResource: Sendable, Hashable {
    case bucket(KiiBucketAddress)
    case object(KiiBucketAddress, id: String)

    public var bucket: KiiBucketAddress {
        switch self {
        case .bucket(let b), .object(let b, _): b
        }
    }

    /// The resource's path relative to the API base.
    public func path(appID: String) -> String {
        switch self {
        case .bucket(let b): b.path(appID: appID)
        case .object(let b, let id): b.objectPath(appID: appID, objectID: id)
        }
    }
}

/// A Kii endpoint, both ways: a client builds its path (``path(appID:)``), a server parses a request's path into
/// one (``parse(path:basePath:)``).
///
/// Paths are below the REST base (`/api`), percent-encoded on the wire; segments keep a literal `:` (selectors
/// `LOGIN_NAME:..`, `UserID:..`). A trailing slash is tolerated when parsing.
///
/// | route | methods | path |
/// |---|---|---|
/// | ``token`` | POST | `/oauth2/token` (the SDKs') or `/apps/{appID}/oauth2/token` (the guides') |
/// | ``users`` | POST (register) | `/apps/{appID}/users` |
/// | ``user(_:)`` | GET | `/apps/{appID}/users/{me, userID, LOGIN_NAME:..}` |
/// | ``groups`` | POST (create) | `/apps/{appID}/groups` |
/// | ``bucket(_:)`` | GET, DELETE | `{bucket}` = `/apps/{appID}[/users/{u}, /groups/{g}, /things/{t}]/buckets/{bucket}` |
/// | ``objects(_:)`` | POST (create) | `{bucket}/objects` |
/// | ``object(_:id:)`` | GET, PUT, DELETE, POST with `X-HTTP-Method-Override: PATCH` | `{bucket}/objects/{id}` |
/// | ``query(_:)`` | POST | `{bucket}/query` |
/// | ``body(_:id:)`` | GET, PUT, DELETE, HEAD | `{bucket}/objects/{id}/body` |
/// | ``acl(_:verb:subject:)`` | GET (list), PUT (grant), DELETE (revoke) | `{bucket or object}/acl[/{VERB}[/{SUBJECT}]]` |
public enum KiiRoute: Sendable, Hashable {
    case token
    case users
    case user(String)
    case groups
    case bucket(KiiBucketAddress)
    case objects(KiiBucketAddress)
    case object(KiiBucketAddress, id: String)
    case query(KiiBucketAddress)
    case body(KiiBucketAddress, id: String)
    case acl(KiiACLResource, verb: KiiACLVerb?, subject: KiiACLSubject?)

    /// The path relative to the REST base (`/apps/{appID}/buckets/Memo/objects`); ``token`` is the SDKs'
    /// `/oauth2/token`.
    public func path(appID: String) -> String {
        let app = "/apps/" + percentEncodeSegment(appID)
        switch self {
        case .token: return "/oauth2/token"
        case .users: return app + "/users"
        case .user(let id): return app + "/users/" + percentEncodeSegment(id)
        case .groups: return app + "/groups"
        case .bucket(let b): return b.path(appID: appID)
        case .objects(let b): return b.path(appID: appID) + "/objects"
        case .object(let b, let id): return b.objectPath(appID: appID, objectID: id)
        case .query(let b): return b.path(appID: appID) + "/query"
        case .body(let b, let id): return b.objectPath(appID: appID, objectID: id) + "/body"
        case .acl(let resource, let verb, let subject):
            var p = resource.path(appID: appID) + "/acl"
            if let verb {
                p += "/" + verb.rawValue
                if let subject { p += "/" + percentEncodeSegment(subject.pathComponent) }
            }
            return p
        }
    }

    /// Whether a raw path holds a segment that must never reach a store or a disk: `.` or `..`, or a segment whose
    /// percent-decoding holds `/`, `\` or a NUL (`..%2F..%2Fetc`).
    public static func hasUnsafeSegment(_ rawPath: String) -> Bool {
        for raw in rawPath.split(separator: "/", omittingEmptySubsequences: true) {
            let s = String(raw).removingPercentEncoding ?? String(raw)
            if s == "." || s == ".." || s.contains("/") || s.contains("\\") || s.contains("\0") { return true }
        }
        return false
    }

    /// Parses a request path (percent-encoded, as received, without the query) below `basePath`. Returns the
    /// app ID the path names (`nil` for `/oauth2/token`) and the route; `nil` when the path names no Kii endpoint
    /// (a server answers 404 then). Bucket names must be valid Kii names (``KiiBucketAddress/problem(withBucketName:)``).
    public static func parse(path rawPath: String, basePath: String = "/api") -> (appID: String?, route: KiiRoute)? {
        var rest = Substring(rawPath)
        if !basePath.isEmpty {
            guard rest.hasPrefix(basePath + "/") else { return nil }
            rest = rest.dropFirst(basePath.count)
        }
        var segments: [String] = []
        for raw in rest.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            guard let s = String(raw).removingPercentEncoding else { return nil }
            segments.append(s)
        }
        if segments.last == "" { segments.removeLast() }  // trailing slash
        guard !segments.isEmpty, !segments.contains("") else { return nil }
        if segments == ["oauth2", "token"] { return (nil, .token) }
        guard segments.count >= 3 || (segments.count == 2 && segments[0] == "apps"), segments[0] == "apps" else { return nil }
        let appID = segments[1]
        let tail = Array(segments.dropFirst(2))
        guard let route = route(tail) else { return nil }
        return (appID, route)
    }

    static func route(_ s: [String]) -> KiiRoute? {
        switch s.first {
        case "oauth2": return s == ["oauth2", "token"] ? .token : nil
        case "users" where s.count == 1: return .users
        case "users" where s.count == 2: return .user(s[1])
        case "groups" where s.count == 1: return .groups
        default: break
        }
        // The scope, then buckets/{bucket}/...
        var scope = KiiScope.app
        var rest = s[...]
        if let first = s.first, ["users", "groups", "things"].contains(first) {
            guard s.count >= 4 else { return nil }
            switch first {
            case "users": scope = .user(s[1])
            case "groups": scope = .group(s[1])
            default: scope = .thing(s[1])
            }
            rest = s.dropFirst(2)
        }
        let r = Array(rest)
        guard r.count >= 2, r[0] == "buckets", KiiBucketAddress.problem(withBucketName: r[1]) == nil else { return nil }
        let bucket = KiiBucketAddress(scope: scope, bucket: r[1])
        let after = Array(r.dropFirst(2))
        func acl(_ resource: KiiACLResource, _ a: [String]) -> KiiRoute? {
            guard a.first == "acl", a.count <= 3 else { return nil }
            var verb: KiiACLVerb?
            var subject: KiiACLSubject?
            if a.count >= 2 {
                guard let v = KiiACLVerb(rawValue: a[1]) else { return nil }
                verb = v
            }
            if a.count == 3 {
                guard let sub = KiiACLSubject(pathComponent: a[2]) else { return nil }
                subject = sub
            }
            return .acl(resource, verb: verb, subject: subject)
        }
        switch after.count {
        case 0: return .bucket(bucket)
        case 1 where after[0] == "objects": return .objects(bucket)
        case 1 where after[0] == "query": return .query(bucket)
        default: break
        }
        if after[0] == "acl" { return acl(.bucket(bucket), after) }
        guard after[0] == "objects" else { return nil }
        let id = after[1]
        let objectTail = Array(after.dropFirst(2))
        switch objectTail.count {
        case 0: return .object(bucket, id: id)
        case 1 where objectTail[0] == "body": return .body(bucket, id: id)
        default: return acl(.object(bucket, id: id), objectTail)
        }
    }
}
