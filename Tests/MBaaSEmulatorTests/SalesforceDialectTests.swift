import Foundation
import MBaaSCore
import MBaaSEmulator
import MBaaSLocal
import MBaaSTesting
import Testing

/// The Salesforce dialect in-process (``EmulatorTransport``): each answer's status and body as
/// `shared/reference/salesforce.md` records them (the section is named in each test).
@Suite("Salesforce dialect")
struct SalesforceDialectTests {
    /// A clock tests move forward.
    final class Clock: @unchecked Sendable {
        private let lock = NSLock()
        private var now = Date(timeIntervalSince1970: 1_750_000_000)
        func read() -> Date { lock.withLock { now } }
        func advance(_ seconds: TimeInterval) { lock.withLock { now += seconds } }
    }

    struct Org {
        let dialect: SalesforceDialect
        let transport: EmulatorTransport
        let clock: Clock
        let base = "https://127.0.0.1:8443"

        func send(_ method: TransportRequest.Method, _ path: String, json: JSONObject? = nil, form: String? = nil, token: String? = nil,
                  headers: [(String, String)] = []) async throws -> TransportResponse {
            var fields = HTTPFields()
            if let token { fields[.authorization] = "Bearer \(token)" }
            if json != nil { fields[.contentType] = "application/json" }
            if form != nil { fields[.contentType] = "application/x-www-form-urlencoded" }
            for (k, v) in headers { fields[HTTPField.Name(k)!] = v }
            let body = json.map { JSON.object($0).data() } ?? form.map { Data($0.utf8) }
            return try await transport.send(TransportRequest(method: method, url: URL(string: base + path)!, headers: fields, body: body))
        }

        func token(password: String = "alice-pass-1", secret: String = "secret-1") async throws -> TransportResponse {
            try await send(.post, "/services/oauth2/token",
                           form: "grant_type=password&client_id=client-1&client_secret=\(secret)&username=alice%40example.com&password=\(password)")
        }

        func accessToken() async throws -> String {
            try #require(try JSON.parse(try await token().body)["access_token"]?.stringValue)
        }
    }

    static func org(lifetime: Int = 7200) async throws -> Org {
        let store = try LocalBackend.inMemory(options: LocalBackend.Options(passwordHashing: .testing))
        let clock = Clock()
        var configuration = SalesforceDialect.Configuration(clientId: "client-1", clientSecret: "secret-1")
        configuration.tokenLifetime = .seconds(lifetime)
        configuration.maxDocumentSize = 64 << 10
        let dialect = SalesforceDialect(store: store, configuration: configuration, clock: { clock.read() })
        try await dialect.provision([.init(username: "alice@example.com", password: "alice-pass-1", firstName: "Alice", lastName: "Liddell")])
        return Org(dialect: dialect, transport: EmulatorTransport(dialect), clock: clock)
    }

    static func json(_ response: TransportResponse) throws -> JSON { try JSON.parse(response.body) }

    @Test("token endpoint: the password grant's body; invalid_client_id, invalid_client, invalid_grant as 400 {error, error_description} (Authentication)")
    func tokenEndpoint() async throws {
        let org = try await Self.org()
        let ok = try await org.token()
        #expect(ok.status.code == 200)
        let body = try Self.json(ok)
        #expect(body["token_type"] == "Bearer" && body["instance_url"] == .string(org.base))
        #expect(body["issued_at"]?.stringValue == "1750000000000")
        #expect(body["id"]?.stringValue?.hasPrefix(org.base + "/id/00DMBAASKIT0001/") == true)
        #expect(body["signature"]?.stringValue?.isEmpty == false && body["refresh_token"]?.stringValue != nil)
        let badSecret = try await org.token(secret: "nope")
        #expect(try badSecret.status.code == 400 && (try Self.json(badSecret)) == .object(["error": "invalid_client", "error_description": "invalid client credentials"]))
        let badPassword = try await org.token(password: "nope")
        #expect(try badPassword.status.code == 400 && (try Self.json(badPassword)) == .object(["error": "invalid_grant", "error_description": "authentication failure"]))
        let badClient = try await org.send(.post, "/services/oauth2/token", form: "grant_type=password&client_id=other&client_secret=secret-1&username=a&password=b")
        #expect(try badClient.status.code == 400 && (try Self.json(badClient))["error"] == "invalid_client_id")
        // A refresh answers a new access token and no refresh token.
        let refresh = try #require(body["refresh_token"]?.stringValue)
        let refreshed = try await org.send(.post, "/services/oauth2/token", form: "grant_type=refresh_token&client_id=client-1&refresh_token=\(refresh)")
        #expect(try refreshed.status.code == 200 && (try Self.json(refreshed))["refresh_token"] == nil)
        let unknown = try await org.send(.post, "/services/oauth2/token", form: "grant_type=refresh_token&client_id=client-1&refresh_token=nope")
        #expect(try unknown.status.code == 400 && (try Self.json(unknown))["error"] == "invalid_grant")
    }

    @Test("no token, a wrong one, an expired one, a revoked one: 401 [{message, errorCode: INVALID_SESSION_ID}] (REST error shape)")
    func sessions() async throws {
        let org = try await Self.org(lifetime: 60)
        let expected: JSON = [.object(["message": "Session expired or invalid", "errorCode": "INVALID_SESSION_ID"])]
        for token in [nil, "wrong"] as [String?] {
            let r = try await org.send(.get, "/services/data/v62.0/query?q=SELECT+Id+FROM+Account", token: token)
            #expect(try r.status.code == 401 && (try Self.json(r)) == expected)
        }
        let token = try await org.accessToken()
        #expect(try await org.send(.get, "/services/data/v62.0/query?q=SELECT+Id+FROM+Account", token: token).status.code == 200)
        org.clock.advance(61)
        let expired = try await org.send(.get, "/services/data/v62.0/query?q=SELECT+Id+FROM+Account", token: token)
        #expect(try expired.status.code == 401 && (try Self.json(expired)) == expected)
        let other = try await org.accessToken()
        let revoked = try await org.send(.post, "/services/oauth2/revoke", form: "token=\(other)")
        #expect(revoked.status.code == 200 && revoked.body.isEmpty)
        #expect(try await org.send(.get, "/services/data/v62.0/sobjects/Account/x", token: other).status.code == 401)
        // userinfo: the OpenID body; without a valid token 403 Bad_OAuth_Token (the Mobile SDK's refresh trigger).
        let fresh = try await org.accessToken()
        let info = try Self.json(try await org.send(.get, "/services/oauth2/userinfo", token: fresh))
        #expect(info["preferred_username"] == "alice@example.com" && info["name"] == "Alice Liddell")
        let bad = try await org.send(.get, "/services/oauth2/userinfo", token: other)
        #expect(bad.status.code == 403 && String(decoding: bad.body, as: UTF8.self) == "Bad_OAuth_Token")
    }

    @Test("sObject CRUD: 201 {id,success,errors} with Location, GET with attributes, PATCH/DELETE 204, NOT_FOUND, ENTITY_IS_DELETED, Id in a body (sObject CRUD)")
    func crud() async throws {
        let org = try await Self.org()
        let token = try await org.accessToken()
        let created = try await org.send(.post, "/services/data/v62.0/sobjects/Account/", json: ["Name": "Acme", "Rank": 1], token: token)
        #expect(created.status.code == 201)
        let body = try Self.json(created)
        let id = try #require(body["id"]?.stringValue)
        #expect(body == .object(["id": .string(id), "success": true, "errors": []]))
        #expect(created.headers[.location] == "/services/data/v62.0/sobjects/Account/\(id)")
        let read = try Self.json(try await org.send(.get, "/services/data/v62.0/sobjects/Account/\(id)", token: token))
        #expect(read["attributes"] == .object(["type": "Account", "url": .string("/services/data/v62.0/sobjects/Account/\(id)")]))
        #expect(read["Name"] == "Acme" && read["Id"] == .string(id))
        #expect(read["LastModifiedDate"]?.stringValue?.hasSuffix("+0000") == true)
        let some = try Self.json(try await org.send(.get, "/services/data/v62.0/sobjects/Account/\(id)?fields=Rank", token: token))
        #expect(Set(some.objectValue?.keys ?? []) == ["attributes", "Id", "Rank"])
        let patched = try await org.send(.patch, "/services/data/v62.0/sobjects/Account/\(id)", json: ["Rank": 2], token: token)
        #expect(patched.status.code == 204 && patched.body.isEmpty)
        let withId = try await org.send(.post, "/services/data/v62.0/sobjects/Account", json: ["Id": "x", "Name": "B"], token: token)
        #expect(try withId.status.code == 400 && (try Self.json(withId))[0]?["errorCode"] == "INVALID_FIELD")
        let deleted = try await org.send(.delete, "/services/data/v62.0/sobjects/Account/\(id)", token: token)
        #expect(deleted.status.code == 204 && deleted.body.isEmpty)
        let again = try await org.send(.delete, "/services/data/v62.0/sobjects/Account/\(id)", token: token)
        #expect(try again.status.code == 404 && (try Self.json(again))[0]?["errorCode"] == "ENTITY_IS_DELETED")
        let missing = try await org.send(.get, "/services/data/v62.0/sobjects/Account/001000000000000AAA", token: token)
        #expect(try missing.status.code == 404 && (try Self.json(missing))[0]?["errorCode"] == "NOT_FOUND")
    }

    @Test("If-Unmodified-Since: 412 and untouched when changed after the date; 204 when not; 400 for a bad date (Conditional requests)")
    func ifUnmodifiedSince() async throws {
        let org = try await Self.org()
        let token = try await org.accessToken()
        let id = try #require(try Self.json(try await org.send(.post, "/services/data/v62.0/sobjects/Account", json: ["Name": "A"], token: token))["id"]?.stringValue)
        let before = "Mon, 01 Jan 2024 00:00:00 GMT", after = "Fri, 01 Jan 2100 00:00:00 GMT"
        let refused = try await org.send(.patch, "/services/data/v62.0/sobjects/Account/\(id)", json: ["Name": "B"], token: token,
                                         headers: [("If-Unmodified-Since", before)])
        #expect(refused.status.code == 412)
        #expect(try Self.json(try await org.send(.get, "/services/data/v62.0/sobjects/Account/\(id)", token: token))["Name"] == "A")
        let accepted = try await org.send(.patch, "/services/data/v62.0/sobjects/Account/\(id)", json: ["Name": "C"], token: token,
                                          headers: [("If-Unmodified-Since", after)])
        #expect(accepted.status.code == 204)
        let bad = try await org.send(.patch, "/services/data/v62.0/sobjects/Account/\(id)", json: ["Name": "D"], token: token,
                                     headers: [("If-Unmodified-Since", "yesterday")])
        #expect(bad.status.code == 400)
    }

    @Test("query: 2000-row pages with totalSize on each and nextRecordsUrl until done; batchSize; COUNT(); MALFORMED_QUERY with the position (Query)")
    func queryPages() async throws {
        let org = try await Self.org()
        let token = try await org.accessToken()
        let rows = 2101
        for start in stride(from: 0, to: rows, by: 200) {
            let records: [JSON] = (start..<min(start + 200, rows)).map { .object(["attributes": .object(["type": "Memo__c"]), "N__c": .int(Int64($0))]) }
            let r = try await org.send(.post, "/services/data/v62.0/composite/sobjects", json: ["allOrNone": true, "records": .array(records)], token: token)
            #expect(try r.status.code == 200 && (try Self.json(r)).arrayValue?.count == records.count)
        }
        let first = try Self.json(try await org.send(.get, "/services/data/v62.0/query/?q=SELECT+Id,+N__c+FROM+Memo__c", token: token))
        #expect(first["totalSize"] == .int(Int64(rows)) && first["done"] == false && first["records"]?.arrayValue?.count == 2000)
        let next = try #require(first["nextRecordsUrl"]?.stringValue)
        #expect(next.hasPrefix("/services/data/v62.0/query/"))
        let second = try Self.json(try await org.send(.get, next, token: token))
        #expect(second["totalSize"] == .int(Int64(rows)) && second["done"] == true && second["nextRecordsUrl"] == nil)
        #expect(second["records"]?.arrayValue?.count == rows - 2000)
        let all = (first["records"]?.arrayValue ?? []) + (second["records"]?.arrayValue ?? [])
        #expect(Set(all.compactMap { $0["N__c"]?.intValue }) == Set((0..<rows).map(Int64.init)))
        #expect(all.first?["attributes"]?["type"] == "Memo__c")
        let small = try Self.json(try await org.send(.get, "/services/data/v62.0/query?q=SELECT+Id+FROM+Memo__c+WHERE+N__c+%3C+500", token: token,
                                                     headers: [("Sforce-Query-Options", "batchSize=200")]))
        #expect(small["totalSize"] == 500 && small["records"]?.arrayValue?.count == 200 && small["done"] == false)
        let count = try Self.json(try await org.send(.get, "/services/data/v62.0/query?q=SELECT+COUNT()+FROM+Memo__c+WHERE+N__c+%3E%3D+2000", token: token))
        #expect(count == .object(["totalSize": 101, "done": true, "records": []]))
        let limited = try Self.json(try await org.send(.get, "/services/data/v62.0/query?q=SELECT+Id+FROM+Memo__c+LIMIT+5+OFFSET+2099", token: token))
        #expect(limited["totalSize"] == 2 && limited["records"]?.arrayValue?.count == 2)
        let malformed = try await org.send(.get, "/services/data/v62.0/query?q=SELEKT+Id+FROM+Memo__c", token: token)
        let error = try Self.json(malformed)
        #expect(malformed.status.code == 400 && error[0]?["errorCode"] == "MALFORMED_QUERY" && error[0]?["fields"] == nil)
        #expect(error[0]?["message"]?.stringValue?.contains("Row:1:Column:1") == true, "\(error)")
        let locator = try await org.send(.get, "/services/data/v62.0/query/01gnope-2000", token: token)
        #expect(try locator.status.code == 400 && (try Self.json(locator))[0]?["errorCode"] == "INVALID_QUERY_LOCATOR")
    }

    @Test("collections: one result per record with statusCode errors; allOrNone rolls every record back (Composite and sObject Collections)")
    func collections() async throws {
        let org = try await Self.org()
        let token = try await org.accessToken()
        let good: JSON = .object(["attributes": .object(["type": "Account"]), "Name": "ok"])
        let bad: JSON = .object(["attributes": .object(["type": "Account"]), "bad name": "x"])
        let atomic = try Self.json(try await org.send(.post, "/services/data/v62.0/composite/sobjects",
                                                      json: ["allOrNone": true, "records": [good, bad]], token: token))
        #expect(atomic[0]?["success"] == false && atomic[0]?["errors"]?[0]?["statusCode"] == "ALL_OR_NONE_OPERATION_ROLLED_BACK")
        #expect(atomic[1]?["errors"]?[0]?["statusCode"] == "INVALID_FIELD" && atomic[1]?["errors"]?[0]?["errorCode"] == nil)
        let none = try Self.json(try await org.send(.get, "/services/data/v62.0/query?q=SELECT+COUNT()+FROM+Account", token: token))
        #expect(none["totalSize"] == 0)
        let partial = try Self.json(try await org.send(.post, "/services/data/v62.0/composite/sobjects",
                                                       json: ["allOrNone": false, "records": [good, bad]], token: token))
        #expect(partial[0]?["success"] == true && partial[1]?["success"] == false)
        let id = try #require(partial[0]?["id"]?.stringValue)
        let removed = try Self.json(try await org.send(.delete, "/services/data/v62.0/composite/sobjects?ids=\(id)&allOrNone=false", token: token))
        #expect(removed == [.object(["id": .string(id), "success": true, "errors": []])])
        let tooMany = try await org.send(.post, "/services/data/v62.0/composite/sobjects",
                                         json: ["records": .array(Array(repeating: good, count: 201))], token: token)
        #expect(try tooMany.status.code == 400 && (try Self.json(tooMany))[0]?["errorCode"] == "EXCEEDED_ID_LIMIT")
    }

    @Test("ContentVersion: VersionData as base64 in, its URL in the record, the raw bytes from it (Files and describe)")
    func contentVersion() async throws {
        let org = try await Self.org()
        let token = try await org.accessToken()
        let bytes = Data([0, 1, 2, 250, 255])
        let created = try Self.json(try await org.send(.post, "/services/data/v62.0/sobjects/ContentVersion",
                                                       json: ["Title": "t", "PathOnClient": "t.bin", "VersionData": .string(bytes.base64EncodedString())], token: token))
        let id = try #require(created["id"]?.stringValue)
        let record = try Self.json(try await org.send(.get, "/services/data/v62.0/sobjects/ContentVersion/\(id)", token: token))
        let url = "/services/data/v62.0/sobjects/ContentVersion/\(id)/VersionData"
        #expect(record["VersionData"] == .string(url))
        let download = try await org.send(.get, url, token: token)
        #expect(download.status.code == 200 && download.body == bytes)
    }

    @Test("a body over the limit: 413 REQUEST_ENTITY_TOO_LARGE; an unknown path: 404 NOT_FOUND")
    func limits() async throws {
        let org = try await Self.org()
        let token = try await org.accessToken()
        let big = try await org.send(.post, "/services/data/v62.0/sobjects/Account", json: ["Name": .string(String(repeating: "x", count: 70 << 10))], token: token)
        #expect(try big.status.code == 413 && (try Self.json(big))[0]?["errorCode"] == "REQUEST_ENTITY_TOO_LARGE")
        let unknown = try await org.send(.get, "/services/nothing/here", token: token)
        #expect(try unknown.status.code == 404 && (try Self.json(unknown))[0]?["errorCode"] == "NOT_FOUND")
    }

    @Test("Composite: a create, an update and a delete in one allOrNone call answer 201/204/204 in order; a failing subrequest keeps its error, the others PROCESSING_HALTED, nothing written; 26 subrequests or a query subrequest are refused (Composite and sObject Collections)")
    func composite() async throws {
        let org = try await Self.org()
        let token = try await org.accessToken()
        let v = "/services/data/v62.0"
        func created(_ name: String) async throws -> String {
            let r = try await org.send(.post, v + "/sobjects/Account", json: ["Name": .string(name)], token: token)
            return try #require(try Self.json(r)["id"]?.stringValue)
        }
        func sub(_ method: String, _ url: String, _ reference: String, name: String? = nil) -> JSON {
            var o = JSONObject()
            o["method"] = .string(method)
            o["url"] = .string(url)
            o["referenceId"] = .string(reference)
            if let name { o["body"] = .object(["Name": .string(name)]) }
            return .object(o)
        }
        func call(_ subrequests: [JSON]) async throws -> TransportResponse {
            var body = JSONObject()
            body["allOrNone"] = .bool(true)
            body["compositeRequest"] = .array(subrequests)
            return try await org.send(.post, v + "/composite", json: body, token: token)
        }
        func count() async throws -> JSON? {
            try Self.json(try await org.send(.get, v + "/query?q=SELECT+COUNT()+FROM+Account", token: token))["totalSize"]
        }
        let a = try await created("A"), b = try await created("B")
        let ok = try await call([sub("POST", v + "/sobjects/Account", "c", name: "C"), sub("PATCH", v + "/sobjects/Account/" + a, "u", name: "A2"),
                                 sub("DELETE", v + "/sobjects/Account/" + b, "d")])
        #expect(ok.status.code == 200)
        let answers = try #require(try Self.json(ok)["compositeResponse"]?.arrayValue)
        let statuses = answers.map { $0["httpStatusCode"]?.intValue }
        #expect(statuses == [201, 204, 204] && answers.map { $0["referenceId"]?.stringValue } == ["c", "u", "d"], "\(answers)")
        let newId = try #require(answers.first?["body"]?["id"]?.stringValue)
        #expect(answers.first?["httpHeaders"]?["Location"]?.stringValue == v + "/sobjects/Account/" + newId)
        #expect(try Self.json(try await org.send(.get, v + "/sobjects/Account/" + a, token: token))["Name"] == "A2")
        #expect(try await org.send(.get, v + "/sobjects/Account/" + b, token: token).status.code == 404)

        // The delete of a deleted record fails: it keeps ENTITY_IS_DELETED, the create is PROCESSING_HALTED and not written.
        let before = try await count()
        let failed = try await call([sub("POST", v + "/sobjects/Account", "c2", name: "never"), sub("DELETE", v + "/sobjects/Account/" + b, "d2")])
        let halted = try #require(try Self.json(failed)["compositeResponse"]?.arrayValue)
        #expect(halted.map { $0["httpStatusCode"]?.intValue } == [400, 404], "\(halted)")
        let codes = halted.map { $0["body"]?[0]?["errorCode"]?.stringValue }
        #expect(codes == ["PROCESSING_HALTED", "ENTITY_IS_DELETED"], "\(halted)")
        let after = try await count()
        #expect(before == after && before?.intValue == 2)

        // Beyond 25 subrequests, or a subrequest other than sObject create/update/delete: 400 before anything is written.
        let many = (0..<26).map { sub("POST", v + "/sobjects/Account", "r\($0)", name: "x") }
        let tooMany = try await call(many)
        let tooManyBody = try Self.json(tooMany)
        #expect(tooMany.status.code == 400 && tooManyBody[0]?["errorCode"]?.stringValue == "INVALID_API_INPUT", "\(tooManyBody)")
        let query = try await call([sub("GET", v + "/query?q=SELECT+Id+FROM+Account", "q")])
        let queried = try #require(try Self.json(query)["compositeResponse"]?.arrayValue)
        #expect(queried.first?["httpStatusCode"]?.intValue == 400, "\(queried)")
        #expect(queried.first?["body"]?[0]?["errorCode"]?.stringValue == "INVALID_API_INPUT", "\(queried)")
        #expect(try await count()?.intValue == 2)
    }

}

extension JSON {
    /// The element at `index` of an array (`nil` for anything else or out of range).
    subscript(index: Int) -> JSON? {
        guard let a = arrayValue, a.indices.contains(index) else { return nil }
        return a[index]
    }
}
