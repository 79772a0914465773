import Foundation
import GRDB
import MBaaSCore

/// Where a record of a replica stands against the remote (AppPot's per-object `syncStatus`).
public enum SyncStatus: String, Sendable, Hashable, CaseIterable {
    /// The local copy equals the last one seen on the remote.
    case synced
    /// Created on the device, not yet on the remote.
    case created
    /// Changed on the device; the change is queued.
    case updated
    /// Deleted on the device; the delete is queued.
    case deleted
    /// The remote changed too (or refused the change): waiting for a resolution (``ReplicaBackend/resolve(className:id:_:)``).
    case conflicted
}

/// A queued write of the outbox.
struct OutboxEntry: Sendable {
    enum Operation: String, Sendable { case create, update, delete }
    var seq: Int64
    var className: String
    var id: String
    var operation: Operation
    /// create: `{"fields":{…},"acl":…}`; update: `{"changes":{…},"acl":…}`; delete: `{}`. Encrypted fields sealed.
    var payload: JSONObject
    var inflight: Bool
    /// Why the entry waits (`conflict`, or the remote's refusal); `nil` when it is sent on the next sync up.
    var blocked: String?
    /// Sent without a version check (a conflict resolved by keeping the local record).
    var force: Bool
}

/// The replica's own tables, next to the Local store's tables in the same SQLite file (so a write of a record and
/// its outbox entry share one transaction).
///
/// | table | what |
/// |---|---|
/// | `replica_meta` | `format`, the remote URL (with its secrets: the file is 0600), the configuration, the last user |
/// | `replica_state` | per record: ``SyncStatus``, the remote version and `updatedAt` last seen, when last synced |
/// | `replica_outbox` | queued writes, coalesced, in order; `inflight` marks one being sent |
/// | `replica_idmap` | offline id → remote id, for records the remote gave another id |
/// | `replica_classes` | per class: the sync-down high-water mark, last sync times, sync count (ghost scans) |
/// | `replica_conflicts` | the remote record of each conflicted record (JSON; `null` when the remote deleted it) |
/// | `replica_files` | files uploaded while the remote was unreachable: the bytes, in order; `remote` is the remote's reference once sent |
/// | `replica_refused` | remote records sync down could not keep (an id holding NUL), keyed by the id's UTF-8 in hex, the record as JSON: listed by every sync until the remote no longer has them |
enum ReplicaSchema {
    static let format = 1

    static func create(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE IF NOT EXISTS replica_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS replica_state(class TEXT NOT NULL, id TEXT NOT NULL, status TEXT NOT NULL,
                remote_version TEXT, remote_updated_at INTEGER, synced_at INTEGER, PRIMARY KEY(class, id)) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS replica_outbox(seq INTEGER PRIMARY KEY, class TEXT NOT NULL, id TEXT NOT NULL,
                op TEXT NOT NULL, payload TEXT NOT NULL, inflight INTEGER NOT NULL DEFAULT 0, blocked TEXT,
                force INTEGER NOT NULL DEFAULT 0);
            CREATE INDEX IF NOT EXISTS replica_outbox_record ON replica_outbox(class, id);
            CREATE TABLE IF NOT EXISTS replica_idmap(class TEXT NOT NULL, local_id TEXT NOT NULL, remote_id TEXT NOT NULL,
                PRIMARY KEY(class, local_id)) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS replica_classes(class TEXT PRIMARY KEY, hwm INTEGER, last_down INTEGER, last_up INTEGER,
                syncs INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS replica_conflicts(class TEXT NOT NULL, id TEXT NOT NULL, remote TEXT NOT NULL,
                reason TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY(class, id)) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS replica_files(seq INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, original TEXT NOT NULL,
                content_type TEXT, acl TEXT, bytes BLOB NOT NULL, remote TEXT);
            CREATE TABLE IF NOT EXISTS replica_refused(class TEXT NOT NULL, id_hex TEXT NOT NULL, record TEXT NOT NULL,
                reason TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY(class, id_hex)) WITHOUT ROWID;
            """)
        try db.execute(sql: "INSERT OR IGNORE INTO replica_meta(key, value) VALUES ('format', ?)", arguments: [String(format)])
    }

    /// What a file holds: nothing, a replica (with its format), or something else (a Local store, another database).
    enum Kind { case missing, replica(format: Int), foreign(String) }

    static func inspect(path: String) throws(MBaaSError) -> Kind {
        guard FileManager.default.fileExists(atPath: path) else { return .missing }
        var config = Configuration()
        config.readonly = true
        do {
            let queue = try DatabaseQueue(path: path, configuration: config)
            defer { try? queue.close() }
            return try queue.read { db -> Kind in
                let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'")
                guard tables.contains("replica_meta") else {
                    return .foreign(tables.isEmpty ? "an empty database" : "a SQLite database without replica tables")
                }
                let format = try String.fetchOne(db, sql: "SELECT value FROM replica_meta WHERE key = 'format'").flatMap { Int($0) }
                return .replica(format: format ?? 0)
            }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_NOTADB {
            return .foreign("not a SQLite database")
        } catch {
            throw MBaaSError(.localIO, "cannot read '\(path)': \(error)")
        }
    }
}

/// Milliseconds since 1970, as the Local store keeps times.
enum Millis {
    static func of(_ date: Date) -> Int64 { ISO8601.millis(date) }
    static func date(_ ms: Int64) -> Date { Date(timeIntervalSince1970: Double(ms) / 1000) }
}

/// The replica's database: the Local store's `records` table (which the Local backend queries) plus the replica's
/// tables, written together in single transactions.
struct ReplicaStore: Sendable {
    let pool: DatabasePool
    let clock: @Sendable () -> Date

    var now: Int64 { Millis.of(clock()) }

    init(path: String, clock: @escaping @Sendable () -> Date) throws(MBaaSError) {
        var config = Configuration()
        config.label = "mbaas-replica"
        config.busyMode = .timeout(10)
        config.prepareDatabase { db in
            guard !db.configuration.readonly else { return }
            // As the Local store: in WAL mode NORMAL syncs at checkpoints, not at every commit. A commit survives the
            // process being killed (the outbox's kill -9 safety holds); a power loss may drop the last commits, which
            // a replica takes back from the remote or its outbox on the next sync. GRDB already sets it on a pool's
            // writer; it is stated here so that the replica's durability does not hang on a library default.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // 8 MiB of page cache for the writer (SQLite's default is 2 MiB): a sync down of 100k records otherwise
            // re-reads the index pages it just wrote.
            try db.execute(sql: "PRAGMA cache_size = -8192")
        }
        do {
            pool = try DatabasePool(path: path, configuration: config)
            try pool.write { db in try ReplicaSchema.create(db) }
        } catch {
            throw MBaaSError(.localIO, "cannot open the replica '\(path)': \(error)")
        }
        self.clock = clock
    }

    static func wrap(_ error: any Error) -> MBaaSError {
        if let e = error as? MBaaSError { return e }
        if let db = error as? DatabaseError {
            if db.resultCode == .SQLITE_BUSY || db.resultCode == .SQLITE_LOCKED {
                return MBaaSError(.unavailable, "the replica database is busy: \(db.message ?? "")")
            }
            if db.resultCode == .SQLITE_CONSTRAINT { return MBaaSError(.duplicate, "the replica already holds that record") }
        }
        return MBaaSError(.localIO, "replica database: \(error)")
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(MBaaSError) -> T {
        do { return try await pool.write(body) } catch { throw Self.wrap(error) }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(MBaaSError) -> T {
        do { return try await pool.read(body) } catch { throw Self.wrap(error) }
    }

    // MARK: Meta

    static func meta(_ db: Database, _ key: String) throws -> String? {
        try String.fetchOne(db, sql: "SELECT value FROM replica_meta WHERE key = ?", arguments: [key])
    }

    static func setMeta(_ db: Database, _ key: String, _ value: String?) throws {
        if let value {
            try db.execute(sql: "INSERT OR REPLACE INTO replica_meta(key, value) VALUES (?, ?)", arguments: [key, value])
        } else {
            try db.execute(sql: "DELETE FROM replica_meta WHERE key = ?", arguments: [key])
        }
    }

    // MARK: Records rows (the Local store's table)

    struct Row: Sendable {
        var record: MBaaSCore.Record
        var localVersion: Int64
    }

    static func loadRow(_ db: Database, className: String, id: String) throws -> Row? {
        guard let row = try GRDB.Row.fetchOne(db, sql: """
            SELECT id, created_at, updated_at, version, acl, fields FROM records WHERE class = ? AND id = ?
            """, arguments: [className, id]) else { return nil }
        let version: Int64 = row["version"]
        let aclText: String? = row["acl"]
        let fieldsText: String = row["fields"]
        guard case .object(let fields) = try Value.parse(jsonText: fieldsText) else {
            throw MBaaSError(.decoding, "stored record \(className)/\(id) has no field object")
        }
        let record = MBaaSCore.Record(className: className, id: id, createdAt: Millis.date(row["created_at"]),
                            updatedAt: Millis.date(row["updated_at"]), version: String(version),
                            acl: try aclText.map { t throws in try ACL(json: try JSON.parse(t)) }, fields: fields)
        return Row(record: record, localVersion: version)
    }

    /// Inserts or replaces the row of a record (fields already sealed), keeping its `seq` when it exists.
    static func saveRow(_ db: Database, _ record: MBaaSCore.Record, version: Int64, createdAt: Int64, updatedAt: Int64) throws {
        let fields = Value.object(record.fields).jsonText
        let acl = record.acl.map { $0.json.printed() }
        try db.execute(sql: """
            INSERT INTO records(class, id, created_at, updated_at, version, acl, fields) VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(class, id) DO UPDATE SET created_at = excluded.created_at, updated_at = excluded.updated_at,
                version = excluded.version, acl = excluded.acl, fields = excluded.fields
            """, arguments: [record.className, record.id!, createdAt, updatedAt, version, acl, fields])
    }

    static func deleteRow(_ db: Database, className: String, id: String) throws {
        try db.execute(sql: "DELETE FROM records WHERE class = ? AND id = ?", arguments: [className, id])
    }

    // MARK: State

    struct State: Sendable {
        var status: SyncStatus
        var remoteVersion: String?
        var remoteUpdatedAt: Int64?
    }

    static func state(_ db: Database, className: String, id: String) throws -> State? {
        guard let row = try GRDB.Row.fetchOne(db, sql: """
            SELECT status, remote_version, remote_updated_at FROM replica_state WHERE class = ? AND id = ?
            """, arguments: [className, id]) else { return nil }
        let status: String = row["status"]
        return State(status: SyncStatus(rawValue: status) ?? .conflicted, remoteVersion: row["remote_version"],
                     remoteUpdatedAt: row["remote_updated_at"])
    }

    static func setStatus(_ db: Database, className: String, id: String, _ status: SyncStatus) throws {
        try db.execute(sql: """
            INSERT INTO replica_state(class, id, status) VALUES (?, ?, ?)
            ON CONFLICT(class, id) DO UPDATE SET status = excluded.status
            """, arguments: [className, id, status.rawValue])
    }

    /// Marks a record as equal to the remote's copy `remote` (version and update time as the remote gave them).
    static func markSynced(_ db: Database, className: String, id: String, remote: MBaaSCore.Record, now: Int64) throws {
        try db.execute(sql: """
            INSERT INTO replica_state(class, id, status, remote_version, remote_updated_at, synced_at) VALUES (?, ?, 'synced', ?, ?, ?)
            ON CONFLICT(class, id) DO UPDATE SET status = 'synced', remote_version = excluded.remote_version,
                remote_updated_at = excluded.remote_updated_at, synced_at = excluded.synced_at
            """, arguments: [className, id, remote.version, remote.updatedAt.map(Millis.of), now])
    }

    static func deleteState(_ db: Database, className: String, id: String) throws {
        try db.execute(sql: "DELETE FROM replica_state WHERE class = ? AND id = ?", arguments: [className, id])
    }

    // MARK: Sync down

    /// Keeps a remote record sync down refused, keyed by its id's UTF-8 bytes in hex (the id itself holds a NUL, which
    /// a bound `String` would be cut at).
    static func keepRefused(_ db: Database, _ refusal: SyncConflict, now: Int64) throws {
        // Its identity only: fields and ACL stay out of the replica (they may be fields it keeps encrypted).
        guard let remote = refusal.remote else { return }
        let record = MBaaSCore.Record(className: remote.className, id: remote.id, createdAt: remote.createdAt,
                                      updatedAt: remote.updatedAt, version: remote.version)
        try db.execute(sql: """
            INSERT INTO replica_refused(class, id_hex, record, reason, at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT(class, id_hex) DO UPDATE SET record = excluded.record, reason = excluded.reason, at = excluded.at
            """, arguments: [refusal.className, hex(refusal.id), record.json.printed(), refusal.reason, now])
    }

    /// The refused records of a class kept so far, in id order.
    static func refused(_ db: Database, className: String) throws -> [SyncConflict] {
        try GRDB.Row.fetchAll(db, sql: "SELECT record, reason FROM replica_refused WHERE class = ? ORDER BY id_hex",
                              arguments: [className]).map { row in
            let record = try MBaaSCore.Record(json: JSON.parse(row["record"] as String))
            return SyncConflict(className: className, id: record.id ?? "", local: nil, remote: record, reason: row["reason"])
        }
    }

    /// Forgets the refused records of a class whose ids the remote no longer has (after a whole scan of it).
    static func forgetRefused(_ db: Database, className: String, keeping remoteIds: Set<String>) throws {
        for kept in try refused(db, className: className) where !remoteIds.contains(kept.id) {
            try db.execute(sql: "DELETE FROM replica_refused WHERE class = ? AND id_hex = ?", arguments: [className, hex(kept.id)])
        }
    }

    static func hex(_ text: String) -> String { text.utf8.lowercaseHex }

    /// The status of each of `ids` that has a state row, in one query per 500 ids (a page's prefetch).
    static func statuses(_ db: Database, className: String, ids: [String]) throws -> [String: SyncStatus] {
        var out: [String: SyncStatus] = [:]
        var start = 0
        while start < ids.count {
            let chunk = Array(ids[start..<min(ids.count, start + 500)])
            start += chunk.count
            let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
            let rows = try GRDB.Row.fetchCursor(db, sql: "SELECT id, status FROM replica_state WHERE class = ? AND id IN (\(marks))",
                                                arguments: StatementArguments([className] + chunk))
            while let row = try rows.next() {
                let status: String = row["status"]
                out[row["id"]] = SyncStatus(rawValue: status) ?? .conflicted
            }
        }
        return out
    }

    /// Applies one page of sync down in the caller's transaction: each of `records` whose record has no state or a
    /// `synced` one replaces the local row (fields passed through `seal`; its local version + 1, or 1 when new) and
    /// is marked synced; a record with a pending local change (any other status) is left alone, unsealed. Two cached
    /// statements per applied record plus one state prefetch per 500 ids. Returns how many records were applied.
    @discardableResult
    static func applySyncedPage(_ db: Database, className: String, records: [MBaaSCore.Record], now: Int64,
                                seal: ([String: Value]) throws -> [String: Value]) throws -> Int {
        let statuses = try statuses(db, className: className, ids: records.compactMap(\.id))
        let saveRow = try db.cachedStatement(sql: """
            INSERT INTO records(class, id, created_at, updated_at, version, acl, fields) VALUES (?, ?, ?, ?, 1, ?, ?)
            ON CONFLICT(class, id) DO UPDATE SET created_at = excluded.created_at, updated_at = excluded.updated_at,
                version = records.version + 1, acl = excluded.acl, fields = excluded.fields
            """)
        let markSynced = try db.cachedStatement(sql: """
            INSERT INTO replica_state(class, id, status, remote_version, remote_updated_at, synced_at) VALUES (?, ?, 'synced', ?, ?, ?)
            ON CONFLICT(class, id) DO UPDATE SET status = 'synced', remote_version = excluded.remote_version,
                remote_updated_at = excluded.remote_updated_at, synced_at = excluded.synced_at
            """)
        var applied = 0
        for record in records {
            guard let id = record.id else { continue }
            if let status = statuses[id], status != .synced { continue }
            let updatedAt = record.updatedAt.map(Millis.of)
            try saveRow.execute(arguments: [className, id, record.createdAt.map(Millis.of) ?? now, updatedAt ?? now,
                                            record.acl.map { $0.json.printed() }, Value.object(try seal(record.fields)).jsonText])
            try markSynced.execute(arguments: [className, id, record.version, updatedAt, now])
            applied += 1
        }
        return applied
    }

    // MARK: Outbox

    static func decodeEntry(_ row: GRDB.Row) throws -> OutboxEntry {
        let payloadText: String = row["payload"]
        let op: String = row["op"]
        return OutboxEntry(
            seq: row["seq"], className: row["class"], id: row["id"], operation: OutboxEntry.Operation(rawValue: op) ?? .update,
            payload: try JSON.parse(payloadText).objectValue ?? [:], inflight: (row["inflight"] as Int64) != 0,
            blocked: row["blocked"], force: (row["force"] as Int64) != 0)
    }

    static func entries(_ db: Database, className: String, id: String) throws -> [OutboxEntry] {
        try GRDB.Row.fetchAll(db, sql: "SELECT * FROM replica_outbox WHERE class = ? AND id = ? ORDER BY seq",
                              arguments: [className, id]).map(decodeEntry)
    }

    static func allEntries(_ db: Database, classes: [String]?) throws -> [OutboxEntry] {
        let rows = try GRDB.Row.fetchAll(db, sql: "SELECT * FROM replica_outbox ORDER BY seq")
        let entries = try rows.map(decodeEntry)
        guard let classes else { return entries }
        let set = Set(classes)
        return entries.filter { set.contains($0.className) }
    }

    static func append(_ db: Database, className: String, id: String, _ op: OutboxEntry.Operation, payload: JSONObject,
                       force: Bool = false) throws {
        try db.execute(sql: "INSERT INTO replica_outbox(class, id, op, payload, force) VALUES (?, ?, ?, ?, ?)",
                       arguments: [className, id, op.rawValue, JSON.object(payload).printed(), force ? 1 : 0])
    }

    static func replacePayload(_ db: Database, seq: Int64, op: OutboxEntry.Operation, payload: JSONObject) throws {
        try db.execute(sql: "UPDATE replica_outbox SET op = ?, payload = ? WHERE seq = ?",
                       arguments: [op.rawValue, JSON.object(payload).printed(), seq])
    }

    /// The outbox entry `seq` as it is now (a local write may have coalesced into it), or `nil` once it is gone.
    static func entry(_ db: Database, seq: Int64) throws -> OutboxEntry? {
        try GRDB.Row.fetchOne(db, sql: "SELECT * FROM replica_outbox WHERE seq = ?", arguments: [seq]).map(decodeEntry)
    }

    /// Marks an entry as possibly sent (looked up before it is sent again); a no-op for one already marked.
    static func markInFlight(_ db: Database, _ entry: OutboxEntry) throws {
        if !entry.inflight { try db.execute(sql: "UPDATE replica_outbox SET inflight = 1 WHERE seq = ?", arguments: [entry.seq]) }
    }

    static func removeEntry(_ db: Database, seq: Int64) throws {
        try db.execute(sql: "DELETE FROM replica_outbox WHERE seq = ?", arguments: [seq])
    }

    // MARK: Id map

    /// The current id of a record: the remote's id when the offline id was replaced.
    static func resolve(_ db: Database, className: String, id: String) throws -> String {
        try String.fetchOne(db, sql: "SELECT remote_id FROM replica_idmap WHERE class = ? AND local_id = ?",
                            arguments: [className, id]) ?? id
    }

    /// Replaces an offline id with the remote's everywhere: the record's row, its state, its queued writes, and
    /// every pointer to it in other records and queued writes. The old id keeps finding the record.
    static func replaceId(_ db: Database, className: String, from old: String, to new: String) throws {
        try db.execute(sql: "UPDATE records SET id = ? WHERE class = ? AND id = ?", arguments: [new, className, old])
        try db.execute(sql: "UPDATE replica_state SET id = ? WHERE class = ? AND id = ?", arguments: [new, className, old])
        try db.execute(sql: "UPDATE replica_outbox SET id = ? WHERE class = ? AND id = ?", arguments: [new, className, old])
        try db.execute(sql: "UPDATE replica_conflicts SET id = ? WHERE class = ? AND id = ?", arguments: [new, className, old])
        try db.execute(sql: "INSERT OR REPLACE INTO replica_idmap(class, local_id, remote_id) VALUES (?, ?, ?)",
                       arguments: [className, old, new])
        try db.execute(sql: "UPDATE replica_idmap SET remote_id = ? WHERE class = ? AND remote_id = ?", arguments: [new, className, old])
        let pattern = "%\"objectId\":\"\(old)\"%"
        for row in try GRDB.Row.fetchAll(db, sql: "SELECT seq, fields FROM records WHERE fields LIKE ?", arguments: [pattern]) {
            let text: String = row["fields"]
            let rewritten = PointerRewrite.rewrite(try JSON.parse(text), className: className, from: old, to: new)
            try db.execute(sql: "UPDATE records SET fields = ? WHERE seq = ?", arguments: [rewritten.printed(), row["seq"] as Int64])
        }
        for row in try GRDB.Row.fetchAll(db, sql: "SELECT seq, payload FROM replica_outbox WHERE payload LIKE ?", arguments: [pattern]) {
            let text: String = row["payload"]
            let rewritten = PointerRewrite.rewrite(try JSON.parse(text), className: className, from: old, to: new)
            try db.execute(sql: "UPDATE replica_outbox SET payload = ? WHERE seq = ?", arguments: [rewritten.printed(), row["seq"] as Int64])
        }
    }
}

/// Rewrites pointers `{"__type":"Pointer","className":C,"objectId":old}` anywhere in a neutral JSON tree.
enum PointerRewrite {
    static func rewrite(_ json: JSON, className: String, from old: String, to new: String) -> JSON {
        switch json {
        case .object(var o):
            if o["__type"]?.stringValue == "Pointer", o["className"]?.stringValue == className, o["objectId"]?.stringValue == old {
                o["objectId"] = .string(new)
                return .object(o)
            }
            var out = JSONObject()
            for (k, v) in o { out[k] = rewrite(v, className: className, from: old, to: new) }
            return .object(out)
        case .array(let items):
            return .array(items.map { rewrite($0, className: className, from: old, to: new) })
        default:
            return json
        }
    }
}
