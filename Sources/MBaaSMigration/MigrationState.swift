public import Foundation
import DequeModule
import GRDB
public import MBaaSCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a migration remembers between runs, in one SQLite database (`state.db`) in its state folder: the id map
/// (source id → target id for records, users and files), writes in flight, pointers left to rewrite, attachments
/// left to copy, finished steps and each user's password handling. Every change is one transaction with the batch
/// it belongs to, so a run killed at any point resumes without losing or duplicating anything.
///
/// A lock file (`state.lock`, `flock`) refuses a second concurrent run on the same folder.
public final class MigrationState: Sendable {
    public let directory: URL
    let db: DatabaseQueue
    private let lockDescriptor: Int32
    /// Written records whose mappings are not committed yet (see ``recordWritten(_:className:_:deferred:)``).
    private let behind = WriteBehind()
    /// Set once the reverse index (target id → source id) exists: it is built on first use, not kept up to date
    /// during the copy (a second random-order index would double the state's writes).
    private let reverseIndexed = Locked(false)
    /// Mappings of settled kinds and classes, as they were looked up (``settle(_:className:)``).
    private let settledMappings = SettledMappings(limit: MigrationState.settledCacheLimit)
    /// File-link fields already recorded in this run (`class NUL field`).
    private let knownFileFields = Locked(Set<String>())

    /// Forgets what the state remembers in memory of the database's contents (after ``discard()``).
    func forgetRemembered() {
        settledMappings.clear()
        knownFileFields.withLock { $0.removeAll() }
    }

    /// How many written records' mappings may wait in memory before they are committed in one transaction.
    ///
    /// An id map keyed by source id is written in random order; committed batch by batch, every transaction
    /// rewrote most of the index's pages (measured: the state's writes cost more than the target's inserts).
    /// Waiting is safe: a record's pending mark is committed before it is written to the target and cleared only
    /// with its mapping, so after a crash the records whose mappings were lost are found on the target by source id.
    static let writeBehindLimit = 5_000

    /// Opens (creating, 0700/0600) the state folder and takes its lock; a folder locked by another run is
    /// ``MBaaSError/Kind/conflict`` naming it.
    public init(directory: URL) throws(MBaaSError) {
        self.directory = directory
        let fm = FileManager.default
        do {
            try fm.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw MBaaSError(.localIO, "cannot create the state folder \(directory.path): \(MBaaSError.describe(error))")
        }
        let lockPath = directory.appendingPathComponent("state.lock").path
        let fd = open(lockPath, O_RDWR | O_CREAT, 0o600)
        guard fd >= 0 else { throw MBaaSError(.localIO, "cannot open \(lockPath): \(String(cString: strerror(errno)))") }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            closeDescriptor(fd)
            throw MBaaSError(.conflict, "another migration is running on the state folder \(directory.path); wait for it to finish (or stop it) and run again")
        }
        lockDescriptor = fd
        let path = directory.appendingPathComponent("state.db").path
        do {
            if !fm.fileExists(atPath: path) { _ = fm.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) }
            var config = Configuration()
            config.label = "mbaas-migration-state"
            // Write-ahead log with synchronous=NORMAL: a committed batch survives the process being killed (kill -9,
            // a crash); only an operating-system crash or power loss may lose the last few, which the next run then
            // writes again (the pending look-up finds those still marked in flight).
            config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
            db = try DatabaseQueue(path: path, configuration: config)
            try db.writeWithoutTransaction { db in _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") }
            try Self.migrator.migrate(db)
        } catch {
            flock(fd, LOCK_UN)
            closeDescriptor(fd)
            throw MBaaSError(.unavailable, "cannot open the migration state \(path): \(error)")
        }
    }

    deinit {
        try? db.close()
        flock(lockDescriptor, LOCK_UN)
        closeDescriptor(lockDescriptor)
    }

    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE idmap(kind TEXT NOT NULL, class TEXT NOT NULL, source_id TEXT NOT NULL, target_id TEXT NOT NULL,
                                   PRIMARY KEY(kind, class, source_id)) WITHOUT ROWID;
                CREATE INDEX idmap_target ON idmap(kind, class, target_id);
                CREATE TABLE pending(kind TEXT NOT NULL, class TEXT NOT NULL, source_id TEXT NOT NULL,
                                     PRIMARY KEY(kind, class, source_id)) WITHOUT ROWID;
                CREATE TABLE fixups(class TEXT NOT NULL, source_id TEXT NOT NULL, target_id TEXT NOT NULL, pointers TEXT NOT NULL,
                                    PRIMARY KEY(class, source_id)) WITHOUT ROWID;
                CREATE TABLE attachments(class TEXT NOT NULL, source_id TEXT NOT NULL, field TEXT NOT NULL, file TEXT NOT NULL,
                                         ref TEXT NOT NULL, original TEXT NOT NULL, done INTEGER NOT NULL DEFAULT 0, sha256 TEXT,
                                         size INTEGER, target_name TEXT, PRIMARY KEY(class, source_id, field)) WITHOUT ROWID;
                CREATE INDEX attachments_file ON attachments(file);
                CREATE TABLE files(source_name TEXT PRIMARY KEY, target TEXT NOT NULL, sha256 TEXT NOT NULL, size INTEGER NOT NULL,
                                   linked INTEGER NOT NULL) WITHOUT ROWID;
                CREATE TABLE steps(name TEXT PRIMARY KEY) WITHOUT ROWID;
                CREATE TABLE users(source_id TEXT PRIMARY KEY, password TEXT NOT NULL) WITHOUT ROWID;
                CREATE TABLE file_fields(class TEXT NOT NULL, field TEXT NOT NULL, PRIMARY KEY(class, field)) WITHOUT ROWID;
                """)
        }
        m.registerMigration("v2") { db in
            // The reverse index is built when a verification needs it (``sourceId(_:className:targetId:)``).
            try db.execute(sql: "DROP INDEX IF EXISTS idmap_target")
        }
        m.registerMigration("v3") { db in
            // A batch of record writes in flight is one row (its source ids as a JSON array), not one row per record.
            try db.execute(sql: """
                CREATE TABLE pending_batches(token INTEGER PRIMARY KEY, kind TEXT NOT NULL, class TEXT NOT NULL, source_ids TEXT NOT NULL);
                CREATE INDEX pending_batches_class ON pending_batches(kind, class);
                """)
        }
        m.registerMigration("v4") { db in
            // Warnings about what a run wrote (``keepWarnings(_:run:)``), and the last run that said each.
            try db.execute(sql: """
                CREATE TABLE warnings(kind TEXT NOT NULL, class TEXT NOT NULL, source_id TEXT NOT NULL, detail TEXT NOT NULL,
                                      run TEXT NOT NULL, PRIMARY KEY(kind, class, source_id, detail)) WITHOUT ROWID;
                """)
        }
        return m
    }

    /// Runs `body` on the state's one connection. Without a transaction or GRDB's read-only switch (two PRAGMAs and
    /// a BEGIN/COMMIT per call, 5 % of a file-heavy migration's time): every access goes through the one serial
    /// queue, and the lock file keeps other processes out, so nothing can write between a reader's statements.
    func read<T>(_ body: (Database) throws -> T) throws(MBaaSError) -> T {
        do { return try db.unsafeRead(body) } catch { throw Self.wrap(error) }
    }

    func write<T>(_ body: (Database) throws -> T) throws(MBaaSError) -> T {
        do { return try db.write(body) } catch { throw Self.wrap(error) }
    }

    static func wrap(_ error: any Error) -> MBaaSError {
        if let e = error as? MBaaSError { return e }
        return MBaaSError(.unavailable, "migration state: \(error)")
    }

    // MARK: Id map

    public enum Kind: String, Sendable { case record, user, file }

    /// The target ids of the given source ids that are mapped.
    func mapped(_ kind: Kind, className: String, sourceIds: [String]) throws(MBaaSError) -> [String: String] {
        guard !sourceIds.isEmpty else { return [:] }
        // A settled kind and class answers from memory what it has seen, and asks the database for the rest.
        var ask = sourceIds
        var found: [String: String] = [:]
        let isSettled = settledMappings.lookup(kind, className: className, sourceIds: sourceIds, found: &found, missing: &ask)
        guard !ask.isEmpty else { return found }
        // Committed mappings, then those still waiting (a mapping is in one or both, never in neither).
        var more = try committedMappings(kind, className: className, sourceIds: ask)
        behind.overlay(kind, className: className, sourceIds: ask, into: &more)
        if isSettled { settledMappings.remember(kind, className: className, more) }
        found.merge(more) { _, new in new }
        return found
    }

    /// One statement, prepared once: the ids go in as one JSON array, each looked up by the primary key.
    private func committedMappings(_ kind: Kind, className: String, sourceIds: [String]) throws(MBaaSError) -> [String: String] {
        let ids = JSON.array(sourceIds.map(JSON.string)).printed()
        return try read { db in
            var out: [String: String] = Dictionary(minimumCapacity: sourceIds.count)
            let stmt = try db.cachedStatement(sql: """
                SELECT m.source_id, m.target_id FROM json_each(?1) AS j CROSS JOIN idmap AS m
                WHERE m.kind = ?2 AND m.class = ?3 AND m.source_id = j.value
                """)
            let rows = try Row.fetchCursor(stmt, arguments: [ids, kind.rawValue, className])
            while let r = try rows.next() { out[r[0]] = r[1] }
            return out
        }
    }

    /// Declares that this run writes no more mappings of a kind and class (users after their phase, a class after its
    /// copy): their look-ups are answered from memory from then on (pointers and ACLs name the same few users and
    /// records again and again), at most ``settledCacheLimit`` mappings in all. A mapping written for them later
    /// (by ``recordWritten(_:className:_:deferred:settling:)`` or ``recordUsers(_:password:)``) ends that.
    func settle(_ kind: Kind, className: String) {
        settledMappings.settle(kind, className: className)
    }

    /// How many settled mappings are kept in memory, in all (about 130 bytes each with 16-character ids, so at most
    /// about 2.6 MB): enough for the users and the referenced records that pointers and ACLs name again and again.
    /// Pointers that each name a different record would fill any size with mappings seen once; the limit bounds that.
    public static let settledCacheLimit = 20_000

    /// The target id of one source id.
    public func targetId(_ kind: Kind, className: String, sourceId: String) throws(MBaaSError) -> String? {
        try mapped(kind, className: className, sourceIds: [sourceId])[sourceId]
    }

    /// The source id of a target id (reverse look-up, for verification).
    func sourceId(_ kind: Kind, className: String, targetId: String) throws(MBaaSError) -> String? {
        try flushWritten()
        if !reverseIndexed.withLock({ $0 }) {
            try write { db in try db.execute(sql: "CREATE INDEX IF NOT EXISTS idmap_target ON idmap(kind, class, target_id)") }
            reverseIndexed.withLock { $0 = true }
        }
        return try read { db in
            try String.fetchOne(db, sql: "SELECT source_id FROM idmap WHERE kind = ? AND class = ? AND target_id = ?",
                                arguments: [kind.rawValue, className, targetId])
        }
    }

    /// How many source ids of a kind and class are mapped.
    public func mappedCount(_ kind: Kind, className: String) throws(MBaaSError) -> Int {
        try flushWritten()
        return try read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM idmap WHERE kind = ? AND class = ?", arguments: [kind.rawValue, className]) ?? 0
        }
    }

    // MARK: Steps

    func isDone(_ step: String) throws(MBaaSError) -> Bool {
        try read { db in try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM steps WHERE name = ?)", arguments: [step]) ?? false }
    }

    func markDone(_ step: String) throws(MBaaSError) {
        try write { db in try db.execute(sql: "INSERT OR IGNORE INTO steps(name) VALUES (?)", arguments: [step]) }
    }

    // MARK: Pending writes

    func pending(_ kind: Kind, className: String) throws(MBaaSError) -> [String] {
        try flushWritten()
        return try read { db in
            var ids = try String.fetchAll(db, sql: "SELECT source_id FROM pending WHERE kind = ? AND class = ?", arguments: [kind.rawValue, className])
            var seen = Set(ids)
            for text in try String.fetchAll(db, sql: "SELECT source_ids FROM pending_batches WHERE kind = ? AND class = ? ORDER BY token",
                                            arguments: [kind.rawValue, className]) {
                for item in try JSON.parse(text).arrayValue ?? [] {
                    if let id = item.stringValue, seen.insert(id).inserted { ids.append(id) }
                }
            }
            return ids
        }
    }

    /// The newest batch of writes marked in flight for the class, if any: what ``settlePending(_:className:through:)``
    /// clears once the class is done.
    func lastPendingBatch(_ kind: Kind, className: String) throws(MBaaSError) -> PendingBatch? {
        try read { db in
            try Int64.fetchOne(db, sql: "SELECT MAX(token) FROM pending_batches WHERE kind = ? AND class = ?", arguments: [kind.rawValue, className])
                .map(PendingBatch.init(token:))
        }
    }

    /// Clears the marks an earlier run left for the class, up to `batch`: called once every record they name has been
    /// found on the target or written again, and its mapping committed.
    func settlePending(_ kind: Kind, className: String, through batch: PendingBatch?) throws(MBaaSError) {
        try write { db in
            try db.execute(sql: "DELETE FROM pending WHERE kind = ? AND class = ?", arguments: [kind.rawValue, className])
            if let batch {
                try db.execute(sql: "DELETE FROM pending_batches WHERE kind = ? AND class = ? AND token <= ?",
                               arguments: [kind.rawValue, className, batch.token])
            }
        }
    }

    /// Marks a batch of writes as in flight, in one row; returns the token that
    /// ``recordWritten(_:className:_:deferred:settling:)`` settles when the batch's mappings are committed.
    ///
    /// The mark is committed before the writes start: a run that dies before the mappings are committed leaves it,
    /// and the next run looks those records up on the target before writing them again. One row per batch, not one
    /// per record: marking and settling a record costs nothing in the state's indexes.
    func beginWrites(_ kind: Kind, className: String, sourceIds: [String]) throws(MBaaSError) -> PendingBatch {
        try write { db in
            try db.execute(sql: "INSERT INTO pending_batches(kind, class, source_ids) VALUES (?, ?, ?)",
                           arguments: [kind.rawValue, className, JSON.array(sourceIds.map(JSON.string)).printed()])
            return PendingBatch(token: db.lastInsertedRowID)
        }
    }

    func addPending(_ kind: Kind, className: String, sourceIds: [String]) throws(MBaaSError) {
        try write { db in
            let stmt = try db.cachedStatement(sql: "INSERT OR IGNORE INTO pending(kind, class, source_id) VALUES (?, ?, ?)")
            for id in sourceIds.sorted() { try stmt.execute(arguments: [kind.rawValue, className, id]) }
        }
    }

    func clearPending(_ kind: Kind, className: String, sourceIds: [String]) throws(MBaaSError) {
        try write { db in try Self.deletePending(db, kind, className: className, sourceIds: sourceIds) }
    }

    /// Removes pending marks inside the caller's transaction.
    private static func deletePending(_ db: Database, _ kind: Kind, className: String, sourceIds: some Sequence<String>) throws {
        let stmt = try db.cachedStatement(sql: "DELETE FROM pending WHERE kind = ? AND class = ? AND source_id = ?")
        for id in sourceIds { try stmt.execute(arguments: [kind.rawValue, className, id]) }
    }

    /// One written record: its id mapping, the pointers left to rewrite and the attachments left to copy, with the
    /// pending mark cleared, all in one transaction.
    struct Written {
        var sourceId: String
        var targetId: String
        /// `{field: pointer or array JSON}` to rewrite in phase 2.
        var fixups: JSON?
        /// Files to copy as attachments: the target field, the source's reference, and the source value as it was.
        var attachments: [(field: String, ref: FileReference, original: Value)]
    }

    /// Records written items (``Written``): their id mappings, the pointers and attachments left for later phases,
    /// and the removal of their pending marks, in one transaction.
    ///
    /// With `deferred`, the items wait in memory with others and are committed together once
    /// ``writeBehindLimit`` records wait (or at ``flushWritten()``); until then ``mapped(_:className:sourceIds:)``
    /// answers from memory, and their pending marks stay committed.
    ///
    /// `settling` names the batch whose pending mark is removed in the same transaction as these mappings.
    func recordWritten(_ kind: Kind, className: String, _ items: [Written], deferred: Bool = false, settling batch: PendingBatch? = nil)
        throws(MBaaSError)
    {
        settledMappings.unsettle(kind, className: className)
        guard deferred else { return try commitWritten([(kind, className, items)], settling: batch.map { [$0.token] } ?? []) }
        if behind.add(kind, className: className, items, settling: batch) >= Self.writeBehindLimit { try flushWritten() }
    }

    /// Commits every mapping waiting in memory, in one transaction. The classes' copy calls it when it ends, also
    /// when it fails; a process that dies first leaves their pending marks, which the next run resolves.
    public func flushWritten() throws(MBaaSError) {
        try behind.flush { groups, tokens throws(MBaaSError) in try commitWritten(groups, settling: tokens) }
    }

    private func commitWritten(_ groups: [(kind: Kind, className: String, items: [Written])], settling tokens: [Int64]) throws(MBaaSError) {
        guard groups.contains(where: { !$0.items.isEmpty }) || !tokens.isEmpty else { return }
        try write { db in
            let settle = try db.cachedStatement(sql: "DELETE FROM pending_batches WHERE token = ?")
            for token in tokens { try settle.execute(arguments: [token]) }
            // A group's mappings go in as one JSON array of [source, target] pairs, read by SQLite itself: one
            // statement per group instead of one bound and stepped per record.
            let map = try db.cachedStatement(sql: """
                INSERT OR REPLACE INTO idmap(kind, class, source_id, target_id)
                SELECT ?1, ?2, json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?3)
                """)
            let unpend = try db.cachedStatement(sql: "DELETE FROM pending WHERE kind = ? AND class = ? AND source_id = ?")
            let fix = try db.cachedStatement(sql: "INSERT OR REPLACE INTO fixups(class, source_id, target_id, pointers) VALUES (?, ?, ?, ?)")
            let att = try db.cachedStatement(sql: "INSERT OR IGNORE INTO attachments(class, source_id, field, file, ref, original) VALUES (?, ?, ?, ?, ?, ?)")
            for (kind, className, items) in groups where !items.isEmpty {
                // In key order: neighbouring keys share pages, so the transaction touches each page once.
                let sorted = items.sorted(by: { $0.sourceId < $1.sourceId })
                try map.execute(arguments: [kind.rawValue, className, JSON.array(sorted.map { .array([.string($0.sourceId), .string($0.targetId)]) }).printed()])
                for item in sorted {
                    // Records are marked in flight by batch (settled above); users and files one by one.
                    if kind != .record { try unpend.execute(arguments: [kind.rawValue, className, item.sourceId]) }
                    if let f = item.fixups { try fix.execute(arguments: [className, item.sourceId, item.targetId, f.printed()]) }
                    for a in item.attachments {
                        try att.execute(arguments: [className, item.sourceId, a.field, a.ref.name, Value.file(a.ref).json.printed(), a.original.json.printed()])
                    }
                }
            }
        }
    }

    // MARK: Fixups, attachments, files

    struct Fixup { var sourceId: String; var targetId: String; var pointers: JSONObject }

    func fixups(className: String, after: String, limit: Int) throws(MBaaSError) -> [Fixup] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT source_id, target_id, pointers FROM fixups WHERE class = ? AND source_id > ? ORDER BY source_id LIMIT ?",
                             arguments: [className, after, limit]).map { row in
                Fixup(sourceId: row[0], targetId: row[1], pointers: (try JSON.parse(row[2] as String)).objectValue ?? [:])
            }
        }
    }

    func fixupClasses() throws(MBaaSError) -> [String] {
        try read { db in try String.fetchAll(db, sql: "SELECT DISTINCT class FROM fixups ORDER BY class") }
    }

    func removeFixups(className: String, sourceIds: [String]) throws(MBaaSError) {
        try write { db in
            let stmt = try db.cachedStatement(sql: "DELETE FROM fixups WHERE class = ? AND source_id = ?")
            for id in sourceIds { try stmt.execute(arguments: [className, id]) }
        }
    }

    struct Attachment { var className: String; var sourceId: String; var field: String; var ref: FileReference; var original: Value
        var done: Bool; var sha256: String?; var size: Int64?; var targetName: String? }

    /// Attachments of a class in source-id order: those of records after `after` (whole records per page, so a page
    /// may hold a few more than `limit`), optionally only done or not done ones, or only those with a `targetName`.
    func attachments(className: String, done: Bool?, after: String = "", limit: Int = Int.max, targetName: String? = nil)
        throws(MBaaSError) -> [Attachment]
    {
        try read { db in
            var sql = "SELECT class, source_id, field, ref, original, done, sha256, size, target_name FROM attachments WHERE class = ? AND source_id > ?"
            var args: [any DatabaseValueConvertible] = [className, after]
            if let done { sql += " AND done = ?"; args.append(done ? 1 : 0) }
            if let targetName { sql += " AND target_name = ?"; args.append(targetName) }
            if limit < Int.max {
                // Whole records: up to the source id of the limit-th row.
                sql += " AND source_id <= COALESCE((SELECT source_id FROM attachments WHERE class = ? AND source_id > ?"
                args += [className, after]
                if let done { sql += " AND done = ?"; args.append(done ? 1 : 0) }
                sql += " ORDER BY source_id LIMIT 1 OFFSET ?), '\u{10FFFF}')"
                args.append(limit - 1)
            }
            return try Row.fetchAll(db, sql: sql + " ORDER BY source_id, field", arguments: StatementArguments(args)).map { r in
                Attachment(className: r[0], sourceId: r[1], field: r[2], ref: try Value(json: JSON.parse(r[3] as String)).fileValue ?? FileReference(name: r[3]),
                           original: try Value(json: JSON.parse(r[4] as String)), done: (r[5] as Int) != 0, sha256: r[6], size: r[7], targetName: r[8])
            }
        }
    }

    /// `target_name` of an attachment whose source file was missing: the field kept the source's value, or could not.
    static let keptOriginal = "(kept the source value)"
    static let droppedOriginal = "(left empty)"

    /// Whether a record's attachment names this source file (so it is not copied again as a standalone file).
    func isLinkedByAttachment(_ name: String) throws(MBaaSError) -> Bool {
        try read { db in try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM attachments WHERE file = ?)", arguments: [name]) ?? false }
    }

    func attachmentDone(_ a: Attachment, sha256: String?, size: Int64?, targetName: String?) throws(MBaaSError) {
        try write { db in
            try db.execute(sql: "UPDATE attachments SET done = 1, sha256 = ?, size = ?, target_name = ? WHERE class = ? AND source_id = ? AND field = ?",
                           arguments: [sha256, size, targetName, a.className, a.sourceId, a.field])
        }
    }

    struct CopiedFile { var sourceName: String; var target: FileReference; var sha256: String; var size: Int64; var linked: Bool }

    func copiedFile(_ sourceName: String) throws(MBaaSError) -> CopiedFile? { try copiedFiles([sourceName])[sourceName] }

    /// The copied files among `sourceNames`, by source name, in one read.
    func copiedFiles(_ sourceNames: [String]) throws(MBaaSError) -> [String: CopiedFile] {
        try read { db in
            let statement = try db.cachedStatement(sql: "SELECT source_name, target, sha256, size, linked FROM files WHERE source_name = ?")
            var found: [String: CopiedFile] = [:]
            for name in sourceNames {
                if let row = try Row.fetchOne(statement, arguments: [name]) { found[name] = try Self.copiedFile(row) }
            }
            return found
        }
    }

    func copiedFiles() throws(MBaaSError) -> [CopiedFile] {
        try read { db in try Row.fetchAll(db, sql: "SELECT source_name, target, sha256, size, linked FROM files ORDER BY source_name").map(Self.copiedFile) }
    }

    static func copiedFile(_ r: Row) throws -> CopiedFile {
        let ref = try Value(json: JSON.parse(r[1] as String)).fileValue ?? FileReference(name: r[1])
        return CopiedFile(sourceName: r[0], target: ref, sha256: r[2], size: r[3], linked: (r[4] as Int) != 0)
    }

    /// Records a copied file; with `pendingClass`, clears the file's in-flight mark (``Kind/file``, that class, the
    /// file's source name) in the same transaction.
    func recordFile(_ f: CopiedFile, clearingPendingIn pendingClass: String? = nil) throws(MBaaSError) {
        try write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO files(source_name, target, sha256, size, linked) VALUES (?, ?, ?, ?, ?)",
                           arguments: [f.sourceName, Value.file(f.target).json.printed(), f.sha256, f.size, f.linked ? 1 : 0])
            if let pendingClass { try Self.deletePending(db, .file, className: pendingClass, sourceIds: [f.sourceName]) }
        }
    }

    /// Whether one source id is marked in flight (one look-up, where ``pending(_:className:)`` lists them all).
    func isPending(_ kind: Kind, className: String, sourceId: String) throws(MBaaSError) -> Bool {
        try read { db in
            try Bool.fetchOne(db, sql: "SELECT 1 FROM pending WHERE kind = ? AND class = ? AND source_id = ?",
                              arguments: [kind.rawValue, className, sourceId]) ?? false
        }
    }

    /// Records that a class's field holds file links; written once per class and field in a run.
    func addFileField(className: String, field: String) throws(MBaaSError) {
        let key = className + "\u{0}" + field
        guard !knownFileFields.withLock({ $0.contains(key) }) else { return }
        try write { db in try db.execute(sql: "INSERT OR IGNORE INTO file_fields(class, field) VALUES (?, ?)", arguments: [className, field]) }
        knownFileFields.withLock { _ = $0.insert(key) }
    }

    func fileFields(className: String) throws(MBaaSError) -> Set<String> {
        try read { db in Set(try String.fetchAll(db, sql: "SELECT field FROM file_fields WHERE class = ?", arguments: [className])) }
    }

    // MARK: Users

    /// Maps imported users (source id → target id) with their password handling, and clears their pending marks, in
    /// one transaction.
    func recordUsers(_ users: [(sourceId: String, targetId: String)], password: String) throws(MBaaSError) {
        guard !users.isEmpty else { return }
        settledMappings.unsettle(.user, className: "_User")
        try write { db in
            let map = try db.cachedStatement(sql: "INSERT OR REPLACE INTO idmap(kind, class, source_id, target_id) VALUES ('user', '_User', ?, ?)")
            let clear = try db.cachedStatement(sql: "DELETE FROM pending WHERE kind = 'user' AND class = '_User' AND source_id = ?")
            let handling = try db.cachedStatement(sql: "INSERT OR REPLACE INTO users(source_id, password) VALUES (?, ?)")
            for user in users {
                try map.execute(arguments: [user.sourceId, user.targetId])
                try clear.execute(arguments: [user.sourceId])
                try handling.execute(arguments: [user.sourceId, password])
            }
        }
    }

    func userPasswords() throws(MBaaSError) -> [(String, String, String)] {
        try read { db in
            try Row.fetchAll(db, sql: """
                SELECT u.source_id, m.target_id, u.password FROM users u
                JOIN idmap m ON m.kind = 'user' AND m.class = '_User' AND m.source_id = u.source_id ORDER BY u.source_id
                """).map { ($0[0], $0[1], $0[2]) }
        }
    }

    // MARK: Verification scratch

    /// Empties the scratch table verification keeps the target's side in: per target record, its key (source id),
    /// its id and the SHA-256 of its canonical content (32 bytes, not the content: the table stays small, and a
    /// mismatch reads the one record again to say what differs).
    func resetVerification() throws(MBaaSError) {
        try write { db in
            try db.execute(sql: """
                DROP TABLE IF EXISTS verify_target;
                CREATE TABLE IF NOT EXISTS verify_digest(key TEXT PRIMARY KEY, target_id TEXT NOT NULL, digest BLOB NOT NULL) WITHOUT ROWID;
                DELETE FROM verify_digest;
                """)
        }
    }

    /// Adds target records (keys sorted first: neighbouring keys share pages); returns the keys already present
    /// (the target holds that source record more than once).
    func addVerificationTargets(_ rows: [(key: String, targetId: String, digest: Data)]) throws(MBaaSError) -> [String] {
        try write { db in
            var duplicates: [String] = []
            let stmt = try db.cachedStatement(sql: "INSERT OR IGNORE INTO verify_digest(key, target_id, digest) VALUES (?, ?, ?)")
            for row in rows.sorted(by: { $0.key < $1.key }) {
                try stmt.execute(arguments: [row.key, row.targetId, row.digest])
                if db.changesCount == 0 { duplicates.append(row.key) }
            }
            return duplicates
        }
    }

    /// Removes and returns the target side of the given keys: `key → (target id, digest)`. With `keeping`, returns
    /// them and leaves them in place (for sides where one row may answer several keys' owners, such as users).
    func takeVerificationTargets(_ keys: [String], keeping: Bool = false) throws(MBaaSError) -> [String: (targetId: String, digest: Data)] {
        guard !keys.isEmpty else { return [:] }
        // One statement for the whole group: the keys go in as one JSON array, the rows come back as they are deleted.
        let list = JSON.array(keys.map(JSON.string)).printed()
        return try write { db in
            var out: [String: (targetId: String, digest: Data)] = [:]
            out.reserveCapacity(keys.count)
            let rows = try Row.fetchCursor(db.cachedStatement(sql: keeping
                ? "SELECT key, target_id, digest FROM verify_digest WHERE key IN (SELECT value FROM json_each(?))"
                : "DELETE FROM verify_digest WHERE key IN (SELECT value FROM json_each(?)) RETURNING key, target_id, digest"),
                arguments: [list])
            while let r = try rows.next() { out[r[0]] = (r[1], r[2]) }
            return out
        }
    }

    /// Target records no source record claimed (what ``takeVerificationTargets(_:)`` left), by key.
    func unseenVerificationTargets(limit: Int) throws(MBaaSError) -> [(String, String)] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT key, target_id FROM verify_digest ORDER BY key LIMIT ?", arguments: [limit])
                .map { ($0[0], $0[1]) }
        }
    }
}

/// `close(2)` on either C library.
func closeDescriptor(_ fd: Int32) {
    #if canImport(Glibc)
    _ = Glibc.close(fd)
    #elseif canImport(Darwin)
    _ = Darwin.close(fd)
    #endif
}

extension MigrationState {
    /// The default state folder of a migration between two URLs: `<data>/mbaas/migrations/<name>`, the name derived
    /// from both URLs without their secrets. `<data>` is `$XDG_DATA_HOME` when set, else the platform's user data
    /// directory in the home directory (`$HOME`): `~/.local/share` on Linux, `~/Library/Application Support` on macOS
    /// (where a folder earlier versions made under `~/.local/share` is still used, so that its migration resumes).
    public static func defaultDirectory(from: String, to: String) -> URL {
        let env = ProcessInfo.processInfo.environment
        let home = env["HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) } ?? FileManager.default.homeDirectoryForCurrentUser
        #if os(macOS)
        let platform = home.appendingPathComponent("Library/Application Support")
        #else
        let platform = home.appendingPathComponent(".local/share")
        #endif
        let name = "mbaas/migrations/\(folderName(from: from, to: to))"
        if let xdg = env["XDG_DATA_HOME"], !xdg.isEmpty { return URL(fileURLWithPath: xdg).appendingPathComponent(name) }
        #if os(macOS)
        // Earlier versions used ~/.local/share on macOS too: a migration begun there resumes there.
        let earlier = home.appendingPathComponent(".local/share").appendingPathComponent(name)
        if FileManager.default.fileExists(atPath: earlier.path) { return earlier }
        #endif
        return platform.appendingPathComponent(name)
    }

    /// `<from>__<to>-<hash>`: readable parts of both URLs without user, secret or options, plus a hash of both
    /// redacted URLs so that different apps on one host get different folders.
    static func folderName(from: String, to: String) -> String {
        func part(_ text: String) -> String {
            let redacted = BackendURL.redactingUserSecret(text)
            var s = redacted
            if let q = s.firstIndex(of: "?") { s = String(s[..<q]) }
            if let at = s.lastIndex(of: "@"), let scheme = s.range(of: "://") { s = String(s[..<scheme.upperBound]) + s[s.index(after: at)...] }
            let cleaned = s.map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" ? $0 : "_" }
            return String(String(cleaned).trimmingCharacters(in: CharacterSet(charactersIn: "_")).suffix(48))
        }
        var hash: UInt64 = 0xcbf29ce484222325
        for b in (BackendURL.redactingUserSecret(from) + "\u{1}" + BackendURL.redactingUserSecret(to)).utf8 { hash = (hash ^ UInt64(b)) &* 0x100000001b3 }
        return "\(part(from))__\(part(to))-\(String(hash, radix: 16).prefix(10))"
    }
}
