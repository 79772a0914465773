import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSReplay
import Testing
@testable import MBaaSSync

/// A seeded source of faults for ``ControlledRemote/plan``.
final class FaultPlan: @unchecked Sendable {
    let lock = NSLock()
    var rng: SplitMix64
    var rate: Double
    init(seed: UInt64, rate: Double) {
        rng = SplitMix64(seed: seed)
        self.rate = rate
    }

    func next(_ name: String) -> ControlledRemote.Failure? {
        lock.withLock {
            guard rng.nextUnit() < rate else { return nil }
            switch rng.next() % 3 {
            case 0: return .before(MBaaSError(.unavailable, "injected 503", httpStatus: 503))
            case 1: return .before(MBaaSError(.transport, "injected connection reset"))
            default: return .after(MBaaSError(.transport, "injected drop after the server processed \(name)"))
            }
        }
    }
}

@Suite("Convergence of replicas")
struct ConvergenceTests {
    @Test("two replicas and a server, offline writes, server writes and 20% faults: overwrite converges; leaveIfChanged lists every difference",
          arguments: [(UInt64(7), ReplicaPolicy.MergeMode.overwrite), (UInt64(11), .overwrite), (UInt64(7), .leaveIfChanged)])
    func converge(seed: UInt64, merge: ReplicaPolicy.MergeMode) async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try localRemote(dir)
        let faults = FaultPlan(seed: seed, rate: 0.2)
        let config = ReplicaConfiguration(classes: ["Memo": ReplicaPolicy(persistence: .localAndServer, merge: merge)])
        var replicas: [ReplicaBackend] = []
        for name in ["a", "b"] {
            let remote = ControlledRemote(server)
            remote.plan = { faults.next($0) }
            let replica = try await openReplica(dir.appendingPathComponent("\(name).replica").path, remote: remote, configuration: config)
            if merge == .overwrite {
                // The only conflict overwrite leaves: a record the server deleted meanwhile; it stays deleted.
                await replica.setConflictHandler { conflict in conflict.remote == nil ? .keepRemote : .keepLocal }
            }
            replicas.append(replica)
        }
        var rng = SplitMix64(seed: seed &* 31)
        func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[Int(rng.next() % UInt64(items.count))] }
        for step in 0..<160 {
            let replica = replicas[Int(rng.next() % 2)]
            let ids = Array(try await contents(replica).keys).sorted()
            switch rng.next() % 10 {
            case 0, 1:
                _ = try await replica.create(Record(className: "Memo", fields: ["n": 0, "title": .string("s\(step)")]))
            case 2, 3:
                if let id = pick(ids) { _ = try await replica.update(className: "Memo", id: id, .set(["title": .string("u\(step)")])) }
            case 4:
                if let id = pick(ids) { _ = try await replica.update(className: "Memo", id: id, RecordUpdate(changes: ["n": .increment(1)])) }
            case 5:
                if let id = pick(ids), rng.next() % 3 == 0 { try await replica.delete(className: "Memo", id: id) }
            case 6, 7:
                _ = try await replica.sync(SyncOptions(pageSize: 7))
            default:
                let serverIds = Array(try await contents(server).keys).sorted()
                if let id = pick(serverIds) {
                    _ = try await server.update(className: "Memo", id: id, .set(["title": .string("server\(step)")]))
                } else {
                    _ = try await server.create(Record(className: "Memo", fields: ["n": 0, "title": "server"]))
                }
            }
        }
        faults.lock.withLock { faults.rate = 0 }
        for _ in 0..<3 {
            for replica in replicas { _ = try await replica.sync(SyncOptions(ghostScan: true, pageSize: 7)) }
        }
        let serverContents = try await contents(server)
        #expect(!serverContents.isEmpty)
        for replica in replicas {
            let local = try await contents(replica)
            let status = try await replica.status(probe: false)
            switch merge {
            case .overwrite:
                #expect(local == serverContents)
                #expect(status.classes["Memo"]?.pending == 0)
                #expect(try await replica.conflicts(className: nil).isEmpty)
            case .leaveIfChanged:
                let conflicted = Set(try await replica.conflicts(className: nil).map(\.id))
                let differing = Set(local.keys).union(serverContents.keys).filter { local[$0] != serverContents[$0] }
                #expect(differing.isSubset(of: conflicted), "differences not listed: \(differing.subtracting(conflicted).sorted())")
            }
        }
    }
}
