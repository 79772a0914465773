import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSTesting
import Testing
@testable import MBaaSSync

@Suite("A replica's configuration against its remote: field types and refreshScope")
struct ReplicaRemoteCheckTests {
    @Test("a declared field type the remote cannot hold is refused before the replica file is written, naming class, field and type")
    func fieldTypeRefused() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("memo.replica").path
        let remote = ControlledRemote(try localRemote(dir))
        remote.withoutFeatures = [.valueType("Bytes")]
        let config = ReplicaConfiguration(classes: ["Memo": ReplicaPolicy(fields: ["title": "string", "blob": "Bytes"])])
        let error = await expectError(.invalidRequest) { try await openReplica(path, remote: remote, configuration: config) }
        #expect(error?.message.contains("class 'Memo': field 'blob' is declared Bytes, which the remote (controlled) cannot hold") == true,
                "\(String(describing: error))")
        #expect(!FileManager.default.fileExists(atPath: path))
        // The same configuration on a remote that holds bytes is taken; a localOnly class is not checked at all.
        remote.withoutFeatures = []
        let replica = try await openReplica(path, remote: remote, configuration: config)
        await replica.close()
        remote.withoutFeatures = [.valueType("Bytes")]
        let local = ReplicaConfiguration(classes: ["Memo": ReplicaPolicy(persistence: .localOnly, fields: ["blob": "Bytes"])])
        let other = try await openReplica(dir.appendingPathComponent("local.replica").path, remote: remote, configuration: local)
        await other.close()
    }

    @Test("a write of another type to a declared field is refused on the device and nothing is queued")
    func declaredTypeEnforced() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = ReplicaConfiguration(classes: ["Memo": ReplicaPolicy(fields: ["n": "int", "x": "double"])])
        let replica = try await openReplica(dir.appendingPathComponent("r.replica").path, remote: try localRemote(dir), configuration: config)
        let error = await expectError(.invalidRequest) { try await replica.create(Record(className: "Memo", fields: ["n": "seven"])) }
        #expect(error?.message == "Memo.n: declared int in the replica's configuration, got string")
        let memo = try await replica.create(Record(className: "Memo", fields: ["n": 7, "x": 2]))
        await expectError(.invalidRequest) { try await replica.update(className: "Memo", id: memo.id!, .set(["x": "2.5"])) }
        #expect(try await replica.get(className: "Memo", id: memo.id!).fields["x"] == 2)
        #expect(try await replica.status(probe: false).classes["Memo"]?.pending == 1)
    }

    @Test("refreshScope user or group on a remote without per-record ACLs is refused at init, not ignored")
    func scopeRefused() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("memo.replica").path
        let remote = ControlledRemote(try localRemote(dir))
        remote.withoutFeatures = [.acl]
        for scope in [ReplicaPolicy.RefreshScope.user, .group] {
            let config = ReplicaConfiguration(classes: ["Memo": ReplicaPolicy(refreshScope: scope)])
            let error = await expectError(.invalidRequest) { try await openReplica(path, remote: remote, configuration: config) }
            #expect(error?.message.contains("class 'Memo': refreshScope \(scope.rawValue) selects records by their ACLs") == true,
                    "\(String(describing: error))")
            #expect(!FileManager.default.fileExists(atPath: path))
        }
        let all = try await openReplica(path, remote: remote, configuration: ReplicaConfiguration(classes: ["Memo": ReplicaPolicy(refreshScope: .all)]))
        await all.close()
    }

    @Test("refreshScope: user mirrors the records the user may write by name, group adds a role's, all every readable one; leaving the scope is a ghost")
    func scopeFilters() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try localRemote(dir)
        let bob = try await server.signUp(username: "bob", password: "bob-password-1", email: nil, fields: [:])
        let alice = try await server.signUp(username: "alice", password: "alice-password-1", email: nil, fields: [:])
        // Signed up last: the remote's session is alice's. Alice is in no role: a role grant is not hers.
        let own = try await server.create(Record(className: "Memo", acl: ACL([.user(alice.userId): .readWrite]), fields: ["title": "own"]))
        _ = try await server.create(Record(className: "Memo", acl: ACL([.user(alice.userId): .read, .user(bob.userId): .readWrite]),
                                           fields: ["title": "shared"]))
        // Written by a logged-in user, a record without an ACL gets its owner's on the Local remote: make it public.
        _ = try await server.create(Record(className: "Memo", acl: .publicReadWrite, fields: ["title": "public"]))
        _ = try await server.create(Record(className: "Memo", acl: ACL([.everyone: .read, .role("Team"): .readWrite]), fields: ["title": "team"]))

        func mirrored(_ scope: ReplicaPolicy.RefreshScope) async throws -> (titles: [String], replica: ReplicaBackend) {
            let config = ReplicaConfiguration(classes: ["Memo": ReplicaPolicy(refreshScope: scope)])
            let replica = try await openReplica(dir.appendingPathComponent("\(scope.rawValue).replica").path, remote: server, configuration: config)
            let report = try await replica.sync(SyncOptions(direction: .down))
            #expect(report.outcome == .complete)
            let titles = try await contents(replica).values.compactMap { $0["title"]?.stringValue }.sorted()
            #expect(report.classes["Memo"]?.down == titles.count)
            return (titles, replica)
        }
        let (userTitles, replica) = try await mirrored(.user)
        #expect(userTitles == ["own"])
        #expect(try await mirrored(.group).titles == ["own"])
        #expect(try await mirrored(.all).titles == ["own", "public", "shared", "team"])

        // Taken out of alice's scope on the server (now bob's): the next ghost scan removes the copy.
        _ = try await server.update(className: "Memo", id: own.id!, RecordUpdate(changes: [:], acl: ACL([.user(alice.userId): .read, .user(bob.userId): .readWrite])))
        let report = try await replica.sync(SyncOptions(direction: .down, ghostScan: true))
        #expect(report.classes["Memo"]?.ghostsRemoved == 1)
        #expect(try await replica.count(Query("Memo")) == 0)

        // Nobody logged in: a scoped sync down stops with the session refused, naming the fix.
        try await server.logOut(confirmWithServer: false)
        let stopped = try await replica.sync(SyncOptions(direction: .down))
        guard case .sessionRefused(let message) = stopped.outcome else { Issue.record("\(stopped.outcome)"); return }
        #expect(message.contains("log in through the replica first"))
    }
}
