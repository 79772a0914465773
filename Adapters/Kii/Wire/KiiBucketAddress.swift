public import MBaaSCore

/// The owner of a Kii bucket: the app, a user, a group or a thing (kii.md §3.1).
public enum KiiScope: Sendable, Hashable {
    /// App scope: `/apps/{appID}/buckets/{bucket}`.
    case app
    /// User scope: `me` (the logged-in user), a user ID, or a selector such as `LOGIN_NAME:alice`,
    /// `EMAIL:a@example.com`, `PHONE:+819012341234` (kii.md §1.2).
    case user(String)
    /// Group scope, by group ID.
    case group(String)
    /// Thing scope, by thing ID or `VENDOR_THING_ID:...`.
    case thing(String)

    /// The URL path of the scope under `/apps/{appID}`, segments percent-encoded: ``""``, `/users/me`, ...
    public var pathSuffix: String {
        switch self {
        case .app: ""
        case .user(let id): "/users/" + percentEncodeSegment(id)
        case .group(let id): "/groups/" + percentEncodeSegment(id)
        case .thing(let id): "/things/" + percentEncodeSegment(id)
        }
    }
}

/// A bucket in a scope, addressed by a neutral class name.
///
/// # Class-name syntax
/// A core class name (``Record/className``, ``Query/className``) names a Kii bucket and its scope. Only this adapter
/// parses it; the core sees an ordinary string.
///
/// | class name | Kii bucket |
/// |---|---|
/// | `Memo` | app scope: `/apps/{appID}/buckets/Memo` |
/// | `users/me/Memo` | the logged-in user's bucket: `/apps/{appID}/users/me/buckets/Memo` |
/// | `users/{userID}/Memo`, `users/LOGIN_NAME:alice/Memo` | another user's bucket (user selectors of kii.md §1.2) |
/// | `groups/{groupID}/Memo` | a group's bucket: `/apps/{appID}/groups/{groupID}/buckets/Memo` |
/// | `things/{thingID}/Memo` | a thing's bucket |
///
/// The Kii URL form with `buckets/` (`users/me/buckets/Memo`) is accepted too. A bucket name is 2-64 characters
/// of `A-Z a-z 0-9 _ -`, does not start with `_` and is none of Kii's reserved names (`users`, `devices`,
/// `installations`, `internal`, `things`); `CRYPTO:Memo` names an encrypted bucket (kii.md §3.1). Anything else
/// is ``MBaaSError/Kind/invalidRequest`` with the reason.
public struct KiiBucketAddress: Sendable, Hashable, CustomStringConvertible {
    public var scope: KiiScope
    /// The bucket ID, including a `CRYPTO:` prefix for encrypted buckets.
    public var bucket: String

    public init(scope: KiiScope = .app, bucket: String) {
        self.scope = scope
        self.bucket = bucket
    }

    /// Bucket names Kii reserves (kii.md §3.1).
    public static let reservedBucketNames: Set<String> = ["users", "devices", "installations", "internal", "things"]

    /// Parses a class name in the syntax above.
    public init(className: String) throws(MBaaSError) {
        let parts = className.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        func bad(_ why: String) -> MBaaSError {
            MBaaSError(.invalidRequest, "Kii class name '\(className)': \(why) (use 'Bucket', 'users/me/Bucket', "
                + "'users/{userID}/Bucket', 'groups/{groupID}/Bucket' or 'things/{thingID}/Bucket')")
        }
        var scope = KiiScope.app
        var bucketPart: String
        switch parts.count {
        case 1:
            bucketPart = parts[0]
        case 3, 4:
            let owner = parts[1]
            guard !owner.isEmpty else { throw bad("the scope owner is empty") }
            guard owner != ".", owner != ".." else { throw bad("the scope owner '\(owner)' is not an id") }
            switch parts[0] {
            case "users": scope = .user(owner)
            case "groups": scope = .group(owner)
            case "things": scope = .thing(owner)
            default: throw bad("unknown scope '\(parts[0])'")
            }
            if parts.count == 4 {
                guard parts[2] == "buckets" else { throw bad("expected 'buckets' before the bucket name") }
                bucketPart = parts[3]
            } else {
                bucketPart = parts[2]
            }
        default:
            throw bad("too many or too few '/' separators")
        }
        if let reason = KiiBucketAddress.problem(withBucketName: bucketPart) { throw bad(reason) }
        self.init(scope: scope, bucket: bucketPart)
    }

    /// Why a bucket name is not valid on Kii, or `nil` when it is.
    public static func problem(withBucketName name: String) -> String? {
        let plain = name.hasPrefix("CRYPTO:") ? String(name.dropFirst(7)) : name
        guard (2...64).contains(plain.count) else { return "a bucket name has 2 to 64 characters, '\(plain)' has \(plain.count)" }
        guard plain.unicodeScalars.allSatisfy({ c in
            ("a"..."z").contains(c) || ("A"..."Z").contains(c) || ("0"..."9").contains(c) || c == "_" || c == "-"
        }) else { return "a bucket name may hold only A-Z a-z 0-9 _ -, got '\(plain)'" }
        guard !plain.hasPrefix("_") else { return "a bucket name may not start with '_'" }
        guard !reservedBucketNames.contains(plain) else { return "'\(plain)' is a reserved bucket name" }
        return nil
    }

    /// The canonical class name (`Memo`, `users/me/Memo`, `groups/g1/Memo`).
    public var className: String {
        switch scope {
        case .app: bucket
        case .user(let id): "users/\(id)/\(bucket)"
        case .group(let id): "groups/\(id)/\(bucket)"
        case .thing(let id): "things/\(id)/\(bucket)"
        }
    }

    public var description: String { className }

    /// Whether the address needs a logged-in user (`users/me/...`).
    public var needsUserToken: Bool { scope == .user("me") }

    /// The bucket's path relative to the API base: `/apps/{appID}[/users/{id}]/buckets/{bucket}`.
    public func path(appID: String) -> String {
        "/apps/" + percentEncodeSegment(appID) + scope.pathSuffix + "/buckets/" + percentEncodeSegment(bucket)
    }

    /// An object's path: `{bucket}/objects/{id}`.
    public func objectPath(appID: String, objectID: String) -> String {
        path(appID: appID) + "/objects/" + percentEncodeSegment(objectID)
    }
}

/// Percent-encodes a path segment, keeping `:` (Kii's selectors `UserID:..`, `LOGIN_NAME:..`, `CRYPTO:..` are
/// written with a literal colon in Kii's documentation and SDKs) and the RFC 3986 unreserved characters.
func percentEncodeSegment(_ s: String) -> String {
    s.split(separator: ":", omittingEmptySubsequences: false).map { percentEncode(String($0)) }.joined(separator: ":")
}
