import Foundation
import GRDB

/// The SQLite schema of the Local backend, applied with GRDB's `DatabaseMigrator` (append-only migrations).
///
/// ## Storage choice: one JSON column per record
/// Records are schema-less (any class, any field, any value type), so the fields of a record live in **one
/// `fields` column holding the record's neutral JSON object** (`{"due":{"__type":"Date","iso":"…"},"money":5}`),
/// queried with SQLite's JSON1 functions (`json_extract`, `json_type`, `json_each`). We chose this over a typed
/// side table (one row per field) because:
/// - every operator, nested dotted key, multi-key sort and keyset page runs as **one SQL statement** over one
///   table, without a join or pivot per field;
/// - a record is read and written as one row, which keeps inserts fast (one statement per record) and makes
///   atomic batches and field operations simple;
/// - typed values round-trip exactly because the stored text *is* the neutral form `Value.json` prints and
///   `Value(json:)` reads, and `json_type` tells ints, reals, strings, booleans and nulls apart, so comparisons
///   can check types (a string never compares with a number);
/// - a hot key can still be indexed: ``LocalBackend/createIndex(className:key:)`` adds an expression index on
///   `json_extract(fields, '$."key"')`, which the planner uses for equality and ranges because queries inline
///   the same path literal.
///
/// Metadata are real columns: `created_at`/`updated_at` in milliseconds since 1970, `version` an integer
/// counter, `acl` the neutral ACL JSON (NULL = public). `seq` (the rowid) orders records by insertion and breaks
/// ties in sorts, so pages are stable.
enum LocalSchema {
    static func migrator() -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE records (
                    seq INTEGER PRIMARY KEY,
                    class TEXT NOT NULL,
                    id TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    version INTEGER NOT NULL,
                    acl TEXT,
                    fields TEXT NOT NULL
                );
                CREATE UNIQUE INDEX records_class_id ON records(class, id);
                CREATE INDEX records_class_seq ON records(class, seq);

                CREATE TABLE users (
                    id TEXT PRIMARY KEY,
                    username TEXT NOT NULL UNIQUE,
                    email TEXT UNIQUE COLLATE NOCASE,
                    password TEXT NOT NULL,
                    roles TEXT NOT NULL DEFAULT '[]',
                    groups TEXT NOT NULL DEFAULT '[]',
                    fields TEXT NOT NULL DEFAULT '{}',
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                );

                CREATE TABLE sessions (
                    token_hash TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL
                );
                CREATE INDEX sessions_user ON sessions(user_id);

                CREATE TABLE files (
                    seq INTEGER PRIMARY KEY,
                    name TEXT NOT NULL UNIQUE,
                    storage TEXT NOT NULL,
                    content_type TEXT,
                    size INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    acl TEXT,
                    att_class TEXT,
                    att_id TEXT,
                    att_field TEXT
                );
                CREATE INDEX files_attachment ON files(att_class, att_id);
                """)
        }
        // v2: store-wide settings (the remembered files directory).
        migrator.registerMigration("v2") { db in
            try db.execute(sql: "CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        }
        // v3: "what changed since" (a replica's sync down, an incremental export: `updatedAt >= t` sorted by
        // `updatedAt`) reads an index range instead of sorting the whole class on every page. Measured with `mbaas
        // bench sync` (100k records): docs/benchmarks.md.
        migrator.registerMigration("v3") { db in
            try db.execute(sql: "CREATE INDEX records_class_updated ON records(class, updated_at, seq)")
        }
        return migrator
    }
}
