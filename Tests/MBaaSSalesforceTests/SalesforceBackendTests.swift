import Foundation
import MBaaSCore
import MBaaSTesting
import Testing

@testable import MBaaSSalesforce

/// The client against the simulator (SalesforceSimulator.swift), each behaviour with exact outcomes.
@Suite struct SalesforceBackendTests {
    func backend(_ sim: SalesforceSimulator, url: String = "salesforce://3MVGsimclient:simsecret@login.salesforce.com?username=ada%40example.com&password=pw")
        throws -> SalesforceBackend {
        try SalesforceBackend(configuration: SalesforceConfiguration(url: BackendURL(parsing: url), environment: [:]),
                              context: BackendContext(transport: sim))
    }

    @Test func urlForms() throws {
        let password = try SalesforceConfiguration(url: BackendURL(parsing: "salesforce://cid:sec@test.salesforce.com?username=u&password=p&securityToken=T"), environment: [:])
        #expect(password.loginBase == "https://test.salesforce.com" && password.apiVersion == "62.0")
        #expect(password.credentials == .password(clientId: "cid", clientSecret: "sec", username: "u", password: "pT"))
        let env = try SalesforceConfiguration(url: BackendURL(parsing: "salesforce://cid:sec@login.salesforce.com?username=u&version=v58.0"),
                                              environment: ["MBAAS_SALESFORCE_PASSWORD": "fromenv"])
        #expect(env.credentials == .password(clientId: "cid", clientSecret: "sec", username: "u", password: "fromenv") && env.apiVersion == "58.0")
        let token = try SalesforceConfiguration(url: BackendURL(parsing: "salesforce://token:00Dabc@x.my.salesforce.com"), environment: [:])
        #expect(token.credentials == .accessToken("00Dabc") && token.loginBase == "https://x.my.salesforce.com")
        let local = try SalesforceConfiguration(url: BackendURL(parsing: "salesforce+http://cid:sec@127.0.0.1:8443?username=u"), environment: [:])
        #expect(local.loginBase == "http://127.0.0.1:8443")
        for bad in ["salesforce://login.salesforce.com", "salesforce://cid:sec@login.salesforce.com?user=u",
                    "salesforce://token@x.my.salesforce.com", "salesforce://cid:s@h?version=latest", "salesforce://cid:s@h?securityToken=T"] {
            let e = #expect(throws: MBaaSError.self, "\(bad)") { try SalesforceConfiguration(url: BackendURL(parsing: bad), environment: [:]) }
            #expect(e?.kind == .invalidRequest)
        }
    }

    /// A 401 renews the session with the refresh token and replays the request once: three requests in all.
    @Test func refreshAndReplayOnceOn401() async throws {
        let sim = SalesforceSimulator()
        let b = try backend(sim)
        let created = try await b.create(Record(className: "Memo__c", fields: ["Title__c": "a"]))
        #expect(await sim.tokenLog == ["password"])
        await sim.expireAccessTokens()
        let before = await sim.log.count
        let read = try await b.get(className: "Memo__c", id: created.id!)
        #expect(read.fields["Title__c"] == "a")
        let after = await sim.log
        #expect(Array(after[before...]) == ["GET /services/data/v62.0/sobjects/Memo__c/\(created.id!)", "POST /services/oauth2/token",
                                            "GET /services/data/v62.0/sobjects/Memo__c/\(created.id!)"])
        #expect(await sim.tokenLog == ["password", "refresh_token"])
        // A token that cannot be renewed (access-token URL): one replay-free 401, the session ends.
        let tokenOnly = try backend(sim, url: "salesforce://token:expired@sim.my.salesforce.com")
        let e = await expectError(.unauthorized) { try await tokenOnly.get(className: "Memo__c", id: created.id!) }
        #expect(e?.vendorCode == "INVALID_SESSION_ID")
        #expect(await tokenOnly.session == nil)
    }

    @Test func logInUserinfoRevokeAndBadCredentials() async throws {
        let sim = SalesforceSimulator()
        let b = try backend(sim, url: "salesforce://3MVGsimclient:simsecret@login.salesforce.com")
        await expectError(.unauthorized) { try await b.get(className: "A", id: "001SIM000000001AAA") }
        let wrong = await expectError(.unauthorized) { try await b.logIn(username: "ada@example.com", password: "nope") }
        #expect(wrong?.vendorCode == "invalid_grant" && wrong?.message == "authentication failure" && wrong?.httpStatus == 400)
        let s = try await b.logIn(username: "ada@example.com", password: "pw")
        #expect(s.userId == "005SIM000000001AAA" && s.extras["instanceURL"] == "https://sim.my.salesforce.com" && s.refreshToken != nil)
        let me = try await b.currentUser()
        #expect(me.id == "005SIM000000001AAA" && me.username == "ada@example.com" && me.email == "ada@example.com")
        try await b.logOut(confirmWithServer: true)
        let revokes = await sim.count("POST /services/oauth2/revoke")
        #expect(await b.session == nil)
        #expect(revokes == 1)
        #expect(await sim.accessTokens[s.token] == nil)
        await expectError(.unsupported) { try await b.signUp(username: "x", password: "y") }
        let badSecret = try backend(sim, url: "salesforce://3MVGsimclient:wrong@login.salesforce.com")
        let client = await expectError(.unauthorized) { try await badSecret.logIn(username: "ada@example.com", password: "pw") }
        #expect(client?.vendorCode == "invalid_client")
        let badId = try backend(sim, url: "salesforce://other:simsecret@login.salesforce.com")
        let unknownClient = await expectError(.unauthorized) { try await badId.logIn(username: "ada@example.com", password: "pw") }
        #expect(unknownClient?.vendorCode == "invalid_client_id")
    }

    /// 201 on create (then a read), 204 on PATCH and DELETE, 404 ENTITY_IS_DELETED on a second delete, MALFORMED_ID
    /// as notFound, datetimes exact, a client id refused.
    @Test func crudStatusCodesAndSystemFields() async throws {
        let sim = SalesforceSimulator()
        let b = try backend(sim)
        let due = try #require(ISO8601.parse("2024-05-06T07:08:09.000Z"))
        let r = try await b.create(Record(className: "Memo__c", fields: ["Title__c": "it's", "Due__c": .date(due), "N__c": 5]))
        let id = try #require(r.id)
        #expect(r.createdAt.map(ISO8601.format) == "2024-01-02T03:04:06.000Z" && r.version == "2024-01-02T03:04:06.000+0000")
        #expect(r.fields["Due__c"] == .date(due) && r.fields["Title__c"] == "it's" && r.fields["OwnerId"] == nil)
        #expect(await sim.log.suffix(2) == ["POST /services/data/v62.0/sobjects/Memo__c", "GET /services/data/v62.0/sobjects/Memo__c/\(id)"])
        let u = try await b.update(className: "Memo__c", id: id, .init(changes: ["Title__c": .set("b"), "N__c": .delete]))
        #expect(u.fields["Title__c"] == "b" && u.fields["N__c"] == .null && u.updatedAt! > r.updatedAt!)
        try await b.delete(className: "Memo__c", id: id)
        let again = await expectError(.notFound) { try await b.delete(className: "Memo__c", id: id) }
        #expect(again?.vendorCode == "ENTITY_IS_DELETED" && again?.httpStatus == 404)
        let malformed = await expectError(.notFound) { try await b.get(className: "Memo__c", id: "nope") }
        #expect(malformed?.vendorCode == "MALFORMED_ID")
        let withId = await expectError(.invalidRequest) { try await b.create(Record(className: "Memo__c", id: "a0S", fields: [:])) }
        #expect(withId?.refusesRecordId == true)
        await expectError(.unsupported) { try await b.update(className: "Memo__c", id: id, .init(changes: ["N__c": .increment(1)])) }
        await expectError(.invalidRequest) { try await b.create(Record(className: "Memo__c", fields: ["Bad Name": 1])) }
        await expectError(.invalidRequest) { try await b.create(Record(className: "Memo__c; DROP", fields: [:])) }
    }

    /// An expected version is refused before anything is sent (If-Unmodified-Since compares whole seconds, so the
    /// capability is not declared): the record is left as it was.
    @Test func expectedVersionsAreRefusedNotApproximated() async throws {
        let sim = SalesforceSimulator()
        let b = try backend(sim)
        let r = try await b.create(Record(className: "Memo__c", fields: ["Title__c": "a"]))
        let v1 = try #require(r.version)
        #expect(!b.capabilities.has(.optimisticLocking))
        let refused = await expectError(.unsupported) { try await b.update(className: "Memo__c", id: r.id!, .set(["Title__c": "b"], expectedVersion: v1)) }
        #expect(refused?.message.contains("one-second") == true || refused?.message.contains("whole seconds") == true)
        await expectError(.unsupported) { try await b.delete(className: "Memo__c", id: r.id!, expectedVersion: v1) }
        #expect(try await b.get(className: "Memo__c", id: r.id!).fields["Title__c"] == "a")
    }

    /// Values with quotes, backslashes and SOQL fragments select exactly the record holding them.
    @Test func soqlQuotingStopsInjection() async throws {
        let sim = SalesforceSimulator()
        let b = try backend(sim)
        let names = ["O'Brien", "\\", "' OR Name != '", "a\\' OR Title__c != null OR Title__c = '", "line\nbreak", "日本 😀", "100%_"]
        for n in names { _ = try await b.create(Record(className: "Memo__c", fields: ["Title__c": .string(n)])) }
        for n in names {
            let page = try await b.queryPage(Query("Memo__c", predicate: Field("Title__c") == .string(n)))
            #expect(page.records.map { $0.fields["Title__c"] } == [.string(n)], "\(n.debugDescription)")
        }
        #expect(try await b.count(Query("Memo__c", predicate: Field("Title__c") == "' OR Name != '")) == 1)
        await expectError(.invalidRequest) { try await b.queryPage(Query("Memo__c", predicate: Field("Title__c = 'x' OR Id") == 1)) }
        await expectError(.unsupported) { try await b.queryPage(Query("Memo__c", predicate: Field("Title__c").hasPrefix("O"))) }
    }

    /// 2,500 rows: pages of 2000 and 500 through nextRecordsUrl, totalSize on each, every row once; COUNT().
    @Test func pagingOverMoreThan2000Rows() async throws {
        let sim = SalesforceSimulator()
        await sim.seed("Row__c", count: 2500) { ["N__c": .int(Int64($0))] }
        let b = try backend(sim)
        let all = try await b.records(matching: Query("Row__c"), pageSize: 2000).collect()
        #expect(all.count == 2500 && Set(all.compactMap { $0.fields["N__c"]?.intValue }).count == 2500)
        #expect(await sim.count("GET /services/data/v62.0/query/01gSIM") == 1)
        #expect(await sim.count("GET /services/data/v62.0/query") == 2)
        let first = try await b.queryPage(Query("Row__c", limit: 2000))
        #expect(first.records.count == 2000 && first.totalCount == 2500 && first.nextCursor == "0@/services/data/v62.0/query/01gSIM2-2000")
        // Pages smaller than the server's: cut, and the cursor continues inside the page.
        let small = try await b.records(matching: Query("Row__c", predicate: Field("N__c") < 450), pageSize: 100).collect()
        #expect(small.map { $0.fields["N__c"]?.intValue } == (0..<450).map { Int64?($0) })
        #expect(try await b.count(Query("Row__c", predicate: Field("N__c") >= 2000)) == 500)
        #expect(await sim.log.last?.hasPrefix("GET /services/data/v62.0/query") == true)
        await expectError(.invalidRequest) { try await b.queryPage(Query("Row__c", cursor: "0@/etc/passwd")) }
    }

    /// Batches are one collection call with allOrNone (atomic); over 200 is refused; a failing item fails all.
    @Test func collectionsAreAtomicAndCappedAt200() async throws {
        let sim = SalesforceSimulator()
        let b = try backend(sim)
        let creates = (0..<200).map { BatchOperation.create(Record(className: "Memo__c", fields: ["N__c": .int(Int64($0))])) }
        let results = try await b.batch(creates)
        let ids = results.compactMap { if case .success(let r) = $0 { r.id } else { nil } }
        #expect(ids.count == 200 && Set(ids).count == 200)
        #expect(await sim.count("POST /services/data/v62.0/composite/sobjects") == 2)   // the call and one retrieve
        await expectError(.invalidRequest) { try await b.batch(creates + [creates[0]]) }
        let bad = try await b.batch([.create(Record(className: "Memo__c", fields: ["N__c": 1])),
                                     .create(Record(className: "Memo__c", fields: ["Bad__x": 1]))])
        for r in bad {
            guard case .failure(let e) = r else { Issue.record("a rolled-back item succeeded"); continue }
            #expect(e.vendorCode == "INVALID_FIELD" && e.kind == .invalidRequest)
        }
        #expect(try await b.count(Query("Memo__c")) == 200)
        let updates = try await b.batch(ids.prefix(3).map { .update(className: "Memo__c", id: $0, .set(["N__c": -1])) })
        #expect(updates.allSatisfy { if case .success(let r) = $0 { r.fields["N__c"] == -1 } else { false } })
        let deletes = try await b.batch(ids.prefix(150).map { .delete(className: "Memo__c", id: $0) })
        let left = try await b.count(Query("Memo__c"))
        #expect(deletes.count == 150 && left == 50)
        // A batch mixing verbs is one Composite call of at most 25 subrequests (the dialect's tests run it); beyond
        // that it is refused before anything is sent.
        let mixed = Array(creates.prefix(25)) + [.delete(className: "Memo__c", id: ids[199])]
        let refused = await expectError(.unsupported) { try await b.batch(mixed) }
        #expect(refused?.message.contains("25") == true, "\(String(describing: refused))")
    }

    @Test func filesAreContentVersions() async throws {
        let sim = SalesforceSimulator()
        let b = try backend(sim)
        let memo = try await b.create(Record(className: "Memo__c", fields: [:]))
        let bytes = Data((0..<3000).map { UInt8($0 % 251) })
        // An attachment is refused before anything is sent (not declared: a ContentDocumentLink does not go with its record).
        let refused = await expectError(.unsupported) {
            _ = try await b.upload(FileUpload(name: "a b.png", source: .data(bytes),
                                              attachment: FileAttachment(className: "Memo__c", objectId: memo.id!, field: "Pic__c")))
        }
        #expect(refused?.message.contains("ContentDocumentLink") == true, "\(String(describing: refused))")
        #expect(await sim.count("POST /services/data/v62.0/sobjects/ContentVersion") == 0)
        let ref = try await b.upload(FileUpload(name: "a b.png", source: .data(bytes)))
        #expect(ref.name.hasPrefix("068") && ref.size == 3000 && ref.contentType == "image/png")
        #expect(try await b.download(ref) == bytes)
        await expectError(.notFound) { try await b.download(FileReference(name: "068SIM000000999AAA")) }
    }
}
