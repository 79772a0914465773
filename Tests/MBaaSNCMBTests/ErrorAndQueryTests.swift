import Foundation
import MBaaSCore
import Testing
@testable import MBaaSNCMB

@Suite("NCMB errors")
struct ErrorTests {
    /// Every code of ncmb.md §1.11 and the neutral kind it must map to (written out here, independently of the table).
    static let expected: [(String, MBaaSError.Kind)] = [
        ("E400000", .invalidRequest), ("E400001", .invalidRequest), ("E400002", .invalidRequest),
        ("E400003", .invalidRequest), ("E400004", .invalidRequest), ("E400005", .invalidRequest),
        ("E400006", .invalidRequest), ("E400007", .invalidRequest), ("E400008", .invalidRequest),
        ("E400009", .invalidRequest), ("E401000", .unauthorized), ("E401001", .unauthorized),
        ("E401002", .unauthorized), ("E401003", .unauthorized), ("E401004", .forbidden), ("E403000", .forbidden),
        ("E403001", .forbidden), ("E403002", .forbidden), ("E403003", .forbidden), ("E403004", .forbidden),
        ("E403005", .forbidden), ("E403006", .invalidRequest), ("E404001", .notFound), ("E404002", .notFound),
        ("E404003", .notFound), ("E404004", .notFound), ("E404005", .notFound), ("E404006", .notFound),
        ("E405001", .invalidRequest), ("E405002", .invalidRequest), ("E409001", .duplicate),
        ("E413001", .invalidRequest), ("E413002", .invalidRequest), ("E413003", .invalidRequest),
        ("E414000", .invalidRequest), ("E415001", .invalidRequest), ("E429001", .rateLimited),
        ("E429002", .rateLimited), ("E500001", .unavailable), ("E502001", .unavailable), ("E502002", .unavailable),
        ("E503001", .unavailable),
    ]

    @Test("every documented code maps to its kind, keeping code, message and status")
    func everyCode() throws {
        #expect(Set(Self.expected.map(\.0)).union(["E100001"]) == Set(NCMBErrorBody.table.keys))
        for (code, kind) in Self.expected {
            let status = Int(code.dropFirst().prefix(3))!
            #expect(NCMBErrorBody.httpStatus(forCode: code) == status)
            let response = TransportResponse(status: .init(code: status), body: Data(#"{"code":"\#(code)","error":"message of \#(code)"}"#.utf8))
            let error = NCMBErrorBody.error(from: response, now: Date())
            #expect(error.kind == kind, "\(code)")
            #expect(error.vendorCode == code)
            #expect(error.httpStatus == status)
            #expect(error.message == "message of \(code)")
        }
        #expect(NCMBErrorBody.httpStatus(forCode: "E100001") == nil)
        #expect(NCMBErrorBody.kind(forCode: "E100001", httpStatus: nil) == .decoding)
    }

    @Test("unknown codes and non-NCMB bodies fall back to the HTTP status; Retry-After is kept")
    func fallbacks() {
        let unknown = NCMBErrorBody.error(from: TransportResponse(status: 404, body: Data(#"{"code":"E404999","error":"x"}"#.utf8)), now: Date())
        #expect(unknown.kind == .notFound && unknown.vendorCode == "E404999")
        let html = NCMBErrorBody.error(from: TransportResponse(status: 503, headers: [.retryAfter: "7"], body: Data("<html>".utf8)), now: Date())
        #expect(html.kind == .unavailable && html.vendorCode == nil && html.retryAfter == 7)
        #expect(NCMBErrorBody(code: "E404001").response().status == 404)
        #expect(NCMBErrorBody(code: "E404001").json.printed() == #"{"code":"E404001","error":"No data available."}"#)
    }
}

@Suite("NCMB query translation")
struct QueryTranslationTests {
    let caps = NCMBBackend.capabilities

    func whereText(_ p: QueryPredicate, className: String = "Memo") throws -> String {
        try NCMBQueryTranslator.where(p, className: className).json.printed()
    }

    @Test("every operator (ncmb.md §1.4)", arguments: [
        (Field("f") == 42, #"{"f":42}"#),
        (Field("f") != "x", #"{"f":{"$ne":"x"}}"#),
        (Field("f") < 1, #"{"f":{"$lt":1}}"#),
        (Field("f") <= 1, #"{"f":{"$lte":1}}"#),
        (Field("f") > 1.5, #"{"f":{"$gt":1.5}}"#),
        (Field("f") >= 1, #"{"f":{"$gte":1}}"#),
        (Field("f").isIn([42, "piyo", 38]), #"{"f":{"$in":[42,"piyo",38]}}"#),
        (Field("f").notIn([1]), #"{"f":{"$nin":[1]}}"#),
        (Field("f").containsAll([1, 2]), #"{"f":{"$all":[1,2]}}"#),
        (Field("f").exists(false), #"{"f":{"$exists":false}}"#),
        (Field("f").matches("[a-z]{2}[0-9]{3}"), #"{"f":{"$regex":"[a-z]{2}[0-9]{3}"}}"#),
        (Field("f").hasPrefix("a.b*(c)"), #"{"f":{"$regex":"^a\\.b\\*\\(c\\)"}}"#),
        (Field("d") > .date(ISO8601.parse("2016-01-26T00:00:00.000Z")!), #"{"d":{"$gt":{"__type":"Date","iso":"2016-01-26T00:00:00.000Z"}}}"#),
        (Field("p") == .pointer(Pointer(className: "_User", objectId: "u")), #"{"p":{"__type":"Pointer","className":"user","objectId":"u"}}"#),
        (Field("hash.a") == 1, #"{"hash.a":1}"#),
        (Field("id") == "x" && Field("createdAt") < .date(Date(timeIntervalSince1970: 0)),
         #"{"objectId":"x","createDate":{"$lt":"1970-01-01T00:00:00.000Z"}}"#),  // createDate is plain ISO text
    ])
    func operators(predicate: QueryPredicate, expected: String) throws {
        #expect(try whereText(predicate) == expected)
    }

    @Test("or becomes $or; and merges distinct keys, operators on one key, and one $or group")
    func andOr() throws {
        #expect(try whereText(Field("a") == "value1" || Field("b") != "value2" || Field("c") < 42)
                == #"{"$or":[{"a":"value1"},{"b":{"$ne":"value2"}},{"c":{"$lt":42}}]}"#)
        #expect(try whereText(Field("m") >= 50 && Field("m") < 100 && Field("t") == "rent")
                == #"{"m":{"$gte":50,"$lt":100},"t":"rent"}"#)
        #expect(try whereText(.and([Field("t") == "x", .or([Field("a") == 1, .and([Field("b") == 2, Field("c") == 3])])]))
                == #"{"t":"x","$or":[{"a":1},{"b":2,"c":3}]}"#)
        #expect(try whereText(.and([.and([Field("a") == 1]), Field("b") == 2])) == #"{"a":1,"b":2}"#)
    }

    @Test("refusals name what NCMB cannot express", arguments: [
        QueryPredicate.not(Field("a") == 1),
        .and([.or([Field("a") == 1, Field("b") == 2]), .or([Field("c") == 3, Field("d") == 4])]),
        Field("a") > 1 && Field("a") > 2,
        Field("a") == 1 && Field("a") > 0,
        Field("a").matches("x", options: "i"),
        .and([Field("a") == 1, .not(Field("b") == 2)]),
    ])
    func refusals(predicate: QueryPredicate) {
        let error = #expect(throws: MBaaSError.self) {
            _ = try NCMBQueryTranslator.translate(Query("Memo", predicate: predicate), capabilities: caps)
        }
        #expect(error?.kind == .unsupported)
        #expect(error?.message.contains("ncmb") == true)
    }

    @Test("parameters: order, limit capped at 1000, cursor as skip, keys refused, user field names")
    func parameters() throws {
        let q = try NCMBQueryTranslator.translate(
            Query("Memo", sort: [SortKey("fieldA"), SortKey("fieldB", ascending: false)], limit: 48, skip: 256), capabilities: caps)
        #expect(q.queryItems.map { "\($0.0)=\($0.1)" } == ["limit=48", "order=fieldA,-fieldB", "skip=256"])
        let capped = try NCMBQueryTranslator.translate(Query("Memo", limit: 5000, cursor: "300"), capabilities: caps)
        #expect(capped.limit == 1000 && capped.skip == 300)
        #expect(try NCMBQueryTranslator.translate(Query("Memo", skip: 0), capabilities: caps).queryItems.isEmpty)
        let keys = #expect(throws: MBaaSError.self) {
            _ = try NCMBQueryTranslator.translate(Query("Memo", keys: ["a"]), capabilities: caps)
        }
        #expect(keys?.kind == .unsupported)
        #expect(throws: MBaaSError.self) { _ = try NCMBQueryTranslator.translate(Query("Memo", cursor: "abc"), capabilities: caps) }
        let users = try NCMBQueryTranslator.translate(Query("_User", predicate: Field("username") == "a", sort: [SortKey("email")]), capabilities: caps)
        #expect(users.queryItems.map { "\($0.0)=\($0.1)" } == ["order=mailAddress", #"where={"userName":"a"}"#])
        let count = try NCMBQueryTranslator.countQuery(Query("Memo", predicate: Field("a") == 1, sort: [SortKey("a")], limit: 3, skip: 9), capabilities: caps)
        // [sdk] ncmb_ios NCMBQuery.m, ncmb_android NCMBQuery.java: count=1&limit=1 (ncmb_js refuses limit < 1).
        #expect(count.queryItems.map { "\($0.0)=\($0.1)" } == ["count=1", "limit=1", #"where={"a":1}"#])
    }

    @Test("the where language decodes every NCMB operator and re-encodes it unchanged")
    func whereRoundTrip() throws {
        let texts = [
            #"{"takano_san":{"$lte":42}}"#,
            #"{"takano_san":{"$inArray":[42,"piyo",38]},"x":{"$ninArray":[1]}}"#,
            #"{"pointer":{"$inQuery":{"className":"SubQuery","where":{"status":"pointed"},"limit":1,"skip":1}}}"#,
            #"{"city":{"$select":{"query":{"className":"SubQuery","where":{"population":{"$gt":10000000}},"limit":1,"skip":1},"key":"cityName"}}}"#,
            #"{"$relatedTo":{"object":{"__type":"Pointer","className":"role","objectId":"role_id"},"key":"belongUser"}}"#,
            #"{"geo":{"$nearSphere":{"__type":"GeoPoint","latitude":35.0,"longitude":139.0},"$maxDistanceInKilometers":10.0}}"#,
            #"{"geo":{"$within":{"$box":[{"__type":"GeoPoint","latitude":35.0,"longitude":139.0},{"__type":"GeoPoint","latitude":36.0,"longitude":140.0}]}}}"#,
            #"{"a":1,"$or":[{"b":{"$exists":true}},{"c":{"$regex":"^x"}}]}"#,
        ]
        for text in texts {
            let parsed = try NCMBWhere(json: JSON.parse(text))
            #expect(parsed.json.printed() == text)
        }
        for bad in [#"{"$and":[{"a":1}]}"#, #"{"a":{"$notInQuery":{}}}"#, #"{"a":{"$options":"i"}}"#, "[1]"] {
            let error = #expect(throws: MBaaSError.self) { try NCMBWhere(json: JSON.parse(bad)) }
            #expect(error?.kind == .invalidRequest)
        }
        let query = try NCMBQuery(queryItems: [("where", #"{"a":1}"#), ("order", "a,-b"), ("limit", "10"), ("skip", "2"), ("count", "1"), ("include", "p,q")])
        #expect(query.queryItems.map { "\($0.0)=\($0.1)" } == ["count=1", "include=p,q", "limit=10", "order=a,-b", "skip=2", #"where={"a":1}"#])
        let badLimit = #expect(throws: MBaaSError.self) { try NCMBQuery(queryItems: [("limit", "1001")]) }
        #expect(badLimit?.vendorCode == "E400002")
    }
}
