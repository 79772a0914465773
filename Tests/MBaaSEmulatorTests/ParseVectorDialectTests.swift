import Foundation
import MBaaSCore
import MBaaSEmulator
import MBaaSParseWire
import Testing

/// The Parse REST guide's own request examples (parse-community/docs, `_includes/rest/*.md`; the same vectors the
/// client's tests encode in `Tests/MBaaSParseTests/ParseWireTests.swift`) sent to the Parse dialect as the guide
/// writes them, and its answers checked against the guide's response shapes. Each vector names its section.
@Suite("Parse dialect answers the REST guide's examples")
struct ParseVectorDialectTests {
    func send(_ dialect: ParseDialect, _ method: TransportRequest.Method, _ path: String, _ body: String? = nil,
              token: String? = nil, query: [(String, String)] = []) async throws -> (TransportResponse, JSON) {
        var request = parseRequest(dialect, method, path, json: try body.map { try JSON.parse($0) }, token: token)
        if !query.isEmpty {
            request.url = try URL.build(base: "http://127.0.0.1:8080", path: dialect.configuration.mount + path, query: query)
        }
        let response = try await EmulatorTransport(dialect).send(request)
        return (response, (try? JSON.parse(response.body)) ?? .null)
    }

    func keys(_ json: JSON) -> Set<String> { Set(json.objectValue?.keys ?? []) }

    @Test("Objects: create, retrieve, update, counters, arrays, delete")
    func objects() async throws {
        let d = try makeParseDialect()
        // Objects > Creating Objects: 201, Location, {"createdAt","objectId"}.
        let (created, c) = try await send(d, .post, "/classes/GameScore", #"{"score":1337,"playerName":"Sean Plott","cheatMode":false}"#)
        #expect(created.status == 201 && keys(c) == ["createdAt", "objectId"])
        let id = try #require(c["objectId"]?.stringValue)
        #expect(created.headers["Location"] == "http://127.0.0.1:8080/parse/classes/GameScore/\(id)")
        #expect(c["createdAt"]?.stringValue.flatMap(ISO8601.parse) != nil)
        // Objects > Retrieving Objects: the fields and objectId, createdAt, updatedAt (no ACL when none was set).
        let (_, got) = try await send(d, .get, "/classes/GameScore/\(id)")
        #expect(keys(got) == ["score", "playerName", "cheatMode", "createdAt", "updatedAt", "objectId"])
        #expect(got["score"] == 1337 && got["playerName"] == "Sean Plott" && got["cheatMode"] == false)
        // Objects > Updating Objects: {"updatedAt"}.
        let (updated, u) = try await send(d, .put, "/classes/GameScore/\(id)", #"{"score":73453}"#)
        #expect(updated.status == 200 && keys(u).contains("updatedAt"))
        // Counters and arrays.
        _ = try await send(d, .put, "/classes/GameScore/\(id)", #"{"score":{"__op":"Increment","amount":1}}"#)
        _ = try await send(d, .put, "/classes/GameScore/\(id)", #"{"skills":{"__op":"AddUnique","objects":["flying","kungfu"]}}"#)
        _ = try await send(d, .put, "/classes/GameScore/\(id)", #"{"skills":{"__op":"Remove","objects":["flying"]}}"#)
        let (_, after) = try await send(d, .get, "/classes/GameScore/\(id)")
        #expect(after["score"] == 73454 && after["skills"] == ["kungfu"])
        // Objects > Deleting Objects: a field with Delete, then the object; then 101.
        _ = try await send(d, .put, "/classes/GameScore/\(id)", #"{"skills":{"__op":"Delete"}}"#)
        #expect(try await send(d, .get, "/classes/GameScore/\(id)").1["skills"] == nil)
        let (deleted, del) = try await send(d, .delete, "/classes/GameScore/\(id)")
        #expect(deleted.status == 200 && del == .object([:]))
        let (missing, m) = try await send(d, .get, "/classes/GameScore/\(id)")
        #expect(missing.status == 404 && m == .object(["code": 101, "error": "Object not found."]))
    }

    @Test("Queries: where constraints, count, batch")
    func queriesAndBatch() async throws {
        let d = try makeParseDialect()
        // Objects > Batch Operations: one {"success":…} per request.
        let (batched, b) = try await send(d, .post, "/batch", #"{"requests":[{"method":"POST","path":"/parse/classes/GameScore","body":{"score":1337,"playerName":"Sean Plott"}},{"method":"POST","path":"/parse/classes/GameScore","body":{"score":1338,"playerName":"ZeroCool"}}]}"#)
        #expect(batched.status == 200 && b.arrayValue?.count == 2)
        #expect(b.arrayValue?.allSatisfy { keys($0["success"] ?? .null) == ["createdAt", "objectId"] } == true)
        // Queries > Basic Queries and Query Constraints.
        let (_, q) = try await send(d, .get, "/classes/GameScore", query: [("where", #"{"playerName":"Sean Plott"}"#)])
        #expect(q["results"]?.arrayValue?.map { $0["score"] } == [1337])
        let (_, r) = try await send(d, .get, "/classes/GameScore", query: [("where", #"{"score":{"$gte":1000,"$lte":3000}}"#), ("order", "-score")])
        #expect(r["results"]?.arrayValue?.map { $0["score"] } == [1338, 1337])
        // Queries > Counting Objects: count=1&limit=0 answers {"results":[],"count":N}.
        let (_, n) = try await send(d, .get, "/classes/GameScore", query: [("where", #"{"score":{"$gt":0}}"#), ("count", "1"), ("limit", "0")])
        #expect(n == .object(["results": [], "count": 2]))
        // A batch item that fails answers {"error":{code,error}} and the others still run (not atomic).
        let (_, mixed) = try await send(d, .post, "/batch", #"{"requests":[{"method":"DELETE","path":"/parse/classes/GameScore/nosuchid"},{"method":"POST","path":"/parse/classes/GameScore","body":{"score":7}}]}"#)
        #expect(mixed.arrayValue?.first?["error"]?["code"] == 101 && mixed.arrayValue?.last?["success"]?["objectId"] != nil)
    }

    @Test("Users: sign up, log in, me, log out; Files: upload and read back")
    func usersAndFiles() async throws {
        let d = try makeParseDialect()
        // Users > Signing Up: 201 {"createdAt","objectId","sessionToken"}, Location /users/{id}.
        let (signed, s) = try await send(d, .post, "/users", #"{"username":"cooldude6","password":"p_n7!-e8","phone":"415-392-0202"}"#)
        #expect(signed.status == 201 && keys(s) == ["createdAt", "objectId", "sessionToken"])
        let id = try #require(s["objectId"]?.stringValue)
        #expect(signed.headers["Location"]?.hasSuffix("/parse/users/\(id)") == true)
        // Users > Logging In: the user with its fields and a session token.
        let (logged, l) = try await send(d, .post, "/login", #"{"username":"cooldude6","password":"p_n7!-e8"}"#)
        #expect(logged.status == 200 && l["username"] == "cooldude6" && l["phone"] == "415-392-0202" && l["objectId"] == .string(id))
        let token = try #require(l["sessionToken"]?.stringValue)
        #expect(l["password"] == nil)
        // Users > Validating Session Tokens / Retrieving the Current User.
        let (_, me) = try await send(d, .get, "/users/me", token: token)
        #expect(me["username"] == "cooldude6" && me["sessionToken"] == .string(token))
        // A wrong password is 101 "Invalid username/password." (Error Codes).
        let (bad, e) = try await send(d, .post, "/login", #"{"username":"cooldude6","password":"nope"}"#)
        #expect(bad.status == 404 && e["code"] == 101)
        // Users > Logging Out, then the token is refused with 209.
        #expect(try await send(d, .post, "/logout", token: token).0.status == 200)
        let (gone, g) = try await send(d, .get, "/users/me", token: token)
        #expect(gone.status == 400 && g["code"] == 209)
        // Files > Uploading Files: 201 {"url","name"} with a 32-hex prefix on the name; the url serves the bytes.
        var upload = parseRequest(d, .post, "/files/hello.txt", body: Data("Hello, World!".utf8), contentType: "text/plain")
        upload.headers[ParseHeader.sessionToken] = nil
        let uploaded = try await EmulatorTransport(d).send(upload)
        let f = try JSON.parse(uploaded.body)
        #expect(uploaded.status == 201 && keys(f) == ["url", "name"])
        let name = try #require(f["name"]?.stringValue)
        #expect(name.range(of: #"^[0-9a-f]{32}_hello\.txt$"#, options: .regularExpression) != nil)
        let url = try #require(f["url"]?.stringValue.flatMap(URL.init(string:)))
        let download = try await EmulatorTransport(d).send(TransportRequest(method: .get, url: url))
        #expect(download.status == 200 && download.body == Data("Hello, World!".utf8))
        // Files > Deleting Files: the master key only.
        // Without the master key: 403 and the body of parse-server's master-key middleware, no code [sdk: parse-server
        // spec/ParseFile.spec.js "blocks file deletions with missing or incorrect master-key header"].
        let refused = try await EmulatorTransport(d).send(parseRequest(d, .delete, "/files/\(name)"))
        #expect(refused.status == 403)
        #expect(try JSON.parse(refused.body) == .object(["error": "unauthorized: master key is required"]))
        let schemas = try await EmulatorTransport(d).send(parseRequest(d, .get, "/schemas"))
        #expect(schemas.status == 403)
        #expect(try JSON.parse(schemas.body) == .object(["error": "unauthorized: master key is required"]))
        #expect(try await EmulatorTransport(d).send(parseRequest(d, .delete, "/files/\(name)", master: true)).status == 200)
    }

    @Test("Security: keys, another user's private objects, file names, oversized bodies")
    func security() async throws {
        let d = try makeParseDialect { $0.maxFileSize = 1024; $0.maxDocumentSize = 2048 }
        // A wrong REST key or application id is 403 {"error":"unauthorized"}.
        var wrong = parseRequest(d, .get, "/classes/GameScore")
        wrong.headers[ParseHeader.restAPIKey] = "nope"
        let refused = try await EmulatorTransport(d).send(wrong)
        #expect(try refused.status == 403 && JSON.parse(refused.body) == .object(["error": "unauthorized"]))
        // Alice's private object is invisible to Bob (101 on read, update, delete; absent from finds).
        let a = try await send(d, .post, "/users", #"{"username":"alice","password":"alice-pass"}"#).1
        let b = try await send(d, .post, "/users", #"{"username":"bob","password":"bob-pass"}"#).1
        let alice = try #require(a["sessionToken"]?.stringValue), bob = try #require(b["sessionToken"]?.stringValue)
        let aliceId = try #require(a["objectId"]?.stringValue)
        let acl = #"{"\#(aliceId)":{"read":true,"write":true}}"#
        let (_, c) = try await send(d, .post, "/classes/Diary", #"{"text":"secret","ACL":\#(acl)}"#, token: alice)
        let id = try #require(c["objectId"]?.stringValue)
        #expect(try await send(d, .get, "/classes/Diary/\(id)", token: alice).1["text"] == "secret")
        for (method, body) in [(TransportRequest.Method.get, nil), (.put, #"{"text":"mine"}"#), (.delete, nil)] {
            let (r, e) = try await send(d, method, "/classes/Diary/\(id)", body, token: bob)
            #expect(r.status == 404 && e["code"] == 101, "\(method)")
        }
        #expect(try await send(d, .get, "/classes/Diary", token: bob).1["results"] == [])
        #expect(try await send(d, .get, "/classes/Diary/\(id)", token: alice).1["text"] == "secret")
        // File names outside Parse's pattern never reach the store (122); too large a file is refused (130).
        for name in ["..", "a%2F..%2F..%2Fb", "%E7%94%BB.png"] {
            let r = try await EmulatorTransport(d).send(parseRequest(d, .post, "/files/\(name)", body: Data("x".utf8), contentType: "text/plain"))
            #expect(r.status != 201, "\(name)")
        }
        let big = try await EmulatorTransport(d).send(parseRequest(d, .post, "/files/big.bin", body: Data(count: 2000), contentType: "application/octet-stream"))
        #expect(try big.status == 400 && JSON.parse(big.body)["code"] == 130)
        let huge = try await EmulatorTransport(d).send(parseRequest(d, .post, "/classes/Diary", body: Data(count: 4096), contentType: "application/json"))
        #expect(try huge.status == 413 && JSON.parse(huge.body)["code"] == 130)
    }
}
