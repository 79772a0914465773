import Foundation
import GRDB
import MBaaSCore

/// The file index of an open bundle (`files/index.ndjson`), held in a scratch SQLite database rather than in memory:
/// one row per file in the order files were first seen, one per distinct link. Memory stays flat however many files
/// and links a bundle has, and a file linked by many records merges its links in O(log n) each.
///
/// `files/index.ndjson` stays the truth: a writable bundle appends a line per upload and per link to it (what a killed
/// export leaves is complete up to its last line), and the index is rebuilt from it whenever a bundle opens.
/// ``writeCompacted(to:)`` streams one line per file, links merged, when the bundle is finished.
final class BundleFileIndex: Sendable {
    private let db: DatabaseQueue
    /// The scratch database, removed with the index; nil when it lives in memory.
    private let scratch: URL?

    /// Opens an empty index in `scratch` (replacing what a killed process left there), or in memory when nil.
    init(scratch: URL?) throws(MBaaSError) {
        self.scratch = scratch
        do {
            var config = Configuration()
            config.label = "mbaas-bundle-index"
            // Rebuilt from files/index.ndjson on every open: nothing here needs to survive a crash.
            // One connection of one process: no file locking per transaction either.
            config.prepareDatabase { db in
                try db.execute(sql: "PRAGMA journal_mode = OFF")
                try db.execute(sql: "PRAGMA synchronous = OFF")
                try db.execute(sql: "PRAGMA locking_mode = EXCLUSIVE")
            }
            if let scratch {
                for suffix in ["", "-journal"] { try? FileManager.default.removeItem(atPath: scratch.path + suffix) }
                _ = FileManager.default.createFile(atPath: scratch.path, contents: nil, attributes: [.posixPermissions: 0o600])
                db = try DatabaseQueue(path: scratch.path, configuration: config)
            } else {
                db = try DatabaseQueue(configuration: config)
            }
            try db.write { db in
                try db.execute(sql: """
                    CREATE TABLE file(seq INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, sha256 TEXT, entry TEXT NOT NULL);
                    CREATE TABLE link(file INTEGER NOT NULL, class TEXT NOT NULL, id TEXT NOT NULL, field TEXT NOT NULL,
                                      UNIQUE(file, class, id, field));
                    """)
            }
        } catch {
            throw MBaaSError(.localIO, "cannot open the bundle's file index\(scratch.map { " at \($0.path)" } ?? ""): \(error)")
        }
    }

    deinit { close() }

    /// Closes the database and removes the scratch file (also done when the index goes); later calls fail.
    func close() {
        try? db.close()
        if let scratch { try? FileManager.default.removeItem(at: scratch) }
    }

    /// Builds the index from a bundle's `files/index.ndjson` (appended lines or a compacted file); a line that is not
    /// a file entry is `decoding`, naming it.
    static func load(_ directory: URL, scratch: URL?) throws(MBaaSError) -> BundleFileIndex {
        let index = try BundleFileIndex(scratch: scratch)
        let url = directory.appendingPathComponent("files/index.ndjson")
        guard FileManager.default.fileExists(atPath: url.path) else { return index }
        var reader = try NDJSONReader(url: url)
        defer { reader.close() }
        try index.access { db in
            while let line = try reader.next() {
                let entry: BundleFileEntry
                do throws(MBaaSError) { entry = try BundleFileEntry(json: line.value) } catch {
                    throw MBaaSError(.decoding, "files/index.ndjson line \(line.number): \(error.message)")
                }
                try Self.add(entry, db)
            }
        }
        return index
    }

    /// A file's facts (name, size, sha256, content type, ACL), without its links.
    func entry(_ name: String) throws(MBaaSError) -> BundleFileEntry? {
        try access { db in try Self.stored(name, db)?.facts }
    }

    /// Adds a file's facts when no entry has its name; whether it was added.
    func addIfAbsent(_ entry: BundleFileEntry) throws(MBaaSError) -> Bool {
        try access { db in
            guard try Self.stored(entry.name, db) == nil else { return false }
            try Self.addLinks(entry.linkedBy, to: try Self.insert(entry, db), db)
            return true
        }
    }

    /// Records that records link to files, in one transaction: for each, the line to append to `files/index.ndjson`
    /// (the file's facts known so far and that one link).
    func link(_ links: [(name: String, link: BundleFileEntry.Link)]) throws(MBaaSError) -> [JSON] {
        try access { db in
            try links.map { name, link in
                let known = try Self.stored(name, db)
                var entry = known?.facts ?? BundleFileEntry(name: name)
                try Self.addLinks([link], to: try known?.seq ?? Self.insert(entry, db), db)
                entry.linkedBy = [link]
                return entry.json
            }
        }
    }

    /// Files whose bytes are in the bundle, in the order they were first seen; with `prefix`, those whose name
    /// starts with it.
    func list(prefix: String?, limit: Int?) throws(MBaaSError) -> [BundleFileEntry] {
        try access { db in
            var sql = "SELECT entry FROM file WHERE sha256 IS NOT NULL"
            var arguments: StatementArguments = []
            if let prefix, !prefix.isEmpty {
                sql += " AND substr(name, 1, length(?)) = ?"
                arguments += [prefix, prefix]
            }
            sql += " ORDER BY seq"
            if let limit { sql += " LIMIT \(max(0, limit))" }
            return try String.fetchAll(db, sql: sql, arguments: arguments).map { text in try BundleFileEntry(json: JSON.parse(text)) }
        }
    }

    /// How many files have their bytes in the bundle.
    func countWithBytes() throws(MBaaSError) -> Int {
        try access { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM file WHERE sha256 IS NOT NULL") ?? 0 }
    }

    /// Writes the compacted index to `url` (created or replaced, 0600): one line per file in first-seen order, its
    /// links merged, one file's links in memory at a time.
    func writeCompacted(to url: URL) throws(MBaaSError) {
        try? FileManager.default.removeItem(at: url)
        let writer = try NDJSONWriter(url: url)
        defer { writer.close() }
        try access { db in
            do {
                let files = try Row.fetchCursor(db, sql: "SELECT seq, entry FROM file ORDER BY seq")
                let links = try db.cachedStatement(sql: "SELECT class, id, field FROM link WHERE file = ? ORDER BY rowid")
                var lines: [JSON] = []
                while let row = try files.next() {
                    let seq: Int64 = row["seq"]
                    let text: String = row["entry"]
                    var entry = try BundleFileEntry(json: JSON.parse(text))
                    entry.linkedBy = try Row.fetchAll(links, arguments: [seq]).map { .init(className: $0["class"], id: $0["id"], field: $0["field"]) }
                    lines.append(entry.json)
                    if lines.count >= 1024 { try writer.append(lines: lines); lines = [] }
                }
                try writer.append(lines: lines)
            } catch let e as MBaaSError {
                throw e
            } catch {
                throw MBaaSError(.localIO, "cannot write \(url.lastPathComponent): \(error)")
            }
        }
        writer.sync()
    }

    // MARK: In a transaction

    /// A file's row: its place in first-seen order and its facts (no links).
    private static func stored(_ name: String, _ db: Database) throws -> (seq: Int64, facts: BundleFileEntry)? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT seq, entry FROM file WHERE name = ?"), arguments: [name]).map { row in
            (row["seq"], try BundleFileEntry(json: JSON.parse(row["entry"] as String)))
        }
    }

    /// Inserts a file's facts (not its links), last in first-seen order; its row's `seq`.
    private static func insert(_ entry: BundleFileEntry, _ db: Database) throws -> Int64 {
        var facts = entry
        facts.linkedBy = []
        try db.cachedStatement(sql: "INSERT INTO file(name, sha256, entry) VALUES (?, ?, ?)")
            .execute(arguments: [entry.name, entry.sha256, facts.json.printed([.sortedKeys])])
        return db.lastInsertedRowID
    }

    /// Adds a line of `files/index.ndjson`: the file's facts fill in what its row lacks (or make the row), and its
    /// links are added, each once.
    private static func add(_ entry: BundleFileEntry, _ db: Database) throws {
        let seq: Int64
        if let (known, facts) = try stored(entry.name, db) {
            seq = known
            var merged = facts
            merged.merge(entry)
            merged.linkedBy = []
            if merged != facts {
                try db.cachedStatement(sql: "UPDATE file SET sha256 = ?, entry = ? WHERE seq = ?")
                    .execute(arguments: [merged.sha256, merged.json.printed([.sortedKeys]), seq])
            }
        } else {
            seq = try insert(entry, db)
        }
        try addLinks(entry.linkedBy, to: seq, db)
    }

    private static func addLinks(_ links: [BundleFileEntry.Link], to seq: Int64, _ db: Database) throws {
        let statement = try db.cachedStatement(sql: "INSERT OR IGNORE INTO link(file, class, id, field) VALUES (?, ?, ?, ?)")
        for l in links { try statement.execute(arguments: [seq, l.className, l.id, l.field]) }
    }

    /// Runs `body` in one transaction; a failure is ``MBaaSError`` (`decoding` for an entry that cannot be read back,
    /// else `localIO`).
    private func access<T>(_ body: (Database) throws -> T) throws(MBaaSError) -> T {
        do { return try db.write(body) } catch let e as MBaaSError { throw e } catch {
            throw MBaaSError(.localIO, "the bundle's file index: \(error)")
        }
    }
}
