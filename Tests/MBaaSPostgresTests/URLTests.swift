import Foundation
import MBaaSCore
import MBaaSTesting
import PostgresNIO
import Testing
@testable import MBaaSPostgres

/// `postgres://` URLs, parsed without a server.
@Suite("PostgreSQL URLs")
struct PostgresURLTests {
    let factory = PostgresBackendFactory(environment: ["PGPASSWORD": "from-env"])

    @Test("host, port, user, password, database and schema; the password from the environment when the URL has none")
    func parts() throws {
        let t = try factory.target(try BackendURL(parsing: "postgres://app:s3cret@db.example:6543/appdb?schema=tenant_1"))
        #expect(t == PostgresBackendFactory.Target(host: "db.example", port: 6543, socket: nil, user: "app", password: "s3cret",
                                                   database: "appdb", schema: "tenant_1", sslmode: "prefer", pool: nil))
        let env = try factory.target(try BackendURL(parsing: "postgresql://app@127.0.0.1/appdb?socket=/run/pg&sslmode=disable&pool=4"))
        #expect(env.password == "from-env" && env.port == 5432 && env.schema == "public" && env.socket == "/run/pg"
                && env.sslmode == "disable" && env.pool == 4)
        #expect(env.keepAlive == nil)
        #expect(try factory.target(try BackendURL(parsing: "postgres://app@h/db?keepalive=30")).keepAlive == 30)
        let mbaasEnv = PostgresBackendFactory(environment: ["PGPASSWORD": "pg", "MBAAS_POSTGRES_PASSWORD": "mbaas"])
        #expect(try mbaasEnv.target(try BackendURL(parsing: "postgres://app@h/db")).password == "mbaas")
    }

    @Test("a schema name that is not a plain identifier is refused before anything connects", arguments: [
        "x\";DROP SCHEMA public CASCADE;--", "Tenant", "pg_catalog", "1abc", "", String(repeating: "a", count: 64), "a b",
    ])
    func hostileSchema(_ schema: String) async throws {
        let text = "postgres://app:pw@127.0.0.1:1/db?schema=" + (schema.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? schema)
        let e = await expectError(.invalidRequest) { try factory.target(try BackendURL(parsing: text)) }
        #expect(e?.message.contains("schema") == true, "\(String(describing: e))")
    }

    @Test("a missing user or database, an unknown option, a bad sslmode or pool: invalidRequest naming it", arguments: [
        ("postgres://127.0.0.1/db", "user"), ("postgres://app@127.0.0.1", "database"), ("postgres://app@127.0.0.1/db?colour=red", "colour"),
        ("postgres://app@127.0.0.1/db?sslmode=maybe", "sslmode"), ("postgres://app@127.0.0.1/db?pool=0", "pool"),
        ("postgres://app@127.0.0.1/db?keepalive=0", "keepalive"), ("postgres://app@127.0.0.1/db?keepalive=soon", "keepalive"),
    ])
    func badURL(_ text: String, _ named: String) async throws {
        let e = await expectError(.invalidRequest) { try factory.target(try BackendURL(parsing: text)) }
        #expect(e?.message.contains(named) == true, "\(String(describing: e))")
    }

    @Test("a server that does not answer: unavailable, naming the address")
    func noServer() async throws {
        let e = await expectError(.unavailable) {
            try await factory.open(try BackendURL(parsing: "postgres://app:pw@127.0.0.1:1/db?sslmode=disable"), context: BackendContext())
        }
        #expect(e?.message.contains("127.0.0.1:1") == true, "\(String(describing: e))")
    }

    @Test("the query compiler binds values and paths: hostile text never reaches the SQL text")
    func boundParameters() async throws {
        var c = PostgresQueryCompiler(PGSQL())
        let evil = "x'); DROP TABLE records; --"
        let sql = try c.predicate(.and([.compare(evil, .eq, .string(evil)), .prefix("title", evil), .regex("a", evil, options: "i")]))
        #expect(!sql.contains("DROP"), "\(sql)")
        #expect(c.q.binds.count == 7, "\(sql)")   // eq: path, value, element value; prefix: path, text; regex: path, pattern
        #expect(try PostgresQueryCompiler.regex("^a.b$", options: "ms") == "(?w)^a.b$")
        #expect(try PostgresQueryCompiler.regex("a", options: "") == "(?p)a")
        await expectError(.invalidRequest) { try PostgresQueryCompiler.regex("a", options: "g") }
    }
}
