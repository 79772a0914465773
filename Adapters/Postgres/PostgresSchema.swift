import Foundation
import Logging
import MBaaSCore
import PostgresNIO

/// The tables of a PostgreSQL store, in one schema of their own (`?schema=S`, default `public`), and the checks made
/// before anything is written to it.
///
/// One `records` table for every class (a `class` column), not a table per class: classes appear with their first
/// record (the neutral API is schemaless), and creating a table per class would take DDL locks in the middle of
/// ordinary writes, racing between the instances of a cluster; with one table, a new class is a new value, the query
/// compiler and the keyset cursor are those of every class, and `(class, id)` and `(class, seq)` indexes serve every
/// class's point reads and pages. Fields are `jsonb` (the neutral JSON of the record's fields), with a GIN index for
/// containment; system columns are typed. See the module's DocC article for the DDL and the reasons.
enum PostgresSchema {
    /// The version of the tables this code reads and writes, kept in `mbaas_meta`.
    /// - 1: the tables.
    /// - 2: an index on `records (class, updated_at, seq)`, for "what changed since" (a replica's sync down asks for
    ///   `updatedAt >= mark` sorted by `updatedAt`: without it PostgreSQL sorts the rest of the class on every page).
    static let version: Int64 = 2

    /// Each version's changes over the one before (run in order by ``upgrade(_:schema:from:logger:)``).
    static func changes(to version: Int64, _ s: String) -> [String] {
        switch version {
        case 2: ["CREATE INDEX IF NOT EXISTS records_class_updated ON \(s)records (class, updated_at, seq)"]
        default: []
        }
    }

    /// The tables of a store, in creation order.
    static let tables = ["mbaas_meta", "users", "sessions", "records", "files", "file_chunks"]

    /// The DDL of version 1; `S.` stands for the quoted schema.
    static func ddl(_ s: String) -> [String] {
        [
            "CREATE TABLE \(s)mbaas_meta (key text PRIMARY KEY, value text NOT NULL)",
            """
            CREATE TABLE \(s)users (
                id text PRIMARY KEY,
                username text NOT NULL UNIQUE,
                email text,
                password text NOT NULL,
                roles text[] NOT NULL DEFAULT '{}',
                groups text[] NOT NULL DEFAULT '{}',
                fields jsonb NOT NULL DEFAULT '{}',
                created_at bigint NOT NULL,
                updated_at bigint NOT NULL
            )
            """,
            "CREATE UNIQUE INDEX users_email ON \(s)users (lower(email))",
            """
            CREATE TABLE \(s)sessions (
                token_hash text PRIMARY KEY,
                user_id text NOT NULL REFERENCES \(s)users(id) ON DELETE CASCADE,
                created_at bigint NOT NULL,
                expires_at bigint NOT NULL
            )
            """,
            "CREATE INDEX sessions_user ON \(s)sessions (user_id)",
            """
            CREATE TABLE \(s)records (
                seq bigserial PRIMARY KEY,
                class text NOT NULL,
                id text NOT NULL,
                created_at bigint NOT NULL,
                updated_at bigint NOT NULL,
                version bigint NOT NULL,
                acl jsonb,
                fields jsonb NOT NULL,
                UNIQUE (class, id)
            )
            """,
            "CREATE INDEX records_class_seq ON \(s)records (class, seq)",
            "CREATE INDEX records_class_created ON \(s)records (class, created_at)",
            "CREATE INDEX records_fields ON \(s)records USING gin (fields jsonb_path_ops)",
            """
            CREATE TABLE \(s)files (
                seq bigserial PRIMARY KEY,
                name text NOT NULL UNIQUE,
                content_type text,
                size bigint NOT NULL,
                created_at bigint NOT NULL,
                updated_at bigint NOT NULL,
                acl jsonb,
                att_class text,
                att_id text,
                att_field text
            )
            """,
            "CREATE INDEX files_attachment ON \(s)files (att_class, att_id)",
            """
            CREATE TABLE \(s)file_chunks (
                file_seq bigint NOT NULL REFERENCES \(s)files(seq) ON DELETE CASCADE,
                n integer NOT NULL,
                data bytea NOT NULL,
                PRIMARY KEY (file_seq, n)
            )
            """,
        ]
    }

    /// Schema names: `[a-z_][a-z0-9_]*`, at most 63 bytes (PostgreSQL's limit), not `pg_…` (reserved by the server).
    static func validateSchemaName(_ name: String) throws(MBaaSError) {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, (97...122).contains(first) || first == 95, bytes.count <= 63,
              bytes.allSatisfy({ (97...122).contains($0) || (48...57).contains($0) || $0 == 95 }), !name.hasPrefix("pg_")
        else {
            throw MBaaSError(.invalidRequest, "invalid schema name '\(name)' in ?schema=: use [a-z_][a-z0-9_]*, at most 63 characters, not starting with pg_")
        }
    }

    /// What a schema holds.
    enum State: Equatable {
        /// The schema does not exist.
        case missing
        /// It exists and holds no table.
        case empty
        /// An MBaaSKit store of this version.
        case store
        /// An MBaaSKit store of an older version this code upgrades (``upgrade(_:schema:from:logger:)``), and reads
        /// as it is.
        case older(Int64)
        /// An MBaaSKit store of another version.
        case otherVersion(String)
        /// Tables that are not an MBaaSKit store.
        case foreign([String])
    }

    /// Looks at the schema without changing anything.
    static func inspect(_ conn: PostgresConnection, schema: String, logger: Logger) async throws -> State {
        var q = PGSQL()
        q.sql("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = \(q.bind(schema)))")
        guard let row = try await conn.first(q, logger: logger), try row[0].decode(Bool.self) else { return .missing }
        var t = PGSQL()
        t.sql("SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = \(t.bind(schema)) AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY c.relname")
        let names = try await conn.rows(t, logger: logger).map { try $0.text(0) }
        if names.isEmpty { return .empty }
        guard names.contains("mbaas_meta") else { return .foreign(names) }
        var usage = PGSQL()
        usage.sql("SELECT current_user::text WHERE NOT has_schema_privilege(\(usage.bind(schema)), 'USAGE')")
        if let row = try await conn.first(usage, logger: logger) {
            let who = try row.text(0)
            throw MBaaSError(.forbidden, "the role \(who) may not use the schema \(schema) (GRANT USAGE ON SCHEMA \(schema) TO \(who), and SELECT, INSERT, UPDATE, DELETE on its tables); nothing was changed",
                             vendorCode: "42501")
        }
        var v = PGSQL()
        v.sql("SELECT value FROM \(quoted(schema)).mbaas_meta WHERE key = 'schema_version'")
        let version = try await conn.first(v, logger: logger).map { try $0.text(0) }
        guard let version else { return .foreign(names) }
        // Every version has these tables: a store missing one is not a store, whatever its version says.
        if tables.contains(where: { !names.contains($0) }) { return .foreign(names) }
        if let n = Int64(version), (1..<Self.version).contains(n) { return .older(n) }
        guard version == String(Self.version) else { return .otherVersion(version) }
        return .store
    }

    /// `"name"`: a validated schema name as an SQL identifier.
    static func quoted(_ schema: String) -> String { "\"" + schema.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }

    /// A short list of table names for messages.
    static func describe(_ names: [String]) -> String {
        let shown = names.prefix(5).joined(separator: ", ")
        return names.count > 5 ? "\(shown) and \(names.count - 5) more" : shown
    }

    /// Creates the tables in one transaction (under an advisory lock, so instances opening a new store at the same
    /// time create it once); checks the rights first so that a role without them is refused with the reason and
    /// nothing is created.
    static func create(_ conn: PostgresConnection, schema: String, exists: Bool, logger: Logger) async throws {
        let s = quoted(schema) + "."
        var rights = PGSQL()
        if exists {
            rights.sql("SELECT has_schema_privilege(\(rights.bind(schema)), 'CREATE'), current_user::text")
        } else {
            rights.sql("SELECT has_database_privilege(current_database(), 'CREATE'), current_user::text")
        }
        if let row = try await conn.first(rights, logger: logger), try !row[0].decode(Bool.self) {
            let who = try row.text(1)
            throw MBaaSError(.forbidden, exists
                ? "the role \(who) may not create tables in the schema \(schema) (GRANT CREATE ON SCHEMA \(schema) TO \(who)); nothing was created"
                : "the role \(who) may not create the schema \(schema) in this database (GRANT CREATE ON DATABASE … TO \(who), or create the schema for it); nothing was created",
                vendorCode: "42501")
        }
        try await underSchemaLock(conn, schema: schema, logger: logger) {
            // Another instance may have created it while this one waited for the lock.
            if try await inspect(conn, schema: schema, logger: logger) == .store { return }
            if !exists { try await conn.run(PGSQL("CREATE SCHEMA IF NOT EXISTS \(quoted(schema))"), logger: logger) }
            // Version 1's tables, then each later version's changes: a new store and an upgraded one are the same.
            for statement in ddl(s) + (1..<version).flatMap({ changes(to: $0 + 1, s) }) {
                try await conn.run(PGSQL(statement), logger: logger)
            }
            var meta = PGSQL()
            meta.sql("INSERT INTO \(s)mbaas_meta (key, value) VALUES ('schema_version', \(meta.bind(String(version))))")
            try await conn.run(meta, logger: logger)
        }
    }

    /// Runs `body` in one transaction holding the schema's advisory lock (the one creating and upgrading take, so
    /// that instances opening a store at once change it once); a throw rolls back.
    static func underSchemaLock(_ conn: PostgresConnection, schema: String, logger: Logger, _ body: () async throws -> Void) async throws {
        try await conn.run(PGSQL("BEGIN"), logger: logger)
        do {
            var lock = PGSQL()
            lock.sql("SELECT pg_advisory_xact_lock(hashtext(\(lock.bind("mbaas-schema:" + schema))))")
            try await conn.run(lock, logger: logger)
            try await body()
            try await conn.run(PGSQL("COMMIT"), logger: logger)
        } catch {
            try? await conn.run(PGSQL("ROLLBACK"), logger: logger)
            throw error
        }
    }

    /// Brings a store of an older version to ``version`` in one transaction, under the advisory lock that creating
    /// one takes (several instances opening it at once upgrade it once). The changes add indexes, which only the
    /// tables' owner may do: another role is refused with the reason, and nothing is changed. The index is built in
    /// that transaction (not `CONCURRENTLY`), so writes to `records` from instances already running wait until it is
    /// built: on a large store, upgrade while the instances are stopped (docs/adapters.md).
    static func upgrade(_ conn: PostgresConnection, schema: String, from old: Int64, logger: Logger) async throws {
        let s = quoted(schema) + "."
        var owner = PGSQL()
        owner.sql("""
            SELECT pg_has_role(current_user, c.relowner, 'USAGE'), current_user::text FROM pg_class c
            JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = \(owner.bind(schema)) AND c.relname = 'records'
            """)
        if let row = try await conn.first(owner, logger: logger), try !row[0].decode(Bool.self) {
            let who = try row.text(1)
            throw MBaaSError(.forbidden, "the schema \(schema) holds an MBaaSKit store of schema version \(old), which this mbaas upgrades to version \(version) (an index), and the role \(who) does not own its tables; open it once as their owner; nothing was changed",
                             vendorCode: "42501")
        }
        try await underSchemaLock(conn, schema: schema, logger: logger) {
            // Another instance may have upgraded it while this one waited for the lock.
            guard case .older(let now) = try await inspect(conn, schema: schema, logger: logger) else { return }
            for v in (now + 1)...version { for statement in changes(to: v, s) { try await conn.run(PGSQL(statement), logger: logger) } }
            var meta = PGSQL()
            meta.sql("UPDATE \(s)mbaas_meta SET value = \(meta.bind(String(version))) WHERE key = 'schema_version'")
            try await conn.run(meta, logger: logger)
        }
    }

    /// Checks that the role may read and write every table of an existing store.
    static func checkRights(_ conn: PostgresConnection, schema: String, write: Bool, logger: Logger) async throws {
        var q = PGSQL()
        let privileges = write ? "SELECT, INSERT, UPDATE, DELETE" : "SELECT"
        let names = q.bind(tables.map { quoted(schema) + "." + $0 })
        q.sql("SELECT t, current_user::text FROM unnest(\(names)::text[]) AS t WHERE NOT has_table_privilege(t, \(q.bind(privileges)))")
        let missing = try await conn.rows(q, logger: logger)
        if let first = missing.first {
            let who = try first.text(1)
            let list = try missing.map { try $0.text(0) }.joined(separator: ", ")
            throw MBaaSError(.forbidden, "the role \(who) lacks \(privileges) on \(list); grant them (GRANT \(privileges) ON ALL TABLES IN SCHEMA \(schema) TO \(who), and USAGE on its sequences)",
                             vendorCode: "42501")
        }
        if write {
            var s = PGSQL()
            s.sql("SELECT current_user::text WHERE NOT has_sequence_privilege(\(s.bind(quoted(schema) + ".records_seq_seq")), 'USAGE')")
            if let row = try await conn.first(s, logger: logger) {
                let who = try row.text(0)
                throw MBaaSError(.forbidden, "the role \(who) may not use the sequences of the schema \(schema) (GRANT USAGE ON ALL SEQUENCES IN SCHEMA \(schema) TO \(who))",
                                 vendorCode: "42501")
            }
        }
    }
}
