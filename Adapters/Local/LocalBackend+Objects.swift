import Foundation
import GRDB
public import MBaaSCore

extension LocalBackend {
    /// Creates a record (a given `id` is kept: 1 to 128 of `[A-Za-z0-9_.-]`; a taken one is `duplicate`).
    /// Without an ACL, a logged-in user's record is private to that user (owner read/write; public read too
    /// with ``Options/publicReadByDefault``); an anonymous record has no ACL (public). An ACL that would lock
    /// everyone out (`{}`, empty principals, only unknown users) is `invalidRequest`.
    public nonisolated func create(_ record: MBaaSCore.Record) async throws -> MBaaSCore.Record {
        let store = self.store
        // Checked and encoded here, before the write transaction; a problem is raised inside it, after the session check.
        let encoded = LocalStore.encodeInsert(record)
        return try await writing { db, principal in try store.insert(db, encoded, principal: principal, now: store.nowMillis) }
    }

    /// Checks the class name and every record's fields as ``create(_:)`` does (``MBaaSCore/ObjectStore/preflight(className:records:)``),
    /// without opening a transaction. Given ids are not checked: a migration lets the store draw one for an id it refuses.
    public nonisolated func preflight(className: String, records: [MBaaSCore.Record]) async throws {
        try StoreValidation.className(className)
        for r in records { try StoreValidation.fields(r.fields) }
    }

    /// The record, or `notFound` (also when the session's user may not read it).
    ///
    /// A point read runs synchronously in the caller's task (one indexed lookup is shorter than a hop to a reader
    /// queue and back), on a read-only connection of its own (``LocalPointReader``: one per concurrent read, up to one
    /// per processor, 2 to 8; past that, the pool's), without an explicit transaction: the record is read by one
    /// statement, which SQLite runs in its own snapshot (the session check, when there is a session, is a statement
    /// of its own).
    public nonisolated func get(className: String, id: String) async throws -> MBaaSCore.Record {
        try StoreValidation.className(className)
        try checkExists()
        let store = self.store, token = sessionTokenHash
        do {
            return try store.pointReader.read(store.writer, busyTimeout: store.options.busyTimeout) { db, connection in
                let principal = try store.principal(db, tokenHash: token)
                guard let stored = try store.load(db, className: className, id: id, connection: connection),
                      principal.canRead(stored.record.acl) else {
                    throw MBaaSError(.notFound, "record \(className)/\(id) not found")
                }
                return stored.record
            }
        } catch {
            throw handle(error, tokenHash: token)
        }
    }

    /// Applies the changes in one transaction (field operations are atomic); `notFound` when the record is
    /// missing or neither readable nor writable by the session's user, `forbidden` when readable but not
    /// writable (changing the ACL needs write access too), `conflict` on a stale `expectedVersion`.
    public func update(className: String, id: String, _ update: RecordUpdate) async throws -> MBaaSCore.Record {
        let store = self.store
        return try await writing { db, principal in
            try store.update(db, className: className, id: id, update, principal: principal, now: store.nowMillis)
        }
    }

    /// Deletes the record and the files attached to it.
    public func delete(className: String, id: String, expectedVersion: String?) async throws {
        let store = self.store
        let unlink = try await writing { db, principal in
            try store.delete(db, className: className, id: id, expectedVersion: expectedVersion, principal: principal)
        }
        store.files.remove(unlink)
    }

    public func queryPage(_ query: Query) async throws -> RecordPage {
        try StoreValidation.className(query.className)
        try query.validate(against: capabilities, backend: adapterName)
        try query.validateComplexity()
        let plan = try LocalQueryPlan(query: query, capabilities: capabilities)
        return try await gated(query) {
            try await self.reading { db, principal in try LocalRegex.withQueryBudget { try plan.page(db, principal: principal) } }
        }
    }

    /// Runs a query through ``LocalRegexGate`` when it matches a `regex` (one at a time with one connection, two with a
    /// pool of readers), directly otherwise.
    nonisolated func gated<T: Sendable>(_ query: Query, _ body: @Sendable () async throws -> T) async throws -> T {
        guard query.predicate?.operators.contains(.regex) == true else { return try await body() }
        return try await store.regexGate.run(limit: store.writer is DatabasePool ? 2 : 1, body)
    }

    public func count(_ query: Query) async throws -> Int {
        try StoreValidation.className(query.className)
        let q = query.forCounting
        try q.validate(against: capabilities, backend: adapterName)
        try q.validateComplexity()
        let plan = try LocalQueryPlan(query: q, capabilities: capabilities)
        return try await gated(q) {
            try await self.reading { db, principal in try LocalRegex.withQueryBudget { try plan.count(db, principal: principal) } }
        }
    }

    /// Applies every operation in one transaction. If one fails, nothing is written and every result is that
    /// failure, its message prefixed with the operation's position (`operation 3 of 5 (update Memo/x): …`).
    /// Errors that concern the whole call (an expired session, a busy database, too many operations) are thrown.
    public nonisolated func batch(_ operations: [BatchOperation]) async throws -> [BatchResult] {
        guard operations.count <= capabilities.maxBatchSize else {
            throw MBaaSError(.invalidRequest, "a batch holds at most \(capabilities.maxBatchSize) operations, got \(operations.count)")
        }
        guard !operations.isEmpty else { return [] }
        try checkWritable()
        let store = self.store, token = sessionTokenHash
        // New records are checked and encoded before the transaction (by the calling task, so concurrent batches
        // overlap that work with each other's writes); a problem is raised at its operation's position.
        let encoded: [Result<LocalStore.EncodedInsert, MBaaSError>?] = operations.map {
            if case .create(let r) = $0 { LocalStore.encodeInsert(r) } else { nil }
        }
        do {
            let (records, unlink) = try await store.writer.write { db in
                let principal = try store.principal(db, tokenHash: token)
                let now = store.nowMillis
                var records: [Record] = []
                var unlink: [String] = []
                records.reserveCapacity(operations.count)
                for (i, op) in operations.enumerated() {
                    do {
                        switch op {
                        case .create:
                            records.append(try store.insert(db, encoded[i]!, principal: principal, now: now))
                        case .update(let c, let id, let u):
                            records.append(try store.update(db, className: c, id: id, u, principal: principal, now: now))
                        case .delete(let c, let id):
                            unlink += try store.delete(db, className: c, id: id, expectedVersion: nil, principal: principal)
                            records.append(Record(className: c, id: id))
                        }
                    } catch {
                        throw LocalBatchFailure(index: i, count: operations.count, operation: op, error: LocalStore.mapError(error))
                    }
                }
                return (records, unlink)
            }
            store.files.remove(unlink)
            return records.map(BatchResult.success)
        } catch let failure as LocalBatchFailure {
            return Array(repeating: .failure(failure.mbaasError), count: operations.count)
        } catch {
            throw handle(error, tokenHash: token)
        }
    }

    /// Replaces the ACL of a record whatever its current ACL grants: the administrative way back to a record
    /// no one can read or write (a lost owner, an ACL naming a deleted user). Like ``setRoles(_:forUser:)`` it
    /// needs no session, since whoever can open the database file owns the store; the `mbaas objects
    /// repair-acl` command also checks that the caller owns the database file. The new ACL must be usable
    /// (`invalidRequest` otherwise); the record's version is bumped. `notFound` if the record does not exist.
    public func repairACL(className: String, id: String, acl: ACL) async throws -> MBaaSCore.Record {
        try StoreValidation.className(className)
        try checkWritable()
        let store = self.store
        do {
            return try await store.writer.write { db in
                try store.checkACL(db, acl)
                guard var stored = try store.load(db, className: className, id: id) else {
                    throw MBaaSError(.notFound, "record \(className)/\(id) not found")
                }
                let now = store.nowMillis
                try store.write(db, seq: stored.seq, fields: stored.record.fields, acl: acl, version: stored.versionNumber + 1, now: now)
                stored.record.acl = acl
                stored.record.version = String(stored.versionNumber + 1)
                stored.record.updatedAt = LocalTime.date(now)
                return stored.record
            }
        } catch {
            throw LocalStore.mapError(error)
        }
    }

    /// Adds an index on `key` (an SQLite expression index on `(class, json_extract(fields, '$."key"'))`, the exact
    /// expression queries use), so equality, range and sort on that key avoid a full scan of the class. One index
    /// serves every class; calling again is a no-op.
    public func createIndex(className: String, key: String) async throws {
        try StoreValidation.className(className)
        let expression = try LocalQueryCompiler.sortExpression(forKey: key, qualified: false)
        let name = "records_idx_" + SessionTokens.hash(key).prefix(16)
        let store = self.store
        _ = try await writing { db, _ in
            try db.execute(sql: "CREATE INDEX IF NOT EXISTS \(name) ON records(class, \(expression))")
            store.logger.debug("local: created index", metadata: ["class": "\(className)", "key": "\(key)"])
            return true
        }
    }
}

/// One batch operation failed; the transaction rolls back and every result reports it.
struct LocalBatchFailure: Error {
    var index: Int
    var count: Int
    var operation: BatchOperation
    var error: MBaaSError

    var mbaasError: MBaaSError {
        let what: String
        switch operation {
        case .create(let r): what = "create \(r.className)" + (r.id.map { "/\($0)" } ?? "")
        case .update(let c, let id, _): what = "update \(c)/\(id)"
        case .delete(let c, let id): what = "delete \(c)/\(id)"
        }
        var e = error
        e.message = "operation \(index + 1) of \(count) (\(what)) failed, nothing was written: \(error.message)"
        return e
    }
}
