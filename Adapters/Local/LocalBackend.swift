public import Foundation
import GRDB
public import MBaaSCore

/// The embedded backend: records, files and users in one SQLite database (through GRDB), with no server and no
/// account. The default target of migrations and the backend behind `sqlite:` URLs.
///
/// ```swift
/// let backend = try LocalBackend(path: "app.db")          // or LocalBackend.inMemory()
/// let memo = try await backend.create(Record(className: "Memo", fields: ["title": "rent", "money": 50]))
/// ```
///
/// - Records: one row each, the fields as their neutral JSON in one column, queried with SQLite's JSON1 functions
///   (one SQL statement per page, whatever the filter; see ``createIndex(className:key:)`` for hot keys). Every
///   ``QueryOperator``, nested dotted keys, multi-key sort, skip, keyset cursors, count and selected keys run in
///   SQL. Versions are integer counters. Batches run in one transaction (all or nothing).
///
///   Operator semantics: `eq` compares type and value (ints and doubles numerically, dates to the millisecond);
///   a scalar also matches an element of an array field; `eq null` matches null or missing. `ne`/`nin` are the
///   negations, so they match missing keys. `lt`…`gte` compare numbers with numbers, strings with strings (by
///   code point) and dates with dates; other pairs never match. `in` also matches any element of an array field.
///   `exists` means present and not null. `prefix` is case-sensitive (no LIKE wildcards). `regex` uses
///   NSRegularExpression with options `i m s x` on strings. `containsAll` needs an array holding every value.
///   Keys `id`, `createdAt`, `updatedAt` query the metadata. A string holding NUL (U+0000) is stored and read back
///   whole, but cannot be compared: as a query value it is refused (`invalidRequest`, naming the key), and a stored
///   one compares as its part before the NUL (SQLite's JSON functions end it there).
/// - Files: bytes in a directory next to the database (`<path>-files/`, or ``Options/filesDirectory``), metadata
///   in the database. Uploads copy in chunks, report progress, and remove partial files when cancelled.
/// - Users: scrypt password hashes (swift-crypto), random session tokens stored as SHA-256 hashes with an expiry.
///   ACLs are enforced for the session's user, its ``setRoles(_:forUser:)`` roles and ``setGroups(_:forUser:)``
///   groups. There is no master key: every instance, including ones sharing a database file, obeys the ACLs.
///
/// Each instance has its own session; several instances (and processes) may share one database file (WAL mode,
/// writers wait up to ``Options/busyTimeout``).
public actor LocalBackend: Backend {
    /// Tuning knobs; the defaults suit apps and the CLI.
    public struct Options: Sendable {
        /// How long a session lasts after log-in.
        public var sessionLifetime: TimeInterval
        /// The scrypt cost of new password hashes (stored hashes keep their own parameters).
        public var passwordHashing: ScryptPasswordHash.Parameters
        /// Where file bytes go; by default `<database path>-files/`, or a temporary directory for `:memory:`.
        public var filesDirectory: URL?
        /// How long a write waits for another connection's lock before failing with `unavailable`.
        public var busyTimeout: TimeInterval
        /// Whether records and files a logged-in user creates without an ACL are also readable by everyone
        /// (`{"*":{"read":true},"<owner>":{"read":true,"write":true}}`). Default `false`: owner read/write only.
        public var publicReadByDefault: Bool
        /// Whether the database may be written, migrated or created (see ``OpenMode``). Default: ``OpenMode/create``.
        public var openMode: OpenMode

        public init(
            sessionLifetime: TimeInterval = 30 * 86400, passwordHashing: ScryptPasswordHash.Parameters = .default,
            filesDirectory: URL? = nil, busyTimeout: TimeInterval = 10, openMode: OpenMode = .create,
            publicReadByDefault: Bool = false
        ) {
            self.publicReadByDefault = publicReadByDefault
            self.sessionLifetime = sessionLifetime
            self.passwordHashing = passwordHashing
            self.filesDirectory = filesDirectory
            self.busyTimeout = busyTimeout
            self.openMode = openMode
        }
    }

    /// How a database file is opened.
    ///
    /// | mode | missing file | empty file | MBaaSKit store | other SQLite database |
    /// |---|---|---|---|---|
    /// | `readOnly` | `notFound` | `invalidRequest` | opened read-only, never migrated | `invalidRequest`, untouched |
    /// | `readWrite` | `notFound` | becomes a store | migrated if older | `invalidRequest`, untouched |
    /// | `create` | created (mode 0600) | becomes a store | migrated if older | `invalidRequest`, untouched |
    ///
    /// A read-only backend opens the file with `SQLITE_OPEN_READONLY`, so a database the process may only read
    /// (a 0444 file, a read-only directory) can be read; every write then fails with `forbidden`. It does not
    /// create, migrate, sweep or remember anything. `:memory:` databases ignore the mode.
    public enum OpenMode: String, Sendable, Hashable, CaseIterable {
        /// Read an existing store; never write.
        case readOnly
        /// Read and write an existing store (migrating it to the current schema); never create one.
        case readWrite
        /// Like `readWrite`, creating the database file (0600) if it does not exist.
        case create
    }

    public nonisolated let adapterName = "local"
    /// ``declaredCapabilities``; opened administrative (``MBaaSCore/BackendContext/administrative``), session-less
    /// calls act as the database owner and read everything (``MBaaSCore/Capabilities/Feature/completeReads``).
    public nonisolated var capabilities: Capabilities {
        store.administrative ? LocalBackend.administrativeCapabilities : LocalBackend.declaredCapabilities
    }
    /// The database file path, or `:memory:`.
    public nonisolated let path: String
    nonisolated let store: LocalStore
    /// Opened read-only on a path where no database exists: every call that reads reports `notFound`.
    nonisolated let missingDatabase: Bool
    /// The session, behind a lock of its own so that point reads run without hopping onto the actor.
    nonisolated let sessionState = LocalSessionState()
    var currentSession: Session? {
        get { sessionState.session }
        set { sessionState.session = newValue }
    }

    /// Opens the database at `path` (`:memory:` for a private in-memory database) as ``Options/openMode`` says:
    /// by default creating it (mode 0600; its `-wal`/`-shm` files follow the database's mode) and migrating its
    /// schema. The directory must exist. A SQLite database that is not an MBaaSKit store is refused with
    /// `invalidRequest` and left untouched (no table is added).
    ///
    /// Files live in ``Options/filesDirectory`` when given, else where the store remembers (the first explicit
    /// directory is stored in the database), else `<path>-files/`. A directory different from the remembered one
    /// is `invalidRequest`. Stale `.partial-*` files of interrupted uploads are swept (unless read-only).
    public init(path: String, context: BackendContext = BackendContext(), options: Options = Options()) throws(MBaaSError) {
        self.path = path
        var config = Configuration()
        config.label = "mbaas-local"
        config.busyMode = .timeout(options.busyTimeout)
        config.prepareDatabase { db in
            db.add(function: LocalRegex.function())
            if !db.configuration.readonly { try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        }
        let writer: any DatabaseWriter
        let files: LocalFileArea
        var missing = false
        do {
            if path == ":memory:" {
                writer = try DatabaseQueue(configuration: config)
                if let dir = options.filesDirectory {
                    files = LocalFileArea(directory: dir, isTemporary: false)
                } else {
                    let base = context.dataDirectory ?? FileManager.default.temporaryDirectory
                    let directory = base.appendingPathComponent("mbaas-local-memory-\(SecureRandom.alphanumeric(12))")
                    files = LocalFileArea(directory: directory, isTemporary: true,
                                          temporaryOwner: LocalTemporaryDirectory(directory))
                }
                try LocalSchema.migrator().migrate(writer)
            } else if options.openMode == .readOnly, !FileManager.default.fileExists(atPath: path) {
                // Nothing is created: every read reports the missing database (after checking its arguments).
                missing = true
                writer = try DatabaseQueue(configuration: config)
                try LocalSchema.migrator().migrate(writer)
                files = LocalFileArea(directory: URL(fileURLWithPath: path + "-files"), isTemporary: false)
            } else {
                let mode = options.openMode
                if !FileManager.default.fileExists(atPath: path) {
                    guard mode == .create else {
                        throw MBaaSError(.notFound, "no database at '\(path)': check the path (only writes that add data create a database)")
                    }
                    try LocalDatabaseFile.createPrivate(path)
                }
                var readConfig = config
                readConfig.readonly = true
                // Look before touching: opening a pool switches the file to WAL mode, which is a write.
                let reader: DatabaseQueue = mode == .readOnly
                    ? try LocalDatabaseFile.openReadOnly(path, configuration: readConfig)
                    : try DatabaseQueue(path: path, configuration: readConfig)
                switch try reader.read(LocalSchema.inspect) {
                case .foreign(let tables):
                    throw MBaaSError(.invalidRequest, "'\(path)' is a SQLite database but not an MBaaSKit store (it has \(LocalSchema.describe(tables))); it was left untouched")
                case .empty where mode == .readOnly:
                    throw MBaaSError(.invalidRequest, "'\(path)' is an empty database, not an MBaaSKit store yet (write to it first)")
                case .empty, .store:
                    break
                }
                if mode == .readOnly {
                    writer = reader
                } else {
                    try reader.close()
                    writer = try DatabasePool(path: path, configuration: config)
                    try LocalSchema.migrator().migrate(writer)
                }
                let directory = try LocalFileArea.resolveDirectory(writer, databasePath: path, requested: options.filesDirectory,
                                                                   remember: mode != .readOnly)
                files = LocalFileArea(directory: directory, isTemporary: false)
                if mode != .readOnly { files.sweepPartialFiles(logger: context.logger) }
            }
        } catch {
            // A file that is not a database (a text file) is the caller's mistake, named; a file or folder this
            // process may not read or write (another user's 0600 database) is local I/O with the system's reason.
            if let db = error as? DatabaseError {
                if db.resultCode == .SQLITE_NOTADB {
                    throw MBaaSError(.invalidRequest, "'\(path)' is not a SQLite database (a file of another kind?); it was left untouched: give an MBaaSKit store, or a new path to create one",
                                     vendorCode: "SQLITE_NOTADB")
                }
                if [.SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_READONLY, .SQLITE_AUTH].contains(db.resultCode),
                   let reason = LocalDatabaseFile.accessProblem(path, write: options.openMode != .readOnly) {
                    throw MBaaSError(.localIO, "cannot open the Local database at '\(path)': \(reason)",
                                     vendorCode: sqliteCodeName(db.extendedResultCode.rawValue))
                }
            }
            let e = LocalStore.mapError(error)
            if e.kind == .notFound || e.kind == .invalidRequest { throw e }
            throw MBaaSError(e.kind == .duplicate ? .unavailable : e.kind, "cannot open the Local database at '\(path)': \(e.message)",
                             vendorCode: e.vendorCode)
        }
        self.store = LocalStore(writer: writer, clock: context.clock, logger: context.logger, files: files, options: options,
                                administrative: context.administrative)
        self.missingDatabase = missing
        context.logger.debug("local: opened database", metadata: ["path": "\(path)", "files": "\(files.directory.path)"])
    }

    /// Another instance on the same open database (same store, files and connections), holding `session`
    /// instead of this instance's session. Cheap: nothing is opened. Meant for servers that act for many users
    /// at once (the emulator makes one per request from the request's session token); ACLs apply to `session`'s
    /// user exactly as for any instance, and an unknown or expired token is `unauthorized` on the first call that
    /// needs it.
    ///
    /// With `administrative`, calls without a session act as the database owner (every ACL grants it), as with
    /// ``BackendContext/administrative``; by default a view keeps this instance's setting.
    ///
    /// Close only the instance that opened the database: ``close()`` on either closes the shared store.
    public nonisolated func sharing(session: Session?, administrative: Bool? = nil) -> LocalBackend {
        var shared = store
        if let administrative { shared.administrative = administrative }
        return LocalBackend(sharing: shared, path: path, missingDatabase: missingDatabase, session: session)
    }

    private init(sharing store: LocalStore, path: String, missingDatabase: Bool, session: Session?) {
        self.store = store
        self.path = path
        self.missingDatabase = missingDatabase
        self.sessionState.session = session
    }

    /// A private in-memory database (files in a temporary directory removed by ``close()``).
    public static func inMemory(context: BackendContext = BackendContext(), options: Options = Options()) throws(MBaaSError)
        -> LocalBackend
    {
        try LocalBackend(path: ":memory:", context: context, options: options)
    }

    /// Closes the database, first folding the write-ahead log into the main file (so `app.db` alone holds every
    /// committed write, e.g. to copy it); removes the temporary file directory of an in-memory backend.
    public func close() async {
        store.pointReader.close()
        if let pool = store.writer as? DatabasePool, !store.writer.configuration.readonly {
            _ = try? await pool.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
            try? pool.close()
        }
        if let queue = store.writer as? DatabaseQueue { try? queue.close() }
        if store.files.isTemporary { try? FileManager.default.removeItem(at: store.files.directory) }
    }

    // MARK: Capabilities

    static let declaredCapabilities = Capabilities(
        features: Set<Capabilities.Feature>([
            .objects, .multiKeySort, .skip, .selectKeys, .count, .batch, .atomicBatch, .optimisticLocking, .acl,
            .fieldOperations, .nestedKeys, .files, .fileDelete, .fileList, .fileAttachment, .attachmentACL, .fileACLListing, .fileACLRead, .auth, .signUp, .serverLogout, .roles,
            .listClasses, .listUsers, .importUsers, .userFields, .userEmail, .fileACL, .clientIds, .mixedFieldTypes, .queryValue("Date"), .queryValue("Pointer"),
            .queryValue("GeoPoint"), .queryValue("Bytes"), .queryValue("File"),
            .fileNames, .unicodeFileNames, .aclReadOnly,
        ]).union(["null", "bool", "int", "double", "string", "Date", "Bytes", "array", "object", "Pointer", "File", "GeoPoint"]
            .map(Capabilities.Feature.valueType)),
        operators: Set(QueryOperator.allCases),
        maxPageSize: 1000, defaultPageSize: 100, maxBatchSize: 1000,
        notes: [
            .anonymousAuth: "the Local backend has no anonymous users; calls without a session act as anonymous for ACLs",
            .completeReads: "calls without a session read what ACLs grant everyone; open the database administrative (as mbaas migrate does) to read every record",
        ])

    /// What an administrative opening can do: ``declaredCapabilities`` and every record and file readable.
    static let administrativeCapabilities: Capabilities = {
        var c = declaredCapabilities
        c.features.insert(.completeReads)
        c.notes[.completeReads] = nil
        return c
    }()

    // MARK: Running operations

    /// The SHA-256 of the current session token, as the sessions table stores it.
    nonisolated var sessionTokenHash: String? { sessionState.tokenHash }

    /// Runs `body` in a read transaction with the acting principal.
    func reading<T: Sendable>(_ body: @escaping @Sendable (Database, LocalPrincipal) throws -> T) async throws -> T {
        try checkExists()
        let store = self.store, token = sessionTokenHash
        do {
            return try await store.writer.read { db in try body(db, try store.principal(db, tokenHash: token)) }
        } catch {
            throw handle(error, tokenHash: token)
        }
    }

    /// Runs `body` in one write transaction with the acting principal; any throw rolls everything back.
    nonisolated func writing<T: Sendable>(_ body: @escaping @Sendable (Database, LocalPrincipal) throws -> T) async throws -> T {
        try checkWritable()
        let store = self.store, token = sessionTokenHash
        do {
            return try await store.writer.write { db in try body(db, try store.principal(db, tokenHash: token)) }
        } catch {
            throw handle(error, tokenHash: token)
        }
    }

    /// `notFound` when the backend was opened read-only on a path without a database.
    nonisolated func checkExists() throws(MBaaSError) {
        if missingDatabase {
            throw MBaaSError(.notFound, "no database at '\(path)': check the path (reading never creates a database)")
        }
    }

    /// `notFound` for a missing database; `forbidden` when opened with ``OpenMode/readOnly``.
    nonisolated func checkWritable() throws(MBaaSError) {
        try checkExists()
        if store.options.openMode == .readOnly, path != ":memory:" {
            throw MBaaSError(.forbidden, "the database '\(path)' was opened read-only; nothing was written")
        }
    }

    /// Maps an error to ``MBaaSError``; an invalid session ends the session.
    nonisolated func handle(_ error: any Error, tokenHash: String?) -> MBaaSError {
        if error is LocalSessionInvalid {
            if let tokenHash { sessionState.clear(ifTokenHash: tokenHash) }
            return MBaaSError(.unauthorized, "the session has expired or was logged out; log in again")
        }
        return LocalStore.mapError(error)
    }
}

/// A backend instance's session and its token hash (computed once), under a lock.
final class LocalSessionState: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Session?
    private var hash: String?

    var session: Session? {
        get { lock.withLock { current } }
        set {
            let h = newValue.map { SessionTokens.hash($0.token) }
            lock.withLock { current = newValue; hash = h }
        }
    }

    var tokenHash: String? { lock.withLock { hash } }

    /// Ends the session if it is still the one whose token has this hash.
    func clear(ifTokenHash tokenHash: String) {
        lock.withLock { if hash == tokenHash { current = nil; hash = nil } }
    }
}

/// Where file bytes live: one directory, created on first upload.
struct LocalFileArea: Sendable {
    let directory: URL
    /// Removed by `close()` (the in-memory backend's own temporary directory), or when the last instance using it
    /// goes away (``temporaryOwner``), so an in-memory backend that is never closed leaves nothing behind.
    let isTemporary: Bool
    var temporaryOwner: LocalTemporaryDirectory? = nil

    func url(forStorage name: String) -> URL { directory.appendingPathComponent(name) }

    func ensureDirectory() throws(MBaaSError) {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw MBaaSError(.localIO, "cannot create the file directory \(directory.path): \(MBaaSError.describe(error))")
        }
    }
}

/// The temporary file directory of an in-memory backend, removed when the last store holding it is released.
final class LocalTemporaryDirectory: Sendable {
    let url: URL

    init(_ url: URL) { self.url = url }

    deinit { try? FileManager.default.removeItem(at: url) }
}
