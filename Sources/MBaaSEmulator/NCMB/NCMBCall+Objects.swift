import Foundation
import MBaaSCore
import MBaaSNCMBWire

/// Objects on `/classes/{class}`, `/users`, `/roles`: create, get, update, delete, query.
extension NCMBCall {
    /// The hidden field listing which fields of a record are relations (stored as arrays of pointers, shown as
    /// `{"__type":"Relation","className":…}`). Clients cannot write it: NCMB field names may not start with `__`.
    static let relationsField = "__ncmbRelations"

    /// The store's class for an NCMB class: the neutral name (`_User`, `_Role`, or the custom name).
    static func storeClass(_ cls: NCMBClassName) -> String { cls.neutralName }

    /// The fields of a create body; `acl` apart. Server-set keys echoed back are ignored (tolerant). The family's
    /// reading (``MBaaSParseFamilyWire/ParseFamilyCodec/createFields(_:ignoring:checkName:value:acl:)``) with NCMB's errors.
    func createFields(_ body: JSONObject) throws -> (fields: [String: Value], acl: ACL?) {
        var (fields, relations, acl) = try NCMBCodec.createFields(
            body, ignoring: ["objectId", "createDate", "updateDate", "sessionToken"], checkName: Self.checkFieldName,
            value: Self.value, acl: Self.acl)
        if !relations.isEmpty { fields[Self.relationsField] = .array(relations.map(Value.string)) }
        return (fields, acl)
    }

    func create(_ cls: NCMBClassName) async throws -> TransportResponse {
        let body = try jsonBody()
        var (fields, acl) = try createFields(body)
        if cls == .role {
            guard let name = fields["roleName"]?.stringValue, !name.isEmpty else {
                throw MBaaSError(.invalidRequest, "roleName is empty.", vendorCode: "E400003")
            }
            // Role names become ACL keys (`role:NAME`) in the store, which takes 1 to 64 of [A-Za-z0-9_.-]; a name
            // outside that is refused rather than kept without its ACL effect [inferred].
            guard name.utf8.count <= 64, name.utf8.allSatisfy({ b in
                (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || b == 0x2D || b == 0x2E || b == 0x5F
            }) else {
                throw MBaaSError(.invalidRequest, "roleName is invalid format. (the emulator takes 1 to 64 of A-Z a-z 0-9 _ . -)", vendorCode: "E400004")
            }
            if try await roleId(named: name) != nil {
                throw MBaaSError(.duplicate, "roleName is duplication.", vendorCode: "E409001")
            }
        }
        if fields[Self.relationsField] == nil { fields.removeValue(forKey: Self.relationsField) }
        let record = try await store(creating: acl).create(Record(className: Self.storeClass(cls), acl: acl ?? .publicReadWrite, fields: fields))
        if cls == .role { try await syncRoles(affecting: record) }
        var out: JSONObject = ["objectId": .string(record.id ?? ""), "createDate": .string(ISO8601.format(record.createdAt ?? dialect.clock()))]
        // NCMB echoes relation operators of a create (ncmb.md §1.3, JS stub).
        for (key, json) in body where (json["__op"]?.stringValue ?? "").hasSuffix("Relation") { out[key] = json }
        return Self.json(201, .object(out))
    }

    func get(_ cls: NCMBClassName, _ id: String) async throws -> TransportResponse {
        let record = try await deniedIfHidden(cls, id) { try await backend.get(className: Self.storeClass(cls), id: id) }
        return Self.json(200, .object(try render(record, cls)))
    }

    /// Runs a call on one object; when the store answers `notFound` for an object that exists but the caller may
    /// not see, answers 403 E403001 "No access with ACL." instead, as NCMB does [inferred from the error table:
    /// E403001 is the ACL refusal; the store itself hides such objects].
    func deniedIfHidden<T>(_ cls: NCMBClassName, _ id: String, _ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch let e as MBaaSError where e.kind == .notFound {
            if (try? await owner.get(className: Self.storeClass(cls), id: id)) != nil {
                throw MBaaSError(.forbidden, "No access with ACL.", vendorCode: "E403001")
            }
            throw MBaaSError(.notFound, "No data available.", vendorCode: "E404001")
        }
    }

    func update(_ cls: NCMBClassName, _ id: String) async throws -> TransportResponse {
        let body = try jsonBody()
        var update = RecordUpdate()
        var relationsAdded: [String] = []
        for (key, json) in body {
            switch key {
            case "objectId", "createDate", "updateDate", "sessionToken": continue
            case "acl":
                if !json.isNull { update.acl = try Self.acl(json) }
                continue
            case _ where cls == .user && ["userName", "mailAddress", "password"].contains(key):
                throw MBaaSError(.invalidRequest, "\(key) cannot be changed by the emulator after sign-up.", vendorCode: "E400005")
            default:
                try Self.checkFieldName(key)
            }
            let field = cls == .user ? Self.userStoreKey(key) : key
            // NCMB keeps a field set to null (it reads back as null; a field cannot go back to undefined, ncmb.md §1.2).
            let (operation, relation) = try NCMBFieldChange(json: json, path: key)
                .storeOperation(path: key) { v, _ in try Self.value(v, key) }
            update.changes[field] = operation
            if relation { relationsAdded.append(field) }
        }
        if !relationsAdded.isEmpty {
            update.changes[Self.relationsField] = .addUnique(relationsAdded.map(Value.string))
        }
        let before = cls == .role ? try? await owner.get(className: Self.storeClass(cls), id: id) : nil
        let record = try await deniedIfHidden(cls, id) { try await backend.update(className: Self.storeClass(cls), id: id, update) }
        if cls == .role {
            try await syncRoles(affecting: record)
            if let before { try await syncRoles(affecting: before) }
        }
        return Self.json(200, .object(["updateDate": .string(ISO8601.format(record.updatedAt ?? dialect.clock()))]))
    }

    func delete(_ cls: NCMBClassName, _ id: String) async throws -> TransportResponse {
        let before = cls == .role ? try? await owner.get(className: Self.storeClass(cls), id: id) : nil
        try await deniedIfHidden(cls, id) { try await backend.delete(className: Self.storeClass(cls), id: id, expectedVersion: nil) }
        if let before { try await syncRoles(affecting: before, deleted: true) }
        if cls == .user {
            // The credentials go with the profile: the user can no longer log in.
            try? await owner.deleteUser(id: id)
        }
        return Self.empty()
    }

    func query(_ cls: NCMBClassName) async throws -> TransportResponse {
        var ncmb = try NCMBQuery(queryItems: queryItems)
        let className = Self.storeClass(cls)
        var extra: QueryPredicate?
        if let related = ncmb.where_?.relatedTo {
            ncmb.where_?.relatedTo = nil
            extra = .in("id", try await relationMembers(related).map(Value.string))
        }
        var query: Query
        do { query = try NCMBQueryTranslator.query(ncmb, className: className) } catch {
            throw MBaaSError(.invalidRequest, error.message, vendorCode: "E400002")
        }
        if let extra { query.predicate = query.predicate.map { .and([$0, extra]) } ?? extra }
        var results: [JSON] = []
        if query.limit != 0 {
            let page: RecordPage
            do { page = try await backend.queryPage(query) } catch let e as MBaaSError where e.kind == .unsupported {
                throw MBaaSError(.invalidRequest, e.message, vendorCode: "E400002")
            }
            for record in page.records { results.append(.object(try render(record, cls))) }
        }
        var out: JSONObject = ["results": .array(results)]
        if ncmb.count {
            var counting = query
            counting.limit = nil
            counting.skip = nil
            out["count"] = .int(Int64(try await backend.count(counting)))
        }
        return Self.json(200, .object(out))
    }

    /// An object as NCMB shows it: metadata, fields, relations as `{"__type":"Relation"}`; users with
    /// `userName`/`mailAddress`.
    func render(_ record: Record, _ cls: NCMBClassName) throws -> JSONObject {
        var record = record
        let relations = record.fields.removeValue(forKey: Self.relationsField)?.arrayValue?.compactMap(\.stringValue) ?? []
        var relationClasses: [String: String] = [:]
        for key in relations {
            let first = record.fields.removeValue(forKey: key)?.arrayValue?.first
            if case .pointer(let p)? = first { relationClasses[key] = NCMBClassName(p.className).wireName }
            else { relationClasses[key] = key == "belongRole" ? "role" : "user" }
        }
        if cls == .user {
            var fields: [String: Value] = [:]
            for (k, v) in record.fields { fields[Self.userWireKey(k)] = v }
            record.fields = fields
        }
        var object = try NCMBCodec.encodeRecord(record)
        for (key, className) in relationClasses {
            object[key] = .object(["__type": "Relation", "className": .string(className)])
        }
        if cls == .user {
            // [doc] ncmb.md §1.6: a user object carries these keys, null when unset.
            for key in ["mailAddress", "mailAddressConfirm", "authData"] where object[key] == nil { object[key] = .null }
        }
        return object
    }

    // MARK: Users as records

    static func userStoreKey(_ key: String) -> String {
        switch key { case "userName": "username"; case "mailAddress": "email"; default: key }
    }

    static func userWireKey(_ key: String) -> String {
        switch key { case "username": "userName"; case "email": "mailAddress"; default: key }
    }

    // MARK: Roles and relations

    func roleId(named name: String) async throws -> String? {
        let page = try await owner.queryPage(Query("_Role", predicate: .compare("roleName", .eq, .string(name)), limit: 1))
        return page.records.first?.id
    }

    /// The ids in a relation field of an object (`$relatedTo`), as the owner sees them.
    func relationMembers(_ related: NCMBWhere.RelatedTo) async throws -> [String] {
        let className = NCMBClassName(related.object.className).neutralName
        guard let record = try? await owner.get(className: className, id: related.object.objectId) else { return [] }
        return record.fields[related.key]?.arrayValue?.compactMap { v -> String? in
            if case .pointer(let p) = v { return p.objectId } else { return nil }
        } ?? []
    }

    /// Gives each user named in a role's `belongUser` the names of every role holding it, so ACL entries
    /// `role:NAME` apply to it (sub-roles are not followed, as the client does not follow them either).
    func syncRoles(affecting role: Record, deleted: Bool = false) async throws {
        let users = role.fields["belongUser"]?.arrayValue?.compactMap { v -> String? in
            if case .pointer(let p) = v { return p.objectId } else { return nil }
        } ?? []
        for user in Set(users) {
            let holding = try await owner.queryPage(Query("_Role", predicate: .compare("belongUser", .eq, .pointer(Pointer(className: "_User", objectId: user))), limit: 1000))
            let names = holding.records.compactMap { $0.fields["roleName"]?.stringValue }
            try? await owner.setRoles(names.sorted(), forUser: user)
        }
    }
}
