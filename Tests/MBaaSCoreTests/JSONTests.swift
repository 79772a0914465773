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
        #expect(try JSON.parse("-9223372036854775808") == .int(Int64.min))
        #expect(try JSON.parse("-0") == .int(0))
        #expect(try JSON.parse("92233720368547758070.0") == .double(9.223372036854776e19))
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
        ("[1,]", "unexpected character"), ("tru", "expected 'true'"), ("1x", "unexpected trailing"),
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

    // MARK: Nothing changes silently (issue 11): each is refused with an error naming the path

    static func failure(_ text: String) -> JSONParseError? {
        do { _ = try JSON.parse(text); return nil } catch { return error }
    }

    @Test(arguments: [
        ("9223372036854775808", "does not fit in 64 bits"), ("-9223372036854775809", "does not fit in 64 bits"),
        ("123456789012345678901234567890", "does not fit in 64 bits"),
        ("1e-400", "too small for a double"), ("-2.5e-999", "too small for a double"),
        ("1e400", "too large for a double"), ("-1.0e309", "too large for a double"),
        ("01", "leading zeros"), ("-01", "leading zeros"), ("00", "leading zeros"), ("0123.5", "leading zeros"),
    ])
    func refusesNumbersItCannotKeep(text: String, message: String) throws {
        let error = try #require(Self.failure(text))
        #expect(error.message.contains(message), "\(error)")
        #expect(error.path == "$")
        #expect(error.offset == 0)
    }

    @Test func keepsNumbersAtTheEdges() throws {
        #expect(try JSON.parse("0") == .int(0))
        #expect(try JSON.parse("0.5") == .double(0.5))
        #expect(try JSON.parse("0e-400") == .double(0))
        #expect(try JSON.parse("0.000e5") == .double(0))
        let subnormal = try #require(Double("1e-310"))
        #expect(subnormal > 0 && !subnormal.isNormal)
        #expect(try JSON.parse("1e-310") == .double(subnormal))   // subnormal, not zero: kept
        #expect(try JSON.parse("1.7976931348623157e308") == .double(.greatestFiniteMagnitude))
    }

    @Test func numberErrorsNameTheirPath() throws {
        let error = try #require(Self.failure(#"{"items":[{"price":1},{"price":123456789012345678901}]}"#))
        #expect(error.path == "$.items[1].price")
        #expect(error.description.contains("$.items[1].price"))
        #expect(error.description.contains("123456789012345678901"))
        let odd = try #require(Self.failure(#"{"a b":[01]}"#))
        #expect(odd.path == #"$["a b"][0]"#)
    }

    @Test func refusesARepeatedMemberName() throws {
        let error = try #require(Self.failure(#"{"items":[{"price":1,"price":2}]}"#))
        #expect(error.message == "the member name is repeated in this object")
        #expect(error.path == "$.items[0].price")
        #expect(error.offset == 21)   // the second "price"
        #expect(Self.failure(#"{"a":{"a":1},"b":{"a":1}}"#) == nil)   // the same name in different objects is fine
        // Names are Swift strings, equal when canonically equivalent: an object cannot hold both, so it is refused.
        #expect(Self.failure(#"{"é":1,"e\u0301":2}"#)?.message.contains("canonically equivalent to an earlier one") == true)
        #expect(Self.failure(#"{"a":1,"\u0061":2}"#)?.path == "$.a")     // an escape spelling the same name is the same name
    }

    @Test func refusesInvalidUTF8InsteadOfReplacingIt() throws {
        for bytes: [UInt8] in [
            [0x22, 0xFF, 0x22], [0x22, 0x61, 0xC3, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22],   // bad byte, truncated, surrogate
            [0x22, 0x5C, 0x6E, 0xE6, 0x97, 0x22],                                             // after an escape
            Array(#"{"k":""#.utf8) + [0xC0, 0xAF] + Array(#""}"#.utf8),                       // overlong '/'
        ] {
            #expect {
                try JSON.parse(Data(bytes))
            } throws: { error in
                (error as? JSONParseError)?.message.contains("invalid UTF-8") == true
            }
        }
        let error = try #require({ () -> JSONParseError? in
            do { _ = try JSON.parse(Data(Array(#"{"name":""#.utf8) + [0xFE] + Array(#""}"#.utf8))); return nil } catch let e as JSONParseError { return e } catch { return nil }
        }())
        #expect(error.path == "$.name")
        #expect(try JSON.parse(Data("\"日本 \\n 😀\"".utf8)) == .string("日本 \n 😀"))
    }

    // MARK: Ordered objects

    @Test func objectsKeepOrderThroughRemovalAndReplacement() throws {
        var o: JSONObject = ["c": 1, "a": 2, "b": 3]
        o["a"] = nil
        o["c"] = 10
        o["d"] = 4
        #expect(o.keys == ["c", "b", "d"])
        #expect(JSON.object(o).printed() == #"{"c":10,"b":3,"d":4}"#)
        #expect(o.removeValue(forKey: "b") == .int(3))
        #expect(o.count == 2 && o["b"] == nil)
        #expect(Array(o.map(\.key)) == ["c", "d"])
    }

    @Test func equalityAndHashIgnoreKeyOrder() throws {
        let a = try JSON.parse(#"{"x":1,"y":[true,{"p":null,"q":"s"}]}"#)
        let b = try JSON.parse(#"{"y":[true,{"q":"s","p":null}],"x":1}"#)
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(Set([a, b]).count == 1)
        #expect(a != (try JSON.parse(#"{"x":1,"y":[true,{"p":null,"q":"t"}]}"#)))
        #expect(JSON.object(["a": 1]) != JSON.object(["a": 1, "b": 2]))
    }

    @Test func printsDeterministicallyWithEscapes() throws {
        let value: JSON = .object(["z": "a\"b\\c\u{01}\u{1F}\n\r\t\u{08}\u{0C}/é", "a": [.int(-12), .double(0.1), .double(-0.0), .null]])
        #expect(value.printed() == #"{"z":"a\"b\\c\u0001\u001f\n\r\t\b\f/é","a":[-12,0.1,-0.0,null]}"#)
        #expect(value.printed(.sortedKeys) == #"{"a":[-12,0.1,-0.0,null],"z":"a\"b\\c\u0001\u001f\n\r\t\b\f/é"}"#)
        #expect(try JSON.parse(value.printed()) == value)
        #expect(JSON.int(Int64.min).printed() == "-9223372036854775808")
        #expect(JSON.double(.infinity).printed() == "null")
        #expect(String(decoding: value.data(), as: UTF8.self) == value.printed())
    }
}

@Suite("JSON numbers read without their text")
struct ExactDoubleTests {
    /// The fast path gives the same double as `Double(String)` (strtod) wherever it answers, for the shortest forms
    /// Swift prints, for forms with padding zeros, signs and exponents, and for random digit strings; and it leaves
    /// out what it cannot read exactly.
    @Test func agreesWithTheTextPathWhereverItAnswers() throws {
        var rng = SystemRandomNumberGenerator()
        var texts: [String] = ["0.0", "-0.0", "0e5", "1.5", "0.1", "0.05", "100.0", "1.50", "1e22", "1e-22", "-2.5e+3",
                               "123456789012345.6", "9007199254740993.0", "0.30000000000000004", "2.857142857142857",
                               "1e23", "1e-23", "4.9e-324", "1.7976931348623157e308", "1.0000000000000000000001"]
        for _ in 0..<20_000 {
            let bits = rng.next() & ~(UInt64(0x7FF) << 52) | (UInt64(Int.random(in: 990...1100, using: &rng)) << 52)
            texts.append(Double(bitPattern: bits).description)
            let digits = String((0..<Int.random(in: 1...19, using: &rng)).map { _ in "0123456789".randomElement(using: &rng)! })
            let point = Int.random(in: 0...digits.count, using: &rng)
            var text = String(digits.prefix(point)) + "." + String(digits.dropFirst(point))
            if text.hasPrefix(".") { text = "0" + text }
            if text.hasSuffix(".") { text += "0" }
            if Bool.random(using: &rng) { text += "e\(Int.random(in: -30...30, using: &rng))" }
            texts.append(Bool.random(using: &rng) ? "-" + text : text)
        }
        var answered = 0
        for text in texts {
            var copy = text
            let fast = copy.withUTF8 { JSONParser.exactDouble($0) }
            guard let fast else { continue }
            answered += 1
            let expected = try #require(Double(text), "\(text)")
            #expect(fast.bitPattern == expected.bitPattern, "\(text): \(fast) != \(expected)")
        }
        // Most of Swift's shortest forms and short decimals take the fast path; the rest fall back to the text.
        #expect(answered > texts.count / 3, "\(answered) of \(texts.count)")
        for outside in ["1e23", "1e-23", "4.9e-324", "1.7976931348623157e308", "1.0000000000000000000001", "9007199254740993.0"] {
            var copy = outside
            #expect(copy.withUTF8 { JSONParser.exactDouble($0) } == nil, "\(outside)")
        }
        // At the edges it answers: 2^53 itself, signed zeros, leading and trailing zeros, the largest exact power.
        for (inside, expected) in [("9007199254740992.0", 9007199254740992.0), ("-0e5", -0.0), ("0.000001", 0.000001),
                                   ("-1e-22", -1e-22), ("9007199254740992e22", 9007199254740992e22),
                                   ("1500.000", 1500.0), ("10000000000000000000000.0", 1e22), ("-0.0", -0.0)] {
            var copy = inside
            let fast = copy.withUTF8 { JSONParser.exactDouble($0) }
            #expect(fast?.bitPattern == expected.bitPattern, "\(inside): \(String(describing: fast))")
        }
    }

    /// Values parsed straight from stored text: numbers, literals, a `__type` key and keys of its length.
    @Test func neutralParserReadsNumbersLiteralsAndTypedKeys() throws {
        let value = try Value.parse(jsonText: #"{"a":1.25,"b":-3,"c":true,"d":false,"e":null,"amount":2.857142857142857,"#
            + #""when":{"__type":"Date","iso":"2024-03-31T23:59:59.123Z"},"__typo":"kept"}"#)
        guard case .object(let o) = value else { Issue.record("not an object"); return }
        #expect(o["a"] == .double(1.25) && o["b"] == .int(-3) && o["c"] == .bool(true) && o["d"] == .bool(false))
        #expect(o["e"] == .null && o["amount"] == .double(2.857142857142857) && o["__typo"] == .string("kept"))
        #expect(o["when"]?.dateValue == ISO8601.parse("2024-03-31T23:59:59.123Z"))
        // Bad scalars fail with the same message and offset as the plain JSON parser gives.
        for bad in ["tru", "-", "01", "1e999", "1e-999", "@", "nul", "-.5", "1.", "1e"] {
            let text = #"{"a":"# + bad + "}"
            var valueError: JSONParseError?, jsonError: JSONParseError?
            do { _ = try Value.parse(jsonText: text) } catch let e as JSONParseError { valueError = e } catch {}
            do { _ = try JSON.parse(text) } catch let e as JSONParseError { jsonError = e } catch {}
            #expect(valueError != nil && valueError?.message == jsonError?.message && valueError?.offset == jsonError?.offset,
                    "\(bad): \(String(describing: valueError)) vs \(String(describing: jsonError))")
        }
        #expect(throws: (any Error).self) { try Value.parse(jsonText: #"{"x":1,"__type":"Nope"}"#) }
    }
}
