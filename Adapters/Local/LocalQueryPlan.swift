import Foundation
import GRDB
import MBaaSCore

/// A compiled query: the SQL of its filter, sort and page, ready to run against a read transaction.
///
/// Paging is **keyset** based: a page's `nextCursor` holds the sort values and `seq` of its last record, and the
/// next page selects the records strictly after them in the sort order (with `seq` breaking ties). Unlike an
/// offset, this stays correct while records are inserted or deleted between pages and costs the same for the
/// thousandth page as for the first: besides the exact "after the cursor" condition (an `OR` SQLite cannot use as an
/// index range), every page bounds the first sort key by the cursor's value (`>= v` ascending, `<= v` descending),
/// so an index on that key (``LocalBackend/createIndex(className:key:)``) starts the scan where the previous page
/// stopped instead of re-reading every earlier row. A descending key whose missing values (NULLs, sorted last) the
/// filter does not exclude is read in two ranges: the values up to the cursor, then the NULLs. `skip` is an SQL `OFFSET` on the first page only (a cursor takes
/// precedence, as the core specifies).
struct LocalQueryPlan: Sendable {
    struct SortTerm: Sendable {
        var sql: String
        var ascending: Bool
    }

    /// Where the previous page stopped.
    struct Cursor: Sendable {
        var values: [DatabaseValue]
        var seq: Int64
    }

    let className: String
    let filter: LocalQueryCompiler.Fragment?
    let sort: [SortTerm]
    /// `-money,title`: ties a cursor to the sort it was made for.
    let signature: String
    let limit: Int
    let offset: Int
    let after: Cursor?
    let keys: Set<String>?
    /// Whether the filter implies the first sort key has a value (so a descending bound needs no NULL range).
    let firstSortKeyPresent: Bool

    init(query: Query, capabilities: Capabilities) throws(MBaaSError) {
        className = query.className
        if let predicate = query.predicate {
            var compiler = LocalQueryCompiler()
            try compiler.append(predicate)
            filter = compiler.fragment
        } else {
            filter = nil
        }
        var terms: [SortTerm] = []
        for key in query.sort {
            terms.append(SortTerm(sql: try LocalQueryCompiler.sortExpression(forKey: key.key), ascending: key.ascending))
        }
        sort = terms
        if let first = query.sort.first {
            firstSortKeyPresent = ["id", "createdAt", "updatedAt"].contains(first.key)
                || query.predicate.map { Self.implies(present: first.key, $0) } ?? false
        } else {
            firstSortKeyPresent = true
        }
        signature = query.sort.map(\.description).joined(separator: ",")
        limit = min(query.limit ?? capabilities.defaultPageSize, capabilities.maxPageSize)
        if let text = query.cursor {
            after = try Self.decodeCursor(text, signature: signature, sortCount: terms.count)
            offset = 0
        } else {
            after = nil
            offset = query.skip ?? 0
        }
        keys = query.keys.map { Set($0.map { String($0.split(separator: ".", maxSplits: 1).first ?? Substring($0)) }) }
    }

    // MARK: Running

    /// One page, fetched with one statement (`limit + 1` rows tell whether more follow); two when a descending
    /// first key's NULL range follows the cursor's values (see the type's discussion).
    func page(_ db: Database, principal: LocalPrincipal) throws -> RecordPage {
        guard limit > 0 else { return RecordPage(records: []) }
        var records: [Record] = []
        records.reserveCapacity(min(limit, 1024))
        var last: Cursor?
        var more = false
        if let after, let first = sort.first, !first.ascending, !after.values[0].isNull, !firstSortKeyPresent {
            // Values up to the cursor's (an index range), then the NULLs (which sort last, in their own range).
            more = try fetch(db, principal: principal, bound: ("\(first.sql) <= ?", [after.values[0]]), keyset: after,
                             limit: limit, offset: 0, into: &records, last: &last)
            if !more {   // also with a full page: one NULL row means another page follows
                more = try fetch(db, principal: principal, bound: ("\(first.sql) IS NULL", []), keyset: nil,
                                 limit: limit - records.count, offset: 0, into: &records, last: &last)
            }
        } else {
            var bound: (String, StatementArguments)?
            if let after, let first = sort.first {
                let v = after.values[0]
                switch (first.ascending, v.isNull) {
                case (true, false): bound = ("\(first.sql) >= ?", [v])
                case (false, true): bound = ("\(first.sql) IS NULL", [])
                case (false, false): bound = ("\(first.sql) <= ?", [v])   // the filter excludes NULLs
                case (true, true): bound = nil
                }
            }
            more = try fetch(db, principal: principal, bound: bound, keyset: after, limit: limit, offset: offset,
                             into: &records, last: &last)
        }
        return RecordPage(records: records, nextCursor: more ? last.map { encodeCursor($0) } : nil)
    }

    /// Runs one statement of a page: appends up to `limit` records and returns whether another row follows.
    private func fetch(_ db: Database, principal: LocalPrincipal, bound: (String, StatementArguments)?, keyset: Cursor?,
                       limit: Int, offset: Int, into records: inout [Record], last: inout Cursor?) throws -> Bool {
        var sql = "SELECT \(LocalStore.recordColumns)"
        for term in sort { sql += ", " + term.sql }
        var arguments = StatementArguments()
        sql += " FROM records r WHERE " + whereClause(principal: principal, arguments: &arguments)
        if let bound {
            sql += " AND " + bound.0
            arguments += bound.1
        }
        if let keyset {
            sql += " AND " + keysetCondition(keyset, arguments: &arguments)
        }
        sql += " ORDER BY " + (sort.map { "\($0.sql) \($0.ascending ? "ASC" : "DESC")" } + ["r.seq ASC"]).joined(separator: ", ")
        sql += " LIMIT ? OFFSET ?"
        arguments += [limit + 1, offset]

        let statement = try db.cachedStatement(sql: sql)
        let rows = try Row.fetchCursor(statement, arguments: arguments)
        var taken = 0
        while let row = try rows.next() {
            if taken == limit { return true }
            let stored = try LocalStore.decodeRecord(className: className, statement: statement.sqliteStatement, keys: keys)
            records.append(stored.record)
            taken += 1
            // Only the limit-th row can be the end of a page that has a next one: its sort values make the cursor.
            if taken == limit { last = Cursor(values: (0..<sort.count).map { row[7 + $0] as DatabaseValue }, seq: stored.seq) }
        }
        return false
    }

    /// Whether every record matching `predicate` has a non-null value at `key`.
    static func implies(present key: String, _ predicate: QueryPredicate) -> Bool {
        switch predicate {
        case .compare(let k, let comparison, let v): return k == key && comparison != .ne && !v.isNull
        case .in(let k, let values): return k == key && !values.isEmpty && !values.contains(where: \.isNull)
        case .exists(let k, let present): return k == key && present
        case .prefix(let k, _), .regex(let k, _, _), .containsAll(let k, _): return k == key
        case .and(let parts): return parts.contains { implies(present: key, $0) }
        case .or(let parts): return !parts.isEmpty && parts.allSatisfy { implies(present: key, $0) }
        case .notIn, .not: return false
        }
    }

    /// The number of matches, ignoring limit, skip and cursor.
    func count(_ db: Database, principal: LocalPrincipal) throws -> Int {
        var arguments = StatementArguments()
        let sql = "SELECT COUNT(*) FROM records r WHERE " + whereClause(principal: principal, arguments: &arguments)
        return try Int.fetchOne(db.cachedStatement(sql: sql), arguments: arguments) ?? 0
    }

    private func whereClause(principal: LocalPrincipal, arguments: inout StatementArguments) -> String {
        var sql = "r.class = ?"
        arguments += [className]
        let grant = principal.sqlGrant("r.acl", "read")
        sql += " AND " + grant.sql
        arguments += grant.arguments
        if let filter {
            sql += " AND " + filter.sql
            arguments += filter.arguments
        }
        return sql
    }

    /// `(sort values, seq)` strictly after the cursor in `ORDER BY` order (NULLs first ascending, last descending).
    private func keysetCondition(_ c: Cursor, arguments: inout StatementArguments) -> String {
        var alternatives: [String] = []
        for i in 0...sort.count {
            var parts: [String] = []
            var args = StatementArguments()
            for j in 0..<i {
                parts.append("\(sort[j].sql) IS ?")
                args += [c.values[j]]
            }
            if i == sort.count {
                parts.append("r.seq > ?")
                args += [c.seq]
            } else {
                let term = sort[i], v = c.values[i]
                switch (term.ascending, v.isNull) {
                case (true, true): parts.append("\(term.sql) IS NOT NULL")
                case (true, false): parts.append("\(term.sql) > ?"); args += [v]
                case (false, true): continue
                case (false, false): parts.append("(\(term.sql) < ? OR \(term.sql) IS NULL)"); args += [v]
                }
            }
            alternatives.append("(" + parts.joined(separator: " AND ") + ")")
            arguments += args
        }
        return "(" + alternatives.joined(separator: " OR ") + ")"
    }

    // MARK: Cursor text

    /// Base64url of `{"o":"<sort>","k":[<sort values>],"s":<seq>}`.
    private func encodeCursor(_ c: Cursor) -> String {
        let values: [JSON] = c.values.map { v in
            switch v.storage {
            case .null: .null
            case .int64(let i): .int(i)
            case .double(let d): .double(d)
            case .string(let s): .string(s)
            case .blob(let b): .object(["b": .string(b.base64EncodedString())])
            }
        }
        let json: JSON = .object(["o": .string(signature), "k": .array(values), "s": .int(c.seq)])
        return json.data().base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    private static func decodeCursor(_ text: String, signature: String, sortCount: Int) throws(MBaaSError) -> Cursor {
        var b64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while b64.count % 4 != 0 { b64 += "=" }
        guard let data = Data(base64Encoded: b64), let json = try? JSON.parse(data),
              let seq = json["s"]?.intValue, let items = json["k"]?.arrayValue, let sig = json["o"]?.stringValue
        else {
            throw MBaaSError(.invalidRequest, "the query cursor is not one this backend made")
        }
        guard sig == signature, items.count == sortCount else {
            throw MBaaSError(.invalidRequest, "the query cursor was made for the sort '\(sig)', not '\(signature)'")
        }
        var values: [DatabaseValue] = []
        for item in items {
            switch item {
            case .null: values.append(.null)
            case .int(let i): values.append(i.databaseValue)
            case .double(let d): values.append(d.databaseValue)
            case .string(let s):
                // Sort values come from SQLite, which ends a string at NUL: a cursor holding one was not made here.
                guard !s.utf8.contains(0) else { throw MBaaSError(.invalidRequest, "the query cursor is not one this backend made") }
                values.append(s.databaseValue)
            case .object(let o):
                guard let b = o["b"]?.stringValue, let data = Data(base64Encoded: b) else {
                    throw MBaaSError(.invalidRequest, "the query cursor is not one this backend made")
                }
                values.append(data.databaseValue)
            default:
                throw MBaaSError(.invalidRequest, "the query cursor is not one this backend made")
            }
        }
        return Cursor(values: values, seq: seq)
    }
}
