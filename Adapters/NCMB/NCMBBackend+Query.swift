import Foundation
public import MBaaSCore

/// Queries: `GET /classes/{class}?where=…&order=…&limit=…&skip=…[&count=1][&include=…]`.
///
/// The neutral query is translated by ``NCMBQueryTranslator``. Paging is by offset: a full page (as many records as
/// the limit) has `nextCursor` = the next `skip`, as a decimal string; a shorter page is the last.
extension NCMBBackend {
    public func queryPage(_ query: Query) async throws -> RecordPage {
        let ncmb = try NCMBQueryTranslator.translate(query, capabilities: capabilities)
        return try await queryPage(className: query.className, ncmb)
    }

    public func count(_ query: Query) async throws -> Int {
        let ncmb = try NCMBQueryTranslator.countQuery(query, capabilities: capabilities)
        let results = try await find(className: query.className, ncmb)
        guard let count = results.count else { throw MBaaSError(.decoding, "count query response without 'count'") }
        return count
    }

    /// One page of a native NCMB query (every NCMB operator, `include`, `count`), as neutral records.
    /// `nextCursor` is the next `skip` when the page is full.
    public func queryPage(className: String, _ query: NCMBQuery) async throws -> RecordPage {
        let limit = query.limit ?? NCMBQuery.defaultLimit
        if limit == 0 && !query.count { return RecordPage(records: []) }
        let results = try await find(className: className, query)
        var records: [Record] = []
        records.reserveCapacity(results.results.count)
        for object in results.results { records.append(try decode(className: className, object)) }
        let start = query.skip ?? 0
        let next = (limit > 0 && records.count >= limit) ? String(start + records.count) : nil
        return RecordPage(records: records, nextCursor: next, totalCount: results.count)
    }

    /// Runs a native NCMB query and returns the raw results.
    public func find(className: String, _ query: NCMBQuery) async throws(MBaaSError) -> NCMBResults {
        let cls = try NCMBClassName.validate(className)
        let response = try await send(.get, cls.collectionPath, query: query.queryItems, context: "query \(className)")
        return try NCMBResults(json: try json(response))
    }
}
