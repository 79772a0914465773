public import Foundation
public import MBaaSCore
import MBaaSSalesforceWire

/// sObject CRUD and batches [capture: salesforce.md "sObject CRUD"; doc/sdk: "Composite and sObject Collections"]:
/// - ``create(_:)``: `POST /sobjects/{T}` → 201 `{id,success,errors}`, then the stored record is read back (the
///   save result carries no dates).
/// - ``get(className:id:)``: `GET /sobjects/{T}/{id}`; 404 NOT_FOUND / ENTITY_IS_DELETED and 400 MALFORMED_ID are
///   ``MBaaSError/Kind/notFound`` (the vendor code is kept).
/// - ``update(className:id:_:)``: `PATCH` → 204. ``delete(className:id:expectedVersion:)``: `DELETE` → 204.
///   An expected version on either is ``MBaaSError/Kind/unsupported``: Salesforce's only conditional write,
///   `If-Unmodified-Since` on PATCH (412 [sdk: `testUpdateWithIfUnmodifiedSince`]), compares whole seconds
///   (Salesforce keeps datetimes to the second [inferred from `.000` in every capture]), so two writes within one
///   second would pass as one version, and DELETE takes none [doc]; the capability `optimisticLocking` is not
///   declared (found by the live conformance run against the dialect, where the scenario was timing-dependent).
/// - ``batch(_:)``: one sObject Collections call with `allOrNone=true` (every operation one verb: create, update or
///   delete; at most 200), so a failure rolls back every operation and each result is the failing item's error.
extension SalesforceBackend {
    public func create(_ record: Record) async throws -> Record {
        try SalesforceWire.checkIdentifier(record.className)
        if record.id != nil {
            throw MBaaSError(.invalidRequest, "Salesforce assigns record ids; a new record cannot take one",
                             vendorCode: "INVALID_FIELD").refusing(MBaaSError.recordIdKey)
        }
        if record.acl != nil { throw MBaaSError.unsupported("record ACLs", by: adapterName, reason: capabilities.note(for: .acl)) }
        let body = try SalesforceRecordCodec.body(record.fields)
        let response = try await send(.post, path(.sobjects(record.className)), body: .object(body))
        let result = try SalesforceSaveResult(json: try json(response))
        guard result.success, let id = result.id else {
            let item = result.errors.first ?? SalesforceErrorItem(message: "the create was not saved", errorCode: "UNKNOWN_EXCEPTION")
            throw SalesforceErrorCodec.error(for: item, httpStatus: response.status.code)
        }
        return try await get(className: record.className, id: id)
    }

    public func get(className: String, id: String) async throws -> Record {
        try SalesforceWire.checkIdentifier(className)
        do {
            let response = try await send(.get, path(.sobject(className, id: id)))
            guard let o = try json(response).objectValue else { throw MBaaSError(.decoding, "a record must be a JSON object") }
            return try SalesforceRecordCodec.record(o, className: className)
        } catch let e as MBaaSError {
            throw Self.missingRecord(e, className: className, id: id)
        }
    }

    /// MALFORMED_ID answers for an id that cannot exist: as far as a caller is concerned, no such record.
    static func missingRecord(_ e: MBaaSError, className: String, id: String) -> MBaaSError {
        guard e.vendorCode == "MALFORMED_ID" else { return e }
        var n = MBaaSError(.notFound, "\(className) \(id) not found: " + e.message, vendorCode: e.vendorCode, httpStatus: e.httpStatus)
        n.refusedField = nil
        return n
    }

    public func update(className: String, id: String, _ update: RecordUpdate) async throws -> Record {
        try SalesforceWire.checkIdentifier(className)
        if update.acl != nil { throw MBaaSError.unsupported("record ACLs", by: adapterName, reason: capabilities.note(for: .acl)) }
        let body = try changesBody(update.changes)
        let headers: [(String, String)] = []
        if update.expectedVersion != nil { throw Self.noOptimisticLocking(adapterName, capabilities) }
        do {
            _ = try await send(.patch, path(.sobject(className, id: id)), body: .object(body), headers: headers)
        } catch let e as MBaaSError {
            if e.kind == .conflict {
                let now = try? await get(className: className, id: id)
                throw e.conflicting(currentVersion: now?.version)
            }
            throw Self.missingRecord(e, className: className, id: id)
        }
        return try await get(className: className, id: id)
    }

    /// The fields of a PATCH: `set` values, `delete` as null; other operations are `unsupported`.
    nonisolated func changesBody(_ changes: [String: FieldOperation]) throws(MBaaSError) -> JSONObject {
        var fields: [String: Value] = [:]
        for (k, op) in changes {
            switch op {
            case .set(let v): fields[k] = v
            case .delete: fields[k] = .null
            default:
                throw MBaaSError.unsupported("the field operation on '\(k)'", by: adapterName,
                                             reason: capabilities.note(for: .fieldOperations))
            }
        }
        return try SalesforceRecordCodec.body(fields)
    }

    public func delete(className: String, id: String, expectedVersion: String?) async throws {
        try SalesforceWire.checkIdentifier(className)
        if expectedVersion != nil { throw Self.noOptimisticLocking(adapterName, capabilities) }
        do {
            _ = try await send(.delete, path(.sobject(className, id: id)))
        } catch let e as MBaaSError {
            throw Self.missingRecord(e, className: className, id: id)
        }
    }

    // MARK: Batches

    public func batch(_ operations: [BatchOperation]) async throws -> [BatchResult] {
        if operations.isEmpty { return [] }
        guard operations.count <= SalesforceWire.maxCollectionSize else {
            throw MBaaSError(.invalidRequest, "a batch holds at most \(SalesforceWire.maxCollectionSize) operations (sObject Collections), got \(operations.count)")
        }
        let failAll = { (e: MBaaSError) in operations.map { _ in BatchResult.failure(e) } }
        var creates: [Record] = [], updates: [(String, String, RecordUpdate)] = [], deletes: [(String, String)] = []
        for op in operations {
            switch op {
            case .create(let r): creates.append(r)
            case .update(let c, let id, let u): updates.append((c, id, u))
            case .delete(let c, let id): deletes.append((c, id))
            }
        }
        guard [creates.isEmpty, updates.isEmpty, deletes.isEmpty].filter({ !$0 }).count == 1 else {
            return try await compositeBatch(operations)
        }
        var records: [JSONObject] = []
        var targets: [(className: String, id: String?)] = []
        do {
            for r in creates {
                try SalesforceWire.checkIdentifier(r.className)
                if r.id != nil { throw MBaaSError(.invalidRequest, "Salesforce assigns record ids; a new record cannot take one").refusing(MBaaSError.recordIdKey) }
                if r.acl != nil { throw MBaaSError.unsupported("record ACLs", by: adapterName, reason: capabilities.note(for: .acl)) }
                records.append(try SalesforceRecordCodec.body(r.fields, type: r.className))
                targets.append((r.className, nil))
            }
            for (c, id, u) in updates {
                try SalesforceWire.checkIdentifier(c)
                if u.expectedVersion != nil {
                    throw MBaaSError.unsupported("expected versions in a batch", by: adapterName,
                                                 reason: "sObject Collections take no conditional headers; update one by one")
                }
                if u.acl != nil { throw MBaaSError.unsupported("record ACLs", by: adapterName, reason: capabilities.note(for: .acl)) }
                var body = try changesBody(u.changes)
                body["attributes"] = .object(["type": .string(c)])
                body["Id"] = .string(id)
                records.append(body)
                targets.append((c, id))
            }
        } catch let e as MBaaSError {
            return failAll(e)
        }
        let response: TransportResponse
        do {
            if !deletes.isEmpty {
                response = try await send(.delete, path(.collections),
                                          query: [("ids", deletes.map(\.1).joined(separator: ",")), ("allOrNone", "true")])
            } else {
                response = try await send(creates.isEmpty ? .patch : .post, path(.collections),
                                          body: SalesforceCollectionRequest(allOrNone: true, records: records).json)
            }
        } catch let e as MBaaSError {
            return failAll(e)
        }
        let results = try SalesforceCollectionRequest.results(try json(response))
        guard results.count == operations.count else {
            throw MBaaSError(.decoding, "a collection response has \(results.count) results for \(operations.count) records")
        }
        if let failed = results.first(where: { !$0.success }) {
            let item = results.flatMap(\.errors).first(where: { $0.errorCode != "ALL_OR_NONE_OPERATION_ROLLED_BACK" })
                ?? failed.errors.first ?? SalesforceErrorItem(message: "the batch was rolled back", errorCode: "ALL_OR_NONE_OPERATION_ROLLED_BACK")
            return failAll(SalesforceErrorCodec.error(for: item, httpStatus: nil))
        }
        if !deletes.isEmpty { return deletes.map { .success(Record(className: $0.0, id: $0.1)) } }
        // Read back what was stored, one collection retrieve per type.
        let ids = zip(targets, results).map { ($0.className, $0.id ?? $1.id ?? "") }
        var stored: [String: Record] = [:]
        for className in Set(ids.map(\.0)).sorted() {
            let wanted = ids.filter { $0.0 == className }.map(\.1)
            for r in try await retrieve(className: className, ids: wanted) { if let id = r.id { stored[id] = r } }
        }
        return ids.map { c, id in
            stored[id].map(BatchResult.success) ?? .failure(MBaaSError(.notFound, "\(c) \(id) was saved but cannot be read back"))
        }
    }

    /// A batch mixing creates, updates and deletes: one Composite call (`POST /composite`, `allOrNone: true`) of at
    /// most 25 subrequests, so it is atomic as a whole [doc: "Composite"]. A failing subrequest fails every result
    /// with its error (the others answer `PROCESSING_HALTED`); created and updated records are read back as a
    /// single-verb batch's are. More than 25 operations is `unsupported` (split the batch by verb: one collection
    /// call takes up to 200).
    func compositeBatch(_ operations: [BatchOperation]) async throws -> [BatchResult] {
        guard operations.count <= SalesforceWire.maxCompositeSubrequests else {
            throw MBaaSError.unsupported("a batch mixing creates, updates and deletes of more than \(SalesforceWire.maxCompositeSubrequests) operations",
                                         by: adapterName, reason: "one Composite call takes at most \(SalesforceWire.maxCompositeSubrequests) subrequests, and only one call is atomic (allOrNone); a batch of one verb takes up to \(SalesforceWire.maxCollectionSize)")
        }
        let failAll = { (e: MBaaSError) in operations.map { _ in BatchResult.failure(e) } }
        var subrequests: [SalesforceCompositeRequest.Subrequest] = []
        do {
            for (i, op) in operations.enumerated() {
                let reference = "op\(i)"
                switch op {
                case .create(let r):
                    try SalesforceWire.checkIdentifier(r.className)
                    if r.id != nil { throw MBaaSError(.invalidRequest, "Salesforce assigns record ids; a new record cannot take one").refusing(MBaaSError.recordIdKey) }
                    if r.acl != nil { throw MBaaSError.unsupported("record ACLs", by: adapterName, reason: capabilities.note(for: .acl)) }
                    subrequests.append(.init(method: "POST", url: path(.sobjects(r.className)), referenceId: reference,
                                             body: .object(try SalesforceRecordCodec.body(r.fields))))
                case .update(let c, let id, let u):
                    try SalesforceWire.checkIdentifier(c)
                    if u.expectedVersion != nil {
                        throw MBaaSError.unsupported("expected versions in a batch", by: adapterName,
                                                     reason: "a Composite subrequest carries no conditional header here; update one by one")
                    }
                    if u.acl != nil { throw MBaaSError.unsupported("record ACLs", by: adapterName, reason: capabilities.note(for: .acl)) }
                    subrequests.append(.init(method: "PATCH", url: path(.sobject(c, id: id)), referenceId: reference,
                                             body: .object(try changesBody(u.changes))))
                case .delete(let c, let id):
                    try SalesforceWire.checkIdentifier(c)
                    subrequests.append(.init(method: "DELETE", url: path(.sobject(c, id: id)), referenceId: reference))
                }
            }
        } catch let e as MBaaSError {
            return failAll(e)
        }
        let answer: SalesforceCompositeResponse
        do {
            let response = try await send(.post, path(.composite),
                                          body: SalesforceCompositeRequest(allOrNone: true, subrequests: subrequests).json)
            answer = try SalesforceCompositeResponse(json: try json(response))
        } catch let e as MBaaSError {
            return failAll(e)
        }
        guard answer.subresponses.count == operations.count else {
            throw MBaaSError(.decoding, "a composite response has \(answer.subresponses.count) sub-responses for \(operations.count) subrequests")
        }
        if answer.subresponses.contains(where: { $0.httpStatusCode >= 300 }) {
            let failed = answer.subresponses.filter { $0.httpStatusCode >= 300 }
            let cause = failed.lazy.compactMap { r in
                SalesforceCompositeResponse.errors(r.body).first { $0.errorCode != "PROCESSING_HALTED" }.map { (r, $0) }
            }.first
            let (status, item) = cause.map { ($0.0.httpStatusCode, $0.1) }
                ?? (failed[0].httpStatusCode, SalesforceCompositeResponse.errors(failed[0].body).first ?? SalesforceCompositeResponse.processingHalted)
            return failAll(SalesforceErrorCodec.error(for: item, httpStatus: status))
        }
        // Every subrequest succeeded: read back what was created or updated, one collection retrieve per type.
        var ids: [(className: String, id: String)?] = []
        for (op, r) in zip(operations, answer.subresponses) {
            switch op {
            case .create(let record):
                guard let id = r.body["id"]?.stringValue else { throw MBaaSError(.decoding, "a composite create answered no id") }
                ids.append((record.className, id))
            case .update(let c, let id, _): ids.append((c, id))
            case .delete: ids.append(nil)
            }
        }
        var stored: [String: Record] = [:]
        let written = ids.compactMap { $0 }
        for className in Set(written.map(\.className)).sorted() {
            let wanted = written.filter { $0.className == className }.map(\.id)
            for r in try await retrieve(className: className, ids: wanted) { if let id = r.id { stored[id] = r } }
        }
        return zip(operations, ids).map { op, target in
            guard let target else {
                if case .delete(let c, let id) = op { return .success(Record(className: c, id: id)) }
                return .failure(MBaaSError(.internal, "no target"))
            }
            return stored[target.id].map(BatchResult.success)
                ?? .failure(MBaaSError(.notFound, "\(target.className) \(target.id) was saved but cannot be read back"))
        }
    }

    /// `POST /composite/sobjects/{T}` `{ids, fields}`: the records, skipping the `null` slots of missing ids.
    func retrieve(className: String, ids: [String]) async throws -> [Record] {
        let fields = ["Id", "CreatedDate", "LastModifiedDate"] + (try await describedFields(className))
        let body: JSON = .object(["ids": .array(ids.map(JSON.string)), "fields": .array(fields.map(JSON.string))])
        let response = try await send(.post, path(.collectionRetrieve(className)), body: body)
        guard let items = try json(response).arrayValue else { throw MBaaSError(.decoding, "a collection retrieve must answer an array") }
        var out: [Record] = []
        for item in items {
            guard let o = item.objectValue else { continue }
            out.append(try SalesforceRecordCodec.record(o, className: className))
        }
        return out
    }

    /// The names of a type's fields (describe, cached), without the audit fields.
    func describedFields(_ className: String) async throws -> [String] {
        if let cached = describeCache[className] { return cached }
        let response = try await send(.get, path(.describe(className)))
        let describe = try SalesforceDescribe(json: try json(response))
        let names = describe.fields.map(\.name).filter { !SalesforceRecordCodec.systemFields.contains($0) && SalesforceWire.isIdentifier($0) }
        describeCache[className] = names
        return names
    }
}

extension SalesforceBackend {
    /// Why an expected version is refused (see ``update(className:id:_:)``).
    static func noOptimisticLocking(_ adapter: String, _ capabilities: Capabilities) -> MBaaSError {
        MBaaSError.unsupported("expected versions (optimistic locking)", by: adapter, reason: capabilities.note(for: .optimisticLocking))
    }
}
