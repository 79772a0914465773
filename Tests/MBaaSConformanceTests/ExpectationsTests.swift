import MBaaSCore
import Testing
@testable import MBaaSConformance

/// Malformed expectations are mismatches, never silent passes.
@Suite struct ExpectationsTests {
    static let record: JSON = .object(["id": "r1", "fields": .object(["title": "a"])])

    @Test(arguments: [
        (#"{"absentFields":"title"}"#, "expect.absentFields must be an array of strings"),
        (#"{"absentFields":[1]}"#, "expect.absentFields must be an array of strings"),
        (#"{"present":{"id":true}}"#, "expect.present must be an array of strings"),
        (#"{"minPages":"two"}"#, "expect.minPages must be an integer"),
        (#"{"match":["id"]}"#, "expect.match must be an object"),
        (#"{"absentFields":["title"]}"#, "field 'title' should be absent"),
    ])
    func malformedOrFailingExpectationsAreMismatches(expect: String, message: String) throws {
        let object = try #require(try JSON.parse(expect).objectValue)
        #expect {
            try Expectations.check(object, against: Self.record)
        } throws: { error in
            (error as? Expectations.Mismatch)?.message.contains(message) == true
        }
    }

    @Test func absentFieldsNeedsARecord() throws {
        let object = try #require(try JSON.parse(#"{"absentFields":["x"]}"#).objectValue)
        #expect(throws: Expectations.Mismatch.self) { try Expectations.check(object, against: .object(["count": 3])) }
        #expect(throws: Never.self) { try Expectations.check(object, against: Self.record) }
    }
}
