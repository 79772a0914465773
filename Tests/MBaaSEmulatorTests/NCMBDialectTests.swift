import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSEmulator
import MBaaSLocal
import MBaaSNCMB
import MBaaSTesting
import Testing

/// A fresh NCMB dialect on an in-memory store, with cheap password hashing.
func makeDialect(applicationKey: String = "emulator-app-key", clientKey: String = "emulator-client-key",
                 clock: @escaping @Sendable () -> Date = { Date() }, storeClock: (@Sendable () -> Date)? = nil,
                 configure: (inout NCMBDialect.Configuration) -> Void = { _ in }) throws -> NCMBDialect {
    let store = try LocalBackend.inMemory(context: BackendContext(clock: storeClock ?? { Date() }),
                                          options: LocalBackend.Options(passwordHashing: .testing))
    var configuration = NCMBDialect.Configuration(applicationKey: applicationKey, clientKey: clientKey)
    configure(&configuration)
    return NCMBDialect(store: store, configuration: configuration, clock: clock)
}

/// An NCMB client talking to a dialect in-process.
func client(_ dialect: NCMBDialect, clock: @escaping @Sendable () -> Date = { Date() }) -> NCMBBackend {
    NCMBBackend(configuration: NCMBConfiguration(applicationKey: dialect.configuration.applicationKey,
                                                 clientKey: dialect.configuration.clientKey, host: "127.0.0.1",
                                                 port: 8080, isSecure: false),
                context: BackendContext(transport: EmulatorTransport(dialect), clock: clock))
}

/// A signed request as the NCMB client would send it.
func signedRequest(_ dialect: NCMBDialect, _ method: String, _ path: String, query: [(String, String)] = [],
                   body: Data? = nil, timestamp: Date = Date(), token: String? = nil,
                   clientKey: String? = nil) throws -> TransportRequest {
    let url = try URL.build(base: "http://127.0.0.1:8080", path: "/2013-09-01" + path, query: query)
    var request = TransportRequest(method: TransportRequest.Method(method)!, url: url, headers: [.contentType: "application/json"], body: body)
    if let token { request.headers[NCMBSigner.Header.sessionToken] = token }
    let signer = NCMBSigner(applicationKey: dialect.configuration.applicationKey,
                            clientKey: clientKey ?? dialect.configuration.clientKey)
    try signer.sign(&request, timestamp: ISO8601.format(timestamp))
    return request
}

func errorCode(_ response: TransportResponse) -> String? {
    (try? JSON.parse(response.body))?["code"]?.stringValue
}

@Suite("NCMB dialect")
struct NCMBDialectTests {
    @Test("the conformance suite passes live against the dialect wherever the NCMB adapter passes in replay")
    func conformanceLive() async throws {
        let dialect = try makeDialect()
        let suite = try ConformanceSuite.bundled()
        let url = try BackendURL(parsing: "ncmb+http://\(dialect.configuration.applicationKey):\(dialect.configuration.clientKey)@127.0.0.1:8080")
        let live = await ConformanceRunner.live(adapter: "ncmb", factory: NCMBBackendFactory(), url: url,
                                                transport: EmulatorTransport(dialect), scenarios: suite.scenarios)
        let bad = live.filter { $0.outcome != .passed && $0.outcome != .skipped }
        #expect(bad.isEmpty, "\(bad.map { "\($0.scenario): \($0.outcome) \($0.reason ?? "")" }.joined(separator: "\n"))")
        let replay = await ConformanceRunner.replay(adapter: "ncmb", factory: NCMBBackendFactory(),
                                                    cassettes: ConformanceSuite.bundledFixtures.appendingPathComponent("Cassettes/ncmb"),
                                                    scenarios: suite.scenarios)
        let passedInReplay = Set(replay.filter { $0.outcome == .passed }.map(\.scenario))
        let passedLive = Set(live.filter { $0.outcome == .passed }.map(\.scenario))
        #expect(passedInReplay.count > 80)
        #expect(passedInReplay.subtracting(passedLive).isEmpty, "pass in replay only: \(passedInReplay.subtracting(passedLive).sorted())")
    }

    @Test("requests need the application key, a fresh timestamp and a valid signature (E401001 otherwise)")
    func signatures() async throws {
        let dialect = try makeDialect()
        let good = try signedRequest(dialect, "GET", "/classes/Memo")
        #expect(await dialect.respond(to: good).status == 200)

        var missing = good
        missing.headers[NCMBSigner.Header.signature] = nil
        var forged = try signedRequest(dialect, "GET", "/classes/Memo", clientKey: "someone-elses-key")
        let stale = try signedRequest(dialect, "GET", "/classes/Memo", timestamp: Date().addingTimeInterval(-3600))
        var wrongApp = good
        wrongApp.headers[NCMBSigner.Header.applicationKey] = "other-app"
        // A signature over another path does not sign this one.
        let other = try signedRequest(dialect, "GET", "/classes/Other")
        forged.headers[NCMBSigner.Header.timestamp] = good.headers[NCMBSigner.Header.timestamp]
        var moved = good
        moved.headers[NCMBSigner.Header.signature] = other.headers[NCMBSigner.Header.signature]
        for (name, request) in [("missing", missing), ("forged", forged), ("stale", stale), ("wrong app", wrongApp), ("moved", moved)] {
            let response = await dialect.respond(to: request)
            #expect(response.status == 401, "\(name)")
            #expect(errorCode(response) == "E401001", "\(name)")
        }
        // Timestamps without milliseconds are accepted (tolerant), as are trailing slashes.
        var noMillis = try signedRequest(dialect, "GET", "/classes/Memo/")
        let stamp = String(ISO8601.format(Date()).prefix(19)) + "Z"
        try NCMBSigner(applicationKey: dialect.configuration.applicationKey, clientKey: dialect.configuration.clientKey)
            .sign(&noMillis, timestamp: stamp)
        #expect(await dialect.respond(to: noMillis).status == 200)
    }

    @Test("a user cannot read or write another user's private records, and ACL errors use NCMB's codes")
    func privateRecords() async throws {
        let dialect = try makeDialect()
        let alice = client(dialect), bob = client(dialect)
        let aliceSession = try await alice.signUp(username: "alice", password: "pw-alice", email: nil, fields: [:])
        _ = try await bob.signUp(username: "bob", password: "pw-bob", email: nil, fields: [:])
        let secret = try await alice.create(Record(className: "Diary", acl: ACL.privateTo(aliceSession.userId), fields: ["text": "mine"]))
        let id = try #require(secret.id)
        #expect(try await alice.get(className: "Diary", id: id).fields["text"] == "mine")
        await #expect(throws: MBaaSError.self) { _ = try await bob.get(className: "Diary", id: id) }
        do { _ = try await bob.get(className: "Diary", id: id) } catch let e as MBaaSError { #expect(e.vendorCode == "E403001") }
        do { _ = try await bob.get(className: "Diary", id: "missing") } catch let e as MBaaSError { #expect(e.vendorCode == "E404001") }
        do {
            _ = try await bob.update(className: "Diary", id: id, .set(["text": "hacked"]))
            Issue.record("bob updated alice's record")
        } catch let e as MBaaSError { #expect(e.vendorCode == "E403001") }
        do {
            try await bob.delete(className: "Diary", id: id, expectedVersion: nil)
            Issue.record("bob deleted alice's record")
        } catch let e as MBaaSError { #expect(e.vendorCode == "E403001") }
        #expect(try await bob.queryPage(Query("Diary")).records.isEmpty)
        #expect(try await alice.queryPage(Query("Diary")).records.count == 1)
        // Public read, owner write: bob reads but may not write (E403001).
        let shared = try await alice.create(Record(className: "Diary", acl: ACL.publicRead(owner: aliceSession.userId), fields: ["text": "ours"]))
        #expect(try await bob.get(className: "Diary", id: shared.id!).fields["text"] == "ours")
        do {
            _ = try await bob.update(className: "Diary", id: shared.id!, .set(["text": "hacked"]))
            Issue.record("bob updated a read-only record")
        } catch let e as MBaaSError { #expect(e.vendorCode == "E403001") }
        #expect(try await alice.get(className: "Diary", id: shared.id!).fields["text"] == "ours")
    }

    @Test("role ACLs apply to the members of a role's belongUser relation, and follow membership changes")
    func roles() async throws {
        let dialect = try makeDialect()
        let alice = client(dialect), bob = client(dialect)
        let a = try await alice.signUp(username: "alice", password: "pw-alice", email: nil, fields: [:])
        let b = try await bob.signUp(username: "bob", password: "pw-bob", email: nil, fields: [:])
        let roleId = try await alice.createRole(name: "Editors", users: [a.userId])
        let note = try await alice.create(Record(className: "Note", acl: ACL([.role("Editors"): .readWrite]), fields: ["t": "x"]))
        #expect(try await alice.get(className: "Note", id: note.id!).fields["t"] == "x")
        do { _ = try await bob.get(className: "Note", id: note.id!); Issue.record("bob read an Editors-only note") }
        catch let e as MBaaSError { #expect(e.vendorCode == "E403001") }
        try await alice.addUsers([b.userId], toRole: roleId)
        #expect(try await bob.get(className: "Note", id: note.id!).fields["t"] == "x")
        #expect(Set(try await alice.users(inRole: roleId).compactMap(\.id)) == [a.userId, b.userId])
        try await alice.removeUsers([b.userId], fromRole: roleId)
        do { _ = try await bob.get(className: "Note", id: note.id!); Issue.record("bob still reads after leaving the role") }
        catch let e as MBaaSError { #expect(e.vendorCode == "E403001") }
        #expect(try await alice.currentUser().roles == ["Editors"])
        // A second role of the same name, and a name the store cannot key an ACL with, are refused.
        do { _ = try await alice.createRole(name: "Editors"); Issue.record("duplicate role") }
        catch let e as MBaaSError { #expect(e.vendorCode == "E409001") }
        do { _ = try await alice.createRole(name: "Édition"); Issue.record("role name outside the store's ACL keys") }
        catch let e as MBaaSError { #expect(e.vendorCode == "E400004") }
    }

    @Test("file names cannot leave the file area, and oversized bodies get NCMB's size errors")
    func fileNamesAndSizes() async throws {
        let dialect = try makeDialect(configure: { $0.maxFileSize = 1024 })
        for name in ["../escape.txt", "a/../../b", "..", "dir\\x"] {
            let form = MultipartForm(parts: [MultipartForm.Part(name: "file", filename: "x", contentType: "text/plain", data: Data("x".utf8))])
            var request = try signedRequest(dialect, "POST", "/files/" + name.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!, body: form.encoded())
            request.headers["Content-Type"] = form.contentType
            let response = await dialect.respond(to: request)
            #expect(response.status == 400, "\(name): \(response.status.code)")
            #expect(errorCode(response) == "E400005", "\(name)")
        }
        let files = try await client(dialect).listFiles(prefix: nil, limit: nil)
        #expect(files.isEmpty)
        // One byte over the file limit: E413001; a body over the request limit: E413002 (server and transport alike).
        let big = MultipartForm(parts: [MultipartForm.Part(name: "file", filename: "big", contentType: "application/octet-stream", data: Data(count: 1025))])
        var request = try signedRequest(dialect, "POST", "/files/big.bin", body: big.encoded())
        request.headers["Content-Type"] = big.contentType
        let tooBig = await dialect.respond(to: request)
        #expect(tooBig.status == 413 && errorCode(tooBig) == "E413001")
        let huge = try signedRequest(dialect, "POST", "/classes/Memo", body: Data(count: dialect.maxRequestBodySize + 1))
        let refused = try await EmulatorTransport(dialect).send(huge)
        #expect(refused.status == 413 && errorCode(refused) == "E413002")
        // A JSON document over the document limit.
        let doc = try signedRequest(dialect, "POST", "/classes/Memo",
                                    body: JSON.object(["text": .string(String(repeating: "x", count: dialect.configuration.maxDocumentSize))]).data())
        let docAnswer = await dialect.respond(to: doc)
        #expect(docAnswer.status == 413 && errorCode(docAnswer) == "E413002")
    }

    @Test("an empty ACL is accepted, as NCMB accepts it (the Swift SDK's upload test sends acl {}), and reaches no client after")
    func emptyACL() async throws {
        let dialect = try makeDialect()
        let form = MultipartForm(parts: [
            MultipartForm.Part(name: "file", filename: "secret.txt", contentType: "text/plain", data: Data("s".utf8)),
            MultipartForm.Part(name: "acl", filename: nil, contentType: nil, data: Data("{}".utf8)),
        ])
        var upload = try signedRequest(dialect, "POST", "/files/secret.txt", body: form.encoded())
        upload.headers["Content-Type"] = form.contentType
        let uploaded = await dialect.respond(to: upload)
        #expect(uploaded.status == 201, "\(String(decoding: uploaded.body, as: UTF8.self))")
        // Only the master key and the console reach it: the store's owner keeps it with its empty ACL.
        let kept = try await dialect.store.sharing(session: nil, administrative: true).listFiles(prefix: "secret.txt", limit: nil)
        #expect(kept.map(\.reference.name) == ["secret.txt"])
        #expect(kept.first?.acl == ACL())
        let read = await dialect.respond(to: try signedRequest(dialect, "GET", "/files/secret.txt"))
        #expect(read.status == 404 && errorCode(read) == "E404001")
        // The same for an object.
        let created = await dialect.respond(to: try signedRequest(dialect, "POST", "/classes/Memo", body: Data(#"{"t":"x","acl":{}}"#.utf8)))
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        let id = try #require(try JSON.parse(created.body)["objectId"]?.stringValue)
        // The dialect's answer for a record the caller may not read (E403001 "No access with ACL").
        let object = await dialect.respond(to: try signedRequest(dialect, "GET", "/classes/Memo/" + id))
        #expect(object.status == 403 && errorCode(object) == "E403001", "\(object.status.code) \(String(decoding: object.body, as: UTF8.self))")
        // An ACL naming an empty principal is still refused.
        let bad = await dialect.respond(to: try signedRequest(dialect, "POST", "/classes/Memo", body: Data(#"{"t":"x","acl":{"":{"read":true}}}"#.utf8)))
        #expect(bad.status == 400)
    }

    @Test("NCMB's shapes: 201 on create, E404001 for a missing id, E404002 for an unknown path, login by query too")
    func shapes() async throws {
        let dialect = try makeDialect()
        let created = await dialect.respond(to: try signedRequest(dialect, "POST", "/classes/Memo",
                                                                  body: Data(#"{"title":"a","createDate":"2020-01-01T00:00:00.000Z"}"#.utf8)))
        #expect(created.status == 201)
        let object = try JSON.parse(created.body)
        let id = try #require(object["objectId"]?.stringValue)
        #expect(object["createDate"]?.stringValue.flatMap(ISO8601.parse) != nil)
        #expect(object["createDate"]?.stringValue != "2020-01-01T00:00:00.000Z")
        let read = try JSON.parse(await dialect.respond(to: try signedRequest(dialect, "GET", "/classes/Memo/" + id)).body)
        #expect(read["acl"] == .object(["*": .object(["read": true, "write": true])]))
        #expect(read["title"] == "a")
        let missing = await dialect.respond(to: try signedRequest(dialect, "GET", "/classes/Memo/nope"))
        #expect(missing.status == 404 && errorCode(missing) == "E404001")
        let unknown = await dialect.respond(to: try signedRequest(dialect, "GET", "/nothing-here"))
        #expect(unknown.status == 404 && errorCode(unknown) == "E404002")
        let batch = await dialect.respond(to: try signedRequest(dialect, "POST", "/batch", body: Data("{}".utf8)))
        #expect(batch.status == 404 && errorCode(batch) == "E404002")
        let badJSON = await dialect.respond(to: try signedRequest(dialect, "POST", "/classes/Memo", body: Data("{nope".utf8)))
        #expect(badJSON.status == 400 && errorCode(badJSON) == "E400001")
        // Sign up, then the legacy GET /login with the credentials in the query.
        let signUp = await dialect.respond(to: try signedRequest(dialect, "POST", "/users", body: Data(#"{"userName":"taro","password":"pw"}"#.utf8)))
        #expect(signUp.status == 201)
        #expect(try JSON.parse(signUp.body)["sessionToken"]?.stringValue?.isEmpty == false)
        let dup = await dialect.respond(to: try signedRequest(dialect, "POST", "/users", body: Data(#"{"userName":"taro","password":"pw"}"#.utf8)))
        #expect(dup.status == 409 && errorCode(dup) == "E409001")
        let login = await dialect.respond(to: try signedRequest(dialect, "GET", "/login", query: [("userName", "taro"), ("password", "pw")]))
        #expect(login.status == 200)
        let token = try #require(try JSON.parse(login.body)["sessionToken"]?.stringValue)
        let wrong = await dialect.respond(to: try signedRequest(dialect, "POST", "/login", body: Data(#"{"userName":"taro","password":"no"}"#.utf8)))
        #expect(wrong.status == 401 && errorCode(wrong) == "E401002")
        let out = await dialect.respond(to: try signedRequest(dialect, "GET", "/logout", token: token))
        #expect(out.status == 200)
        let after = await dialect.respond(to: try signedRequest(dialect, "GET", "/classes/Memo", token: token))
        #expect(after.status == 401 && errorCode(after) == "E401001")
    }

    @Test("an object id holding NUL (%00) in the path names no object: GET and DELETE answer E404001 and the object before the NUL stays")
    func idWithNULInPath() async throws {
        let dialect = try makeDialect()
        let created = await dialect.respond(to: try signedRequest(dialect, "POST", "/classes/Memo", body: Data(#"{"title":"kept"}"#.utf8)))
        let id = try #require(try JSON.parse(created.body)["objectId"]?.stringValue)
        let wrong = "/classes/Memo/" + id + "\u{0}x"
        #expect(try signedRequest(dialect, "GET", wrong).url.absoluteString.contains("%00"))
        // Bound as a C string, the id ended at the NUL: GET answered the object `id`, and DELETE removed it.
        for method in ["GET", "DELETE"] {
            let response = await dialect.respond(to: try signedRequest(dialect, method, wrong))
            #expect(response.status == 404 && errorCode(response) == "E404001", "\(method): \(response.status)")
        }
        let read = await dialect.respond(to: try signedRequest(dialect, "GET", "/classes/Memo/" + id))
        #expect(read.status == 200)
        #expect(try JSON.parse(read.body)["title"] == "kept")
    }

    @Test("a port already in use is an error from start(), not a wait")
    func portInUse() async throws {
        let first = try await EmulatorServer(dialect: try makeDialect()).start()
        do {
            let second = try await EmulatorServer(dialect: try makeDialect(), port: first.port).start()
            await second.stop()
            Issue.record("a second server started on port \(first.port)")
        } catch {
            #expect(!"\(error)".isEmpty)
        }
        await first.stop()
    }

    @Test("served over HTTP by Hummingbird: the NCMB client works end to end, and the server stops")
    func overHTTP() async throws {
        let dialect = try makeDialect()
        let running = try await EmulatorServer(dialect: dialect).start()
        defer { Task { await running.stop() } }
        // This suite runs beside every other one on two cores: a request may wait long for a thread of the cooperative
        // pool (a CI run saw one wait over 30 s), which is not what it tests.
        let url = try BackendURL(parsing: dialect.backendURL(host: "127.0.0.1", port: running.port) + "?timeout=120")
        let backend = try await NCMBBackendFactory().open(url, context: BackendContext())
        let created = try await backend.create(Record(className: "Memo", fields: ["title": "over http", "n": 3]))
        let page = try await backend.queryPage(Query("Memo").filter(Field("n") >= 3))
        #expect(page.records.map(\.id) == [created.id])
        let upload = try await backend.upload(FileUpload(name: "hello.txt", source: .data(Data("hello".utf8)), contentType: "text/plain"))
        #expect(try await backend.download(upload) == Data("hello".utf8))
        await running.stop()
        await #expect(throws: (any Error).self) { _ = try await backend.get(className: "Memo", id: created.id!) }
    }
}
