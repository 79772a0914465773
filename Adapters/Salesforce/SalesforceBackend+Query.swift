public import Foundation
public import MBaaSCore
import MBaaSSalesforceWire

/// Queries: the neutral query as SOQL (``SOQLTranslator``) on `GET /query?q=`, pages followed through
/// `nextRecordsUrl`, counts with `SELECT COUNT()` [capture: salesforce.md "Query"].
///
/// A page of `limit` records asks for that batch size (`Sforce-Query-Options: batchSize=N`, 200–2000 [sdk]); a page
/// smaller than 200, or a server that sends larger pages, is cut at `limit` and the cursor remembers where in the
/// server's page the next one starts. The cursor is `OFFSET@PATH` (the query path or `nextRecordsUrl`).
extension SalesforceBackend {
    public func queryPage(_ query: Query) async throws -> RecordPage {
        try query.validate(against: capabilities, backend: adapterName)
        let size = min(query.limit ?? capabilities.defaultPageSize, capabilities.maxPageSize)
        if size == 0 { return RecordPage(records: []) }
        let pagePath: String
        let offset: Int
        if let cursor = query.cursor {
            guard let at = cursor.firstIndex(of: "@"), let o = Int(cursor[..<at]), o >= 0,
                  cursor[cursor.index(after: at)...].hasPrefix("/services/data/") else {
                throw MBaaSError(.invalidRequest, "'\(cursor)' is not a Salesforce query cursor")
            }
            pagePath = String(cursor[cursor.index(after: at)...])
            offset = o
        } else {
            var fields: [String] = []
            if query.keys == nil { fields = try await describedFields(query.className) }
            var soqlQuery = query
            soqlQuery.limit = nil   // the neutral limit is the page size; pages follow nextRecordsUrl
            let soql = try SOQLTranslator.soql(for: soqlQuery, fields: fields)
            pagePath = path(.query(all: false)) + "?q=" + percentEncode(soql.text)
            offset = 0
        }
        let batch = max(200, min(size, SalesforceWire.maxQueryPageSize))
        let response = try await send(.get, pagePath, headers: [("Sforce-Query-Options", "batchSize=\(batch)")])
        let page = try SalesforceQueryPage(json: try json(response))
        var records: [Record] = []
        let rows = page.records.dropFirst(offset)
        records.reserveCapacity(min(rows.count, size))
        for o in rows.prefix(size) { records.append(try SalesforceRecordCodec.record(o, className: query.className)) }
        let next: String?
        if rows.count > size {
            next = "\(offset + size)@\(pagePath)"
        } else {
            next = page.nextRecordsPath.map { "0@\($0)" }
        }
        return RecordPage(records: records, nextCursor: next, totalCount: page.totalSize)
    }

    public func count(_ query: Query) async throws -> Int {
        let q = query.forCounting
        try q.validate(against: capabilities, backend: adapterName)
        let soql = try SOQLTranslator.countSOQL(for: q)
        let response = try await send(.get, path(.query(all: false)) + "?q=" + percentEncode(soql.text))
        return try SalesforceQueryPage(json: try json(response)).totalSize
    }
}
