public import Foundation
import Logging
public import MBaaSCore
import PostgresNIO

/// The PostgreSQL backend: records, files, users, sessions and roles in one schema of a PostgreSQL database, through
/// postgres-nio's connection pool, with the contracts of the Local store. The backend behind `postgres://` URLs.
///
/// ```swift
/// let backend = try await PostgresBackendFactory().open(try BackendURL(parsing: "postgres://app:secret@127.0.0.1:5432/app"),
///                                                     context: BackendContext())
/// ```
///
/// Every piece of state lives in the database: sessions are rows (their SHA-256), read by every call that acts as a
/// user, so a session issued through one instance (one process) works through every other at once, and a log-out ends
/// it everywhere. Writes run in transactions; an update locks its row (`SELECT … FOR UPDATE`) before it applies field
/// operations and checks the expected version, so increments, array operations and versioned updates from any number
/// of processes serialize on the row and lose nothing. Files are chunked `bytea` rows (1 MiB each), written in the
/// upload's transaction and read one chunk per statement, so neither way holds more than a chunk in memory.
///
/// Every statement binds its values and field paths as parameters; the schema name is the only identifier in SQL
/// text, validated and quoted. See the MBaaSPostgres DocC article for the schema.
public final class PostgresBackend: Backend, Sendable {
    /// Tuning knobs; the defaults suit a server.
    public struct Options: Sendable {
        /// How long a session lasts after log-in.
        public var sessionLifetime: TimeInterval
        /// The scrypt cost of new password hashes (stored hashes keep their own, in the Local store's format).
        public var passwordHashing: ScryptPasswordHash.Parameters
        /// Whether records and files a logged-in user creates without an ACL are also readable by everyone.
        public var publicReadByDefault: Bool
        /// The most connections the pool opens (`?pool=N` in the URL overrides it).
        public var maximumConnections: Int
        /// Whether the pool opens all its connections at once and keeps them (a server), rather than opening them on
        /// demand and closing the ones idle for a minute (a command, a migration: the default). postgres-nio arms an
        /// idle timer, a task, each time an on-demand connection goes back to the pool; a server under load pays
        /// that per request (`mbaas serve` on PostgreSQL: 14% fewer GETs per second and 40 MB more memory with
        /// connections on demand, docs/benchmarks.md).
        public var keepsConnectionsOpen: Bool

        public init(sessionLifetime: TimeInterval = 30 * 86400, passwordHashing: ScryptPasswordHash.Parameters = .default,
                    publicReadByDefault: Bool = false, maximumConnections: Int = 20, keepsConnectionsOpen: Bool = false) {
            self.sessionLifetime = sessionLifetime
            self.passwordHashing = passwordHashing
            self.publicReadByDefault = publicReadByDefault
            self.maximumConnections = maximumConnections
            self.keepsConnectionsOpen = keepsConnectionsOpen
        }
    }

    public let adapterName = "postgres"
    public var capabilities: Capabilities {
        store.administrative ? Self.administrativeCapabilities : Self.declaredCapabilities
    }
    /// The schema holding the store's tables.
    public var schema: String { store.schema }

    let store: PostgresStore
    /// The options this backend was opened with (shared by every view of the store).
    public var options: Options { store.options }
    let sessionState = PostgresSessionState()
    /// Whether ``close()`` stops the pool (the instance that opened it; views made by ``sharing(session:administrative:)`` do not).
    private let ownsStore: Bool

    init(store: PostgresStore, session: Session? = nil, ownsStore: Bool) {
        self.store = store
        self.ownsStore = ownsStore
        sessionState.session = session
    }

    /// Another instance on the same pool holding `session`: cheap, for servers that act for many users at once. With
    /// `administrative`, session-less calls act as the database owner. Close only the instance that opened the store.
    public func sharing(session: Session?, administrative: Bool? = nil) -> PostgresBackend {
        var shared = store
        if let administrative { shared = store.with(administrative: administrative) }
        return PostgresBackend(store: shared, session: session, ownsStore: false)
    }

    /// Stops the connection pool (the instance that opened the store only).
    public func close() async {
        guard ownsStore else { return }
        store.runTask.cancel()
        _ = await store.runTask.result
    }

    // MARK: Capabilities

    static let declaredCapabilities = Capabilities(
        features: Set<Capabilities.Feature>([
            .objects, .multiKeySort, .skip, .selectKeys, .count, .batch, .atomicBatch, .optimisticLocking, .acl,
            .fieldOperations, .nestedKeys, .files, .fileDelete, .fileList, .fileAttachment, .attachmentACL, .fileACLListing,
            .fileACLRead, .auth, .signUp, .serverLogout, .roles, .listClasses, .listUsers, .importUsers, .userFields, .userEmail,
            .fileACL, .clientIds, .mixedFieldTypes, .queryValue("Date"), .queryValue("Pointer"),
            .queryValue("GeoPoint"), .queryValue("Bytes"), .queryValue("File"), .fileNames, .unicodeFileNames, .aclReadOnly,
        ]).union(["null", "bool", "int", "double", "string", "Date", "Bytes", "array", "object", "Pointer", "File", "GeoPoint"]
            .map(Capabilities.Feature.valueType)),
        operators: Set(QueryOperator.allCases),
        maxPageSize: 1000, defaultPageSize: 100, maxBatchSize: 1000,
        notes: [
            .anonymousAuth: "the PostgreSQL backend has no anonymous users; calls without a session act as anonymous for ACLs",
            .completeReads: "calls without a session read what ACLs grant everyone; open it administrative (as mbaas migrate does) to read every record",
        ])

    static let administrativeCapabilities: Capabilities = {
        var c = declaredCapabilities
        c.features.insert(.completeReads)
        c.notes[.completeReads] = nil
        return c
    }()

    // MARK: Running operations

    /// Runs `body` on a pooled connection with the acting principal (resolved from the database on every call).
    func reading<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection, PostgresPrincipal) async throws -> T) async throws -> T {
        let store = self.store, token = sessionState.tokenHash
        do {
            return try await store.client.withConnection { conn in
                let principal = try await store.principal(conn, tokenHash: token)
                return try await body(conn, principal)
            }
        } catch {
            throw handle(error, tokenHash: token)
        }
    }

    /// Runs `body` in one transaction with the acting principal; any throw rolls everything back.
    func writing<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection, PostgresPrincipal) async throws -> T) async throws -> T {
        try self.store.checkWritable()
        let store = self.store, token = sessionState.tokenHash
        do {
            return try await store.transaction { conn in
                let principal = try await store.principal(conn, tokenHash: token, inTransaction: true)
                return try await body(conn, principal)
            }
        } catch let failure as PostgresBatchFailure {
            throw failure
        } catch {
            throw handle(error, tokenHash: token)
        }
    }

    /// Maps an error to ``MBaaSError``; an invalid session ends the session.
    func handle(_ error: any Error, tokenHash: String?) -> MBaaSError {
        if error is PostgresSessionInvalid {
            if let tokenHash { sessionState.clear(ifTokenHash: tokenHash) }
            return MBaaSError(.unauthorized, "the session has expired or was logged out; log in again")
        }
        return PostgresStore.mapError(error)
    }
}

/// What every instance on one store shares: the pool, the schema, the clock and the options. Holds no state that
/// could go stale between processes.
struct PostgresStore: Sendable {
    let client: PostgresClient
    let runTask: Task<Void, Never>
    let schema: String
    /// `"schema".`, prefixed to table names.
    let s: String
    let logger: Logger
    let clock: @Sendable () -> Date
    let options: PostgresBackend.Options
    var administrative: Bool
    let readOnly: Bool
    /// Shared by every copy (every session's view of the store).
    let pointReads = PostgresPointReads()

    func with(administrative: Bool) -> PostgresStore {
        var copy = self
        copy.administrative = administrative
        return copy
    }

    var nowMillis: Int64 { Int64((clock().timeIntervalSince1970 * 1000).rounded(.down)) }

    func checkWritable() throws(MBaaSError) {
        if readOnly { throw MBaaSError(.forbidden, "the PostgreSQL store was opened read-only; nothing was written") }
    }

    /// `BEGIN` … `COMMIT` on one pooled connection; a throw rolls back and is rethrown as it was.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let logger = self.logger
        return try await client.withConnection { conn in
            try await conn.run(PGSQL("BEGIN"), logger: logger)
            do {
                let value = try await body(conn)
                try await conn.run(PGSQL("COMMIT"), logger: logger)
                return value
            } catch {
                try? await conn.run(PGSQL("ROLLBACK"), logger: logger)
                throw error
            }
        }
    }

    /// A pooled connection for reads that act as nobody (auth, administration).
    func direct<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        do { return try await client.withConnection { conn in try await body(conn) } } catch { throw Self.mapError(error) }
    }

    func directWrite<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try checkWritable()
        do { return try await transaction(body) } catch { throw Self.mapError(error) }
    }

    /// Who acts without a session: the store's owner when opened administrative (the master key), else anonymous.
    var sessionless: PostgresPrincipal { administrative ? .administrator : .anonymous }

    /// The acting principal, as ``principal(_:tokenHash:inTransaction:)``, on a pooled connection of its own (none
    /// taken without a session).
    func principal(tokenHash: String?) async throws -> PostgresPrincipal {
        guard tokenHash != nil else { return sessionless }
        return try await client.withConnection { conn in try await principal(conn, tokenHash: tokenHash) }
    }

    /// The acting principal for a session token hash: read from the database on every call, so a log-out or an expiry
    /// through any instance is seen by all at once.
    ///
    /// - Parameter inTransaction: `true` when `conn` is inside a transaction: the statement then runs unprepared (see
    ///   ``prepared(_:_:)``).
    func principal(_ conn: PostgresConnection, tokenHash: String?, inTransaction: Bool = false) async throws -> PostgresPrincipal {
        guard let tokenHash else { return sessionless }
        let lookup = PostgresSessionLookup(tokenHash: tokenHash)
        let rows = inTransaction ? try await conn.rows(plain(lookup), logger: logger) : try await prepared(conn, lookup)
        guard let row = rows.first else { throw PostgresSessionInvalid() }
        guard try row.int(1) > nowMillis else { throw PostgresSessionInvalid() }
        return PostgresPrincipal(userId: try row.text(0), roles: try row.strings(2), groups: try row.strings(3))
    }

    // MARK: Errors

    /// Maps any error to an ``MBaaSError``, keeping the SQLSTATE as the vendor code.
    static func mapError(_ error: any Error) -> MBaaSError {
        switch error {
        case let e as MBaaSError: return e
        case let e as PSQLError:
            if let info = e.serverInfo {
                let state = info[.sqlState] ?? ""
                let message = info[.message] ?? "\(e.code)"
                switch state {
                case "23505": return MBaaSError(.duplicate, message, vendorCode: state)
                case "40001", "40P01", "55P03", "57014":
                    return MBaaSError(.unavailable, "the database could not finish the statement (\(message)); try again", vendorCode: state)
                case "42501": return MBaaSError(.forbidden, "the database role may not do this: \(message)", vendorCode: state)
                case "2201B": return MBaaSError(.invalidRequest, "invalid regular expression: \(message)", vendorCode: state)
                case "54001", "54000", "54023":
                    return MBaaSError(.invalidRequest, "the query is too complex for PostgreSQL: \(message)", vendorCode: state)
                case let s where s.hasPrefix("22"):
                    return MBaaSError(.invalidRequest, "the database refused a value: \(message)", vendorCode: state)
                case let s where s.hasPrefix("08") || s.hasPrefix("57") || s.hasPrefix("53"):
                    return MBaaSError(.unavailable, "PostgreSQL is unavailable: \(message)", vendorCode: state)
                default:
                    return MBaaSError(.unavailable, "PostgreSQL error: \(message)", vendorCode: state)
                }
            }
            return MBaaSError(.unavailable, "cannot reach PostgreSQL (\(e.code))" + (e.underlying.map { ": \($0)" } ?? ""))
        case is CancellationError:
            return MBaaSError(.transport, "cancelled", underlying: error)
        default:
            return MBaaSError.wrap(error)
        }
    }
}

/// Who is acting: the session's user with its roles and groups, the database owner, or anonymous.
struct PostgresPrincipal: Sendable {
    var userId: String?
    var roles: [String]
    var groups: [String]
    var isAdministrator = false

    static let anonymous = PostgresPrincipal(userId: nil, roles: [], groups: [])
    static let administrator = PostgresPrincipal(userId: nil, roles: [], groups: [], isAdministrator: true)

    func canRead(_ acl: ACL?) -> Bool { isAdministrator || (acl?.canRead(user: userId, roles: roles, groups: groups) ?? true) }
    func canWrite(_ acl: ACL?) -> Bool { isAdministrator || (acl?.canWrite(user: userId, roles: roles, groups: groups) ?? true) }

    /// The ACL keys that grant this principal: `*`, its user id, `role:NAME`, `group:NAME`.
    var keys: [String] {
        var keys = ["*"]
        if let userId { keys.append(userId) }
        return keys + roles.map { "role:\($0)" } + groups.map { "group:\($0)" }
    }

    /// An SQL condition true when `column` (a jsonb ACL or NULL) grants `read` to this principal (keys bound as one
    /// text[] parameter).
    func readGrant(_ column: String, _ q: inout PGSQL) -> String {
        if isAdministrator { return "TRUE" }
        return "(\(column) IS NULL OR EXISTS (SELECT 1 FROM jsonb_each(\(column)) g WHERE g.key = ANY(\(q.bind(keys))::text[]) AND g.value->>'read' = 'true'))"
    }
}

/// A session that no longer exists or has expired.
struct PostgresSessionInvalid: Error {}

/// A backend instance's session and its token hash, under a lock.
final class PostgresSessionState: @unchecked Sendable {
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

    func clear(ifTokenHash tokenHash: String) {
        lock.withLock { if hash == tokenHash { current = nil; hash = nil } }
    }
}

/// A session and its user's roles and groups by token hash: the statement every request with a session starts with.
struct PostgresSessionLookup: PostgresStoreStatement {
    static func text(schemaPrefix s: String) -> String {
        "SELECT s.user_id, s.expires_at, u.roles, u.groups FROM \(s)sessions s JOIN \(s)users u ON u.id = s.user_id WHERE s.token_hash = $1"
    }

    var tokenHash: String

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(tokenHash)
        return bindings
    }
}
