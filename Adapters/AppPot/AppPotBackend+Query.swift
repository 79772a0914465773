import Foundation
public import MBaaSCore

/// Queries: `POST data/query/{Class}` and `POST data/query/{Class}/count` (reference A8), with the body
/// ``AppPotQueryTranslator`` builds.
///
/// - A query that matches nothing is answered with HTTP 404 (the JS SDK maps it to empty arrays): it is an empty
///   page (a count of 0), not an error. So is errCode 993/995 (table empty or missing).
/// - Paging: `range.offset` is 1-based on v2 and 0-based on v3 and v4 (``AppPotGeneration/rangeOffset(skip:)``); the cursor is the 0-based offset of the next page, as decimal text.
///   `nextCursor` is set when a page is full.
extension AppPotBackend {
    public func queryPage(_ query: Query) async throws -> RecordPage {
        try query.validate(against: capabilities, backend: adapterName)
        let limit = min(query.limit ?? capabilities.defaultPageSize, capabilities.maxPageSize)
        var skip = query.skip ?? 0
        if let cursor = query.cursor {
            guard let n = Int(cursor), n >= 0 else {
                throw MBaaSError(.invalidRequest, "AppPot cursor '\(cursor)' is not an offset (a number >= 0)")
            }
            skip = n
        }
        let schema = schema(for: query.className)
        guard limit > 0, let body = try AppPotQueryTranslator.translate(query, schema: schema, skip: skip, limit: limit,
                                                                       generation: generation)
        else {
            _ = try await token(for: .user)
            return RecordPage(records: [])
        }
        guard let json = try await postQuery(AppPotRoute.query(className: query.className).segments, body: body) else {
            return RecordPage(records: [])
        }
        let rows = try AppPotDataResponse.rows(json, keys: [body.alias, query.className]) ?? []
        let rowSchema = try readSchema(query.className, rows: rows)
        var records: [Record] = []
        for row in rows.prefix(limit) {
            records.append(try AppPotRowCodec.decodeRecord(row, className: query.className, schema: rowSchema))
        }
        return RecordPage(records: records, nextCursor: rows.count >= limit ? String(skip + limit) : nil)
    }

    public func count(_ query: Query) async throws -> Int {
        let q = query.forCounting
        try q.validate(against: capabilities, backend: adapterName)
        guard let body = try AppPotQueryTranslator.translateCount(q, schema: schema(for: query.className), generation: generation) else {
            _ = try await token(for: .user)
            return 0
        }
        guard let json = try await postQuery(AppPotRoute.count(className: query.className).segments, body: body) else { return 0 }
        return try AppPotDataResponse.count(json)
    }

    /// Posts a query; `nil` when the server says nothing matched (HTTP 404, errCode 993/995).
    func postQuery(_ path: [String], body: AppPotQueryBody) async throws -> JSON? {
        let (response, token) = try await send(.post, path, body: .json(body.json), token: .user)
        do {
            return try check(response, token: token)
        } catch let error as MBaaSError {
            if let code = error.numericVendorCode, AppPotErrorCode.endsSession(code) { throw error }
            if response.status == 404 { return nil }
            if let code = error.numericVendorCode, code == 993 || code == 995 { return nil }
            throw error
        }
    }
}
