import Foundation
public import MBaaSCore

/// Objects on `/classes/{class}` (`/users`, `/roles`, `/sessions` for the built-in classes).
///
/// - create: `POST` → `201`, `Location` and `{"createdAt","objectId"}`; the record comes back with the fields sent
///   and `updatedAt == createdAt`. Parse assigns ids: a record with an `id` is refused.
/// - get: `GET /classes/{class}/{id}`; `101` (missing or not readable) is `notFound`.
/// - update: `PUT` with the changed fields (`__op` for Delete, Increment, Add, AddUnique, Remove) → `200
///   {"updatedAt",…}`, then a `GET` to return the record as stored.
/// - delete: `DELETE` → `200 {}`.
/// - batch: `POST /batch` in chunks (``ParseConfiguration/batchSize``, default 20), one ``BatchResult`` per
///   operation, in order. Not atomic (no `transaction`). A create's result is the record sent with the server's id
///   and dates; an update's is read back after its chunk with one `$in` query per class (a record the same chunk
///   deleted afterwards reads back as `notFound`); a delete's is the class and id.
extension ParseBackend {
    public func create(_ record: Record) async throws -> Record {
        let cls = try Self.checkClassName(record.className)
        if let id = record.id {
            throw MBaaSError.unsupported("creating a record with a given id ('\(id)')", by: "parse",
                                         reason: capabilities.note(for: .clientIds)).refusing(MBaaSError.recordIdKey)
        }
        let body = try ParseCodec.createBody(record)
        let response = try await send(.post, ParseRoute.objects(cls).path, body: .json(body), context: "create \(cls)")
        let created = try ParseCreated(json: try json(response))
        return Self.stored(record, created)
    }

    static func stored(_ record: Record, _ created: ParseCreated) -> Record {
        var stored = record
        stored.id = created.objectId
        stored.createdAt = created.createdAt
        stored.updatedAt = created.createdAt
        return stored
    }

    public func get(className: String, id: String) async throws -> Record {
        let cls = try Self.checkClassName(className)
        let response = try await send(.get, ParseRoute.object(cls, id: id).path, context: "get \(cls)/\(id)")
        guard let object = try json(response).objectValue else { throw MBaaSError(.decoding, "object response is not an object") }
        return try ParseCodec.decodeRecord(className: cls, object)
    }

    public func update(className: String, id: String, _ update: RecordUpdate) async throws -> Record {
        let cls = try Self.checkClassName(className)
        if update.expectedVersion != nil {
            throw MBaaSError.unsupported("expectedVersion", by: "parse", reason: capabilities.note(for: .optimisticLocking))
        }
        let body = try ParseCodec.updateBody(update)
        let response = try await send(.put, ParseRoute.object(cls, id: id).path, body: .json(body),
                                      context: "update \(cls)/\(id)")
        _ = try ParseUpdated(json: try json(response))
        return try await get(className: cls, id: id)
    }

    public func delete(className: String, id: String, expectedVersion: String?) async throws {
        let cls = try Self.checkClassName(className)
        if expectedVersion != nil {
            throw MBaaSError.unsupported("expectedVersion", by: "parse", reason: capabilities.note(for: .optimisticLocking))
        }
        _ = try await send(.delete, ParseRoute.object(cls, id: id).path, context: "delete \(cls)/\(id)")
    }

    // MARK: Batch

    /// The `/batch` sub-request of an operation (paths with the mount prefix).
    func batchItem(_ op: BatchOperation) throws(MBaaSError) -> ParseBatchRequest.Item {
        let mount = configuration.mount
        switch op {
        case .create(let record):
            let cls = try Self.checkClassName(record.className)
            if let id = record.id {
                throw MBaaSError.unsupported("creating a record with a given id ('\(id)')", by: "parse",
                                             reason: capabilities.note(for: .clientIds)).refusing(MBaaSError.recordIdKey)
            }
            return .init(method: "POST", path: ParseRoute.objects(cls).fullPath(mount: mount), body: try ParseCodec.createBody(record))
        case .update(let className, let id, let update):
            let cls = try Self.checkClassName(className)
            if update.expectedVersion != nil {
                throw MBaaSError.unsupported("expectedVersion", by: "parse", reason: capabilities.note(for: .optimisticLocking))
            }
            return .init(method: "PUT", path: ParseRoute.object(cls, id: id).fullPath(mount: mount),
                         body: try ParseCodec.updateBody(update))
        case .delete(let className, let id):
            let cls = try Self.checkClassName(className)
            return .init(method: "DELETE", path: ParseRoute.object(cls, id: id).fullPath(mount: mount))
        }
    }

    public func batch(_ operations: [BatchOperation]) async throws -> [BatchResult] {
        if operations.count > capabilities.maxBatchSize {
            throw MBaaSError(.invalidRequest, "a batch holds at most \(capabilities.maxBatchSize) operations, got \(operations.count)")
        }
        var items: [ParseBatchRequest.Item] = []
        for op in operations { items.append(try batchItem(op)) }
        var results: [BatchResult] = []
        results.reserveCapacity(operations.count)
        var offset = 0
        for chunk in try ParseWire.chunks(items, size: configuration.batchSize) {
            let ops = Array(operations[offset..<(offset + chunk.count)])
            offset += chunk.count
            let response = try await send(.post, ParseRoute.batch.path,
                                          body: .json(ParseBatchRequest(requests: chunk).json.objectValue!),
                                          context: "batch")
            let answer = try ParseBatchResponse(json: try json(response))
            guard answer.items.count == chunk.count else {
                throw MBaaSError(.decoding, "batch answered \(answer.items.count) items for \(chunk.count) requests")
            }
            results += try await chunkResults(ops, answer.items)
        }
        return results
    }

    /// One result per operation of a chunk: failures as sent, deletes as class and id, creates as sent plus the
    /// server's id and dates, updates as read back (one `$in` query per class).
    private func chunkResults(_ ops: [BatchOperation], _ items: [ParseBatchResponse.Item]) async throws -> [BatchResult] {
        var results: [BatchResult?] = Array(repeating: nil, count: ops.count)
        var updated: [String: [(index: Int, id: String)]] = [:]
        for (i, (op, item)) in zip(ops, items).enumerated() {
            switch item {
            case .error(let body):
                results[i] = .failure(body.mbaasError(httpStatus: ParseErrorBody.httpStatus(forCode: body.code), context: "batch[\(i)]"))
            case .success(let json):
                switch op {
                case .create(let record):
                    do { results[i] = .success(Self.stored(record, try ParseCreated(json: json))) } catch {
                        results[i] = .failure(error)
                    }
                case .update(let cls, let id, _): updated[cls, default: []].append((i, id))
                case .delete(let cls, let id): results[i] = .success(Record(className: cls, id: id))
                }
            }
        }
        for cls in updated.keys.sorted() {
            let entries = updated[cls]!
            let ids = Array(Set(entries.map(\.id))).sorted()
            let page = try await queryPage(Query(cls, predicate: .in("id", ids.map(Value.string)), limit: ids.count))
            let byId = Dictionary(page.records.compactMap { r in r.id.map { ($0, r) } }, uniquingKeysWith: { a, _ in a })
            for (index, id) in entries {
                results[index] = byId[id].map(BatchResult.success)
                    ?? .failure(MBaaSError(.notFound, "batch[\(index)]: \(cls)/\(id) was updated but cannot be read back"))
            }
        }
        return results.map { $0! }
    }

    // MARK: Relations (Parse-specific)

    /// Sends one relation change (``ParseFamilyClient``: `addRelation`, `removeRelation`, role membership) and
    /// reads the record back.
    public func changeRelation(className: String, id: String, field: String, _ change: ParseFieldChange) async throws -> Record {
        let cls = try Self.checkClassName(className)
        try ParseCodec.checkFieldName(field)
        let response = try await send(.put, ParseRoute.object(cls, id: id).path, body: .json([field: change.json]),
                                      context: "update \(cls)/\(id)")
        _ = try ParseUpdated(json: try json(response))
        return try await get(className: cls, id: id)
    }
}
