import Foundation
import GRDB
import MBaaSCore
import MBaaSLocal
import MBaaSTesting
import Testing
@testable import MBaaSSync

@Suite("Sync down applies a page in few statements")
struct SyncDownPageTests {
    /// The local version the replica's `records` table holds for a record (`nil` when it has no row).
    func localVersion(_ replica: ReplicaBackend, _ id: String) async throws -> Int64? {
        try await replica.store.read { db in
            try Int64.fetchOne(db, sql: "SELECT version FROM records WHERE class = 'Memo' AND id = ?", arguments: [id])
        }
    }

    @Test("a page costs one state prefetch and two statements per applied record; pending records stay, versions count up")
    func statementsPerRecord() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try localRemote(dir)
        for i in 0..<60 { _ = try await server.create(Record(className: "Memo", id: "m\(i)", fields: ["i": .int(Int64(i))])) }
        let replica = try await openReplica(dir.appendingPathComponent("r.replica").path, remote: server)
        #expect(try await replica.sync(SyncOptions(direction: .down, pageSize: 100)).classes["Memo"]?.down == 60)
        #expect(try await localVersion(replica, "m0") == 1)

        // 40 records change on the server, 5 of them also locally (pending), and 20 new ones appear.
        for i in 0..<40 { _ = try await server.update(className: "Memo", id: "m\(i)", .set(["i": .int(Int64(1000 + i))])) }
        for i in 0..<5 { _ = try await replica.update(className: "Memo", id: "m\(i)", .set(["local": true])) }
        for i in 60..<80 { _ = try await server.create(Record(className: "Memo", id: "m\(i)", fields: ["i": .int(Int64(i))])) }
        let pendingVersion = try await localVersion(replica, "m0")

        let counter = CallCounter()
        try await replica.store.write { db in
            db.trace { event in
                guard case .statement(let statement) = event else { return }
                let sql = statement.sql
                if sql.contains("replica_state") || sql.contains(" records") { counter.increment() }
            }
        }
        let report = try await replica.sync(SyncOptions(direction: .down, pageSize: 100))
        try await replica.store.write { db in db.trace(nil) }

        // One page: 40 changed + 20 new, plus what shares the high-water mark's millisecond (fetched again with `gte`);
        // all but the 5 pending applied: 1 prefetch + 2 per applied record (the per-record look-ups of state and row
        // made it 4 per applied record + 1 per pending one before).
        let down = try #require(report.classes["Memo"]?.down)
        #expect(down >= 60 && down <= 80)
        #expect(counter.value == 1 + 2 * (down - 5))
        #expect(try await replica.get(className: "Memo", id: "m10").fields["i"] == 1010)
        #expect(try await localVersion(replica, "m10") == 2)
        #expect(try await localVersion(replica, "m70") == 1)
        #expect(try await replica.get(className: "Memo", id: "m70").fields["i"] == 70)
        // Pending local changes are never overwritten.
        #expect(try await localVersion(replica, "m0") == pendingVersion)
        #expect(try await replica.get(className: "Memo", id: "m0").fields == ["i": 0, "local": true])
        #expect(try await replica.syncStatus(className: "Memo", id: "m0") == .updated)
        #expect(try await replica.syncStatus(className: "Memo", id: "m10") == .synced)
    }
}
