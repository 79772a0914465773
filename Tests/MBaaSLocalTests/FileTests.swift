import Foundation
import MBaaSCore
import MBaaSTesting
import MBaaSLocal
import Testing

@Suite("Local files")
struct FileTests {
    private func storedFiles(_ dir: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).sorted()
    }

    @Test func uploadDownloadListDelete() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let b = try fileBackend(dir.appendingPathComponent("f.db").path)
        let bytes = Data((0..<700_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let progress = Collector<TransferProgress>()
        let ref = try await b.upload(FileUpload(name: "写真 #1.bin", source: .data(bytes), progress: { progress.append($0) }))
        #expect(ref.name == "写真 #1.bin" && ref.size == 700_000 && ref.contentType == "application/octet-stream")
        #expect(progress.all.count == 3)                                         // 256 KiB chunks
        #expect(progress.all.last == TransferProgress(completedBytes: 700_000, totalBytes: 700_000))
        #expect(try await b.download(ref) == bytes)

        let source = dir.appendingPathComponent("note.txt")
        try Data("hello".utf8).write(to: source)
        let fromURL = try await b.upload(FileUpload(name: "docs/note.txt", source: .url(source)))
        #expect(fromURL.contentType == "text/plain" && fromURL.size == 5)
        _ = try await b.upload(Data(), name: "docs/empty")
        #expect(try await b.download(name: "docs/empty") == Data())

        let all = try await b.listFiles(prefix: nil, limit: nil)
        #expect(all.map(\.reference.name) == ["写真 #1.bin", "docs/note.txt", "docs/empty"])
        #expect(try await b.listFiles(prefix: "docs/", limit: nil).count == 2)
        #expect(try await b.listFiles(prefix: "docs/", limit: 1).map(\.reference.name) == ["docs/note.txt"])
        #expect(try await b.listFiles(prefix: "%", limit: nil).isEmpty)

        await expectError(.duplicate) { try await b.upload(Data("x".utf8), name: "docs/note.txt") }
        #expect(try await b.download(name: "docs/note.txt") == Data("hello".utf8))

        try await b.deleteFile(fromURL)
        await expectError(.notFound) { try await b.download(fromURL) }
        await expectError(.notFound) { try await b.deleteFile(fromURL) }
        #expect(storedFiles(dir.appendingPathComponent("f.db-files")).count == 2)
        await b.close()
    }

    @Test func attachmentsFollowTheirRecord() async throws {
        let b = try memoryBackend()
        let memo = try await b.create(Record(className: "Memo", fields: ["title": "with photo"]))
        let target = FileAttachment(className: "Memo", objectId: memo.id!, field: "photo")
        let ref = try await b.upload(FileUpload(name: "a.png", source: .data(Data([1, 2, 3])), attachment: target))
        #expect(ref.attachment == target && ref.name == "Memo/\(memo.id!)/photo/a.png" && ref.contentType == "image/png")
        let withPhoto = try await b.get(className: "Memo", id: memo.id!)
        #expect(withPhoto["photo"] == .file(ref) && withPhoto.version == "2")
        #expect(try await b.download(withPhoto["photo"]!.fileValue!) == Data([1, 2, 3]))

        // A new upload to the same field replaces (and deletes) the old file.
        let ref2 = try await b.upload(FileUpload(name: "b.png", source: .data(Data([4])), attachment: target))
        #expect(try await b.get(className: "Memo", id: memo.id!)["photo"] == .file(ref2))
        await expectError(.notFound) { try await b.download(ref) }

        try await b.deleteFile(ref2)
        let cleared = try await b.get(className: "Memo", id: memo.id!)
        #expect(cleared["photo"] == nil && cleared.version == "4")

        // Deleting the record deletes its files; attaching to a missing record stores nothing.
        let ref3 = try await b.upload(FileUpload(name: "c.png", source: .data(Data([5])), attachment: target))
        try await b.delete(className: "Memo", id: memo.id!)
        await expectError(.notFound) { try await b.download(ref3) }
        await expectError(.notFound) {
            try await b.upload(FileUpload(name: "d.png", source: .data(Data([6])), attachment: target))
        }
        #expect(try await b.listFiles(prefix: nil, limit: nil).isEmpty)
        await b.close()
    }

    @Test func attachingNeedsWriteAccess() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("acl.db").path
        let owner = try fileBackend(path), other = try fileBackend(path)
        let s = try await owner.signUp(username: "o", password: "p")
        let memo = try await owner.create(Record(className: "Memo", acl: .publicRead(owner: s.userId)))
        await expectError(.forbidden) {
            try await other.upload(FileUpload(name: "x", source: .data(Data([1])),
                                              attachment: FileAttachment(className: "Memo", objectId: memo.id!, field: "f")))
        }
        #expect(storedFiles(dir.appendingPathComponent("acl.db-files")).isEmpty)
    }

    @Test func cancelledUploadLeavesNothing() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let b = try fileBackend(dir.appendingPathComponent("c.db").path)
        let calls = Collector<Int64>()
        let task = Task {
            try await b.upload(FileUpload(name: "big.bin", source: .data(Data(count: 4 * 1024 * 1024)), progress: { p in
                calls.append(p.completedBytes)
                // Cancel the uploading task itself after the first chunk.
                withUnsafeCurrentTask { $0?.cancel() }
            }))
        }
        let result = await task.result
        guard case .failure(let error as MBaaSError) = result else { Issue.record("expected a cancellation, got \(result)"); return }
        #expect(error.kind == .transport && error.message.contains("cancelled"))
        #expect(calls.all == [256 * 1024])
        #expect(try await b.listFiles(prefix: nil, limit: nil).isEmpty)
        #expect(storedFiles(dir.appendingPathComponent("c.db-files")).isEmpty)
        await expectError(.notFound) { try await b.download(name: "big.bin") }
    }

    /// An in-memory backend's file directory goes away with the backend, closed or not (tests and servers that
    /// drop their stores were leaving empty `mbaas-local-memory-*` directories in the temporary directory).
    @Test func inMemoryFilesLeaveNothingBehind() async throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("mbaas-memory-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: base) }
        func entries() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: base.path) }
        do {
            let backend = try LocalBackend.inMemory(context: BackendContext(dataDirectory: base))
            let view = backend.sharing(session: nil, administrative: true)
            _ = try await view.upload(FileUpload(name: "a.txt", source: .data(Data("a".utf8)), acl: .publicReadWrite))
            #expect(try entries().count == 1)
            _ = backend
        }
        #expect(try entries().isEmpty)
        let closed = try LocalBackend.inMemory(context: BackendContext(dataDirectory: base))
        _ = try await closed.sharing(session: nil, administrative: true)
            .upload(FileUpload(name: "b.txt", source: .data(Data("b".utf8)), acl: .publicReadWrite))
        await closed.close()
        #expect(try entries().isEmpty)
    }
}
