import Foundation
public import MBaaSCore

/// Records: `/api/collections/{collection}/records` create, view, update, delete.
extension PocketBaseBackend {
    typealias Change = PocketBaseRecordCodec.Change

    func decode(_ object: JSONObject, className: String, schema: PocketBaseSchema?) throws -> Record {
        try PocketBaseRecordCodec.record(from: object, className: className, schema: schema, baseURL: configuration.baseURL)
    }

    /// The field changes of an update; operations other than set and delete are `unsupported`.
    static func changes(of update: RecordUpdate) throws(MBaaSError) -> [String: Change] {
        if update.expectedVersion != nil {
            throw MBaaSError.unsupported("expectedVersion (optimistic locking)", by: "pocketbase",
                                         reason: capabilities.note(for: .optimisticLocking))
        }
        var changes: [String: Change] = [:]
        for (name, op) in update.changes {
            switch op {
            case .set(let v): changes[name] = .set(v)
            case .delete: changes[name] = .delete
            case .increment, .add, .addUnique, .remove:
                throw MBaaSError.unsupported("the field operation on '\(name)'", by: "pocketbase",
                                             reason: capabilities.note(for: .fieldOperations))
            }
        }
        return changes
    }

    /// The request body of a create: the id (when given), the fields with their type columns, and the ACL.
    func createBody(_ record: Record) async throws -> (body: JSONObject, schema: PocketBaseSchema?) {
        let changes = record.fields.mapValues(Change.set)
        let schema = try await prepareWrite(className: record.className, changes: changes, acl: record.acl)
        var body = JSONObject()
        if let id = record.id {
            guard !id.isEmpty, id.count <= 64, id.unicodeScalars.allSatisfy({ PocketBaseWire.isWordScalar($0) || $0 == "-" }) else {
                throw MBaaSError(.invalidRequest, "record id '\(id)' is not valid for PocketBase (1-64 letters, digits, _ and -)")
                    .refusing(MBaaSError.recordIdKey)
            }
            body["id"] = .string(id)
        }
        for (k, v) in try PocketBaseRecordCodec.body(changes: changes, schema: schema) { body[k] = v }
        if schema?.isManaged ?? true {
            for (k, v) in try PocketBaseRecordCodec.aclColumns(record.acl) { body[k] = v }
        }
        return (body, schema)
    }

    func updateBody(className: String, _ update: RecordUpdate) async throws -> (body: JSONObject, schema: PocketBaseSchema?) {
        let changes = try Self.changes(of: update)
        try Self.checkClassName(className)
        if configuration.managesSchema, try await definition(className) == nil {
            // Never create a collection for an update: the record cannot exist.
            throw MBaaSError(.notFound, "no PocketBase collection '\(className)'")
        }
        let schema = try await prepareWrite(className: className, changes: changes, acl: update.acl)
        var body = try PocketBaseRecordCodec.body(changes: changes, schema: schema)
        if let acl = update.acl {
            for (k, v) in try PocketBaseRecordCodec.aclColumns(acl) { body[k] = v }
        }
        return (body, schema)
    }

    /// PocketBase ignores fields a collection lacks. When the schema was not known beforehand (no superuser
    /// rights), a created or updated record is checked for every field sent; a dropped one is an error (and a
    /// record just created is deleted again).
    func verifyStored(_ body: JSONObject, in response: JSONObject, className: String, createdId: String?) async throws {
        var dropped = body.keys.filter { key in
            key != "id" && !key.hasSuffix(PocketBaseWire.tagSuffix) && !key.hasPrefix(PocketBaseWire.reservedPrefix)
                && response[key] == nil
        }
        if body[PocketBaseCollection.ACLColumn.acl].map({ !$0.isNull }) == true, response[PocketBaseCollection.ACLColumn.acl] == nil {
            dropped.append("acl")
        }
        guard !dropped.isEmpty else { return }
        forget(className)
        if let createdId {
            _ = try? await send(.delete, PocketBaseWire.recordsPath(className, id: createdId), as: .data)
        }
        throw MBaaSError(.invalidRequest, "PocketBase collection '\(className)' has no field(s) \(dropped.sorted().joined(separator: ", ")) and this client cannot add them (PocketBase ignores unknown fields; open the backend with superuser credentials to extend the schema)")
    }

    /// After a 404 on a write: `forbidden` when the record exists but the user may not change it.
    func explainNotFound(_ error: MBaaSError, className: String, id: String) async -> MBaaSError {
        guard !(currentSession == nil && configuration.dataAsSuperuser) else { return error }
        if (try? await send(.get, PocketBaseWire.recordsPath(className, id: id), query: [("fields", "id")], as: .data)) != nil {
            return MBaaSError(.forbidden, "not allowed to change \(className)/\(id) (\(error.message))", httpStatus: error.httpStatus)
        }
        return error
    }

    // MARK: ObjectStore

    public func create(_ record: Record) async throws -> Record {
        let (body, schema) = try await createBody(record)
        let json = try await sendJSON(.post, PocketBaseWire.recordsPath(record.className), json: .object(body), as: .data,
                                      operation: .create)
        guard let object = json.objectValue else { throw MBaaSError(.decoding, "PocketBase create returned no record") }
        if schema == nil || !(schema!.isComplete) {
            try await verifyStored(body, in: object, className: record.className, createdId: object["id"]?.stringValue)
        }
        return try decode(object, className: record.className, schema: schema)
    }

    public func get(className: String, id: String) async throws -> Record {
        try Self.checkClassName(className)
        let schema = try await schemaForReading(className)
        if configuration.managesSchema, schema == nil {
            throw MBaaSError(.notFound, "no PocketBase collection '\(className)'")
        }
        let json = try await sendJSON(.get, PocketBaseWire.recordsPath(className, id: id), as: .data)
        guard let object = json.objectValue else { throw MBaaSError(.decoding, "PocketBase returned no record") }
        return try decode(object, className: className, schema: schema)
    }

    public func update(className: String, id: String, _ update: RecordUpdate) async throws -> Record {
        let (body, schema) = try await updateBody(className: className, update)
        let json: JSON
        do {
            json = try await sendJSON(.patch, PocketBaseWire.recordsPath(className, id: id), json: .object(body), as: .data)
        } catch let e as MBaaSError where e.kind == .notFound {
            throw await explainNotFound(e, className: className, id: id)
        }
        guard let object = json.objectValue else { throw MBaaSError(.decoding, "PocketBase update returned no record") }
        if schema == nil || !(schema!.isComplete) {
            try await verifyStored(body, in: object, className: className, createdId: nil)
        }
        return try decode(object, className: className, schema: schema)
    }

    public func delete(className: String, id: String, expectedVersion: String?) async throws {
        if expectedVersion != nil {
            throw MBaaSError.unsupported("expectedVersion (optimistic locking)", by: "pocketbase",
                                         reason: capabilities.note(for: .optimisticLocking))
        }
        try Self.checkClassName(className)
        do {
            _ = try await send(.delete, PocketBaseWire.recordsPath(className, id: id), as: .data)
        } catch let e as MBaaSError where e.kind == .notFound {
            throw await explainNotFound(e, className: className, id: id)
        }
    }
}
