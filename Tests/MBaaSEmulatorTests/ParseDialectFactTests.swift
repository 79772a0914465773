import Foundation
import MBaaSCore
import MBaaSEmulator
import MBaaSParseWire
import Testing

/// The Parse dialect names the documented rule each answer follows where it builds the answer (issue 33.3), so a
/// cassette recorded from it carries facts nobody stamped afterwards.
@Suite("Parse dialect facts")
struct ParseDialectFactTests {
    static let header = "X-MBaaS-Fact"

    @Test("each answer names its route's fact, for success and failure apart, and only when the configuration asks")
    func namedWhereAnswered() async throws {
        let dialect = try makeParseDialect { $0.namesFacts = true }
        func fact(_ request: TransportRequest) async -> (Int, String?) {
            let response = await dialect.respond(to: request)
            return (response.status.code, response.headers[Self.header])
        }
        let created = await fact(parseRequest(dialect, .post, "/classes/Memo", json: .object(["title": "x"])))
        #expect(created.0 == 201)
        #expect(created.1?.hasPrefix("[doc] parse.md Objects: POST 201 {objectId, createdAt} with Location") == true, "\(created)")
        let missing = await fact(parseRequest(dialect, .get, "/classes/Memo/nothing"))
        #expect(missing.0 >= 400)
        #expect(missing.1?.hasPrefix("[doc] parse.md Error codes: {code, error}; 101 object not found") == true, "\(missing)")
        let found = await fact(parseRequest(dialect, .get, "/classes/Memo"))
        #expect(found.0 == 200)
        #expect(found.1?.hasPrefix("[doc] parse.md Queries: where/order/limit/skip/keys/count=1") == true, "\(found)")
        let badQuery = await fact(parseRequest(dialect, .get, "/classes/Memo?where=%7Bx"))
        #expect(badQuery.0 >= 400)
        #expect(badQuery.1 == "[doc] parse.md Error codes: 102 invalid query; 209 invalid session", "\(badQuery)")
        let signUp = await fact(parseRequest(dialect, .post, "/users", json: .object(["username": "ann", "password": "pw"])))
        #expect(signUp.0 == 201)
        #expect(signUp.1?.hasPrefix("[doc] parse.md Users and sessions: POST /users 201") == true, "\(signUp)")
        let logIn = await fact(parseRequest(dialect, .post, "/login", json: .object(["username": "ann", "password": "wrong"])))
        #expect(logIn.0 >= 400)
        #expect(logIn.1?.hasPrefix("[doc] parse.md Users and sessions: POST /login") == true, "\(logIn)")
        var wrongKey = parseRequest(dialect, .get, "/classes/Memo")
        wrongKey.headers[ParseHeader.restAPIKey] = "not-the-key"
        let refused = await fact(wrongKey)
        #expect(refused.0 == 403)
        #expect(refused.1?.hasPrefix("[doc] parse.md Transport and authentication: a wrong application id or key is 403") == true)
        let unknown = await fact(parseRequest(dialect, .get, "/nowhere"))
        #expect(unknown.0 == 404)
        #expect(unknown.1 == "[inferred] an unknown path is Express's 404")

        let quiet = try makeParseDialect()
        let plain = await quiet.respond(to: parseRequest(quiet, .post, "/classes/Memo", json: .object(["title": "x"])))
        #expect(plain.status == 201)
        #expect(plain.headers[Self.header] == nil)
    }
}
