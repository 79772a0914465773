import Foundation
public import MBaaSCore

/// Administration (``MBaaSCore/BackendAdministration``) with the master key (URL option `masterKey`): the classes
/// (`GET /schemas`), the users and roles, and importing users and roles, as a migration into or out of Parse needs.
/// Without the master key each call is `unsupported` (the capabilities say so).
///
/// - ``listClasses()``: `GET /schemas` [doc: REST guide, Schema], the classes without the built-in `_…` ones.
/// - ``listUsers(after:limit:)``: `GET /users` ordered by `objectId`, keyset on it.
/// - ``listRoles()``: `GET /roles`, and each role's users through `$relatedTo` on its `users` relation [doc: REST
///   guide, Relational Queries].
/// - ``importUser(_:password:)``: `POST /users` with the master key. Parse needs a password: a user without a usable
///   one gets a random secret nobody is told, so only a password reset lets them in. The session the answer carries
///   is dropped (importing logs nobody in).
/// - ``importRole(_:)``: `POST /roles` with the `users` relation, or `AddRelation` on the existing role.
extension ParseBackend {
    func requireMaster(_ what: String) throws(MBaaSError) {
        guard configuration.masterKey != nil else {
            throw MBaaSError.unsupported(what, by: "parse", reason: "it needs the master key (URL option masterKey)")
        }
    }

    func masterFind(_ cls: String, _ query: ParseQuery) async throws(MBaaSError) -> ParseResults {
        let response = try await send(.get, ParseRoute.objects(cls).path, query: query.queryItems, as: .master,
                                      context: "query \(cls)")
        return try ParseResults(json: try json(response))
    }

    public func listClasses() async throws -> [String] {
        try requireMaster("listing classes")
        let response = try await send(.get, ParseRoute.schemas.path, as: .master, context: "list classes")
        let results = try json(response)["results"]?.arrayValue ?? []
        return results.compactMap { $0["className"]?.stringValue }.filter { !$0.hasPrefix("_") }.sorted()
    }

    public func listUsers(after cursor: String?, limit: Int) async throws -> DirectoryUserPage {
        try requireMaster("listing users")
        let limit = max(1, min(limit, ParseWire.maxLimit))
        var where_: JSONObject? = nil
        if let cursor { where_ = ["objectId": .object(["$gt": .string(cursor)])] }
        let page = try await masterFind(ParseWire.userClass, ParseQuery(where: where_, order: ["objectId"], limit: limit))
        let users = try page.results.map { try ParseUserObject(json: .object($0)).directoryUser() }
        return DirectoryUserPage(users: users, nextCursor: users.count == limit ? users.last?.id : nil)
    }

    public func listRoles() async throws -> [DirectoryRole] {
        try requireMaster("listing roles")
        var roles: [DirectoryRole] = []
        let found = try await masterFind(ParseWire.roleClass, ParseQuery(order: ["name"], limit: ParseWire.maxLimit))
        for object in found.results {
            guard let id = object["objectId"]?.stringValue, let name = object["name"]?.stringValue else { continue }
            let related: JSONObject = ["$relatedTo": .object([
                "object": ParseCodec.pointerJSON(Pointer(className: ParseWire.roleClass, objectId: id)), "key": "users",
            ])]
            let members = try await masterFind(ParseWire.userClass, ParseQuery(where: related, order: ["objectId"],
                                                                               limit: ParseWire.maxLimit, keys: ["objectId"]))
            let acl = try object["ACL"].flatMap { a throws(MBaaSError) in a.isNull ? nil : try ParseCodec.decodeACL(a) }
            roles.append(DirectoryRole(name: name, id: id, users: members.results.compactMap { $0["objectId"]?.stringValue },
                                       acl: acl))
        }
        return roles
    }

    public func findUser(username: String) async throws -> DirectoryUser? {
        try requireMaster("finding users")
        let page = try await masterFind(ParseWire.userClass, ParseQuery(where: ["username": .string(username)], limit: 1))
        return try page.results.first.map { try ParseUserObject(json: .object($0)).directoryUser() }
    }

    /// The first user (by `objectId`) whose field `field` is the string `value` (`where={field: value}` with the master key).
    public func findUser(field: String, equals value: String) async throws -> DirectoryUser? {
        try requireMaster("finding users")
        let page = try await masterFind(ParseWire.userClass, ParseQuery(where: [field: .string(value)], order: ["objectId"], limit: 1))
        return try page.results.first.map { try ParseUserObject(json: .object($0)).directoryUser() }
    }

    public func importUser(_ user: DirectoryUser, password: ImportedPassword) async throws -> DirectoryUser {
        try requireMaster("importing users")
        guard let username = user.username ?? user.email, !username.isEmpty else {
            throw MBaaSError(.invalidRequest, "a Parse user needs a user name")
        }
        let secret: String
        switch password {
        case .unusable: secret = (0..<2).map { _ in UUID().uuidString }.joined()
        case .temporary(let p): secret = p
        }
        var body: JSONObject = ["username": .string(username), "password": .string(secret)]
        if let email = user.email { body["email"] = .string(email) }
        for key in user.fields.keys.sorted() where !["username", "password", "email", "authData", "sessionToken"].contains(key) {
            try ParseCodec.checkFieldName(key)
            if user.fields[key] == .null { continue }
            body[key] = try ParseCodec.encode(user.fields[key]!, path: key)
        }
        if let acl = user.acl { body["ACL"] = try ParseCodec.encode(acl) }
        let response = try await send(.post, ParseRoute.objects(ParseWire.userClass).path, body: .json(body), as: .master,
                                      context: "import user \(username)")
        let created = try ParseCreated(json: try json(response))
        var stored = user
        stored.id = created.objectId
        stored.username = username
        stored.createdAt = created.createdAt
        return stored
    }

    public func importRole(_ role: DirectoryRole) async throws {
        try requireMaster("importing roles")
        let users = role.users.map { Pointer(className: ParseWire.userClass, objectId: $0) }
        let existing = try await masterFind(ParseWire.roleClass, ParseQuery(where: ["name": .string(role.name)], limit: 1))
        if let id = existing.results.first?["objectId"]?.stringValue {
            guard !users.isEmpty else { return }
            _ = try await send(.put, ParseRoute.object(ParseWire.roleClass, id: id).path,
                               body: .json(["users": ParseFieldChange.addRelation(users).json]), as: .master,
                               context: "import role \(role.name)")
            return
        }
        var body: JSONObject = ["name": .string(role.name)]
        body["ACL"] = try ParseCodec.encode(role.acl ?? ACL([.everyone: .read]))
        if !users.isEmpty { body["users"] = ParseFieldChange.addRelation(users).json }
        _ = try await send(.post, ParseRoute.objects(ParseWire.roleClass).path, body: .json(body), as: .master,
                           context: "import role \(role.name)")
    }
}

extension ParseUserObject {
    /// The directory form of a user object read with the master key.
    func directoryUser() throws(MBaaSError) -> DirectoryUser {
        let record = try ParseCodec.decodeRecord(className: ParseWire.userClass, object)
        var fields = record.fields
        for key in ["username", "email", "emailVerified", "authData"] { fields[key] = nil }
        return DirectoryUser(id: objectId, username: username, email: email, emailVerified: object["emailVerified"]?.boolValue,
                             createdAt: record.createdAt, updatedAt: record.updatedAt, acl: record.acl, fields: fields)
    }
}
