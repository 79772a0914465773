import Foundation
public import MBaaSCore

/// Queries: the list endpoint with `filter`, `sort`, `fields`, `page`/`perPage` and `skipTotal`.
///
/// PocketBase pages by page number, not offset. The cursor of a ``RecordPage`` is the offset of the next record
/// (decimal); an offset that is not a multiple of the page size is served from one page of a larger size that
/// contains the whole window (or from two consecutive pages), so `skip` and cursors are exact. A class whose
/// collection does not exist has no records.
extension PocketBaseBackend {
    /// The page number, page size and slice start that cover `limit` records from `offset` in one request, when
    /// a page size up to `maxPerPage` allows it.
    static func window(offset: Int, limit: Int, maxPerPage: Int) -> (page: Int, perPage: Int, start: Int)? {
        guard limit > 0, limit <= maxPerPage else { return nil }
        for size in limit...maxPerPage where offset / size == (offset + limit - 1) / size {
            let page = offset / size + 1
            return (page, size, offset - (page - 1) * size)
        }
        return nil
    }

    struct PreparedQuery {
        var schema: PocketBaseSchema
        var parameters: [(String, String)]
    }

    /// Translates a query; `nil` when it cannot match anything (no collection, no visible record, a constant
    /// false filter).
    func prepare(_ query: Query, forCount: Bool) async throws -> PreparedQuery? {
        guard case .known(let schema) = try await schemaForQuery(query.className) else { return nil }
        let translator = PocketBaseQueryTranslator(schema: schema)
        let filter = try translator.filter(query.predicate)
        if case .constant(false) = filter { return nil }
        var parameters: [(String, String)] = []
        if !forCount { parameters.append(("sort", try translator.sort(query.sort))) }
        if case .constant(true) = filter {} else { parameters.append(("filter", filter.text)) }
        if forCount {
            parameters.append(("fields", "id"))
        } else if let fields = try translator.fields(query.keys) {
            parameters.append(("fields", fields))
        }
        return PreparedQuery(schema: schema, parameters: parameters)
    }

    func list(_ className: String, page: Int, perPage: Int, skipTotal: Bool, _ parameters: [(String, String)]) async throws -> PocketBaseList {
        var query: [(String, String)] = [("page", String(page)), ("perPage", String(perPage))]
        if skipTotal { query.append(("skipTotal", "1")) }
        do {
            return try PocketBaseList(json: try await sendJSON(.get, PocketBaseWire.recordsPath(className), query: query + parameters, as: .data))
        } catch let e as MBaaSError where e.kind == .invalidRequest {
            forget(className)  // a filter naming a column the cached schema had is the likeliest cause
            throw e
        } catch let e as MBaaSError where e.kind == .notFound {
            forget(className)
            return PocketBaseList(page: page, perPage: perPage, totalItems: 0, totalPages: 0, items: [])
        }
    }

    public func queryPage(_ query: Query) async throws -> RecordPage {
        try query.validate(against: capabilities, backend: adapterName)
        try Self.checkClassName(query.className)
        let limit = min(query.limit ?? capabilities.defaultPageSize, capabilities.maxPageSize)
        let offset: Int
        if let cursor = query.cursor {
            guard let value = Int(cursor), value >= 0 else {
                throw MBaaSError(.invalidRequest, "'\(cursor)' is not a PocketBase cursor (a record offset)")
            }
            offset = value
        } else {
            offset = query.skip ?? 0
        }
        guard limit > 0, let prepared = try await prepare(query, forCount: false) else { return RecordPage(records: []) }
        var items: [JSONObject]
        if let w = Self.window(offset: offset, limit: limit, maxPerPage: capabilities.maxPageSize) {
            let list = try await list(query.className, page: w.page, perPage: w.perPage, skipTotal: true, prepared.parameters)
            items = Array(list.items.dropFirst(w.start).prefix(limit))
        } else {
            let page = offset / limit + 1
            let first = try await list(query.className, page: page, perPage: limit, skipTotal: true, prepared.parameters)
            items = first.items
            if first.items.count == limit {
                items += try await list(query.className, page: page + 1, perPage: limit, skipTotal: true, prepared.parameters).items
            }
            items = Array(items.dropFirst(offset % limit).prefix(limit))
        }
        var records: [Record] = []
        for item in items { records.append(try decode(item, className: query.className, schema: prepared.schema)) }
        return RecordPage(records: records, nextCursor: records.count == limit ? String(offset + limit) : nil)
    }

    public func count(_ query: Query) async throws -> Int {
        let q = query.forCounting
        try q.validate(against: capabilities, backend: adapterName)
        try Self.checkClassName(q.className)
        guard let prepared = try await prepare(q, forCount: true) else { return 0 }
        let list = try await list(q.className, page: 1, perPage: 1, skipTotal: false, prepared.parameters)
        guard list.totalItems >= 0 else { throw MBaaSError(.decoding, "PocketBase returned no total") }
        return list.totalItems
    }
}
