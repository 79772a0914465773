import Foundation
import Logging
public import MBaaSCore
import PostgresNIO

/// One row of `records`, decoded.
struct PostgresStoredRecord: Sendable {
    var seq: Int64
    var record: Record
    var versionNumber: Int64
}

extension PostgresBackend {
    /// Creates a record (a given `id` is kept: 1 to 128 of `[A-Za-z0-9_.-]`; a taken one is `duplicate`). Without an
    /// ACL, a logged-in user's record is private to that user; an anonymous record has no ACL (public). An ACL that
    /// would lock everyone out is `invalidRequest`. With an administrative opening, given `createdAt`/`updatedAt` are kept.
    public func create(_ record: MBaaSCore.Record) async throws -> MBaaSCore.Record {
        let store = self.store
        let encoded = PostgresStore.encodeInsert(record)
        return try await writing { conn, principal in try await store.insert(conn, encoded, principal: principal, now: store.nowMillis) }
    }

    public func preflight(className: String, records: [MBaaSCore.Record]) async throws {
        try StoreValidation.className(className)
        for r in records { try StoreValidation.fields(r.fields, limits: .postgres) }
    }

    /// The record, or `notFound` (also when the session's user may not read it).
    ///
    /// Read with the point reads of other calls under way when there are any (``PostgresPointReads``); the session, if
    /// any, is checked first, by a statement of its own.
    public func get(className: String, id: String) async throws -> MBaaSCore.Record {
        try StoreValidation.className(className)
        let store = self.store, token = sessionState.tokenHash
        do {
            let principal = try await store.principal(tokenHash: token)
            // No record has another id (creates check it): nothing else goes into a statement other reads share, where
            // a value PostgreSQL refuses (a NUL byte) would fail all of them.
            guard (try? StoreValidation.recordId(id)) != nil,
                  let stored = try await store.pointReads.load(.init(className: className, id: id), store: store),
                  principal.canRead(stored.record.acl) else {
                throw MBaaSError(.notFound, "record \(className)/\(id) not found")
            }
            return stored.record
        } catch {
            throw handle(error, tokenHash: token)
        }
    }

    /// Applies the changes in one transaction, the row locked (`FOR UPDATE`) from the read to the write: field
    /// operations and the version check hold across every process on the database.
    public func update(className: String, id: String, _ update: RecordUpdate) async throws -> MBaaSCore.Record {
        let store = self.store
        return try await writing { conn, principal in
            try await store.update(conn, className: className, id: id, update, principal: principal, now: store.nowMillis)
        }
    }

    /// Deletes the record and the files attached to it (their chunks go with them).
    public func delete(className: String, id: String, expectedVersion: String?) async throws {
        let store = self.store
        try await writing { conn, principal in
            try await store.delete(conn, className: className, id: id, expectedVersion: expectedVersion, principal: principal)
        }
    }

    public func queryPage(_ query: Query) async throws -> RecordPage {
        try StoreValidation.className(query.className)
        try query.validate(against: capabilities, backend: adapterName)
        try query.validateComplexity()
        let plan = try PostgresQueryPlan(query: query, capabilities: capabilities)
        let store = self.store
        return try await reading { conn, principal in try await plan.page(conn, store: store, principal: principal) }
    }

    public func count(_ query: Query) async throws -> Int {
        try StoreValidation.className(query.className)
        let q = query.forCounting
        try q.validate(against: capabilities, backend: adapterName)
        try q.validateComplexity()
        let plan = try PostgresQueryPlan(query: q, capabilities: capabilities)
        let store = self.store
        return try await reading { conn, principal in try await plan.count(conn, store: store, principal: principal) }
    }

    /// Applies every operation in one transaction. If one fails, nothing is written and every result is that failure,
    /// its message prefixed with the operation's position.
    public func batch(_ operations: [BatchOperation]) async throws -> [BatchResult] {
        guard operations.count <= capabilities.maxBatchSize else {
            throw MBaaSError(.invalidRequest, "a batch holds at most \(capabilities.maxBatchSize) operations, got \(operations.count)")
        }
        guard !operations.isEmpty else { return [] }
        let store = self.store
        let encoded: [Result<PostgresStore.EncodedInsert, MBaaSError>?] = operations.map {
            if case .create(let r) = $0 { PostgresStore.encodeInsert(r) } else { nil }
        }
        do {
            if operations.allSatisfy({ if case .create = $0 { true } else { false } }) {
                let records = try await writing { conn, principal in
                    try await store.insertAll(conn, encoded.map { $0! }, operations: operations, principal: principal, now: store.nowMillis)
                }
                return records.map(BatchResult.success)
            }
            let records = try await writing { conn, principal in
                let now = store.nowMillis
                var records: [Record] = []
                for (i, op) in operations.enumerated() {
                    do {
                        switch op {
                        case .create:
                            records.append(try await store.insert(conn, encoded[i]!, principal: principal, now: now))
                        case .update(let c, let id, let u):
                            records.append(try await store.update(conn, className: c, id: id, u, principal: principal, now: now))
                        case .delete(let c, let id):
                            try await store.delete(conn, className: c, id: id, expectedVersion: nil, principal: principal)
                            records.append(Record(className: c, id: id))
                        }
                    } catch let e as PostgresSessionInvalid {
                        throw e
                    } catch {
                        throw PostgresBatchFailure(index: i, count: operations.count, operation: op, error: PostgresStore.mapError(error))
                    }
                }
                return records
            }
            return records.map(BatchResult.success)
        } catch let failure as PostgresBatchFailure {
            return Array(repeating: .failure(failure.mbaasError), count: operations.count)
        }
    }
}

/// One batch operation failed; the transaction rolls back and every result reports it.
struct PostgresBatchFailure: Error {
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

extension PostgresStore {
    static let recordColumns = "r.seq, r.id, r.created_at, r.updated_at, r.version, r.acl::text, r.fields::text"

    /// Decodes a row selected with ``recordColumns`` at its start.
    static func decodeRecord(className: String, row: PostgresRandomAccessRow, keys: Set<String>? = nil) throws -> PostgresStoredRecord {
        let id = try row.text(1)
        let version = try row.int(4)
        var record = Record(className: className, id: id, createdAt: PostgresTime.date(try row.int(2)),
                            updatedAt: PostgresTime.date(try row.int(3)), version: String(version))
        do {
            if let aclText = try row.optionalText(5) { record.acl = try ACL(json: JSON.parse(aclText)) }
            guard case .object(var fields) = try Value.parse(jsonText: try row.text(6)) else {
                throw MBaaSError(.decoding, "fields are not a JSON object")
            }
            if let keys { fields = fields.filter { keys.contains($0.key) } }
            record.fields = fields
        } catch {
            throw MBaaSError(.decoding, "stored record \(className)/\(id) cannot be read: \(error)")
        }
        return PostgresStoredRecord(seq: try row.int(0), record: record, versionNumber: version)
    }

    /// The fields as `jsonb` input. Whole doubles go in fixed notation with `.0`: `jsonb` keeps a number's scale but
    /// prints `1e+16` back as `10000000000000000`, which would read back as an int.
    static func encodeFields(_ fields: [String: Value]) -> String { Value.object(fields).jsonText(.fixedWholeDoubles) }
    static func encodeACL(_ acl: ACL?) -> String? { acl.map { $0.json.printed() } }

    /// A record read on `conn` (inside a transaction, as an upload's or a write's checks run; `forUpdate` locks it),
    /// unprepared: a refused preparation would abort the transaction. A GET's reads go through ``pointReads``.
    func load(_ conn: PostgresConnection, className: String, id: String, forUpdate: Bool = false) async throws -> PostgresStoredRecord? {
        let read = PostgresPointRead(className: className, id: id)
        let rows = try await conn.rows(plain(read, appending: forUpdate ? " FOR UPDATE" : ""), logger: logger)
        guard let row = rows.first else { return nil }
        return try Self.decodeRecord(className: className, row: row)
    }

    /// The stored record locked for writing and checked: `notFound` when missing or neither readable nor writable,
    /// `forbidden` when readable only, `conflict` on a stale expected version.
    func loadForWrite(_ conn: PostgresConnection, className: String, id: String, principal: PostgresPrincipal,
                      expectedVersion: String?) async throws -> PostgresStoredRecord {
        if let expectedVersion { try StoreValidation.version(expectedVersion) }
        // No record has another id (creates check it), as `get` says: an id PostgreSQL would refuse (a NUL byte) is
        // `notFound` here too, not the server's encoding error.
        guard (try? StoreValidation.recordId(id)) != nil,
              let stored = try await load(conn, className: className, id: id, forUpdate: true),
              principal.canRead(stored.record.acl) || principal.canWrite(stored.record.acl) else {
            throw MBaaSError(.notFound, "record \(className)/\(id) not found")
        }
        guard principal.canWrite(stored.record.acl) else {
            throw MBaaSError(.forbidden, "the ACL of \(className)/\(id) does not let \(principal.userId.map { "user \($0)" } ?? "anonymous users") write it")
        }
        if let expectedVersion, expectedVersion != stored.record.version {
            throw MBaaSError(.conflict, "\(className)/\(id) changed: its version is \(stored.record.version ?? "?"), expected \(expectedVersion); nothing was written")
                .conflicting(currentVersion: stored.record.version)
        }
        return stored
    }

    /// The ACL a new record or file gets (see ``PostgresBackend/create(_:)``).
    func effectiveACL(_ conn: PostgresConnection, _ acl: ACL?, principal: PostgresPrincipal) async throws -> ACL? {
        if let acl {
            if !principal.isAdministrator { try await checkACL(conn, acl) }
            return acl
        }
        guard let owner = principal.userId else { return nil }
        return options.publicReadByDefault ? .publicRead(owner: owner) : .privateTo(owner)
    }

    /// Refuses an ACL that would lock everyone out for good: one that grants nothing, names an empty principal, or
    /// names only users that do not exist.
    func checkACL(_ conn: PostgresConnection, _ acl: ACL) async throws {
        if let problem = acl.usabilityProblem { throw MBaaSError(.invalidRequest, problem) }
        var users: [String] = []
        for (principal, access) in acl.entries where access.read || access.write {
            guard case .user(let id) = principal else { return }
            users.append(id)
        }
        var q = PGSQL()
        q.sql("SELECT 1 FROM \(s)users WHERE id = ANY(\(q.bind(users))::text[]) LIMIT 1")
        if try await conn.first(q, logger: logger) != nil { return }
        throw MBaaSError(.invalidRequest, "acl names only users that do not exist (\(users.sorted().joined(separator: ", "))): nobody could read, change or delete it")
    }

    struct EncodedInsert: Sendable {
        var record: Record
        var fieldsText: String
        var idProblem: MBaaSError?
    }

    static func encodeInsert(_ record: Record) -> Result<EncodedInsert, MBaaSError> {
        do throws(MBaaSError) {
            try StoreValidation.className(record.className)
            try StoreValidation.fields(record.fields, limits: .postgres)
            var record = record
            var idProblem: MBaaSError?
            if let id = record.id {
                do throws(MBaaSError) { try StoreValidation.recordId(id) } catch { idProblem = error }
            } else {
                record.id = SecureRandom.id()
            }
            return .success(EncodedInsert(record: record, fieldsText: encodeFields(record.fields), idProblem: idProblem))
        } catch {
            return .failure(error)
        }
    }

    /// A new record as it will be stored: its effective ACL, its id checked, its times (the database owner, as a
    /// migration, keeps the source's; everyone else gets the server's) and version 1.
    func prepareInsert(_ conn: PostgresConnection, _ encoded: Result<EncodedInsert, MBaaSError>, principal: PostgresPrincipal,
                       now: Int64) async throws -> (record: Record, created: Int64, updated: Int64, fieldsText: String) {
        let encoded = try encoded.get()
        var record = encoded.record
        record.acl = try await effectiveACL(conn, record.acl, principal: principal)
        if let problem = encoded.idProblem { throw problem }
        let created = principal.isAdministrator ? record.createdAt.map(ISO8601.millis) ?? now : now
        let updated = principal.isAdministrator ? record.updatedAt.map(ISO8601.millis) ?? created : now
        record.createdAt = PostgresTime.date(created)
        record.updatedAt = PostgresTime.date(updated)
        record.version = "1"
        return (record, created, updated, encoded.fieldsText)
    }

    func insert(_ conn: PostgresConnection, _ encoded: Result<EncodedInsert, MBaaSError>, principal: PostgresPrincipal,
                now: Int64) async throws -> Record {
        let new = try await prepareInsert(conn, encoded, principal: principal, now: now)
        let record = new.record, id = record.id!
        var q = PGSQL()
        q.sql("""
            INSERT INTO \(s)records (class, id, created_at, updated_at, version, acl, fields)
            VALUES (\(q.bind(record.className)), \(q.bind(id)), \(q.bind(new.created)), \(q.bind(new.updated)), 1, \(q.bind(Self.encodeACL(record.acl)))::jsonb, \(q.bind(new.fieldsText))::jsonb)
            ON CONFLICT (class, id) DO NOTHING RETURNING 1
            """)
        guard try await conn.changed(q, logger: logger) == 1 else {
            throw MBaaSError(.duplicate, "record \(record.className)/\(id) already exists")
        }
        return record
    }

    func update(_ conn: PostgresConnection, className: String, id: String, _ update: RecordUpdate, principal: PostgresPrincipal,
                now: Int64) async throws -> Record {
        try StoreValidation.className(className)
        var stored = try await loadForWrite(conn, className: className, id: id, principal: principal, expectedVersion: update.expectedVersion)
        var fields = stored.record.fields
        for (name, op) in update.changes.sorted(by: { $0.key < $1.key }) {
            try StoreValidation.fieldName(name)
            fields[name] = try op.applied(to: fields[name], field: name)
            if let v = fields[name] { try StoreValidation.value(v, path: name, limits: .postgres) }
        }
        if let newACL = update.acl, !principal.isAdministrator { try await checkACL(conn, newACL) }
        let acl = update.acl ?? stored.record.acl
        try await write(conn, seq: stored.seq, fields: fields, acl: acl, version: stored.versionNumber + 1, now: now)
        stored.record.fields = fields
        stored.record.acl = acl
        stored.record.version = String(stored.versionNumber + 1)
        stored.record.updatedAt = PostgresTime.date(now)
        return stored.record
    }

    func write(_ conn: PostgresConnection, seq: Int64, fields: [String: Value], acl: ACL?, version: Int64, now: Int64) async throws {
        var q = PGSQL()
        q.sql("UPDATE \(s)records SET fields = \(q.bind(Self.encodeFields(fields)))::jsonb, acl = \(q.bind(Self.encodeACL(acl)))::jsonb, version = \(q.bind(version)), updated_at = \(q.bind(now)) WHERE seq = \(q.bind(seq))")
        try await conn.run(q, logger: logger)
    }

    func delete(_ conn: PostgresConnection, className: String, id: String, expectedVersion: String?,
                principal: PostgresPrincipal) async throws {
        try StoreValidation.className(className)
        let stored = try await loadForWrite(conn, className: className, id: id, principal: principal, expectedVersion: expectedVersion)
        var f = PGSQL()
        f.sql("DELETE FROM \(s)files WHERE att_class = \(f.bind(className)) AND att_id = \(f.bind(id))")
        try await conn.run(f, logger: logger)
        var q = PGSQL()
        q.sql("DELETE FROM \(s)records WHERE seq = \(q.bind(stored.seq))")
        try await conn.run(q, logger: logger)
    }
}

enum PostgresTime {
    static func date(_ millis: Int64) -> Date { Date(timeIntervalSince1970: Double(millis) / 1000) }
}

/// A statement every request of a store makes, prepared once per connection and schema (PostgreSQL parses and plans
/// it once instead of once per call: `pgbench -S` on this machine, 44k reads/s unnamed against 84k prepared). Its
/// text is written once, by ``text(schemaPrefix:)``, for both the prepared form and the plain one.
protocol PostgresStoreStatement: PostgresPreparedStatement where Row == PostgresRow {
    /// The statement naming the store's schema (`"schema".`, ``PostgresStore/s``), parameters as `$1`, `$2`, ….
    static func text(schemaPrefix: String) -> String
}

extension PostgresStoreStatement {
    static var name: String { "mbaas.\(Self.self)." + PostgresStorePrepared.schemaPrefix }
    static var sql: String { text(schemaPrefix: PostgresStorePrepared.schemaPrefix) }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}

extension PostgresStore {
    /// The statement unprepared, for this store's schema, with `suffix` appended to its text.
    func plain<Statement: PostgresStoreStatement>(_ statement: Statement, appending suffix: String = "") throws -> PGSQL {
        var q = PGSQL(Statement.text(schemaPrefix: s) + suffix)
        q.binds = try statement.makeBindings()
        return q
    }

    /// Runs one of this module's prepared statements for this store, on a connection outside a transaction, and
    /// collects its rows. When PostgreSQL refuses the prepared form (SQLSTATE `26000`: the statement is gone, as after
    /// a pooler's `DISCARD ALL`; `0A000`: a cached plan that must not change its result; class `42`: it could not be
    /// prepared, say while a table was missing), the same statement runs unprepared (``plain(_:appending:)``).
    /// postgres-nio keeps a failed preparation for the connection's lifetime, and a server keeps its connections:
    /// without this, one failure would fail that connection's reads until a restart. (Inside a transaction the first
    /// failure aborts it, so transactions use plain statements only.)
    func prepared<Statement: PostgresStoreStatement>(_ conn: PostgresConnection, _ statement: Statement) async throws
        -> [PostgresRandomAccessRow]
    {
        do {
            let rows = try await PostgresStorePrepared.$schemaPrefix.withValue(s) {
                try await conn.execute(statement, logger: logger)
            }
            var out: [PostgresRandomAccessRow] = []
            for try await row in rows { out.append(row.makeRandomAccess()) }
            return out
        } catch let error as PSQLError where Self.refusedPreparation(error) {
            logger.debug("postgres: \(Statement.self) refused prepared (\(error.serverInfo?[.sqlState] ?? "?")); running it unprepared")
            return try await conn.rows(plain(statement), logger: logger)
        }
    }

    /// Whether a server error is one a prepared statement may meet where its plain text would not.
    static func refusedPreparation(_ error: PSQLError) -> Bool {
        guard let state = error.serverInfo?[.sqlState] else { return false }
        return state == "26000" || state == "0A000" || state.hasPrefix("42")
    }
}

/// The schema a prepared statement of this module is for, read when it is executed.
///
/// `PostgresPreparedStatement` takes its name and text from the type (`static`), and postgres-nio reads both once,
/// in the calling task, when `execute` is called (it keeps them with the request from then on). Set around that call,
/// this task-local gives each store (each schema, several in one process) a statement of its own, named and written
/// with the schema: nothing depends on the connection's `search_path`, which a pooler in front of PostgreSQL
/// (PgBouncer) may not pass on.
enum PostgresStorePrepared {
    /// `"schema".`, as ``PostgresStore/s``; empty outside a store's call (no statement of this module runs then).
    @TaskLocal static var schemaPrefix = ""
}

/// A record by class and id.
struct PostgresPointRead: PostgresStoreStatement {
    static func text(schemaPrefix s: String) -> String {
        "SELECT \(PostgresStore.recordColumns) FROM \(s)records r WHERE r.class = $1 AND r.id = $2"
    }

    var className: String
    var id: String

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(className)
        bindings.append(id)
        return bindings
    }
}
