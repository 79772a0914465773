import Foundation
import Testing
@testable import MBaaSCore

@Suite("JSON")
struct JSONTests {
    @Test func keepsIntegersAndDoublesApart() throws {
        #expect(try JSON.parse("5") == .int(5))
        #expect(try JSON.parse("5.0") == .double(5.0))
        #expect(try JSON.parse("5e0") == .double(5.0))
        #expect(try JSON.parse("-0.25") == .double(-0.25))
        #expect(JSON.double(5).printed() == "5.0")
        #expect(JSON.int(5).printed() == "5")
        #expect(try JSON.parse("9223372036854775807") == .int(Int64.max))
        // Beyond Int64 falls back to a double rather than failing.
        #expect(try JSON.parse("92233720368547758070") == .double(9.223372036854776e19))
    }

    @Test func keepsKeyOrderButComparesWithout() throws {
        let a = try JSON.parse(#"{"b":1,"a":2}"#)
        let b = try JSON.parse(#"{"a":2,"b":1}"#)
        #expect(a == b)
        #expect(a.printed() == #"{"b":1,"a":2}"#)
        #expect(a.printed(.sortedKeys) == #"{"a":2,"b":1}"#)
    }

    @Test func roundTripsStringsWithEscapesAndUnicode() throws {
        let text = #"{"s":"a\"b\\c\n\t\u0001 日本語 😀 \ud83d\ude00"}"#
        let parsed = try JSON.parse(text)
        #expect(parsed["s"]?.stringValue == "a\"b\\c\n\t\u{01} 日本語 😀 😀")
        #expect(try JSON.parse(parsed.printed()) == parsed)
    }

    @Test func prettyPrintingParsesBack() throws {
        let value: JSON = .object(["a": [1, 2.5, "x", nil, true], "b": .object(["c": .object([:])])])
        let pretty = value.printed(.pretty)
        #expect(pretty.contains("\n  \"a\": ["))
        #expect(try JSON.parse(pretty) == value)
    }

    @Test(arguments: [
        ("", "unexpected end of input"), ("{", "expected a key string"), (#"{"a" 1}"#, "expected ':'"),
        ("[1,]", "unexpected character"), ("tru", "expected 'true'"), ("01x", "unexpected trailing"),
        (#""abc"#, "unterminated string"), ("1.", "digits expected after '.'"), ("1e", "exponent digits"),
        (#""\ud800""#, "unpaired surrogate"), (#""\x""#, "invalid escape"), ("[1] 2", "trailing"),
    ])
    func rejectsMalformedInput(text: String, message: String) {
        #expect {
            try JSON.parse(text)
        } throws: { error in
            (error as? JSONParseError)?.message.contains(message) == true
        }
    }

    @Test func semanticEqualityTreatsWholeDoublesAsIntegers() throws {
        #expect(JSON.int(1) != JSON.double(1))
        #expect(JSON.int(1).semanticallyEquals(.double(1)))
        #expect(try JSON.parse(#"{"a":[1,{"b":2}]}"#).semanticallyEquals(try JSON.parse(#"{"a":[1.0,{"b":2.0}]}"#)))
        #expect(!JSON.int(1).semanticallyEquals(.double(1.5)))
    }

    @Test func rejectsPathologicalNesting() {
        let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        #expect(throws: JSONParseError.self) { try JSON.parse(deep) }
    }
}
