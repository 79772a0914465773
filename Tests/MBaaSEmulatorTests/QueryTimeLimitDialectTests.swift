import Foundation
import MBaaSCore
import MBaaSEmulator
import MBaaSNCMB
import MBaaSParse
import MBaaSParseWire
import MBaaSTesting
import Testing

/// What each dialect answers when a query is stopped for time (the store's `$regex` budget, #33.9): Parse its
/// TIMEOUT code 124, NCMB (which documents no timeout-style code) the 400 E400000 of any bad query.
@Suite("Query time limit in the dialects")
struct QueryTimeLimitDialectTests {
    /// `(a|a)+c|!` over 26 `a`s backtracks for far longer than the store's 250 ms per value.
    static let slowPattern = "(a|a)+c|!"
    static let slowValue = String(repeating: "a", count: 26)

    @Test("Parse: a regex stopped for time answers 400 code 124 (TIMEOUT); a bad regex is still 102")
    func parseAnswersTimeout() async throws {
        let dialect = try makeParseDialect()
        let transport = EmulatorTransport(dialect)
        let created = try await transport.send(parseRequest(dialect, .post, "/classes/Memo", json: .object(["s": .string(Self.slowValue)])))
        #expect(created.status.code == 201)

        let slow = try URL.build(base: "http://127.0.0.1:8080", path: dialect.configuration.mount + "/classes/Memo",
                                 query: [("where", #"{"s":{"$regex":"\#(Self.slowPattern)"}}"#)])
        var request = parseRequest(dialect, .get, "/classes/Memo")
        request.url = slow
        let answer = try await transport.send(request)
        #expect(answer.status.code == 400)
        #expect(parseCode(answer) == 124)

        let client = try await parseClient(dialect)
        let error = await expectError(.unavailable) {
            try await client.queryPage(Query("Memo", predicate: .regex("s", Self.slowPattern, options: "")))
        }
        #expect(error?.vendorCode == "124")

        let bad = try URL.build(base: "http://127.0.0.1:8080", path: dialect.configuration.mount + "/classes/Memo",
                                query: [("where", #"{"s":{"$regex":"("}}"#)])
        request.url = bad
        #expect(parseCode(try await transport.send(request)) == 102)
    }

    @Test("NCMB: a regex stopped for time answers 400 E400000, as any query the server refuses")
    func ncmbKeeps400() async throws {
        let dialect = try makeDialect()
        let ncmb = client(dialect)
        _ = try await ncmb.create(Record(className: "Memo", fields: ["s": .string(Self.slowValue)]))
        let error = await expectError(.invalidRequest) {
            try await ncmb.queryPage(Query("Memo", predicate: .regex("s", Self.slowPattern, options: "")))
        }
        #expect(error?.httpStatus == 400)
        #expect(error?.vendorCode == "E400000")
        #expect(error?.message.contains("took more than 250 ms") == true)
    }
}
