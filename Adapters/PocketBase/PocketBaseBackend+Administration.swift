import Foundation
public import MBaaSCore

/// Administration (``BackendAdministration``) with superuser credentials: the collections that hold records, the
/// users of the auth collection, and importing users. PocketBase has no roles, so ``listRoles()`` is empty and
/// ``importRole(_:)`` is `unsupported` (see ``Capabilities/Feature/roles``).
extension PocketBaseBackend {
    func requireSuperuser(_ what: String) throws(MBaaSError) {
        guard configuration.managesSchema else {
            throw MBaaSError.unsupported(what, by: "pocketbase", reason: "it needs superuser credentials in the backend URL")
        }
    }

    /// Every base collection but the file collection and system ones (`_…`), sorted.
    public func listClasses() async throws -> [String] {
        try requireSuperuser("listing collections")
        var names: [String] = []
        var page = 1
        while true {
            let json = try await sendJSON(.get, "/api/collections", query: [("page", "\(page)"), ("perPage", "200")], as: .superuser)
            let items = json["items"]?.arrayValue ?? []
            for item in items {
                guard let o = item.objectValue, let name = o["name"]?.stringValue, o["type"]?.stringValue == "base",
                      o["system"]?.boolValue != true, !name.hasPrefix("_"), name != configuration.filesCollection else { continue }
                names.append(name)
            }
            let total = json["totalPages"]?.intValue ?? 1
            if items.isEmpty || page >= total { break }
            page += 1
        }
        return names.sorted()
    }

    /// Users of the auth collection in id order; the cursor is the last id.
    public func listUsers(after cursor: String?, limit: Int) async throws -> DirectoryUserPage {
        try requireSuperuser("listing users")
        let perPage = max(1, min(limit, 500))
        var query: [(String, String)] = [("perPage", "\(perPage)"), ("sort", "id"), ("skipTotal", "1")]
        if let cursor { query.append(("filter", "id > " + PocketBaseFilter.Literal.text(cursor).text)) }
        let json = try await sendJSON(.get, PocketBaseWire.recordsPath(configuration.usersCollection), query: query, as: .superuser)
        let users = try (json["items"]?.arrayValue ?? []).compactMap(\.objectValue).map(directoryUser)
        return DirectoryUserPage(users: users, nextCursor: users.count == perPage ? users.last?.id : nil)
    }

    public func listRoles() async throws -> [DirectoryRole] { [] }

    public func findUser(username: String) async throws -> DirectoryUser? {
        try requireSuperuser("finding users")
        let name = PocketBaseFilter.Literal.text(username).text
        let filter = "username = \(name) || email = \(name)"
        let json = try await sendJSON(.get, PocketBaseWire.recordsPath(configuration.usersCollection),
                                      query: [("filter", filter), ("perPage", "1"), ("skipTotal", "1")], as: .superuser)
        return try json["items"]?.arrayValue?.first?.objectValue.map(directoryUser)
    }

    /// The first user (in id order) whose field `field` is the string `value`, through a filter on the auth collection;
    /// `nil` when the collection has no such field (yet: the first import that sets it adds it).
    public func findUser(field: String, equals value: String) async throws -> DirectoryUser? {
        try requireSuperuser("finding users")
        // PocketBase refuses a filter on an unknown field (400): no such field, no such user. The filter names the
        // collection's own field, so nothing the caller wrote goes into it but the literal.
        guard let column = try await definition(configuration.usersCollection, refresh: true)?.field(named: field) else { return nil }
        let filter = PocketBaseFilter.compare(column.name, .eq, .text(value)).text
        let json = try await sendJSON(.get, PocketBaseWire.recordsPath(configuration.usersCollection),
                                      query: [("filter", filter), ("sort", "id"), ("perPage", "1"), ("skipTotal", "1")], as: .superuser)
        return try json["items"]?.arrayValue?.first?.objectValue.map(directoryUser)
    }

    /// Creates a user of the auth collection as the superuser. PocketBase makes its own ids; a user without a usable
    /// password gets a random one that nobody is told (PocketBase requires one), so only a reset lets them in.
    public func importUser(_ user: DirectoryUser, password: ImportedPassword) async throws -> DirectoryUser {
        try requireSuperuser("importing users")
        try await prepareUsersCollection()
        let collection = configuration.usersCollection
        let changes = user.fields.mapValues(Change.set)
        let schema = changes.isEmpty ? nil : try await prepareWrite(className: collection, changes: changes, acl: nil)
        let secret: String
        switch password {
        case .unusable: secret = (0..<2).map { _ in UUID().uuidString.replacingOccurrences(of: "-", with: "") }.joined()   // 64 of PocketBase's 72
        case .temporary(let p): secret = p
        }
        var body: JSONObject = ["password": .string(secret), "passwordConfirm": .string(secret)]
        if let username = user.username { body["username"] = .string(username) }
        if let email = user.email { body["email"] = .string(email) }
        if let verified = user.emailVerified { body["verified"] = .bool(verified) }
        var fieldsSchema = schema ?? PocketBaseSchema(name: collection, isAuth: true, isManaged: false, columns: [:], isComplete: false)
        fieldsSchema.isAuth = true
        for (k, v) in try PocketBaseRecordCodec.body(changes: changes, schema: fieldsSchema) { body[k] = v }
        let json = try await sendJSON(.post, PocketBaseWire.recordsPath(collection), json: .object(body), as: .superuser, operation: .create)
        guard let o = json.objectValue else { throw MBaaSError(.decoding, "PocketBase answered a user import without a record") }
        return try directoryUser(o)
    }

    public func importRole(_ role: DirectoryRole) async throws {
        throw MBaaSError.unsupported("roles", by: "pocketbase", reason: capabilities.note(for: .roles))
    }

    func directoryUser(_ o: JSONObject) throws -> DirectoryUser {
        let collection = configuration.usersCollection
        let neutral = try PocketBaseRecordCodec.record(from: o, className: collection, schema: nil, baseURL: configuration.baseURL,
                                                       isAuth: true, onlyTagged: true)
        return DirectoryUser(
            id: o["id"]?.stringValue ?? "", username: o["username"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 },
            email: o["email"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }, emailVerified: o["verified"]?.boolValue,
            createdAt: neutral.createdAt, updatedAt: neutral.updatedAt, fields: neutral.fields)
    }
}
