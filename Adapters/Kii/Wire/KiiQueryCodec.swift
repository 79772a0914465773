public import MBaaSCore

/// An aggregation of a bucket query; Kii documents `COUNT` (kii.md §4.4).
public struct KiiAggregation: Sendable, Hashable {
    public var type: String
    public var putAggregationInto: String
    public init(type: String = "COUNT", putAggregationInto: String) {
        self.type = type
        self.putAggregationInto = putAggregationInto
    }
}

/// A `QueryRequest` (`application/vnd.kii.QueryRequest+json`, kii.md §4.1):
/// `{"bucketQuery":{"clause":..,"orderBy":..,"descending":..,"aggregations":[..]},"paginationKey":..,"bestEffortLimit":..}`.
public struct KiiQueryRequest: Sendable, Hashable {
    public var clause: KiiClause
    public var orderBy: String?
    /// Sent whenever `orderBy` is (the guide and the reference disagree on the default, kii.md §4.1).
    public var descending: Bool?
    public var aggregations: [KiiAggregation]
    public var bestEffortLimit: Int?
    public var paginationKey: String?

    public static let contentType = "application/vnd.kii.QueryRequest+json"

    public init(
        clause: KiiClause = .all, orderBy: String? = nil, descending: Bool? = nil, aggregations: [KiiAggregation] = [],
        bestEffortLimit: Int? = nil, paginationKey: String? = nil
    ) {
        self.clause = clause
        self.orderBy = orderBy
        self.descending = descending
        self.aggregations = aggregations
        self.bestEffortLimit = bestEffortLimit
        self.paginationKey = paginationKey
    }

    /// The request counting a clause's matches through the `COUNT` aggregation (kii.md §4.4).
    public static func count(_ clause: KiiClause, into field: String = "count_field") -> KiiQueryRequest {
        KiiQueryRequest(clause: clause, aggregations: [KiiAggregation(putAggregationInto: field)])
    }

    public var json: JSON {
        var bucketQuery: JSONObject = ["clause": clause.json]
        if let orderBy {
            bucketQuery["orderBy"] = .string(orderBy)
            bucketQuery["descending"] = .bool(descending ?? false)
        } else if let descending {
            bucketQuery["descending"] = .bool(descending)
        }
        if !aggregations.isEmpty {
            bucketQuery["aggregations"] = .array(aggregations.map {
                .object(["type": .string($0.type), "putAggregationInto": .string($0.putAggregationInto)])
            })
        }
        var o: JSONObject = ["bucketQuery": .object(bucketQuery)]
        if let paginationKey { o["paginationKey"] = .string(paginationKey) }
        if let bestEffortLimit { o["bestEffortLimit"] = .int(Int64(bestEffortLimit)) }
        return .object(o)
    }

    /// Reads a QueryRequest (for a server); errors are `invalidRequest` with vendor code `QUERY_NOT_SUPPORTED`.
    public init(json: JSON) throws(MBaaSError) {
        func bad(_ why: String) -> MBaaSError {
            MBaaSError(.invalidRequest, why, vendorCode: "QUERY_NOT_SUPPORTED", httpStatus: 400)
        }
        guard let bq = json["bucketQuery"]?.objectValue else { throw bad("a QueryRequest needs a 'bucketQuery' object") }
        guard let c = bq["clause"] else { throw bad("bucketQuery needs a 'clause'") }
        var aggregations: [KiiAggregation] = []
        for a in bq["aggregations"]?.arrayValue ?? [] {
            guard let t = a["type"]?.stringValue, let into = a["putAggregationInto"]?.stringValue else {
                throw bad("an aggregation needs 'type' and 'putAggregationInto'")
            }
            aggregations.append(KiiAggregation(type: t, putAggregationInto: into))
        }
        if let d = bq["descending"], d.boolValue == nil { throw bad("'descending' must be a boolean") }
        if let l = json["bestEffortLimit"], l.intValue == nil { throw bad("'bestEffortLimit' must be an integer") }
        self.init(
            clause: try KiiClause(json: c, path: "bucketQuery.clause"), orderBy: bq["orderBy"]?.stringValue,
            descending: bq["descending"]?.boolValue, aggregations: aggregations,
            bestEffortLimit: json["bestEffortLimit"]?.intValue.map { Int($0) },
            paginationKey: json["paginationKey"]?.stringValue)
    }
}

/// A query response (kii.md §4.3): `{"queryDescription":..,"results":[objects],"nextPaginationKey":..}`.
public struct KiiQueryResponse: Sendable, Hashable {
    public var queryDescription: String?
    public var results: [JSONObject]
    /// Present exactly when more pages exist.
    public var nextPaginationKey: String?

    public init(queryDescription: String? = nil, results: [JSONObject], nextPaginationKey: String? = nil) {
        self.queryDescription = queryDescription
        self.results = results
        self.nextPaginationKey = nextPaginationKey
    }

    public var json: JSON {
        var o: JSONObject = [:]
        if let queryDescription { o["queryDescription"] = .string(queryDescription) }
        o["results"] = .array(results.map(JSON.object))
        if let nextPaginationKey { o["nextPaginationKey"] = .string(nextPaginationKey) }
        return .object(o)
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let items = json["results"]?.arrayValue else {
            throw MBaaSError(.decoding, "Kii query response has no 'results' array: \(json.printed().prefix(200))")
        }
        var results: [JSONObject] = []
        for item in items {
            guard let o = item.objectValue else { throw MBaaSError(.decoding, "Kii query result is not an object") }
            results.append(o)
        }
        self.init(queryDescription: json["queryDescription"]?.stringValue, results: results,
                  nextPaginationKey: json["nextPaginationKey"]?.stringValue)
    }
}

/// A count response (kii.md §4.4): `{"aggregations":{"count_field":10}}`.
public struct KiiAggregationResponse: Sendable, Hashable {
    public var aggregations: [String: Int64]
    public init(aggregations: [String: Int64]) { self.aggregations = aggregations }

    public var json: JSON {
        .object(["aggregations": .object(JSONObject(sorting: aggregations.mapValues { JSON.int($0) }))])
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let a = json["aggregations"]?.objectValue else {
            throw MBaaSError(.decoding, "Kii count response has no 'aggregations' object")
        }
        var out: [String: Int64] = [:]
        for (k, v) in a {
            guard let n = v.intValue else { throw MBaaSError(.decoding, "Kii aggregation '\(k)' is not an integer") }
            out[k] = n
        }
        self.init(aggregations: out)
    }
}

/// The Kii translation of a neutral ``Query`` (kii.md §4): clause, single `orderBy`, `bestEffortLimit`, and the
/// cursor as `paginationKey`.
public enum KiiQueryTranslator {
    /// The QueryRequest for one page. `skip`, several sort keys and selected keys are ``MBaaSError/Kind/unsupported``
    /// (Kii has no offset, sorts by one field, and always returns whole objects).
    public static func request(for query: Query, limit: Int?) throws(MBaaSError) -> KiiQueryRequest {
        if let skip = query.skip, skip > 0, query.cursor == nil {
            throw .unsupported("skip", by: "kii", reason: "Kii pages only by pagination key")
        }
        if query.sort.count > 1 {
            throw .unsupported("sorting by more than one key", by: "kii", reason: "Kii's orderBy takes one field")
        }
        if query.keys != nil {
            throw .unsupported("selecting keys", by: "kii", reason: "Kii always returns whole objects")
        }
        var request = KiiQueryRequest(clause: try KiiClauseTranslator.clause(for: query.predicate))
        if let key = query.sort.first {
            let (field, descending) = try KiiClauseTranslator.orderBy(key)
            request.orderBy = field
            request.descending = descending
        }
        request.bestEffortLimit = limit
        request.paginationKey = query.cursor
        return request
    }
}
