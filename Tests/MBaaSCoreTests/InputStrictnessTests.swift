import Foundation
import Testing
@testable import MBaaSCore

/// Issue 32 point 12: input that would be dropped, rounded or misread is refused, naming what.
@Suite("Strict input: exact decimals, Date members, create fields, sort keys")
struct InputStrictnessTests {
    @Test("exactNumbers refuses a decimal a double would change, and keeps every one it can hold as written")
    func exactNumbers() throws {
        for kept in ["0.1", "-2.5", "1e-7", "1.5E+3", "123456789.12345679", "0.000", "100.0", "5e-324", "-0.0", "1.7976931348623157e308"] {
            #expect(throws: Never.self, "\(kept)") { try JSON.parse(kept, exactNumbers: true) }
        }
        for rounded in ["123456789.123456789", "0.12345678901234567890", "9007199254740993.0", "1.00000000000000001"] {
            #expect(throws: JSONParseError.self, "\(rounded)") { try JSON.parse(rounded, exactNumbers: true) }
            #expect(throws: Never.self, "without exactNumbers: \(rounded)") { try JSON.parse(rounded) }
        }
        do {
            _ = try JSON.parse(#"{"a":[1,123456789.123456789]}"#, exactNumbers: true)
            Issue.record("accepted")
        } catch {
            #expect(error.message.contains("would make it 123456789.12345679"), "\(error)")
        }
    }

    @Test("a Date with members other than iso is refused; create fields refuse operations and Pointers to paths")
    func valuesAndFields() throws {
        #expect(throws: MBaaSError.self) {
            try Value(json: JSON.parse(#"{"__type":"Date","iso":"2025-01-01T00:00:00.000Z","tz":"JST"}"#))
        }
        #expect(try Value(json: JSON.parse(#"{"__type":"Date","iso":"2025-01-01T00:00:00.000Z"}"#)) == .date(ISO8601.parse("2025-01-01T00:00:00.000Z")!))
        for (text, named) in [(#"{"n":{"__op":"Increment","amount":1}}"#, "n: {\"__op\":\"Increment\"}"),
                              (#"{"o":{"deep":[{"__op":"Delete"}]}}"#, "o.deep[0]"),
                              (#"{"p":{"__type":"Pointer","className":"../x","objectId":"a"}}"#, "'../x'"),
                              (#"{"p":[{"__type":"Pointer","className":"a/b","objectId":"a"}]}"#, "p[0]")] {
            do {
                _ = try Record.fields(fromJSONText: text)
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.kind == .invalidRequest && error.message.contains(named), "\(error.message)")
            }
        }
        #expect(try Record.fields(fromJSONText: #"{"p":{"__type":"Pointer","className":"_User","objectId":"a"},"d":0.1}"#).count == 2)
    }

    @Test("strict sort keys refuse empty, bare-sign and operator keys; the lenient list is unchanged")
    func sortKeys() throws {
        #expect(try SortKey.strictList("-money, title") == [SortKey("money", ascending: false), SortKey("title")])
        for bad in ["-", ",,,", "$x", "a,", "", "--a", "+"] {
            #expect(throws: MBaaSError.self, "\(bad)") { try SortKey.strictList(bad) }
        }
        #expect(SortKey.list("a,,b") == [SortKey("a"), SortKey("b")])
    }
}
