import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSEmulator
import MBaaSKii
import MBaaSKiiWire
import MBaaSLocal
import MBaaSTesting
import Testing

/// A fresh Kii dialect on an in-memory store, with cheap password hashing.
func makeKiiDialect(appID: String = "emuapp", appKey: String = "emu-app-key", clientID: String? = nil,
                    clientSecret: String? = nil, storeClock: (@Sendable () -> Date)? = nil,
                    configure: (inout KiiDialect.Configuration) -> Void = { _ in }) throws -> KiiDialect {
    let store = try LocalBackend.inMemory(context: BackendContext(clock: storeClock ?? { Date() }),
                                          options: LocalBackend.Options(passwordHashing: .testing))
    var configuration = KiiDialect.Configuration(appID: appID, appKey: appKey, clientID: clientID, clientSecret: clientSecret)
    configure(&configuration)
    return KiiDialect(store: store, configuration: configuration)
}

/// A Kii client talking to a dialect in-process.
func kiiClient(_ dialect: KiiDialect, admin: Bool = false) -> KiiBackend {
    let c = dialect.configuration
    var configuration = KiiConfiguration(appID: c.appID, appKey: c.appKey, baseURL: "http://127.0.0.1:8080/api")
    if admin, let id = c.clientID, let secret = c.clientSecret {
        configuration.adminCredentials = .init(clientID: id, clientSecret: secret)
    }
    return KiiBackend(configuration: configuration, context: BackendContext(transport: EmulatorTransport(dialect)))
}

/// A raw request to the dialect, as a Kii SDK sends it.
func kiiRequest(_ dialect: KiiDialect, _ method: String, _ path: String, json: JSON? = nil, body: Data? = nil,
                contentType: String? = nil, token: String? = nil, headers: [(String, String)] = []) -> TransportRequest {
    var request = TransportRequest(method: TransportRequest.Method(method)!, url: URL(string: "http://127.0.0.1:8080/api" + path)!,
                              headers: HTTPFields([("X-Kii-AppID", dialect.configuration.appID), ("X-Kii-AppKey", dialect.configuration.appKey)]),
                              body: json.map { $0.data() } ?? body)
    if let contentType { request.headers["Content-Type"] = contentType }
    else if json != nil { request.headers["Content-Type"] = "application/json" }
    if let token { request.headers["Authorization"] = "Bearer \(token)" }
    for (n, v) in headers { request.headers[n] = v }
    return request
}

func kiiErrorCode(_ response: TransportResponse) -> String? {
    (try? JSON.parse(response.body))?["errorCode"]?.stringValue
}

@Suite("Kii dialect")
struct KiiDialectTests {
    @Test("the conformance suite passes live against the dialect wherever the Kii adapter passes in replay")
    func conformanceLive() async throws {
        let dialect = try makeKiiDialect()
        let suite = try ConformanceSuite.bundled()
        let url = try BackendURL(parsing: dialect.backendURL(host: "127.0.0.1", port: 8080))
        let live = await ConformanceRunner.live(adapter: "kii", factory: KiiBackendFactory(), url: url,
                                                transport: EmulatorTransport(dialect), scenarios: suite.scenarios)
        let bad = live.filter { $0.outcome != .passed && $0.outcome != .skipped }
        #expect(bad.isEmpty, "\(bad.map { "\($0.scenario): \($0.outcome) \($0.reason ?? "")" }.joined(separator: "\n"))")
        let replay = await ConformanceRunner.replay(adapter: "kii", factory: KiiBackendFactory(),
                                                    cassettes: ConformanceSuite.bundledFixtures.appendingPathComponent("Cassettes/kii"),
                                                    scenarios: suite.scenarios)
        let passedInReplay = Set(replay.filter { $0.outcome == .passed }.map(\.scenario))
        let passedLive = Set(live.filter { $0.outcome == .passed }.map(\.scenario))
        #expect(passedInReplay.count >= 36)
        #expect(passedInReplay.subtracting(passedLive).isEmpty, "pass in replay only: \(passedInReplay.subtracting(passedLive).sorted())")
        #expect(passedLive.subtracting(passedInReplay).isEmpty, "pass live only: \(passedLive.subtracting(passedInReplay).sorted())")
        print("kii live conformance: \(passedLive.count) passed, \(live.filter { $0.outcome == .skipped }.count) skipped; replay \(passedInReplay.count) passed, \(replay.filter { $0.outcome == .skipped }.count) skipped")
    }
}

@Suite("Kii dialect security")
struct KiiDialectSecurityTests {
    @Test("a user cannot read or write another user's bucket or objects (UNAUTHORIZED), the owner can")
    func userScope() async throws {
        let dialect = try makeKiiDialect()
        let alice = kiiClient(dialect), bob = kiiClient(dialect)
        let aliceSession = try await alice.signUp(username: "alice", password: "pw-alice", email: nil, fields: [:])
        _ = try await bob.signUp(username: "bob", password: "pw-bob", email: nil, fields: [:])
        let diary = try await alice.create(Record(className: "users/me/Diary", fields: ["text": "mine"]))
        let id = try #require(diary.id)
        #expect(try await alice.get(className: "users/me/Diary", id: id).fields["text"] == "mine")
        #expect(try await alice.queryPage(Query("users/me/Diary")).records.count == 1)
        let foreign = "users/\(aliceSession.userId)/Diary"
        for attempt in ["get", "query", "update", "delete", "create"] {
            do {
                switch attempt {
                case "get": _ = try await bob.get(className: foreign, id: id)
                case "query": _ = try await bob.queryPage(Query(foreign))
                case "update": _ = try await bob.update(className: foreign, id: id, .set(["text": "hacked"]))
                case "delete": try await bob.delete(className: foreign, id: id, expectedVersion: nil)
                default: _ = try await bob.create(Record(className: foreign, fields: ["text": "planted"]))
                }
                Issue.record("bob could \(attempt) in alice's bucket")
            } catch let e as MBaaSError {
                #expect(e.vendorCode == "UNAUTHORIZED", "\(attempt): \(e)")
                #expect(e.httpStatus == 401, "\(attempt)")
            }
        }
        #expect(try await alice.get(className: "users/me/Diary", id: id).fields["text"] == "mine")
        // Bob's own `me` bucket is another bucket.
        #expect(try await bob.queryPage(Query("users/me/Diary")).records.isEmpty)
    }

    @Test("a group's bucket belongs to its members: members read and write, others are refused")
    func groupScope() async throws {
        let dialect = try makeKiiDialect()
        let alice = kiiClient(dialect), bob = kiiClient(dialect), carol = kiiClient(dialect)
        _ = try await alice.signUp(username: "alice", password: "pw-alice", email: nil, fields: [:])
        let bobSession = try await bob.signUp(username: "bob", password: "pw-bob", email: nil, fields: [:])
        _ = try await carol.signUp(username: "carol", password: "pw-carol", email: nil, fields: [:])
        let group = try await alice.createGroup(name: "team", members: [bobSession.userId])
        let bucket = "groups/\(group)/Plans"
        let plan = try await alice.create(Record(className: bucket, fields: ["title": "launch"]))
        let id = try #require(plan.id)
        #expect(try await bob.get(className: bucket, id: id).fields["title"] == "launch")
        _ = try await bob.update(className: bucket, id: id, .set(["title": "launch v2"]))
        #expect(try await alice.queryPage(Query(bucket)).records.count == 1)
        for attempt in ["get", "query", "create"] {
            do {
                switch attempt {
                case "get": _ = try await carol.get(className: bucket, id: id)
                case "query": _ = try await carol.queryPage(Query(bucket))
                default: _ = try await carol.create(Record(className: bucket, fields: ["title": "mine now"]))
                }
                Issue.record("carol could \(attempt) in the group's bucket")
            } catch let e as MBaaSError { #expect(e.vendorCode == "UNAUTHORIZED", "\(attempt): \(e)") }
        }
        do { _ = try await carol.queryPage(Query("groups/nosuchgroup/Plans")); Issue.record("a missing group answered") }
        catch let e as MBaaSError { #expect(e.vendorCode == "GROUP_NOT_FOUND") }
    }

    @Test("an object whose ACL no longer grants writing to any authenticated user refuses other users' writes")
    func objectACL() async throws {
        let dialect = try makeKiiDialect()
        let alice = kiiClient(dialect), bob = kiiClient(dialect)
        let aliceSession = try await alice.signUp(username: "alice", password: "pw-alice", email: nil, fields: [:])
        let bobSession = try await bob.signUp(username: "bob", password: "pw-bob", email: nil, fields: [:])
        let memo = try await alice.create(Record(className: "Memo", fields: ["text": "shared"]))
        let id = try #require(memo.id)
        let acl = "/apps/emuapp/buckets/Memo/objects/\(id)/acl"
        let list = await dialect.respond(to: kiiRequest(dialect, "GET", acl, token: aliceSession.token))
        #expect(list.status == 200)
        #expect(try JSON.parse(list.body)["WRITE_EXISTING_OBJECT"]?.arrayValue?.contains(.object(["userID": "ANY_AUTHENTICATED_USER"])) == true)
        // Bob may not change alice's ACL.
        let hijack = await dialect.respond(to: kiiRequest(dialect, "PUT", acl + "/WRITE_EXISTING_OBJECT/UserID:\(bobSession.userId)", token: bobSession.token))
        #expect(hijack.status == 401 && kiiErrorCode(hijack) == "UNAUTHORIZED")
        let revoke = await dialect.respond(to: kiiRequest(dialect, "DELETE", acl + "/WRITE_EXISTING_OBJECT/UserID:ANY_AUTHENTICATED_USER", token: aliceSession.token))
        #expect(revoke.status == 204)
        let again = await dialect.respond(to: kiiRequest(dialect, "DELETE", acl + "/WRITE_EXISTING_OBJECT/UserID:ANY_AUTHENTICATED_USER", token: aliceSession.token))
        #expect(again.status == 404 && kiiErrorCode(again) == "ACL_NOT_FOUND")
        // Every caller still reads app-scope objects (READ_OBJECTS_IN_BUCKET), but bob may no longer write.
        #expect(try await bob.get(className: "Memo", id: id).fields["text"] == "shared")
        do {
            _ = try await bob.update(className: "Memo", id: id, .set(["text": "hacked"]))
            Issue.record("bob updated alice's object")
        } catch let e as MBaaSError { #expect(e.vendorCode == "UNAUTHORIZED") }
        _ = try await alice.update(className: "Memo", id: id, .set(["text": "still mine"]))
        // Anonymous callers read but never create in app scope.
        let anonymousCreate = await dialect.respond(to: kiiRequest(dialect, "POST", "/apps/emuapp/buckets/Memo/objects", json: .object(["x": 1])))
        #expect(anonymousCreate.status == 401 && kiiErrorCode(anonymousCreate) == "UNAUTHORIZED")
        #expect(await dialect.respond(to: kiiRequest(dialect, "GET", "/apps/emuapp/buckets/Memo/objects/\(id)")).status == 200)
    }

    @Test("bad, missing and foreign tokens and apps are refused with Kii's errors")
    func tokens() async throws {
        let dialect = try makeKiiDialect(clientID: "admin-id", clientSecret: "admin-secret")
        let bogus = await dialect.respond(to: kiiRequest(dialect, "GET", "/apps/emuapp/users/me", token: "not-a-token"))
        #expect(bogus.status == 403 && kiiErrorCode(bogus) == "WRONG_TOKEN")
        #expect(bogus.headers["Content-Type"] == "application/vnd.kii.WrongTokenException+json")
        let none = await dialect.respond(to: kiiRequest(dialect, "GET", "/apps/emuapp/users/me"))
        #expect(none.status == 401 && kiiErrorCode(none) == "UNAUTHORIZED")
        let otherApp = await dialect.respond(to: kiiRequest(dialect, "GET", "/apps/someone-else/users/me"))
        #expect(otherApp.status == 404 && kiiErrorCode(otherApp) == "APP_NOT_FOUND")
        let wrongPassword = await dialect.respond(to: kiiRequest(dialect, "POST", "/oauth2/token", json: .object(["username": "nobody", "password": "x"])))
        #expect(wrongPassword.status == 400 && kiiErrorCode(wrongPassword) == "invalid_grant")
        let wrongSecret = await dialect.respond(to: kiiRequest(dialect, "POST", "/oauth2/token", json: .object(["client_id": "admin-id", "client_secret": "guess"])))
        #expect(wrongSecret.status == 400 && kiiErrorCode(wrongSecret) == "invalid_client")
        // A logged-out token (ended by the store) is WRONG_TOKEN too; the admin token creates without a user.
        let admin = kiiClient(dialect, admin: true)
        let created = try await admin.create(Record(className: "Config", fields: ["k": "v"]))
        #expect(created.id != nil)
    }

    @Test("path segments that would climb out ('../', encoded slashes) never reach the store")
    func unsafeNames() async throws {
        let dialect = try makeKiiDialect()
        let user = kiiClient(dialect)
        let session = try await user.signUp(username: "alice", password: "pw-alice", email: nil, fields: [:])
        for path in ["/apps/emuapp/buckets/Memo/objects/..%2F..%2Fetc%2Fpasswd/body", "/apps/emuapp/buckets/Memo/objects/../body",
                     "/apps/emuapp/buckets/Memo/objects/a%5C..%5Cb", "/apps/emuapp/buckets/..%2FMemo/objects"] {
            let response = await dialect.respond(to: kiiRequest(dialect, "PUT", path, body: Data("x".utf8),
                                                                contentType: "text/plain", token: session.token))
            #expect(response.status == 400, "\(path)")
            #expect(kiiErrorCode(response) == "INVALID_INPUT_DATA", "\(path)")
        }
        let badID = await dialect.respond(to: kiiRequest(dialect, "PUT", "/apps/emuapp/buckets/Memo/objects/a%20b", json: .object(["x": 1]), token: session.token))
        #expect(badID.status == 400 && kiiErrorCode(badID) == "INVALID_OBJECT_ID")
    }

    @Test("oversized bodies and objects are refused with the dialect's Kii error")
    func sizes() async throws {
        let dialect = try makeKiiDialect(configure: { $0.maxBodySize = 1024; $0.maxObjectSize = 100 })
        let user = kiiClient(dialect)
        let session = try await user.signUp(username: "alice", password: "pw-alice", email: nil, fields: [:])
        let memo = try await user.create(Record(className: "Memo", fields: ["text": "short"]))
        let body = "/apps/emuapp/buckets/Memo/objects/\(memo.id!)/body"
        let big = await dialect.respond(to: kiiRequest(dialect, "PUT", body, body: Data(count: 2048), contentType: "application/octet-stream", token: session.token))
        #expect(big.status == 413 && kiiErrorCode(big) == "REQUEST_ENTITY_TOO_LARGE")
        let huge = try await EmulatorTransport(dialect).send(kiiRequest(dialect, "PUT", body, body: Data(count: dialect.maxRequestBodySize + 1),
                                                                        contentType: "application/octet-stream", token: session.token))
        #expect(huge.status == 413 && kiiErrorCode(huge) == "REQUEST_ENTITY_TOO_LARGE")
        let longObject = await dialect.respond(to: kiiRequest(dialect, "POST", "/apps/emuapp/buckets/Memo/objects",
                                                              json: .object(["text": .string(String(repeating: "x", count: 200))]), token: session.token))
        #expect(longObject.status == 400 && kiiErrorCode(longObject) == "INVALID_INPUT_DATA")
        let small = await dialect.respond(to: kiiRequest(dialect, "PUT", body, body: Data("hello".utf8), contentType: "text/plain", token: session.token))
        #expect(small.status == 200)
        let read = await dialect.respond(to: kiiRequest(dialect, "GET", body, token: session.token))
        #expect(read.status == 200 && read.body == Data("hello".utf8) && read.headers["Content-Type"] == "text/plain")
        // A body has its own version: the object's ETag stays (Kii, [sdk] Unity TestKiiObject_body.cs).
        #expect(try await user.get(className: "Memo", id: memo.id!).version == "1")
        #expect(await dialect.respond(to: kiiRequest(dialect, "HEAD", body, token: session.token)).status == 204)
        // Another user may read (app scope) but not replace or delete the body; the body goes with its object.
        let bob = kiiClient(dialect)
        let bobSession = try await bob.signUp(username: "bob", password: "pw-bob", email: nil, fields: [:])
        let revoke = await dialect.respond(to: kiiRequest(dialect, "DELETE", "/apps/emuapp/buckets/Memo/objects/\(memo.id!)/acl/WRITE_EXISTING_OBJECT/UserID:ANY_AUTHENTICATED_USER", token: session.token))
        #expect(revoke.status == 204)
        let overwrite = await dialect.respond(to: kiiRequest(dialect, "PUT", body, body: Data("evil".utf8), contentType: "text/plain", token: bobSession.token))
        #expect(overwrite.status == 401 && kiiErrorCode(overwrite) == "UNAUTHORIZED")
        let erase = await dialect.respond(to: kiiRequest(dialect, "DELETE", body, token: bobSession.token))
        #expect(erase.status == 401)
        #expect(await dialect.respond(to: kiiRequest(dialect, "GET", body, token: bobSession.token)).body == Data("hello".utf8))
        try await user.delete(className: "Memo", id: memo.id!, expectedVersion: nil)
        let gone = await dialect.respond(to: kiiRequest(dialect, "GET", body, token: session.token))
        #expect(gone.status == 404 && kiiErrorCode(gone) == "OBJECT_NOT_FOUND")
        #expect(try await dialect.store.sharing(session: nil, administrative: true).listFiles(prefix: "kiibody/", limit: nil).isEmpty)
    }
}

@Suite("Kii dialect over HTTP")
struct KiiDialectHTTPTests {
    @Test("the Kii client works against the dialect served by EmulatorServer, and the server is tolerant as SDKs need")
    func overHTTP() async throws {
        guard #available(macOS 14, iOS 17, tvOS 17, *) else { return }
        let dialect = try makeKiiDialect()
        let running = try await EmulatorServer(dialect: dialect).start()
        do {
            // 120 s per request: in a full parallel run on two cores, the server may wait long for the cooperative pool.
            let url = try BackendURL(parsing: dialect.backendURL(host: running.host, port: running.port) + "?timeout=120")
            let kii = try KiiBackend(url: url)
            let session = try await kii.signUp(username: "httpuser", password: "pw-http", email: nil, fields: [:])
            let memo = try await kii.create(Record(className: "Memo", fields: ["title": "over http", "n": 1]))
            let id = try #require(memo.id)
            let read = try await kii.get(className: "Memo", id: id)
            #expect(read.fields["title"] == "over http" && read.version == "1")
            #expect(try await kii.queryPage(Query("Memo", predicate: .compare("n", .eq, 1))).records.map(\.id) == [id])
            #expect(try await kii.currentUser().id == session.userId)
            // Tolerance: a trailing slash and a Content-Type on a GET.
            var request = kiiRequest(dialect, "GET", "/apps/emuapp/buckets/Memo/objects/\(id)/", contentType: "application/json", token: session.token)
            request.url = URL(string: running.baseURL + "/api/apps/emuapp/buckets/Memo/objects/\(id)/")!
            let raw = try await URLSessionTransport().send(request)
            #expect(raw.status == 200)
            #expect(raw.headers["ETag"] == "\"1\"")
        } catch {
            await running.stop()
            throw error
        }
        await running.stop()
    }
}
