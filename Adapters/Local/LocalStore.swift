import Foundation
import GRDB
import GRDBSQLite
import MBaaSCore

/// Who is acting: the session's user with its roles and groups, or anonymous.
struct LocalPrincipal: Sendable {
    var userId: String?
    var roles: [String]
    var groups: [String]
    /// The database owner acting without a session (``BackendContext/administrative``): every ACL grants it.
    var isAdministrator = false

    static let anonymous = LocalPrincipal(userId: nil, roles: [], groups: [])
    static let administrator = LocalPrincipal(userId: nil, roles: [], groups: [], isAdministrator: true)

    /// A record or file without an ACL is public.
    func canRead(_ acl: ACL?) -> Bool { isAdministrator || (acl?.canRead(user: userId, roles: roles, groups: groups) ?? true) }
    func canWrite(_ acl: ACL?) -> Bool { isAdministrator || (acl?.canWrite(user: userId, roles: roles, groups: groups) ?? true) }

    /// An SQL condition true when `column` (neutral ACL JSON or NULL) grants `verb` (`read`/`write`) to this
    /// principal. Principal names are validated (`[A-Za-z0-9_.-]`), so they embed in the JSON paths safely;
    /// they are bound as parameters anyway.
    func sqlGrant(_ column: String, _ verb: String) -> (sql: String, arguments: StatementArguments) {
        if isAdministrator { return ("1", []) }
        var keys = ["*"]
        if let userId { keys.append(userId) }
        keys += roles.map { "role:\($0)" } + groups.map { "group:\($0)" }
        let sql = "(\(column) IS NULL OR " + keys.map { _ in "json_extract(\(column), ?) = 1" }.joined(separator: " OR ") + ")"
        return (sql, StatementArguments(keys.map { "$.\"\($0)\".\(verb)" }))
    }
}

/// A session that no longer exists or has expired; the backend clears its session and reports `unauthorized`.
struct LocalSessionInvalid: Error {}

/// One row of `records`, decoded.
struct StoredRecord: Sendable {
    var seq: Int64
    var record: Record
    var versionNumber: Int64
}

/// The database side of ``LocalBackend``: synchronous operations on a GRDB `Database`, run inside the
/// transactions the backend opens. Sendable and stateless apart from its configuration.
struct LocalStore: Sendable {
    let writer: any DatabaseWriter
    let clock: @Sendable () -> Date
    let logger: Logger
    let files: LocalFileArea
    let options: LocalBackend.Options
    /// Session-less calls act as ``LocalPrincipal/administrator`` (opened with ``BackendContext/administrative``).
    var administrative: Bool
    /// Read-only connections of their own for point reads (see ``LocalPointReader``).
    let pointReader = LocalPointReader()
    /// How many queries with a `regex` may run at once (see ``LocalRegexGate``).
    let regexGate = LocalRegexGate()

    var nowMillis: Int64 { LocalTime.millis(clock()) }

    // MARK: Principal

    /// Resolves the acting principal from a session token hash; an unknown or expired session throws
    /// ``LocalSessionInvalid``.
    func principal(_ db: Database, tokenHash: String?) throws -> LocalPrincipal {
        guard let tokenHash else { return administrative ? .administrator : .anonymous }
        let stmt = try db.cachedStatement(sql: """
            SELECT s.user_id, s.expires_at, u.roles, u.groups FROM sessions s JOIN users u ON u.id = s.user_id
            WHERE s.token_hash = ?
            """)
        guard let row = try Row.fetchOne(stmt, arguments: [tokenHash]) else { throw LocalSessionInvalid() }
        let expires: Int64 = row[1]
        guard expires > nowMillis else { throw LocalSessionInvalid() }
        return LocalPrincipal(userId: row[0], roles: try Self.stringList(row[2]), groups: try Self.stringList(row[3]))
    }

    static func stringList(_ text: String) throws -> [String] {
        guard let items = try JSON.parse(text).arrayValue else { return [] }
        return items.compactMap(\.stringValue)
    }

    // MARK: Record rows

    static let recordColumns = "r.seq, r.id, r.created_at, r.updated_at, r.version, r.acl, r.fields"
    /// The point read's statement, written once (not interpolated on every read).
    static let loadSQL = "SELECT \(recordColumns) FROM records r WHERE r.class = ? AND r.id = ?"

    /// Decodes the row `statement` is on, selected with ``recordColumns`` (at the start of the row).
    ///
    /// The columns are read with SQLite's column functions on the stepped statement: GRDB's `Row` builds a
    /// lowercased column-name dictionary for every row it wraps from a fresh cursor, which cost a point read more
    /// than its lookup. The fields' text goes straight from SQLite's buffer to `Value`s (no `String` copy, no
    /// intermediate JSON tree).
    ///
    /// `knownID` is the id the row was selected by (`r.id = ?`, compared byte for byte: the column's collation is
    /// `BINARY`), used instead of building the same string again from the row.
    static func decodeRecord(className: String, statement: SQLiteStatement, keys: Set<String>? = nil,
                             knownID: String? = nil) throws -> StoredRecord {
        let id = knownID ?? LocalColumn.text(statement, 1) ?? ""
        let version = sqlite3_column_int64(statement, 4)
        var record = Record(
            className: className, id: id,
            createdAt: LocalTime.date(sqlite3_column_int64(statement, 2)),
            updatedAt: LocalTime.date(sqlite3_column_int64(statement, 3)),
            version: String(version))
        do {
            if let aclText = LocalColumn.text(statement, 5) { record.acl = try LocalACLCache.shared.acl(aclText) }
            let value = try LocalColumn.withText(statement, 6) { bytes -> Value in
                guard let bytes else { throw MBaaSError(.decoding, "fields are NULL") }
                return try Value.parse(jsonBytes: bytes)
            }
            guard case .object(var fields) = value else {
                throw MBaaSError(.decoding, "fields are not a JSON object")
            }
            if let keys { fields = fields.filter { keys.contains($0.key) } }
            record.fields = fields
        } catch {
            throw MBaaSError(.decoding, "stored record \(className)/\(id) cannot be read: \(error)")
        }
        return StoredRecord(seq: sqlite3_column_int64(statement, 0), record: record, versionNumber: version)
    }

    /// The neutral JSON text of a record's fields (keys sorted, typed values in their `__type` form).
    static func encodeFields(_ fields: [String: Value]) -> String { Value.object(fields).jsonText }

    static func encodeACL(_ acl: ACL?) -> String? { acl.map { $0.json.printed() } }

    /// The stored record, or `nil`; on `connection`'s prepared statement when given (a point read's own connection).
    func load(_ db: Database, className: String, id: String,
              connection: LocalPointReader.Connection? = nil) throws -> StoredRecord? {
        let stmt = try connection?.load(db) ?? db.cachedStatement(sql: Self.loadSQL)
        // One step of the prepared statement, read in place (see ``decodeRecord(className:statement:keys:knownID:)``);
        // the statement is reset before returning so that it holds no read snapshot open.
        return try LocalColumn.stepOnce(stmt, db, bind: className, id) { statement in
            try Self.decodeRecord(className: className, statement: statement, knownID: id)
        }
    }

    /// The stored record, checked for `write` (and existence): `notFound` when it does not exist *or* the
    /// principal may neither read nor write it (the same answer `get` gives, so existence does not leak);
    /// `forbidden` when it may read but not write it.
    func loadForWrite(_ db: Database, className: String, id: String, principal: LocalPrincipal,
                      expectedVersion: String?) throws -> StoredRecord {
        if let expectedVersion { try StoreValidation.version(expectedVersion) }
        guard let stored = try load(db, className: className, id: id),
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

    // MARK: Writes

    /// The ACL a new record or file gets: the one given (checked by ``checkACL(_:_:)``), else, for a logged-in
    /// user, owner read/write (plus public read with ``LocalBackend/Options/publicReadByDefault``); anonymous
    /// writers' records have no ACL (public read and write).
    func effectiveACL(_ db: Database, _ acl: ACL?, principal: LocalPrincipal) throws -> ACL? {
        if let acl {
            // The database owner (an administrative opening: a migration, a repair) may write any ACL, also one only
            // it can reach (an NCMB "master key only" record); everyone else is kept from locking a record away.
            if !principal.isAdministrator { try checkACL(db, acl) }
            return acl
        }
        guard let owner = principal.userId else { return nil }
        return options.publicReadByDefault ? .publicRead(owner: owner) : .privateTo(owner)
    }

    /// Refuses an ACL that would lock everyone out for good (there is no master key): one that grants nothing,
    /// names an empty principal, or names only users that do not exist.
    func checkACL(_ db: Database, _ acl: ACL) throws {
        if let problem = acl.usabilityProblem { throw MBaaSError(.invalidRequest, problem) }
        var users: [String] = []
        for (principal, access) in acl.entries where access.read || access.write {
            guard case .user(let id) = principal else { return }   // everyone, a role or a group: reachable
            users.append(id)
        }
        // An id holding NUL is no user's (bound, it would be cut at the NUL and could name one that exists).
        for id in users where !id.utf8.contains(0) {
            if try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM users WHERE id = ?)", arguments: [id]) == true { return }
        }
        throw MBaaSError(.invalidRequest, "acl names only users that do not exist (\(users.sorted().joined(separator: ", "))): nobody could read, change or delete it")
    }

    /// A new record checked and encoded before its write transaction: everything an insert does that needs no
    /// database (validating the class, id and fields, drawing an id, printing the fields and a given ACL as JSON).
    /// Done by the caller's task, outside the writer, so that concurrent writers overlap it with each other's
    /// transactions; the transaction itself only resolves the default ACL and runs the statement.
    struct EncodedInsert: Sendable {
        /// The record with its id (given or drawn).
        var record: Record
        var fieldsText: String
        /// The given ACL's text; `nil` when the record has none (the principal's default is decided in the transaction).
        var aclText: String?
        /// What is wrong with a given id, raised after the ACL check (the order an insert has always reported in).
        var idProblem: MBaaSError?
    }

    /// The record checked and encoded for ``insert(_:_:principal:now:)``, or the `invalidRequest` naming what is
    /// wrong with it (kept as a result, so that the error is raised where the insert would have raised it).
    static func encodeInsert(_ record: Record) -> Result<EncodedInsert, MBaaSError> {
        do throws(MBaaSError) {
            try StoreValidation.className(record.className)
            try StoreValidation.fields(record.fields)
            var record = record
            var idProblem: MBaaSError?
            if let id = record.id {
                do throws(MBaaSError) { try StoreValidation.recordId(id) } catch { idProblem = error }
            } else {
                record.id = LocalRecordIds.next()
            }
            return .success(EncodedInsert(record: record, fieldsText: encodeFields(record.fields), aclText: encodeACL(record.acl),
                                          idProblem: idProblem))
        } catch {
            return .failure(error)
        }
    }

    /// Inserts a new record (checked and encoded by ``encodeInsert(_:)``) and returns it as stored. Without an
    /// ACL, a logged-in principal's record gets ``effectiveACL(_:_:principal:)``.
    func insert(_ db: Database, _ encoded: Result<EncodedInsert, MBaaSError>, principal: LocalPrincipal, now: Int64) throws -> Record {
        let encoded = try encoded.get()
        var record = encoded.record
        let given = record.acl
        record.acl = try effectiveACL(db, given, principal: principal)
        if let problem = encoded.idProblem { throw problem }
        let id = record.id!
        let stmt = try db.cachedStatement(sql: """
            INSERT INTO records(class, id, created_at, updated_at, version, acl, fields) VALUES (?, ?, ?, ?, 1, ?, ?)
            """)
        do {
            let aclText = given == nil ? Self.encodeACL(record.acl) : encoded.aclText
            try stmt.execute(arguments: [record.className, id, now, now, aclText, encoded.fieldsText])
        } catch let e as DatabaseError where e.resultCode == .SQLITE_CONSTRAINT {
            throw MBaaSError(.duplicate, "record \(record.className)/\(id) already exists")
        }
        record.createdAt = LocalTime.date(now)
        record.updatedAt = record.createdAt
        record.version = "1"
        return record
    }

    /// Applies a partial update (after the ACL and version checks) and returns the whole record.
    func update(_ db: Database, className: String, id: String, _ update: RecordUpdate, principal: LocalPrincipal,
                now: Int64) throws -> Record {
        try StoreValidation.className(className)
        var stored = try loadForWrite(db, className: className, id: id, principal: principal,
                                      expectedVersion: update.expectedVersion)
        var fields = stored.record.fields
        for (name, op) in update.changes.sorted(by: { $0.key < $1.key }) {
            try StoreValidation.fieldName(name)
            fields[name] = try op.applied(to: fields[name], field: name)
            if let v = fields[name] { try StoreValidation.value(v, path: name) }
        }
        // Changing the ACL needs write access, which loadForWrite checked.
        if let newACL = update.acl, !principal.isAdministrator { try checkACL(db, newACL) }
        let acl = update.acl ?? stored.record.acl
        try write(db, seq: stored.seq, fields: fields, acl: acl, version: stored.versionNumber + 1, now: now)
        stored.record.fields = fields
        stored.record.acl = acl
        stored.record.version = String(stored.versionNumber + 1)
        stored.record.updatedAt = LocalTime.date(now)
        return stored.record
    }

    /// Rewrites a record's fields, ACL and version.
    func write(_ db: Database, seq: Int64, fields: [String: Value], acl: ACL?, version: Int64, now: Int64) throws {
        let stmt = try db.cachedStatement(sql: "UPDATE records SET fields = ?, acl = ?, version = ?, updated_at = ? WHERE seq = ?")
        try stmt.execute(arguments: [Self.encodeFields(fields), Self.encodeACL(acl), version, now, seq])
    }

    /// Deletes a record and the files attached to it; returns the storage names to unlink after commit.
    func delete(_ db: Database, className: String, id: String, expectedVersion: String?,
                principal: LocalPrincipal) throws -> [String] {
        try StoreValidation.className(className)
        let stored = try loadForWrite(db, className: className, id: id, principal: principal,
                                      expectedVersion: expectedVersion)
        let attached = try String.fetchAll(
            db.cachedStatement(sql: "SELECT storage FROM files WHERE att_class = ? AND att_id = ?"), arguments: [className, id])
        try db.cachedStatement(sql: "DELETE FROM files WHERE att_class = ? AND att_id = ?").execute(arguments: [className, id])
        try db.cachedStatement(sql: "DELETE FROM records WHERE seq = ?").execute(arguments: [stored.seq])
        return attached
    }

    // MARK: Errors

    /// Maps any error to an ``MBaaSError``, keeping SQLite's extended result code as the vendor code.
    static func mapError(_ error: any Error) -> MBaaSError {
        switch error {
        case let e as MBaaSError: return e
        case let e as DatabaseError:
            let code = sqliteCodeName(e.extendedResultCode.rawValue)
            let message = e.message ?? "\(e.resultCode)"
            if let range = message.range(of: LocalRegex.timeoutMarker) {
                return MBaaSError(.invalidRequest, String(message[range.upperBound...]),
                                  underlying: QueryTimeLimitExceeded(limit: LocalRegex.queryTimeLimit))
            }
            // Safety net behind Query.validateComplexity: SQLite's own complexity limits are the caller's.
            if ["Expression tree is too large", "parser stack overflow", "too many columns", "too many SQL variables",
                "too many terms"].contains(where: message.contains) {
                return MBaaSError(.invalidRequest, "the query is too complex for SQLite: \(message)", vendorCode: code)
            }
            switch e.resultCode {
            case .SQLITE_BUSY, .SQLITE_LOCKED:
                return MBaaSError(.unavailable, "the database is busy (another connection holds a lock): \(message)", vendorCode: code)
            case .SQLITE_CONSTRAINT:
                return MBaaSError(.duplicate, message, vendorCode: code)
            case .SQLITE_READONLY, .SQLITE_PERM, .SQLITE_AUTH:
                return MBaaSError(.forbidden, "the database cannot be written: \(message)", vendorCode: code)
            case .SQLITE_CANTOPEN, .SQLITE_NOTADB, .SQLITE_CORRUPT, .SQLITE_IOERR, .SQLITE_FULL:
                return MBaaSError(.unavailable, "database file problem: \(message)", vendorCode: code)
            default:
                return MBaaSError(.unavailable, "SQLite error: \(message)", vendorCode: code)
            }
        default:
            return MBaaSError.wrap(error)
        }
    }
}

/// `SQLITE_CANTOPEN`, or `SQLITE_CONSTRAINT (2067)` for an extended code: the vendor code Local errors carry.
func sqliteCodeName(_ extended: Int32) -> String {
    let names = [1: "ERROR", 2: "INTERNAL", 3: "PERM", 4: "ABORT", 5: "BUSY", 6: "LOCKED", 7: "NOMEM", 8: "READONLY",
                 9: "INTERRUPT", 10: "IOERR", 11: "CORRUPT", 12: "NOTFOUND", 13: "FULL", 14: "CANTOPEN", 15: "PROTOCOL",
                 16: "EMPTY", 17: "SCHEMA", 18: "TOOBIG", 19: "CONSTRAINT", 20: "MISMATCH", 21: "MISUSE", 22: "NOLFS",
                 23: "AUTH", 24: "FORMAT", 25: "RANGE", 26: "NOTADB"]
    let primary = Int(extended & 0xFF)
    let name = "SQLITE_" + (names[primary] ?? String(primary))
    return Int(extended) == primary ? name : "\(name) (\(extended))"
}

/// Record ids: 16 random alphanumerics (as ``MBaaSCore/SecureRandom/id()`` makes them), drawn from a buffer of random bytes
/// refilled 4 KiB at a time from the kernel's CSPRNG (`/dev/urandom`, or swift-crypto), instead of a `getrandom`
/// call and a key object per 32 bytes: at batch-insert rates that was half of the Swift-side cost of an insert.
enum LocalRecordIds {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
    private static let pool = RandomPool()

    /// A lock-guarded buffer (no `Mutex`: it needs iOS 18/macOS 15).
    private final class RandomPool: @unchecked Sendable {
        private let lock = NSLock()
        private var bytes: [UInt8] = []
        private var index = 0

        /// The kernel's CSPRNG device, kept open: one `read` per 4 KiB (about 250 ids).
        private static let device = FileHandle(forReadingAtPath: "/dev/urandom")

        /// 4 KiB from `/dev/urandom`, or from swift-crypto when the device cannot be read.
        private static func refill() -> [UInt8] {
            if let data = try? device?.read(upToCount: 4096), data.count == 4096 { return [UInt8](data) }
            return SecureRandom.bytes(4096)
        }

        func withLock<T>(_ body: (RandomPool) -> T) -> T {
            lock.lock()
            defer { lock.unlock() }
            return body(self)
        }

        func next() -> UInt8 {
            if index == bytes.count {
                bytes = Self.refill()
                index = 0
            }
            defer { index += 1 }
            return bytes[index]
        }
    }

    static func next() -> String {
        pool.withLock { pool in
            String(unsafeUninitializedCapacity: 16) { out in
                var n = 0
                while n < 16 {
                    let byte = pool.next()
                    if byte < 248 {   // 248 = 4 × 62: rejection sampling keeps the symbols unbiased
                        out[n] = alphabet[Int(byte % 62)]
                        n += 1
                    }
                }
                return 16
            }
        }
    }
}

/// Read-only SQLite connections of their own, opened on first use, for point reads (`get`).
///
/// GRDB's pooled `read` costs more than the lookup itself: a reader checkout, a `PRAGMA schema_version` and its own
/// implicit transaction (WAL locks through `fcntl`) before the `SELECT`. Measured with `mbaas bench local`, raw
/// point reads went from ~30k/s through the pool to ~80k/s on a dedicated connection (`inDatabase`: one statement,
/// one implicit transaction, which is its own consistent snapshot).
///
/// Each read takes an idle connection or opens one, up to ``limit`` (one per processor, 2 to 8), and puts it back:
/// concurrent reads (the server's event loops, one per processor) do not wait on each other's connection. With one
/// connection for all, `perf` showed the server's event-loop threads blocked in `DispatchQueue.sync` on it for 4% of
/// the samples. Past the limit, and for an in-memory database (one private connection) or a file that cannot be
/// opened read-only, reads go to the pool.
///
/// Each dedicated connection keeps the point read's statement prepared (``Connection/load(_:)``): GRDB's
/// `cachedStatement(sql:)` hashes the SQL text on every call to find it (7.5% of a point read's Swift side in `perf`).
final class LocalPointReader: @unchecked Sendable {
    /// A dedicated connection and the statements prepared on it. Used only inside its queue's `inDatabase`.
    final class Connection: @unchecked Sendable {
        let queue: DatabaseQueue
        private var loadStatement: Statement?

        init(_ queue: DatabaseQueue) { self.queue = queue }

        /// ``LocalStore/loadSQL`` prepared on this connection (on first use; SQLite prepares it again by itself
        /// if the schema changes).
        func load(_ db: Database) throws -> Statement {
            if let loadStatement { return loadStatement }
            let statement = try db.makeStatement(sql: LocalStore.loadSQL)
            loadStatement = statement
            return statement
        }

        /// Finalizes the statements (GRDB refuses to close a connection with a statement left) and closes.
        func close() {
            queue.inDatabase { _ in loadStatement = nil }
            try? queue.close()
        }
    }

    /// The most connections opened.
    static let limit = min(8, max(2, ProcessInfo.processInfo.activeProcessorCount))

    private let lock = NSLock()
    private var idle: [Connection] = []
    private var opened = 0
    /// No dedicated connection can be opened (memory, or the first open failed).
    private var unavailable = false
    private var closed = false

    /// The dedicated connections opened so far (tests check that concurrent reads did not share one).
    var connectionsOpened: Int { lock.withLock { opened } }
    /// The dedicated connections not in use (tests check how they close).
    var idleConnections: [Connection] { lock.withLock { idle } }

    /// Runs `body` outside an explicit transaction on a dedicated connection, or on the pool's.
    func read<T>(_ writer: any DatabaseWriter, busyTimeout: TimeInterval, _ body: (Database) throws -> T) throws -> T {
        try read(writer, busyTimeout: busyTimeout) { db, _ in try body(db) }
    }

    /// ``read(_:busyTimeout:_:)`` that also hands `body` the dedicated connection, for its prepared statements;
    /// `nil` when the read runs on the pool's connection.
    func read<T>(_ writer: any DatabaseWriter, busyTimeout: TimeInterval,
                 _ body: (Database, Connection?) throws -> T) throws -> T {
        guard let connection = take(writer, busyTimeout: busyTimeout) else {
            return try writer.unsafeRead { db in try body(db, nil) }
        }
        defer { give(connection) }
        return try connection.queue.inDatabase { db in try body(db, connection) }
    }

    /// Closes the dedicated connections for good (``LocalBackend/close()`` calls it; reads still under way close
    /// theirs as they end); later reads use the pool (so they fail once the pool is closed).
    func close() {
        lock.lock()
        defer { lock.unlock() }
        for connection in idle { connection.close() }
        idle = []
        closed = true
    }

    private func take(_ writer: any DatabaseWriter, busyTimeout: TimeInterval) -> Connection? {
        lock.lock()
        defer { lock.unlock() }
        if let connection = idle.popLast() { return connection }
        guard !unavailable, !closed, opened < Self.limit, let pool = writer as? DatabasePool else {
            if !(writer is DatabasePool) { unavailable = true }
            return nil
        }
        var config = Configuration()
        config.readonly = true
        config.label = "mbaas-local-point-reads"
        config.busyMode = .timeout(busyTimeout)
        do {
            let queue = try DatabaseQueue(path: pool.path, configuration: config)
            opened += 1
            return Connection(queue)
        } catch {
            if opened == 0 { unavailable = true }
            return nil
        }
    }

    private func give(_ connection: Connection) {
        lock.lock()
        defer { lock.unlock() }
        if closed { connection.close() } else { idle.append(connection) }
    }
}

/// Parsed ACLs by their stored text: records share a handful of ACLs (public, each owner's private one), so a read
/// parses each text once instead of once per record. Bounded: emptied when it reaches ``limit`` texts.
final class LocalACLCache: @unchecked Sendable {
    static let shared = LocalACLCache()
    static let limit = 1024

    private let lock = NSLock()
    private var parsed: [String: ACL] = [:]

    func acl(_ text: String) throws -> ACL {
        if let hit = lock.withLock({ parsed[text] }) { return hit }
        let acl = try ACL(json: JSON.parse(text))
        lock.withLock {
            if parsed.count >= Self.limit { parsed.removeAll(keepingCapacity: true) }
            parsed[text] = acl
        }
        return acl
    }
}
