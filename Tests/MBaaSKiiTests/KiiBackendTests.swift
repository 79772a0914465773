import Foundation
import MBaaSCore
import MBaaSTesting
import Testing

@testable import MBaaSKii
@testable import MBaaSKiiWire

let fixedNow = Date(timeIntervalSince1970: 1_717_200_000)

/// A backend over the simulator. `admin` opens it in admin mode (`?clientID=`).
func simulated(_ sim: KiiSimulator, admin: Bool = false) -> KiiBackend {
    let config = KiiConfiguration(
        appID: "simapp", appKey: "anykey", baseURL: "https://api-jp.kii.com/api",
        adminCredentials: admin ? .init(clientID: "simclient", clientSecret: "simsecret") : nil)
    return KiiBackend(configuration: config, context: BackendContext(transport: sim, clock: { fixedNow }))
}

@Suite struct KiiBackendTests {
    // MARK: Objects

    @Test func crudRoundTripsEveryValueAndKeepsMetadataOutOfFields() async throws {
        let sim = KiiSimulator()
        let kii = simulated(sim)
        _ = try await kii.signUp(username: "alice", password: "pw-Secret1")
        let date = try #require(ISO8601.parse("2024-03-31T12:34:56.789Z"))
        let fields: [String: Value] = [
            "title": "日本語", "n": 5, "x": 2.5, "ok": false, "none": .null, "when": .date(date), "raw": .bytes(Data([1, 2])),
            "at": .geoPoint(GeoPoint(latitude: 35.6, longitude: 139.7)), "ref": .pointer(Pointer(className: "T", objectId: "t1")),
            "nested": ["a": [1, ["b": "c"]]],
        ]
        let created = try await kii.create(Record(className: "Memo", fields: fields))
        let id = try #require(created.id)
        #expect(created.version == "1" && created.createdAt != nil && created.updatedAt == created.createdAt)
        #expect(created.fields == fields)
        let got = try await kii.get(className: "Memo", id: id)
        #expect(got.fields == fields && got.version == "1" && got.createdAt == created.createdAt)
        // The wire body: GeoPoint in Kii's shape, the date in the neutral form.
        let post = try #require(await sim.log.first { $0.method == .post && $0.url.path.hasSuffix("/objects") })
        let body = try JSON.parse(try #require(post.body))
        #expect(body["at"] == (try JSON.parse(#"{"_type":"point","lat":35.6,"lon":139.7}"#)))
        #expect(body["when"]?["__type"] == "Date")
        #expect(post.headers["Content-Type"] == "application/vnd.simapp.mydata+json")

        let patched = try await kii.update(className: "Memo", id: id, .set(["n": 6]))
        #expect(patched.fields["n"] == 6 && patched.fields["title"] == "日本語" && patched.version == "2")
        let unset = try await kii.update(className: "Memo", id: id, RecordUpdate(changes: ["none": .delete, "x": .set(9)]))
        #expect(unset.fields["none"] == nil && unset.fields["x"] == 9 && unset.fields["title"] == "日本語" && unset.version == "3")
        #expect(try await kii.get(className: "Memo", id: id).fields["none"] == nil)
        // The field removal went as a full PUT guarded by the version just read.
        let put = try #require(await sim.log.last { $0.method == .put })
        #expect(put.headers["If-Match"] == "2")
        try await kii.delete(className: "Memo", id: id)
        await #expect { try await kii.get(className: "Memo", id: id) } throws: {
            ($0 as! MBaaSError).kind == .notFound && ($0 as! MBaaSError).vendorCode == "OBJECT_NOT_FOUND"
        }
    }

    @Test func staleVersionsAreConflictsAndChangeNothing() async throws {
        let sim = KiiSimulator()
        let kii = simulated(sim, admin: true)
        let r = try await kii.create(Record(className: "Memo", fields: ["n": 1]))
        let id = try #require(r.id)
        let v2 = try await kii.update(className: "Memo", id: id, .set(["n": 2], expectedVersion: r.version))
        #expect(v2.version == "2")
        let patch = try #require(await sim.log.last { $0.headers["X-HTTP-Method-Override"] == "PATCH" })
        #expect(patch.headers["If-Match"] == "1")
        await #expect { try await kii.update(className: "Memo", id: id, .set(["n": 3], expectedVersion: "1")) } throws: {
            let e = $0 as! MBaaSError
            return e.kind == .conflict && e.vendorCode == "OBJECT_VERSION_IS_STALE" && e.httpStatus == 409
        }
        await #expect { try await kii.update(className: "Memo", id: id, RecordUpdate(changes: ["n": .delete], expectedVersion: "1")) }
            throws: { ($0 as! MBaaSError).kind == .conflict }
        await #expect { try await kii.delete(className: "Memo", id: id, expectedVersion: "1") } throws: {
            ($0 as! MBaaSError).kind == .conflict
        }
        #expect(try await kii.get(className: "Memo", id: id).fields == ["n": 2])
        try await kii.delete(className: "Memo", id: id, expectedVersion: "2")
    }

    @Test func clientChosenIdsAreCreateOnly() async throws {
        let kii = simulated(KiiSimulator(), admin: true)
        let r = try await kii.create(Record(className: "Memo", id: "my-id.1", fields: ["a": 1]))
        #expect(r.id == "my-id.1" && r.version == "1" && r.fields == ["a": 1])
        await #expect { try await kii.create(Record(className: "Memo", id: "my-id.1", fields: ["a": 2])) } throws: {
            ($0 as! MBaaSError).kind == .duplicate && ($0 as! MBaaSError).vendorCode == "OBJECT_ALREADY_EXISTS"
        }
        await #expect { try await kii.create(Record(className: "Memo", id: "bad id!", fields: [:])) } throws: {
            ($0 as! MBaaSError).kind == .invalidRequest && ($0 as! MBaaSError).refusesRecordId
        }
    }

    @Test func unsupportedOperationsAreRefusedBeforeAnyRequest() async throws {
        let stub = StubTransport(responses: [])
        let kii = KiiBackend(configuration: KiiConfiguration(appID: "a"), context: BackendContext(transport: stub))
        await #expect { try await kii.update(className: "Memo", id: "o1", RecordUpdate(changes: ["n": .increment(1)])) } throws: {
            ($0 as! MBaaSError).kind == .unsupported
        }
        for q in [Query("Memo").skip(2), Query("Memo").sorted("a", "b"), Query("Memo").select(["a"]),
                  Query("Memo").filter(Field("t").matches("^a"))] {
            await #expect { try await kii.queryPage(q) } throws: { ($0 as! MBaaSError).kind == .unsupported }
        }
        await #expect { try await kii.create(Record(className: "Bad Class!", fields: ["n": 1])) } throws: {
            ($0 as! MBaaSError).kind == .invalidRequest
        }
        await #expect { try await kii.create(Record(className: "Memo", fields: ["createdAt": "x"])) } throws: {
            ($0 as! MBaaSError).kind == .invalidRequest
        }
        await #expect { try await kii.queryPage(Query("Memo").limit(-1)) } throws: { ($0 as! MBaaSError).kind == .invalidRequest }
        #expect(stub.requests.isEmpty)
    }

    // MARK: Queries

    @Test func recordsFollowThePaginationKeyAcrossPages() async throws {
        // Three pages from a stub: the adapter must send each nextPaginationKey back with the identical bucketQuery.
        let stub = StubTransport(responses: [
            .jsonText(200, #"{"results":[{"_id":"a","n":1,"_version":1},{"_id":"b","n":2,"_version":1}],"nextPaginationKey":"k1"}"#),
            .jsonText(200, #"{"results":[{"_id":"c","n":3,"_version":"2"},{"_id":"d","n":4}],"nextPaginationKey":"k2"}"#),
            .jsonText(200, #"{"results":[{"_id":"e","n":5}]}"#),
        ])
        let kii = KiiBackend(configuration: KiiConfiguration(appID: "a1"), context: BackendContext(transport: stub))
        let q = Query("Memo").filter(Field("n") >= 1).sorted("n")
        let records = try await kii.records(matching: q, pageSize: 2).collect()
        #expect(records.map(\.id) == ["a", "b", "c", "d", "e"])
        #expect(records[2].version == "2" && records[0].version == "1")
        let bodies = try stub.requests.map { try JSON.parse(try #require($0.body)) }
        #expect(bodies.count == 3)
        #expect(bodies.map { $0["paginationKey"] } == [nil, "k1", "k2"])
        #expect(bodies.allSatisfy { $0["bucketQuery"] == bodies[0]["bucketQuery"] && $0["bestEffortLimit"] == 2 })
        #expect(bodies[0]["bucketQuery"]?["orderBy"] == "n" && bodies[0]["bucketQuery"]?["descending"] == false)
        #expect(stub.requests.allSatisfy { $0.url.path == "/api/apps/a1/buckets/Memo/query" && $0.method == .post })
        #expect(stub.requests[0].headers["Content-Type"] == "application/vnd.kii.QueryRequest+json")
    }

    @Test func queriesMatchTheNeutralSemanticsOnTheSimulator() async throws {
        let kii = simulated(KiiSimulator(), admin: true)
        var ids: [String: String] = [:]
        for (title, n, note) in [("alpha", 1, "x"), ("beta", 2, "y"), ("gamma", 3, nil)] as [(String, Int64, String?)] {
            var f: [String: Value] = ["title": .string(title), "n": .int(n)]
            if let note { f["note"] = .string(note) }
            ids[title] = try await kii.create(Record(className: "Qs", fields: f)).id
        }
        func titles(_ whereJSON: String?, sort: String = "n") async throws -> [String] {
            var q = Query("Qs").sorted(sort)
            if let whereJSON { q.predicate = try QueryPredicate(json: JSON.parse(whereJSON)) }
            return try await kii.records(matching: q).collect().compactMap { $0.fields["title"]?.stringValue }
        }
        #expect(try await titles(nil) == ["alpha", "beta", "gamma"])
        #expect(try await titles(nil, sort: "-n") == ["gamma", "beta", "alpha"])
        #expect(try await titles(#"{"n":2}"#) == ["beta"])
        // ne, nin, not and exists are not declared (three-valued negation, KiiClauseTranslator): refused.
        for refused in [#"{"note":{"$ne":"x"}}"#, #"{"note":{"$nin":["x","y"]}}"#, #"{"$not":{"note":"y"}}"#,
                        #"{"note":{"$exists":true}}"#, #"{"note":{"$exists":false}}"#] {
            await #expect(throws: MBaaSError.self, "\(refused)") { _ = try await titles(refused) }
        }
        #expect(try await titles(#"{"n":{"$gt":1,"$lte":3}}"#) == ["beta", "gamma"])
        #expect(try await titles(#"{"title":{"$in":["alpha","gamma","delta"]}}"#) == ["alpha", "gamma"])
        #expect(try await titles(#"{"title":{"$prefix":"ga"}}"#) == ["gamma"])
        #expect(try await titles(#"{"$or":[{"n":1},{"$and":[{"n":{"$gte":3}},{"title":"gamma"}]}]}"#) == ["alpha", "gamma"])
        #expect(try await titles(#"{"id":"\#(ids["beta"]!)"}"#) == ["beta"])
        #expect(try await kii.count(Query("Qs")) == 3)
        #expect(try await kii.count(Query("Qs").filter(Field("n") >= 2).limit(1)) == 2)
        // A class never written holds nothing.
        #expect(try await kii.queryPage(Query("Nothing")).records.isEmpty)
        #expect(try await kii.count(Query("Nothing")) == 0)
        let first = try await kii.queryPage(Query("Qs").sorted("n").limit(2))
        #expect(first.records.count == 2 && first.nextCursor != nil)
        var next = Query("Qs").sorted("n").limit(2)
        next.cursor = first.nextCursor
        #expect(try await kii.queryPage(next).records.map { $0.fields["title"] } == ["gamma"])
        #expect(try await kii.queryPage(Query("Qs").limit(0)).records.isEmpty)
    }

    @Test func rawGeoClausesReachKii() async throws {
        let kii = simulated(KiiSimulator(), admin: true)
        _ = try await kii.create(Record(className: "Place", fields: ["name": "Tokyo", "at": .geoPoint(GeoPoint(latitude: 35.681, longitude: 139.767))]))
        _ = try await kii.create(Record(className: "Place", fields: ["name": "Osaka", "at": .geoPoint(GeoPoint(latitude: 34.702, longitude: 135.495))]))
        let near = KiiQueryRequest(clause: .geoDistance(field: "at", center: KiiGeoPoint(lat: 35.69, lon: 139.70), radius: 20_000,
                                                        putDistanceInto: "d"), orderBy: "_calculated.d", descending: false)
        #expect(try await kii.queryPage(className: "Place", request: near).records.map { $0.fields["name"] } == ["Tokyo"])
        let box = KiiQueryRequest(clause: .geoBox(field: "at", northEast: KiiGeoPoint(lat: 35, lon: 136), southWest: KiiGeoPoint(lat: 34, lon: 135)))
        #expect(try await kii.queryPage(className: "Place", request: box).records.map { $0.fields["name"] } == ["Osaka"])
    }

    // MARK: Scopes and permissions

    @Test func scopesAddressTheirOwnBuckets() async throws {
        let sim = KiiSimulator()
        let alice = simulated(sim), bob = simulated(sim)
        let a = try await alice.signUp(username: "alice", password: "pw-Secret1")
        _ = try await bob.signUp(username: "bob", password: "pw-Secret1")
        let mine = try await alice.create(Record(className: "users/me/Notes", fields: ["t": "a's"]))
        _ = try await bob.create(Record(className: "users/me/Notes", fields: ["t": "b's"]))
        #expect(try await alice.records(matching: Query("users/me/Notes")).collect().map { $0.fields["t"] } == ["a's"])
        #expect(await sim.log.contains { $0.url.path == "/api/apps/simapp/users/me/buckets/Notes/objects" })
        // The same bucket by the owner's id; another user may not read it.
        let byID = "users/\(a.userId)/Notes"
        #expect(try await alice.get(className: byID, id: try #require(mine.id)).fields["t"] == "a's")
        await #expect { try await bob.get(className: byID, id: mine.id!) } throws: { ($0 as! MBaaSError).kind == .forbidden }
        // users/me without a session is refused locally.
        let anonymous = simulated(sim)
        await #expect { try await anonymous.queryPage(Query("users/me/Notes")) } throws: { ($0 as! MBaaSError).kind == .unauthorized }
        // Group scope.
        let group = try await alice.createGroup(name: "team", members: [])
        let post = try await alice.create(Record(className: "groups/\(group)/Board", fields: ["msg": "hi"]))
        #expect(try await alice.get(className: "groups/\(group)/Board", id: post.id!).fields["msg"] == "hi")
        await #expect { try await bob.get(className: "groups/\(group)/Board", id: post.id!) } throws: {
            ($0 as! MBaaSError).kind == .forbidden
        }
    }

    @Test func anonymousCallersMayReadButNotWriteTheAppScope() async throws {
        let sim = KiiSimulator()
        let admin = simulated(sim, admin: true), anonymous = simulated(sim)
        let r = try await admin.create(Record(className: "Memo", fields: ["a": 1]))
        #expect(try await anonymous.get(className: "Memo", id: r.id!).fields == ["a": 1])
        await #expect { try await anonymous.create(Record(className: "Memo", fields: ["a": 2])) } throws: {
            let e = $0 as! MBaaSError
            return e.kind == .unauthorized && e.vendorCode == "UNAUTHORIZED" && e.httpStatus == 401
        }
        // Admin mode fetched one admin token and reused it.
        let grants = await sim.log.filter { $0.url.path == "/api/oauth2/token" }
        #expect(grants.count == 1)
        // [sdk] KiiCloudSDK-JS KiiSDK.js and python3-kii kii/users.py: {client_id, client_secret}, no grant_type.
        let grant = try JSON.parse(grants[0].body!)
        #expect(grant["grant_type"] == nil)
        #expect(grant == (try JSON.parse(#"{"client_id":"simclient","client_secret":"simsecret"}"#)))
    }

    /// The adapter does not declare `acl` (app-scope buckets let every caller read every object): a record or an
    /// update carrying an ACL is refused before anything is sent; `setACL` writes Kii object ACL entries explicitly.
    @Test func recordACLsAreRefusedAndSetACLIsExplicit() async throws {
        let sim = KiiSimulator()
        let alice = simulated(sim), bob = simulated(sim)
        let a = try await alice.signUp(username: "alice", password: "pw-Secret1")
        _ = try await bob.signUp(username: "bob", password: "pw-Secret1")
        #expect(!alice.capabilities.has(.acl))
        let before = await sim.log.count
        let refused = await #expect(throws: MBaaSError.self) {
            _ = try await alice.create(Record(className: "Memo", acl: .privateTo(a.userId), fields: ["s": "mine"]))
        }
        #expect(refused?.kind == .unsupported)
        #expect(await sim.log.count == before, "nothing was sent")
        let r = try await alice.create(Record(className: "Memo", fields: ["s": "mine"]))
        await #expect { try await alice.update(className: "Memo", id: r.id!, RecordUpdate(acl: .privateTo(a.userId))) } throws: {
            ($0 as! MBaaSError).kind == .unsupported
        }
        try await alice.setACL(.privateTo(a.userId), className: "Memo", id: r.id!)
        #expect(try await alice.acl(className: "Memo", id: r.id!) == .privateTo(a.userId))
        await #expect { try await bob.update(className: "Memo", id: r.id!, .set(["s": "bob's"])) } throws: {
            ($0 as! MBaaSError).kind == .forbidden
        }
        // Kii's documented default: app-scope buckets let every caller read every object (why acl is not declared).
        #expect(try await bob.get(className: "Memo", id: r.id!).fields["s"] == "mine")

        // What a copy must carry (aclRead): the object's ACL with the bucket's read-every-object grant, which here is
        // everyone's; an object that is gone is left out. One request for the bucket, one per object.
        #expect(alice.capabilities.has(.aclRead) && !alice.capabilities.has(.acl))
        let admin = simulated(sim, admin: true)
        let before2 = await sim.log.count
        let acls = try await admin.recordACLs(className: "Memo", ids: [r.id!, "gone"])
        // (The simulator's default bucket grants name anonymous and authenticated callers; the latter has no neutral
        // principal and stays the user `ANY_AUTHENTICATED_USER`, the adapter's spelling of it.)
        #expect(acls == [r.id!: ACL([.everyone: .read, .user("ANY_AUTHENTICATED_USER"): .read, .user(a.userId): .readWrite])], "\(acls)")
        let sent = await sim.log.dropFirst(before2).filter { $0.url.path.hasSuffix("/acl") }.map { "\($0.method) \($0.url.path)" }
        #expect(sent == ["GET /api/apps/simapp/buckets/Memo/acl", "GET /api/apps/simapp/buckets/Memo/objects/\(r.id!)/acl",
                         "GET /api/apps/simapp/buckets/Memo/objects/gone/acl"], "\(sent)")
        // A bucket that grants no one reading every object: the object's own ACL alone.
        try await admin.setClassACL(ACL([.user(a.userId): .readWrite]), className: "Memo")
        #expect(try await admin.recordACLs(className: "Memo", ids: [r.id!]) == [r.id!: .privateTo(a.userId)])
        #expect(try await admin.recordACLs(className: "Memo", ids: []) == [:])
    }

    @Test func bucketACLsOpenAUserBucketToOthers() async throws {
        let sim = KiiSimulator()
        let alice = simulated(sim), bob = simulated(sim)
        let a = try await alice.signUp(username: "alice", password: "pw-Secret1")
        let b = try await bob.signUp(username: "bob", password: "pw-Secret1")
        _ = try await alice.create(Record(className: "users/me/Shared", fields: ["t": "hello"]))
        let shared = "users/\(a.userId)/Shared"
        await #expect { try await bob.queryPage(Query(shared)) } throws: { ($0 as! MBaaSError).kind == .forbidden }
        let before = try await alice.classACL(className: "users/me/Shared")
        #expect(before[.user(a.userId)] == .readWrite && before[.user(b.userId)] == ACL.Access())
        try await alice.setClassACL(ACL([.user(a.userId): .readWrite, .user(b.userId): .read]), className: "users/me/Shared")
        #expect(try await bob.queryPage(Query(shared)).records.map { $0.fields["t"] } == ["hello"])
        #expect(try await alice.classACL(className: "users/me/Shared")[.user(b.userId)] == .read)
        let grants = await sim.log.filter { $0.method == .put && $0.url.path.contains("/acl/") }.map(\.url.path)
        #expect(grants == ["/api/apps/simapp/users/me/buckets/Shared/acl/QUERY_OBJECTS_IN_BUCKET/UserID:\(b.userId)",
                           "/api/apps/simapp/users/me/buckets/Shared/acl/READ_OBJECTS_IN_BUCKET/UserID:\(b.userId)"])
    }

    // MARK: Files

    @Test func attachmentsAreObjectBodiesWithTheirContentType() async throws {
        let sim = KiiSimulator()
        let kii = simulated(sim, admin: true)
        let doc = try await kii.create(Record(className: "Doc", fields: ["title": "with a file"]))
        let bytes = Data((0..<300).map { UInt8($0 % 256) })
        let progress = Collector<TransferProgress>()
        let ref = try await kii.upload(FileUpload(
            name: "scan.png", source: .data(bytes), contentType: "image/png",
            attachment: FileAttachment(className: "Doc", objectId: doc.id!, field: "scan"), progress: { progress.append($0) }))
        #expect(ref.attachment == FileAttachment(className: "Doc", objectId: doc.id!, field: "scan"))
        #expect(ref.contentType == "image/png" && ref.size == 300 && progress.all.last?.completedBytes == 300)
        let put = try #require(await sim.log.first { $0.method == .put && $0.url.path.hasSuffix("/body") })
        #expect(put.headers["Content-Type"] == "image/png" && put.body == bytes)
        #expect(put.url.path == "/api/apps/simapp/buckets/Doc/objects/\(doc.id!)/body")
        let record = try await kii.get(className: "Doc", id: doc.id!)
        #expect(record.fields["scan"]?.fileValue?.attachment == ref.attachment && record.fields["title"] == "with a file")
        #expect(try await kii.download(ref) == bytes)
        #expect(try await kii.download(try #require(record.fields["scan"]?.fileValue)) == bytes)
        await #expect {
            try await kii.upload(FileUpload(name: "b.txt", source: .data(Data("x".utf8)),
                                            attachment: FileAttachment(className: "Doc", objectId: doc.id!, field: "other")))
        } throws: { ($0 as! MBaaSError).kind == .unsupported }
        try await kii.deleteFile(ref)
        #expect(try await kii.get(className: "Doc", id: doc.id!).fields["scan"] == nil)
        await #expect { try await kii.download(ref) } throws: {
            ($0 as! MBaaSError).kind == .notFound && ($0 as! MBaaSError).vendorCode == "OBJECT_BODY_NOT_FOUND"
        }
    }

    @Test func theFileStoreIsABucketOfBodies() async throws {
        let sim = KiiSimulator()
        let kii = simulated(sim, admin: true)
        let ref = try await kii.upload(Data("日本語".utf8), name: "メモ🎉.txt", contentType: "text/plain")
        #expect(ref.name == "メモ🎉.txt" && ref.attachment == nil && ref.url?.contains("/buckets/mbaas_files/objects/") == true)
        _ = try await kii.upload(Data("2".utf8), name: "other.bin")
        #expect(try await kii.download(ref) == Data("日本語".utf8))
        #expect(try await kii.download(name: "メモ🎉.txt") == Data("日本語".utf8))
        let listed = try await kii.listFiles(prefix: "メモ", limit: nil)
        #expect(listed.map(\.reference.name) == ["メモ🎉.txt"] && listed[0].reference.contentType == "text/plain")
        #expect(try await kii.listFiles(prefix: nil, limit: nil).map(\.reference.name) == ["メモ🎉.txt", "other.bin"])
        #expect(try await kii.listFiles(prefix: nil, limit: 1).count == 1)
        try await kii.deleteFile(ref)
        await #expect { try await kii.download(ref) } throws: { ($0 as! MBaaSError).kind == .notFound }
        await #expect { try await kii.download(name: "missing.txt") } throws: { ($0 as! MBaaSError).kind == .notFound }
        await #expect { try await kii.deleteFile(FileReference(name: "missing.txt")) } throws: { ($0 as! MBaaSError).kind == .notFound }
    }

    /// A file-store file's ACL is its files-bucket object's: not in listings (no `fileACLListing`), read per file with
    /// `GET {object}/acl` (`fileACLRead`), by reference or by name; an attached body has none of its own.
    @Test func aFilesACLIsReadOnItsOwn() async throws {
        let sim = KiiSimulator()
        let alice = simulated(sim)
        let a = try await alice.signUp(username: "alice", password: "pw-Secret1")
        let kii = simulated(sim, admin: true)
        #expect(kii.capabilities.has(.fileACLRead) && !kii.capabilities.has(.fileACLListing))
        let ref = try await kii.upload(FileUpload(name: "private.txt", source: .data(Data("p".utf8)), acl: .privateTo(a.userId)))
        #expect(try await kii.listFiles(prefix: "private", limit: nil).map(\.acl) == [nil])
        // As Kii enforces it: the object's grants, and read for whoever the files bucket lets read every object (the
        // simulator's default app-scope grants: anonymous and authenticated callers).
        let effective = ACL([.user(a.userId): .readWrite, .everyone: .read, .user("ANY_AUTHENTICATED_USER"): .read])
        let before = await sim.log.count
        #expect(try await kii.fileACL(ref) == effective)
        let read = await sim.log.dropFirst(before).map { "\($0.method) \($0.url.path)" }
        #expect(read == ["GET /api/apps/simapp/buckets/mbaas_files/objects/\(ref.url!.split(separator: "/").dropLast().last!)/acl",
                         "GET /api/apps/simapp/buckets/mbaas_files/acl"], "\(read)")
        #expect(try await kii.fileACL(FileReference(name: "private.txt")) == effective)
        // A files bucket that lets no one read every object: the object's own grants alone.
        try await kii.setClassACL(ACL([.user(a.userId): .readWrite]), className: "mbaas_files")
        #expect(try await kii.fileACL(ref) == .privateTo(a.userId))
        await #expect { try await kii.fileACL(FileReference(name: "missing.txt")) } throws: { ($0 as! MBaaSError).kind == .notFound }
        let doc = try await kii.create(Record(className: "Doc", fields: ["title": "t"]))
        let attached = try await kii.upload(FileUpload(name: "a.png", source: .data(Data("a".utf8)),
                                                       attachment: FileAttachment(className: "Doc", objectId: doc.id!, field: "scan")))
        await #expect { try await kii.fileACL(attached) } throws: { ($0 as! MBaaSError).kind == .unsupported }
    }

    // MARK: Auth

    @Test func signUpLogInAndCurrentUser() async throws {
        let sim = KiiSimulator()
        let kii = simulated(sim)
        let s = try await kii.signUp(username: "alice", password: "pw-Secret1", email: "a@example.com", fields: ["age": 30])
        #expect(s.username == "alice" && !s.userId.isEmpty && s.expiresAt != nil)
        let register = try #require(await sim.log.first { $0.url.path == "/api/apps/simapp/users" })
        #expect(register.headers["Content-Type"] == "application/vnd.kii.RegistrationRequest+json")
        #expect(register.headers["Authorization"] == nil)
        let me = try await kii.currentUser()
        #expect(me.id == s.userId && me.username == "alice" && me.email == "a@example.com" && me.fields["age"] == 30)
        await #expect { try await kii.signUp(username: "alice", password: "pw-Secret1") } throws: {
            ($0 as! MBaaSError).kind == .duplicate && ($0 as! MBaaSError).vendorCode == "USER_ALREADY_EXISTS"
        }
        await #expect { try await kii.logIn(username: "alice", password: "wrong-pass") } throws: {
            ($0 as! MBaaSError).kind == .unauthorized && ($0 as! MBaaSError).vendorCode == "invalid_grant"
        }
        #expect(await kii.session?.token == s.token, "a failed login keeps the session")
        let byEmail = try await kii.logIn(username: "a@example.com", password: "pw-Secret1")
        #expect(byEmail.userId == s.userId)
        try await kii.logOut(confirmWithServer: false)
        #expect(await kii.session == nil)
        await #expect { try await kii.currentUser() } throws: { ($0 as! MBaaSError).kind == .unauthorized }
        await kii.restore(byEmail)
        #expect(try await kii.currentUser().id == s.userId)
        await #expect { try await kii.logOut(confirmWithServer: true) } throws: { ($0 as! MBaaSError).kind == .unsupported }
        #expect(await kii.session == nil)
    }

    @Test func tokensRefreshBeforeTheyExpire() async throws {
        var options = KiiSimulator.Options()
        options.tokenLifetime = 600
        options.issueRefreshTokens = true
        let sim = KiiSimulator(options: options)
        let clock = TestClock(fixedNow)
        let kii = KiiBackend(configuration: KiiConfiguration(appID: "simapp", baseURL: "https://api-jp.kii.com/api"),
                             context: BackendContext(transport: sim, clock: { clock.now }))
        let first = try await kii.signUp(username: "alice", password: "pw-Secret1")
        #expect(first.refreshToken != nil && first.expiresAt == fixedNow.addingTimeInterval(600))
        clock.set(to: fixedNow.addingTimeInterval(400))  // less than five minutes left
        _ = try await kii.currentUser()
        let renewed = try #require(await kii.session)
        #expect(renewed.token != first.token && renewed.refreshToken != first.refreshToken)
        let refresh = try #require(await sim.log.last { $0.url.path == "/api/oauth2/token" })
        #expect(try JSON.parse(refresh.body!) == (try JSON.parse(#"{"grant_type":"refresh_token","refresh_token":"\#(first.refreshToken!)"}"#)))
        // The old refresh token no longer works: a session restored with it ends on refresh.
        await kii.restore(first)
        await #expect { try await kii.refreshSession() } throws: { ($0 as! MBaaSError).kind == .unauthorized }
        #expect(await kii.session == nil)
    }

    @Test func aRejectedTokenEndsTheSession() async throws {
        let sim = KiiSimulator()
        let kii = simulated(sim)
        _ = try await kii.signUp(username: "alice", password: "pw-Secret1")
        await kii.restore(Session(token: "forged", userId: "u1"))
        await #expect { try await kii.get(className: "Memo", id: "x1") } throws: {
            ($0 as! MBaaSError).kind == .unauthorized && ($0 as! MBaaSError).vendorCode == "WRONG_TOKEN"
        }
        #expect(await kii.session == nil)
    }

    @Test func theFactoryOpensKiiURLs() async throws {
        var registry = BackendRegistry()
        registry.register(KiiBackendFactory())
        let stub = StubTransport(responses: [.jsonText(200, #"{"_id":"o1","a":1,"_version":"4"}"#, headers: [("ETag", "\"4\"")])])
        let backend = try await registry.open("kii://app9:key9@jp", context: BackendContext(transport: stub))
        #expect(backend.adapterName == "kii" && !backend.capabilities.has(.skip) && !backend.capabilities.has(.operator(.nin)))
        let r = try await backend.get(className: "Memo", id: "o1")
        #expect(r.version == "4" && r.fields == ["a": 1])
        #expect(stub.requests[0].url.absoluteString == "https://api-jp.kii.com/api/apps/app9/buckets/Memo/objects/o1")
        #expect(stub.requests[0].headers["X-Kii-AppKey"] == "key9")
    }
}

/// batch is not declared: batch() refuses rather than applying operations one by one.
@Suite struct KiiBatchTests {
    @Test func batchIsUnsupportedAndSendsNothing() async throws {
        let stub = StubTransport(responses: [])
        let kii = KiiBackend(configuration: KiiConfiguration(appID: "a1"), context: BackendContext(transport: stub))
        #expect(!kii.capabilities.has(.batch))
        let error = await #expect(throws: MBaaSError.self) {
            _ = try await kii.batch([.create(Record(className: "Memo", fields: ["a": 1]))])
        }
        #expect(error?.kind == .unsupported)
        #expect(stub.requests.isEmpty)
    }
}

@Suite("Kii wire profile")
struct KiiWireProfileTests {
    @Test func applicationHeadersAreSecretAndTheSDKHeaderVolatile() {
        let p = KiiBackendFactory().wireProfile
        #expect(p.isSecretHeader("X-Kii-AppID") && p.isSecretHeader("X-Kii-AppKey") && p.isSecretHeader("Authorization"))
        #expect(p.isVolatileHeader("X-Kii-SDK") && p.isVolatileHeader("Date"))
        #expect(p.isTokenField("access_token"))
        #expect(p.capturedHeaderPrefixes.isEmpty && p.requiresHost)
    }
}
