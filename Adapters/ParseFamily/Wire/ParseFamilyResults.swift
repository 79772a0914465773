public import MBaaSCore

/// The answer to a query in the Parse family: `{"results":[…]}` plus `"count":N` when `count=1` was asked, with
/// `json` (encode) and `init(json:)` (decode) so a client and a server read and write it the same way.
public struct ParseFamilyResults: Sendable, Hashable {
    public var results: [JSONObject]
    public var count: Int?

    public init(results: [JSONObject], count: Int? = nil) {
        self.results = results
        self.count = count
    }

    public var json: JSON {
        var o: JSONObject = ["results": .array(results.map(JSON.object))]
        if let count { o["count"] = .int(Int64(count)) }
        return .object(o)
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let items = json["results"]?.arrayValue else { throw MBaaSError(.decoding, "query response without 'results'") }
        var results: [JSONObject] = []
        for item in items {
            guard let o = item.objectValue else { throw MBaaSError(.decoding, "query result is not an object") }
            results.append(o)
        }
        var count: Int?
        if let c = json["count"], !c.isNull {
            guard let n = c.intValue else { throw MBaaSError(.decoding, "query 'count' is not an integer") }
            count = Int(n)
        }
        self.init(results: results, count: count)
    }
}
