import Foundation
import MBaaSCore
import Testing

@testable import MBaaSAppPot

@Suite("AppPot query translation")
struct QueryTranslationTests {
    let schema = AppPotClassSchema(name: "Memo", columns: [
        "title": .varchar(255), "money": .long, "rank": .integer, "done": .bool, "due": .dateTime, "rate": .double,
        "tags": .json(4000),
    ])

    func translate(_ p: QueryPredicate?, sort: [SortKey] = [], skip: Int = 0, limit: Int = 100) throws -> AppPotQueryBody? {
        try AppPotQueryTranslator.translate(Query("Memo", predicate: p, sort: sort), schema: schema, skip: skip, limit: limit)
    }

    func expr(_ p: QueryPredicate) throws -> (String, [JSON])? {
        guard let body = try translate(p) else { return nil }
        return (body.expression ?? "", body.params)
    }

    @Test("every comparison operator, with its parameter")
    func comparisons() throws {
        #expect(try expr(Field("title") == "a")! == ("#Memo.title = ?", ["a"]))
        #expect(try expr(Field("title") != "a")! == ("( #Memo.title != ? OR #Memo.title IS NULL )", ["a"]))
        #expect(try expr(Field("money") < 5)! == ("#Memo.money < ?", [5]))
        #expect(try expr(Field("money") <= 5)! == ("#Memo.money <= ?", [5]))
        #expect(try expr(Field("money") > 5)! == ("#Memo.money > ?", [5]))
        #expect(try expr(Field("money") >= 5)! == ("#Memo.money >= ?", [5]))
    }

    @Test("null comparisons become IS [NOT] NULL; ordering against null never matches")
    func nulls() throws {
        #expect(try expr(Field("title") == nil)! == ("#Memo.title IS NULL", []))
        #expect(try expr(Field("title") != nil)! == ("#Memo.title IS NOT NULL", []))
        #expect(try translate(Field("money") < nil) == nil)
    }

    @Test("in is expanded to an OR chain, nin to an AND chain that keeps missing fields")
    func membership() throws {
        #expect(try expr(Field("money").isIn([1, 2, 3]))! == ("( #Memo.money = ? OR #Memo.money = ? OR #Memo.money = ? )", [1, 2, 3]))
        #expect(try expr(Field("money").isIn([7]))! == ("#Memo.money = ?", [7]))
        #expect(try expr(Field("money").notIn([1, 2]))!
                == ("( ( #Memo.money != ? AND #Memo.money != ? ) OR #Memo.money IS NULL )", [1, 2]))
        #expect(try expr(Field("money").notIn([1]))! == ("( #Memo.money != ? OR #Memo.money IS NULL )", [1]))
        #expect(try expr(Field("title").isIn(["a", nil]))! == ("( #Memo.title = ? OR #Memo.title IS NULL )", ["a"]))
        #expect(try expr(Field("title").notIn(["a", nil]))! == ("#Memo.title != ?", ["a"]))
    }

    @Test("an empty in never matches (no request); an empty nin always does (no where)")
    func emptyMembership() throws {
        #expect(try translate(Field("money").isIn([])) == nil)
        let body = try #require(try translate(Field("money").notIn([])))
        #expect(body.expression == nil)
        #expect(try translate(Field("money").isIn([]) || Field("title") == "x")?.expression == "#Memo.title = ?")
        #expect(try translate(Field("money").isIn([]) && Field("title") == "x") == nil)
    }

    @Test("exists and prefix (LIKE with escapes)")
    func existsAndPrefix() throws {
        #expect(try expr(Field("title").exists())! == ("#Memo.title IS NOT NULL", []))
        #expect(try expr(Field("title").exists(false))! == ("#Memo.title IS NULL", []))
        #expect(try expr(Field("title").hasPrefix("50%_off\\"))! == ("#Memo.title LIKE ?", [.string("50\\%\\_off\\\\%")]))
        #expect(try expr(Field("title").hasPrefix(""))! == ("#Memo.title IS NOT NULL", []))
        #expect(try translate(Field("money").hasPrefix("1")) == nil, "prefix on a number column never matches")
    }

    @Test("AND and OR parenthesise each operand and keep parameters in order")
    func boolean() throws {
        let p: QueryPredicate = .and([Field("money") >= 5, .or([Field("title") == "a", Field("title").isIn(["b", "c"])]), Field("done") == true])
        let (source, params) = try #require(try expr(p))
        #expect(source == "( #Memo.money >= ? ) AND ( ( #Memo.title = ? ) OR ( ( #Memo.title = ? OR #Memo.title = ? ) ) ) AND ( #Memo.done = ? )")
        #expect(params == [5, "a", "b", "c", 1])
    }

    @Test("not is pushed to the leaves (De Morgan) and keeps rows without the field")
    func negation() throws {
        #expect(try expr(!(Field("title") == "a"))! == ("( #Memo.title != ? OR #Memo.title IS NULL )", ["a"]))
        #expect(try expr(!(Field("title") != "a"))! == ("#Memo.title = ?", ["a"]))
        #expect(try expr(!(Field("money") < 5))! == ("( #Memo.money >= ? OR #Memo.money IS NULL )", [5]))
        #expect(try expr(!(Field("money") >= 5))! == ("( #Memo.money < ? OR #Memo.money IS NULL )", [5]))
        #expect(try expr(!Field("money").isIn([1]))! == ("( #Memo.money != ? OR #Memo.money IS NULL )", [1]))
        #expect(try expr(!Field("money").notIn([1]))! == ("#Memo.money = ?", [1]))
        #expect(try expr(!Field("title").exists())! == ("#Memo.title IS NULL", []))
        #expect(try expr(!Field("title").hasPrefix("a"))! == ("( #Memo.title NOT LIKE ? OR #Memo.title IS NULL )", ["a%"]))
        #expect(try expr(!(Field("money") == 1 && Field("title") == "a"))!
                == ("( ( #Memo.money != ? OR #Memo.money IS NULL ) ) OR ( ( #Memo.title != ? OR #Memo.title IS NULL ) )", [1, "a"]))
        #expect(try expr(!(!(Field("money") == 1)))! == ("#Memo.money = ?", [1]))
    }

    @Test("values are converted by the column type: bool 1/0, dates epoch ms, doubles as JS-style text")
    func parameterConversion() throws {
        let due = Date(timeIntervalSince1970: 1_390_085_336.544)
        #expect(try expr(Field("done") == false)!.1 == [0])
        #expect(try expr(Field("due") < .date(due))!.1 == [.int(1_390_085_336_544)])
        #expect(try expr(Field("rate") == 5.5)!.1 == ["5.5"])
        #expect(try expr(Field("rate") == 5)!.1 == ["5"], "JS-style text (JS v2.3 formatColumns: 5 + \"\")")
        // Arrays are kept as JSON text another client may have written differently: comparing them is refused.
        #expect(throws: MBaaSError.self) { try expr(Field("tags") == ["a", "b"]) }
        #expect(try expr(Field("id") == "Memo_1")! == ("#Memo.objectId = ?", ["Memo_1"]))
        #expect(try expr(Field("createdAt") >= .date(due))! == ("#Memo.serverCreateTime >= ?", ["2014-01-18T22:48:56.544Z"]))
    }

    @Test("a value of another type than the column never matches; its negation always does")
    func typeMismatch() throws {
        #expect(try translate(Field("money") == "five") == nil)
        #expect(try translate(Field("money") != "five")?.expression == nil)
        #expect(try translate(Field("money") == 5.5) == nil)
    }

    @Test("without a schema, values go by their own type")
    func unknownSchema() throws {
        let body = try #require(try AppPotQueryTranslator.translate(
            Query("Other", predicate: Field("n") > 2.5 && Field("b") == true), schema: nil, skip: 0, limit: 10))
        #expect(body.params == [2.5, 1])
    }

    @Test("unsupported operators, keys and comparisons are refused")
    func refused() throws {
        #expect(throws: MBaaSError.self) { try translate(Field("title").matches("^a")) }
        #expect(throws: MBaaSError.self) { try translate(Field("title").containsAll(["a"])) }
        for p in [Field("a.b") == 1, Field("rate") > 1.5, Field("tags") < "x"] {
            let error = try #require(throws: MBaaSError.self) { try translate(p) }
            #expect(error.kind == .unsupported)
        }
        for key in ["title; DROP TABLE Memo", "x'y", "scopeType", "version", ""] {
            let error = try #require(throws: MBaaSError.self) { try translate(Field(key) == 1) }
            #expect(error.kind == .invalidRequest, "\(key)")
        }
    }

    @Test("orderBy with a stable objectId tiebreak; double columns cannot be sorted")
    func ordering() throws {
        let body = try #require(try translate(nil, sort: SortKey.list("-money,title")))
        #expect(body.orderBy == [.init(column: "#Memo.money", descending: true), .init(column: "#Memo.title", descending: false),
                                 .init(column: "#Memo.objectId", descending: false)])
        #expect(try translate(nil, sort: [SortKey("id", ascending: false)])?.orderBy == [.init(column: "#Memo.objectId", descending: true)])
        let error = try #require(throws: MBaaSError.self) { try translate(nil, sort: [SortKey("rate")]) }
        #expect(error.kind == .unsupported)
    }

    @Test("range.offset is 1-based; the whole body has the documented shape and decodes back")
    func body() throws {
        let body = try #require(try translate(Field("money") <= 5 && Field("done") == true, sort: [SortKey("money", ascending: false)],
                                              skip: 20, limit: 10))
        let expected = try JSON.parse("""
            {"from":{"phyName":"Memo","alias":"Memo"},
             "where":{"expression":{"source":"( #Memo.money <= ? ) AND ( #Memo.done = ? )","params":[5,1]}},
             "orderBy":[{"column":"#Memo.money","type":"desc"},{"column":"#Memo.objectId","type":"asc"}],
             "range":{"limit":10,"offset":21}}
            """)
        #expect(body.json == expected)
        #expect(try AppPotQueryBody(json: body.json) == body)
        let count = try #require(try AppPotQueryTranslator.translateCount(Query("Memo", predicate: Field("money") > 1, limit: 3), schema: schema))
        let expectedCount = try JSON.parse(##"{"from":{"phyName":"Memo","alias":"Memo"},"where":{"expression":{"source":"#Memo.money > ?","params":[1]}}}"##)
        #expect(count.json == expectedCount)
    }
}
