import Foundation
import GRDB
import MBaaSCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The database file itself: created private, opened read-only when only reading.
enum LocalDatabaseFile {
    /// Creates an empty database file with mode 0600 (whatever the umask), so the password hashes, session-token
    /// hashes and private records it will hold are not readable by other local users. SQLite gives the `-wal`
    /// and `-shm` files the database file's mode.
    static func createPrivate(_ path: String) throws(MBaaSError) {
        let parent = URL(fileURLWithPath: path).deletingLastPathComponent()
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: parent.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw MBaaSError(.invalidRequest, "the directory \(parent.path) does not exist; create it first")
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd < 0 {
            if errno == EEXIST { return }   // created meanwhile by another process: theirs
            throw MBaaSError(.localIO, "cannot create the database file '\(path)': \(String(cString: strerror(errno)))")
        }
        fchmod(fd, 0o600)
        close(fd)
    }

    /// Why this process may not open `path` (for writing too with `write`, which needs its folder for the
    /// journal), as the system says it, or `nil` when the file system allows it.
    static func accessProblem(_ path: String, write: Bool) -> String? {
        func reason(_ subject: String) -> String {
            let text = String(cString: strerror(errno))
            var info = stat()
            if stat(subject, &info) == 0, info.st_uid != geteuid() {
                return "\(text) (\(subject) belongs to uid \(info.st_uid), mode \(String(info.st_mode & 0o777, radix: 8)); you are uid \(geteuid()))"
            }
            return "\(text) (\(subject))"
        }
        if access(path, write ? R_OK | W_OK : R_OK) != 0 { return reason(path) }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        if write, access(folder, W_OK | X_OK) != 0 { return reason(folder) }
        return nil
    }

    /// Opens an existing database with `SQLITE_OPEN_READONLY`. A WAL database in a directory the process cannot
    /// write (where SQLite cannot create the `-shm` file) is opened again as immutable, which reads the file as
    /// it is (committed data only: a database at rest has no pending log after ``LocalBackend/close()``).
    static func openReadOnly(_ path: String, configuration: Configuration) throws -> DatabaseQueue {
        do {
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            _ = try queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }
            return queue
        } catch let error as DatabaseError
            where [.SQLITE_CANTOPEN, .SQLITE_READONLY].contains(error.resultCode)
        {
            let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
            let encoded = absolute.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? absolute
            let queue = try DatabaseQueue(path: "file:\(encoded)?immutable=1", configuration: configuration)
            _ = try queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }
            return queue
        }
    }
}

extension LocalSchema {
    /// What a database file holds.
    enum State: Sendable {
        /// No table at all (a new or `touch`ed file).
        case empty
        /// An MBaaSKit store, with the migrations applied so far.
        case store(applied: Set<String>)
        /// Some other application's database: its table names.
        case foreign([String])
    }

    /// The tables every MBaaSKit store has.
    static let storeTables: Set<String> = ["records", "users", "sessions", "files", "grdb_migrations"]

    /// Looks at a database without changing it.
    static func inspect(_ db: Database) throws -> State {
        let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        if tables.isEmpty { return .empty }
        guard storeTables.isSubset(of: Set(tables)) else { return .foreign(tables) }
        let applied = try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations")
        guard applied.contains("v1") else { return .foreign(tables) }
        return .store(applied: Set(applied))
    }

    static func describe(_ tables: [String]) -> String {
        let shown = tables.prefix(5).joined(separator: ", ")
        return "table\(tables.count == 1 ? "" : "s") \(shown)\(tables.count > 5 ? ", …" : "")"
    }

    /// Whether the settings table (migration v2) exists.
    static func hasSettings(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'settings')") ?? false
    }

    static func setting(_ db: Database, _ key: String) throws -> String? {
        guard try hasSettings(db) else { return nil }
        return try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = ?", arguments: [key])
    }
}

extension LocalFileArea {
    /// The settings key of the remembered file directory.
    static let directorySetting = "filesDirectory"

    /// Where a database's files live: `requested` (made absolute) if given, else the remembered directory, else
    /// `<database>-files`. With `remember`, a requested directory is stored on first use; a requested directory
    /// that differs from the remembered one, or that would leave existing files behind, is `invalidRequest`.
    static func resolveDirectory(_ writer: any DatabaseWriter, databasePath: String, requested: URL?,
                                 remember: Bool) throws -> URL {
        let fallback = URL(fileURLWithPath: databasePath + "-files").standardizedFileURL
        let asked = requested.map { URL(fileURLWithPath: $0.path).standardizedFileURL }
        let (stored, fileCount) = try writer.read { db in
            (try LocalSchema.setting(db, directorySetting), try Int.fetchOne(db, sql: "SELECT count(*) FROM files") ?? 0)
        }
        if let stored {
            if let asked, asked.path != stored {
                throw MBaaSError(.invalidRequest, "this database keeps its files in \(stored), not \(asked.path); leave ?files= out (the directory is remembered)")
            }
            return URL(fileURLWithPath: stored)
        }
        guard let asked else { return fallback }
        if asked.path != fallback.path, fileCount > 0 {
            throw MBaaSError(.invalidRequest, "this database already has files in \(fallback.path); ?files=\(asked.path) would lose track of them")
        }
        if remember, asked.path != fallback.path {
            try writer.write { db in
                try db.execute(sql: "INSERT OR IGNORE INTO settings(key, value) VALUES (?, ?)", arguments: [directorySetting, asked.path])
            }
        }
        return asked
    }

    /// Removes `.partial-*` files left by uploads that were killed (kill -9, a crash, a power cut). A running
    /// upload holds an exclusive `flock` on its partial file, so only abandoned ones are removed; files younger
    /// than a minute are left alone too (an upload between creating and locking its file).
    func sweepPartialFiles(logger: Logger) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        for name in names where name.hasPrefix(".partial-") {
            let path = directory.appendingPathComponent(name).path
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                  let modified = attributes[.modificationDate] as? Date, Date().timeIntervalSince(modified) > 60 else { continue }
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            if flock(fd, LOCK_EX | LOCK_NB) == 0 {
                unlink(path)
                logger.debug("local: removed an abandoned partial upload", metadata: ["file": "\(name)"])
            }
            close(fd)
        }
    }
}
