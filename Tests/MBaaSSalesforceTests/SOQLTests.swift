import Foundation
import MBaaSCore
import MBaaSTesting
import Testing

@testable import MBaaSSalesforceWire

/// The SOQL printer and parser, and the neutral query both ways.
@Suite struct SOQLTests {
    /// Strings no value may break out of: quotes, backslashes, wildcards, line breaks, control characters, unicode.
    static let hostile: [String] = [
        "O'Brien", "\\", "\\'", "' OR Name != '", "a\\' OR Id != null --", "100%", "_x_", "%_\\%\\_", "line1\nline2",
        "cr\r\ttab", "\u{08}\u{0C}", "\"double\"", "日本語", "emoji 😀👍🏽", "", " ", "e\u{301}", "\u{01}nul?",
        "Robert'); DELETE FROM Account; --",
    ]

    @Test func hostileValuesRoundTripExactly() throws {
        for value in Self.hostile {
            let q = SOQLQuery(selection: .fields(["Id"]), from: "Account", condition: .compare("Name", .eq, .string(value)))
            let parsed = try SOQLQuery.parse(q.text)
            #expect(parsed == q, "\(value.debugDescription) printed as \(q.text)")
            // One comparison, whatever the value holds: nothing escaped into the query.
            guard case .compare("Name", .eq, .string(let back)) = parsed.condition else {
                Issue.record("\(value.debugDescription) became \(String(describing: parsed.condition))"); continue
            }
            #expect(back == value)
            let inList = SOQLQuery(selection: .count, from: "Account", condition: .notIn("Name", [.string(value), .string(value + "'")]))
            #expect(try SOQLQuery.parse(inList.text) == inList)
        }
        #expect(SOQLValue.quote("it's a \\ \"x\"\n") == #"'it\'s a \\ \"x\"\n'"#)
        #expect(SOQLValue.quote("100%_") == "'100%_'", "wildcards are literal outside LIKE")
    }

    /// Every query the translator emits parses back to the same meaning: translate, print, parse, translate back.
    @Test func printedQueriesParseBackToTheSameMeaning() throws {
        let when = try #require(SalesforceDateTime.parse("2024-01-02T03:04:05.678+0000"))
        var predicates: [QueryPredicate] = []
        predicates.append(.compare("Name", .eq, "x"))
        predicates.append(.compare("Name", .ne, "O'Brien\\"))
        predicates.append(.compare("Amount", .lt, 5))
        predicates.append(.compare("Amount", .lte, -2.5))
        predicates.append(.compare("Amount", .gt, 1e-7))
        predicates.append(.compare("Amount", .gte, 1e20))
        predicates.append(.compare("IsActive", .eq, true))
        predicates.append(.compare("Closed", .eq, false))
        predicates.append(.compare("updatedAt", .gt, .date(when)))
        predicates.append(.compare("createdAt", .lte, .date(when)))
        predicates.append(.compare("id", .eq, "001B000000X1YZaIAN"))
        predicates.append(.in("Stage", ["a", "b'c", "%"]))
        predicates.append(.notIn("Stage", [1, 2.5, "x", .null]))
        predicates.append(.exists("Email", true))
        predicates.append(.exists("Email", false))
        predicates.append(.compare("Note", .eq, .null))
        predicates.append(.not(.compare("Name", .eq, "x")))
        let a: QueryPredicate = .compare("a", .eq, 1), b: QueryPredicate = .compare("b", .eq, 2)
        let c: QueryPredicate = .compare("c", .eq, "3"), d: QueryPredicate = .compare("d", .eq, 4)
        let e: QueryPredicate = .compare("e", .eq, 5)
        predicates.append(.or([.and([a, b]), .and([c, .not(.or([d, e]))])]))
        predicates.append(.and([a, .or([b, c]), .not(.and([d, e]))]))
        predicates += Self.hostile.map { Field("Name") == .string($0) }
        for p in predicates {
            let query = Query("Account", predicate: p, sort: [SortKey("Name"), SortKey("createdAt", ascending: false)],
                              limit: 25, skip: 50)
            let soql = try SOQLTranslator.soql(for: query, fields: ["Name", "Amount"])
            let parsed = try SOQLQuery.parse(soql.text)
            #expect(parsed == soql, "\(soql.text)")
            let back = try SOQLTranslator.query(for: parsed)
            #expect(back.predicate == Self.normalised(p), "\(soql.text)")
            #expect(back.sort == query.sort && back.limit == 25 && back.skip == 50 && back.className == "Account")
            #expect(back.keys == ["Name", "Amount"])
        }
        let count = try SOQLTranslator.countSOQL(for: Query("Account", predicate: Field("Name") == "x", limit: 5))
        #expect(count.text == "SELECT COUNT() FROM Account WHERE Name = 'x'")
        #expect(try SOQLQuery.parse(count.text) == count)
    }

    /// The server reads `x = null` as exists:false and `x != null` as exists:true.
    static func normalised(_ p: QueryPredicate) -> QueryPredicate {
        switch p {
        case .compare(let k, .eq, .null): .exists(k, false)
        case .compare(let k, .ne, .null): .exists(k, true)
        case .and(let ps): .and(ps.map(normalised))
        case .or(let ps): .or(ps.map(normalised))
        case .not(let q): .not(normalised(q))
        default: p
        }
    }

    @Test func printedTextIsExact() throws {
        let when = try #require(SalesforceDateTime.parse("2024-01-02T03:04:05.000+0000"))
        let either: QueryPredicate = .or([.compare("Name", .eq, "a'b"), .compare("Amount", .gte, 1e-7)])
        let q = Query("Account", predicate: .and([either, .compare("updatedAt", .gt, .date(when))]),
                      sort: [SortKey("Name", ascending: false)], limit: 10)
        #expect(try SOQLTranslator.soql(for: q, fields: ["Name"]).text
                == #"SELECT Id, CreatedDate, LastModifiedDate, Name FROM Account WHERE (Name = 'a\'b' OR Amount >= 0.0000001) AND LastModifiedDate > 2024-01-02T03:04:05.000+0000 ORDER BY Name DESC LIMIT 10"#)
        #expect(try SOQLTranslator.soql(for: Query("A", predicate: !(Field("x") == 1)), fields: []).text
                == "SELECT Id, CreatedDate, LastModifiedDate FROM A WHERE NOT (x = 1)")
        #expect(SOQLValue.plainDecimal(1e20) == "100000000000000000000.0")
        #expect(SOQLValue.plainDecimal(-1.25e-5) == "-0.0000125")
        #expect(SOQLValue.plainDecimal(2.5) == "2.5")
    }

    /// A field name that is not an identifier is refused before anything is sent; unsupported operators are
    /// refused, never approximated.
    @Test func injectionThroughNamesAndUnsupportedOperatorsAreRefused() async throws {
        for bad in ["Name = 'x' OR Id", "Name--", "a.b", "Name)", "", "Na me"] {
            let e = await expectError(.invalidRequest) { try SOQLTranslator.soql(for: Query("Account", predicate: Field(bad) == 1), fields: []) }
            #expect(e?.refusedField == bad)
            await expectError(.invalidRequest) { try SOQLTranslator.soql(for: Query("Account", sort: [SortKey(bad)]), fields: []) }
            await expectError(.invalidRequest) { try SOQLTranslator.soql(for: Query("Account", keys: [bad]), fields: []) }
            await expectError(.invalidRequest) { try SOQLTranslator.soql(for: Query("Account"), fields: [bad]) }
        }
        await expectError(.invalidRequest) { try SOQLTranslator.soql(for: Query("Account WHERE Id != null"), fields: []) }
        let refused: [QueryPredicate] = [
            .prefix("Name", "a"), .regex("Name", "^a", options: ""), .containsAll("Tags", ["a"]),
            .compare("Owner", .eq, .pointer(Pointer(className: "User", objectId: "005"))), .compare("Blob", .eq, .bytes(Data([1]))),
        ]
        for p in refused {
            let e = await expectError(.unsupported) { try SOQLTranslator.soql(for: Query("Account", predicate: p), fields: []) }
            #expect(e?.message.hasPrefix("salesforce does not support") == true)
        }
        await expectError(.unsupported) { try SOQLTranslator.soql(for: Query("Account", skip: 2001), fields: []) }
        #expect(try SOQLTranslator.soql(for: Query("Account", skip: 2000), fields: []).offset == 2000)
        // The capabilities say the same as the translator.
        for op in [QueryOperator.prefix, .regex, .containsAll] { #expect(!SalesforceWire.capabilities.has(.operator(op))) }
        #expect(SalesforceWire.capabilities.note(for: .operator(.prefix))?.contains("case") == true)
    }

    /// Source: salesforce.md "Sync-down on the wire" (sdk: MobileSync's lower-case rewritten query with an unquoted
    /// `+0000` datetime) and "What a Salesforce emulator must get right".
    @Test func parsesWhatRealClientsSend() throws {
        let mobileSync = try SOQLQuery.parse("select Id, LastModifiedDate, Name from Account where LastModifiedDate > 2024-01-01T00:00:00.000+0000 and Name != null order by LastModifiedDate")
        #expect(mobileSync.selection == .fields(["Id", "LastModifiedDate", "Name"]))
        let jan1 = try #require(SalesforceDateTime.parse("2024-01-01T00:00:00.000+0000"))
        #expect(mobileSync.condition == .and([.compare("LastModifiedDate", .gt, .dateTime(jan1)), .compare("Name", .ne, .null)]))
        #expect(mobileSync.orderBy == [SOQLOrder("LastModifiedDate")])
        let simple = try SOQLQuery.parse("SELECT Id, Name FROM Contact WHERE LastName = 'Smith' AND Birthdate >= 1990-05-01 AND Owner.Name LIKE 'a\\_b%' AND Type <> 'x' AND Amount IN (1, -2.5) ORDER BY Name ASC NULLS LAST, Id DESC LIMIT 10 OFFSET 20")
        let may1 = try #require(SalesforceDateTime.parseDate("1990-05-01"))
        #expect(simple.condition == .and([
            .compare("LastName", .eq, .string("Smith")), .compare("Birthdate", .gte, .date(may1)),
            .like("Owner.Name", SOQLLikePattern([.literal("a"), .literal("_"), .literal("b"), .anyRun])),
            .compare("Type", .ne, .string("x")), .in("Amount", [.int(1), .double(-2.5)]),
        ]))
        #expect(simple.orderBy == [SOQLOrder("Name", nullsFirst: false), SOQLOrder("Id", ascending: false)])
        #expect(simple.limit == 10 && simple.offset == 20)
        #expect(try SOQLQuery.parse("SELECT COUNT() FROM Account").selection == .count)
        #expect(try SOQLQuery.parse("select count() from Account where Name like 'A%'").condition
                == .like("Name", SOQLLikePattern([.literal("A"), .anyRun])))
        #expect(try SOQLQuery.parse("SELECT Id FROM A WHERE NOT Name = 'x' AND x NOT IN ('a')").condition
                == .and([.not(.compare("Name", .eq, .string("x"))), .notIn("x", [.string("a")])]))
        #expect(try SOQLQuery.parse("SELECT Id FROM A WHERE d = 2024-01-02T03:04:05Z OR d = 2024-01-02T12:04:05+09:00").condition
                == .or([.compare("d", .eq, .dateTime(jan1.addingTimeInterval(86400 + 3 * 3600 + 245))),
                        .compare("d", .eq, .dateTime(jan1.addingTimeInterval(86400 + 3 * 3600 + 245)))]))
        // LIKE becomes an anchored case-insensitive regex on the server.
        let like = try SOQLTranslator.query(for: SOQLQuery.parse("SELECT Id FROM A WHERE Name LIKE 'a.b\\%_%'"))
        #expect(like.predicate == .regex("Name", "^a\\.b%..*$", options: "is"))
    }

    /// Anything outside the subset answers MALFORMED_QUERY with the position (Row/Column, 1-based).
    @Test func malformedQueriesNameThePosition() throws {
        let cases: [(String, Int, String)] = [
            ("SELEKT Id FROM Account", 1, "unexpected token: 'SELEKT'"),
            ("SELECT Id FROM Account WHERE Name = 'x", 37, "unterminated string literal"),
            ("SELECT Id FROM Account WHERE a = 1 AND b = 2 OR c = 3", 46, "may not be mixed"),
            ("SELECT Id FROM Account WHERE Name = :name", 37, "unexpected token: ':'"),
            ("SELECT Id FROM Account WHERE Name = 'a\\qb'", 39, "invalid escape sequence '\\q'"),
            ("SELECT Id FROM Account WHERE Name = 'a\\%'", 37, "outside a LIKE pattern"),
            ("SELECT Id FROM Account LIMIT -1", 30, "non-negative integer"),
            ("SELECT Id FROM Account WHERE CreatedDate = TODAY", 44, "date literals such as TODAY"),
            ("SELECT Id FROM Account WHERE d > 2024-13-01", 34, "invalid date or datetime literal"),
            ("SELECT Id, FROM Account", 12, "expecting a field name"),
            ("SELECT Id FROM Account GROUP BY Name", 24, "unexpected token: 'GROUP'"),
            ("SELECT Id FROM Account WHERE Name IN ()", 39, "expecting a value"),
            ("SELECT Id FROM Account WHERE (a = 1", 36, "expecting ')'"),
        ]
        for (text, column, fragment) in cases {
            do throws(SOQLParseError) {
                let q = try SOQLQuery.parse(text)
                Issue.record("\(text) parsed as \(q)")
            } catch {
                #expect(error.column == column && error.row == 1, "\(text): \(error)")
                #expect(error.message.contains(fragment), "\(text): \(error.message)")
                let e = error.mbaasError
                #expect(e.kind == .invalidRequest && e.vendorCode == "MALFORMED_QUERY" && e.httpStatus == 400)
                #expect(e.message.hasSuffix("at Row:1:Column:\(column)"))
            }
        }
        do throws(SOQLParseError) { _ = try SOQLQuery.parse("SELECT Id\nFROM Account\nWHERE Name = ?"); Issue.record("parsed") } catch {
            #expect(error.row == 3 && error.column == 14)
        }
    }
}
