import Foundation
import MBaaSCore
import MBaaSTesting
import Testing

@testable import MBaaSAppPot

let simulatorURL = "apppot+http://APP_KEY@apppot.test:8080/apppot?company=24&app=jp.co.example.App&version=1.0&device=UDID1"
let fixedClock: @Sendable () -> Date = { Date(timeIntervalSince1970: 1_700_000_000) }

/// A backend on a fresh simulator.
func makeBackend(_ sim: AppPotSimulator = AppPotSimulator(), url: String = simulatorURL) async throws -> (AppPotBackend, AppPotSimulator) {
    let backend = try await AppPotBackendFactory().open(try BackendURL(parsing: url),
                                                        context: BackendContext(transport: sim, clock: fixedClock))
    return (backend as! AppPotBackend, sim)
}

/// A backend logged in as alice.
func aliceBackend(_ sim: AppPotSimulator = AppPotSimulator()) async throws -> (AppPotBackend, AppPotSimulator) {
    let (b, s) = try await makeBackend(sim)
    _ = try await b.logIn(username: "alice", password: "alice-pass")
    return (b, s)
}

@Suite("AppPot URL")
struct URLTests {
    @Test("the URL carries host, context root, company, app, version, key and device")
    func parse() throws {
        let c = try AppPotConfiguration(url: try BackendURL(parsing: "apppot://KEY@trial.apppot.net/apppot?company=24&app=jp.co.example.App&version=1.0"))
        #expect(c.serverBase == "https://trial.apppot.net")
        #expect(c.apiPath == "/apppot/api/24/jp.co.example.App/1.0")
        #expect(c.appKey == "KEY" && c.deviceUDID == "mbaaskit" && c.loginUser == nil && !c.anonymousData)
        let url = try c.url(["files", "a b+c.txt"], query: [("userToken", "t")])
        #expect(url.absoluteString == "https://trial.apppot.net/apppot/api/24/jp.co.example.App/1.0/files/a%20b%2Bc.txt?userToken=t")
        let h = try AppPotConfiguration(url: try BackendURL(parsing: "apppot+http://K@127.0.0.1:8080?company=1&app=a&version=1_0_0&device=D"))
        #expect(h.serverBase == "http://127.0.0.1:8080" && h.contextRoot == "apppot" && h.deviceUDID == "D")
        let u = try BackendURL(parsing: "apppot://K:secret@h/ctx/root?company=1&app=a&version=1&user=alice")
        let l = try AppPotConfiguration(url: u)
        #expect(l.loginUser == "alice" && l.loginPassword == "secret" && l.contextRoot == "ctx/root")
        #expect(l.timeout == nil)
        #expect(try AppPotConfiguration(url: try BackendURL(parsing: "apppot://K@h?company=1&app=a&version=1&timeout=45")).timeout == 45)
        #expect(!u.description.contains("secret"))
    }

    @Test("missing or unknown parts are named", arguments: [
        ("apppot://h/apppot?company=1&app=a&version=1", "app key"),
        ("apppot://K@h/apppot?app=a&version=1", "company"),
        ("apppot://K@h/apppot?company=1&version=1", "app id"),
        ("apppot://K@h/apppot?company=1&app=a", "version"),
        ("apppot://K@h/apppot?company=1&app=a&version=1&colour=red", "colour"),
        ("apppot://K@h/apppot?company=1&app=a&version=1&user=alice", "password"),
        ("ncmb://K@h/apppot?company=1&app=a&version=1", "not an AppPot URL"),
        ("apppot://K@h/apppot?company=1&app=a&version=1&timeout=0", "timeout"),
    ])
    func bad(_ text: String, _ named: String) throws {
        let e = try #require(throws: MBaaSError.self) { try AppPotConfiguration(url: try BackendURL(parsing: text)) }
        #expect(e.kind == .invalidRequest)
        #expect(e.message.contains(named), "\(e.message)")
    }

    @Test("the factory registers the apppot scheme")
    func factory() {
        let registry = BackendRegistry([AppPotBackendFactory()])
        #expect(registry.schemes == ["apppot"])
        #expect(registry.adapterNames == ["apppot"])
    }
}

@Suite("AppPot auth against the simulator")
struct AuthTests {
    @Test("login: anonymous token, then auth/login; session with groups and roles")
    func login() async throws {
        let (b, sim) = try await makeBackend()
        let session = try await b.logIn(username: "bob", password: "bob-pass")
        #expect(session.userId == "21" && session.username == "bob")
        #expect(session.expiresAt == fixedClock().addingTimeInterval(18_000))
        #expect(session.extras["groupIds"] == "12,13" && session.extras["roles"] == "Manager,User")
        #expect(sim.requestCount == 2)
        let user = try await b.currentUser()
        #expect(user.id == "21" && user.username == "bob" && user.groups == ["12", "13"] && user.roles == ["Manager", "User"])
        #expect(user.fields["groupNames"] == ["12": "Sales", "13": "Ops"])
    }

    @Test("authInfo and nested groups are read too")
    func nestedLogin() async throws {
        var o = AppPotSimulator.Options()
        o.authInfoKey = "authInfo"
        o.nestedGroups = true
        let (b, _) = try await makeBackend(AppPotSimulator(options: o))
        let s = try await b.logIn(username: "bob", password: "bob-pass")
        #expect(s.extras["groupIds"] == "12,13")
    }

    @Test("a wrong password (111) or user (110) is unauthorized and keeps the previous session")
    func wrongPassword() async throws {
        let (b, _) = try await aliceBackend()
        let before = await b.session
        for (user, code) in [("alice", "111"), ("nobody", "110")] {
            let e = try await #require(throws: MBaaSError.self) { try await b.logIn(username: user, password: "wrong") }
            #expect(e.kind == .unauthorized && e.vendorCode == code)
        }
        let after = await b.session
        #expect(after == before)
    }

    @Test("data calls without a session are refused before any request")
    func needsLogin() async throws {
        let (b, sim) = try await makeBackend()
        let e = try await #require(throws: MBaaSError.self) { try await b.create(Record(className: "Memo", fields: ["a": 1])) }
        #expect(e.kind == .unauthorized)
        await #expect(throws: MBaaSError.self) { try await b.queryPage(Query("Memo")) }
        await #expect(throws: MBaaSError.self) { try await b.get(className: "Memo", id: "x") }
        await #expect(throws: MBaaSError.self) { try await b.currentUser() }
        #expect(sim.requestCount == 0)
    }

    @Test("anonymousData sends the anonymous token; the simulator refuses it (112)")
    func anonymousData() async throws {
        let (b, _) = try await makeBackend(url: simulatorURL + "&anonymousData=true")
        let e = try await #require(throws: MBaaSError.self) { try await b.get(className: "Memo", id: "x") }
        #expect(e.vendorCode == "112" && e.kind == .unauthorized)
    }

    @Test("logout with the server; later calls fail locally; logout without confirmation sends nothing")
    func logout() async throws {
        let (b, sim) = try await aliceBackend()
        let token = try #require(await b.session?.token)
        try await b.logOut(confirmWithServer: true)
        let cleared = await b.session
        #expect(cleared == nil)
        // The server forgot the token: using it again is 121.
        await b.restore(Session(token: token, userId: "20"))
        let e = try await #require(throws: MBaaSError.self) { try await b.currentUser() }
        #expect(e.vendorCode == "121" && e.kind == .unauthorized)
        let ended = await b.session
        #expect(ended == nil, "121 ends the session")
        _ = try await b.logIn(username: "alice", password: "alice-pass")
        let n = sim.requestCount
        try await b.logOut(confirmWithServer: false)
        let offline = await b.session
        #expect(sim.requestCount == n && offline == nil)
    }

    @Test("token expiry (120) ends the session")
    func expiry() async throws {
        let (b, sim) = try await aliceBackend()
        sim.advance(seconds: 18_001)
        let e = try await #require(throws: MBaaSError.self) { try await b.queryPage(Query("Memo")) }
        #expect(e.vendorCode == "120" && e.kind == .unauthorized)
        let expired = await b.session
        #expect(expired == nil)
    }

    @Test("the URL's user is logged in by the first call that needs a session; opening sends nothing")
    func urlLogin() async throws {
        let url = simulatorURL.replacingOccurrences(of: "APP_KEY@", with: "APP_KEY:carol-pass@") + "&user=carol"
        let (b, sim) = try await makeBackend(url: url)
        let before = await b.session
        #expect(before == nil && sim.requestCount == 0)
        #expect(try await b.queryPage(Query("Memo")).records.isEmpty)
        let s = await b.session
        #expect(s?.userId == "22")
        // After an explicit logout the URL's user is not logged in again behind the caller's back.
        try await b.logOut(confirmWithServer: false)
        await #expect(throws: MBaaSError.self) { try await b.queryPage(Query("Memo")) }
        let (wrong, _) = try await makeBackend(url: url.replacingOccurrences(of: "carol-pass", with: "nope"))
        let e = try await #require(throws: MBaaSError.self) { try await wrong.currentUser() }
        #expect(e.vendorCode == "111")
    }

    @Test("sign-up is unsupported and declared")
    func signUp() async throws {
        let (b, _) = try await makeBackend()
        let e = try await #require(throws: MBaaSError.self) { try await b.signUp(username: "x", password: "y") }
        #expect(e.kind == .unsupported)
        #expect(!b.capabilities.has(.signUp) && b.capabilities.note(for: .signUp) != nil)
    }
}

@Suite("AppPot records against the simulator")
struct RecordTests {
    @Test("creating in an unknown class defines it from the record, then stores typed values")
    func createDynamic() async throws {
        let (b, sim) = try await aliceBackend()
        let due = Date(timeIntervalSince1970: 1_390_085_336.544)
        let fields: [String: Value] = ["title": "rent", "money": 50, "rate": 0.5, "done": true, "due": .date(due),
                                       "tags": ["a", "b"], "where": .geoPoint(GeoPoint(latitude: 35.6, longitude: 139.7))]
        let created = try await b.create(Record(className: "Memo", fields: fields))
        #expect(created.id?.hasPrefix("Memo_") == true)
        #expect(created.fields == fields)
        #expect(created.version != nil && created.createdAt != nil && created.acl == ACL([.group("12"): .readWrite]))
        #expect(sim.table("Memo")?.columns["done"]?.length == 1)
        let got = try await b.get(className: "Memo", id: created.id!)
        #expect(got == created)
        // A second create in the known class sends no schema request.
        let n = sim.requestCount
        _ = try await b.create(Record(className: "Memo", fields: ["title": "x"]))
        #expect(sim.requestCount == n + 1)
    }

    @Test("a field that is not a column is refused with the columns named")
    func unknownField() async throws {
        let (b, _) = try await aliceBackend()
        _ = try await b.create(Record(className: "Memo", fields: ["title": "a"]))
        let e = try await #require(throws: MBaaSError.self) { try await b.create(Record(className: "Memo", fields: ["note": "x"])) }
        #expect(e.kind == .invalidRequest && e.message.contains("'note'") && e.message.contains("title"))
        let wrongType = try await #require(throws: MBaaSError.self) { try await b.create(Record(className: "Memo", fields: ["title": 5])) }
        #expect(wrongType.kind == .invalidRequest)
    }

    @Test("update: whole record back, version changes; a stale version is a conflict (130)")
    func updateAndConflict() async throws {
        let (b, _) = try await aliceBackend()
        let r = try await b.create(Record(className: "Memo", fields: ["title": "a", "money": 1]))
        let u = try await b.update(className: "Memo", id: r.id!, RecordUpdate(changes: ["money": .set(2)], expectedVersion: r.version))
        #expect(u.fields == ["title": "a", "money": 2])
        #expect(u.version != r.version && u.createdAt == r.createdAt)
        let e = try await #require(throws: MBaaSError.self) {
            try await b.update(className: "Memo", id: r.id!, RecordUpdate(changes: ["money": .set(3)], expectedVersion: r.version))
        }
        #expect(e.kind == .conflict && e.vendorCode == "130")
        #expect(try await b.get(className: "Memo", id: r.id!).fields["money"] == 2)
        let cleared = try await b.update(className: "Memo", id: r.id!, RecordUpdate(changes: ["title": .delete]))
        #expect(cleared.fields == ["money": 2])
        let op = try await #require(throws: MBaaSError.self) {
            try await b.update(className: "Memo", id: r.id!, RecordUpdate(changes: ["money": .increment(1)]))
        }
        #expect(op.kind == .unsupported)
    }

    @Test("delete: stale version is a conflict, missing is notFound")
    func delete() async throws {
        let (b, _) = try await aliceBackend()
        let r = try await b.create(Record(className: "Memo", fields: ["title": "a"]))
        _ = try await b.update(className: "Memo", id: r.id!, .set(["title": "b"]))
        let e = try await #require(throws: MBaaSError.self) { try await b.delete(className: "Memo", id: r.id!, expectedVersion: r.version) }
        #expect(e.kind == .conflict)
        try await b.delete(className: "Memo", id: r.id!)
        let gone = try await #require(throws: MBaaSError.self) { try await b.get(className: "Memo", id: r.id!) }
        #expect(gone.kind == .notFound)
        let again = try await #require(throws: MBaaSError.self) { try await b.delete(className: "Memo", id: r.id!) }
        #expect(again.kind == .notFound)
        let stale = try await #require(throws: MBaaSError.self) { try await b.delete(className: "Memo", id: r.id!, expectedVersion: "v") }
        #expect(stale.kind == .notFound, "130 on a record that is gone is notFound")
    }

    @Test("queries: 404 is an empty page, paging by 1-based offsets, counts")
    func queries() async throws {
        let (b, _) = try await aliceBackend()
        try await b.defineClass("Memo", columns: ["title": .varchar(50), "money": .long])
        #expect(try await b.queryPage(Query("Memo")).records.isEmpty)
        #expect(try await b.count(Query("Memo")) == 0)
        for i in 1...7 { _ = try await b.create(Record(className: "Memo", fields: ["title": .string("t\(i % 3)"), "money": .int(Int64(i))])) }
        let q = Query("Memo").filter(Field("money") >= 2).sorted("-money")
        let first = try await b.queryPage(q.limit(4))
        #expect(first.records.map { $0.fields["money"]?.intValue } == [7, 6, 5, 4])
        #expect(first.nextCursor == "4")
        var next = q.limit(4)
        next.cursor = first.nextCursor
        let second = try await b.queryPage(next)
        #expect(second.records.map { $0.fields["money"]?.intValue } == [3, 2])
        #expect(second.nextCursor == nil)
        let all = try await b.records(matching: q, pageSize: 2).collect()
        #expect(all.count == 6)
        #expect(try await b.count(q) == 6)
        #expect(try await b.count(Query("Memo").filter(Field("title") == "t1" || Field("money").isIn([2, 3]))) == 5)
        #expect(try await b.queryPage(Query("Memo").filter(Field("title").hasPrefix("t2"))).records.count == 2)
        #expect(try await b.queryPage(Query("Memo").filter(Field("money") > 100)).records.isEmpty)
        #expect(try await b.queryPage(Query("Memo").filter(Field("money").isIn([]))).records.isEmpty)
        #expect(try await b.queryPage(Query("Memo").skip(5).sorted("money")).records.map { $0.fields["money"]?.intValue } == [6, 7])
        let e = try await #require(throws: MBaaSError.self) { try await b.queryPage(Query("Memo").filter(Field("title").matches("t"))) }
        #expect(e.kind == .unsupported)
    }

    @Test("batch: one request per run, per-row failures (-1), not atomic")
    func batch() async throws {
        let (b, sim) = try await aliceBackend()
        let seed = try await b.create(Record(className: "Memo", id: "Memo_fixed", fields: ["title": "seed"]))
        let uuid = "Memo_0F0E0D0C-0B0A-4909-8807-060504030201"
        #expect(try await b.create(Record(className: "Memo", id: uuid, fields: ["title": "offline id"])).id == uuid)
        let badId = try await #require(throws: MBaaSError.self) { try await b.create(Record(className: "Memo", id: "a/b", fields: [:])) }
        #expect(badId.kind == .invalidRequest && badId.refusesRecordId)
        let n = sim.requestCount
        let results = try await b.batch([
            .create(Record(className: "Memo", fields: ["title": "a"])),
            .create(Record(className: "Memo", id: "Memo_fixed", fields: ["title": "dup"])),
            .create(Record(className: "Memo", fields: ["title": "c"])),
            .update(className: "Memo", id: seed.id!, .set(["title": "changed"])),
            .delete(className: "Memo", id: seed.id!),
        ])
        #expect(sim.requestCount == n + 5, "addData, GET+updateData, GET+deleteData")
        guard results.count == 5, case .success(let a) = results[0], case .failure(let dup) = results[1],
              case .success = results[2], case .success(let changed) = results[3], case .success = results[4] else {
            Issue.record("unexpected results \(results)")
            return
        }
        #expect(a.fields["title"] == "a")
        #expect(dup.vendorCode == "-1")
        #expect(changed.fields["title"] == "changed")
        #expect(try await b.count(Query("Memo")) == 3)
        let tooMany = try await #require(throws: MBaaSError.self) {
            try await b.batch(Array(repeating: .delete(className: "Memo", id: "x"), count: 101))
        }
        #expect(tooMany.kind == .invalidRequest)
    }

    @Test("scopes: owner-only and group records are visible as AppPot says")
    func scopes() async throws {
        let sim = AppPotSimulator()
        let (alice, _) = try await aliceBackend(sim)
        let (bob, _) = try await makeBackend(sim)
        _ = try await bob.logIn(username: "bob", password: "bob-pass")
        let (carol, _) = try await makeBackend(sim)
        _ = try await carol.logIn(username: "carol", password: "carol-pass")
        try await alice.defineClass("Memo", columns: ["title": .varchar(20)])
        for other in [bob, carol] { other.registerClass(alice.schema(for: "Memo")!) }
        let mine = try await alice.create(Record(className: "Memo", acl: .privateTo("20"), fields: ["title": "mine"]))
        let team = try await alice.create(Record(className: "Memo", acl: ACL([.group("12"): .readWrite]), fields: ["title": "team"]))
        let open = try await alice.create(Record(className: "Memo", acl: .publicReadWrite, fields: ["title": "open"]))
        #expect(mine.acl == .privateTo("20") && team.acl == ACL([.group("12"): .readWrite]) && open.acl == .publicReadWrite)
        // No ACL: the AppPot SDKs' default, Group (2).
        let plain = try await alice.create(Record(className: "Memo", fields: ["title": "plain"]))
        #expect(plain.acl == ACL([.group("12"): .readWrite]))
        #expect(sim.table("Memo")?.rows[plain.id!]?["scopeType"] == "2")
        #expect(try await alice.get(className: "Memo", id: mine.id!).acl == .privateTo("20"))
        #expect(try await bob.queryPage(Query("Memo").sorted("title")).records.map { $0.fields["title"]?.stringValue } == ["open", "plain", "team"])
        #expect(try await carol.queryPage(Query("Memo")).records.map { $0.fields["title"]?.stringValue } == ["open"])
        let hidden = try await #require(throws: MBaaSError.self) { try await carol.get(className: "Memo", id: team.id!) }
        #expect(hidden.kind == .notFound)
        let grant = try await #require(throws: MBaaSError.self) {
            try await alice.create(Record(className: "Memo", acl: ACL([.user("21"): .readWrite]), fields: ["title": "x"]))
        }
        #expect(grant.kind == .unsupported)
        let changed = try await alice.update(className: "Memo", id: open.id!, RecordUpdate(acl: .privateTo("20")))
        #expect(changed.acl == .privateTo("20"))
        #expect(try await carol.count(Query("Memo")) == 0)
    }

    @Test("typed models define their class from their properties")
    func typedModel() async throws {
        struct Task: Model {
            static let className = "Task"
            var id: String?
            var title: String
            var done: Bool
            var count: Int
            var small: Int32?
            var score: Double
            var due: Date?
            var tags: [String]
            var blob: Data?
            var version: String?
        }
        #expect(try AppPotModelColumns.columns(of: Task.self) == [
            "title": .varchar(255), "done": .bool, "count": .long, "small": .integer, "score": .double, "due": .dateTime,
            "tags": .json(4000), "blob": .json(4000),
        ])
        let (b, sim) = try await aliceBackend()
        try await b.defineClass(Task.self, resetDatabase: true)
        #expect(sim.table("Task")?.columns["count"]?.type == "long")
        let saved = try await b.save(Task(title: "write", done: false, count: 3, score: 1.25,
                                          due: Date(timeIntervalSince1970: 10), tags: ["x"], blob: Data([1, 2])))
        let back = try await b.get(Task.self, id: saved.id!)
        #expect(back.title == "write" && back.done == false && back.count == 3 && back.score == 1.25)
        #expect(back.due == Date(timeIntervalSince1970: 10) && back.tags == ["x"] && back.blob == Data([1, 2]))
        #expect(back.version == saved.version && back.version != nil)
    }
}

@Suite("AppPot files, logs and devices against the simulator")
struct FileTests {
    @Test("upload stores under a UUID-prefixed name; download, replace, delete")
    func files() async throws {
        let (b, _) = try await aliceBackend()
        let bytes = Data("héllo wörld".utf8)
        let progress = Collector<Int64>()
        let ref = try await b.upload(FileUpload(name: "notes 1.txt", source: .data(bytes), progress: { p in
            progress.append(p.completedBytes)
        }))
        #expect(ref.name.hasSuffix("_notes 1.txt") && ref.name.count > "notes 1.txt".count + 30)
        #expect(ref.url?.contains("/apppot/api/files/") == true && ref.size == Int64(bytes.count))
        #expect(progress.all == [Int64(bytes.count)])
        #expect(try await b.download(ref) == bytes)
        let replaced = try await b.replaceFile(ref, with: FileUpload(name: "notes 2.txt", source: .data(Data([0, 255]))))
        #expect(replaced.name != ref.name)
        #expect(try await b.download(replaced) == Data([0, 255]))
        let old = try await #require(throws: MBaaSError.self) { try await b.download(ref) }
        #expect(old.kind == .notFound)
        try await b.deleteFile(replaced)
        let gone = try await #require(throws: MBaaSError.self) { try await b.deleteFile(replaced) }
        #expect(gone.kind == .notFound)
        for upload in [FileUpload(name: "a", source: .data(Data()), acl: .publicReadWrite),
                       FileUpload(name: "a", source: .data(Data()), attachment: FileAttachment(className: "M", objectId: "1", field: "f"))] {
            let e = try await #require(throws: MBaaSError.self) { try await b.upload(upload) }
            #expect(e.kind == .unsupported)
        }
        await #expect(throws: MBaaSError.self) { try await b.listFiles(prefix: nil, limit: nil) }
    }

    @Test("monitor and error logs; device registration treats 161 as registered")
    func logsAndDevices() async throws {
        let (b, sim) = try await makeBackend()
        try await b.logMonitor("started")
        _ = try await b.logIn(username: "alice", password: "alice-pass")
        try await b.logError("failed")
        #expect(sim.logs.map(\.level) == ["MONITOR", "ERROR"] && sim.logs.map(\.message) == ["started", "failed"])
        #expect(try await b.registerDevice(deviceToken: "push", deviceName: "phone", osType: "iOS") == true)
        #expect(try await b.registerDevice(deviceToken: "push", deviceName: "phone", osType: "iOS") == false)
    }
}

@Suite("AppPot logs and push the SDK way")
struct AppPotLogsAndPushTests {
    @Test("buffered logs are sent at the server's level: Monitor sends all, Error only errors, None nothing (and drops them)")
    func serverControlledLogLevel() async throws {
        let (b, sim) = try await aliceBackend()
        b.bufferLog("one", level: .monitor)
        b.bufferLog("two", level: .error)
        #expect(b.bufferedLogCount == 2 && sim.logs.isEmpty)   // nothing leaves the device until a flush
        #expect(try await b.flushLogs() == 2)
        #expect(sim.logs.map(\.message) == ["one", "two"] && b.bufferedLogCount == 0)
        sim.withState { $0.logLevel = "Error" }
        b.bufferLog("three", level: .monitor)
        b.bufferLog("four", level: .error)
        #expect(try await b.flushLogs() == 1)
        #expect(sim.logs.map(\.message) == ["one", "two", "four"] && sim.logs.last?.level == "ERROR")
        sim.withState { $0.logLevel = "None" }
        b.bufferLog("five", level: .error)
        #expect(try await b.flushLogs() == 0 && b.bufferedLogCount == 0 && sim.logs.count == 3)
        // The level read from the wire (GET logLevel's answer), case-insensitively; anything else is an error.
        #expect(try AppPotServerLogLevel(response: JSON.parse(#"{"status":"OK","errCode":0,"results":"Monitor"}"#)) == .monitor)
        #expect(throws: MBaaSError.self) { try AppPotServerLogLevel(response: JSON.parse(#"{"status":"OK"}"#)) }
    }

    @Test("push: anonymous token, device registration, then log-in with isPush and the same UDID; a second install-time call continues on 161")
    func pushOrder() async throws {
        let (b, sim) = try await makeBackend()
        let session = try await b.registerDeviceAndLogIn(username: "alice", password: "alice-pass", deviceToken: "apns-1",
                                                         deviceName: "phone", osType: "iOS")
        #expect(session.username == "alice")
        // The simulator refuses a push log-in whose UDID is not registered (163), so the order is checked there.
        #expect(sim.withState { $0.pushLogins.map(\.udid) } == ["UDID1"])
        #expect(sim.withState { $0.pushLogins.allSatisfy(\.registeredBefore) })
        let (again, _) = try await makeBackend(sim)
        _ = try await again.registerDeviceAndLogIn(username: "alice", password: "alice-pass", deviceToken: "apns-1",
                                                   deviceName: "phone", osType: "iOS")
        #expect(sim.withState { $0.pushLogins.count } == 2)
    }
}

@Suite("AppPot duplicate-submit guard")
struct TransactionTests {
    func addDataRequests(transactions: Bool) async throws -> (AppPotSimulator, [TransportRequest]) {
        let sim = AppPotSimulator()
        let capture = CapturingTransport(sim)
        let b = try await AppPotBackendFactory().open(
            try BackendURL(parsing: simulatorURL + (transactions ? "&transactions=true" : "")),
            context: BackendContext(transport: capture, clock: fixedClock))
        _ = try await b.logIn(username: "alice", password: "alice-pass")
        _ = try await b.create(Record(className: "Memo", fields: ["n": 1]))
        _ = try await b.create(Record(className: "Memo", fields: ["n": 2]))
        return (sim, capture.requests.filter { $0.url.path.hasSuffix("/data/batch/addData") })
    }

    @Test("transactions=true: every write has its own transactionId, usable as the idempotency key; a resent one is 211")
    func guarded() async throws {
        let (sim, adds) = try await addDataRequests(transactions: true)
        #expect(adds.count == 2)
        let ids = try adds.map { try #require(try JSON.parse($0.body!)["transactionId"]?.stringValue) }
        #expect(ids[0] != ids[1] && ids.allSatisfy { $0.hasPrefix("UDID1_1700000000000_") })
        #expect(adds.map(\.idempotencyKey) == ids)
        guard case .failure(let e) = AppPotEnvelope.check(try await sim.send(adds[0])) else {
            Issue.record("a resent transaction was accepted")
            return
        }
        #expect(e.kind == .duplicate && e.vendorCode == "211")
    }

    @Test("without the option no transactionId is sent and writes are not marked retryable")
    func unguarded() async throws {
        let (_, adds) = try await addDataRequests(transactions: false)
        #expect(adds.count == 2)
        #expect(try adds.allSatisfy { try JSON.parse($0.body!)["transactionId"] == nil && $0.idempotencyKey == nil })
    }
}

@Suite("AppPot 404 as an empty result")
struct EmptyResultTests {
    func backend(_ queryAnswer: TransportResponse) async throws -> AppPotBackend {
        let stub = StubTransport { request in
            if request.url.path.hasSuffix("/anonymousTokens") { return TransportResponse(status: 200, body: AppPotEnvelope.success(results: "anon").data()) }
            if request.url.path.hasSuffix("/auth/login") {
                return TransportResponse(status: 200, body: AppPotAuthInfo(userToken: "user", userId: "1").loginResponse.data())
            }
            return queryAnswer
        }
        let b = try await AppPotBackendFactory().open(try BackendURL(parsing: simulatorURL), context: BackendContext(transport: stub, clock: fixedClock))
        _ = try await b.logIn(username: "u", password: "p")
        return b as! AppPotBackend
    }

    @Test("HTTP 404 with or without an envelope is an empty page and a zero count", arguments: [
        TransportResponse(status: 404, body: Data()),
        TransportResponse(status: 404, body: Data("Not Found".utf8)),
        TransportResponse(status: 404, body: AppPotEnvelope.error(code: 993, description: "Table empty or does not exist").data()),
        TransportResponse(status: 200, body: AppPotEnvelope.error(code: 995, description: "Table empty or does not exist").data()),
    ])
    func empty(_ answer: TransportResponse) async throws {
        let b = try await backend(answer)
        let page = try await b.queryPage(Query("Memo").filter(Field("n") > 1))
        #expect(page.records.isEmpty && page.nextCursor == nil)
        #expect(try await b.count(Query("Memo")) == 0)
    }

    @Test("other query errors are errors; token errors end the session")
    func errors() async throws {
        let bad = try await backend(TransportResponse(status: 200, body: AppPotEnvelope.error(code: 220, description: "Cannot execute query").data()))
        let e = try await #require(throws: MBaaSError.self) { try await bad.queryPage(Query("Memo")) }
        #expect(e.kind == .invalidRequest && e.vendorCode == "220")
        let expired = try await backend(TransportResponse(status: 404, body: AppPotEnvelope.error(code: 120, description: "Token expired").data()))
        let t = try await #require(throws: MBaaSError.self) { try await expired.queryPage(Query("Memo")) }
        #expect(t.kind == .unauthorized)
        let s = await expired.session
        #expect(s == nil)
    }
}

@Suite("AppPot wire profile")
struct AppPotWireProfileTests {
    @Test func theTokenHeaderIsCapturedAndSecretAndItsMembersAreTokens() {
        let p = AppPotBackendFactory().wireProfile
        #expect(p.isSecretHeader("apppot-token") && p.isSecretHeader("Authorization"))
        #expect(p.isCapturedByPrefix("apppot-token"))
        for field in ["apppot-token", "userTokens", "results", "token"] { #expect(p.isTokenField(field), "\(field)") }
        #expect(p.isVolatileHeader("User-Agent") && p.requiresHost)
    }
}
