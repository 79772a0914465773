import Foundation
import MBaaSCore
import Testing
@testable import MBaaSPocketBase

@Suite("PocketBase filter translation")
struct FilterTests {
    /// A managed collection with a tagged text, number, date, json and geoPoint field, an untagged (foreign)
    /// text field, and `created`/`updated`.
    static let schema = PocketBaseSchema(
        name: "Memo", isManaged: true,
        columns: [
            "id": .text, "created": .autodate, "updated": .autodate,
            "title": .text, "title__type": .text, "money": .number, "money__type": .text, "due": .date, "due__type": .text,
            "meta": .json, "meta__type": .text, "tags": .json, "tags__type": .text, "place": .geoPoint, "place__type": .text,
            "legacy": .text, "note__type": .text,
        ],
        isComplete: true)

    func text(_ p: QueryPredicate, schema: PocketBaseSchema? = FilterTests.schema) throws -> String {
        try PocketBaseQueryTranslator(schema: schema).filter(p).text
    }

    @Test func literalsEscapeQuotesAndBackslashes() {
        #expect(PocketBaseFilter.Literal.text("it's").text == #"'it\'s'"#)
        #expect(PocketBaseFilter.Literal.text(#"a\"#).text == #"'a\\'"#)
        #expect(PocketBaseFilter.Literal.text(#"\'"#).text == #"'\\\''"#)
        #expect(PocketBaseFilter.Literal.text(#"say "hi""#).text == #"'say "hi"'"#)
        #expect(PocketBaseFilter.Literal.text("日本語 é\n\t").text == "'日本語 é\n\t'")
        #expect(PocketBaseFilter.Literal.text("' || id != '").text == #"'\' || id != \''"#)
        #expect(PocketBaseFilter.Literal.int(-42).text == "-42")
        #expect(PocketBaseFilter.Literal.double(5.0).text == "5.0")
        #expect(PocketBaseFilter.Literal.double(1e20).text == "100000000000000000000.0")
        #expect(PocketBaseFilter.Literal.double(-1.5e-7).text == "-0.00000015")
        #expect(PocketBaseFilter.Literal.double(123.456).text == "123.456")
        #expect(PocketBaseFilter.Literal.bool(true).text == "true")
        #expect(PocketBaseFilter.Literal.null.text == "null")
    }

    @Test(arguments: ["it's", #"a\"#, #"\\'\"#, "日本語", "' || true || '", #"x\' && id != '"#, "", "tab\there"])
    func textLiteralsParseBack(_ s: String) throws {
        let f = PocketBaseFilter.compare("title", .eq, .text(s))
        #expect(try PocketBaseFilter.parse(f.text) == f)
    }

    @Test func everyOperator() throws {
        #expect(try text(Field("money") == 5) == "(money__type = 'int' || money__type = 'double') && money = 5")
        #expect(try text(Field("money") != 5) == "(money__type != 'int' && money__type != 'double') || money != 5")
        #expect(try text(Field("money") < 2.5) == "(money__type = 'int' || money__type = 'double') && money < 2.5")
        #expect(try text(Field("money") <= 2) == "(money__type = 'int' || money__type = 'double') && money <= 2")
        #expect(try text(Field("title") > "b") == "title__type = 'string' && title > 'b'")
        #expect(try text(Field("title") >= "it's") == #"title__type = 'string' && title >= 'it\'s'"#)
        #expect(try text(Field("title") == "a\\") == #"title__type = 'string' && title = 'a\\'"#)
        #expect(try text(Field("title").isIn(["a", "b"]))
                == "(title__type = 'string' && title = 'a') || (title__type = 'string' && title = 'b')")
        #expect(try text(Field("title").notIn(["a"])) == "title__type != 'string' || title != 'a'")
        #expect(try text(Field("title").exists()) == "title__type != '' && title__type != 'null'")
        #expect(try text(Field("title").exists(false)) == "title__type = '' || title__type = 'null'")
        #expect(try text(Field("title").hasPrefix("ab")) == "title__type = 'string' && title >= 'ab' && title < 'ac'")
        #expect(try text(Field("title") == .null) == "title__type = '' || title__type = 'null'")
        let due = Date(timeIntervalSince1970: 1_711_886_096.789)
        #expect(try text(Field("due") < .date(due)) == "due__type = 'Date' && due < '2024-03-31 11:54:56.789Z'")
        #expect(try text(Field("meta.rank") >= 2) == "meta.rank != null && meta.rank >= 2")
        #expect(try text(Field("meta.when") == .date(due)) == "meta.when.iso = '2024-03-31T11:54:56.789Z'")
        #expect(try text(Field("place") == .geoPoint(GeoPoint(latitude: 1.5, longitude: 2)))
                == "place__type = 'GeoPoint' && place.lat = 1.5 && place.lon = 2.0")
        #expect(try text(Field("meta") == .pointer(Pointer(className: "User", objectId: "u1")))
                == "meta__type = 'Pointer' && meta.className = 'User' && meta.objectId = 'u1'")
        #expect(try text(Field("id") == "abc") == "id = 'abc'")
        #expect(try text(Field("createdAt") > .date(due)) == "created > '2024-03-31 11:54:56.789Z'")
        #expect(try text(Field("legacy") == "x") == "legacy = 'x'")  // a foreign column: always present
    }

    @Test func logicAndNegation() throws {
        let p: QueryPredicate = .and([Field("money") > 1, .or([Field("title") == "a", .not(Field("title").exists())])])
        #expect(try text(p) == "(money__type = 'int' || money__type = 'double') && money > 1 && ((title__type = 'string' && title = 'a') || title__type = '' || title__type = 'null')")
        #expect(try text(.not(Field("money") >= 3)) == "(money__type != 'int' && money__type != 'double') || money < 3")
        #expect(try text(.not(.not(Field("money") >= 3))) == "(money__type = 'int' || money__type = 'double') && money >= 3")
    }

    @Test func fieldsTheCollectionLacksAreAbsentEverywhere() throws {
        let t = PocketBaseQueryTranslator(schema: Self.schema)
        #expect(try t.filter(Field("nope") == 1) == .constant(false))
        #expect(try t.filter(Field("nope") != 1) == .constant(true))
        #expect(try t.filter(Field("nope").exists(false)) == .constant(true))
        #expect(try t.filter(Field("nope") == .null) == .constant(true))
        #expect(try t.filter(Field("money") == "five") == .constant(false))  // a number column never holds a string
        #expect(try t.filter(Field("money") == 1 && Field("nope") == 1) == .constant(false))
        #expect(try t.filter(Field("money") == 1 || Field("nope").exists(false)) == .constant(true))
        #expect(try t.filter(Field("money").isIn([])) == .constant(false))
        #expect(try t.filter(nil) == .constant(true))
    }

    @Test func withoutSchemaEveryFieldIsTagged() throws {
        #expect(try text(Field("x") == true, schema: nil) == "x__type = 'bool' && x = true")
        #expect(try text(Field("a.b") == "c", schema: nil) == "a.b = 'c'")
    }

    @Test func unsupportedAndInvalid() throws {
        let t = PocketBaseQueryTranslator(schema: Self.schema)
        func kind(_ p: QueryPredicate) -> MBaaSError.Kind? {
            do { _ = try t.filter(p); return nil } catch { return error.kind }
        }
        #expect(kind(Field("title").matches("^a")) == .unsupported)
        #expect(kind(Field("tags").containsAll(["a"])) == .unsupported)
        #expect(kind(Field("tags").isIn(["a"])) == .unsupported)  // JSON arrays cannot be searched
        #expect(kind(Field("meta") == ["a": 1]) == .unsupported)
        #expect(kind(Field("acl") == "x") == .unsupported)
        #expect(kind(Field("bad-name") == 1) == .invalidRequest)
        #expect(kind(Field("meta.bad key") == 1) == .invalidRequest)
        #expect(kind(Field("money") == .int(Int64.max)) == .unsupported)
        #expect(kind(Field("x__type") == "int") == .invalidRequest)
        #expect(kind(.or((0..<300).map { Field("money") == .int(Int64($0)) })) == .invalidRequest)  // over 200 comparisons
    }

    @Test func prefixSuccessor() {
        #expect(PocketBaseQueryTranslator.successor(of: "ab") == "ac")
        #expect(PocketBaseQueryTranslator.successor(of: "a\\") == "a]")
        #expect(PocketBaseQueryTranslator.successor(of: "é") == "ê")
        #expect(PocketBaseQueryTranslator.successor(of: "a\u{D7FF}") == "a\u{E000}")
        #expect(PocketBaseQueryTranslator.successor(of: "a\u{10FFFF}") == "b")
        #expect(PocketBaseQueryTranslator.successor(of: "\u{10FFFF}") == nil)
    }

    @Test func sortAndFields() throws {
        let t = PocketBaseQueryTranslator(schema: Self.schema)
        #expect(try t.sort([]) == "@rowid")
        #expect(try t.sort([SortKey("money", ascending: false), SortKey("createdAt"), SortKey("nope")]) == "-money,created,@rowid")
        #expect(try t.sort([SortKey("id")]) == "id")
        #expect(try t.sort([SortKey("meta.rank")]) == "meta.rank,@rowid")
        #expect(throws: MBaaSError.self) { try t.sort((0..<8).map { SortKey("money\($0)") }.map { _ in SortKey("money") } + [SortKey("title")]) }
        #expect(try t.fields(nil) == nil)
        #expect(try t.fields(["title", "id"]) == "id,collectionId,collectionName,created,updated,mbaas_acl,mbaas_public_read,mbaas_public_write,mbaas_readers,mbaas_writers,title,title__type")
    }

    @Test func printedFiltersParseBack() throws {
        let t = PocketBaseQueryTranslator(schema: Self.schema)
        for p: QueryPredicate in [
            Field("money") == 5, Field("title").notIn(["a", "b\\'"]), .not(Field("money") >= 3 && Field("title") == "x"),
            Field("meta.rank") > -2.5, Field("title").hasPrefix("日本"),
        ] {
            let f = try t.filter(p)
            #expect(try PocketBaseFilter.parse(f.text) == f, "\(f.text)")
        }
        #expect(throws: MBaaSError.self) { try PocketBaseFilter.parse("title = 'open") }
        #expect(throws: MBaaSError.self) { try PocketBaseFilter.parse("title ~ 'x'") }
    }

    @Test func pagingWindows() {
        #expect(PocketBaseBackend.window(offset: 0, limit: 10, maxPerPage: 1000)! == (1, 10, 0))
        #expect(PocketBaseBackend.window(offset: 20, limit: 10, maxPerPage: 1000)! == (3, 10, 0))
        let w = PocketBaseBackend.window(offset: 3, limit: 4, maxPerPage: 1000)!
        #expect(w.perPage >= 4 && (w.page - 1) * w.perPage + w.start == 3 && w.start + 4 <= w.perPage)
        #expect(PocketBaseBackend.window(offset: 1, limit: 1000, maxPerPage: 1000) == nil)
    }
}
