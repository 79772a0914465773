import Foundation
public import MBaaSCore

/// Records on `/classes/{class}` and the built-in classes (see ``NCMBClassName``).
///
/// - create: `POST` → `201 {"objectId","createDate"}`; the record comes back with the fields sent and
///   `updatedAt == createdAt` (NCMB sets both on creation). NCMB assigns ids: a record with an `id` is refused.
/// - get: `GET /classes/{class}/{id}` → the object; `E404001` is `notFound`.
/// - update: `PUT` with only the changed fields (`null` clears a field; `Increment`, `Add`, `AddUnique`,
///   `Remove` operators) → `200 {"updateDate"}`, then a `GET` to return the whole record as stored.
/// - delete: `DELETE` → `200`.
/// - NCMB has no version: `expectedVersion` is `unsupported`; `Record.version` stays `nil`.
/// - `_File` records are the file store's metadata: read and query them here, write them with the ``FileStore`` API.
extension NCMBBackend {
    public func create(_ record: Record) async throws -> Record {
        let cls = try NCMBClassName.validate(record.className)
        try checkWritable(cls)
        if record.id != nil {
            throw MBaaSError(.invalidRequest, "NCMB assigns objectIds: create a record without an id (got '\(record.id!)')")
                .refusing(MBaaSError.recordIdKey)
        }
        let body = try NCMBCodec.createBody(record)
        let response = try await send(.post, cls.collectionPath, body: .json(body), context: "create \(record.className)")
        let created = try NCMBCreated(json: try json(response))
        guard let id = created.objectId else { throw MBaaSError(.decoding, "create response without objectId") }
        var stored = record
        // As a get would return it: a null field reads back absent.
        stored.fields = record.fields.filter { !$0.value.isNull }
        stored.id = id
        stored.createdAt = created.createDate
        stored.updatedAt = created.createDate
        return stored
    }

    public func get(className: String, id: String) async throws -> Record {
        let cls = try NCMBClassName.validate(className)
        if cls == .file {
            let page = try await queryPage(Query(className, predicate: .compare("fileName", .eq, .string(id)), limit: 1))
            guard let record = page.records.first else {
                throw MBaaSError(.notFound, "no file named '\(id)'", vendorCode: "E404001", httpStatus: 404)
            }
            return record
        }
        let response = try await send(.get, objectPath(cls, id), context: "get \(className)/\(id)")
        guard let object = try json(response).objectValue else { throw MBaaSError(.decoding, "object response is not an object") }
        return try decode(className: className, object)
    }

    public func update(className: String, id: String, _ update: RecordUpdate) async throws -> Record {
        let cls = try NCMBClassName.validate(className)
        try checkWritable(cls)
        if update.expectedVersion != nil {
            throw MBaaSError.unsupported("expectedVersion", by: "ncmb", reason: capabilities.note(for: .optimisticLocking))
        }
        let body = try NCMBCodec.updateBody(update)
        let response = try await send(.put, objectPath(cls, id), body: .json(body), context: "update \(className)/\(id)")
        _ = try NCMBUpdated(json: try json(response))
        return try await get(className: className, id: id)
    }

    public func delete(className: String, id: String, expectedVersion: String?) async throws {
        let cls = try NCMBClassName.validate(className)
        try checkWritable(cls)
        if expectedVersion != nil {
            throw MBaaSError.unsupported("expectedVersion", by: "ncmb", reason: capabilities.note(for: .optimisticLocking))
        }
        _ = try await send(.delete, objectPath(cls, id), context: "delete \(className)/\(id)")
    }

    /// NCMB has no batch endpoint, and ``capabilities`` does not declare ``Capabilities/Feature/batch``: applying
    /// the operations one by one would be an approximation the capability model forbids (no atomicity, partial
    /// results on a failure), so this throws ``MBaaSError/Kind/unsupported``. Send the operations one by one
    /// yourself if that is acceptable.
    public func batch(_ operations: [BatchOperation]) async throws -> [BatchResult] {
        throw MBaaSError.unsupported("batch", by: "ncmb", reason: capabilities.note(for: .batch))
    }

    // MARK: Relations (NCMB-specific)

    /// Sends one relation change (``ParseFamilyClient``: `addRelation`, `removeRelation`, role membership) and
    /// reads the record back.
    public func changeRelation(className: String, id: String, field: String, _ change: NCMBFieldChange) async throws -> Record {
        let cls = try NCMBClassName.validate(className)
        try checkWritable(cls)
        try NCMBCodec.checkFieldName(field)
        let response = try await send(.put, objectPath(cls, id), body: .json([field: change.json]),
                                      context: "update \(className)/\(id)")
        _ = try NCMBUpdated(json: try json(response))
        return try await get(className: className, id: id)
    }

    // MARK: Helpers

    func checkWritable(_ cls: NCMBClassName) throws(MBaaSError) {
        if cls == .file {
            throw MBaaSError(.invalidRequest, "_File records are the file store's metadata: use upload, deleteFile or updateFileACL")
        }
    }

    /// A record from an NCMB object; `_File` entries take their `fileName` as id.
    func decode(className: String, _ object: JSONObject) throws(MBaaSError) -> Record {
        var record = try NCMBCodec.decodeRecord(className: className, object)
        if NCMBClassName(className) == .file, record.id == nil, case .string(let name)? = record.fields["fileName"] {
            record.id = name
        }
        return record
    }
}
