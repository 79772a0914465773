/// The input rules every server store of this package applies (the embedded SQLite store and PostgreSQL), so a
/// record one store accepts the other accepts too and a migration between them never meets a refusal it could not
/// foresee.
///
/// Each check throws ``MBaaSError/Kind/invalidRequest`` naming the problem, before anything is written. A store that
/// cannot hold something the rules allow adds its own refusal through ``Limits`` (PostgreSQL's `jsonb` holds no NUL
/// character), never by loosening a rule.
public enum StoreValidation {
    /// What a store cannot hold beyond the shared rules.
    public struct Limits: Sendable, Hashable {
        /// Whether strings and object member names may contain U+0000.
        public var allowsNULInStrings: Bool
        /// Why a NUL is refused where ``allowsNULInStrings`` is `false` (said in the error).
        public var nulReason: String

        public init(allowsNULInStrings: Bool = true, nulReason: String = "") {
            self.allowsNULInStrings = allowsNULInStrings
            self.nulReason = nulReason
        }

        /// No limit beyond the shared rules.
        public static let none = Limits()
    }

    /// The longest class name accepted.
    public static let maxClassNameLength = 64

    /// Class names are `[A-Za-z_][A-Za-z0-9_]*`, at most 64 characters (a leading `_` for the Parse-style names of
    /// built-in classes other backends use, such as `_Installation`).
    public static func className(_ name: String) throws(MBaaSError) {
        let bytes = name.utf8
        guard let first = bytes.first, isLetter(first) || first == UInt8(ascii: "_"), bytes.count <= maxClassNameLength,
              bytes.allSatisfy({ isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "_") })
        else {
            throw MBaaSError(.invalidRequest,
                             "invalid class name '\(name)': use [A-Za-z_][A-Za-z0-9_]*, at most \(maxClassNameLength) characters")
        }
    }

    /// Record ids (generated or given by the client): 1 to 128 of `[A-Za-z0-9_.-]`.
    public static func recordId(_ id: String) throws(MBaaSError) {
        let bytes = id.utf8
        guard !bytes.isEmpty, bytes.count <= 128, bytes.allSatisfy(isNameByte) else {
            throw MBaaSError(.invalidRequest, "invalid record id '\(id)': use 1 to 128 of [A-Za-z0-9_.-]").refusing(MBaaSError.recordIdKey)
        }
    }

    /// A top-level field name: not reserved, not empty, no `.` (dots address nested keys in queries), no leading
    /// `$` (query operators), no `"` or control characters, at most 128 characters.
    public static func fieldName(_ name: String) throws(MBaaSError) {
        if Record.reservedFieldNames.contains(name) {
            throw MBaaSError(.invalidRequest,
                             "field name '\(name)' is reserved for record metadata (\(Record.reservedFieldNames.sorted().joined(separator: ", ")))")
        }
        // On the UTF-8 bytes: '.', '"' and control characters are single bytes there, and never part of a longer
        // sequence; a name of at most 128 bytes has at most 128 characters (only longer ones are counted).
        let utf8 = name.utf8
        guard let first = utf8.first, first != UInt8(ascii: "$"),
              !utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "\"") || $0 < 0x20 }),
              utf8.count <= 128 || name.count <= 128
        else {
            throw MBaaSError(.invalidRequest,
                             "invalid field name '\(name)': must be 1 to 128 characters without '.', '\"', control characters or a leading '$'")
        }
    }

    /// An expected version: these stores number versions 1, 2, 3…, so anything else (`abc`) can never match and is
    /// refused as input, not answered with a conflict.
    public static func version(_ text: String) throws(MBaaSError) {
        guard let n = UInt64(text), n >= 1, n <= UInt64(Int64.max) else {
            throw MBaaSError(.invalidRequest, "expected version '\(text)' is not a version of this store (versions are whole numbers from 1, as printed in a record's \"version\")")
        }
    }

    /// A value that can be stored and read back exactly: finite numbers, GeoPoints in range, Pointers to a valid
    /// class name, no plain object with a `__type` member (it would read back as a typed value), and what `limits`
    /// adds.
    public static func value(_ value: Value, path: String, limits: Limits = .none) throws(MBaaSError) {
        switch value {
        case .pointer(let p):
            do { try className(p.className) } catch { throw MBaaSError(.invalidRequest, "\(path): Pointer: \(error.message)") }
        case .double(let d) where !d.isFinite:
            throw MBaaSError(.invalidRequest, "\(path): \(d) cannot be stored (numbers must be finite)")
        case .geoPoint(let g) where !(-90...90).contains(g.latitude) || !(-180...180).contains(g.longitude):
            throw MBaaSError(.invalidRequest, "\(path): GeoPoint out of range (\(g.latitude), \(g.longitude))")
        case .string(let s) where !limits.allowsNULInStrings && s.utf8.contains(0):
            throw MBaaSError(.invalidRequest, "\(path): a string with a NUL character cannot be stored (\(limits.nulReason))")
        case .array(let items):
            for (i, item) in items.enumerated() { try self.value(item, path: "\(path)[\(i)]", limits: limits) }
        case .object(let members):
            if members["__type"] != nil {
                throw MBaaSError(.invalidRequest, "\(path): an object member named '__type' is reserved for typed values")
            }
            for (k, v) in members {
                if !limits.allowsNULInStrings && k.utf8.contains(0) {
                    throw MBaaSError(.invalidRequest, "\(path): a member name with a NUL character cannot be stored (\(limits.nulReason))")
                }
                try self.value(v, path: "\(path).\(k)", limits: limits)
            }
        default:
            break
        }
    }

    /// Checks every field name and value of a record's fields.
    public static func fields(_ fields: [String: Value], limits: Limits = .none) throws(MBaaSError) {
        for (name, value) in fields {
            try fieldName(name)
            try self.value(value, path: name, limits: limits)
        }
    }

    /// Role and group names: 1 to 64 of `[A-Za-z0-9_.-]`, so they embed safely in ACL keys.
    public static func principalName(_ name: String, kind: String) throws(MBaaSError) {
        let bytes = name.utf8
        guard !bytes.isEmpty, bytes.count <= 64, bytes.allSatisfy(isNameByte) else {
            throw MBaaSError(.invalidRequest, "invalid \(kind) name '\(name)': use 1 to 64 of [A-Za-z0-9_.-]")
        }
    }

    /// Refuses a key holding NUL (U+0000) before it reaches SQLite: GRDB binds a `String` as a C string, which ends
    /// at the first NUL, so `"a\u{0}x"` and `"a\u{0}y"` would both be looked up, written or deleted as `"a"`.
    /// `what` names the key in the message (`record id`, `file name`).
    public static func noNUL(_ key: String, _ what: String) throws(MBaaSError) {
        if key.utf8.contains(0) {
            throw MBaaSError(.invalidRequest, "\(what) '\(key.split(separator: "\u{0}", omittingEmptySubsequences: false).joined(separator: "\\u0000"))' holds NUL (U+0000), which SQLite would cut it at; nothing was done with it")
        }
    }

    /// File names: any Unicode, 1 to 1024 characters, no NUL.
    public static func fileName(_ name: String) throws(MBaaSError) {
        guard !name.isEmpty, name.count <= 1024, !name.unicodeScalars.contains("\u{0}") else {
            throw MBaaSError(.invalidRequest, "invalid file name '\(name)': must be 1 to 1024 characters without NUL")
        }
    }

    /// User names: 1 to 128 characters without control characters.
    public static func userName(_ username: String) throws(MBaaSError) {
        guard !username.isEmpty, username.count <= 128, !username.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
            throw MBaaSError(.invalidRequest, "the user name must be 1 to 128 characters without control characters")
        }
    }

    private static func isLetter(_ b: UInt8) -> Bool { (65...90).contains(b) || (97...122).contains(b) }
    private static func isDigit(_ b: UInt8) -> Bool { (48...57).contains(b) }
    private static func isNameByte(_ b: UInt8) -> Bool {
        isLetter(b) || isDigit(b) || b == UInt8(ascii: "_") || b == UInt8(ascii: "-") || b == UInt8(ascii: ".")
    }
}
