public import Foundation
import Logging
public import MBaaSCore
import PostgresNIO

/// Opens ``PostgresBackend``s from `postgres://` URLs (also `postgresql://`).
///
/// | URL | store |
/// |---|---|
/// | `postgres://USER:PASSWORD@HOST:PORT/DB` | the schema `public` of database `DB` |
/// | `postgres://USER:PASSWORD@HOST:PORT/DB?schema=S` | the schema `S` (created with the store when missing) |
/// | `postgres://USER@localhost:PORT/DB?socket=/run/pg` | through the unix socket `/run/pg/.s.PGSQL.PORT` |
///
/// The password may be left out of the URL: it is then read from `MBAAS_POSTGRES_PASSWORD`, else `PGPASSWORD` (as
/// `psql` does). `?sslmode=disable|prefer|require` (default `prefer`, like libpq; a unix socket never uses TLS).
/// `?pool=N` caps the connections (default 20). `?keepalive=SECONDS` has the pool send `SELECT 1` on a connection idle
/// that long (default: none). It is off by default because postgres-nio arms the keep-alive timer again each time
/// a connection goes back to the pool, a task per request: under load `mbaas serve` lost 15% of its GETs per second
/// and held 37 MB more with `?keepalive=30` (docs/emulator.md). Turn it on when something between the server and PostgreSQL drops idle
/// connections (a NAT, a firewall, PostgreSQL's `idle_session_timeout`).
///
/// Opening looks at the schema first and touches nothing that is not an MBaaSKit store: tables of something else, a
/// store of another schema version, or a role without the rights to create or use the tables are refused with the
/// reason (`invalidRequest`, `forbidden`). An empty or missing schema becomes a store (not with
/// ``MBaaSCore/BackendContext/readOnly``: reading never creates a store, so a missing one is `notFound`).
public struct PostgresBackendFactory: BackendFactory {
    public let schemes = ["postgres", "postgresql"]
    public let adapterName = "postgres"
    public let options: PostgresBackend.Options
    /// The environment the password is read from when the URL has none.
    let environment: [String: String]

    public init(options: PostgresBackend.Options = PostgresBackend.Options(),
                environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.options = options
        self.environment = environment
    }

    /// Where and as whom to connect, from a URL.
    struct Target: Sendable, Equatable {
        var host: String
        var port: Int
        var socket: String?
        var user: String
        var password: String?
        var database: String
        var schema: String
        var sslmode: String
        var pool: Int?
        /// Seconds between keep-alive queries on an idle connection; `nil`: none.
        var keepAlive: Int? = nil
    }

    func target(_ url: BackendURL) throws(MBaaSError) -> Target {
        guard schemes.contains(url.scheme) else {
            throw MBaaSError(.invalidRequest, "the PostgreSQL backend opens postgres:// URLs, not \(url.scheme):")
        }
        try url.requireKnownOptions(["schema", "socket", "sslmode", "pool", "keepalive"], adapter: "postgres")
        guard let host = url.host else {
            throw MBaaSError(.invalidRequest, "the postgres: URL has no host; use postgres://USER:PASSWORD@HOST:PORT/DB")
        }
        guard let user = url.user, !user.isEmpty else {
            throw MBaaSError(.invalidRequest, "the postgres: URL names no user; use postgres://USER:PASSWORD@HOST:PORT/DB")
        }
        let database = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        guard !database.isEmpty, !database.contains("/") else {
            throw MBaaSError(.invalidRequest, "the postgres: URL names no database; use postgres://USER:PASSWORD@HOST:PORT/DB")
        }
        let schema = url.option("schema") ?? "public"
        try PostgresSchema.validateSchemaName(schema)
        let sslmode = url.option("sslmode") ?? "prefer"
        guard ["disable", "prefer", "require"].contains(sslmode) else {
            throw MBaaSError(.invalidRequest, "?sslmode=\(sslmode) is not one of disable, prefer, require")
        }
        var pool: Int?
        if let text = url.option("pool") {
            guard let n = Int(text), (1...1000).contains(n) else {
                throw MBaaSError(.invalidRequest, "?pool=\(text) is not a number of connections from 1 to 1000")
            }
            pool = n
        }
        var keepAlive: Int?
        if let text = url.option("keepalive") {
            guard let n = Int(text), (1...86_400).contains(n) else {
                throw MBaaSError(.invalidRequest, "?keepalive=\(text) is not a number of seconds from 1 to 86400")
            }
            keepAlive = n
        }
        if let socket = url.option("socket"), socket.isEmpty {
            throw MBaaSError(.invalidRequest, "?socket= is empty; give the directory of the server's socket or leave it out")
        }
        let password = url.secret ?? environment["MBAAS_POSTGRES_PASSWORD"] ?? environment["PGPASSWORD"]
        return Target(host: host, port: url.port ?? 5432, socket: url.option("socket"), user: user, password: password,
                      database: database, schema: schema, sslmode: sslmode, pool: pool, keepAlive: keepAlive)
    }

    public func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend {
        try await openPostgres(url, context: context)
    }

    /// Opens the store a URL names (the typed form of ``open(_:context:)``).
    public func openPostgres(_ url: BackendURL, context: BackendContext) async throws -> PostgresBackend {
        let target = try target(url)
        let logger = context.logger
        let tls: PostgresConnection.Configuration.TLS
        switch target.sslmode {
        case "disable": tls = .disable
        case "require": tls = .require(try Self.sslContext())
        default: tls = .prefer(try Self.sslContext())
        }
        let socketPath = target.socket.map { ($0.hasSuffix("/") ? $0 : $0 + "/") + ".s.PGSQL.\(target.port)" }
        let where_ = socketPath ?? "\(target.host):\(target.port)"

        // 1. One connection of its own to look at the schema (and create the store), so that a wrong address or
        //    password fails at once with the server's reason.
        var connConfig: PostgresConnection.Configuration
        if let socketPath {
            connConfig = .init(unixSocketPath: socketPath, username: target.user, password: target.password, database: target.database)
        } else {
            connConfig = .init(host: target.host, port: target.port, username: target.user, password: target.password,
                               database: target.database, tls: tls)
        }
        connConfig.options.connectTimeout = .seconds(10)
        let conn: PostgresConnection
        do {
            conn = try await PostgresConnection.connect(configuration: connConfig, id: 0, logger: logger)
        } catch {
            let e = PostgresStore.mapError(error)
            let kind: MBaaSError.Kind = e.vendorCode == "28P01" || e.vendorCode == "28000" ? .unauthorized
                : e.vendorCode == "3D000" ? .notFound : .unavailable
            throw MBaaSError(kind, "cannot connect to PostgreSQL at \(where_) (database \(target.database), user \(target.user)): \(e.message)",
                             vendorCode: e.vendorCode)
        }
        var readOnly = context.readOnly
        do {
            defer { Task { try? await conn.close() } }
            let state = try await PostgresSchema.inspect(conn, schema: target.schema, logger: logger)
            switch state {
            case .foreign(let tables):
                throw MBaaSError(.invalidRequest, "the schema \(target.schema) of database \(target.database) holds tables that are not an MBaaSKit store (\(PostgresSchema.describe(tables))); it was left untouched: give another ?schema=")
            case .otherVersion(let v):
                throw MBaaSError(.invalidRequest, "the schema \(target.schema) of database \(target.database) is an MBaaSKit store of schema version \(v); this mbaas reads version \(PostgresSchema.version); it was left untouched")
            case .missing, .empty:
                if context.readOnly {
                    readOnly = true
                } else {
                    try await PostgresSchema.create(conn, schema: target.schema, exists: state == .empty, logger: logger)
                }
            case .store:
                try await PostgresSchema.checkRights(conn, schema: target.schema, write: !context.readOnly, logger: logger)
            case .older(let v):
                // Read as it is; upgraded (under the creation lock) when opened for writing.
                if !context.readOnly { try await PostgresSchema.upgrade(conn, schema: target.schema, from: v, logger: logger) }
                try await PostgresSchema.checkRights(conn, schema: target.schema, write: !context.readOnly, logger: logger)
            }
            if readOnly, state == .missing || state == .empty {
                throw PostgresEmptyStore()
            }
        } catch is PostgresEmptyStore {
            return try await emptyStore(target: target, tls: tls, socketPath: socketPath, context: context)
        } catch {
            throw PostgresStore.mapError(error)
        }

        // 2. The pool every call uses.
        let client = Self.client(target: target, tls: tls, socketPath: socketPath, options: options, logger: logger)
        let task = Task { await client.run() }
        let store = PostgresStore(client: client, runTask: task, schema: target.schema, s: PostgresSchema.quoted(target.schema) + ".",
                                  logger: logger, clock: context.clock, options: options, administrative: context.administrative,
                                  readOnly: readOnly)
        logger.debug("postgres: opened store", metadata: ["at": "\(where_)", "schema": "\(target.schema)"])
        return PostgresBackend(store: store, ownsStore: true)
    }

    /// A read-only opening of a database without a store: nothing is created, and that is `notFound`.
    private func emptyStore(target: Target, tls: PostgresConnection.Configuration.TLS, socketPath: String?,
                            context: BackendContext) async throws -> PostgresBackend {
        throw MBaaSError(.notFound, "the schema \(target.schema) of database \(target.database) holds no MBaaSKit store yet (reading never creates one)")
    }

    static func client(target: Target, tls: PostgresConnection.Configuration.TLS, socketPath: String?,
                       options: PostgresBackend.Options, logger: Logger) -> PostgresClient {
        var config: PostgresClient.Configuration
        if let socketPath {
            config = .init(unixSocketPath: socketPath, username: target.user, password: target.password, database: target.database)
        } else {
            let clientTLS: PostgresClient.Configuration.TLS
            switch target.sslmode {
            case "disable": clientTLS = .disable
            case "require": clientTLS = .require(.makeClientConfiguration())
            default: clientTLS = .prefer(.makeClientConfiguration())
            }
            config = .init(host: target.host, port: target.port, username: target.user, password: target.password,
                           database: target.database, tls: clientTLS)
        }
        config.options.maximumConnections = target.pool ?? options.maximumConnections
        config.options.minimumConnections = options.keepsConnectionsOpen ? config.options.maximumConnections : 0
        config.options.keepAliveBehavior = target.keepAlive.map { .init(frequency: .seconds($0)) }
        config.options.connectTimeout = .seconds(10)
        return PostgresClient(configuration: config, backgroundLogger: logger)
    }

    /// The system's trust roots, for the schema connection (the pool builds its own from the same configuration).
    static func sslContext() throws(MBaaSError) -> NIOSSLContext {
        do { return try NIOSSLContext(configuration: .makeClientConfiguration()) } catch {
            throw MBaaSError(.unavailable, "cannot set up TLS for PostgreSQL: \(error)")
        }
    }
}

/// A read-only opening of a database without a store.
struct PostgresEmptyStore: Error {}
