/// Who may read and write a record or file.
///
/// Neutral JSON (the shape most vendors share):
/// `{"*":{"read":true},"<userId>":{"read":true,"write":true},"role:Admins":{"read":true},"group:<id>":{"write":true}}`.
/// A principal absent from the ACL has no access. A record with no ACL (`nil`) is public read/write: backends
/// that cannot express some part of an ACL say so in ``Capabilities`` and throw ``MBaaSError/Kind/unsupported``.
public struct ACL: Sendable, Hashable, Codable {
    /// Someone an ACL grants access to.
    public enum Principal: Sendable, Hashable, Comparable {
        case everyone
        case user(String)
        case role(String)
        case group(String)

        /// `*`, the user id, `role:NAME` or `group:ID`.
        public var key: String {
            switch self {
            case .everyone: "*"
            case .user(let id): id
            case .role(let name): "role:\(name)"
            case .group(let id): "group:\(id)"
            }
        }

        public init(key: String) {
            if key == "*" { self = .everyone }
            else if key.hasPrefix("role:") { self = .role(String(key.dropFirst(5))) }
            else if key.hasPrefix("group:") { self = .group(String(key.dropFirst(6))) }
            else { self = .user(key) }
        }

        public static func < (a: Principal, b: Principal) -> Bool { a.key < b.key }
    }

    /// What a principal may do.
    public struct Access: Sendable, Hashable, Codable {
        public var read: Bool
        public var write: Bool
        public init(read: Bool = false, write: Bool = false) {
            self.read = read
            self.write = write
        }
        public static let read = Access(read: true)
        public static let write = Access(write: true)
        public static let readWrite = Access(read: true, write: true)
    }

    public var entries: [Principal: Access]

    public init(_ entries: [Principal: Access] = [:]) { self.entries = entries }

    /// Readable and writable by everyone.
    public static let publicReadWrite = ACL([.everyone: .readWrite])
    /// Readable by everyone, writable by the owner only.
    public static func publicRead(owner: String) -> ACL { ACL([.everyone: .read, .user(owner): .readWrite]) }
    /// Readable and writable by the owner only.
    public static func privateTo(_ owner: String) -> ACL { ACL([.user(owner): .readWrite]) }

    public subscript(principal: Principal) -> Access {
        get { entries[principal] ?? Access() }
        set { entries[principal] = (newValue.read || newValue.write) ? newValue : nil }
    }

    /// Whether a user, with the given roles and groups, may read.
    public func canRead(user: String?, roles: [String] = [], groups: [String] = []) -> Bool {
        allows(user: user, roles: roles, groups: groups) { $0.read }
    }

    /// Whether a user, with the given roles and groups, may write.
    public func canWrite(user: String?, roles: [String] = [], groups: [String] = []) -> Bool {
        allows(user: user, roles: roles, groups: groups) { $0.write }
    }

    private func allows(user: String?, roles: [String], groups: [String], _ check: (Access) -> Bool) -> Bool {
        if check(self[.everyone]) { return true }
        if let user, check(self[.user(user)]) { return true }
        if roles.contains(where: { check(self[.role($0)]) }) { return true }
        return groups.contains(where: { check(self[.group($0)]) })
    }

    /// Why this ACL would lock everyone out, or `nil` if it is usable: an ACL that grants nothing (`{}`,
    /// `{"*":{}}`, only `false` grants) or names a principal with an empty name (`""`, `role:`, `group:`).
    /// Backends without a master key (the embedded store) refuse such ACLs with `invalidRequest`, since no one
    /// could read, change or delete the record afterwards.
    public var usabilityProblem: String? {
        if let empty = entries.keys.first(where: { p in
            switch p {
            case .everyone: false
            case .user(let id): id.isEmpty
            case .role(let name): name.isEmpty
            case .group(let id): id.isEmpty
            }
        }) {
            return "acl names an empty principal '\(empty.key)'"
        }
        if !entries.values.contains(where: { $0.read || $0.write }) {
            return "acl grants nothing to anyone (\(json.printed())): nobody could read, change or delete it; give at least one principal read or write"
        }
        return nil
    }

    // MARK: Neutral JSON

    /// The neutral JSON form, keys sorted, only `true` grants printed.
    public var json: JSON {
        var object = JSONObject()
        for principal in entries.keys.sorted() {
            let access = entries[principal]!
            var grant = JSONObject()
            if access.read { grant["read"] = true }
            if access.write { grant["write"] = true }
            if !grant.isEmpty { object[principal.key] = .object(grant) }
        }
        return .object(object)
    }

    /// Reads the neutral JSON form. Anything but an object of `{"read":Bool,"write":Bool}` objects is an error.
    public init(json: JSON) throws(MBaaSError) {
        guard let object = json.objectValue else { throw MBaaSError(.invalidRequest, "acl must be an object") }
        var entries: [Principal: Access] = [:]
        for (key, value) in object {
            guard let grant = value.objectValue else {
                throw MBaaSError(.invalidRequest, "acl.\(key) must be an object like {\"read\":true}")
            }
            var access = Access()
            for (verb, flag) in grant {
                guard let flag = flag.boolValue else { throw MBaaSError(.invalidRequest, "acl.\(key).\(verb) must be a boolean") }
                switch verb {
                case "read": access.read = flag
                case "write": access.write = flag
                default: throw MBaaSError(.invalidRequest, "acl.\(key): unknown permission '\(verb)' (read, write)")
                }
            }
            if access.read || access.write { entries[Principal(key: key)] = access }
        }
        self.entries = entries
    }

    public init(from decoder: any Decoder) throws { try self.init(json: JSON(from: decoder)) }
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}
