import Foundation
import MBaaSCore
import MBaaSTesting
import MBaaSLocal
import Testing

@Suite("Local users, sessions and ACLs")
struct AuthTests {
    @Test func signUpLogInLogOut() async throws {
        let b = try memoryBackend()
        await expectError(.unauthorized) { try await b.currentUser() }
        let s1 = try await b.signUp(username: "alice", password: "correct horse", email: "alice@example.com", fields: ["age": 30])
        #expect(await b.session == s1)
        #expect(s1.username == "alice" && s1.token.count >= 40 && s1.expiresAt != nil)
        let me = try await b.currentUser()
        #expect(me.id == s1.userId && me.username == "alice" && me.email == "alice@example.com" && me.fields == ["age": 30])

        await expectError(.duplicate) { try await b.signUp(username: "alice", password: "x") }
        await expectError(.duplicate) { try await b.signUp(username: "alice2", password: "x", email: "ALICE@example.com", fields: [:]) }
        await expectError(.invalidRequest) { try await b.signUp(username: "bob", password: "") }

        // A wrong password or an unknown user keeps the previous session.
        let wrong = await expectError(.unauthorized) { try await b.logIn(username: "alice", password: "wrong") }
        #expect(wrong?.message == "wrong user name or password")
        await expectError(.unauthorized) { try await b.logIn(username: "nobody", password: "x") }
        #expect(await b.session == s1)

        let s2 = try await b.logIn(username: "alice", password: "correct horse")
        #expect(s2.token != s1.token && s2.userId == s1.userId)
        try await b.logOut(confirmWithServer: true)
        #expect(await b.session == nil)
        await expectError(.unauthorized) { try await b.currentUser() }

        // The server-side session is gone: restoring it fails and ends it; the other one still works.
        await b.restore(s2)
        await expectError(.unauthorized) { try await b.currentUser() }
        #expect(await b.session == nil)
        await b.restore(s1)
        #expect(try await b.currentUser().id == s1.userId)
        try await b.logOut(confirmWithServer: false)
        #expect(await b.session == nil)
        await b.restore(s1)
        // The embedded store revokes on every log-out (it costs nothing): a copied token stops working.
        await expectError(.unauthorized) { try await b.currentUser() }
        // Logging out a session the database no longer knows: fine without confirmation, unauthorized with it.
        await b.restore(s1)
        try await b.logOut(confirmWithServer: false)
        await b.restore(s1)
        await expectError(.unauthorized) { try await b.logOut(confirmWithServer: true) }
    }

    @Test func sessionsExpire() async throws {
        let clock = TestClock()
        let b = try LocalBackend.inMemory(context: BackendContext(clock: clock.function),
                                          options: LocalBackend.Options(sessionLifetime: 3600, passwordHashing: testOptions.passwordHashing))
        let s = try await b.signUp(username: "carol", password: "pw")
        #expect(s.expiresAt == clock.now.addingTimeInterval(3600))
        _ = try await b.create(Record(className: "Memo"))
        clock.advance(by: 3601)
        let e = await expectError(.unauthorized) { try await b.create(Record(className: "Memo")) }
        #expect(e?.message.contains("expired") == true)
        #expect(await b.session == nil)
        _ = try await b.create(Record(className: "Memo"))                    // anonymous now
    }

    @Test func passwordsAreStoredAsScryptHashes() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("users.db").path
        let b = try LocalBackend(path: path)   // default cost on purpose
        let session = try await b.signUp(username: "dave", password: "PlainTextSecret-42")
        await b.close()
        var bytes = Data()
        for suffix in ["", "-wal"] { bytes += (try? Data(contentsOf: URL(fileURLWithPath: path + suffix))) ?? Data() }
        #expect(bytes.range(of: Data("scrypt$15$8$3$".utf8)) != nil)
        #expect(bytes.range(of: Data("PlainTextSecret-42".utf8)) == nil)
        #expect(bytes.range(of: Data(session.token.utf8)) == nil)
    }

    @Test func aclBetweenTwoUsersOnOneDatabaseFile() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("shared.db").path
        let alice = try fileBackend(path), bob = try fileBackend(path), anon = try fileBackend(path)
        let a = try await alice.signUp(username: "alice", password: "a-pass")
        let b = try await bob.signUp(username: "bob", password: "b-pass")

        let secret = try await alice.create(Record(className: "Note", acl: .privateTo(a.userId), fields: ["t": "secret"]))
        let shared = try await alice.create(Record(className: "Note", acl: .publicRead(owner: a.userId), fields: ["t": "shared"]))
        // Without an ACL a logged-in user's record is private to it; an anonymous one is public.
        let bobs = try await bob.create(Record(className: "Note", fields: ["t": "bob's"]))
        #expect(bobs.acl == .privateTo(b.userId))
        let open = try await anon.create(Record(className: "Note", fields: ["t": "open"]))

        // Invisible to others: get, query and count.
        await expectError(.notFound) { try await bob.get(className: "Note", id: secret.id!) }
        #expect(try await bob.queryPage(Query("Note").sorted("t")).records.map { $0["t"] } == ["bob's", "open", "shared"])
        #expect(try await bob.count(Query("Note")) == 3)
        #expect(try await anon.count(Query("Note")) == 2)
        #expect(try await alice.count(Query("Note")) == 3)
        #expect(try await alice.get(className: "Note", id: secret.id!) == secret)

        // Writes need write access; a record the user cannot even read is notFound (as for get).
        await expectError(.forbidden) { try await bob.update(className: "Note", id: shared.id!, .set(["t": "hacked"])) }
        await expectError(.notFound) { try await bob.update(className: "Note", id: secret.id!, .set(["t": "hacked"])) }
        await expectError(.notFound) { try await bob.delete(className: "Note", id: secret.id!) }
        await expectError(.forbidden) { try await anon.delete(className: "Note", id: shared.id!) }
        let batch = try await bob.batch([.update(className: "Note", id: open.id!, .set(["t": "open2"])), .delete(className: "Note", id: shared.id!)])
        guard case .failure(let e) = batch[0] else { Issue.record("expected failure"); return }
        #expect(e.kind == .forbidden)
        #expect(try await alice.get(className: "Note", id: shared.id!)["t"] == "shared")
        #expect(try await alice.get(className: "Note", id: open.id!)["t"] == "open")

        // Roles and groups grant access once set.
        let editors = try await alice.create(Record(className: "Note", acl: ACL([.user(a.userId): .readWrite, .role("Editors"): .readWrite]), fields: ["t": "draft"]))
        let team = try await alice.create(Record(className: "Note", acl: ACL([.group("team-1"): .read]), fields: ["t": "team"]))
        await expectError(.notFound) { try await bob.get(className: "Note", id: editors.id!) }
        try await anon.setRoles(["Editors"], forUser: b.userId)
        try await anon.setGroups(["team-1"], forUser: b.userId)
        #expect(try await bob.currentUser().roles == ["Editors"])
        #expect(try await bob.update(className: "Note", id: editors.id!, .set(["t": "edited"]))["t"] == "edited")
        #expect(try await bob.get(className: "Note", id: team.id!)["t"] == "team")
        await expectError(.forbidden) { try await bob.delete(className: "Note", id: team.id!) }
        await expectError(.invalidRequest) { try await anon.setRoles(["bad\"name"], forUser: b.userId) }
        await expectError(.notFound) { try await anon.setRoles(["x"], forUser: "nobody") }

        // Files obey ACLs too.
        _ = try await alice.upload(FileUpload(name: "private.txt", source: .data(Data("p".utf8)), acl: .privateTo(a.userId)))
        _ = try await alice.upload(FileUpload(name: "public.txt", source: .data(Data("q".utf8)), acl: .publicRead(owner: a.userId)))
        _ = try await alice.upload(FileUpload(name: "default.txt", source: .data(Data("d".utf8))))   // private to alice
        #expect(try await bob.listFiles(prefix: nil, limit: nil).map(\.reference.name) == ["public.txt"])
        await expectError(.notFound) { try await bob.download(name: "private.txt") }
        await expectError(.notFound) { try await bob.deleteFile(FileReference(name: "private.txt")) }
        #expect(try await alice.download(name: "private.txt") == Data("p".utf8))
        for backend in [alice, bob, anon] { await backend.close() }
    }
}

/// ACL hardening (issue 11): default owner ACLs, unusable ACLs refused, one answer for unreadable records,
/// the administrative repair, attachment names.
@Suite("Local ACL hardening")
struct ACLHardeningTests {
    @Test func loggedInRecordsArePrivateByDefault() async throws {
        let b = try memoryBackend()
        let anonymous = try await b.create(Record(className: "Memo", fields: ["a": 1]))
        #expect(anonymous.acl == nil)                                       // anonymous: public, as before
        let alice = try await b.signUp(username: "alice", password: "pw")
        let mine = try await b.create(Record(className: "Memo", fields: ["a": 2]))
        #expect(mine.acl == .privateTo(alice.userId))
        #expect(try await b.get(className: "Memo", id: mine.id!).acl == .privateTo(alice.userId))
        try await b.logOut(confirmWithServer: false)
        await expectError(.notFound) { try await b.get(className: "Memo", id: mine.id!) }

        var o = testOptions
        o.publicReadByDefault = true
        let p = try LocalBackend.inMemory(options: o)
        let bob = try await p.signUp(username: "bob", password: "pw")
        #expect(try await p.create(Record(className: "Memo")).acl == .publicRead(owner: bob.userId))
    }

    @Test func unusableACLsAreRefused() async throws {
        let b = try memoryBackend()
        let alice = try await b.signUp(username: "alice", password: "pw")
        for json in [#"{}"#, #"{"*":{"read":false,"write":false}}"#, #"{"*":{}}"#, #"{"":{"read":true}}"#,
                     #"{"role:":{"read":true}}"#, #"{"nosuchuser":{"read":true,"write":true}}"#] {
            let acl = try ACL(json: JSON.parse(json))
            let e = await expectError(.invalidRequest) { try await b.create(Record(className: "Memo", acl: acl)) }
            #expect(e?.message.contains("acl") == true, "\(json): \(String(describing: e))")
        }
        let rec = try await b.create(Record(className: "Memo"))
        await expectError(.invalidRequest) {
            try await b.update(className: "Memo", id: rec.id!, RecordUpdate(changes: [:], acl: ACL()))
        }
        // Usable ones pass: a role, everyone, an existing user.
        _ = try await b.create(Record(className: "Memo", acl: ACL([.role("Admins"): .readWrite])))
        _ = try await b.create(Record(className: "Memo", acl: ACL([.user(alice.userId): .read, .user("ghost"): .write])))
        #expect(await b.session != nil)
    }

    @Test func unreadableRecordsAreNotFoundForWritesToo() async throws {
        let b = try memoryBackend()
        let alice = try await b.signUp(username: "alice", password: "pw")
        let secret = try await b.create(Record(className: "Secret", fields: ["pin": 1]))
        let readable = try await b.create(Record(className: "Secret", acl: .publicRead(owner: alice.userId)))
        _ = try await b.signUp(username: "bob", password: "pw")
        let get = await expectError(.notFound) { try await b.get(className: "Secret", id: secret.id!) }
        let update = await expectError(.notFound) {
            try await b.update(className: "Secret", id: secret.id!, RecordUpdate(changes: ["pin": .set(0)]))
        }
        let delete = await expectError(.notFound) { try await b.delete(className: "Secret", id: secret.id!, expectedVersion: nil) }
        #expect(get?.message == update?.message && update?.message == delete?.message)
        // Bob may read but not write this one: forbidden, and he cannot change its ACL.
        await expectError(.forbidden) {
            try await b.update(className: "Secret", id: readable.id!, RecordUpdate(changes: [:], acl: .publicReadWrite))
        }
    }

    @Test func theAdministratorRepairsACLs() async throws {
        let b = try memoryBackend()
        let alice = try await b.signUp(username: "alice", password: "pw")
        let rec = try await b.create(Record(className: "Memo", fields: ["x": 1]))
        try await b.logOut(confirmWithServer: false)
        let repaired = try await b.repairACL(className: "Memo", id: rec.id!, acl: .publicRead(owner: alice.userId))
        #expect(repaired.acl == .publicRead(owner: alice.userId) && repaired.version == "2")
        #expect(try await b.get(className: "Memo", id: rec.id!).fields["x"] == 1)   // anonymous can read now
        await expectError(.invalidRequest) { try await b.repairACL(className: "Memo", id: rec.id!, acl: ACL()) }
        await expectError(.notFound) { try await b.repairACL(className: "Memo", id: "nope", acl: .publicReadWrite) }
        // Files too.
        try await b.restore(b.logIn(username: "alice", password: "pw"))
        _ = try await b.upload(Data("f".utf8), name: "mine.txt")                   // private to alice
        try await b.logOut(confirmWithServer: false)
        await expectError(.notFound) { try await b.download(name: "mine.txt") }
        let info = try await b.repairFileACL(name: "mine.txt", acl: ACL([.everyone: .read]))
        #expect(info.acl == ACL([.everyone: .read]))
        #expect(try await b.download(name: "mine.txt") == Data("f".utf8))
    }

    @Test func attachmentNamesBelongToTheRecordsWriters() async throws {
        let b = try memoryBackend()
        _ = try await b.signUp(username: "alice", password: "pw")
        let rec = try await b.create(Record(className: "Secret", acl: nil))
        let id = try #require(rec.id)
        let aliceSession = await b.session
        _ = try await b.signUp(username: "bob", password: "pw")
        // Bob cannot squat Secret/<id>/doc/x.txt: the record is Alice's (unreadable to him: notFound).
        await expectError(.notFound) { try await b.upload(Data("bob".utf8), name: "Secret/\(id)/doc/x.txt") }
        // Names that are not an existing record's attachment space stay free.
        _ = try await b.upload(Data("ok".utf8), name: "photos/2024/jan/a.jpg")
        await b.restore(aliceSession)
        let attached = try await b.upload(FileUpload(name: "x.txt", source: .data(Data("alice".utf8)),
                                                     attachment: FileAttachment(className: "Secret", objectId: id, field: "doc")))
        #expect(attached.name == "Secret/\(id)/doc/x.txt")
        #expect(try await b.download(attached) == Data("alice".utf8))
    }
}
