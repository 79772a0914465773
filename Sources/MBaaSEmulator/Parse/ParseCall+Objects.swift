import Foundation
import MBaaSCore
import MBaaSParseWire

/// Objects on `/classes/{class}`, `/users`, `/roles`: create, get, update, delete, find.
extension ParseCall {
    /// The hidden field listing which fields of a record are relations (stored as arrays of pointers, shown as
    /// `{"__type":"Relation","className":…}`). Clients cannot write it: Parse field names may not start with `_`.
    static let relationsField = "__parseRelations"

    /// The hidden mark of an object created without an ACL: Parse shows such an object without `ACL` [doc: the REST
    /// guide's objects], while one given `{"*":{"read":true,"write":true}}` shows it; the store holds both as public
    /// read and write, and this mark tells them apart. Setting an ACL removes it.
    static let noACLField = "__parseNoACL"

    /// Keys a client may echo back in a body, ignored (the server sets them) [sdk: clients send them back].
    static let serverKeys: Set<String> = ["objectId", "createdAt", "updatedAt", "sessionToken", "className", "__type"]

    /// The fields and ACL of a create body: the family's reading
    /// (``MBaaSParseFamilyWire/ParseFamilyCodec/createFields(_:ignoring:checkName:value:acl:)``) with Parse's errors.
    func createFields(_ body: JSONObject) throws -> (fields: [String: Value], acl: ACL?) {
        var (fields, relations, acl) = try ParseCodec.createFields(
            body, ignoring: Self.serverKeys, checkName: Self.checkFieldName, value: Self.value, acl: Self.acl)
        if !relations.isEmpty { fields[Self.relationsField] = .array(relations.map(Value.string)) }
        return (fields, acl)
    }

    func create(_ cls: String) async throws -> TransportResponse {
        try checkClassName(cls)
        var (fields, acl) = try createFields(try jsonBody())
        if cls == ParseWire.roleClass { try await checkNewRole(fields) }
        if acl == nil { fields[Self.noACLField] = true }
        let record = try await backend.create(Record(className: cls, acl: acl ?? .publicReadWrite, fields: fields))
        if cls == ParseWire.roleClass { try await syncRoles(affecting: record) }
        let id = record.id ?? ""
        let created = ParseCreated(objectId: id, createdAt: record.createdAt ?? dialect.clock())
        return Self.json(201, created.json, headers: HTTPFields([("Location", location(cls, id))]))
    }

    /// `scheme://host[:port]` as the client addressed the server.
    var origin: String {
        let host = request.url.host.map { h in h.contains(":") ? "[\(h)]" : h } ?? "localhost"
        let port = request.url.port.map { ":\($0)" } ?? ""
        return "\(request.url.scheme ?? "http")://\(host)\(port)"
    }

    /// The URL of an object, as parse-server writes it in `Location` [doc].
    func location(_ cls: String, _ id: String) -> String {
        origin + ParseRoute.object(cls, id: id).fullPath(mount: dialect.configuration.mount)
    }

    func get(_ cls: String, _ id: String) async throws -> TransportResponse {
        try checkClassName(cls)
        let record = try await Self.hidden { try await backend.get(className: cls, id: id) }
        return Self.json(200, .object(try render(record)))
    }

    /// A record the caller may not see (or that does not exist) is 101 "Object not found." [doc].
    static func hidden<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch let e as MBaaSError where e.kind == .notFound {
            throw MBaaSError(.notFound, "Object not found.", vendorCode: "101")
        }
    }

    func update(_ cls: String, _ id: String) async throws -> TransportResponse {
        try checkClassName(cls)
        var update = RecordUpdate()
        var relations: [String] = []
        for (key, json) in try jsonBody() {
            if Self.serverKeys.contains(key) { continue }
            if key == "ACL" { if !json.isNull { update.acl = try Self.acl(json) }; continue }
            if cls == ParseWire.userClass, ["username", "email", "password", "authData"].contains(key) {
                throw MBaaSError(.unsupported, "the emulator cannot change \(key) after sign-up", vendorCode: "-1")
            }
            try Self.checkFieldName(key)
            let (operation, relation) = try ParseFieldChange(json: json, path: key).storeOperation(path: key) { v, p throws(MBaaSError) -> Value in
                do throws(MBaaSError) { return try ParseCodec.decode(v, path: p) } catch {
                    throw MBaaSError(.invalidRequest, "invalid type for key \(key): \(error.message)", vendorCode: "111")
                }
            }
            update.changes[key] = operation
            if relation { relations.append(key) }
        }
        if !relations.isEmpty { update.changes[Self.relationsField] = .addUnique(relations.map(Value.string)) }
        if update.acl != nil { update.changes[Self.noACLField] = .delete }
        let before = cls == ParseWire.roleClass ? try? await owner.get(className: cls, id: id) : nil
        let record = try await Self.hidden { try await backend.update(className: cls, id: id, update) }
        if cls == ParseWire.roleClass {
            try await syncRoles(affecting: record)
            if let before { try await syncRoles(affecting: before) }
        }
        return Self.json(200, ParseUpdated(updatedAt: record.updatedAt ?? dialect.clock()).json)
    }

    func delete(_ cls: String, _ id: String) async throws -> TransportResponse {
        try checkClassName(cls)
        let before = cls == ParseWire.roleClass ? try? await owner.get(className: cls, id: id) : nil
        try await Self.hidden { try await backend.delete(className: cls, id: id, expectedVersion: nil) }
        if let before { try await syncRoles(affecting: before, deleted: true) }
        if cls == ParseWire.userClass { try? await owner.deleteUser(id: id) }
        return Self.json(200, .object([:]))
    }

    func query(_ cls: String) async throws -> TransportResponse {
        try checkClassName(cls)
        var query: Query
        do {
            var parse = try ParseQuery(queryItems: queryItems)
            // `$relatedTo` (the members of an object's relation): resolved here from the stored relation, as the
            // neutral query has no form for it [doc: parse.md Queries, REST guide "Relational Queries"].
            var members: [String]?
            if let related = parse.where_?["$relatedTo"] {
                parse.where_?["$relatedTo"] = nil
                members = try await relationMembers(related)
            }
            query = try ParseQueryTranslator.query(parse, className: cls)
            if let members {
                let extra = QueryPredicate.in("id", members.map(Value.string))
                query.predicate = query.predicate.map { .and([$0, extra]) } ?? extra
            }
            let count = parse.count
            return try await find(query: &query, count: count)
        } catch let e as MBaaSError where e.kind == .unsupported || (e.kind == .invalidRequest && e.vendorCode == nil) {
            throw MBaaSError(.invalidRequest, e.message, vendorCode: "102")
        }
    }

    private func find(query: inout Query, count: Bool) async throws -> TransportResponse {
        var results: [JSONObject] = []
        if query.limit != 0 {
            let page = try await backend.queryPage(query)
            for record in page.records { results.append(try render(record)) }
        }
        var total: Int?
        if count {
            var counting = query
            counting.limit = nil
            counting.skip = nil
            counting.cursor = nil
            total = try await backend.count(counting)
        }
        return Self.json(200, ParseResults(results: results, count: total).json)
    }

    /// An object as Parse shows it: metadata, fields, relations as `{"__type":"Relation"}`; users without secrets.
    func render(_ record: Record) throws -> JSONObject {
        var record = record
        let relations = record.fields.removeValue(forKey: Self.relationsField)?.arrayValue?.compactMap(\.stringValue) ?? []
        var relationClasses: [String: String] = [:]
        for key in relations {
            let first = record.fields.removeValue(forKey: key)?.arrayValue?.first
            if case .pointer(let p)? = first { relationClasses[key] = p.className }
            else { relationClasses[key] = key == "roles" ? ParseWire.roleClass : ParseWire.userClass }
        }
        if record.fields.removeValue(forKey: Self.noACLField) != nil { record.acl = nil }
        var object = try ParseCodec.encodeRecord(record)
        for (key, className) in relationClasses {
            object[key] = .object(["__type": "Relation", "className": .string(className)])
        }
        return object
    }

    /// Class names: letters, digits and `_`, starting with a letter, or one of the built-in classes [doc: 103
    /// "Invalid class name"].
    func checkClassName(_ cls: String) throws {
        if [ParseWire.userClass, ParseWire.roleClass].contains(cls) { return }
        guard let first = cls.unicodeScalars.first, first.isASCII, CharacterSet.letters.contains(first),
              cls.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "_") })
        else { throw MBaaSError(.invalidRequest, "Invalid class name: \(cls)", vendorCode: "103") }
    }

    /// The ids in a relation field of an object, `{"object": Pointer, "key": field}`, as the owner sees them.
    func relationMembers(_ related: JSON) async throws -> [String] {
        guard let key = related["key"]?.stringValue, let object = related["object"],
              case .pointer(let p) = try Self.value(object, "$relatedTo.object")
        else { throw MBaaSError(.invalidRequest, "$relatedTo needs an object pointer and a key", vendorCode: "102") }
        guard let record = try? await owner.get(className: p.className, id: p.objectId) else { return [] }
        return record.fields[key]?.arrayValue?.compactMap { v -> String? in
            if case .pointer(let m) = v { return m.objectId } else { return nil }
        } ?? []
    }

    /// What parse-server's master-key middleware (`enforceMasterKeyAccess`) answers a route that only the master key
    /// may use, asked without it: 403 `{"error":"unauthorized: master key is required"}`, no code [sdk: parse-server
    /// `spec/ParseFile.spec.js`, file deletion without the master key; the schemas, config and server-info routes use
    /// the same middleware].
    static var masterKeyRequired: TransportResponse { ParseErrorBody(code: nil, error: "unauthorized: master key is required").response() }

    /// `GET /schemas` (master key only [doc]): `{"results":[{"className":…}]}` for every class that holds objects,
    /// built-in classes included; fields are not described (the store keeps no schema).
    func schemas() async throws -> TransportResponse {
        guard isMaster else { return Self.masterKeyRequired }
        var names = Set(try await owner.listClasses())
        names.formUnion([ParseWire.userClass, ParseWire.roleClass])
        let results = names.sorted().map { JSON.object(["className": .string($0)]) }
        return Self.json(200, .object(["results": .array(results)]))
    }

    // MARK: Roles

    /// A new role needs a unique `name` the store can hold as an ACL principal.
    func checkNewRole(_ fields: [String: Value]) async throws {
        guard let name = fields["name"]?.stringValue, !name.isEmpty else {
            throw MBaaSError(.invalidRequest, "Role names must be specified.", vendorCode: "111")
        }
        guard name.utf8.count <= 64, name.utf8.allSatisfy({ b in
            (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || b == 0x2D || b == 0x2E || b == 0x5F
        }) else {
            throw MBaaSError(.invalidRequest, "A role's name can only contain alphanumeric characters, _, - and . in the emulator (1 to 64).",
                             vendorCode: "139")
        }
        let page = try await owner.queryPage(Query(ParseWire.roleClass, predicate: .compare("name", .eq, .string(name)), limit: 1))
        if !page.records.isEmpty {
            throw MBaaSError(.duplicate, "A duplicate value for a field with unique values was provided", vendorCode: "137")
        }
    }

    /// Gives each user named in a role's `users` the names of every role holding it, so ACL entries `role:Name`
    /// apply to it.
    func syncRoles(affecting role: Record, deleted: Bool = false) async throws {
        let users = role.fields["users"]?.arrayValue?.compactMap { v -> String? in
            if case .pointer(let p) = v { return p.objectId } else { return nil }
        } ?? []
        for user in Set(users) {
            let holding = try await owner.queryPage(Query(
                ParseWire.roleClass, predicate: .compare("users", .eq, .pointer(Pointer(className: ParseWire.userClass, objectId: user))),
                limit: 1000))
            let names = holding.records.compactMap { $0.fields["name"]?.stringValue }
            try? await owner.setRoles(names.sorted(), forUser: user)
        }
    }
}
