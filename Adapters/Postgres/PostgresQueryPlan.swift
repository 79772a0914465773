import Foundation
import MBaaSCore
import PostgresNIO

/// A query ready to run: filter, sort, page. Paging is keyset based, as in the Local store: `nextCursor` holds the
/// sort values of the page's last record (as text, cast back to each term's type) and its `seq`, and the next page
/// selects the records strictly after them in `ORDER BY` order (`seq` breaking ties), so pages stay right while
/// records are written between them. `skip` is an `OFFSET` on the first page only (a cursor takes precedence).
struct PostgresQueryPlan: Sendable {
    struct Cursor: Sendable {
        var values: [String?]
        var seq: Int64
    }

    let query: Query
    let signature: String
    let limit: Int
    let offset: Int
    let after: Cursor?
    let keys: Set<String>?

    init(query: Query, capabilities: Capabilities) throws(MBaaSError) {
        self.query = query
        signature = query.sort.map(\.description).joined(separator: ",")
        limit = min(query.limit ?? capabilities.defaultPageSize, capabilities.maxPageSize)
        // Compiled once here to report a bad key or pattern before any connection is taken.
        var probe = PostgresQueryCompiler(PGSQL())
        if let p = query.predicate { _ = try probe.predicate(p) }
        var termCount = 0
        for key in query.sort { termCount += try probe.sortTerms(key).count }
        if let text = query.cursor {
            after = try Self.decodeCursor(text, signature: signature, termCount: termCount)
            offset = 0
        } else {
            after = nil
            offset = query.skip ?? 0
        }
        keys = query.keys.map { Set($0.map { String($0.split(separator: ".", maxSplits: 1).first ?? Substring($0)) }) }
    }

    /// `class = $1 AND <read grant> AND <filter>`, with its binds in `c.q`.
    private func whereClause(_ c: inout PostgresQueryCompiler, principal: PostgresPrincipal) throws(MBaaSError) -> String {
        var sql = "r.class = \(c.q.bind(query.className)) AND " + principal.readGrant("r.acl", &c.q)
        if let p = query.predicate { sql += " AND " + (try c.predicate(p)) }
        return sql
    }

    func page(_ conn: PostgresConnection, store: PostgresStore, principal: PostgresPrincipal) async throws -> RecordPage {
        guard limit > 0 else { return RecordPage(records: []) }
        var c = PostgresQueryCompiler(PGSQL())
        var terms: [PostgresQueryCompiler.SortTerm] = []
        for key in query.sort { terms += try c.sortTerms(key) }
        var sql = "SELECT \(PostgresStore.recordColumns)"
        for t in terms { sql += ", (\(t.sql))::text" }
        sql += " FROM \(store.s)records r WHERE " + (try whereClause(&c, principal: principal))
        if let after { sql += " AND " + keyset(after, terms, &c.q) }
        sql += " ORDER BY " + (terms.map { "\($0.sql) \($0.ascending ? "ASC NULLS FIRST" : "DESC NULLS LAST")" } + ["r.seq ASC"])
            .joined(separator: ", ")
        sql += " LIMIT \(c.q.bind(Int64(limit + 1))) OFFSET \(c.q.bind(Int64(offset)))"
        c.q.text = sql
        let rows = try await conn.rows(c.q, logger: store.logger)
        var records: [Record] = []
        records.reserveCapacity(min(rows.count, limit))
        var last: Cursor?
        for (i, row) in rows.prefix(limit).enumerated() {
            let stored = try PostgresStore.decodeRecord(className: query.className, row: row, keys: keys)
            records.append(stored.record)
            if i == limit - 1 {
                last = Cursor(values: try (0..<terms.count).map { try row.optionalText(7 + $0) }, seq: stored.seq)
            }
        }
        let more = rows.count > limit
        return RecordPage(records: records, nextCursor: more ? last.map(encodeCursor) : nil)
    }

    func count(_ conn: PostgresConnection, store: PostgresStore, principal: PostgresPrincipal) async throws -> Int {
        var c = PostgresQueryCompiler(PGSQL())
        let sql = "SELECT count(*) FROM \(store.s)records r WHERE " + (try whereClause(&c, principal: principal))
        c.q.text = sql
        guard let row = try await conn.first(c.q, logger: store.logger) else { return 0 }
        return Int(try row.int(0))
    }

    /// `(terms, seq)` strictly after the cursor in `ORDER BY` order (NULLs first ascending, last descending).
    private func keyset(_ cursor: Cursor, _ terms: [PostgresQueryCompiler.SortTerm], _ q: inout PGSQL) -> String {
        var alternatives: [String] = []
        for i in 0...terms.count {
            var parts: [String] = []
            for j in 0..<i {
                parts.append("\(terms[j].sql) IS NOT DISTINCT FROM \(q.bind(cursor.values[j]))::\(terms[j].cast)")
            }
            if i == terms.count {
                parts.append("r.seq > \(q.bind(cursor.seq))")
            } else {
                let term = terms[i]
                switch (term.ascending, cursor.values[i]) {
                case (true, nil): parts.append("\(term.sql) IS NOT NULL")
                case (true, let v?): parts.append("\(term.sql) > \(q.bind(v))::\(term.cast)")
                case (false, nil): continue
                case (false, let v?): parts.append("(\(term.sql) < \(q.bind(v))::\(term.cast) OR \(term.sql) IS NULL)")
                }
            }
            alternatives.append("(" + (parts.isEmpty ? "TRUE" : parts.joined(separator: " AND ")) + ")")
        }
        return "(" + alternatives.joined(separator: " OR ") + ")"
    }

    // MARK: Cursor text

    /// Base64url of `{"o":"<sort>","k":[<term values as text or null>],"s":<seq>}`.
    private func encodeCursor(_ c: Cursor) -> String {
        let json: JSON = .object(["o": .string(signature), "k": .array(c.values.map { $0.map(JSON.string) ?? .null }), "s": .int(c.seq)])
        return json.data().base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    private static func decodeCursor(_ text: String, signature: String, termCount: Int) throws(MBaaSError) -> Cursor {
        var b64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while b64.count % 4 != 0 { b64 += "=" }
        guard let data = Data(base64Encoded: b64), let json = try? JSON.parse(data),
              let seq = json["s"]?.intValue, let items = json["k"]?.arrayValue, let sig = json["o"]?.stringValue
        else {
            throw MBaaSError(.invalidRequest, "the query cursor is not one this backend made")
        }
        guard sig == signature, items.count == termCount else {
            throw MBaaSError(.invalidRequest, "the query cursor was made for the sort '\(sig)', not '\(signature)'")
        }
        var values: [String?] = []
        for item in items {
            switch item {
            case .null: values.append(nil)
            case .string(let s): values.append(s)
            default: throw MBaaSError(.invalidRequest, "the query cursor is not one this backend made")
            }
        }
        return Cursor(values: values, seq: seq)
    }
}
