import Foundation
public import MBaaSCore

/// Queries: `GET /classes/{class}?where=…&order=…&limit=…[&skip=…][&keys=…]`, counts with `count=1&limit=0`.
///
/// Paging (``ParseQueryTranslator``): with no sort or a sort on `id` alone, pages are keyset pages on `objectId`
/// (`order=objectId`, then `objectId > last`; cursor `after:<id>`), which stay correct when records are added or
/// removed between pages and cost the server no `skip`. Any other sort pages by `skip` (cursor `skip:<n>`), with
/// `objectId` appended to the order so that equal sort keys keep one order across pages.
extension ParseBackend {
    public func queryPage(_ query: Query) async throws -> RecordPage {
        let (parse, paging) = try ParseQueryTranslator.translate(query, capabilities: capabilities)
        let limit = parse.limit ?? capabilities.defaultPageSize
        if limit == 0 { return RecordPage(records: []) }
        let results = try await find(className: query.className, parse)
        var records: [Record] = []
        records.reserveCapacity(results.results.count)
        for object in results.results { records.append(try ParseCodec.decodeRecord(className: query.className, object)) }
        let next = ParseQueryTranslator.nextCursor(paging: paging, limit: limit, count: records.count, lastId: records.last?.id)
        return RecordPage(records: records, nextCursor: next, totalCount: results.count)
    }

    public func count(_ query: Query) async throws -> Int {
        let parse = try ParseQueryTranslator.countQuery(query, capabilities: capabilities)
        let results = try await find(className: query.className, parse)
        guard let count = results.count else { throw MBaaSError(.decoding, "count query response without 'count'") }
        return count
    }

    /// Runs a native Parse find (every Parse operator, `include`, `excludeKeys`) and returns the raw results.
    public func find(className: String, _ query: ParseQuery) async throws(MBaaSError) -> ParseResults {
        let cls = try Self.checkClassName(className)
        let response = try await send(.get, ParseRoute.objects(cls).path, query: query.queryItems, context: "query \(cls)")
        return try ParseResults(json: try json(response))
    }
}
