import Foundation
import MBaaSCore
import MBaaSTesting
import MBaaSReplay
import Testing

@testable import MBaaSAppPot

/// The adapter against the simulator where the real server differs from what the old simulator assumed: NULL
/// answered as "", MySQL semantics, three generations, and the fixture users.
@Suite("AppPot server fidelity")
struct SimulatorFidelityTests {
    static func backend(_ sim: AppPotSimulator, generation: String = "v2", extra: String = "") async throws -> AppPotBackend {
        let url = simulatorURL + "&generation=\(generation)" + extra
        let b = try await AppPotBackendFactory().open(try BackendURL(parsing: url),
                                                      context: BackendContext(transport: sim, clock: fixedClock))
        return b as! AppPotBackend
    }

    static func sim(_ generation: String = "v2") -> AppPotSimulator {
        var o = AppPotSimulator.Options()
        o.generation = generation
        return AppPotSimulator(options: o)
    }

    @Test("a sparse row (NULL answered as \"\") reads, pages and updates in every column type", arguments: ["v2", "v3", "v4"])
    func sparseRows(generation: String) async throws {
        let sim = Self.sim(generation)
        let b = try await Self.backend(sim, generation: generation)
        _ = try await b.logIn(username: "alice", password: "alice-pass")
        try await b.defineClass("Memo", columns: ["title": .varchar(20), "n": .integer, "big": .long, "done": .bool,
                                                  "due": .dateTime, "rate": .double, "extra": .json(100)])
        let full = try await b.create(Record(className: "Memo", fields: ["title": "full", "n": 1, "big": 2, "done": false,
                                                                        "due": .date(Date(timeIntervalSince1970: 5)), "rate": 1.5,
                                                                        "extra": ["a": 1]]))
        let sparse = try await b.create(Record(className: "Memo", fields: ["title": "sparse"]))
        // The server answers the unset columns as "".
        let raw = try await b.fetchRow(className: "Memo", id: sparse.id!)
        #expect(raw?["n"] == "" && raw?["done"] == "" && raw?["due"] == "" && raw?["rate"] == "" && raw?["extra"] == "")
        #expect(try await b.get(className: "Memo", id: sparse.id!).fields == ["title": "sparse"])
        let page = try await b.queryPage(Query("Memo").sorted("title"))
        #expect(page.records.map(\.id) == [full.id, sparse.id])
        #expect(page.records[0].fields["done"] == false)
        let updated = try await b.update(className: "Memo", id: sparse.id!, RecordUpdate(changes: ["n": .set(7)]))
        #expect(updated.fields == ["title": "sparse", "n": 7])
        #expect(try await b.get(className: "Memo", id: sparse.id!).fields == ["title": "sparse", "n": 7])
        // Sent back as NULL, not "" (a "" in a number column is an error or 0 in MySQL).
        #expect(sim.table("Memo")?.rows[sparse.id!]?["done"] ?? .null == .null)
    }

    @Test("MySQL: = and LIKE ignore case, NULLs sort first ascending")
    func mysqlSemantics() async throws {
        let sim = Self.sim()
        let b = try await Self.backend(sim)
        _ = try await b.logIn(username: "alice", password: "alice-pass")
        try await b.defineClass("City", columns: ["name": .varchar(40), "rank": .long])
        for (name, rank) in [("Tokyo", 1), ("tokyo", 2), ("Osaka", nil)] as [(String, Int?)] {
            var fields: [String: Value] = ["name": .string(name)]
            if let rank { fields["rank"] = .int(Int64(rank)) }
            _ = try await b.create(Record(className: "City", fields: fields))
        }
        #expect(try await b.count(Query("City").filter(Field("name") == "TOKYO")) == 2)
        #expect(try await b.count(Query("City").filter(Field("name").hasPrefix("TOK"))) == 2)
        let asc = try await b.queryPage(Query("City").sorted("rank")).records.map { $0.fields["name"]?.stringValue }
        #expect(asc == ["Osaka", "Tokyo", "tokyo"])
        let desc = try await b.queryPage(Query("City").sorted(by: [SortKey("rank", ascending: false)])).records.map { $0.fields["name"]?.stringValue }
        #expect(desc == ["tokyo", "Tokyo", "Osaka"])
    }

    @Test("MySQL row limit: a wide class is refused before any request on v2, fits as text columns on v3")
    func rowLimit() async throws {
        let wide = Dictionary(uniqueKeysWithValues: (1...6).map { ("c\($0)", AppPotColumnType.json(4000)) })
        let sim = Self.sim()
        let b = try await Self.backend(sim)
        _ = try await b.logIn(username: "alice", password: "alice-pass")
        let before = sim.requestCount
        let e = try await #require(throws: MBaaSError.self) { try await b.defineClass("Wide", columns: wide) }
        #expect(e.kind == .invalidRequest && e.message.contains("65535") && e.message.contains("c1"))
        #expect(sim.requestCount == before)
        // The simulator refuses it too (errCode 103), independently.
        let direct = try await Self.backend(sim)
        _ = try await direct.logIn(username: "alice", password: "alice-pass")
        let v3sim = Self.sim("v3")
        let v3 = try await Self.backend(v3sim, generation: "v3")
        _ = try await v3.logIn(username: "alice", password: "alice-pass")
        try await v3.defineClass("Wide", columns: wide)
        #expect(v3sim.table("Wide")?.columns["c1"]?.type == "text")
    }

    @Test("varchar lengths are checked before writing, naming the column and the limit")
    func varcharLimit() async throws {
        let sim = Self.sim()
        let b = try await Self.backend(sim)
        _ = try await b.logIn(username: "alice", password: "alice-pass")
        try await b.defineClass("Memo", columns: ["title": .varchar(5)])
        let before = sim.requestCount
        let e = try await #require(throws: MBaaSError.self) {
            try await b.create(Record(className: "Memo", fields: ["title": "too long"]))
        }
        #expect(e.kind == .invalidRequest && e.message.contains("'title'") && e.message.contains("5"))
        #expect(sim.requestCount == before)
    }

    @Test("defaultScope: group unless the URL says otherwise")
    func defaultScope() async throws {
        let sim = Self.sim()
        let b = try await Self.backend(sim, extra: "&defaultScope=all")
        _ = try await b.logIn(username: "alice", password: "alice-pass")
        let r = try await b.create(Record(className: "Memo", fields: ["title": "x"]))
        #expect(r.acl == .publicReadWrite)
        #expect(sim.table("Memo")?.rows[r.id!]?["scopeType"] == "3")
        #expect(throws: MBaaSError.self) { try AppPotConfiguration(url: BackendURL(parsing: simulatorURL + "&defaultScope=team")) }
        #expect(try AppPotConfiguration(url: BackendURL(parsing: simulatorURL)).defaultScope == .group)
        #expect(try AppPotConfiguration(url: BackendURL(parsing: simulatorURL + "&generation=v3")).generation == .v3)
        #expect(throws: MBaaSError.self) { try AppPotConfiguration(url: BackendURL(parsing: simulatorURL + "&generation=v9")) }
    }

    @Test("doubles written JS-style match rows another client wrote as \"5\"")
    func doubleEquality() async throws {
        let sim = Self.sim()
        let b = try await Self.backend(sim)
        _ = try await b.logIn(username: "alice", password: "alice-pass")
        try await b.defineClass("Memo", columns: ["rate": .double])
        _ = try await b.create(Record(className: "Memo", fields: ["rate": 5.0]))
        #expect(sim.table("Memo")?.rows.values.first?["rate"] == "5")
        #expect(try await b.count(Query("Memo").filter(Field("rate") == 5)) == 1)
    }

    @Test("fixture users: login, wrong password, currentUser, server logout, token dead afterwards", arguments: ["v2", "v3", "v4"])
    func fixtureUsers(generation: String) async throws {
        let sim = Self.sim(generation)
        let alice = try await Self.backend(sim, generation: generation)
        let bob = try await Self.backend(sim, generation: generation)
        let wrong = try await #require(throws: MBaaSError.self) { try await alice.logIn(username: "alice", password: "bob-pass") }
        #expect(wrong.kind == .unauthorized)
        let a = try await alice.logIn(username: "alice", password: "alice-pass")
        let b = try await bob.logIn(username: "bob", password: "bob-pass")
        #expect(a.userId != b.userId)
        let ua = try await alice.currentUser(), ub = try await bob.currentUser()
        #expect(ua.username == "alice" && ub.username == "bob")
        #expect(!Set(ua.groups).isDisjoint(with: ub.groups))
        try await alice.logOut(confirmWithServer: true)
        #expect(await alice.session == nil)
        // The old token is dead on the server.
        await alice.restore(a)
        let dead = try await #require(throws: MBaaSError.self) { try await alice.currentUser() }
        #expect(dead.vendorCode == "121" && dead.kind == .unauthorized)
        #expect(await alice.session == nil)
        #expect(try await bob.currentUser().username == "bob")
    }

    @Test("every simulator answer names its fact with an evidence mark")
    func facts() async throws {
        let sim = Self.sim()
        let recorder = RecordingTransport(wrapping: sim, profile: AppPotCassettes.profile,
                                          scrubber: AppPotCassettes.scrubber(appKey: "APP_KEY"))
        let b = try await AppPotBackendFactory().open(try BackendURL(parsing: simulatorURL),
                                                      context: BackendContext(transport: recorder, clock: fixedClock)) as! AppPotBackend
        _ = try? await b.logIn(username: "alice", password: "nope")
        _ = try await b.logIn(username: "alice", password: "alice-pass")
        let r = try await b.create(Record(className: "Memo", fields: ["n": 1]))
        _ = try await b.get(className: "Memo", id: r.id!)
        _ = try await b.count(Query("Memo"))
        _ = try await b.queryPage(Query("Memo").filter(Field("n") == 99))
        _ = try? await b.get(className: "Memo", id: "nope")
        _ = try await b.currentUser()
        try await b.logOut(confirmWithServer: true)
        let c = recorder.cassette(name: "facts", adapter: "apppot", provenance: .authored(facts: []), recordedAt: fixedClock())
        #expect(c.interactions.count >= 9)
        for i in c.interactions {
            #expect(i.evidence != nil, "\(i.request.method) \(i.request.path): \(i.fact ?? "none")")
        }
    }
}

@Suite("AppPot directory export")
struct DirectoryTests {
    @Test("listUsers pages the directory by id; listRoles and findUser read the same list — apppot-sdk-js v2.3 src/ts/user.ts User.list")
    func directory() async throws {
        let sim = AppPotSimulator()
        let capture = CapturingTransport(sim)
        let b = try await AppPotBackendFactory().open(try BackendURL(parsing: simulatorURL),
                                                      context: BackendContext(transport: capture, clock: fixedClock)) as! AppPotBackend
        _ = try await b.logIn(username: "alice", password: "alice-pass")
        let first = try await b.listUsers(after: nil, limit: 2)
        #expect(first.users.map(\.id) == ["20", "21"] && first.nextCursor == "21")
        let second = try await b.listUsers(after: first.nextCursor, limit: 2)
        #expect(second.users.map(\.username) == ["carol"] && second.nextCursor == nil)
        #expect(first.users[1].groups == ["12", "13"] && first.users[1].roles == ["Manager", "User"])
        #expect(first.users[0].fields["groupNames"] == ["12": "Sales"])
        let roles = try await b.listRoles()
        #expect(roles.map(\.name) == ["Manager", "User"])
        #expect(roles.first { $0.name == "User" }?.users == ["20", "21", "22"])
        #expect(try await b.findUser(username: "bob")?.id == "21")
        #expect(try await b.findUser(username: "nobody") == nil)
        let list = try #require(capture.requests.last { $0.url.path.hasSuffix("/users") })
        #expect(list.url.query?.contains("token=") == true)
        let json = try JSON.parse(#"{"users":[{"userId":205,"account":"user001","firstName":"","groupsRoles":[{"groupId":7,"groupName":"group001","roleName":"Admin","roleId":3}]}]}"#)
        #expect(try AppPotDirectoryCodec.users(json) == [DirectoryUser(id: "205", username: "user001", roles: ["Admin"], groups: ["7"],
                                                                       fields: ["groupNames": ["7": "group001"]])])
    }
}

@Suite("AppPot classes that already exist")
struct ExistingClassTests {
    static func seeded() async throws -> (AppPotSimulator, String) {
        let sim = AppPotSimulator()
        let (writer, _) = try await aliceBackend(sim)
        try await writer.defineClass("Memo", columns: ["title": .varchar(20), "n": .long])
        let r = try await writer.create(Record(className: "Memo", fields: ["title": "a", "n": 5]))
        return (sim, r.id!)
    }

    @Test("reading a class whose types this client does not know fails loudly, naming the columns; untypedReads=true gives strings")
    func reads() async throws {
        let (sim, id) = try await Self.seeded()
        let (reader, _) = try await aliceBackend(sim)
        let e = try await #require(throws: MBaaSError.self) { try await reader.get(className: "Memo", id: id) }
        #expect(e.kind == .invalidRequest && e.message.contains("Memo") && e.message.contains("title") && e.message.contains("registerClass"))
        let q = try await #require(throws: MBaaSError.self) { try await reader.queryPage(Query("Memo")) }
        #expect(q.kind == .invalidRequest)
        let u = try await #require(throws: MBaaSError.self) {
            try await reader.update(className: "Memo", id: id, RecordUpdate(changes: ["n": .set(6)]))
        }
        #expect(u.kind == .invalidRequest)
        // A missing record in an unknown class is still notFound; an empty result still empty.
        #expect(try await reader.queryPage(Query("Memo").filter(Field("id") == "none")).records.isEmpty)
        reader.registerClass(AppPotClassSchema(name: "Memo", columns: ["title": .varchar(20), "n": .long]))
        #expect(try await reader.get(className: "Memo", id: id).fields == ["title": "a", "n": 5])
        let (loose, _) = try await makeBackend(sim, url: simulatorURL + "&untypedReads=true")
        _ = try await loose.logIn(username: "alice", password: "alice-pass")
        #expect(try await loose.get(className: "Memo", id: id).fields == ["title": "a", "n": "5"])
    }

    @Test("a first write into a class that already holds rows is refused instead of caching guessed types")
    func firstWrite() async throws {
        let (sim, _) = try await Self.seeded()
        let (other, _) = try await aliceBackend(sim)
        let e = try await #require(throws: MBaaSError.self) {
            try await other.create(Record(className: "Memo", fields: ["title": "b", "n": 1.5]))
        }
        #expect(e.kind == .invalidRequest && e.message.contains("already exists"))
        #expect(other.schema(for: "Memo") == nil)
        #expect(sim.table("Memo")?.rows.count == 1)
    }

    @Test("a derived schema whose first write fails is forgotten")
    func forgotten() async throws {
        let sim = AppPotSimulator()
        let (a, _) = try await aliceBackend(sim)
        // An empty table with other columns exists: the probe finds no row, POST schemas keeps the old table.
        try await a.defineClass("Memo", columns: ["title": .varchar(20)])
        let (b, _) = try await aliceBackend(sim)
        let e = try await #require(throws: MBaaSError.self) { try await b.create(Record(className: "Memo", fields: ["n": 1])) }
        #expect(e.kind == .invalidRequest || e.vendorCode == "109")
        #expect(b.schema(for: "Memo") == nil)
    }
}

@Suite("AppPot per-record groups")
struct GroupIdsTests {
    @Test("clientGroupIds=true: an ACL naming some of the writer's groups sends groupIds (docs 05.2 example); without it, unsupported")
    func subset() async throws {
        let sim = AppPotSimulator()
        let capture = CapturingTransport(sim)
        let b = try await AppPotBackendFactory().open(try BackendURL(parsing: simulatorURL + "&clientGroupIds=true"),
                                                      context: BackendContext(transport: capture, clock: fixedClock)) as! AppPotBackend
        _ = try await b.logIn(username: "bob", password: "bob-pass")  // groups 12 and 13
        let acl = ACL([.group("13"): .readWrite])
        let r = try await b.create(Record(className: "Memo", acl: acl, fields: ["title": "ops only"]))
        #expect(r.acl == acl)
        let add = try #require(capture.requests.last { $0.url.path.hasSuffix("/addData") })
        let addBody = try #require(add.body)
        let row = try #require(try JSON.parse(addBody)["data"]?.arrayValue?.first)
        #expect(row["groupIds"] == "13" && row["scopeType"] == 2)
        #expect(try await b.get(className: "Memo", id: r.id!).acl == acl)
        // alice (group 12 only) cannot see it; with all of bob's groups it is the plain group scope.
        let (alice, _) = try await aliceBackend(sim)
        alice.registerClass(b.schema(for: "Memo")!)
        #expect(try await alice.queryPage(Query("Memo")).records.isEmpty)
        let moved = try await b.update(className: "Memo", id: r.id!, RecordUpdate(changes: [:], acl: ACL([.group("12"): .readWrite])))
        #expect(moved.acl == ACL([.group("12"): .readWrite]))
        #expect(try await alice.queryPage(Query("Memo")).records.count == 1)

        let (plain, _) = try await makeBackend(sim)
        _ = try await plain.logIn(username: "bob", password: "bob-pass")
        plain.registerClass(b.schema(for: "Memo")!)
        let e = try await #require(throws: MBaaSError.self) {
            try await plain.create(Record(className: "Memo", acl: acl, fields: ["title": "x"]))
        }
        #expect(e.kind == .unsupported)
    }
}
