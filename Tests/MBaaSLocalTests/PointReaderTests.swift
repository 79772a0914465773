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
            return try LocalColumn.stepOnce(stmt, db, bind: [id], LocalBenchmark.decode)
        }
        #expect(decoded?.fields == LocalBenchmark.fields(7))
        #expect(decoded?.fields == stored.fields && decoded?.id == id && decoded?.version == stored.version)
        #expect(decoded?.createdAt == stored.createdAt && decoded?.updatedAt == stored.updatedAt)
    }
}
