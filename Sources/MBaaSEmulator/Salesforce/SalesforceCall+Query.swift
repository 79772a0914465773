import Foundation
import MBaaSCore
import MBaaSSalesforceWire

/// `/query?q=SOQL` and its `nextRecordsUrl` pages.
extension SalesforceCall {
    /// Rows per page: 2000, or `Sforce-Query-Options: batchSize=N` (200…2000) [doc/sdk].
    var pageSize: Int {
        let max = SalesforceWire.maxQueryPageSize
        guard let options = request.headers[HTTPField.Name("Sforce-Query-Options")!],
              let part = options.split(separator: ",").first(where: { $0.trimmingCharacters(in: .whitespaces).hasPrefix("batchSize=") }),
              let n = Int(part.trimmingCharacters(in: .whitespaces).dropFirst("batchSize=".count)) else { return max }
        return Swift.min(Swift.max(n, 200), max)
    }

    /// Parses `q` with the Wire parser (400 MALFORMED_QUERY with the row and column [capture]) and answers the first
    /// page, `{totalSize,done,nextRecordsUrl?,records}`; `SELECT COUNT()` answers `{totalSize,done:true,records:[]}`.
    func query(all: Bool) async throws -> TransportResponse {
        guard let text = queryItems["q"], !text.isEmpty else {
            throw MBaaSError(.invalidRequest, "A query string (q) is required", vendorCode: "MALFORMED_QUERY", httpStatus: 400)
        }
        let soql = try Self.parse(text)
        try checkType(soql.from)
        var neutral = try SOQLTranslator.query(for: soql)
        let offset = neutral.skip ?? 0, limit = neutral.limit
        neutral.skip = nil
        neutral.limit = nil
        neutral.keys = nil
        let matches = try await owner.count(neutral)
        var total = Swift.max(0, matches - offset)
        if let limit { total = Swift.min(total, limit) }
        if case .count = soql.selection {
            return Self.json(200, SalesforceQueryPage(totalSize: total, done: true, records: []).json)
        }
        guard case .fields(let selection) = soql.selection else { throw MBaaSError(.invalidRequest, "unexpected selection", vendorCode: "MALFORMED_QUERY") }
        neutral.skip = offset
        let cursor = SalesforceDialectState.Cursor(query: neutral, selection: selection, total: total, pageSize: pageSize)
        var id: String?
        if total > cursor.pageSize { id = await dialect.state.open(cursor) }
        return try await page(cursor, at: 0, id: id)
    }

    /// The Wire parser's reading of `text`; its error as Salesforce answers it (400 MALFORMED_QUERY, row and column).
    static func parse(_ text: String) throws(MBaaSError) -> SOQLQuery {
        do throws(SOQLParseError) { return try SOQLQuery.parse(text) } catch { throw error.mbaasError }
    }

    /// The page at `locator` (`<cursor>-<offset>`, from a `nextRecordsUrl`); an unknown one is 400
    /// INVALID_QUERY_LOCATOR [doc].
    func queryMore(_ locator: String) async throws -> TransportResponse {
        let parts = locator.split(separator: "-", maxSplits: 1).map(String.init)
        guard parts.count == 2, let offset = Int(parts[1]), offset >= 0, let cursor = await dialect.state.cursor(parts[0]), offset < cursor.total else {
            throw MBaaSError(.invalidRequest, "invalid query locator", vendorCode: "INVALID_QUERY_LOCATOR")
        }
        return try await page(cursor, at: offset, id: parts[0])
    }

    /// Rows `offset ..< offset + pageSize` of the cursor's result, in pieces the store serves (at most its page size).
    func page(_ cursor: SalesforceDialectState.Cursor, at offset: Int, id: String?) async throws -> TransportResponse {
        let end = Swift.min(offset + cursor.pageSize, cursor.total)
        var rows: [JSONObject] = []
        var position = offset
        let piece = 1000   // the Local store's largest page
        while position < end {
            var q = cursor.query
            q.skip = (cursor.query.skip ?? 0) + position
            q.limit = Swift.min(piece, end - position)
            let records = try await owner.queryPage(q).records
            if records.isEmpty { break }
            rows += records.map { render($0, selecting: cursor.selection) }
            position += records.count
        }
        let done = end >= cursor.total
        let next = done ? nil : id.map { SalesforceRoute.queryMore(locator: "\($0)-\(end)", all: false).path(version: version) }
        return Self.json(200, SalesforceQueryPage(totalSize: cursor.total, done: done, nextRecordsUrl: next, records: rows).json)
    }
}
