import Foundation
import MBaaSCore
import MBaaSParse
import MBaaSTesting
import Testing

/// A tiny in-memory Parse Server for the client tests: objects by class, `/batch` with per-item errors, finds with
/// `where` (through the wire's own server direction), `order=objectId` and `limit`.
final class MiniParse: @unchecked Sendable {
    let lock = NSLock()
    var objects: [String: [String: JSONObject]] = [:]
    var counter = 0
    var batchCalls: [Int] = []

    func handle(_ r: TransportRequest) throws -> TransportResponse {
        lock.lock(); defer { lock.unlock() }
        return try respond(method: r.method.rawValue, path: r.url.path, query: queryItems(r.url), body: r.body.flatMap { try? JSON.parse($0) })
    }

    func queryItems(_ url: URL) -> [(String, String)] {
        (URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []).map { ($0.name, $0.value ?? "") }
    }

    func respond(method: String, path: String, query: [(String, String)], body: JSON?) throws -> TransportResponse {
        guard let route = ParseRoute(path: path) else { return ParseErrorBody(code: 107, error: "bad path").response() }
        let now = "2022-01-01T12:23:45.678Z"
        switch (method, route) {
        case ("POST", .batch):
            let batch = try ParseBatchRequest(json: body ?? .null)
            batchCalls.append(batch.requests.count)
            var items: [ParseBatchResponse.Item] = []
            for req in batch.requests {
                let r = try respond(method: req.method, path: req.path, query: [], body: req.body.map(JSON.object))
                let j = try JSON.parse(r.body)
                items.append(r.isSuccess ? .success(j) : .error(ParseErrorBody(json: j)!))
            }
            return .json(200, ParseBatchResponse(items: items).json)
        case ("POST", .objects(let cls)):
            counter += 1
            let id = String(format: "obj%07d", counter)
            var o = body?.objectValue ?? [:]
            if o["fail"] == .bool(true) { return ParseErrorBody(code: 111, error: "schema mismatch").response() }
            o["objectId"] = .string(id); o["createdAt"] = .string(now); o["updatedAt"] = .string(now)
            objects[cls, default: [:]][id] = o
            return .json(201, ParseCreated(objectId: id, createdAt: ISO8601.parse(now)!).json,
                         headers: [("Location", "http://h/parse" + ParseRoute.object(cls, id: id).path)])
        case ("GET", .object(let cls, let id)):
            guard let o = objects[cls]?[id] else { return ParseErrorBody(code: 101, error: "Object not found.").response() }
            return .json(200, .object(o))
        case ("PUT", .object(let cls, let id)):
            guard var o = objects[cls]?[id] else { return ParseErrorBody(code: 101, error: "Object not found.").response() }
            for (k, v) in body?.objectValue ?? [:] {
                switch try ParseFieldChange(json: v) {
                case .set(let j): o[k] = j
                case .delete: o[k] = nil
                case .increment(let n): o[k] = .int((o[k]?.intValue ?? 0) + (n.intValue ?? 0))
                default: break
                }
            }
            objects[cls]![id] = o
            return .json(200, ParseUpdated(updatedAt: ISO8601.parse(now)!).json)
        case ("DELETE", .object(let cls, let id)):
            guard objects[cls]?.removeValue(forKey: id) != nil else { return ParseErrorBody(code: 101, error: "Object not found.").response() }
            return .json(200, .object([:]))
        case ("GET", .objects(let cls)):
            let q = try ParseQuery(queryItems: query)
            let neutral = try ParseQueryTranslator.query(q, className: cls)
            var rows = (objects[cls] ?? [:]).values.sorted { $0["objectId"]!.stringValue! < $1["objectId"]!.stringValue! }
            if q.order.first == "-objectId" { rows.reverse() }
            rows = try rows.filter { try matches(neutral.predicate, $0) }
            let count = rows.count
            rows = Array(rows.dropFirst(q.skip ?? 0).prefix(q.limit ?? 100))
            return .json(200, ParseResults(results: rows, count: q.count ? count : nil).json)
        default:
            return ParseErrorBody(code: 107, error: "unhandled \(method) \(path)").response()
        }
    }

    /// Enough matching for the tests: eq, gt/lt on strings and ints, in, and.
    func matches(_ p: QueryPredicate?, _ o: JSONObject) throws -> Bool {
        guard let p else { return true }
        func field(_ k: String) throws -> Value? { try o[k == "id" ? "objectId" : k].map { try ParseCodec.decode($0) } }
        switch p {
        case .and(let ps): return try ps.allSatisfy { try matches($0, o) }
        case .compare(let k, let c, let v):
            guard let f = try field(k) else { return false }
            switch (c, f, v) {
            case (.eq, _, _): return f == v
            case (.gt, .string(let a), .string(let b)): return a > b
            case (.lt, .string(let a), .string(let b)): return a < b
            case (.gt, .int(let a), .int(let b)): return a > b
            default: return false
            }
        case .in(let k, let vs): return try field(k).map(vs.contains) ?? false
        default: return false
        }
    }
}

func makeBackend(_ url: String = "parse+http://app1:rest1@127.0.0.1:1337/parse", transport: any HTTPTransport) async throws -> ParseBackend {
    let backend = try await ParseBackendFactory().open(try BackendURL(parsing: url), context: BackendContext(transport: transport))
    return backend as! ParseBackend
}

@Suite("Parse client")
struct ParseBackendTests {
    @Test("URL: mount point, keys, master key only by option, administrative option declared")
    func configuration() throws {
        let c = try ParseConfiguration(url: BackendURL(parsing: "parse://APP:KEY@example.com/parse"))
        #expect(c.applicationId == "APP" && c.restAPIKey == "KEY" && c.mount == "/parse" && c.masterKey == nil)
        #expect(c.baseURL == "https://example.com")
        let d = try ParseConfiguration(url: BackendURL(parsing: "parse+http://APP@127.0.0.1:1337"))
        #expect(d.mount == "/parse" && d.restAPIKey == nil && d.baseURL == "http://127.0.0.1:1337")
        let e = try ParseConfiguration(url: BackendURL(parsing: "parse://APP:KEY@h/1?masterKey=M&batchSize=50"))
        #expect(e.mount == "/1" && e.masterKey == "M" && e.batchSize == 50)
        #expect(throws: MBaaSError.self) { try ParseConfiguration(url: BackendURL(parsing: "parse://APP:KEY@h/parse?batchSize=51")) }
        #expect(throws: MBaaSError.self) { try ParseConfiguration(url: BackendURL(parsing: "parse://h/parse")) }
        #expect(ParseBackendFactory().administrativeOptions == ["masterKey"])
        #expect(ParseBackendFactory().wireProfile == .parse)
    }

    @Test("REST guide create: POST body, headers, 201 + Location; request id equals the idempotency key")
    func createVector() async throws {
        // REST guide, Objects > Creating Objects (request body and the 201 answer with Location).
        let stub = StubTransport(responses: [.json(201, json(#"{"createdAt":"2022-01-01T12:23:45.678Z","objectId":"Ed1nuqPvcm"}"#),
                                                   headers: [("Location", "https://YOUR.PARSE-SERVER.HERE/parse/classes/GameScore/Ed1nuqPvcm")])])
        let backend = try await makeBackend("parse://APPLICATION_ID:REST_API_KEY@YOUR.PARSE-SERVER.HERE/parse", transport: stub)
        let record = try await backend.create(Record(className: "GameScore", fields: ["score": 1337, "playerName": "Sean Plott", "cheatMode": false]))
        #expect(record.id == "Ed1nuqPvcm" && record.createdAt == date("2022-01-01T12:23:45.678Z") && record.updatedAt == record.createdAt)
        let r = try #require(stub.requests.first)
        #expect(r.method == .post)
        #expect(r.url.scheme == "https" && r.url.host?.lowercased() == "your.parse-server.here")
        #expect(r.url.path == "/parse/classes/GameScore")
        #expect(r.headers["X-Parse-Application-Id"] == "APPLICATION_ID")
        #expect(r.headers["X-Parse-REST-API-Key"] == "REST_API_KEY")
        #expect(r.headers["Content-Type"] == "application/json")
        #expect(r.headers["X-Parse-Master-Key"] == nil)
        #expect(r.headers["X-Parse-Revocable-Session"] == nil)
        let requestId = try #require(r.headers["X-Parse-Request-Id"])
        #expect(requestId == r.idempotencyKey && requestId == requestId.lowercased() && UUID(uuidString: requestId) != nil)
        #expect(try JSON.parse(r.body!).semanticallyEquals(json(#"{"score":1337,"playerName":"Sean Plott","cheatMode":false}"#)))
    }

    @Test("users: REST guide sign-up, login errors, me, logout; revocable-session header; 209 ends the session")
    func users() async throws {
        // REST guide, Users > Signing Up: body and 201 answer.
        let stub = StubTransport(responses: [
            .json(201, json(#"{"createdAt":"2022-01-01T12:23:45.678Z","objectId":"g7y9tkhB7O","sessionToken":"r:pnktnjyb996sj4p156gjtp4im"}"#),
                  headers: [("Location", "https://YOUR.PARSE-SERVER.HERE/parse/users/g7y9tkhB7O")]),
            // parse.md (T): bad credentials are 404 {"code":101,"error":"Invalid username/password."}.
            .json(404, json(#"{"code":101,"error":"Invalid username/password."}"#)),
            // REST guide, Users > Retrieving Current User: the user without password.
            .json(200, json(#"{"username":"cooldude6","phone":"415-392-0202","createdAt":"2022-01-01T12:23:45.678Z","updatedAt":"2022-01-01T12:23:45.678Z","objectId":"g7y9tkhB7O","sessionToken":"r:pnktnjyb996sj4p156gjtp4im"}"#)),
            .json(200, json(#"{"results":[{"name":"Moderators","objectId":"mrmBZvsErB"}]}"#)),
            .json(400, json(#"{"code":209,"error":"Invalid session token"}"#)),
        ])
        let backend = try await makeBackend(transport: stub)
        let session = try await backend.signUp(username: "cooldude6", password: "p_n7!-e8", email: nil, fields: ["phone": "415-392-0202"])
        #expect(session.userId == "g7y9tkhB7O" && session.token == "r:pnktnjyb996sj4p156gjtp4im")
        let signUp = stub.requests[0]
        #expect(signUp.url.path == "/parse/users" && signUp.headers["X-Parse-Revocable-Session"] == "1")
        #expect(try JSON.parse(signUp.body!).semanticallyEquals(json(#"{"username":"cooldude6","password":"p_n7!-e8","phone":"415-392-0202"}"#)))
        let bad = await #expect(throws: MBaaSError.self) { try await backend.logIn(username: "cooldude6", password: "wrong") }
        #expect(bad?.kind == .unauthorized && bad?.vendorCode == "101")
        #expect(stub.requests[1].url.path == "/parse/login" && stub.requests[1].method == .post)
        #expect(stub.requests[1].headers["X-Parse-Revocable-Session"] == "1")
        #expect(stub.requests[1].headers["X-Parse-Session-Token"] == nil)
        #expect(await backend.session == session)  // a failed log-in keeps the session
        let me = try await backend.currentUser()
        #expect(me.id == "g7y9tkhB7O" && me.username == "cooldude6" && me.fields == ["phone": "415-392-0202"] && me.roles == ["Moderators"])
        #expect(stub.requests[2].url.path == "/parse/users/me")
        #expect(stub.requests[2].headers["X-Parse-Session-Token"] == "r:pnktnjyb996sj4p156gjtp4im")
        let rolesQuery = try ParseQuery(queryItems: MiniParse().queryItems(stub.requests[3].url))
        #expect(rolesQuery.where_.map(JSON.object) == json(#"{"users":{"__type":"Pointer","className":"_User","objectId":"g7y9tkhB7O"}}"#))
        let expired = await #expect(throws: MBaaSError.self) { try await backend.currentUser() }
        #expect(expired?.kind == .unauthorized)
        #expect(await backend.session == nil)
    }

    @Test("anonymous log-in and log-out")
    func anonymous() async throws {
        let stub = StubTransport(responses: [
            .json(201, json(#"{"createdAt":"2022-01-01T12:23:45.678Z","objectId":"anon1","sessionToken":"r:abc"}"#)),
            .json(200, json("{}")),
        ])
        let backend = try await makeBackend(transport: stub)
        let s = try await backend.logInAnonymously(id: "f3d5a1c0-0000-4000-8000-000000000000")
        #expect(s.userId == "anon1" && s.extras["anonymousId"] == "f3d5a1c0-0000-4000-8000-000000000000")
        #expect(try JSON.parse(stub.requests[0].body!) == json(#"{"authData":{"anonymous":{"id":"f3d5a1c0-0000-4000-8000-000000000000"}}}"#))
        try await backend.logOut(confirmWithServer: true)
        #expect(stub.requests[1].method == .post && stub.requests[1].url.path == "/parse/logout")
        #expect(stub.requests[1].headers["X-Parse-Session-Token"] == "r:abc")
        #expect(await backend.session == nil)
    }

    @Test("files: REST guide upload vector, File field attachment, delete needs the master key")
    func files() async throws {
        // REST guide, Files > Uploading Files: POST /parse/files/hello.txt, text/plain, "Hello, World!" → 201.
        let answer = #"{"url":"http://files.parsetfss.com/bc9f32df-2957-4bb1-93c9-ec47d9870a05/tfss-db295fb2-8a8b-49f3-aad3-dd911142f64f-hello.txt","name":"db295fb2-8a8b-49f3-aad3-dd911142f64f-hello.txt"}"#
        let stub = StubTransport(responses: [
            .json(201, json(answer)),
            .json(200, json(#"{"updatedAt":"2022-01-01T12:23:45.678Z"}"#)),
            .json(200, json(#"{"objectId":"p1","name":"Andrew","picture":{"__type":"File","name":"db295fb2-8a8b-49f3-aad3-dd911142f64f-hello.txt","url":"http://files.parsetfss.com/x"}}"#)),
            TransportResponse(status: 200, body: Data("Hello, World!".utf8)),
        ])
        let backend = try await makeBackend(transport: stub)
        let ref = try await backend.upload(FileUpload(name: "hello.txt", source: .data(Data("Hello, World!".utf8)), contentType: "text/plain",
                                                      attachment: FileAttachment(className: "PlayerProfile", objectId: "p1", field: "picture")))
        #expect(ref.name == "db295fb2-8a8b-49f3-aad3-dd911142f64f-hello.txt")
        #expect(ref.url == "http://files.parsetfss.com/bc9f32df-2957-4bb1-93c9-ec47d9870a05/tfss-db295fb2-8a8b-49f3-aad3-dd911142f64f-hello.txt")
        #expect(ref.size == 13 && ref.attachment?.field == "picture")
        let upload = stub.requests[0]
        #expect(upload.method == .post && upload.url.path == "/parse/files/hello.txt")
        #expect(upload.headers["Content-Type"] == "text/plain" && upload.body == Data("Hello, World!".utf8))
        // The record's field is a File hash (REST guide, Files > Associating with Objects).
        let set = try JSON.parse(stub.requests[1].body!)
        #expect(set == json(#"{"picture":{"__type":"File","name":"db295fb2-8a8b-49f3-aad3-dd911142f64f-hello.txt","url":"http://files.parsetfss.com/bc9f32df-2957-4bb1-93c9-ec47d9870a05/tfss-db295fb2-8a8b-49f3-aad3-dd911142f64f-hello.txt"}}"#))
        #expect(try await backend.download(ref) == Data("Hello, World!".utf8))
        #expect(stub.requests[3].headers["X-Parse-Application-Id"] == nil)  // another host: no Parse headers
        let e = await #expect(throws: MBaaSError.self) { try await backend.deleteFile(ref) }
        #expect(e?.kind == .unsupported)
        #expect(stub.requests.count == 4)
        let bad = await #expect(throws: MBaaSError.self) { try await backend.upload(Data("x".utf8), name: "テスト.txt") }
        #expect(bad?.kind == .unsupported)
        // With the master key: DELETE /parse/files/{name} → 200 with an empty body (parse.md (T), Files).
        let stub2 = StubTransport(responses: [TransportResponse(status: 200)])
        let admin = try await makeBackend("parse+http://app1:rest1@127.0.0.1:1337/parse?masterKey=MK", transport: stub2)
        try await admin.deleteFile(FileReference(name: "abc_hello.txt"))
        #expect(stub2.requests[0].method == .delete && stub2.requests[0].url.path == "/parse/files/abc_hello.txt")
        #expect(stub2.requests[0].headers["X-Parse-Master-Key"] == "MK")
    }

    @Test("CRUD, update re-read, keyset paging through the lazy sequence, count")
    func crudAndPaging() async throws {
        let server = MiniParse()
        let backend = try await makeBackend(transport: InMemoryTransport(server.handle))
        var ids: [String] = []
        for i in 0..<7 { ids.append(try await backend.create(Record(className: "Memo", fields: ["n": .int(Int64(i))])).id!) }
        let updated = try await backend.update(className: "Memo", id: ids[0], RecordUpdate(changes: ["n": .increment(10), "t": .set("x")]))
        #expect(updated.fields == ["n": 10, "t": "x"])
        let cleared = try await backend.update(className: "Memo", id: ids[0], RecordUpdate(changes: ["t": .delete]))
        #expect(cleared.fields == ["n": 10])
        var pages = 0
        var seen: [String] = []
        var iterator = backend.records(matching: Query("Memo"), pageSize: 3).makeAsyncIterator()
        while let r = try await iterator.next() { seen.append(r.id!) }
        pages = iterator.pagesFetched
        #expect(seen == ids && pages == 3)
        #expect(try await backend.count(Query("Memo", predicate: .compare("n", .gt, 3))) == 4)  // 10, 4, 5, 6
        try await backend.delete(className: "Memo", id: ids[1])
        let gone = await #expect(throws: MBaaSError.self) { try await backend.get(className: "Memo", id: ids[1]) }
        #expect(gone?.kind == .notFound && gone?.vendorCode == "101" && gone?.refusedField == nil)
        // A given id is refused before anything is sent (parse-server takes none by default), and the detail says so.
        let given = await #expect(throws: MBaaSError.self) { try await backend.create(Record(className: "Memo", id: "mine")) }
        #expect(given?.kind == .unsupported && given?.refusesRecordId == true)
    }

    @Test("batch: chunks of 20 over /batch with mount-prefixed paths, per-item partial failure")
    func batch() async throws {
        let server = MiniParse()
        let backend = try await makeBackend(transport: InMemoryTransport(server.handle))
        let existing = try await backend.create(Record(className: "Memo", fields: ["n": 0]))
        let doomed = try await backend.create(Record(className: "Memo", fields: ["n": 1]))
        var ops: [BatchOperation] = (0..<42).map { i in
            .create(Record(className: "Memo", fields: i == 5 ? ["fail": true] : ["n": .int(Int64(i))]))
        }
        ops.append(.update(className: "Memo", id: existing.id!, RecordUpdate(changes: ["n": .increment(5)])))
        ops.append(.delete(className: "Memo", id: "missing"))
        ops.append(.delete(className: "Memo", id: doomed.id!))
        let results = try await backend.batch(ops)
        #expect(results.count == 45)
        #expect(server.batchCalls == [20, 20, 5])
        if case .failure(let e) = results[5] { #expect(e.kind == .invalidRequest && e.vendorCode == "111") } else { Issue.record("item 5 should fail") }
        if case .success(let r) = results[0] { #expect(r.id != nil && r.fields == ["n": 0]) } else { Issue.record("item 0 should succeed") }
        if case .success(let r) = results[42] { #expect(r.fields["n"] == 5) } else { Issue.record("update should succeed") }
        if case .failure(let e) = results[43] { #expect(e.kind == .notFound) } else { Issue.record("delete of a missing id should fail") }
        if case .success(let r) = results[44] { #expect(r.id == doomed.id) } else { Issue.record("delete should succeed") }
        #expect(results.filter { if case .success = $0 { true } else { false } }.count == 43)
    }

    @Test("REST guide: count with where, count=1, limit=0; a find's results with GeoPoints")
    func countAndFind() async throws {
        let stub = StubTransport(responses: [
            // REST guide, Queries > Counting Objects.
            .json(200, json(#"{"results":[],"count":1337}"#)),
            // REST guide, GeoPoints > Geo Queries: the two results it shows.
            .json(200, json(#"{"results":[{"location":{"latitude":40.0,"__type":"GeoPoint","longitude":-30.0},"updatedAt":"2022-01-01T12:23:45.678Z","createdAt":"2022-01-01T12:23:45.678Z","objectId":"iFEPN5Gwoz"},{"location":{"latitude":60.0,"__type":"GeoPoint","longitude":-20.0},"updatedAt":"2022-01-01T12:23:45.678Z","createdAt":"2022-01-01T12:23:45.678Z","objectId":"LAyNKSNTHT"}]}"#)),
        ])
        let backend = try await makeBackend(transport: stub)
        #expect(try await backend.count(Query("GameScore", predicate: .compare("playerName", .eq, "Jonathan Walsh"))) == 1337)
        let items = MiniParse().queryItems(stub.requests[0].url)
        #expect(stub.requests[0].method == .get && stub.requests[0].url.path == "/parse/classes/GameScore")
        #expect(items.map(\.0) == ["where", "limit", "count"])
        #expect(json(items[0].1) == json(#"{"playerName":"Jonathan Walsh"}"#) && items[1].1 == "0" && items[2].1 == "1")
        let page = try await backend.queryPage(Query("PlaceObject", limit: 10))
        #expect(page.records.map(\.id) == ["iFEPN5Gwoz", "LAyNKSNTHT"])
        #expect(page.records[0].fields["location"] == .geoPoint(GeoPoint(latitude: 40, longitude: -30)))
        #expect(page.records[1].createdAt == date("2022-01-01T12:23:45.678Z"))
        #expect(page.nextCursor == nil)
        let find = MiniParse().queryItems(stub.requests[1].url)
        #expect(find.map(\.0) == ["order", "limit"] && find[0].1 == "objectId" && find[1].1 == "10")
    }

    @Test("batch request paths carry the mount prefix")
    func batchPaths() async throws {
        let stub = StubTransport(responses: [.json(200, json(#"[{"success":{}}]"#))])
        let backend = try await makeBackend("parse+http://a:b@h:1/1", transport: stub)
        _ = try await backend.batch([.delete(className: "GameScore", id: "Cpl9lrueY5")])
        #expect(stub.requests[0].url.path == "/1/batch")
        #expect(try JSON.parse(stub.requests[0].body!) == json(#"{"requests":[{"method":"DELETE","path":"/1/classes/GameScore/Cpl9lrueY5"}]}"#))
    }

    @Test("master key is sent only without a session, and only when the URL gives it")
    func masterKey() async throws {
        let stub = StubTransport { _ in .json(200, json(#"{"objectId":"a","createdAt":"2022-01-01T12:23:45.678Z"}"#)) }
        let backend = try await makeBackend("parse+http://a:b@h:1/parse?masterKey=MK", transport: stub)
        _ = try await backend.get(className: "A", id: "a")
        #expect(stub.requests[0].headers["X-Parse-Master-Key"] == "MK")
        await backend.restore(Session(token: "r:t", userId: "u"))
        _ = try await backend.get(className: "A", id: "a")
        #expect(stub.requests[1].headers["X-Parse-Master-Key"] == nil)
        #expect(stub.requests[1].headers["X-Parse-Session-Token"] == "r:t")
        #expect(stub.requests[1].headers["X-Parse-Request-Id"] == nil)  // GET carries none
    }

    @Test("roles: REST guide AddRelation on users")
    func roles() async throws {
        // REST guide, Roles > Updating Roles: users AddRelation with _User pointers 8TOXdXf3tz and g7y9tkhB7O.
        let stub = StubTransport(responses: [.json(200, json(#"{"updatedAt":"2022-01-01T12:23:45.678Z"}"#)),
                                             .json(200, json(#"{"objectId":"mrmBZvsErB","name":"Moderators"}"#))])
        let backend = try await makeBackend(transport: stub)
        try await backend.addUsers(["8TOXdXf3tz", "g7y9tkhB7O"], toRole: "mrmBZvsErB")
        #expect(stub.requests[0].method == .put && stub.requests[0].url.path == "/parse/roles/mrmBZvsErB")
        #expect(try JSON.parse(stub.requests[0].body!) == json(#"{"users":{"__op":"AddRelation","objects":[{"__type":"Pointer","className":"_User","objectId":"8TOXdXf3tz"},{"__type":"Pointer","className":"_User","objectId":"g7y9tkhB7O"}]}}"#))
    }
}
