import Foundation
import Logging
import MBaaSCore
import MBaaSTesting
import PostgresNIO
import Testing
@testable import MBaaSPostgres

/// The live tests talk to the PostgreSQL server named by `MBAAS_POSTGRES_URL` (a throwaway cluster that
/// `.ci/postgres.sh` starts and stops). Without the variable they are skipped with that reason, except under CI
/// (`CI=true`, as `.ci/run` sets it), where ``PostgresCITests`` fails instead: a missing server is never a pass.
enum Live {
    static let url = ProcessInfo.processInfo.environment["MBAAS_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    static var isAvailable: Bool { url != nil }
    static let inCI = ProcessInfo.processInfo.environment["CI"] == "true"
    static let skipReason: Comment =
        "MBAAS_POSTGRES_URL is not set: run `.ci/postgres.sh run -- swift test` (or `start` and `eval \"$(.ci/postgres.sh env)\"`) to include the live PostgreSQL tests"

    /// Cheap password hashes: the store's behaviour is under test, not the hash's strength.
    static let options = PostgresBackend.Options(passwordHashing: ScryptPasswordHash.Parameters(logN: 4, blockSize: 8, parallelism: 1),
                                                 maximumConnections: 8)
    static let factory = PostgresBackendFactory(options: options)

    /// 8 lowercase letters and digits, for per-test schema names.
    static func runId() -> String {
        String(UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(8))
    }

    /// The environment's URL with `?schema=NAME` (replacing any schema it names).
    static func url(schema: String) throws -> BackendURL {
        var url = try BackendURL(parsing: try #require(Self.url))
        url.options["schema"] = schema
        return url
    }

    /// A backend on a fresh schema `t_<run id>`; drop it with ``drop(_:)``.
    static func fresh(_ prefix: String = "t", administrative: Bool = false) async throws -> PostgresBackend {
        try await factory.openPostgres(try url(schema: "\(prefix)_\(runId())"), context: BackendContext(administrative: administrative))
    }

    /// Another instance on the same schema with a pool of its own (as another process would be).
    static func another(_ backend: PostgresBackend) async throws -> PostgresBackend {
        try await factory.openPostgres(try url(schema: backend.schema), context: BackendContext())
    }

    /// Runs SQL text on a connection of its own (setting up what the backend must refuse, looking behind its back).
    static func sql<T: Sendable>(_ text: String, decode: @escaping @Sendable (PostgresRow) throws -> T) async throws -> [T] {
        let target = try factory.target(try BackendURL(parsing: try #require(Self.url)))
        let config = PostgresConnection.Configuration(host: target.host, port: target.port, username: target.user,
                                                      password: target.password, database: target.database, tls: .disable)
        let conn = try await PostgresConnection.connect(configuration: config, id: 1, logger: Logger(label: "tests"))
        do {
            var out: [T] = []
            for try await row in try await conn.query(PostgresQuery(unsafeSQL: text), logger: Logger(label: "tests")) {
                out.append(try decode(row))
            }
            try await conn.close()
            return out
        } catch {
            try? await conn.close()
            throw error
        }
    }

    /// Runs statements separated by `; ` (the extended protocol takes one statement at a time).
    static func exec(_ text: String) async throws {
        for statement in text.components(separatedBy: "; ") where !statement.isEmpty {
            _ = try await sql(statement) { _ in 0 }
        }
    }

    /// The tables of a schema, sorted.
    static func tables(_ schema: String) async throws -> [String] {
        try await sql("SELECT tablename::text FROM pg_tables WHERE schemaname = '\(schema)' ORDER BY tablename") { try $0.makeRandomAccess()[0].decode(String.self) }
    }

    /// Closes the backend and drops its schema.
    static func drop(_ backend: PostgresBackend) async {
        let schema = backend.schema
        await backend.close()
        try? await exec("DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE")
    }

    static func dropSchemas(prefix: String) async {
        let names = (try? await sql("SELECT nspname::text FROM pg_namespace WHERE nspname LIKE '\(prefix)%'") { try $0.makeRandomAccess()[0].decode(String.self) }) ?? []
        for n in names { try? await exec("DROP SCHEMA IF EXISTS \"\(n)\" CASCADE") }
    }
}

/// Every live test, one suite: skipped with the reason when `MBAAS_POSTGRES_URL` is not set.
@Suite("PostgreSQL live", .enabled(if: Live.isAvailable, Live.skipReason))
struct LiveTests {}

/// Under CI a missing server fails, rather than leaving the live tests skipped.
@Suite("PostgreSQL in CI")
struct PostgresCITests {
    @Test("CI=true: MBAAS_POSTGRES_URL is set (the live tests ran)", .enabled(if: Live.inCI, "not under CI (CI=true)"))
    func serverPresentInCI() {
        #expect(Live.url != nil, "CI=true but MBAAS_POSTGRES_URL is not set: .ci/run runs the tests under .ci/postgres.sh run --; the live PostgreSQL tests did not run")
    }
}
