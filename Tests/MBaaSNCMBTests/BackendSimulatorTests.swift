import Foundation
import MBaaSCore
import Testing
@testable import MBaaSNCMB

/// The adapter end to end against the documented-behaviour simulator (which shares no code with the adapter's
/// codec or signer).
@Suite("NCMB backend against the simulator")
struct BackendSimulatorTests {
    static let appKey = "6145f91061916580c742f806bab67649d10f45920246ff459404c46f00ff3e56"
    static let clientKey = "1343d198b510a0315db1c03f3aa0e32418b7a743f8e4b47cbff670601345cf75"
    static let start = ISO8601.parse("2024-03-01T00:00:00.000Z")!

    static func make(signResponses: Bool = false, verify: Bool = false) -> (NCMBBackend, NCMBSimulator) {
        let sim = NCMBSimulator(applicationKey: appKey, clientKey: clientKey, start: start, signResponses: signResponses)
        let config = NCMBConfiguration(applicationKey: appKey, clientKey: clientKey, verifyResponseSignature: verify)
        return (NCMBBackend(configuration: config, context: BackendContext(transport: sim, clock: { start })), sim)
    }

    @Test("create, get, partial update with every operator, delete; unknown ids are notFound E404001")
    func crud() async throws {
        let (ncmb, sim) = Self.make()
        let due = ISO8601.parse("2024-04-01T12:00:00.000Z")!
        let created = try await ncmb.create(Record(className: "Memo", fields: [
            "title": "rent", "money": 50, "tags": ["a"], "due": .date(due), "where": .geoPoint(GeoPoint(latitude: 35.6, longitude: 139.7)),
            "owner": .pointer(Pointer(className: "_User", objectId: "u1")), "meta": ["k": 1.5], "note": "x",
        ]))
        let id = try #require(created.id)
        #expect(id.count == 16)
        #expect(created.createdAt != nil && created.updatedAt == created.createdAt)
        let got = try await ncmb.get(className: "Memo", id: id)
        #expect(got.fields == created.fields)
        #expect(got.acl == .publicReadWrite)

        let updated = try await ncmb.update(className: "Memo", id: id, RecordUpdate(changes: [
            "money": .increment(5), "tags": .add(["b", "a"]), "note": .delete, "title": .set("rent!"),
        ]))
        #expect(updated.fields["money"] == 55)
        #expect(updated.fields["tags"] == ["a", "b", "a"])
        #expect(updated.fields["note"] == nil)
        #expect(updated.fields["title"] == "rent!")
        #expect(updated.updatedAt! > updated.createdAt!)
        let unique = try await ncmb.update(className: "Memo", id: id, RecordUpdate(changes: ["tags": .addUnique(["c", "a"])]))
        #expect(unique.fields["tags"] == ["a", "b", "a", "c"])
        let removed = try await ncmb.update(className: "Memo", id: id, RecordUpdate(changes: ["tags": .remove(["a"])]))
        #expect(removed.fields["tags"] == ["b", "c"])

        try await ncmb.delete(className: "Memo", id: id)
        #expect(sim.count(of: "classes/Memo") == 0)
        for op in ["get", "update", "delete"] {
            let error = await #expect(throws: MBaaSError.self) {
                switch op {
                case "get": _ = try await ncmb.get(className: "Memo", id: id)
                case "update": _ = try await ncmb.update(className: "Memo", id: id, .set(["a": 1]))
                default: try await ncmb.delete(className: "Memo", id: id)
                }
            }
            #expect(error?.kind == .notFound)
            #expect(error?.vendorCode == "E404001")
            #expect(error?.httpStatus == 404)
        }
    }

    @Test("refusals: ids on create, versions, bytes, reserved names")
    func refusals() async throws {
        let (ncmb, _) = Self.make()
        let idRefused = await #expect(throws: MBaaSError.self) { _ = try await ncmb.create(Record(className: "Memo", id: "x")) }
        #expect(idRefused?.kind == .invalidRequest && idRefused?.refusesRecordId == true, "the refused id is said in the detail")
        let version = await #expect(throws: MBaaSError.self) {
            _ = try await ncmb.update(className: "Memo", id: "x", RecordUpdate(changes: [:], expectedVersion: "1"))
        }
        #expect(version?.kind == .unsupported)
        let bytes = await #expect(throws: MBaaSError.self) { _ = try await ncmb.create(Record(className: "Memo", fields: ["b": .bytes(Data([1]))])) }
        #expect(bytes?.kind == .unsupported)
        let reserved = await #expect(throws: MBaaSError.self) { _ = try await ncmb.create(Record(className: "Memo", fields: ["objectId": "x"])) }
        #expect(reserved?.kind == .invalidRequest)
    }

    @Test("queries: filters, order, offset paging through nextCursor, count, or, prefix, include")
    func queries() async throws {
        let (ncmb, _) = Self.make()
        var ids: [String] = []
        for (i, title) in ["apple", "avocado", "banana", "cherry", "apricot"].enumerated() {
            ids.append(try await ncmb.create(Record(className: "Fruit", fields: [
                "title": .string(title), "money": .int(Int64(i * 25)), "tags": i % 2 == 0 ? ["even"] : ["odd"],
            ])).id!)
        }
        // Default order: -createDate (newest first).
        let all = try await ncmb.queryPage(Query("Fruit"))
        #expect(all.records.map(\.id!) == ids.reversed())
        #expect(all.nextCursor == nil)

        let between = try await ncmb.queryPage(Query("Fruit").filter(Field("money") >= 25 && Field("money") < 100).sorted("money"))
        #expect(between.records.map { $0["title"] } == ["avocado", "banana", "cherry"])

        let prefixed = try await ncmb.queryPage(Query("Fruit").filter(Field("title").hasPrefix("ap")).sorted("title"))
        #expect(prefixed.records.map { $0["title"] } == ["apple", "apricot"])

        let either = try await ncmb.queryPage(Query("Fruit").filter(Field("title") == "cherry" || Field("money") == 0).sorted("-title"))
        #expect(either.records.map { $0["title"] } == ["cherry", "apple"])

        let odd = try await ncmb.queryPage(Query("Fruit").filter(Field("tags").containsAll(["odd"]) && Field("title").isIn(["avocado", "banana", "cherry"])))
        #expect(Set(odd.records.compactMap { $0["title"]?.stringValue }) == ["avocado", "cherry"])

        let page1 = try await ncmb.queryPage(Query("Fruit").sorted("money").limit(2))
        #expect(page1.records.map { $0["title"] } == ["apple", "avocado"])
        #expect(page1.nextCursor == "2")
        let page2 = try await ncmb.queryPage(Query("Fruit", sort: [SortKey("money")], limit: 2, cursor: page1.nextCursor))
        #expect(page2.records.map { $0["title"] } == ["banana", "cherry"])
        let sequence = try await ncmb.records(matching: Query("Fruit").sorted("money"), pageSize: 2).collect()
        #expect(sequence.map { $0["title"] } == ["apple", "avocado", "banana", "cherry", "apricot"])

        #expect(try await ncmb.count(Query("Fruit").filter(Field("money") > 25).limit(1)) == 3)
        #expect(try await ncmb.count(Query("Fruit")) == 5)

        let byId = try await ncmb.queryPage(Query("Fruit").filter(Field("id") == .string(ids[2])))
        #expect(byId.records.map(\.id) == [ids[2]])

        // Native NCMB query: $inArray and include.
        let owner = try await ncmb.create(Record(className: "Owner", fields: ["name": "ann"]))
        _ = try await ncmb.create(Record(className: "Basket", fields: ["owner": .pointer(owner.pointer!), "items": ["x", "y"]]))
        let native = try await ncmb.queryPage(className: "Basket", NCMBQuery(
            where: NCMBWhere(entries: [.init(key: "items", constraint: .operators([.inArray(["y", "z"])]))]), include: ["owner"]))
        let expanded = try #require(native.records.first?["owner"]?.objectValue)
        #expect(expanded["name"] == "ann")
        #expect(expanded["objectId"] == .string(owner.id!))
    }

    @Test("users: sign up, current user, wrong password keeps the session, duplicate, log out")
    func users() async throws {
        let (ncmb, _) = Self.make()
        let session = try await ncmb.signUp(username: "taro", password: "pw1", email: "taro@example.com", fields: ["age": 20])
        #expect(session.username == "taro")
        #expect(session.token.count == 25)
        let me = try await ncmb.currentUser()
        #expect(me.id == session.userId && me.username == "taro" && me.email == "taro@example.com")
        #expect(me.fields["age"] == 20)
        #expect(me.fields["sessionToken"] == nil && me.fields["password"] == nil)

        let wrong = await #expect(throws: MBaaSError.self) { _ = try await ncmb.logIn(username: "taro", password: "nope") }
        #expect(wrong?.kind == .unauthorized && wrong?.vendorCode == "E401002")
        #expect(await ncmb.session == session)

        let duplicate = await #expect(throws: MBaaSError.self) { _ = try await ncmb.signUp(username: "taro", password: "x") }
        #expect(duplicate?.kind == .duplicate && duplicate?.vendorCode == "E409001")

        let again = try await ncmb.logIn(username: "taro", password: "pw1")
        #expect(again.userId == session.userId && again.token != session.token)
        try await ncmb.logOut(confirmWithServer: true)
        #expect(await ncmb.session == nil)
        let anonymous = await #expect(throws: MBaaSError.self) { _ = try await ncmb.currentUser() }
        #expect(anonymous?.kind == .unauthorized)

        // The logged-out token is refused with E401001, which ends the restored session.
        await ncmb.restore(again)
        let expired = await #expect(throws: MBaaSError.self) { _ = try await ncmb.currentUser() }
        #expect(expired?.kind == .unauthorized && expired?.vendorCode == "E401001")
        #expect(await ncmb.session == nil)
    }

    @Test("ACLs, roles and anonymous users")
    func aclAndRoles() async throws {
        let (ncmb, _) = Self.make()
        let ann = try await ncmb.signUp(username: "ann", password: "pw")
        let secret = try await ncmb.create(Record(className: "Diary", acl: .privateTo(ann.userId), fields: ["text": "hi"]))
        let roleId = try await ncmb.createRole(name: "Editors", users: [ann.userId])
        let shared = try await ncmb.create(Record(className: "Diary", acl: ACL([.role("Editors"): .readWrite]), fields: ["text": "team"]))
        #expect(try await ncmb.currentUser().roles == ["Editors"])
        #expect(try await ncmb.get(className: "Diary", id: shared.id!).fields["text"] == "team")
        #expect(try await ncmb.users(inRole: roleId).map(\.id) == [ann.userId])
        let dupRole = await #expect(throws: MBaaSError.self) { try await ncmb.createRole(name: "Editors") }
        #expect(dupRole?.kind == .duplicate)

        try await ncmb.logOut(confirmWithServer: false)
        let denied = await #expect(throws: MBaaSError.self) { _ = try await ncmb.get(className: "Diary", id: secret.id!) }
        #expect(denied?.kind == .forbidden && denied?.vendorCode == "E403001")
        #expect(try await ncmb.queryPage(Query("Diary")).records.isEmpty)

        let anon = try await ncmb.logInAnonymously(id: "3dc72085-911b-4798-9707-d69e879a6185")
        #expect(anon.extras["anonymousId"] == "3dc72085-911b-4798-9707-d69e879a6185")
        #expect(try await ncmb.currentUser().id == anon.userId)
    }

    @Test("log in by mail address, role membership changes, scripts on the script host")
    func extras() async throws {
        let (ncmb, _) = Self.make()
        let ann = try await ncmb.signUp(username: "ann", password: "pw", email: "ann@example.com", fields: [:])
        try await ncmb.logOut(confirmWithServer: true)
        let byMail = try await ncmb.logIn(mailAddress: "ann@example.com", password: "pw")
        #expect(byMail.userId == ann.userId && byMail.username == "ann")
        let role = try await ncmb.createRole(name: "Readers")
        #expect(try await ncmb.currentUser().roles.isEmpty)
        try await ncmb.addUsers([ann.userId], toRole: role)
        #expect(try await ncmb.currentUser().roles == ["Readers"])
        #expect(try await ncmb.get(className: "_Role", id: role)["belongUser"] == .object(["__type": "Relation", "className": "_User"]))
        try await ncmb.removeUsers([ann.userId], fromRole: role)
        #expect(try await ncmb.users(inRole: role).isEmpty)
        let script = await #expect(throws: MBaaSError.self) { _ = try await ncmb.executeScript("missing.js", body: .object(["a": 1])) }
        #expect(script?.kind == .notFound)
        await #expect(throws: MBaaSError.self) { _ = try await ncmb.executeScript("x.js", body: [1]) }
    }

    @Test("files: upload with ACL (acl part first), names needing percent-encoding, download, list, ACL update, delete")
    func files() async throws {
        let (ncmb, sim) = Self.make()
        let bytes = Data("abcdefg123456".utf8)
        let ref = try await ncmb.upload(FileUpload(name: "image 1 (a).txt", source: .data(bytes), acl: .publicReadWrite))
        #expect(ref.name == "image 1 (a).txt" && ref.size == 13 && ref.contentType == "text/plain")
        #expect(sim.hasFile("image 1 (a).txt"))
        #expect(try await ncmb.download(ref) == bytes)
        _ = try await ncmb.upload(Data([0, 1, 2]), name: "b.bin")
        let listed = try await ncmb.listFiles(prefix: nil, limit: nil)
        #expect(listed.map(\.reference.name) == ["image 1 (a).txt", "b.bin"])
        #expect(listed.first?.reference.size == 13)
        #expect(try await ncmb.listFiles(prefix: "b.", limit: 10).map(\.reference.name) == ["b.bin"])
        try await ncmb.updateFileACL(name: "b.bin", acl: .publicReadWrite)
        try await ncmb.deleteFile(ref)
        let gone = await #expect(throws: MBaaSError.self) { _ = try await ncmb.download(ref) }
        #expect(gone?.kind == .notFound)
        let dup = await #expect(throws: MBaaSError.self) { _ = try await ncmb.upload(Data([9]), name: "b.bin") }
        #expect(dup?.kind == .duplicate)
        let files = try await ncmb.queryPage(Query("_File"))
        #expect(files.records.map(\.id) == ["b.bin"])
    }

    @Test("attachments: the record's string field holds the file name; deleting the file clears it")
    func attachments() async throws {
        let (ncmb, sim) = Self.make()
        let memo = try await ncmb.create(Record(className: "Memo", fields: ["title": "with file"]))
        let attachment = FileAttachment(className: "Memo", objectId: memo.id!, field: "photo")
        let ref = try await ncmb.upload(FileUpload(name: "p.png", source: .data(Data([1, 2])), attachment: attachment))
        #expect(ref.attachment == attachment)
        #expect(try await ncmb.get(className: "Memo", id: memo.id!)["photo"] == "p.png")
        try await ncmb.deleteFile(ref)
        #expect(!sim.hasFile("p.png"))
        #expect(try await ncmb.get(className: "Memo", id: memo.id!)["photo"] == nil)
        // A failed attachment leaves no file behind.
        let missing = FileAttachment(className: "Memo", objectId: "nope", field: "photo")
        await #expect(throws: MBaaSError.self) { _ = try await ncmb.upload(FileUpload(name: "q.png", source: .data(Data([1])), attachment: missing)) }
        #expect(!sim.hasFile("q.png"))
    }

    @Test("response signatures are verified when enabled; a changed body is E100001")
    func responseSignatures() async throws {
        let (ncmb, _) = Self.make(signResponses: true, verify: true)
        let created = try await ncmb.create(Record(className: "Memo", fields: ["a": 1]))
        #expect(try await ncmb.get(className: "Memo", id: created.id!)["a"] == 1)
        try await ncmb.delete(className: "Memo", id: created.id!)

        struct Tamper: HTTPTransport {
            let base: any HTTPTransport
            func send(_ request: TransportRequest) async throws -> TransportResponse {
                var r = try await base.send(request)
                r.body = Data(String(decoding: r.body, as: UTF8.self).replacingOccurrences(of: "\"a\":1", with: "\"a\":2").utf8)
                return r
            }
        }
        let (_, sim) = Self.make(signResponses: true)
        let config = NCMBConfiguration(applicationKey: Self.appKey, clientKey: Self.clientKey, verifyResponseSignature: true)
        let tampered = NCMBBackend(configuration: config, context: BackendContext(transport: Tamper(base: sim), clock: { Self.start }))
        let id = try await tampered.create(Record(className: "Memo", fields: ["a": 1])).id!
        let error = await #expect(throws: MBaaSError.self) { _ = try await tampered.get(className: "Memo", id: id) }
        #expect(error?.vendorCode == "E100001")
    }

    @Test("a wrong client key is refused by the server with E401001")
    func wrongKey() async {
        let sim = NCMBSimulator(applicationKey: Self.appKey, clientKey: Self.clientKey, start: Self.start)
        let ncmb = NCMBBackend(configuration: NCMBConfiguration(applicationKey: Self.appKey, clientKey: "wrong"),
                               context: BackendContext(transport: sim, clock: { Self.start }))
        let error = await #expect(throws: MBaaSError.self) { _ = try await ncmb.queryPage(Query("Memo")) }
        #expect(error?.kind == .unauthorized && error?.vendorCode == "E401001")
    }

    @Test("batch is not declared, so batch() is unsupported and sends nothing")
    func batch() async throws {
        let (ncmb, sim) = Self.make()
        let error = await #expect(throws: MBaaSError.self) {
            _ = try await ncmb.batch([.create(Record(className: "M", fields: ["a": 1]))])
        }
        #expect(error?.kind == .unsupported)
        #expect(sim.count(of: "classes/M") == 0)
    }

    @Test("URLs: keys, host, +http, options; the factory opens ncmb URLs")
    func urls() async throws {
        let url = try BackendURL(parsing: "ncmb+http://APP:CLIENT@127.0.0.1:8080?scriptHost=127.0.0.1:9090&verifyResponseSignature=true&apiVersion=2013-09-01")
        let config = try NCMBConfiguration(url: url)
        #expect(config.applicationKey == "APP" && config.clientKey == "CLIENT")
        #expect(config.baseURL == "http://127.0.0.1:8080")
        #expect(config.scriptBaseURL == "http://127.0.0.1:9090")
        #expect(config.verifyResponseSignature)
        let https = try NCMBConfiguration(url: BackendURL(parsing: "ncmb://A:C@mbaas.api.nifcloud.com"))
        #expect(https.baseURL == "https://mbaas.api.nifcloud.com" && https.apiVersion == "2013-09-01")
        #expect(https.scriptBaseURL == "https://script.mbaas.api.nifcloud.com")
        #expect(throws: MBaaSError.self) { try NCMBConfiguration(url: BackendURL(parsing: "ncmb://mbaas.api.nifcloud.com")) }
        let registry = BackendRegistry([NCMBBackendFactory()])
        let backend = try await registry.open("ncmb://A:C@mbaas.api.nifcloud.com")
        #expect(backend.adapterName == "ncmb")
        #expect(!backend.capabilities.has(.batch) && backend.capabilities.note(for: .batch) != nil)
    }
}
