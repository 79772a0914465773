import Foundation
import MBaaSCore
import Testing

@testable import MBaaSKii
@testable import MBaaSKiiWire

/// Clause wire JSON (kii.md §4.2) and the neutral → Kii translation.
@Suite struct KiiClauseTests {
    func j(_ text: String) throws -> JSON { try JSON.parse(text) }

    func translate(_ whereJSON: String) throws -> JSON {
        try KiiClauseTranslator.clause(for: try QueryPredicate(json: j(whereJSON))).json
    }

    @Test func everyClausePrintsTheDocumentedJSONAndParsesBack() throws {
        let cases: [(KiiClause, String)] = [
            (.all, #"{"type":"all"}"#),
            (.eq(field: "score", value: 10), #"{"type":"eq","field":"score","value":10}"#),
            (.not(.eq(field: "a", value: "x")), #"{"type":"not","clause":{"type":"eq","field":"a","value":"x"}}"#),
            (.and([.all, .prefix(field: "name", prefix: "ki")]),
             #"{"type":"and","clauses":[{"type":"all"},{"type":"prefix","field":"name","prefix":"ki"}]}"#),
            (.or([.hasField(field: "name", type: .string)]),
             #"{"type":"or","clauses":[{"type":"hasField","field":"name","fieldType":"STRING"}]}"#),
            (.range(field: "score", lower: KiiRangeBound(10, included: false), upper: nil),
             #"{"type":"range","field":"score","lowerLimit":10,"lowerIncluded":false}"#),
            (.range(field: "age", lower: nil, upper: KiiRangeBound(18, included: true)),
             #"{"type":"range","field":"age","upperLimit":18,"upperIncluded":true}"#),
            (.range(field: "n", lower: KiiRangeBound("a", included: true), upper: KiiRangeBound("m", included: false)),
             #"{"type":"range","field":"n","lowerLimit":"a","lowerIncluded":true,"upperLimit":"m","upperIncluded":false}"#),
            (.in(field: "f", values: [1, 2]), #"{"type":"in","field":"f","values":[1,2]}"#),
            (.geoBox(field: "loc", northEast: KiiGeoPoint(lat: 36, lon: 140), southWest: KiiGeoPoint(lat: 35, lon: 139)),
             #"{"type":"geobox","field":"loc","box":{"ne":{"_type":"point","lat":36.0,"lon":140.0},"sw":{"_type":"point","lat":35.0,"lon":139.0}}}"#),
            (.geoDistance(field: "loc", center: KiiGeoPoint(lat: 35.6, lon: 139.7), radius: 7000, putDistanceInto: "dist"),
             #"{"type":"geodistance","field":"loc","center":{"_type":"point","lat":35.6,"lon":139.7},"radius":7000.0,"putDistanceInto":"dist"}"#),
        ]
        for (clause, text) in cases {
            #expect(clause.json == (try j(text)), "\(clause)")
            #expect(try KiiClause(json: j(text)) == clause)
        }
    }

    @Test func malformedClausesAreRefusedWithThePath() throws {
        for text in [#"{"type":"nope"}"#, #"{"type":"and","clauses":[]}"#, #"{"type":"eq","field":"a"}"#,
                     #"{"type":"range","field":"a"}"#, #"{"type":"hasField","field":"a","fieldType":"DATE"}"#,
                     #"{"type":"and","clauses":[{"type":"all"},{"type":"eq"}]}"#] {
            #expect { try KiiClause(json: j(text)) } throws: { error in
                let e = error as! MBaaSError
                return e.kind == .invalidRequest && e.vendorCode == "QUERY_NOT_SUPPORTED" && e.message.hasPrefix("clause")
            }
        }
        // A range without the inclusive flag includes its bound (Kii's default).
        #expect(try KiiClause(json: j(#"{"type":"range","field":"a","lowerLimit":1}"#))
                == .range(field: "a", lower: KiiRangeBound(1, included: true), upper: nil))
    }

    @Test func comparisonsTranslateToEqAndRanges() throws {
        #expect(try translate(#"{"n":2}"#) == j(#"{"type":"eq","field":"n","value":2}"#))
        #expect(try translate(#"{"n":{"$lt":2}}"#) == j(#"{"type":"range","field":"n","upperLimit":2,"upperIncluded":false}"#))
        #expect(try translate(#"{"n":{"$lte":2.5}}"#) == j(#"{"type":"range","field":"n","upperLimit":2.5,"upperIncluded":true}"#))
        #expect(try translate(#"{"t":{"$gt":"b"}}"#) == j(#"{"type":"range","field":"t","lowerLimit":"b","lowerIncluded":false}"#))
        #expect(try translate(#"{"n":{"$gte":2}}"#) == j(#"{"type":"range","field":"n","lowerLimit":2,"lowerIncluded":true}"#))
        #expect(try translate(#"{"title":{"$prefix":"ga"}}"#) == j(#"{"type":"prefix","field":"title","prefix":"ga"}"#))
        #expect(try translate(#"{"ok":true}"#) == j(#"{"type":"eq","field":"ok","value":true}"#))
    }

    /// [doc] docs.kii.com JavaScript guide "Querying KiiObjects": notEquals does not match objects without the field
    /// (three-valued); nothing shows not(hasField) matching them. So negations on keys objects may lack are
    /// refused, never sent as a clause that would silently drop those objects.
    @Test func negationsOnKeysObjectsMayLackAreRefused() throws {
        for json in [#"{"n":{"$ne":2}}"#, #"{"title":{"$nin":["alpha"]}}"#, #"{"$not":{"n":2}}"#,
                     #"{"note":{"$exists":false}}"#, #"{"$not":{"title":{"$prefix":"a"}}}"#,
                     #"{"$not":{"note":{"$exists":true}}}"#, #"{"$not":{"$and":[{"n":{"$gte":1}},{"n":{"$lt":3}}]}}"#] {
            let error = #expect(throws: MBaaSError.self, "\(json)") { _ = try translate(json) }
            #expect(error?.kind == .unsupported, "\(json)")
            #expect(error?.message.contains("three-valued") == true, "\(json): \(error?.message ?? "")")
        }
    }

    @Test func negationsOnAlwaysPresentKeysAreExact() throws {
        #expect(try KiiClauseTranslator.clause(for: .compare("id", .ne, "x")) == .not(.eq(field: "_id", value: "x")))
        #expect(try KiiClauseTranslator.clause(for: .notIn("id", ["x", "y"])) == .not(.in(field: "_id", values: ["x", "y"])))
        #expect(try KiiClauseTranslator.clause(for: .not(.compare("createdAt", .gte, .date(Date(timeIntervalSince1970: 1)))))
                == .not(.range(field: "_created", lower: KiiRangeBound(.int(1000), included: true), upper: nil)))
    }

    @Test func inGroupsValuesByTypeAndSplitsAt200() throws {
        #expect(try translate(#"{"t":{"$in":["a","b"]}}"#) == j(#"{"type":"in","field":"t","values":["a","b"]}"#))
        #expect(try translate(#"{"t":{"$in":["a",1,"b",true,2.5]}}"#) == j("""
            {"type":"or","clauses":[{"type":"in","field":"t","values":["a","b"]},{"type":"in","field":"t","values":[1,2.5]},
             {"type":"in","field":"t","values":[true]}]}
            """))
        let many = QueryPredicate.in("n", (0..<450).map { Value.int(Int64($0)) })
        guard case .or(let parts) = try KiiClauseTranslator.clause(for: many) else { Issue.record("expected or"); return }
        #expect(parts.count == 3)
        if case .in(_, let v) = parts[2] { #expect(v.count == 50) } else { Issue.record("expected in") }
    }

    @Test func existsUsesHasFieldForTheFourTypes() throws {
        #expect(try translate(#"{"note":{"$exists":true}}"#) == j("""
            {"type":"or","clauses":[{"type":"hasField","field":"note","fieldType":"STRING"},
             {"type":"hasField","field":"note","fieldType":"INTEGER"},{"type":"hasField","field":"note","fieldType":"DECIMAL"},
             {"type":"hasField","field":"note","fieldType":"BOOLEAN"}]}
            """))
        #expect(throws: MBaaSError.self) { _ = try translate(#"{"note":{"$exists":false}}"#) }
    }

    @Test func notIsPushedDownByDeMorgan() throws {
        // not(a or b) = not a and not b; not(not x) = x; not(ne) = eq; not(nin) = in; not(exists false) = exists.
        let p = QueryPredicate.not(.or([.compare("id", .eq, "k"), .not(.prefix("t", "a"))]))
        #expect(try KiiClauseTranslator.clause(for: p) == .and([.not(.eq(field: "_id", value: "k")), .prefix(field: "t", prefix: "a")]))
        #expect(try KiiClauseTranslator.clause(for: .not(.compare("n", .ne, 3))) == .eq(field: "n", value: 3))
        #expect(try KiiClauseTranslator.clause(for: .not(.notIn("n", [1]))) == .in(field: "n", values: [1]))
        #expect(try KiiClauseTranslator.clause(for: .not(.exists("n", false)))
                == (try KiiClauseTranslator.clause(for: .exists("n", true))))
        // not(and) becomes an or of negations, each judged on its own key.
        #expect(try KiiClauseTranslator.clause(for: .not(.and([.compare("id", .eq, "a"), .compare("id", .eq, "b")])))
                == .or([.not(.eq(field: "_id", value: "a")), .not(.eq(field: "_id", value: "b"))]))
        #expect(throws: MBaaSError.self) {
            _ = try KiiClauseTranslator.clause(for: .not(.and([.compare("id", .eq, "a"), .compare("n", .eq, 1)])))
        }
    }

    @Test func nestedAndOrTranslateStructurally() throws {
        // The guide's example: (age <= 18 or age > 65) and gender == "Female" (kii.md §4.2).
        let c = try translate(#"{"$and":[{"$or":[{"age":{"$lte":18}},{"age":{"$gt":65}}]},{"gender":"Female"}]}"#)
        #expect(c == (try j("""
            {"type":"and","clauses":[{"type":"or","clauses":[
              {"type":"range","field":"age","upperLimit":18,"upperIncluded":true},
              {"type":"range","field":"age","lowerLimit":65,"lowerIncluded":false}]},
             {"type":"eq","field":"gender","value":"Female"}]}
            """)))
        #expect(try KiiClauseTranslator.clause(for: nil) == .all)
        #expect(try KiiClauseTranslator.clause(for: .and([])) == .all)
    }

    @Test func metadataKeysMapToReservedFields() throws {
        let date = try #require(ISO8601.parse("2024-03-31T00:00:00.000Z"))
        #expect(try KiiClauseTranslator.clause(for: .compare("createdAt", .gte, .date(date)))
                == .range(field: "_created", lower: KiiRangeBound(.int(1_711_843_200_000), included: true), upper: nil))
        #expect(try KiiClauseTranslator.clause(for: .compare("id", .eq, "x")) == .eq(field: "_id", value: "x"))
        // Always-present keys are negated exactly.
        #expect(try KiiClauseTranslator.clause(for: .compare("id", .ne, "x")) == .not(.eq(field: "_id", value: "x")))
        #expect(try KiiClauseTranslator.orderBy(SortKey("updatedAt", ascending: false)) == ("_modified", true))
    }

    @Test func whatKiiCannotExpressIsUnsupported() throws {
        let date = try #require(ISO8601.parse("2024-03-31T00:00:00.000Z"))
        let refused: [QueryPredicate] = [
            .regex("t", "^a", options: ""), .containsAll("tags", ["a"]), .compare("due", .lt, .date(date)),
            .compare("p", .eq, .pointer(Pointer(className: "A", objectId: "1"))), .compare("a.b", .eq, 1),
            .compare("v", .eq, .null), .in("n", []), .compare("ok", .lt, true), .not(.regex("t", "x", options: "")),
        ]
        for p in refused {
            #expect { try KiiClauseTranslator.clause(for: p) } throws: { ($0 as! MBaaSError).kind == .unsupported }
        }
    }

    @Test func queryRequestSerializationFollowsTheSDKs() throws {
        // Exact shapes of kii.md §4.1: clause only; sort; limit; pagination key; count aggregation.
        #expect(KiiQueryRequest().json == (try j(#"{"bucketQuery":{"clause":{"type":"all"}}}"#)))
        let q = Query("Memo").filter(Field("n") == 1).sorted("-score")
        let r = try KiiQueryTranslator.request(for: q.limit(10), limit: 10)
        #expect(r.json == (try j("""
            {"bucketQuery":{"clause":{"type":"eq","field":"n","value":1},"orderBy":"score","descending":true},"bestEffortLimit":10}
            """)))
        var next = q
        next.cursor = "abcd"
        #expect(try KiiQueryTranslator.request(for: next, limit: 5).json["paginationKey"] == "abcd")
        #expect(KiiQueryRequest.count(.all).json == (try j("""
            {"bucketQuery":{"clause":{"type":"all"},"aggregations":[{"type":"COUNT","putAggregationInto":"count_field"}]}}
            """)))
        // Round trip through the server-side parser.
        let full = KiiQueryRequest(clause: .prefix(field: "a", prefix: "b"), orderBy: "a", descending: false,
                                   bestEffortLimit: 3, paginationKey: "k")
        #expect(try KiiQueryRequest(json: full.json) == full)
        for bad in [Query("M").skip(1), Query("M").sorted("a", "b"), Query("M").select(["a"])] {
            #expect { try KiiQueryTranslator.request(for: bad, limit: 1) } throws: { ($0 as! MBaaSError).kind == .unsupported }
        }
    }
}
