public import Foundation

extension Capabilities.Feature {
    /// ``BackendAdministration/listClasses()`` names every class that holds records.
    public static let listClasses: Capabilities.Feature = "listClasses"
    /// ``BackendAdministration/listUsers(after:limit:)`` and ``BackendAdministration/listRoles()`` read the whole user
    /// directory (with administrative credentials where the vendor requires them).
    public static let listUsers: Capabilities.Feature = "listUsers"
    /// ``BackendAdministration/importUser(_:password:)`` and ``BackendAdministration/importRole(_:)`` create users and
    /// roles as an administrator (no sign-up, no log-in), for migrations.
    public static let importUsers: Capabilities.Feature = "importUsers"
    /// ``BackendAdministration/importUser(_:password:)`` keeps the user's custom ``DirectoryUser/fields`` (and so a
    /// migration's source-id field), and the directory gives them back. A backend that imports users without it
    /// keeps only what its own user record holds (declared in its note); a migration says so and verifies users by
    /// user name (and e-mail, where the backend keeps it: ``userEmail``) alone.
    public static let userFields: Capabilities.Feature = "userFields"
    /// ``BackendAdministration/importUser(_:password:)`` keeps the user's ``DirectoryUser/email``, and the directory
    /// gives it back. A backend that imports users without it (its users have no e-mail address) says
    /// so in its note, and names a user who has only an e-mail address by it; a migration says so in its plan and
    /// verifies users by user name alone (that address, for those).
    public static let userEmail: Capabilities.Feature = "userEmail"
    /// ``ObjectStore/create(_:)`` keeps a record's own `id` (any id another backend produced).
    public static let clientIds: Capabilities.Feature = "clientIds"
    /// ``ObjectStore/create(_:)`` keeps a record's own `createdAt` and `updatedAt`.
    public static let clientTimestamps: Capabilities.Feature = "clientTimestamps"
    /// The backend only reads: every write is `unsupported` (an export on disk, a snapshot).
    public static let readOnly: Capabilities.Feature = "readOnly"
}

/// A user as an administrator reads and writes it: identity, contact, memberships and custom fields, never a
/// password or a password hash.
///
/// Neutral JSON (a line of a bundle's `users.ndjson`):
/// `{"id":"..","username":"..","email":"..","emailVerified":true,"createdAt":"..","updatedAt":"..","roles":[..],"groups":[..],"acl":{..},"fields":{..}}`.
public struct DirectoryUser: Sendable, Hashable {
    public var id: String
    public var username: String?
    public var email: String?
    public var emailVerified: Bool?
    public var createdAt: Date?
    public var updatedAt: Date?
    /// Names of the roles the user belongs to.
    public var roles: [String]
    /// Ids of the groups the user belongs to.
    public var groups: [String]
    public var acl: ACL?
    /// Custom fields (vendor system fields such as `authData` or password hashes are left out by adapters).
    public var fields: [String: Value]

    public init(
        id: String, username: String? = nil, email: String? = nil, emailVerified: Bool? = nil, createdAt: Date? = nil,
        updatedAt: Date? = nil, roles: [String] = [], groups: [String] = [], acl: ACL? = nil, fields: [String: Value] = [:]
    ) {
        self.id = id
        self.username = username
        self.email = email
        self.emailVerified = emailVerified
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.roles = roles
        self.groups = groups
        self.acl = acl
        self.fields = fields
    }

    public var json: JSON {
        var o: JSONObject = ["id": .string(id)]
        if let username { o["username"] = .string(username) }
        if let email { o["email"] = .string(email) }
        if let emailVerified { o["emailVerified"] = .bool(emailVerified) }
        if let createdAt { o["createdAt"] = .string(ISO8601.format(createdAt)) }
        if let updatedAt { o["updatedAt"] = .string(ISO8601.format(updatedAt)) }
        o["roles"] = .array(roles.map(JSON.string))
        o["groups"] = .array(groups.map(JSON.string))
        if let acl { o["acl"] = acl.json }
        o["fields"] = .object(JSONObject(sorting: fields.mapValues(\.json)))
        return .object(o)
    }

    /// Reads the neutral JSON form; errors name the member.
    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue else { throw MBaaSError(.invalidRequest, "a user must be a JSON object") }
        guard let id = o["id"]?.stringValue, !id.isEmpty else { throw MBaaSError(.invalidRequest, "user.id must be a non-empty string") }
        func optionalString(_ key: String) throws(MBaaSError) -> String? {
            guard let v = o[key], !v.isNull else { return nil }
            guard let s = v.stringValue else { throw MBaaSError(.invalidRequest, "user.\(key) must be a string") }
            return s
        }
        func date(_ key: String) throws(MBaaSError) -> Date? {
            guard let s = try optionalString(key) else { return nil }
            guard let d = ISO8601.parse(s) else { throw MBaaSError(.invalidRequest, "user.\(key) must be an ISO-8601 string") }
            return d
        }
        func strings(_ key: String) throws(MBaaSError) -> [String] {
            guard let v = o[key], !v.isNull else { return [] }
            guard let a = v.arrayValue else { throw MBaaSError(.invalidRequest, "user.\(key) must be an array of strings") }
            var out: [String] = []
            for item in a {
                guard let s = item.stringValue else { throw MBaaSError(.invalidRequest, "user.\(key) must be an array of strings") }
                out.append(s)
            }
            return out
        }
        var fields: [String: Value] = [:]
        if let f = o["fields"], !f.isNull {
            guard let fo = f.objectValue else { throw MBaaSError(.invalidRequest, "user.fields must be an object") }
            for (k, v) in fo { fields[k] = try Value(json: v, path: "user.fields.\(k)") }
        }
        var verified: Bool?
        if let v = o["emailVerified"], !v.isNull {
            guard let b = v.boolValue else { throw MBaaSError(.invalidRequest, "user.emailVerified must be a boolean") }
            verified = b
        }
        self.init(
            id: id, username: try optionalString("username"), email: try optionalString("email"), emailVerified: verified,
            createdAt: try date("createdAt"), updatedAt: try date("updatedAt"), roles: try strings("roles"),
            groups: try strings("groups"), acl: try o["acl"].flatMap { a throws(MBaaSError) in a.isNull ? nil : try ACL(json: a) },
            fields: fields)
    }
}

/// A role (or group) with its members, as an administrator reads and writes it.
///
/// Neutral JSON (a line of a bundle's `roles.ndjson`): `{"name":"Admins","id":"..","users":[userId..],"roles":[childRole..],"acl":{..}}`.
public struct DirectoryRole: Sendable, Hashable {
    public var name: String
    /// The vendor's own id of the role object, when it has one.
    public var id: String?
    /// Ids of the member users.
    public var users: [String]
    /// Names of member roles (roles whose users inherit this role).
    public var roles: [String]
    public var acl: ACL?

    public init(name: String, id: String? = nil, users: [String] = [], roles: [String] = [], acl: ACL? = nil) {
        self.name = name
        self.id = id
        self.users = users
        self.roles = roles
        self.acl = acl
    }

    public var json: JSON {
        var o: JSONObject = ["name": .string(name)]
        if let id { o["id"] = .string(id) }
        o["users"] = .array(users.map(JSON.string))
        o["roles"] = .array(roles.map(JSON.string))
        if let acl { o["acl"] = acl.json }
        return .object(o)
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue else { throw MBaaSError(.invalidRequest, "a role must be a JSON object") }
        guard let name = o["name"]?.stringValue, !name.isEmpty else { throw MBaaSError(.invalidRequest, "role.name must be a non-empty string") }
        func strings(_ key: String) throws(MBaaSError) -> [String] {
            guard let v = o[key], !v.isNull else { return [] }
            guard let a = v.arrayValue, a.allSatisfy({ $0.stringValue != nil }) else {
                throw MBaaSError(.invalidRequest, "role.\(key) must be an array of strings")
            }
            return a.compactMap(\.stringValue)
        }
        self.init(name: name, id: o["id"]?.stringValue, users: try strings("users"), roles: try strings("roles"),
                  acl: try o["acl"].flatMap { a throws(MBaaSError) in a.isNull ? nil : try ACL(json: a) })
    }
}

/// One page of ``BackendAdministration/listUsers(after:limit:)``.
public struct DirectoryUserPage: Sendable, Hashable {
    public var users: [DirectoryUser]
    /// Pass as `after` for the next page; `nil` on the last page.
    public var nextCursor: String?
    public init(users: [DirectoryUser], nextCursor: String?) {
        self.users = users
        self.nextCursor = nextCursor
    }
}

/// How an imported user can log in on the target. Password hashes never move between vendors.
public enum ImportedPassword: Sendable, Hashable {
    /// No password works until the user resets it (the default of migrations).
    case unusable
    /// This password works (a generated temporary one, handed to the user out of band).
    case temporary(String)
}

/// What an administrator (or a migration) does that apps do not: list every class and user, import users and
/// roles. Every ``Backend`` has these calls; each throws ``MBaaSError/Kind/unsupported`` unless the adapter
/// declares the matching feature (``Capabilities/Feature/listClasses``, ``Capabilities/Feature/listUsers``,
/// ``Capabilities/Feature/importUsers``).
///
/// # Contract
/// - ``listClasses()`` returns the names of the classes that hold records (not users, roles, sessions or files),
///   sorted.
/// - ``listUsers(after:limit:)`` pages through every user in a stable order; ``listRoles()`` returns every role with
///   its members (user ids of this backend).
/// - ``importUser(_:password:)`` creates a user with the given user name, e-mail, fields and (where the backend
///   accepts ids from elsewhere) id, and returns it as stored, with the id the backend gave it. A taken user name
///   or e-mail is ``MBaaSError/Kind/duplicate``. It does not log anybody in.
/// - ``findUser(username:)`` returns the user with that name or `nil` (so that an interrupted import can resume).
/// - ``findUser(field:equals:)`` returns a user whose custom field holds that string, or `nil`: how a migration finds
///   a user it imported with its source id (in the mapping file's `sourceIdField`) when the user has no user name
///   or e-mail to look up. Adapters that cannot look users up by a field throw ``MBaaSError/Kind/unsupported``.
/// - ``importRole(_:)`` creates the role if needed and adds the member users (ids of this backend); importing the
///   same role twice changes nothing.
public protocol BackendAdministration: Sendable {
    func listClasses() async throws -> [String]
    func listUsers(after cursor: String?, limit: Int) async throws -> DirectoryUserPage
    func listRoles() async throws -> [DirectoryRole]
    func findUser(username: String) async throws -> DirectoryUser?
    func findUser(field: String, equals value: String) async throws -> DirectoryUser?
    func importUser(_ user: DirectoryUser, password: ImportedPassword) async throws -> DirectoryUser
    func importRole(_ role: DirectoryRole) async throws
}

extension BackendAdministration where Self: Backend {
    public func listClasses() async throws -> [String] {
        throw MBaaSError.unsupported("listing classes", by: adapterName, reason: capabilities.note(for: .listClasses))
    }
    public func listUsers(after cursor: String?, limit: Int) async throws -> DirectoryUserPage {
        throw MBaaSError.unsupported("listing users", by: adapterName, reason: capabilities.note(for: .listUsers))
    }
    public func listRoles() async throws -> [DirectoryRole] {
        throw MBaaSError.unsupported("listing roles", by: adapterName, reason: capabilities.note(for: .listUsers))
    }
    public func findUser(username: String) async throws -> DirectoryUser? {
        throw MBaaSError.unsupported("finding users", by: adapterName, reason: capabilities.note(for: .listUsers))
    }
    public func findUser(field: String, equals value: String) async throws -> DirectoryUser? {
        throw MBaaSError.unsupported("finding users by a field", by: adapterName, reason: capabilities.note(for: .listUsers))
    }
    public func importUser(_ user: DirectoryUser, password: ImportedPassword) async throws -> DirectoryUser {
        throw MBaaSError.unsupported("importing users", by: adapterName, reason: capabilities.note(for: .importUsers))
    }
    public func importRole(_ role: DirectoryRole) async throws {
        throw MBaaSError.unsupported("importing roles", by: adapterName, reason: capabilities.note(for: .importUsers))
    }
}

extension BackendAdministration {
    /// Every user, fetched page by page only as the sequence is iterated (one page in memory at a time).
    public func allUsers(pageSize: Int = 200) -> DirectoryUserSequence {
        DirectoryUserSequence(pageSize: pageSize) { cursor, limit in try await self.listUsers(after: cursor, limit: limit) }
    }
}

/// Every user of a backend, as an `AsyncSequence` that requests the next page of
/// ``BackendAdministration/listUsers(after:limit:)`` only when the previous one has been consumed.
public struct DirectoryUserSequence: AsyncSequence, Sendable {
    public typealias Element = DirectoryUser
    public typealias Fetch = @Sendable (_ cursor: String?, _ limit: Int) async throws -> DirectoryUserPage

    let pageSize: Int
    let fetch: Fetch

    public init(pageSize: Int, fetch: @escaping Fetch) {
        self.pageSize = Swift.max(1, pageSize)
        self.fetch = fetch
    }

    public func makeAsyncIterator() -> Iterator { Iterator(pageSize: pageSize, fetch: fetch) }

    public struct Iterator: AsyncIteratorProtocol {
        let pageSize: Int
        let fetch: Fetch
        var buffer: [DirectoryUser] = []
        var index = 0
        var cursor: String?
        var finished = false

        public mutating func next() async throws -> DirectoryUser? {
            while index >= buffer.count {
                if finished { return nil }
                try Task.checkCancellation()
                let page = try await fetch(cursor, pageSize)
                buffer = page.users
                index = 0
                cursor = page.nextCursor
                if page.users.isEmpty || page.nextCursor == nil { finished = true }
                if buffer.isEmpty { return nil }
            }
            defer { index += 1 }
            return buffer[index]
        }
    }
}
