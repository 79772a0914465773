import Foundation
public import MBaaSCore

/// Batches: `POST /api/batch`, one transaction on the server (all or nothing). PocketBase ships with batch
/// requests disabled; a superuser client turns them on in the settings the first time the server refuses one.
extension PocketBaseBackend {
    public func batch(_ operations: [BatchOperation]) async throws -> [BatchResult] {
        guard operations.count <= capabilities.maxBatchSize else {
            throw MBaaSError(.invalidRequest, "a PocketBase batch holds at most \(capabilities.maxBatchSize) operations, got \(operations.count)")
        }
        guard !operations.isEmpty else { return [] }
        var items: [PocketBaseBatchRequest.Item] = []
        var schemas: [PocketBaseSchema?] = []
        for (index, op) in operations.enumerated() {
            do {
                switch op {
                case .create(let record):
                    let (body, schema) = try await createBody(record)
                    items.append(.init(method: "POST", url: PocketBaseWire.recordsPath(record.className), body: body))
                    schemas.append(schema)
                case .update(let className, let id, let update):
                    let (body, schema) = try await updateBody(className: className, update)
                    items.append(.init(method: "PATCH", url: PocketBaseWire.recordsPath(className, id: id), body: body))
                    schemas.append(schema)
                case .delete(let className, let id):
                    try Self.checkClassName(className)
                    items.append(.init(method: "DELETE", url: PocketBaseWire.recordsPath(className, id: id)))
                    schemas.append(nil)
                }
            } catch {
                var e = MBaaSError.wrap(error)
                e.message = "batch operation \(index) not sent, nothing applied: \(e.message)"
                return Array(repeating: .failure(e), count: operations.count)
            }
        }
        let request = PocketBaseBatchRequest(requests: items)
        let response: JSON
        do {
            response = try await sendBatch(request)
        } catch let e as MBaaSError where e.kind != .transport && e.kind != .unsupported {
            return Array(repeating: .failure(e), count: operations.count)
        }
        let results = try PocketBaseBatchResponse(json: response).results
        guard results.count == operations.count else {
            throw MBaaSError(.decoding, "PocketBase answered a batch of \(operations.count) with \(results.count) results")
        }
        var out: [BatchResult] = []
        for (i, (op, result)) in zip(operations, results).enumerated() {
            switch op {
            case .delete(let className, let id):
                out.append(.success(Record(className: className, id: id)))
            case .create(let r):
                guard let object = result.body.objectValue else { throw MBaaSError(.decoding, "batch result \(i) has no record") }
                out.append(.success(try decode(object, className: r.className, schema: schemas[i])))
            case .update(let className, _, _):
                guard let object = result.body.objectValue else { throw MBaaSError(.decoding, "batch result \(i) has no record") }
                out.append(.success(try decode(object, className: className, schema: schemas[i])))
            }
        }
        return out
    }

    private func sendBatch(_ request: PocketBaseBatchRequest) async throws -> JSON {
        do {
            return try await sendJSON(.post, "/api/batch", json: request.json, as: .data, operation: .batch)
        } catch let e as MBaaSError where e.kind == .forbidden && e.message.hasPrefix("Batch requests are not allowed") {
            guard configuration.managesSchema else {
                throw MBaaSError.unsupported(
                    "batch requests on this server", by: "pocketbase",
                    reason: "they are disabled in its settings (enable the Batch API, or open the backend once with superuser credentials)")
            }
            try await enableBatch()
            return try await sendJSON(.post, "/api/batch", json: request.json, as: .data, operation: .batch)
        }
    }
}
