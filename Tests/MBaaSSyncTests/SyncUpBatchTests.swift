import Foundation
import MBaaSCore
import MBaaSLocal
import Testing
@testable import MBaaSSync

@Suite("Sync up sends queued creates in batches")
struct SyncUpBatchTests {
    /// A remote, a replica in front of it, and 25 creates queued offline (an update of m3 queued after them).
    func queued(_ dir: URL) async throws -> (ControlledRemote, ReplicaBackend, LocalBackend) {
        let server = try localRemote(dir)
        let remote = ControlledRemote(server)
        let replica = try await openReplica(dir.appendingPathComponent("r.replica").path, remote: remote)
        for i in 0..<25 { _ = try await replica.create(Record(className: "Memo", id: "m\(i)", fields: ["i": .int(Int64(i))])) }
        _ = try await replica.update(className: "Memo", id: "m3", .set(["late": true]))
        remote.resetCalls()
        return (remote, replica, server)
    }

    @Test("a run of queued creates goes in one batch call, each record as last written")
    func oneBatch() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (remote, replica, server) = try await queued(dir)
        let report = try await replica.sync(SyncOptions(direction: .up))
        #expect(report.outcome == .complete)
        #expect(report.classes["Memo"]?.up == 25)   // m3's update coalesced into its create
        // m0 alone (the remote has not taken a client id yet), then m1...m24 in one batch call.
        #expect(remote.calls.filter { $0 == "batch" }.count == 1)
        #expect(remote.calls.filter { $0 == "create" }.count == 25)
        #expect(remote.calls.prefix(3) == ["create", "batch", "create"])
        #expect(try await server.count(Query("Memo")) == 25)
        #expect(try await server.get(className: "Memo", id: "m3").fields == ["i": 3, "late": true])
        #expect(try await replica.syncStatus(className: "Memo", id: "m24") == .synced)
        #expect(try await replica.status(probe: false).classes["Memo"]?.pending == 0)
    }

    @Test("a batch whose answer is lost is looked up entry by entry: nothing sent twice, nothing lost")
    func lostAnswer() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (remote, replica, server) = try await queued(dir)
        remote.plan = { name in name == "batch" ? .after(MBaaSError(.transport, "connection reset")) : nil }
        let report = try await replica.sync(SyncOptions(direction: .up))
        #expect(report.outcome == .complete)
        #expect(report.classes["Memo"]?.up == 25)
        #expect(remote.calls.filter { $0 == "create" }.count == 25)
        #expect(remote.calls.filter { $0 == "get" }.count == 24)   // m0 went alone (the remote's first client id)
        #expect(try await server.count(Query("Memo")) == 25)
        #expect(try await replica.status(probe: false).classes["Memo"]?.pending == 0)
    }

    @Test("runs of creates go as concurrent batch calls (at most the calls in flight), in order when a create holds a pointer")
    func callsInFlight() async throws {
        for (inFlight, pointers, expected) in [(4, false, 4), (1, false, 1), (4, true, 1)] {
            let dir = try temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let server = try localRemote(dir)
            let remote = ControlledRemote(server)
            remote.maxBatchSize = 5
            remote.batchDelay = .milliseconds(200)
            let replica = try await openReplica(dir.appendingPathComponent("r.replica").path, remote: remote)
            _ = try await replica.create(Record(className: "Memo", id: "m0", fields: [:]))
            _ = try await replica.sync(SyncOptions(direction: .up))   // m0 alone: the remote keeps client ids
            for i in 1...40 {
                var fields: [String: Value] = ["i": .int(Int64(i))]
                if pointers { fields["first"] = .pointer(Pointer(className: "Memo", objectId: "m\(i - 1)")) }
                _ = try await replica.create(Record(className: "Memo", id: "m\(i)", fields: fields))
            }
            let report = try await replica.sync(SyncOptions(direction: .up, createCallsInFlight: inFlight))
            #expect(report.classes["Memo"]?.up == 40, "\(inFlight) \(pointers)")
            #expect(try await server.count(Query("Memo")) == 41)
            #expect(remote.calls.filter { $0 == "batch" }.count == 8)
            if expected > 1 {
                #expect(remote.mostBatchesInFlight > 1 && remote.mostBatchesInFlight <= expected, "\(remote.mostBatchesInFlight)")
            } else {
                #expect(remote.mostBatchesInFlight == 1, "in flight at once: \(remote.mostBatchesInFlight)")
            }
            #expect(try await replica.status(probe: false).classes["Memo"]?.pending == 0)
            await replica.close()
        }
    }

    @Test("a create may go in a concurrent call only when no field points, nested or sealed at rest (which may hide one)")
    func pointerCheck() {
        func create(_ fields: JSONObject) -> OutboxEntry {
            OutboxEntry(seq: 1, className: "Memo", id: "m1", operation: .create, payload: ["fields": .object(fields)],
                        inflight: false, blocked: nil, force: false)
        }
        let pointer = JSON.object(["__type": "Pointer", "className": "Memo", "objectId": "m0"])
        #expect(ReplicaBackend.pointsNowhere(create(["n": 1, "tags": .array(["a", "b"]), "o": .object(["x": 1])])))
        #expect(!ReplicaBackend.pointsNowhere(create(["p": pointer])))
        #expect(!ReplicaBackend.pointsNowhere(create(["list": .array([1, pointer])])))
        #expect(!ReplicaBackend.pointsNowhere(create(["deep": .object(["inner": .object(["p": pointer])])])))
        #expect(!ReplicaBackend.pointsNowhere(create(["secret": .object([ReplicaCipher.marker: .object(["__type": "Bytes", "base64": "AAAA"])])])))
    }

    @Test("a remote without batches gets one create per entry")
    func withoutBatch() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (remote, replica, server) = try await queued(dir)
        remote.withoutFeatures = [.batch]
        let report = try await replica.sync(SyncOptions(direction: .up))
        #expect(report.classes["Memo"]?.up == 25)
        #expect(remote.calls.filter { $0 == "batch" }.isEmpty)
        #expect(remote.calls.filter { $0 == "create" }.count == 25)
        #expect(try await server.count(Query("Memo")) == 25)
    }
}
