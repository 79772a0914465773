import Foundation
import Logging
import MBaaSCore
import PostgresNIO

/// SQL text with its bound parameters, built left to right: every value and every field path goes in as a
/// parameter (`$n`), never into the text. The only identifier in the text is the store's schema, validated
/// (``PostgresSchema/validateSchemaName(_:)``) and quoted; table and column names are constants of this module.
struct PGSQL: Sendable {
    var text = ""
    var binds = PostgresBindings()

    init(_ text: String = "") { self.text = text }

    mutating func sql(_ s: String) { text += s }

    /// Binds a text parameter and returns its placeholder.
    mutating func bind(_ value: String) -> String {
        binds.append(value)
        return "$\(binds.count)"
    }

    mutating func bind(_ value: Int64) -> String {
        binds.append(value)
        return "$\(binds.count)"
    }

    mutating func bind(_ value: Bool) -> String {
        binds.append(value)
        return "$\(binds.count)"
    }

    mutating func bind(_ value: [String]) -> String {
        binds.append(value)
        return "$\(binds.count)"
    }

    mutating func bind(_ value: [Int64]) -> String {
        binds.append(value)
        return "$\(binds.count)"
    }

    /// Bytes as `bytea` (through a `ByteBuffer`: `Data`'s own encoding is the throwing kind).
    mutating func bind(_ value: Data) -> String {
        var buffer = ByteBufferAllocator().buffer(capacity: value.count)
        buffer.writeBytes(value)
        binds.append(buffer)
        return "$\(binds.count)"
    }

    /// A text parameter or SQL NULL.
    mutating func bind(_ value: String?) -> String {
        if let value { return bind(value) }
        binds.appendNull()
        return "$\(binds.count)"
    }

    var query: PostgresQuery { PostgresQuery(unsafeSQL: text, binds: binds) }
}

extension PostgresConnection {
    /// Runs a statement and collects its rows (pages are bounded by the query's limit, so this holds one page).
    func rows(_ statement: PGSQL, logger: Logger) async throws -> [PostgresRandomAccessRow] {
        var out: [PostgresRandomAccessRow] = []
        for try await row in try await query(statement.query, logger: logger) { out.append(row.makeRandomAccess()) }
        return out
    }

    /// Runs a statement and returns the first row, if any.
    func first(_ statement: PGSQL, logger: Logger) async throws -> PostgresRandomAccessRow? {
        try await rows(statement, logger: logger).first
    }

    /// Runs a statement that returns no rows of interest.
    func run(_ statement: PGSQL, logger: Logger) async throws {
        for try await _ in try await query(statement.query, logger: logger) {}
    }

    /// Runs a statement and returns the number of rows it changed (`UPDATE … RETURNING 1`, `DELETE … RETURNING 1`).
    func changed(_ statement: PGSQL, logger: Logger) async throws -> Int {
        try await rows(statement, logger: logger).count
    }
}

extension PostgresRandomAccessRow {
    func text(_ i: Int) throws -> String { try self[i].decode(String.self) }
    func optionalText(_ i: Int) throws -> String? { try self[i].decode(String?.self) }
    func int(_ i: Int) throws -> Int64 { try self[i].decode(Int64.self) }
    func optionalInt(_ i: Int) throws -> Int64? { try self[i].decode(Int64?.self) }
    func strings(_ i: Int) throws -> [String] { try self[i].decode([String].self) }
}
