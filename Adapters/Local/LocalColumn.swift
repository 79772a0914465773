import GRDB
import GRDBSQLite

/// Reads of a stepped statement's columns through SQLite's own column functions, for the hot paths that decode
/// records (``LocalStore/decodeRecord(className:statement:keys:)``).
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
            let code = sqlite3_bind_text(sqlite, Int32(offset + 1), argument, -1, transient)
            guard code == SQLITE_OK else { throw error(code, db, statement) }
        }
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
