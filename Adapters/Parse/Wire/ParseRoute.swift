import Foundation
import MBaaSCore

/// A Parse Server endpoint, both ways: a client builds its method and path, a server parses a request path into
/// one.
///
/// Paths are below the mount point (`/parse` by default; `/1` in parse-server's own specs), percent-encoded on the
/// wire: ``path`` encodes each segment, ``init(path:mount:)`` decodes them. The built-in classes have their own
/// collections: `_User` is `/users`, `_Role` is `/roles`, `_Session` is `/sessions` (`/classes/_User` is accepted
/// when parsing and read as `/users`).
///
/// | route | method | path |
/// |---|---|---|
/// | ``objects(_:)`` | GET (query), POST (create) | `/classes/{class}`, `/users`, `/roles`, `/sessions` |
/// | ``object(_:id:)`` | GET, PUT, DELETE | `/classes/{class}/{id}`, `/users/{id}`, … |
/// | ``me`` | GET | `/users/me` |
/// | ``login`` | POST (JSON body), GET (legacy, query) | `/login` |
/// | ``logout`` | POST | `/logout` |
/// | ``requestPasswordReset`` | POST | `/requestPasswordReset` |
/// | ``batch`` | POST | `/batch` |
/// | ``file(_:)`` | POST (upload, raw body), DELETE (master key) | `/files/{name}` |
/// | ``schemas`` | GET (master key) | `/schemas` |
public enum ParseRoute: Sendable, Hashable {
    case objects(String)
    case object(String, id: String)
    case me
    case login
    case logout
    case requestPasswordReset
    case batch
    case file(String)
    case schemas

    /// The collection path of a class: `/users`, `/roles`, `/sessions`, else `/classes/{class}`.
    public static func collectionPath(_ className: String) -> String {
        switch className {
        case ParseWire.userClass: "/users"
        case ParseWire.roleClass: "/roles"
        case ParseWire.sessionClass: "/sessions"
        default: "/classes/" + percentEncode(className)
        }
    }

    /// The path below the mount point, percent-encoded.
    public var path: String {
        switch self {
        case .objects(let c): ParseRoute.collectionPath(c)
        case .object(let c, let id): ParseRoute.collectionPath(c) + "/" + percentEncode(id)
        case .me: "/users/me"
        case .login: "/login"
        case .logout: "/logout"
        case .requestPasswordReset: "/requestPasswordReset"
        case .batch: "/batch"
        case .file(let name): "/files/" + percentEncode(name)
        case .schemas: "/schemas"
        }
    }

    /// The full path on the wire: `{mount}{path}` (`/parse/classes/GameScore`). Batch sub-request paths take
    /// this form too: parse-server routes them only with the mount prefix (parse.md, Batch).
    public func fullPath(mount: String = ParseWire.defaultMount) -> String { ParseWire.normalizeMount(mount) + path }

    /// Parses a request path (percent-encoded, without the query). `nil` when it is not under the mount point
    /// or names no endpoint here.
    public init?(path rawPath: String, mount: String = ParseWire.defaultMount) {
        let prefix = ParseWire.normalizeMount(mount) + "/"
        guard rawPath.hasPrefix(prefix) else { return nil }
        var segments: [String] = []
        for raw in rawPath.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false) {
            guard let s = percentDecode(String(raw)) else { return nil }
            segments.append(s)
        }
        if segments.last == "" { segments.removeLast() }
        guard !segments.isEmpty, !segments.contains("") else { return nil }
        func collection(_ cls: String, _ rest: ArraySlice<String>) -> ParseRoute? {
            switch rest.count {
            case 0: .objects(cls)
            case 1 where cls == ParseWire.userClass && rest.first == "me": .me
            case 1: .object(cls, id: rest.first!)
            default: nil
            }
        }
        let route: ParseRoute?
        switch segments[0] {
        case "classes" where segments.count >= 2: route = collection(segments[1], segments.dropFirst(2))
        case "users": route = collection(ParseWire.userClass, segments.dropFirst())
        case "roles": route = collection(ParseWire.roleClass, segments.dropFirst())
        case "sessions": route = collection(ParseWire.sessionClass, segments.dropFirst())
        case "login" where segments.count == 1: route = .login
        case "logout" where segments.count == 1: route = .logout
        case "requestPasswordReset" where segments.count == 1: route = .requestPasswordReset
        case "batch" where segments.count == 1: route = .batch
        case "files" where segments.count == 2: route = .file(segments[1])
        case "schemas" where segments.count == 1: route = .schemas
        default: route = nil
        }
        guard let route else { return nil }
        self = route
    }
}
