import GRDB
import GRDBSQLite

/// Reads of a stepped statement's columns through SQLite's own column functions, for the hot paths that decode
/// records (``LocalStore/decodeRecord(className:statement:keys:knownID:)``).
///
/// GRDB documents its `sqliteStatement` for this use. Its `Row` is the right tool elsewhere; here it cost more than
/// the lookup itself, because a `Row` wrapping a fresh cursor's statement first builds a lowercased dictionary of
/// the column names (`perf record` on `mbaas bench local`: ~20% of a point read).
enum LocalColumn {
    /// SQLite copies the bound text (`SQLITE_TRANSIENT`, a macro Swift does not import).
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// The column's text, or `nil` when it is NULL.
    static func text(_ statement: SQLiteStatement, _ index: Int32) -> String? {
        withText(statement, index) { bytes in bytes.map { String(decoding: $0, as: UTF8.self) } }
    }

    /// Calls `body` with the column's UTF-8 text in SQLite's buffer (valid only during the call), or `nil` when NULL.
    static func withText<T>(_ statement: SQLiteStatement, _ index: Int32,
                            _ body: (UnsafeBufferPointer<UInt8>?) throws -> T) rethrows -> T {
        guard sqlite3_column_type(statement, index) != SQLITE_NULL else { return try body(nil) }
        // `sqlite3_column_text` first, then `sqlite3_column_bytes` (the order SQLite's documentation asks for).
        let pointer = sqlite3_column_text(statement, index)
        let count = Int(sqlite3_column_bytes(statement, index))
        guard let pointer, count > 0 else { return try body(UnsafeBufferPointer(start: nil, count: 0)) }
        return try body(UnsafeBufferPointer(start: pointer, count: count))
    }

    /// Binds `arguments` (as text) to `statement`, steps it once and hands the row, if there is one, to `body`.
    ///
    /// The statement is reset and its bindings cleared before this returns, whatever happens: a statement left on a
    /// row would keep its read snapshot open (stale reads on a dedicated connection, a WAL that cannot checkpoint).
    /// A failed step throws GRDB's `DatabaseError` with SQLite's code and message (`SQLITE_BUSY` after the busy
    /// timeout, say).
    static func stepOnce<T>(_ statement: Statement, _ db: Database, bind arguments: [String],
                            _ body: (SQLiteStatement) throws -> T) throws -> T? {
        let sqlite = statement.sqliteStatement
        defer {
            sqlite3_reset(sqlite)
            sqlite3_clear_bindings(sqlite)
        }
        for (offset, argument) in arguments.enumerated() {
            try bind(argument, at: Int32(offset + 1), sqlite, db, statement)
        }
        return try step(statement, db, body)
    }

    /// ``stepOnce(_:_:bind:_:)`` with two arguments, the point read's class and id, bound without an array.
    static func stepOnce<T>(_ statement: Statement, _ db: Database, bind first: String, _ second: String,
                            _ body: (SQLiteStatement) throws -> T) throws -> T? {
        let sqlite = statement.sqliteStatement
        defer {
            sqlite3_reset(sqlite)
            sqlite3_clear_bindings(sqlite)
        }
        try bind(first, at: 1, sqlite, db, statement)
        try bind(second, at: 2, sqlite, db, statement)
        return try step(statement, db, body)
    }

    /// Binds `text` from its own UTF-8 storage, copied by SQLite: passing a `String` where C takes a `char *`
    /// would build a NUL-terminated copy on the heap first (`utf8CString`, 2.5% of a point read in `perf`).
    private static func bind(_ text: String, at index: Int32, _ sqlite: SQLiteStatement, _ db: Database,
                             _ statement: Statement) throws {
        var text = text
        let code = text.withUTF8 { bytes -> Int32 in
            // An empty buffer may have no address, and a NULL pointer would bind SQL NULL, not ''.
            guard let base = bytes.baseAddress, bytes.count > 0 else { return sqlite3_bind_text(sqlite, index, "", 0, transient) }
            guard bytes.count <= Int(Int32.max) else { return SQLITE_TOOBIG }
            return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                sqlite3_bind_text(sqlite, index, $0, Int32(bytes.count), transient)
            }
        }
        guard code == SQLITE_OK else { throw error(code, db, statement) }
    }

    /// Steps the bound statement once; the caller resets it.
    private static func step<T>(_ statement: Statement, _ db: Database, _ body: (SQLiteStatement) throws -> T) throws -> T? {
        let sqlite = statement.sqliteStatement
        switch sqlite3_step(sqlite) {
        case SQLITE_ROW: return try body(sqlite)
        case SQLITE_DONE: return nil
        case let code: throw error(code, db, statement)
        }
    }

    private static func error(_ code: Int32, _ db: Database, _ statement: Statement) -> DatabaseError {
        let message = db.sqliteConnection.map { String(cString: sqlite3_errmsg($0)) }
        return DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
    }
}
