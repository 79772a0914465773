import Foundation
import GRDB
import MBaaSCore
import MBaaSTesting
import Testing
@testable import MBaaSLocal

@Suite("Local point reads on a file")
struct PointReaderTests {
    @Test("two point reads at once each hold a read-only connection of their own (neither waits for the other)")
    func concurrentReadsHaveConnectionsOfTheirOwn() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let backend = try fileBackend(dir.appendingPathComponent("points.db").path)
        defer { Task { await backend.close() } }
        let id = try #require(try await backend.create(Record(className: "Memo", fields: ["t": "x"])).id)
        let store = backend.store
        // Each read, inside its statement's connection, announces itself and waits for the other: with one connection
        // for both, the second would wait for the first to end, and the first would wait out its timeout.
        let inA = DispatchSemaphore(value: 0), inB = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        let met = Locked<[Bool]>([])
        for (mine, other) in [(inA, inB), (inB, inA)] {
            done.enter()
            Thread.detachNewThread {
                let saw = (try? store.pointReader.read(store.writer, busyTimeout: 5) { db -> Bool in
                    mine.signal()
                    let metOther = other.wait(timeout: .now() + 5) == .success
                    other.signal()  // let the other one go on too
                    _ = try Row.fetchOne(db, sql: "SELECT id FROM records WHERE class = 'Memo' AND id = ?", arguments: [id])
                    return metOther
                }) ?? false
                met.withLock { $0.append(saw) }
                done.leave()
            }
        }
        await withCheckedContinuation { c in DispatchQueue.global().async { done.wait(); c.resume() } }
        #expect(met.withLock { $0 } == [true, true])
        #expect(store.pointReader.connectionsOpened == 2)
        #expect(try await backend.get(className: "Memo", id: id)["t"] == "x")
        #expect(store.pointReader.connectionsOpened == 2, "an idle connection is reused")
    }
}

/// The point read's statement, kept prepared on each dedicated connection, and its arguments, bound from their own
/// UTF-8 bytes.
@Suite("Local point reads: the kept statement and its bindings")
struct PointStatementTests {
    @Test("an id is bound byte for byte: with a NUL inside it, get, update and delete find no other record")
    func idsBindExactly() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let backend = try fileBackend(dir.appendingPathComponent("bind.db").path)
        defer { Task { await backend.close() } }
        let id = try #require(try await backend.create(Record(className: "Memo", fields: ["t": "x"])).id)
        // Bound as a C string, the text stopped at the NUL, so `id + "\0tail"` found the record `id`.
        // Update and delete find their record by the same read: before, they changed and deleted the record `id`.
        for wrong in [id + "\u{0}tail", ""] {
            await #expect { _ = try await backend.get(className: "Memo", id: wrong) } throws: { error in
                (error as? MBaaSError)?.kind == .notFound
            }
            await #expect { _ = try await backend.update(className: "Memo", id: wrong, .set(["t": "changed"])) } throws: { error in
                (error as? MBaaSError)?.kind == .notFound
            }
            await #expect { try await backend.delete(className: "Memo", id: wrong, expectedVersion: nil) } throws: { error in
                (error as? MBaaSError)?.kind == .notFound
            }
        }
        #expect(try await backend.get(className: "Memo", id: id)["t"] == "x")
        let queue = try DatabaseQueue()
        let bound = try queue.inDatabase { db -> [String]? in
            let stmt = try db.makeStatement(sql: "SELECT typeof(?1) || ':' || length(CAST(?1 AS BLOB)), typeof(?2) || ':' || length(CAST(?2 AS BLOB))")
            return try LocalColumn.stepOnce(stmt, db, bind: "", "a\u{0}é") { s in [LocalColumn.text(s, 0) ?? "NULL", LocalColumn.text(s, 1) ?? "NULL"] }
        }
        #expect(bound == ["text:0", "text:4"])
    }

    @Test("a file name, user name or e-mail holding NUL names nothing: no other file is read or deleted, no other user logs in")
    func otherKeysHoldingNUL() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let backend = try fileBackend(dir.appendingPathComponent("keys.db").path)
        defer { Task { await backend.close() } }
        _ = try await backend.upload(FileUpload(name: "x.txt", source: .data(Data("x".utf8))))
        let wrongFile = FileReference(name: "x.txt\u{0}junk")
        await #expect { _ = try await backend.download(wrongFile) } throws: { ($0 as? MBaaSError)?.kind == .notFound }
        await #expect { try await backend.deleteFile(wrongFile) } throws: { ($0 as? MBaaSError)?.kind == .notFound }
        #expect(try await backend.download(FileReference(name: "x.txt")) == Data("x".utf8))

        let alice = try await backend.signUp(username: "alice", password: "secret-pass", email: nil, fields: [:]).userId
        // A user id holding NUL names no user: nothing is read, changed or deleted, and an ACL naming only it is
        // refused as naming nobody (it named alice before).
        let wrongUser = alice + "\u{0}x"
        await #expect { _ = try await backend.user(id: wrongUser) } throws: { ($0 as? MBaaSError)?.kind == .notFound }
        await #expect { try await backend.setRoles(["staff"], forUser: wrongUser) } throws: { ($0 as? MBaaSError)?.kind == .notFound }
        await #expect { try await backend.importRole(DirectoryRole(name: "staff", users: [wrongUser])) } throws: {
            ($0 as? MBaaSError)?.kind == .notFound
        }
        await #expect { try await backend.deleteUser(id: wrongUser) } throws: { ($0 as? MBaaSError)?.kind == .notFound }
        await #expect { _ = try await backend.create(Record(className: "Memo", acl: .privateTo(wrongUser), fields: ["t": "x"])) } throws: {
            ($0 as? MBaaSError)?.kind == .invalidRequest
        }
        #expect(try await backend.user(id: alice).roles == [])
        await #expect { _ = try await backend.logIn(username: "alice\u{0}x", password: "secret-pass") } throws: {
            ($0 as? MBaaSError)?.kind == .unauthorized
        }
        #expect(try await backend.findUser(username: "alice\u{0}x") == nil)
        #expect(try await backend.findUser(username: "alice")?.username == "alice")
        await #expect { _ = try await backend.signUp(username: "bob", password: "secret-pass", email: "b@x\u{0}.org", fields: [:]) } throws: {
            ($0 as? MBaaSError)?.kind == .invalidRequest
        }
    }

    @Test("one connection's kept statement reads each change, across a schema change, and is finalized when Local closes")
    func keptStatementFollowsWritesAndCloses() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let backend = try fileBackend(dir.appendingPathComponent("kept.db").path)
        let id = try #require(try await backend.create(Record(className: "Memo", fields: ["n": 1])).id)
        for n in 2...4 {
            #expect(try await backend.get(className: "Memo", id: id)["n"] == .int(Int64(n - 1)))
            _ = try await backend.update(className: "Memo", id: id, .set(["n": .int(Int64(n))]))
        }
        // A schema change by another connection: SQLite prepares the kept statement again by itself.
        try await backend.store.writer.write { db in try db.execute(sql: "CREATE INDEX kept_probe ON records(updated_at)") }
        #expect(try await backend.get(className: "Memo", id: id)["n"] == 4)
        #expect(backend.store.pointReader.connectionsOpened == 1)
        let connection = try #require(backend.store.pointReader.idleConnections.first)
        await backend.close()
        // GRDB refuses to close a connection whose statements are not finalized; a closed queue refuses any use.
        #expect(throws: (any Error).self) { try connection.queue.inDatabase { db in try db.execute(sql: "SELECT 1") } }
    }
}

/// The decoding side of `bench local` (raw+decode) reads what Local stored, in place: the same record `get` returns.
@Suite("bench local's raw+decode reader")
struct BenchDecodeTests {
    @Test func decodesAStoredRowIntoTheRecordGetReturns() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mbaas-decode-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("local.db").path
        let backend = try LocalBackend(path: path)
        let created = try await backend.create(Record(className: "Bench", fields: LocalBenchmark.fields(7)))
        let id = try #require(created.id)
        let stored = try await backend.get(className: "Bench", id: id)
        await backend.close()
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        let decoded = try queue.inDatabase { db -> MBaaSCore.Record? in
            let stmt = try db.cachedStatement(sql: "SELECT seq, id, created_at, updated_at, version, acl, fields FROM records WHERE id = ?")
            return try LocalColumn.stepOnce(stmt, db, bind: [id]) { try LocalBenchmark.decode($0) }
        }
        #expect(decoded?.fields == LocalBenchmark.fields(7))
        #expect(decoded?.fields == stored.fields && decoded?.id == id && decoded?.version == stored.version)
        #expect(decoded?.createdAt == stored.createdAt && decoded?.updatedAt == stored.updatedAt)
    }
}
