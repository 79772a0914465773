import Foundation
import MBaaSCore
import MBaaSLocal
import Testing
@testable import MBaaSSync

@Suite("Sync down, sync up, conflicts, faults")
struct SyncTests {
    @Test("sync down is paged and incremental, keeps pending records, and the ghost scan removes what the server deleted")
    func syncDown() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try localRemote(dir)
        for i in 0..<250 { _ = try await server.create(Record(className: "Memo", id: "m\(i)", fields: ["i": .int(Int64(i))])) }
        let remote = ControlledRemote(server)
        let replica = try await openReplica(dir.appendingPathComponent("r.replica").path, remote: remote)
        let first = try await replica.sync(SyncOptions(pageSize: 100))
        #expect(first.classes["Memo"]?.down == 250)
        #expect(try await replica.count(Query("Memo")) == 250)
        #expect(remote.calls.filter { $0 == "query" }.count >= 3)

        _ = try await server.update(className: "Memo", id: "m1", .set(["i": 1001]))
        _ = try await server.update(className: "Memo", id: "m2", .set(["i": 1002]))
        _ = try await replica.update(className: "Memo", id: "m2", .set(["local": true]))
        try await server.delete(className: "Memo", id: "m3")
        let second = try await replica.sync(SyncOptions(direction: .down, pageSize: 100))
        #expect((second.classes["Memo"]?.down ?? 0) < 250)
        #expect(try await replica.get(className: "Memo", id: "m1").fields["i"] == 1001)
        #expect(try await replica.get(className: "Memo", id: "m2").fields["local"] == true)
        #expect(try await replica.get(className: "Memo", id: "m2").fields["i"] == 2)
        #expect(second.classes["Memo"]?.ghostsRemoved == 0)
        let third = try await replica.sync(SyncOptions(direction: .down, ghostScan: true, pageSize: 100))
        #expect(third.classes["Memo"]?.ghostsRemoved == 1)
        await #expect(throws: MBaaSError.self) { _ = try await replica.get(className: "Memo", id: "m3") }
        #expect(try await replica.count(Query("Memo")) == 249)
    }

    @Test("leaveIfChanged leaves the server's record alone and marks a conflict; overwrite writes over it")
    func mergeModes() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try localRemote(dir)
        _ = try await server.create(Record(className: "Memo", id: "a", fields: ["title": "base"]))
        let config = ReplicaConfiguration(classes: ["Memo": ReplicaPolicy(persistence: .localAndServer, merge: .leaveIfChanged)])
        let replica = try await openReplica(dir.appendingPathComponent("r.replica").path, remote: server, configuration: config)
        _ = try await replica.sync()
        _ = try await server.update(className: "Memo", id: "a", .set(["title": "server"]))
        _ = try await replica.update(className: "Memo", id: "a", .set(["title": "local"]))
        let report = try await replica.sync(SyncOptions(direction: .up))
        #expect(report.outcome == .complete)
        #expect(report.classes["Memo"]?.conflicts == 1)
        #expect(try await server.get(className: "Memo", id: "a").fields["title"] == "server")
        #expect(try await replica.syncStatus(className: "Memo", id: "a") == .conflicted)
        let conflicts = try await replica.conflicts(className: "Memo")
        #expect(conflicts.count == 1)
        #expect(conflicts.first?.local?.fields["title"] == "local")
        #expect(conflicts.first?.remote?.fields["title"] == "server")
        // Still waiting on the next run: nothing is dropped.
        #expect(try await replica.sync(SyncOptions(direction: .up)).conflicts.count == 1)

        try await replica.resolve(className: "Memo", id: "a", .keepLocal)
        #expect(try await replica.sync(SyncOptions(direction: .up)).conflicts.isEmpty)
        #expect(try await server.get(className: "Memo", id: "a").fields["title"] == "local")
        #expect(try await replica.syncStatus(className: "Memo", id: "a") == .synced)

        _ = try await server.update(className: "Memo", id: "a", .set(["title": "server2"]))
        _ = try await replica.update(className: "Memo", id: "a", .set(["title": "local2"]))
        _ = try await replica.sync(SyncOptions(direction: .up, merge: .overwrite))
        #expect(try await server.get(className: "Memo", id: "a").fields["title"] == "local2")
    }

    @Test("a conflict handler resolves during the sync: keep remote takes the server's record")
    func conflictHandler() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try localRemote(dir)
        _ = try await server.create(Record(className: "Memo", id: "a", fields: ["title": "base"]))
        let config = ReplicaConfiguration(classes: ["Memo": ReplicaPolicy(persistence: .localAndServer, lockForUpdate: true)])
        let replica = try await openReplica(dir.appendingPathComponent("r.replica").path, remote: server, configuration: config)
        _ = try await replica.sync()
        await replica.setConflictHandler { conflict in conflict.remote == nil ? .keepLocal : .keepRemote }
        _ = try await server.update(className: "Memo", id: "a", .set(["title": "server"]))
        _ = try await replica.update(className: "Memo", id: "a", .set(["title": "local"]))
        let report = try await replica.sync(SyncOptions(direction: .up))
        #expect(report.conflicts.isEmpty)
        #expect(try await replica.get(className: "Memo", id: "a").fields["title"] == "server")
        #expect(try await replica.syncStatus(className: "Memo", id: "a") == .synced)
    }

    @Test("a remote that fails is retried, then the outbox is kept and the run reports it unreachable")
    func unreachable() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let remote = ControlledRemote(try localRemote(dir))
        let replica = try await openReplica(dir.appendingPathComponent("r.replica").path, remote: remote)
        _ = try await replica.create(Record(className: "Memo", id: "a", fields: ["x": 1]))
        remote.plan = { _ in .before(MBaaSError(.unavailable, "503", httpStatus: 503)) }
        let report = try await replica.sync()
        guard case .unreachable = report.outcome else { Issue.record("outcome \(report.outcome)"); return }
        #expect(remote.calls.count == 3)
        #expect(remote.calls.first == "create")
        #expect(try await replica.status(probe: false).classes["Memo"]?.pending == 1)
        #expect(try await replica.status(probe: true).reachable == false)
        remote.plan = nil
        #expect(try await replica.sync().outcome == .complete)
        #expect(try await remote.base.count(Query("Memo")) == 1)
    }

    @Test("kill safety: a crash after the remote took a write but before the replica marked it neither loses nor duplicates it")
    func crashBetweenSendAndMark() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("r.replica").path
        let server = try localRemote(dir)
        let remote = ControlledRemote(server)
        let once = RetryPolicy(maxAttempts: 1)
        let first = try await openReplica(path, remote: remote, retry: once)
        _ = try await first.create(Record(className: "Memo", id: "a", fields: ["n": 1]))
        _ = try await first.sync()
        _ = try await first.create(Record(className: "Memo", id: "b", fields: ["n": 2]))
        _ = try await first.update(className: "Memo", id: "a", RecordUpdate(changes: ["n": .increment(5)]))
        // The remote processes each write, then the connection drops: the replica never hears back (as if killed).
        remote.plan = { name in name == "update" || name == "create" ? .after(MBaaSError(.transport, "connection reset")) : nil }
        let crashed = try await first.sync(SyncOptions(direction: .up))
        #expect(crashed.outcome != .complete)
        await first.close()
        // A new process: the create in flight is looked up (found, not sent again); the update is taken and lost again.
        remote.plan = { name in name == "update" ? .after(MBaaSError(.transport, "connection reset")) : nil }
        let second = try await openReplica(path, remote: remote, configuration: nil, retry: once)
        #expect(try await second.sync(SyncOptions(direction: .up)).outcome != .complete)
        await second.close()
        remote.plan = nil
        remote.resetCalls()
        let third = try await openReplica(path, remote: remote, configuration: nil)
        let report = try await third.sync(SyncOptions(direction: .up))
        #expect(report.outcome == .complete)
        #expect(!remote.calls.contains("update"))
        #expect(try await server.get(className: "Memo", id: "a").fields["n"] == 6)
        #expect(try await server.count(Query("Memo")) == 2)
        #expect(try await third.status(probe: false).classes["Memo"]?.pending == 0)
        #expect(try await third.syncStatus(className: "Memo", id: "a") == .synced)
    }

    @Test("encrypted fields: the file's bytes lack the plaintext; without the key the field is an error; queries on it are refused")
    func encryption() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("r.replica").path
        let server = try localRemote(dir)
        let config = ReplicaConfiguration(classes: ["Memo": ReplicaPolicy(persistence: .localAndServer, encryptedFields: ["secret"])])
        let cipher = try ReplicaCipher(base64: Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString())
        let replica = try await openReplica(path, remote: server, configuration: config, cipher: cipher)
        let plaintext = "PLAINTEXT-7f3a9c-SECRET"
        let memo = try await replica.create(Record(className: "Memo", fields: ["secret": .string(plaintext), "title": "visible-title-42"]))
        _ = try await replica.update(className: "Memo", id: memo.id!, .set(["secret": .string(plaintext + "-2")]))
        #expect(try await replica.get(className: "Memo", id: memo.id!).fields["secret"] == .string(plaintext + "-2"))
        await #expect(throws: MBaaSError.self) { _ = try await replica.queryPage(Query("Memo", predicate: Field("secret") == "x")) }
        await replica.close()
        var bytes = Data()
        for suffix in ["", "-wal"] { bytes += (try? Data(contentsOf: URL(fileURLWithPath: path + suffix))) ?? Data() }
        #expect(bytes.range(of: Data("visible-title-42".utf8)) != nil)
        #expect(bytes.range(of: Data(plaintext.utf8)) == nil)

        let withoutKey = try await openReplica(path, remote: try localRemote(dir), configuration: nil)
        let error = await #expect(throws: MBaaSError.self) {
            _ = try await withoutKey.get(className: "Memo", id: memo.id!)
        }
        #expect(error?.kind == .unauthorized)
        #expect(error?.message.contains("'secret'") == true)
        await withoutKey.close()
        let withKey = try await openReplica(path, remote: try localRemote(dir), configuration: nil, cipher: cipher)
        #expect(try await withKey.sync(SyncOptions(direction: .up)).outcome == .complete)
        #expect(try await withKey.remote.get(className: "Memo", id: memo.id!).fields["secret"] == .string(plaintext + "-2"))
    }

    @Test("offline, the replica acts as the last logged-in user")
    func offlineUser() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("r.replica").path
        let remote = ControlledRemote(try localRemote(dir))
        let replica = try await openReplica(path, remote: remote)
        let session = try await replica.signUp(username: "alice", password: "pw-123456")
        await replica.close()
        let remote2 = ControlledRemote(try localRemote(dir))
        let reopened = try await openReplica(path, remote: remote2)
        #expect(await reopened.session?.userId == session.userId)
        remote2.plan = { _ in .before(MBaaSError(.transport, "offline")) }
        let user = try await reopened.currentUser()
        #expect(user.id == session.userId)
        #expect(user.username == "alice")
    }

    @Test("auto refresh: a task that syncs repeatedly until cancelled, and stops cleanly")
    func autoRefresh() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try localRemote(dir)
        let replica = try await openReplica(dir.appendingPathComponent("r.replica").path, remote: server)
        let reports = Counter()
        _ = try await server.create(Record(className: "Memo", id: "s", fields: ["x": 1]))
        let task = replica.autoRefresh(every: 0.02) { result in if case .success = result { reports.increment() } }
        for _ in 0..<500 where reports.value < 3 { try await Task.sleep(nanoseconds: 10_000_000) }
        task.cancel()
        await task.value
        let stopped = reports.value
        #expect(stopped >= 3)
        #expect(try await replica.get(className: "Memo", id: "s").fields["x"] == 1)
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(reports.value == stopped)
    }

    @Test("replica: URLs open the replica and its stored remote through a registry")
    func factory() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("r.replica").path
        let remoteURL = "sqlite:" + dir.appendingPathComponent("remote.db").path
        let registry = BackendRegistry([LocalBackendFactory()])
        let created = try await ReplicaBackend.open(path: path, remote: try await registry.open(remoteURL), remoteURL: remoteURL,
                                                    configuration: memoConfiguration)
        _ = try await created.create(Record(className: "Memo", id: "a", fields: ["x": 1]))
        await created.close()
        let factory = ReplicaBackendFactory(registry: registry)
        let opened = try await BackendRegistry([factory]).open("replica:" + path)
        #expect(opened.adapterName == "replica")
        #expect(try await opened.get(className: "Memo", id: "a").fields["x"] == 1)
        await #expect(throws: MBaaSError.self) { _ = try await BackendRegistry([factory]).open("replica:" + dir.appendingPathComponent("none").path) }
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
