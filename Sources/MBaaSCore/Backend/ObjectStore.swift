import Foundation

/// A change to one field in a partial update.
public enum FieldOperation: Sendable, Hashable {
    /// Set the field to a value.
    case set(Value)
    /// Remove the field (a backend that cannot remove one clears it to `null`; the neutral record then lacks it).
    case delete
    /// Add a number atomically.
    case increment(Value)
    /// Append to an array.
    case add([Value])
    /// Append values not already present.
    case addUnique([Value])
    /// Remove every occurrence of the values.
    case remove([Value])
}

/// A partial update: the fields to change and, optionally, the version the caller last saw.
public struct RecordUpdate: Sendable, Hashable {
    public var changes: [String: FieldOperation]
    /// When set, the update fails with ``MBaaSError/Kind/conflict`` if the stored version differs.
    public var expectedVersion: String?
    /// When set, replaces the record's ACL.
    public var acl: ACL?

    public init(changes: [String: FieldOperation] = [:], expectedVersion: String? = nil, acl: ACL? = nil) {
        self.changes = changes
        self.expectedVersion = expectedVersion
        self.acl = acl
    }

    /// Sets each field to the given value.
    public static func set(_ fields: [String: Value], expectedVersion: String? = nil) -> RecordUpdate {
        RecordUpdate(changes: fields.mapValues { .set($0) }, expectedVersion: expectedVersion)
    }
}

/// One page of query results.
public struct RecordPage: Sendable, Hashable {
    public var records: [Record]
    /// Pass as ``Query/cursor`` to fetch the next page; `nil` on the last page.
    public var nextCursor: String?
    /// The total number of matches, when the backend returned it for free.
    public var totalCount: Int?

    public init(records: [Record], nextCursor: String? = nil, totalCount: Int? = nil) {
        self.records = records
        self.nextCursor = nextCursor
        self.totalCount = totalCount
    }
}

/// One write in a batch.
public enum BatchOperation: Sendable, Hashable {
    case create(Record)
    case update(className: String, id: String, RecordUpdate)
    case delete(className: String, id: String)
}

/// The result of one batch operation, in the order given.
public enum BatchResult: Sendable {
    /// The record as stored (for deletes: class and id only).
    case success(Record)
    case failure(MBaaSError)
}

/// Stores and finds records.
///
/// Every method throws ``MBaaSError`` only.
///
/// # Contract
/// - ``create(_:)`` stores a new record and returns it with `id`, `createdAt`, `updatedAt` and, where the
///   backend has one, `version` set. Reserved field names are ``MBaaSError/Kind/invalidRequest``. A record that
///   already carries an `id` is created with that id where the backend allows it, else `invalidRequest`.
/// - ``get(className:id:)`` returns the record or throws ``MBaaSError/Kind/notFound`` (also for a record the
///   current user may not read, unless the backend distinguishes `forbidden`).
/// - ``update(className:id:_:)`` changes only the named fields, checks `expectedVersion` when given (a stale
///   version is ``MBaaSError/Kind/conflict`` and changes nothing) and returns the whole updated record.
/// - ``delete(className:id:expectedVersion:)`` removes the record; a missing record is `notFound`.
/// - ``queryPage(_:)`` returns at most `limit` records (the adapter's default page size when `nil`, never more
///   than ``Capabilities/maxPageSize``), in `sort` order, with `nextCursor` set when more may follow. Records with
///   equal sort keys keep a stable order across pages. An operator or feature outside ``Capabilities`` is
///   `unsupported` (see ``Query/validate(against:backend:)``).
/// - ``count(_:)`` counts every match, ignoring `limit`, `skip` and `cursor`.
/// - ``batch(_:)`` applies the operations in order and returns one result each. With
///   ``Capabilities/Feature/atomicBatch`` any failure rolls everything back and every result is that failure;
///   without it, results are per operation. Batches over ``Capabilities/maxBatchSize`` are `invalidRequest`.
/// - ``narrowedACL(_:)`` returns the ACL a record written with `acl` reads back with: `acl` itself where the backend
///   stores it as given, its own form of the same grants where it stores another (scopes instead of principals, say). For an ACL it
///   cannot store (a backend declaring ``Capabilities/Feature/aclNarrowing``; writing it is `unsupported`), the ACL
///   it can store that is nearest without granting more: no principal gains access it did not have, except the
///   writing user on a backend whose records always belong to their writer. It writes nothing; `unsupported` when
///   there is no such ACL (no session to own the record, say). The default returns `acl`.
/// - ``preflight(className:records:)`` writes nothing and sends nothing that changes the backend: it throws what
///   creating such records in the class would be refused for, as far as the backend can tell beforehand (a table
///   that would be too wide, a field that is not a column), the error ``create(_:)`` would throw. Passing promises
///   nothing; the default checks nothing.
/// - ``recordACLs(className:ids:)`` reads the access records grant, for a store whose records are read without their
///   ACL (no ``Capabilities/Feature/acl``) but which keeps and enforces one per record
///   (``Capabilities/Feature/aclRead``): for each id, the ACL that grants on another store what the record grants here
///   (its own grants with what the store grants on every record of the class, say). An id the answer lacks is a record that
///   is gone. `unsupported` without the capability (the default).
public protocol ObjectStore: Sendable {
    func create(_ record: Record) async throws -> Record
    func get(className: String, id: String) async throws -> Record
    func update(className: String, id: String, _ update: RecordUpdate) async throws -> Record
    func delete(className: String, id: String, expectedVersion: String?) async throws
    func queryPage(_ query: Query) async throws -> RecordPage
    func count(_ query: Query) async throws -> Int
    func batch(_ operations: [BatchOperation]) async throws -> [BatchResult]
    func narrowedACL(_ acl: ACL) async throws -> ACL
    func preflight(className: String, records: [Record]) async throws
    func recordACLs(className: String, ids: [String]) async throws -> [String: ACL]
}

extension ObjectStore {
    /// `acl` itself: the backend stores every ACL as given.
    public func narrowedACL(_ acl: ACL) async throws -> ACL { acl }

    /// Checks nothing: the backend can tell nothing before a write.
    public func preflight(className: String, records: [Record]) async throws {}

    /// `unsupported`: a store that reads its records' ACLs apart from them declares
    /// ``Capabilities/Feature/aclRead`` and implements this.
    public func recordACLs(className: String, ids: [String]) async throws -> [String: ACL] {
        throw MBaaSError(.unsupported, "reading the ACLs of records of '\(className)' apart from the records is not supported by this store")
    }

    /// Deletes without a version check.
    public func delete(className: String, id: String) async throws {
        try await delete(className: className, id: id, expectedVersion: nil)
    }

    /// Every record matching the query, fetched lazily page by page (see ``RecordSequence``).
    /// `query.limit` caps the total; `pageSize` is the size of each request.
    public func records(matching query: Query, pageSize: Int? = nil) -> RecordSequence {
        RecordSequence(query: query, pageSize: pageSize) { q in try await self.queryPage(q) }
    }

    /// Applies a batch one operation at a time: the fallback for backends without a batch endpoint.
    /// Not atomic; results are per operation.
    public func sequentialBatch(_ operations: [BatchOperation]) async -> [BatchResult] {
        var results: [BatchResult] = []
        for op in operations {
            do {
                switch op {
                case .create(let r): results.append(.success(try await create(r)))
                case .update(let c, let id, let u): results.append(.success(try await update(className: c, id: id, u)))
                case .delete(let c, let id):
                    try await delete(className: c, id: id, expectedVersion: nil)
                    results.append(.success(Record(className: c, id: id)))
                }
            } catch {
                results.append(.failure(MBaaSError.wrap(error)))
            }
        }
        return results
    }

    // MARK: Typed models

    /// Creates (no id) or updates (id set, every field) a typed model and returns it as stored.
    public func save<M: Model>(_ model: M) async throws -> M {
        let record = try model.record()
        if let id = record.id {
            let changes = record.fields.mapValues { FieldOperation.set($0) }
            return try M(record: try await update(className: M.className, id: id,
                                                  RecordUpdate(changes: changes, acl: record.acl)))
        }
        return try M(record: try await create(record))
    }

    /// Fetches a typed model by id.
    public func get<M: Model>(_ type: M.Type, id: String) async throws -> M {
        try M(record: try await get(className: M.className, id: id))
    }

    /// The typed models matching a query on the model's class, lazily.
    public func models<M: Model>(_ type: M.Type, matching query: Query? = nil, pageSize: Int? = nil)
        -> AsyncThrowingMapSequence<RecordSequence, M>
    {
        records(matching: query ?? Query(M.className), pageSize: pageSize).map { try M(record: $0) }
    }
}
