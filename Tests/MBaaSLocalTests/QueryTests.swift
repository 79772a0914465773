import Foundation
import MBaaSCore
import MBaaSLocal
import Testing

/// Five records covering every value type and the edge cases of each operator.
private func fixture() async throws -> LocalBackend {
    let b = try memoryBackend()
    let items: [[String: Value]] = [
        ["title": "apple", "money": 10, "tags": ["a", "b"], "meta": ["level": 3, "kind": "fruit"],
         "due": .date(date("2024-01-01T00:00:00.000Z")), "flag": true,
         "owner": .pointer(Pointer(className: "User", objectId: "u1"))],
        ["title": "Banana", "money": 20.5, "tags": ["b"], "meta": ["level": 5],
         "due": .date(date("2024-06-01T12:00:00.000Z")), "flag": false],
        ["title": "cherry", "money": 30, "note": nil, "nums": [1, 2, 3]],
        ["title": "100%_off", "money": "30", "note": "multi\nline"],
        ["title": "apple pie", "money": 10.0, "tags": ["a", "c"], "place": .geoPoint(GeoPoint(latitude: 35.6, longitude: 139.7))],
    ]
    for fields in items { _ = try await b.create(Record(className: "Item", fields: fields)) }
    _ = try await b.create(Record(className: "Other", fields: ["title": "apple", "money": 10]))
    return b
}

private func titles(_ b: LocalBackend, _ p: QueryPredicate) async throws -> Set<String> {
    let page = try await b.queryPage(Query("Item", predicate: p, limit: 1000))
    return Set(page.records.compactMap { $0["title"]?.stringValue })
}

@Suite("Local queries: operators, sort, paging, count, keys")
struct QueryTests {
    @Test func equalityComparesNumbersByValueAndChecksTypes() async throws {
        let b = try await fixture()
        #expect(try await titles(b, Field("money") == 10) == ["apple", "apple pie"])       // 10 and 10.0
        #expect(try await titles(b, Field("money") == 10.0) == ["apple", "apple pie"])
        #expect(try await titles(b, Field("money") == 30) == ["cherry"])                   // not the string "30"
        #expect(try await titles(b, Field("money") == "30") == ["100%_off"])
        #expect(try await titles(b, Field("flag") == true) == ["apple"])                   // not the number 1
        #expect(try await titles(b, Field("flag") == false) == ["Banana"])
        #expect(try await titles(b, Field("due") == .date(date("2024-06-01T12:00:00.000Z"))) == ["Banana"])
        #expect(try await titles(b, Field("owner") == .pointer(Pointer(className: "User", objectId: "u1"))) == ["apple"])
        #expect(try await titles(b, Field("owner") == .pointer(Pointer(className: "User", objectId: "u2"))) == [])
        #expect(try await titles(b, Field("place") == .geoPoint(GeoPoint(latitude: 35.6, longitude: 139.7))) == ["apple pie"])
        #expect(try await titles(b, Field("tags") == ["a", "b"]) == ["apple"])            // whole array
        #expect(try await titles(b, Field("tags") == "a") == ["apple", "apple pie"])       // element of an array field
        #expect(try await titles(b, Field("meta") == .object(["level": 5])) == ["Banana"])
        #expect(try await titles(b, Field("id") == "nope") == [])
    }

    @Test func nullAndMissingKeys() async throws {
        let b = try await fixture()
        // eq null: null or missing; ne: the complement, so it matches missing keys for non-null operands.
        #expect(try await titles(b, Field("note") == nil) == ["apple", "Banana", "cherry", "apple pie"])
        #expect(try await titles(b, Field("note") != nil) == ["100%_off"])
        #expect(try await titles(b, Field("flag") != true) == ["Banana", "cherry", "100%_off", "apple pie"])
        #expect(try await titles(b, Field("note").exists()) == ["100%_off"])               // null is not "exists"
        #expect(try await titles(b, Field("note").exists(false)) == ["apple", "Banana", "cherry", "apple pie"])
        #expect(try await titles(b, Field("tags").notIn(["a"])) == ["Banana", "cherry", "100%_off"])
    }

    @Test func orderingComparesWithinOneType() async throws {
        let b = try await fixture()
        #expect(try await titles(b, Field("money") > 10) == ["Banana", "cherry"])          // not the string "30"
        #expect(try await titles(b, Field("money") >= 10) == ["apple", "Banana", "cherry", "apple pie"])
        #expect(try await titles(b, Field("money") < 20.5) == ["apple", "apple pie"])
        #expect(try await titles(b, Field("money") <= 20.5) == ["apple", "Banana", "apple pie"])
        #expect(try await titles(b, Field("title") < "apple pie") == ["Banana", "100%_off", "apple"]) // code points
        #expect(try await titles(b, Field("money") > "0") == ["100%_off"])
        #expect(try await titles(b, Field("due") < .date(date("2024-03-01T00:00:00.000Z"))) == ["apple"])
        #expect(try await titles(b, Field("due") >= .date(date("2024-01-01T00:00:00.000Z"))) == ["apple", "Banana"])
        #expect(try await titles(b, Field("flag") > false) == [])                         // booleans never order
        let created = try await b.queryPage(Query("Item", limit: 1000)).records.map { $0.createdAt! }
        #expect(try await titles(b, Field("createdAt") <= .date(created.max()!)).count == 5)
    }

    @Test func membershipOperators() async throws {
        let b = try await fixture()
        #expect(try await titles(b, Field("money").isIn([10, "30"])) == ["apple", "apple pie", "100%_off"])
        #expect(try await titles(b, Field("tags").isIn(["c", "z"])) == ["apple pie"])      // any element
        #expect(try await titles(b, Field("nums").isIn([2])) == ["cherry"])
        #expect(try await titles(b, Field("title").isIn([])) == [])
        #expect(try await titles(b, Field("title").notIn(["apple", "Banana"])) == ["cherry", "100%_off", "apple pie"])
        #expect(try await titles(b, Field("money").notIn([10, 20.5, 30])) == ["100%_off"])
        #expect(try await titles(b, Field("tags").containsAll(["a", "b"])) == ["apple"])
        #expect(try await titles(b, Field("tags").containsAll(["a"])) == ["apple", "apple pie"])
        #expect(try await titles(b, Field("nums").containsAll([3, 1.0])) == ["cherry"])
        #expect(try await titles(b, Field("title").containsAll(["apple"])) == [])          // not an array
        #expect(try await titles(b, Field("due").isIn([.date(date("2024-01-01T00:00:00.000Z"))])) == ["apple"])
    }

    @Test func stringOperators() async throws {
        let b = try await fixture()
        #expect(try await titles(b, Field("title").hasPrefix("apple")) == ["apple", "apple pie"])
        #expect(try await titles(b, Field("title").hasPrefix("Apple")) == [])              // case-sensitive
        #expect(try await titles(b, Field("title").hasPrefix("100%_")) == ["100%_off"])
        #expect(try await titles(b, Field("title").hasPrefix("1%")) == [])                 // % is not a wildcard
        #expect(try await titles(b, Field("title").hasPrefix("_")) == [])
        #expect(try await titles(b, Field("title").hasPrefix("")) == ["apple", "Banana", "cherry", "100%_off", "apple pie"])
        #expect(try await titles(b, Field("title").matches("^b")) == [])
        #expect(try await titles(b, Field("title").matches("^b", options: "i")) == ["Banana"])
        #expect(try await titles(b, Field("title").matches("le$")) == ["apple"])
        #expect(try await titles(b, Field("note").matches("^line$")) == [])
        #expect(try await titles(b, Field("note").matches("^line$", options: "m")) == ["100%_off"])
        #expect(try await titles(b, Field("note").matches("multi.line")) == [])
        #expect(try await titles(b, Field("note").matches("multi.line", options: "s")) == ["100%_off"])
        #expect(try await titles(b, Field("title").matches("a p p l e # spaced", options: "x")) == ["apple", "apple pie"])
        #expect(try await titles(b, Field("money").matches("3")) == ["100%_off"])          // strings only
        await expectError(.invalidRequest) { try await titles(b, Field("title").matches("(")) }
    }

    @Test func nestedKeysAndLogic() async throws {
        let b = try await fixture()
        #expect(try await titles(b, Field("meta.level") >= 4) == ["Banana"])
        #expect(try await titles(b, Field("meta.kind") == "fruit") == ["apple"])
        #expect(try await titles(b, Field("meta.level").exists()) == ["apple", "Banana"])
        #expect(try await titles(b, Field("money") == 10 && Field("tags") == "c") == ["apple pie"])
        #expect(try await titles(b, Field("money") == 30 || Field("flag") == false) == ["cherry", "Banana"])
        #expect(try await titles(b, !(Field("money") > 15)) == ["apple", "apple pie", "100%_off"])  // missing/other types match not
        #expect(try await titles(b, .and([])) .count == 5)
        #expect(try await titles(b, .or([])) == [])
        await expectError(.invalidRequest) { try await titles(b, Field("a..b") == 1) }
        await expectError(.invalidRequest) { try await titles(b, Field("acl") == 1) }
    }

    @Test func neutralJSONQueriesRun() async throws {
        let b = try await fixture()
        let q = try Query.parse(className: "Item", whereJSON: #"""
            {"money":{"$gte":10,"$lt":30},"$or":[{"tags":{"$in":["c"]}},{"meta.level":{"$gt":4}}]}
            """#)
        #expect(Set(try await b.queryPage(q).records.compactMap { $0["title"]?.stringValue }) == ["apple pie", "Banana"])
    }
}

/// Strings with a NUL inside: Local stores them (JSON `\u0000`) and reads them back whole, but SQLite cannot compare
/// them: GRDB binds a `String` as a C string and SQLite's JSON functions end a string at its first NUL.
@Suite("Local queries: strings with a NUL inside")
struct QueryNULTests {
    @Test("a string with a NUL is refused as a value to compare, by every operator, naming the key; arrays are compared whole")
    func valuesWithNULAreRefused() async throws {
        let b = try memoryBackend()
        for title in ["a", "a\u{0}b", "b"] {
            _ = try await b.create(Record(className: "Item", fields: ["title": .string(title)]))
        }
        _ = try await b.create(Record(className: "Item", fields: ["title": ["a\u{0}b"], "kind": "array"]))
        let refused: [QueryPredicate] = [
            Field("title") == "a\u{0}b", Field("title") != "a\u{0}b", Field("title") > "a\u{0}b",
            Field("title").isIn(["b", "a\u{0}b"]), Field("title").notIn(["a\u{0}b"]), Field("title").hasPrefix("a\u{0}"),
            Field("owner") == .pointer(Pointer(className: "User", objectId: "u\u{0}1")),
            .and([Field("kind") == "array", .containsAll("title", ["a\u{0}b"])]),
            .or([.not(Field("title") == "x"), .regex("title", "a\u{0}", options: "")]),
        ]
        for predicate in refused {
            await #expect { _ = try await titles(b, predicate) } throws: { error in
                let e = error as? MBaaSError
                let named = e?.message.contains("query on 'title'") == true || e?.message.contains("query on 'owner'") == true
                return e?.kind == .invalidRequest && named && e?.message.contains("NUL") == true
            }
        }
        // Read back whole; an array holding one is compared as JSON text, where the NUL is escaped.
        let all = try await b.queryPage(Query("Item", limit: 10)).records.compactMap { $0["title"]?.stringValue }
        #expect(Set(all) == ["a", "a\u{0}b", "b"])
        let arrays = try await b.queryPage(Query("Item", predicate: Field("title") == ["a\u{0}b"], limit: 10)).records
        #expect(arrays.map { $0["kind"] } == ["array"])
        // The documented limit: a stored string holding a NUL compares as the part before it.
        #expect(try await titles(b, Field("title") == "a") == ["a", "a\u{0}b"])
    }
}
