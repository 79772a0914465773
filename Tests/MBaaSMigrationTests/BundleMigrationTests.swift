import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSNCMB
import MBaaSTesting
import Testing
@testable import MBaaSMigration

/// Into and out of a bundle (`mbaas export`), resuming an export, its file index, damaged bundles.
@Suite("Migration: bundles")
struct BundleMigrationTests {
    @Test("into a bundle: a nameless user a killed export wrote is found by its source id, not written twice")
    func namelessUsersResumeIntoBundle() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = try scratch.sampleExport()
        try writeUsers(3, into: export, named: false)
        // The killed run: anon1 marked pending and written to users.ndjson, the bundle never finished.
        do {
            let state = try MigrationState(directory: scratch.path("state"))
            try state.addPending(.user, className: "_User", sourceIds: ["anon1"])
            let killed = try BundleBackend(directory: scratch.path("bundle"))
            _ = try await killed.importUser(DirectoryUser(id: "anon1", fields: ["sourceObjectId": "anon1"]), password: .unusable)
            #expect(try await killed.findUser(field: "sourceObjectId", equals: "anon1")?.id == "anon1")
            #expect(try await killed.findUser(field: "sourceObjectId", equals: "anon2") == nil)
        }
        let report = try await migrate(NCMBExportBackend(directory: export), try BundleBackend(directory: scratch.path("bundle")),
                                       state: scratch.path("state"), options: MigrationOptions(classes: ["Category"], files: false))
        #expect(report.users.failed == 0 && report.users.written == 2 && report.users.skipped == 1, "\(report.users)")
        let written = try await BundleBackend(directory: scratch.path("bundle")).listUsers(after: nil, limit: 100).users
        #expect(written.map(\.id).sorted() == ["anon0", "anon1", "anon2"])
    }

    @Test("into a bundle: a record a killed export wrote is found, and its pointers and ACL need no update the bundle cannot make")
    func resumedRecordsIntoBundle() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = try scratch.sampleExport()
        let source = try NCMBExportBackend(directory: export)
        let first = try #require(try await source.queryPage(Query("MemoClass", limit: 1)).records.first)
        #expect(first.acl != nil && first.fields.values.contains { if case .pointer = $0 { true } else { false } })
        // The killed run: the first memo marked in flight and written, the bundle never finished.
        do {
            let state = try MigrationState(directory: scratch.path("state"))
            try state.addPending(.record, className: "MemoClass", sourceIds: [first.id!])
            let killed = try BundleBackend(directory: scratch.path("bundle"))
            var written = first
            written.fields["sourceObjectId"] = .string(first.id!)
            _ = try await killed.create(written)
        }
        let report = try await migrate(source, try BundleBackend(directory: scratch.path("bundle")), state: scratch.path("state"),
                                       options: MigrationOptions(files: false))
        #expect(report.ok, "\(report.mismatches.prefix(3)) \(report.problems)")
        let memo = try #require(report.classes.first { $0.source == "MemoClass" })
        #expect(memo.failed == 0 && memo.verified == 12, "\(memo)")
        let bundle = try BundleBackend(directory: scratch.path("bundle"))
        #expect(try await bundle.count(Query("MemoClass")) == 12)
    }

    @Test("export to a bundle and import it elsewhere: the bundle is verified both ways and keeps ids, times and files")
    func bundleRoundTrip() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try NCMBExportBackend(directory: sampleExport)
        let bundle = try BundleBackend(directory: scratch.path("bundle"))
        let exported = try await migrate(source, bundle, state: scratch.path("state1"), options: MigrationOptions(mapping: .verbatim))
        #expect(exported.classes.first { $0.source == "MemoClass" }?.verified == 12)
        #expect(exported.files.mismatched == 0 && exported.files.verified >= 4)
        #expect(exported.users.verified == 3 && exported.roles.verified == 1 && exported.roles.mismatched == 0, "\(exported.users) \(exported.roles)")
        let manifest = try BundleManifest.read(scratch.path("bundle/manifest.json"))
        #expect(manifest.formatVersion == 1 && manifest.classes.map(\.name) == ["Category", "MemoClass", "_Installation"])
        #expect(manifest.classes.first { $0.name == "MemoClass" }?.count == 12 && manifest.users == 3 && manifest.roles == 1)
        try manifest.check(directory: scratch.path("bundle"))
        let index = try String(contentsOf: scratch.path("bundle/files/index.ndjson"), encoding: .utf8)
        #expect(index.contains("\"linkedBy\":[{\"class\":\"MemoClass\",\"field\":\"filename\",\"id\":\"KXBeNC7VSJ5zffgR\"}"))

        let reread = try BundleBackend(directory: scratch.path("bundle"))
        #expect(reread.isReadOnly)
        let target = try openLocal(scratch.path("copy.db"))
        let imported = try await migrate(reread, target, state: scratch.path("state2"))
        #expect(imported.classes.first { $0.source == "MemoClass" }.map { $0.written == 12 && $0.verified == 12 && $0.mismatched == 0 } == true,
                "\(imported.mismatches)")
        let memo = try await target.get(className: "MemoClass", id: "KXBeNC7VSJ5zffgR")
        #expect(memo["sourceObjectId"] == "KXBeNC7VSJ5zffgR" && memo["money"] == .int(900))
        #expect(try await target.download(try #require(memo["filename"]?.fileValue))
                    == (try Data(contentsOf: sampleExport.appendingPathComponent("files/ramen-2023_10_01.png"))))
        await target.close()
    }

    @Test("a bundle's file index: links merged per file in first-seen order and once each across a resumed export, placeholders without bytes, prefix and limit; its scratch database goes with the bundle")
    func bundleFileIndex() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let dir = scratch.path("bundle")
        let a = Data("photo a".utf8), b = Data("photo b".utf8), other = Data("another a".utf8)
        func records(_ range: Range<Int>) -> [BatchOperation] {
            range.map { i in
                var fields: [String: Value] = ["photo": .file(FileReference(name: "a.png")), "n": .int(Int64(i))]
                if i % 3 == 0 { fields["thumb"] = .file(FileReference(name: "b.png")) }
                if i == 7 { fields["lost"] = .file(FileReference(name: "missing.png")) }
                return .create(Record(className: "Memo", id: "r\(i)", fields: fields))
            }
        }
        var bundle: BundleBackend? = try BundleBackend(directory: dir)
        _ = try await bundle!.upload(FileUpload(name: "a.png", source: .data(a)))
        _ = try await bundle!.upload(FileUpload(name: "b.png", source: .data(b)))
        for start in stride(from: 0, to: 3_000, by: 500) {
            for case .failure(let e) in try await bundle!.batch(records(start..<start + 500)) { throw e }
        }
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("files/.index.sqlite").path))
        await bundle!.close()
        bundle = nil
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("files/.index.sqlite").path))
        // Resumed: the index is rebuilt from files/index.ndjson; records 2,990-2,999 are written again (their links
        // too), the same bytes under a known name add nothing, other bytes under it get a name of their own.
        let resumed = try BundleBackend(directory: dir)
        #expect(!resumed.isReadOnly)
        for case .failure(let e) in try await resumed.batch(records(2_990..<3_010)) { throw e }
        // A blob cut short (blobs are not synced: a power loss after the rename) is written again, not kept.
        let blobA = dir.appendingPathComponent("files/blobs/\(sha256Hex(a))")
        try Data().write(to: blobA)
        #expect(try await resumed.upload(FileUpload(name: "a.png", source: .data(a))).name == "a.png")
        #expect(try Data(contentsOf: blobA) == a)
        let renamed = try await resumed.upload(FileUpload(name: "a.png", source: .data(other))).name
        #expect(renamed.hasSuffix("-a.png") && renamed.count == 8 + 1 + 5)
        try await resumed.finish()
        await resumed.close()

        let lines = try String(contentsOf: dir.appendingPathComponent("files/index.ndjson"), encoding: .utf8).split(separator: "\n")
            .map { try BundleFileEntry(json: JSON.parse(Data($0.utf8))) }
        #expect(lines.map(\.name) == ["a.png", "b.png", "missing.png", renamed])
        #expect(lines[0].linkedBy.map(\.id) == (0..<3_010).map { "r\($0)" } && lines[0].linkedBy.allSatisfy { $0.field == "photo" })
        #expect(lines[1].linkedBy.map(\.id) == stride(from: 0, to: 3_010, by: 3).map { "r\($0)" })
        #expect(lines[2].sha256 == nil && lines[2].linkedBy.map(\.id) == ["r7"])
        #expect(lines[3].linkedBy.isEmpty && lines[0].size == Int64(a.count))
        #expect(try BundleManifest.read(dir.appendingPathComponent("manifest.json")).files == 3)

        let reader = try BundleBackend(directory: dir)
        #expect(reader.isReadOnly)
        #expect(try await reader.listFiles(prefix: nil, limit: nil).map(\.reference.name) == ["a.png", "b.png", renamed])
        #expect(try await reader.listFiles(prefix: "b", limit: nil).map(\.reference.name) == ["b.png"])
        #expect(try await reader.listFiles(prefix: nil, limit: 1).map(\.reference.name) == ["a.png"])
        #expect(try await reader.download(FileReference(name: renamed)) == other)
        let lost = await #expect(throws: MBaaSError.self) { try await reader.download(FileReference(name: "missing.png")) }
        #expect(lost?.kind == .notFound && lost?.message.contains("bytes are not in the bundle") == true)
        await reader.close()
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("files/.index.sqlite").path))

        // A line of the index that is not a file entry is named when the bundle opens.
        let unfinished = scratch.path("unfinished")
        let writer = try BundleBackend(directory: unfinished)
        _ = try await writer.upload(FileUpload(name: "a.png", source: .data(a)))
        await writer.close()
        let index = unfinished.appendingPathComponent("files/index.ndjson")
        try (String(contentsOf: index, encoding: .utf8) + "{\"size\":3}\n").write(to: index, atomically: true, encoding: .utf8)
        do {
            _ = try BundleBackend(directory: unfinished)
            Issue.record("an index line without a name was accepted")
        } catch {
            #expect(error.kind == .decoding && error.message.hasPrefix("files/index.ndjson line 2:"), "\(error)")
        }
    }

    @Test("a damaged bundle is refused before import")
    func damagedBundle() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let local = try openLocal(scratch.path("a.db"))
        _ = try await local.create(Record(className: "Memo", fields: ["title": "a"]))
        _ = try await migrate(local, try BundleBackend(directory: scratch.path("bundle")), state: scratch.path("s"), options: MigrationOptions(mapping: .verbatim))
        let file = scratch.path("bundle/records/Memo.ndjson")
        try (String(contentsOf: file, encoding: .utf8).replacingOccurrences(of: "\"a\"", with: "\"b\"")).write(to: file, atomically: true, encoding: .utf8)
        #expect(throws: MBaaSError.self) { try BundleManifest.read(scratch.path("bundle/manifest.json")).check(directory: scratch.path("bundle")) }
        // Opening it as a source (what `mbaas import` does) refuses it, naming the file.
        do {
            _ = try BundleBackend(directory: scratch.path("bundle"))
            Issue.record("a damaged bundle opened")
        } catch {
            #expect(error.kind == .decoding && error.message.contains("records/Memo.ndjson"))
        }
        await local.close()
    }
}
