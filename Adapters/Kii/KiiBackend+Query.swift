import Foundation
public import MBaaSCore
import MBaaSKiiWire

/// Queries (kii.md §4).
///
/// A neutral ``Query`` becomes one `POST {bucket}/query` per page: the predicate as Kii clauses
/// (``KiiClauseTranslator``), one `orderBy` key with an explicit `descending`, the page size as `bestEffortLimit`,
/// and ``Query/cursor`` as `paginationKey`. ``RecordPage/nextCursor`` is Kii's `nextPaginationKey`, so
/// ``ObjectStore/records(matching:pageSize:)`` walks every page lazily. Kii has no offset (`skip` is
/// `unsupported`), sorts by one key and returns whole objects. Counting uses the `COUNT` aggregation.
///
/// A bucket that does not exist yet (`BUCKET_NOT_FOUND`; Kii creates buckets with their first object) holds no
/// records: queries on it return an empty page and count 0.
extension KiiBackend {
    public func queryPage(_ query: Query) async throws -> RecordPage {
        try query.validate(against: capabilities, backend: adapterName)
        let bucket = try address(query.className)
        let limit = min(query.limit ?? capabilities.defaultPageSize, capabilities.maxPageSize)
        // bestEffortLimit 0 means "the server's maximum" to Kii (kii.md §4.1): a zero-size page is answered here.
        if limit == 0 { return RecordPage(records: [], nextCursor: nil) }
        let request = try KiiQueryTranslator.request(for: query, limit: limit)
        return try await page(bucket: bucket, className: query.className, request: request)
    }

    public func count(_ query: Query) async throws -> Int {
        let q = query.forCounting
        try q.validate(against: capabilities, backend: adapterName)
        let bucket = try address(query.className)
        let request = KiiQueryRequest.count(try KiiClauseTranslator.clause(for: query.predicate))
        do {
            let response = try await send(try requests.query(bucket, request), requireUser: bucket.needsUserToken)
            let answer = try KiiAggregationResponse(json: try json(response))
            guard let n = answer.aggregations["count_field"] else {
                throw MBaaSError(.decoding, "Kii count response lacks 'count_field'")
            }
            return Int(n)
        } catch let error as MBaaSError where error.vendorCode == "BUCKET_NOT_FOUND" {
            return 0
        }
    }

    /// One page of a raw Kii query, for clauses the neutral language cannot express (`geobox`, `geodistance`).
    /// ``RecordPage/nextCursor`` is the `nextPaginationKey`; pass it back as `request.paginationKey`.
    public func queryPage(className: String, request: KiiQueryRequest) async throws -> RecordPage {
        try await page(bucket: try address(className), className: className, request: request)
    }

    func page(bucket: KiiBucketAddress, className: String, request: KiiQueryRequest) async throws -> RecordPage {
        do {
            let response = try await send(try requests.query(bucket, request), requireUser: bucket.needsUserToken)
            let answer = try KiiQueryResponse(json: try json(response))
            let records = answer.results.map { KiiObjectCodec.record(className: className, object: $0) }
            return RecordPage(records: records, nextCursor: answer.nextPaginationKey)
        } catch let error as MBaaSError where error.vendorCode == "BUCKET_NOT_FOUND" {
            return RecordPage(records: [], nextCursor: nil)
        }
    }
}
