import Foundation
import GRDB
import MBaaSCore
import MBaaSTesting
import MBaaSLocal
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Opening database files: modes, permissions, foreign databases, the remembered files directory, stale partial
/// uploads (issue 11).
@Suite("Local open modes and the database file")
struct OpenModeTests {
    func mode(_ path: String) throws -> Int {
        try ((FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1) & 0o777
    }

    func options(_ mode: LocalBackend.OpenMode, files: URL? = nil) -> LocalBackend.Options {
        var o = testOptions
        o.openMode = mode
        o.filesDirectory = files
        return o
    }

    @Test func aNewDatabaseIsPrivate() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("p.db").path
        let old = umask(0o022)
        defer { umask(old) }
        let b = try fileBackend(path)
        let rec = try await b.create(Record(className: "Memo", fields: ["a": 1]))
        _ = try await b.upload(Data("x".utf8), name: "f.txt")
        #expect(try mode(path) == 0o600)
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            #expect(try mode(path + suffix) == 0o600, "\(suffix)")
        }
        #expect(try mode(path + "-files") == 0o700)
        await b.close()
        #expect(rec.id != nil)
    }

    @Test func readsNeverCreateADatabase() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("typo.db").path
        let ro = try LocalBackend(path: path, options: options(.readOnly))
        let e = await expectError(.notFound) { try await ro.get(className: "Memo", id: "x") }
        #expect(e?.message.contains("no database at '\(path)'") == true)
        await expectError(.notFound) { try await ro.queryPage(Query("Memo")) }
        await expectError(.invalidRequest) { try await ro.get(className: "1Memo", id: "x") }   // arguments first
        await expectError(.notFound) { try await ro.create(Record(className: "Memo")) }
        await ro.close()
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
        let rw = await expectError(.notFound) { try LocalBackend(path: path, options: self.options(.readWrite)) }
        #expect(rw?.message.contains("check the path") == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
    }

    @Test("a store made before schema v3 gets the updated_at index when opened for writing, its records intact; read-only leaves it as it is")
    func olderStoresGetTheUpdatedAtIndex() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("old.db").path
        let w = try fileBackend(path)
        let rec = try await w.create(Record(className: "Memo", fields: ["a": 1]))
        await w.close()
        // As a v2 store was: no index, no v3 in GRDB's migration table.
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
            try db.execute(sql: "DROP INDEX records_class_updated")
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v3'")
        }
        func indexed() async throws -> Bool {
            try await queue.read { db in
                try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'records_class_updated')") ?? false
            }
        }
        #expect(try await !indexed())
        let ro = try LocalBackend(path: path, options: options(.readOnly))
        #expect(try await ro.get(className: "Memo", id: rec.id!).fields["a"] == 1)
        await ro.close()
        #expect(try await !indexed(), "a read-only open changed the file")
        let upgraded = try fileBackend(path)
        #expect(try await upgraded.get(className: "Memo", id: rec.id!).fields["a"] == 1)
        await upgraded.close()
        #expect(try await indexed())
        try queue.close()
    }

    @Test func aReadOnlyBackendReadsAndRefusesWrites() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("r.db").path
        let w = try fileBackend(path)
        let rec = try await w.create(Record(className: "Memo", fields: ["a": 1]))
        await w.close()
        let ro = try LocalBackend(path: path, options: options(.readOnly))
        #expect(try await ro.get(className: "Memo", id: rec.id!).fields["a"] == 1)
        let e = await expectError(.forbidden) { try await ro.create(Record(className: "Memo")) }
        #expect(e?.message.contains("read-only") == true)
        await expectError(.forbidden) { try await ro.upload(Data("x".utf8), name: "f") }
        #expect(!FileManager.default.fileExists(atPath: path + "-files"))
        await ro.close()
    }

    @Test func aForeignDatabaseIsRefusedUntouched() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        for (name, sql) in [("other.db", "CREATE TABLE foo(x)"), ("clash.db", "CREATE TABLE records(x)")] {
            let path = dir.appendingPathComponent(name).path
            let q = try DatabaseQueue(path: path)
            try await q.write { try $0.execute(sql: sql) }
            try q.close()
            let before = try Data(contentsOf: URL(fileURLWithPath: path))
            for m in LocalBackend.OpenMode.allCases {
                let e = await expectError(.invalidRequest) { try LocalBackend(path: path, options: self.options(m)) }
                #expect(e?.message.contains("not an MBaaSKit store") == true, "\(m): \(String(describing: e))")
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "\(name) changed")
            let tables = try await DatabaseQueue(path: path).read {
                try String.fetchAll($0, sql: "SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            #expect(!tables.contains("grdb_migrations"), "\(name): \(tables)")
        }
    }

    @Test func theFilesDirectoryIsRemembered() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("fx.db").path
        let elsewhere = dir.appendingPathComponent("blobs")
        let first = try LocalBackend(path: path, options: options(.create, files: elsewhere))
        _ = try await first.upload(Data("hi".utf8), name: "a2")
        await first.close()
        // Later opens need not repeat it, for reads and writes.
        let ro = try LocalBackend(path: path, options: options(.readOnly))
        #expect(try await ro.download(name: "a2") == Data("hi".utf8))
        await ro.close()
        let rw = try LocalBackend(path: path, options: options(.readWrite))
        try await rw.deleteFile(FileReference(name: "a2"))
        await rw.close()
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path).filter { !$0.hasPrefix(".") }.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: path + "-files"))
        // Another directory than the remembered one is refused.
        let e = await expectError(.invalidRequest) {
            try LocalBackend(path: path, options: self.options(.readWrite, files: dir.appendingPathComponent("other")))
        }
        #expect(e?.message.contains(elsewhere.path) == true)
    }

    @Test func abandonedPartialUploadsAreSweptOnOpen() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("s.db").path
        let b = try fileBackend(path)
        _ = try await b.upload(Data("x".utf8), name: "kept")
        await b.close()
        let files = URL(fileURLWithPath: path + "-files")
        let old = Date(timeIntervalSinceNow: -3600)
        // An abandoned partial (no lock), an old one still locked by a live upload, and a fresh one.
        let abandoned = files.appendingPathComponent(".partial-abandoned").path
        let live = files.appendingPathComponent(".partial-live").path
        let fresh = files.appendingPathComponent(".partial-fresh").path
        for p in [abandoned, live, fresh] { #expect(FileManager.default.createFile(atPath: p, contents: Data(count: 10))) }
        try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: abandoned)
        try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: live)
        // flock locks belong to open file descriptions: a second open in this process conflicts like another process.
        let fd = open(live, O_RDONLY)
        #expect(flock(fd, LOCK_EX) == 0)
        defer { close(fd) }
        let again = try fileBackend(path)
        #expect(!FileManager.default.fileExists(atPath: abandoned))
        #expect(FileManager.default.fileExists(atPath: live))
        #expect(FileManager.default.fileExists(atPath: fresh))
        #expect(try await again.download(name: "kept") == Data("x".utf8))
        await again.close()
    }
}

@Suite("Local session pruning")
struct SessionPruningTests {
    @Test func expiredSessionsArePrunedAtLogIn() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("p.db").path
        let clock = TestClock()
        var options = testOptions
        options.sessionLifetime = 60
        let b = try LocalBackend(path: path, context: BackendContext(clock: clock.function), options: options)
        _ = try await b.signUp(username: "alice", password: "pw")
        _ = try await b.signUp(username: "bob", password: "pw")
        clock.advance(by: 120)
        _ = try await b.logIn(username: "alice", password: "pw")   // prunes bob's expired session too
        await b.close()
        let rows = try await DatabaseQueue(path: path).read { try Int.fetchOne($0, sql: "SELECT count(*) FROM sessions") }
        #expect(rows == 1)
    }
}

/// Runs SQL on a store's database file behind the backend's back (a test's way to damage what no API would).
func executeBehindItsBack(path: String, _ sql: String) async throws {
    let q = try DatabaseQueue(path: path)
    try await q.write { try $0.execute(sql: sql) }
    try q.close()
}
