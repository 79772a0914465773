public import Foundation
import MBaaSCore

/// An NCMB endpoint, both ways: a client builds its method and path, a server parses a request's path into one.
///
/// Paths are below the API version (`/2013-09-01`), percent-encoded on the wire: ``path`` encodes each segment,
/// ``init(method:path:apiVersion:)`` decodes them. A trailing slash is tolerated when parsing (`/classes/Memo/`).
///
/// | route | method | path |
/// |---|---|---|
/// | ``objects(_:)`` | GET (query), POST (create) | `/classes/{class}`, `/users`, `/roles`, `/installations`, `/push` |
/// | ``object(_:id:)`` | GET, PUT, DELETE | `/classes/{class}/{id}`, `/users/{id}`, … |
/// | ``login`` | POST (JSON body), GET (legacy: `userName`/`mailAddress` and `password` in the query) | `/login` |
/// | ``logout`` | GET | `/logout` |
/// | ``files`` | GET (list) | `/files` |
/// | ``file(_:)`` | GET (download), POST (upload, multipart), PUT (ACL), DELETE | `/files/{name}` |
/// | ``requestPasswordReset`` | POST | `/requestPasswordReset` |
/// | ``batch`` | POST | `/batch` (no such public endpoint: a server answers it E404002; listed so it can say so) |
public enum NCMBRoute: Sendable, Hashable {
    case objects(NCMBClassName)
    case object(NCMBClassName, id: String)
    case login
    case logout
    case files
    case file(String)
    case requestPasswordReset
    case batch

    /// The path below the API version, percent-encoded.
    public var path: String {
        switch self {
        case .objects(let cls): cls.collectionPath
        case .object(let cls, let id): cls.collectionPath + "/" + percentEncode(id)
        case .login: "/login"
        case .logout: "/logout"
        case .files: "/files"
        case .file(let name): "/files/" + percentEncode(name)
        case .requestPasswordReset: "/requestPasswordReset"
        case .batch: "/batch"
        }
    }

    /// The full path on the wire: `/2013-09-01/classes/Memo`.
    public func fullPath(apiVersion: String = NCMBWire.apiVersion) -> String { "/\(apiVersion)\(path)" }

    /// Parses a request path (percent-encoded, as received, without the query). `nil` when the path is not under
    /// `/{apiVersion}/` or names no NCMB endpoint; the caller answers E404002 ("None service.") then.
    public init?(path rawPath: String, apiVersion: String = NCMBWire.apiVersion) {
        // Read as bytes: every request is routed (the emulator routes each one twice), and splitting into `String`s
        // and comparing them as text was 5% of a record GET's samples under load.
        let utf8 = rawPath.utf8, version = apiVersion.utf8
        guard utf8.count > version.count + 1, utf8.first == UInt8(ascii: "/"), utf8.dropFirst().starts(with: version),
              utf8[utf8.index(utf8.startIndex, offsetBy: version.count + 1)] == UInt8(ascii: "/") else { return nil }
        var segments: [Substring] = []
        for raw in utf8.dropFirst(version.count + 2).split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            if raw.contains(0x25) {
                guard let decoded = percentDecode(String(Substring(raw))) else { return nil }
                segments.append(Substring(decoded))
            } else {
                segments.append(Substring(raw))
            }
        }
        if segments.last?.isEmpty == true { segments.removeLast() }  // trailing slash
        guard !segments.isEmpty, !segments.contains(where: \.isEmpty) else { return nil }
        func collection(_ cls: NCMBClassName) -> NCMBRoute? {
            switch segments.count {
            case 1: .objects(cls)
            case 2: .object(cls, id: String(segments[1]))
            default: nil
            }
        }
        let first = segments[0].utf8
        func named(_ word: String) -> Bool { first.elementsEqual(word.utf8) }
        if named("classes") {
            guard segments.count >= 2, segments.count <= 3 else { return nil }
            let cls = NCMBClassName(String(segments[1]))
            // `/classes/user` is not the user endpoint: built-in classes have their own paths.
            guard case .custom = cls else { return nil }
            self = segments.count == 2 ? .objects(cls) : .object(cls, id: String(segments[2]))
        } else if named("users") {
            guard let r = collection(.user) else { return nil }; self = r
        } else if named("roles") {
            guard let r = collection(.role) else { return nil }; self = r
        } else if named("installations") {
            guard let r = collection(.installation) else { return nil }; self = r
        } else if named("push") {
            guard let r = collection(.push) else { return nil }; self = r
        } else if named("files") {
            switch segments.count {
            case 1: self = .files
            case 2: self = .file(String(segments[1]))
            default: return nil
            }
        } else if segments.count == 1, named("login") {
            self = .login
        } else if segments.count == 1, named("logout") {
            self = .logout
        } else if segments.count == 1, named("requestPasswordReset") {
            self = .requestPasswordReset
        } else if segments.count == 1, named("batch") {
            self = .batch
        } else {
            return nil
        }
    }
}

/// Decoded query parameters of a URL, in order (`+` is a plus sign, as NCMB clients percent-encode spaces).
public func ncmbQueryItems(of url: URL) -> [(String, String)] {
    guard let query = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedQuery, !query.isEmpty else {
        return []
    }
    return query.split(separator: "&", omittingEmptySubsequences: true).map { item in
        let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        let name = percentDecode(String(parts[0])) ?? String(parts[0])
        let value = parts.count > 1 ? (percentDecode(String(parts[1])) ?? String(parts[1])) : ""
        return (name, value)
    }
}
