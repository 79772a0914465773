import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSTesting
import Testing
@testable import MBaaSSync

@Suite("Files of a replica: the upload queue")
struct ReplicaFilesTests {
    @Test("a file uploaded offline is kept in the replica, read offline, sent first on sync up, and records pointing at it rewritten")
    func offlineUpload() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("r.replica").path
        let server = try localRemote(dir)
        let remote = ControlledRemote(server)
        let offline: @Sendable (String) -> ControlledRemote.Failure? = { _ in .before(MBaaSError(.transport, "the network is down")) }
        remote.plan = offline
        let replica = try await openReplica(path, remote: remote)
        let bytes = Data("jpeg bytes, not on the server yet".utf8)
        // A name holding NUL is refused before it is queued (the queue would keep it cut at the NUL).
        await #expect { _ = try await replica.upload(FileUpload(name: "photo\u{0}.jpg", source: .data(bytes))) } throws: {
            ($0 as? MBaaSError)?.kind == .invalidRequest
        }
        let ref = try await replica.upload(FileUpload(name: "photo.jpg", source: .data(bytes), contentType: "image/jpeg"))
        #expect(ref.name.hasPrefix("replica-") && ref.name.hasSuffix("-photo.jpg"), "\(ref.name)")
        #expect(ref.size == Int64(bytes.count))
        #expect(try await replica.download(ref) == bytes)
        let memo = try await replica.create(Record(className: "Memo", fields: ["title": "with a photo", "photo": .file(ref)]))
        let draft = try await replica.upload(FileUpload(name: "draft.txt", source: .data(Data("dropped".utf8))))
        try await replica.deleteFile(draft)
        #expect((try? await replica.download(draft)) == nil, "a deleted queued file is gone")
        // The bytes are in the replica file itself (one transaction with the queue), not in a side folder.
        let main = try Data(contentsOf: URL(fileURLWithPath: path))
        let wal = (try? Data(contentsOf: URL(fileURLWithPath: path + "-wal"))) ?? Data()
        #expect(main.range(of: bytes) != nil || wal.range(of: bytes) != nil)

        // Still offline: nothing is lost, nothing reaches the server.
        let stopped = try await replica.sync(SyncOptions(direction: .up))
        #expect(stopped.outcome != .complete)
        #expect(try await server.listFiles(prefix: nil, limit: nil).isEmpty)
        #expect(try await server.count(Query("Memo")) == 0)

        remote.plan = nil
        remote.resetCalls()
        let report = try await replica.sync(SyncOptions(direction: .up))
        #expect(report.outcome == .complete)
        #expect(remote.calls.prefix(2) == ["upload", "create"], "\(remote.calls)")
        let files = try await server.listFiles(prefix: nil, limit: nil)
        #expect(files.count == 1, "only the kept file is sent: \(files)")
        guard case .file(let sent)? = try await server.get(className: "Memo", id: memo.id!).fields["photo"] else {
            Issue.record("the server's record has no file reference")
            return
        }
        #expect(sent.name != ref.name)
        #expect(try await server.download(sent) == bytes)
        // The replica's record points at the remote's file; the replica's own reference still downloads.
        guard case .file(let local)? = try await replica.get(className: "Memo", id: memo.id!).fields["photo"] else {
            Issue.record("the replica's record has no file reference")
            return
        }
        #expect(local.name == sent.name)
        #expect(try await replica.download(ref) == bytes)
        // A second sync sends nothing again.
        remote.resetCalls()
        _ = try await replica.sync(SyncOptions(direction: .up))
        #expect(!remote.calls.contains("upload"))
        #expect(try await server.listFiles(prefix: nil, limit: nil).count == 1)
    }

    @Test("an upload the remote takes is not queued")
    func onlineUpload() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try localRemote(dir)
        let replica = try await openReplica(dir.appendingPathComponent("r.replica").path, remote: server)
        let ref = try await replica.upload(FileUpload(name: "a.txt", source: .data(Data("online".utf8))))
        #expect(!ref.name.hasPrefix("replica-"))
        #expect(try await server.download(ref) == Data("online".utf8))
    }
}
