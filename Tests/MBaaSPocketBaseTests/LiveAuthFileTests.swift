import Foundation
import MBaaSCore
import MBaaSTesting
import Testing
@testable import MBaaSPocketBase

extension LiveTests {
@Suite("PocketBase live: users, ACL, files")
struct LiveAuthFileTests {
    @Test("sign up, log in, current user, refresh, log out")
    func auth() async throws {
        let backend = try await Live.backend()
        let run = Live.runId()
        let session = try await backend.signUp(username: "u\(run)a", password: "pw-\(run)-secret", email: "u\(run)a@example.com",
                                               fields: ["nick": "Ann", "age": 30])
        #expect(session.username == "u\(run)a")
        #expect(session.expiresAt != nil)
        #expect(await backend.session?.userId == session.userId)
        let me = try await backend.currentUser()
        #expect(me.id == session.userId)
        #expect(me.username == "u\(run)a")
        #expect(me.email == "u\(run)a@example.com")
        #expect(me.fields == ["nick": "Ann", "age": 30])

        do {
            _ = try await backend.signUp(username: "u\(run)a", password: "pw-\(run)-other")
            Issue.record("a taken user name must be a duplicate")
        } catch let e as MBaaSError {
            #expect(e.kind == .duplicate)
            #expect(e.vendorCode == "validation_not_unique")
        }
        #expect(await backend.session?.userId == session.userId)

        do {
            _ = try await backend.logIn(username: "u\(run)a", password: "wrong-password")
            Issue.record("a wrong password must be unauthorized")
        } catch let e as MBaaSError {
            #expect(e.kind == .unauthorized)
        }
        #expect(await backend.session?.userId == session.userId)  // untouched

        await #expect(throws: MBaaSError.self) { try await backend.logOut(confirmWithServer: true) }
        #expect(await backend.session == nil)
        do {
            _ = try await backend.currentUser()
            Issue.record("no session must be unauthorized")
        } catch let e as MBaaSError { #expect(e.kind == .unauthorized) }

        let again = try await backend.logIn(username: "u\(run)a", password: "pw-\(run)-secret")
        #expect(again.userId == session.userId)
        try await backend.logOut(confirmWithServer: false)
        await backend.restore(again)
        #expect(try await backend.currentUser().id == session.userId)

        // an expired session ends without a request
        var expired = again
        expired.expiresAt = Date(timeIntervalSinceNow: -10)
        await backend.restore(expired)
        await #expect(throws: MBaaSError.self) { _ = try await backend.create(Record(className: "Any_\(run)", fields: ["a": 1])) }
        #expect(await backend.session == nil)
    }

    @Test("the app-user URL form logs in on open and acts as that user")
    func userURL() async throws {
        let admin = try await Live.backend()
        let run = Live.runId()
        _ = try await admin.signUp(username: "v\(run)", password: "pw-\(run)-secret")
        let base = try #require(Live.url)
        let host = String(base[base.index(after: base.lastIndex(of: "@")!)...])
        let user = try await PocketBaseBackendFactory().open(
            try BackendURL(parsing: "pocketbase+http://v\(run):pw-\(run)-secret@\(host)?auth=users"), context: BackendContext())
        #expect(try await user.currentUser().username == "v\(run)")
        // Without superuser rights the schema cannot grow: a record with a new field is refused, not truncated.
        let cls = "U_\(run)"
        _ = try await admin.create(Record(className: cls, fields: ["a": 1]))
        let mine = try await user.create(Record(className: cls, fields: ["a": 2]))
        #expect(mine.fields == ["a": 2])
        do {
            _ = try await user.create(Record(className: cls, fields: ["a": 3, "b": 4]))
            Issue.record("an unknown field must not be dropped silently")
        } catch let e as MBaaSError { #expect(e.kind == .invalidRequest) }
        #expect(try await user.count(Query(cls)) == 2)
        #expect(try await user.count(Query(cls).filter(Field("a") >= 2)) == 1)
    }

    @Test("ACL between two users: private, public-read, write-only")
    func acl() async throws {
        let backend = try await Live.backend()
        let run = Live.runId()
        let cls = "Acl_\(run)"
        let b = try await backend.signUp(username: "u\(run)b", password: "pw-\(run)-bbbbb")
        let a = try await backend.signUp(username: "u\(run)a", password: "pw-\(run)-aaaaa")
        let priv = try await backend.create(Record(className: cls, acl: .privateTo(a.userId), fields: ["t": "private"]))
        let pub = try await backend.create(Record(className: cls, acl: .publicRead(owner: a.userId), fields: ["t": "public"]))
        var writeOnly = ACL()
        writeOnly[.user(a.userId)] = .readWrite
        writeOnly[.user(b.userId)] = .write
        let wo = try await backend.create(Record(className: cls, acl: writeOnly, fields: ["t": "wo"]))
        #expect(priv.acl == .privateTo(a.userId))
        #expect(try await backend.get(className: cls, id: priv.id!).acl == .privateTo(a.userId))
        #expect(try await backend.count(Query(cls)) == 3)

        _ = try await backend.logIn(username: "u\(run)b", password: "pw-\(run)-bbbbb")
        do {
            _ = try await backend.get(className: cls, id: priv.id!)
            Issue.record("b must not read a's private record")
        } catch let e as MBaaSError { #expect(e.kind == .notFound) }
        #expect(try await backend.get(className: cls, id: pub.id!).fields["t"] == "public")
        #expect(try await backend.count(Query(cls)) == 1)
        do {
            _ = try await backend.update(className: cls, id: pub.id!, .set(["t": "hacked"]))
            Issue.record("b must not write a's public-read record")
        } catch let e as MBaaSError { #expect(e.kind == .forbidden) }
        do {
            try await backend.delete(className: cls, id: priv.id!)
            Issue.record("b must not delete a's private record")
        } catch let e as MBaaSError { #expect(e.kind == .notFound) }
        let changed = try await backend.update(className: cls, id: wo.id!, .set(["t": "written by b"]))
        #expect(changed.fields["t"] == "written by b")

        try await backend.logOut(confirmWithServer: false)
        #expect(try await backend.count(Query(cls)) == 1)
        await #expect(throws: MBaaSError.self) { _ = try await backend.get(className: cls, id: priv.id!) }

        _ = try await backend.logIn(username: "u\(run)a", password: "pw-\(run)-aaaaa")
        #expect(try await backend.count(Query(cls)) == 3)
        #expect(try await backend.get(className: cls, id: wo.id!).fields["t"] == "written by b")
        try await backend.delete(className: cls, id: priv.id!)

        do {
            _ = try await backend.create(Record(className: cls, acl: ACL([.role("Admins"): .read]), fields: ["t": "x"]))
            Issue.record("roles must be unsupported")
        } catch let e as MBaaSError { #expect(e.kind == .unsupported) }
    }

    @Test("files: standalone with ACL, attached to a record, list, download, delete")
    func files() async throws {
        let backend = try await Live.backend()
        let run = Live.runId()
        let bytes = Data((0..<1000).map { UInt8($0 % 251) })
        let a = try await backend.signUp(username: "f\(run)a", password: "pw-\(run)-aaaaa")

        // standalone, public
        let progress = Collector<TransferProgress>()
        let pub = try await backend.upload(FileUpload(name: "\(run)-日本 語.bin", source: .data(bytes), progress: { progress.append($0) }))
        #expect(pub.size == 1000)
        #expect(progress.all.last?.completedBytes == 1000)
        #expect(try await backend.download(pub) == bytes)
        #expect(try await backend.download(FileReference(name: pub.name)) == bytes)  // by name alone

        // standalone, private to a
        let priv = try await backend.upload(FileUpload(name: "\(run)-secret.txt", source: .data(Data("secret".utf8)),
                                                       acl: .privateTo(a.userId)))
        #expect(try await backend.download(priv) == Data("secret".utf8))
        try await backend.logOut(confirmWithServer: false)
        do {
            _ = try await backend.download(priv)
            Issue.record("a guest must not download a private file")
        } catch let e as MBaaSError { #expect(e.kind == .notFound) }
        #expect(try await backend.download(pub) == bytes)

        let listed = try await backend.listFiles(prefix: "\(run)-", limit: nil)
        #expect(listed.map(\.reference.name) == [pub.name])  // the private one is not visible to a guest
        _ = try await backend.logIn(username: "f\(run)a", password: "pw-\(run)-aaaaa")
        #expect(try await backend.listFiles(prefix: "\(run)-", limit: nil).map(\.reference.name) == [pub.name, priv.name])
        #expect(try await backend.listFiles(prefix: "\(run)-", limit: 1).count == 1)
        // By the stored name as well, the one a reference carries (PocketBase changed the name asked for).
        #expect(priv.name != "\(run)-secret.txt")
        #expect(try await backend.listFiles(prefix: priv.name, limit: nil).map(\.reference.name) == [priv.name])
        #expect(try await backend.listFiles(prefix: "\(run)-secret.txt", limit: nil).map(\.reference.name) == [priv.name])

        // attached to a record
        let cls = "Doc_\(run)"
        let doc = try await backend.create(Record(className: cls, acl: .privateTo(a.userId), fields: ["title": "with photo"]))
        let photo = try await backend.upload(FileUpload(
            name: "photo.png", source: .data(bytes), contentType: "image/png",
            attachment: FileAttachment(className: cls, objectId: doc.id!, field: "photo")))
        #expect(photo.attachment?.field == "photo")
        let reread = try await backend.get(className: cls, id: doc.id!)
        #expect(reread.fields["photo"]?.fileValue?.name == photo.name)
        #expect(reread.fields["photo"]?.fileValue?.attachment == photo.attachment)
        #expect(try await backend.download(photo) == bytes)
        try await backend.deleteFile(photo)
        #expect(try await backend.get(className: cls, id: doc.id!).fields["photo"] == nil)
        await #expect(throws: MBaaSError.self) { try await backend.deleteFile(photo) }

        try await backend.deleteFile(pub)
        do {
            _ = try await backend.download(pub)
            Issue.record("a deleted file must be gone")
        } catch let e as MBaaSError { #expect(e.kind == .notFound) }
    }
}

}

