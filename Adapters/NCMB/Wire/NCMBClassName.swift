public import MBaaSCore

/// NCMB's built-in classes and how the neutral class names map onto them.
///
/// | neutral name | NCMB name | endpoint |
/// |---|---|---|
/// | `_User` (or `user`) | `user` | `/users` |
/// | `_Role` (or `role`) | `role` | `/roles` |
/// | `_Installation` (or `installation`) | `installation` | `/installations` |
/// | `_Push` (or `push`) | `push` | `/push` |
/// | `_File` (or `file`) | `file` | `/files` (metadata; read and query only: use the ``FileStore`` API to write) |
/// | any other name | the same | `/classes/{name}` |
///
/// The neutral names are the Parse-style `_User`/`_Role`/... that other adapters and migration bundles use; NCMB's
/// own lowercase names are accepted as well. Records come back with the class name the caller used; pointers read
/// from NCMB (`{"__type":"Pointer","className":"user"}`) come back with the neutral name (`_User`).
public enum NCMBClassName: Sendable, Hashable {
    case user, role, installation, push, file
    case custom(String)

    /// Parses a neutral or NCMB class name.
    public init(_ name: String) {
        switch name {
        case "_User", "user": self = .user
        case "_Role", "role": self = .role
        case "_Installation", "installation": self = .installation
        case "_Push", "push": self = .push
        case "_File", "file": self = .file
        default: self = .custom(name)
        }
    }

    /// The name NCMB uses in pointers, `$inQuery` and `$relatedTo`.
    public var wireName: String {
        switch self {
        case .user: "user"
        case .role: "role"
        case .installation: "installation"
        case .push: "push"
        case .file: "file"
        case .custom(let name): name
        }
    }

    /// The neutral name (`_User`, ..., or the custom name).
    public var neutralName: String {
        switch self {
        case .user: "_User"
        case .role: "_Role"
        case .installation: "_Installation"
        case .push: "_Push"
        case .file: "_File"
        case .custom(let name): name
        }
    }

    /// The collection path below the API version, percent-encoded: `/users`, `/classes/Memo`.
    public var collectionPath: String {
        switch self {
        case .user: "/users"
        case .role: "/roles"
        case .installation: "/installations"
        case .push: "/push"
        case .file: "/files"
        case .custom(let name): "/classes/" + percentEncode(name)
        }
    }

    public var isBuiltIn: Bool { if case .custom = self { false } else { true } }

    /// Checks a class name before it goes on the wire: built-in names, or letters, digits, `_` and `-` starting
    /// with a letter or digit. Anything else is ``MBaaSError/Kind/invalidRequest``.
    public static func validate(_ name: String) throws(MBaaSError) -> NCMBClassName {
        let cls = NCMBClassName(name)
        guard case .custom = cls else { return cls }
        let allowed = name.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "-"
        }
        guard let first = name.unicodeScalars.first, allowed, first != "_", first != "-", name.count <= 100 else {
            throw MBaaSError(.invalidRequest, "'\(name)' is not a valid NCMB class name (letters, digits, '_' and '-', starting with a letter or digit)")
        }
        return cls
    }

    /// The neutral name for a class name read from the wire.
    public static func neutral(fromWire name: String) -> String { NCMBClassName(name).neutralName }
    /// The wire name for a neutral (or NCMB) class name.
    public static func wire(fromNeutral name: String) -> String { NCMBClassName(name).wireName }
}
