import Foundation
import MBaaSCore
import MBaaSEmulator
import MBaaSLocal
import MBaaSParse
import MBaaSReplay
import MBaaSTesting
import Testing
@testable import MBaaSSync

@Suite("Replica writes and the outbox")
struct OutboxTests {
    @Test("a write offline is kept with its syncStatus and sent by sync up")
    func offlineCreateThenSync() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let remote = ControlledRemote(try localRemote(dir))
        let replica = try await openReplica(dir.appendingPathComponent("r.replica").path, remote: remote)
        let memo = try await replica.create(Record(className: "Memo", fields: ["title": "offline", "money": 5]))
        #expect(memo.id?.count == 15)
        #expect(try await replica.syncStatus(className: "Memo", id: memo.id!) == .created)
        #expect(remote.callCount == 0)
        #expect(try await replica.get(className: "Memo", id: memo.id!).fields["title"] == "offline")
        let json = try await replica.json(of: memo)
        #expect(json["syncStatus"] == "created")
        #expect(try await replica.status(probe: false).classes["Memo"]?.pending == 1)

        let report = try await replica.sync()
        #expect(report.outcome == .complete)
        #expect(report.classes["Memo"]?.up == 1)
        #expect(try await remote.base.get(className: "Memo", id: memo.id!).fields["title"] == "offline")
        #expect(try await replica.syncStatus(className: "Memo", id: memo.id!) == .synced)
        #expect(try await replica.status(probe: false).classes["Memo"]?.pending == 0)
    }

    @Test("100 offline updates of one record send exactly one request (counted on the transport)")
    func coalescedUpdates() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try LocalBackend.inMemory(options: LocalBackend.Options(passwordHashing: .testing))
        let dialect = ParseDialect(store: store, configuration: .init(applicationId: "app", restKey: "rest", masterKey: "master"))
        let counting = MethodCountingTransport(base: EmulatorTransport(dialect))
        let remote = try await ParseBackendFactory().open(try BackendURL(parsing: dialect.backendURL(host: "127.0.0.1", port: 8080)),
                                                          context: BackendContext(transport: counting))
        let replica = try await openReplica(dir.appendingPathComponent("r.replica").path, remote: remote)
        let memo = try await replica.create(Record(className: "Memo", fields: ["title": "t", "n": 0]))
        _ = try await replica.sync(SyncOptions(direction: .up))
        let remoteId = try #require(try await replica.get(className: "Memo", id: memo.id!).id)
        for i in 1...100 {
            _ = try await replica.update(className: "Memo", id: remoteId, .set(["title": .string("v\(i)")]))
        }
        #expect(try await replica.status(probe: false).classes["Memo"]?.pending == 1)
        let before = counting.methods.count
        let report = try await replica.sync(SyncOptions(direction: .up))
        #expect(report.outcome == .complete)
        let sent = Array(counting.methods.dropFirst(before))
        #expect(sent.filter { $0 != "GET" } == ["PUT"], "requests: \(sent)")
        // What one update costs on this adapter (Parse answers a PUT with the update time only, then reads the record).
        let baseline = counting.methods.count
        _ = try await remote.update(className: "Memo", id: remoteId, .set(["title": "direct"]))
        #expect(sent.count == counting.methods.count - baseline)
        #expect(try await remote.get(className: "Memo", id: remoteId).fields["title"] == "direct")
    }

    @Test("an id holding NUL names no record of the replica (notFound, no status) and is refused on create; the record named by the part before it is untouched")
    func idsHoldingNULAreRefused() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let remote = ControlledRemote(try localRemote(dir))
        let replica = try await openReplica(dir.appendingPathComponent("r.replica").path, remote: remote)
        let a = try #require(try await replica.create(Record(className: "Memo", fields: ["n": 1])).id)
        // Bound by GRDB, `a + "\0x"` was cut to `a`: update changed `a` and queued it; delete removed it.
        let wrong = a + "\u{0}x"
        func refused(_ kind: MBaaSError.Kind, _ body: () async throws -> Void) async {
            await #expect { try await body() } throws: { error in (error as? MBaaSError)?.kind == kind }
        }
        // As Local and PostgreSQL answer: no record has such an id. Creating one is refused, naming the NUL.
        await refused(.notFound) { _ = try await replica.get(className: "Memo", id: wrong) }
        await refused(.notFound) { _ = try await replica.update(className: "Memo", id: wrong, .set(["n": 2])) }
        await refused(.notFound) { try await replica.delete(className: "Memo", id: wrong, expectedVersion: nil) }
        #expect(try await replica.syncStatus(className: "Memo", id: wrong) == nil)
        #expect(try await replica.syncStatus(className: "Memo", id: a) == .created)
        await #expect { _ = try await replica.create(Record(className: "Memo", id: wrong, fields: ["n": 3])) } throws: { error in
            (error as? MBaaSError)?.kind == .invalidRequest && (error as? MBaaSError)?.message.contains("NUL") == true
        }
        #expect(try await replica.get(className: "Memo", id: a)["n"] == 1)
        #expect(try await replica.status(probe: false).classes["Memo"]?.pending == 1)
        #expect(remote.callCount == 0)
    }

    @Test("sync down leaves out a remote record whose id holds NUL, lists it, and keeps the replica's record named by the part before it")
    func syncDownRefusesIdsHoldingNUL() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let remote = ControlledRemote(try localRemote(dir))
        let a = try #require(try await remote.base.create(Record(className: "Memo", fields: ["n": 1])).id)
        // A remote that holds `a + "\0x"` too (the Local under it cannot), updated before `a`, and selected as a server
        // would: by the sync's `updatedAt >= mark`.
        let odd = Record(className: "Memo", id: a + "\u{0}x", createdAt: Date(timeIntervalSinceNow: -60),
                         updatedAt: Date(timeIntervalSinceNow: -60), version: "1", fields: ["n": 99])
        @Sendable func since(_ p: QueryPredicate?) -> Date? {
            switch p {
            case .compare("updatedAt", .gte, .date(let d))?: return d
            case .and(let parts)?: return parts.lazy.compactMap { since($0) }.first
            default: return nil
            }
        }
        let oddOnRemote = Locked(true), oddServed = Locked(0)
        remote.lock.withLock {
            remote.pageHook = { query, page in
                var page = page
                if oddOnRemote.withLock({ $0 }), query.cursor == nil, since(query.predicate).map({ odd.updatedAt! >= $0 }) ?? true {
                    page.records.append(odd)
                    oddServed.withLock { $0 += 1 }
                }
                return page
            }
        }
        let replica = try await openReplica(dir.appendingPathComponent("r.replica").path, remote: remote)
        let report = try await replica.sync(SyncOptions(direction: .down))
        #expect(report.classes["Memo"]?.down == 1)
        #expect(report.classes["Memo"]?.refused == 1)
        #expect(report.refusedDown.map(\.id) == [a + "\u{0}x"])
        #expect(report.refusedDown.first?.reason.contains("NUL") == true)
        #expect(report.json["refusedDown"]?.arrayValue?.count == 1)
        // Before, the odd record was written over `a` (n = 99) and marked synced.
        #expect(try await replica.get(className: "Memo", id: a)["n"] == 1)
        // The next sync down no longer fetches it (the mark moved past it, older than `a`), and lists it again: the
        // replica keeps it, its identity only (no fields).
        remote.resetCalls()
        let again = try await replica.sync(SyncOptions(direction: .down))
        #expect(again.refusedDown.map(\.id) == [a + "\u{0}x"])
        #expect(again.refusedDown.first?.remote?.fields == [:])
        #expect(again.classes["Memo"]?.refused == 1)
        #expect(oddServed.withLock { $0 } == 1, "the second sync down did not fetch it: it was listed from the replica")
        // Gone from the remote: the next ghost scan forgets it.
        oddOnRemote.withLock { $0 = false }
        let scanned = try await replica.sync(SyncOptions(direction: .down, ghostScan: true))
        #expect(scanned.refusedDown.isEmpty && scanned.classes["Memo"]?.refused == 0)
    }

    @Test("create then updates is one create; create then delete sends nothing; updates then delete is one delete")
    func amplifyRules() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let remote = ControlledRemote(try localRemote(dir))
        let replica = try await openReplica(dir.appendingPathComponent("r.replica").path, remote: remote)
        let a = try await replica.create(Record(className: "Memo", fields: ["n": 1]))
        for _ in 0..<10 { _ = try await replica.update(className: "Memo", id: a.id!, RecordUpdate(changes: ["n": .increment(1)])) }
        let b = try await replica.create(Record(className: "Memo", fields: ["n": 1]))
        try await replica.delete(className: "Memo", id: b.id!)
        #expect(try await replica.syncStatus(className: "Memo", id: b.id!) == nil)
        _ = try await replica.sync(SyncOptions(direction: .up))
        #expect(remote.calls == ["create"])
        #expect(try await remote.base.get(className: "Memo", id: a.id!).fields["n"] == 11)

        remote.resetCalls()
        for i in 0..<5 { _ = try await replica.update(className: "Memo", id: a.id!, .set(["title": .string("t\(i)")])) }
        try await replica.delete(className: "Memo", id: a.id!)
        #expect(try await replica.syncStatus(className: "Memo", id: a.id!) == .deleted)
        #expect(try await replica.status(probe: false).classes["Memo"]?.pending == 1)
        _ = try await replica.sync(SyncOptions(direction: .up))
        #expect(remote.calls == ["delete"])
        await #expect(throws: MBaaSError.self) { _ = try await remote.base.get(className: "Memo", id: a.id!) }
    }

    @Test("field operations stay operations: a concurrent server change survives; operations that do not combine queue apart")
    func operationsNotTurnedIntoSets() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let remote = ControlledRemote(try localRemote(dir))
        let replica = try await openReplica(dir.appendingPathComponent("r.replica").path, remote: remote)
        let memo = try await replica.create(Record(className: "Memo", fields: ["n": 10, "tags": ["a"]]))
        _ = try await replica.sync()
        _ = try await replica.update(className: "Memo", id: memo.id!, RecordUpdate(changes: ["n": .increment(1)]))
        _ = try await replica.update(className: "Memo", id: memo.id!, RecordUpdate(changes: ["n": .increment(2)]))
        _ = try await remote.base.update(className: "Memo", id: memo.id!, RecordUpdate(changes: ["n": .increment(100)]))
        _ = try await replica.update(className: "Memo", id: memo.id!, RecordUpdate(changes: ["tags": .add(["b"])]))
        _ = try await replica.update(className: "Memo", id: memo.id!, RecordUpdate(changes: ["tags": .addUnique(["c"])]))
        #expect(try await replica.status(probe: false).classes["Memo"]?.pending == 2)
        remote.resetCalls()
        _ = try await replica.sync(SyncOptions(direction: .up))
        #expect(remote.calls == ["update", "update"])
        let server = try await remote.base.get(className: "Memo", id: memo.id!)
        #expect(server.fields["n"] == 113)
        #expect(server.fields["tags"] == ["a", "b", "c"])
        #expect(try await replica.get(className: "Memo", id: memo.id!).fields["n"] == 113)
    }

    @Test("where the remote refuses client ids, its id replaces the offline one; the old id still finds the record and pointers follow")
    func idReplacement() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let remote = ControlledRemote(try localRemote(dir))
        remote.refuseClientIds = true
        let replica = try await openReplica(dir.appendingPathComponent("r.replica").path, remote: remote)
        let parent = try await replica.create(Record(className: "Memo", fields: ["title": "parent"]))
        let child = try await replica.create(Record(className: "Memo", fields: ["parent": .pointer(parent.pointer!)]))
        let report = try await replica.sync(SyncOptions(direction: .up))
        #expect(report.outcome == .complete)
        let server = try await contents(remote.base)
        #expect(server.count == 2)
        #expect(server[parent.id!] == nil)
        let newParent = try #require(server.first { $0.value["title"] == "parent" }?.key)
        let newChild = try #require(server.first { $0.value["parent"] != nil }?.key)
        #expect(server[newChild]?["parent"] == .pointer(Pointer(className: "Memo", objectId: newParent)))
        #expect(try await replica.get(className: "Memo", id: parent.id!).id == newParent)
        #expect(try await replica.get(className: "Memo", id: child.id!).fields["parent"] == .pointer(Pointer(className: "Memo", objectId: newParent)))
    }

    @Test("a create whose answer was lost on a remote without client ids is found by its content, never sent twice")
    func lostCreateAnswer() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("r.replica").path
        let server = try localRemote(dir)
        let remote = ControlledRemote(server)
        remote.refuseClientIds = true
        // Create calls, in order: 1 the refused one with the offline id, 2 the memo without it, 3 the twin. The server
        // writes 2 and 3, then the connection drops before the answer (what a reset after the write looks like).
        let creates = CallCounter()
        remote.plan = { name in
            guard name == "create" else { return nil }
            let n = creates.next()
            return n == 2 || n == 3 ? .after(MBaaSError(.transport, "connection reset after the server wrote")) : nil
        }
        let first = try await openReplica(path, remote: remote, retry: RetryPolicy(maxAttempts: 1))
        let memo = try await first.create(Record(className: "Memo", fields: ["title": "once", "n": 7, "tags": ["a"]]))
        let twin = try await first.create(Record(className: "Memo", fields: ["title": "once", "n": 7, "tags": ["a"]]))
        let crashed = try await first.sync(SyncOptions(direction: .up))
        #expect(crashed.outcome != .complete)
        #expect(try await server.count(Query("Memo")) == 1)
        await first.close()

        // A new process: the memo in flight is found by its content and adopted; the twin (same content, a record of
        // its own) is sent, loses its answer too, and is found among the records the replica does not hold yet.
        let second = try await openReplica(path, remote: remote, configuration: nil)
        let report = try await second.sync(SyncOptions(direction: .up))
        #expect(report.outcome == .complete)
        #expect(report.classes["Memo"]?.up == 2)
        #expect(creates.value == 3, "creates sent: \(remote.calls)")
        let onServer = try await contents(server)
        #expect(onServer.count == 2)
        let memoId = try await second.get(className: "Memo", id: memo.id!).id!
        let twinId = try await second.get(className: "Memo", id: twin.id!).id!
        #expect(memoId != twinId)
        #expect(Set(onServer.keys) == [memoId, twinId])
        #expect(try await second.syncStatus(className: "Memo", id: memoId) == .synced)
        #expect(try await second.syncStatus(className: "Memo", id: twinId) == .synced)
        #expect(try await second.status(probe: false).classes["Memo"]?.pending == 0)
    }

    @Test("localOnly records never leave the device; serverOnly calls go straight to the remote")
    func persistenceKinds() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let remote = ControlledRemote(try localRemote(dir))
        let config = ReplicaConfiguration(classes: ["Draft": ReplicaPolicy(persistence: .localOnly),
                                                    "Memo": ReplicaPolicy(persistence: .localAndServer)])
        let replica = try await openReplica(dir.appendingPathComponent("r.replica").path, remote: remote, configuration: config)
        _ = try await replica.create(Record(className: "Draft", fields: ["x": 1]))
        _ = try await replica.create(Record(className: "Log", fields: ["x": 2]))
        #expect(remote.calls == ["create"])
        _ = try await replica.sync()
        #expect(try await remote.base.count(Query("Draft")) == 0)
        #expect(try await replica.count(Query("Draft")) == 1)
        #expect(try await remote.base.count(Query("Log")) == 1)
    }
}

/// Forwards requests and keeps each one's method, in order.
final class MethodCountingTransport: HTTPTransport, @unchecked Sendable {
    let base: any HTTPTransport
    private let lock = NSLock()
    private var sent: [String] = []
    init(base: any HTTPTransport) { self.base = base }
    var methods: [String] { lock.withLock { sent } }
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        lock.withLock { sent.append("\(request.method)") }
        return try await base.send(request)
    }
}
