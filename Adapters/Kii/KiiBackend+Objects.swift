import Foundation
public import MBaaSCore
import MBaaSKiiWire

/// Objects (kii.md §3).
///
/// - ``create(_:)``: `POST {bucket}/objects`; a record with an `id` is created with `PUT {bucket}/objects/{id}` and
///   `If-None-Match: *` (an existing id is `OBJECT_ALREADY_EXISTS` → ``MBaaSError/Kind/duplicate``). A record or
///   update carrying an ACL is ``MBaaSError/Kind/unsupported`` (Kii does not enforce it in app scope; see
///   ``setACL(_:className:id:)`` for explicit object ACL entries).
/// - ``get(className:id:)``: `GET {bucket}/objects/{id}`; the version is the `ETag`.
/// - ``update(className:id:_:)``: `set` changes go in one partial update (`POST` with
///   `X-HTTP-Method-Override: PATCH`, `If-Match` with `expectedVersion`), which returns the merged object. Kii's
///   partial update cannot remove keys, so an update that removes fields reads the object and replaces it with a
///   full `PUT` guarded by `If-Match` (the caller's `expectedVersion`, else the version just read, retried on a
///   concurrent change). `OBJECT_VERSION_IS_STALE` → ``MBaaSError/Kind/conflict``. Increment and array operators
///   are ``MBaaSError/Kind/unsupported`` (no Kii equivalent).
/// - ``delete(className:id:expectedVersion:)``: `DELETE` with optional `If-Match`.
/// - ``batch(_:)``: ``MBaaSError/Kind/unsupported`` (Kii has no object batch).
extension KiiBackend {
    public func create(_ record: Record) async throws -> Record {
        let bucket = try address(record.className)
        let body = try KiiObjectCodec.body(fields: record.fields)
        try refuseRecordACL(record.acl)
        var created: Record
        if let id = record.id {
            guard KiiBackend.isValidObjectID(id) else {
                throw MBaaSError(.invalidRequest, "Kii object id '\(id)' must be 2-100 characters of A-Z a-z 0-9 - _ .")
                    .refusing(MBaaSError.recordIdKey)
            }
            let response = try await send(try requests.putObject(bucket, id: id, body: body, createOnly: true),
                                          requireUser: bucket.needsUserToken)
            let answer = try KiiObjectUpdateResponse(json: try json(response))
            let createdAt = KiiObjectCodec.date(.int(answer.createdAt ?? answer.modifiedAt))
            created = Record(className: record.className, id: id, createdAt: createdAt,
                             updatedAt: KiiObjectCodec.date(.int(answer.modifiedAt)),
                             version: KiiETag.unquote(response.headers["ETag"]) ?? "1")
        } else {
            let response = try await send(try requests.createObject(bucket, body: body), requireUser: bucket.needsUserToken)
            let answer = try KiiObjectCreationResponse(json: try json(response))
            let createdAt = KiiObjectCodec.date(.int(answer.createdAt))
            created = Record(className: record.className, id: answer.objectID, createdAt: createdAt, updatedAt: createdAt,
                             version: KiiETag.unquote(response.headers["ETag"]) ?? "1")
        }
        created.fields = KiiObjectCodec.record(className: record.className, object: body).fields
        return created
    }

    public func get(className: String, id: String) async throws -> Record {
        let bucket = try address(className)
        let response = try await send(try requests.getObject(bucket, id: id), requireUser: bucket.needsUserToken)
        return try record(className: className, response)
    }

    public func update(className: String, id: String, _ update: RecordUpdate) async throws -> Record {
        let bucket = try address(className)
        var sets = JSONObject()
        var removals: [String] = []
        for (key, op) in update.changes.sorted(by: { $0.key < $1.key }) {
            try KiiObjectCodec.validateFieldName(key)
            switch op {
            case .set(let value): sets[key] = KiiObjectCodec.kiiJSON(value)
            case .delete: removals.append(key)
            case .increment, .add, .addUnique, .remove:
                throw MBaaSError.unsupported("the field operation on '\(key)'", by: adapterName,
                                             reason: capabilities.note(for: .fieldOperations))
            }
        }
        try refuseRecordACL(update.acl)
        var result: Record
        if !removals.isEmpty {
            result = try await replace(bucket: bucket, className: className, id: id, sets: sets, removals: removals,
                                       expectedVersion: update.expectedVersion)
        } else if !sets.isEmpty {
            let response = try await send(
                try requests.patchObject(bucket, id: id, changes: sets, ifMatch: update.expectedVersion),
                requireUser: bucket.needsUserToken)
            result = try record(className: className, response)
        } else {
            result = try await get(className: className, id: id)
            if let expected = update.expectedVersion, result.version != expected {
                throw MBaaSError(.conflict, "Kii object \(id) is at version \(result.version ?? "?"), not \(expected)",
                                 vendorCode: "OBJECT_VERSION_IS_STALE").conflicting(currentVersion: result.version)
            }
        }
        return result
    }

    /// Reads, edits and `PUT`s the whole object under `If-Match` (kii.md §3.5): the only way to remove keys.
    func replace(bucket: KiiBucketAddress, className: String, id: String, sets: JSONObject, removals: [String],
                 expectedVersion: String?) async throws -> Record
    {
        var attempt = 0
        while true {
            attempt += 1
            let response = try await send(try requests.getObject(bucket, id: id), requireUser: bucket.needsUserToken)
            guard let object = try json(response).objectValue else {
                throw MBaaSError(.decoding, "Kii object response is not a JSON object", httpStatus: response.status.code)
            }
            let current = KiiObjectCodec.record(className: className, object: object, etag: KiiETag.unquote(response.headers["ETag"]))
            // Kii keeps its reserved `_` keys itself; the PUT carries the application fields, verbatim.
            var body = JSONObject()
            for (key, value) in object where !key.hasPrefix("_") && !removals.contains(key) { body[key] = value }
            for (key, value) in sets { body[key] = value }
            body = JSONObject(sorting: body.dictionary)
            let ifMatch = expectedVersion ?? current.version
            do {
                let response = try await send(try requests.putObject(bucket, id: id, body: body, ifMatch: ifMatch),
                                              requireUser: bucket.needsUserToken)
                let answer = try KiiObjectUpdateResponse(json: try json(response))
                var result = KiiObjectCodec.record(className: className, object: body)
                result.id = id
                result.createdAt = current.createdAt
                result.updatedAt = KiiObjectCodec.date(.int(answer.modifiedAt))
                result.version = KiiETag.unquote(response.headers["ETag"])
                return result
            } catch let error as MBaaSError where error.kind == .conflict && expectedVersion == nil && attempt < 3 {
                continue  // changed between our read and write: read again
            }
        }
    }

    public func delete(className: String, id: String, expectedVersion: String?) async throws {
        let bucket = try address(className)
        _ = try await send(try requests.deleteObject(bucket, id: id, ifMatch: expectedVersion),
                           requireUser: bucket.needsUserToken)
    }

    /// Kii has no object batch, and ``capabilities`` does not declare ``Capabilities/Feature/batch``: applying the
    /// operations one by one would be an approximation the capability model forbids, so this throws
    /// ``MBaaSError/Kind/unsupported``.
    public func batch(_ operations: [BatchOperation]) async throws -> [BatchResult] {
        throw MBaaSError.unsupported("batch", by: adapterName, reason: capabilities.note(for: .batch))
    }

    /// A record or update carrying an ACL is refused: the adapter does not declare ``Capabilities/Feature/acl``
    /// because Kii does not enforce a record's read ACL in app scope (the bucket's default READ_OBJECTS_IN_BUCKET
    /// grant), so writing it would promise a protection that does not hold. ``setACL(_:className:id:)`` writes Kii
    /// object ACL entries explicitly.
    nonisolated func refuseRecordACL(_ acl: ACL?) throws(MBaaSError) {
        guard acl != nil else { return }
        throw MBaaSError.unsupported("a record ACL", by: adapterName, reason: capabilities.note(for: .acl))
    }

    /// A record from a `GET` or `PATCH` answer (the object JSON and its `ETag`).
    nonisolated func record(className: String, _ response: TransportResponse) throws -> Record {
        guard let object = try json(response).objectValue else {
            throw MBaaSError(.decoding, "Kii object response is not a JSON object", httpStatus: response.status.code)
        }
        return KiiObjectCodec.record(className: className, object: object, etag: KiiETag.unquote(response.headers["ETag"]))
    }

    /// Kii's object-id rule (``KiiWire/isValidObjectID(_:)``).
    static func isValidObjectID(_ id: String) -> Bool { KiiWire.isValidObjectID(id) }
}
