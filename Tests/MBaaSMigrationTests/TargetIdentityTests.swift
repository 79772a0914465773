import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSNCMB
import MBaaSTesting
import Testing
@testable import MBaaSMigration

/// The `files/index.ndjson` entry of a finished bundle that a record links to.
func bundleEntry(_ bundle: URL, linkedBy id: String) throws -> BundleFileEntry {
    let lines = try String(contentsOf: bundle.appendingPathComponent("files/index.ndjson"), encoding: .utf8).split(separator: "\n")
    for line in lines {
        let entry = try BundleFileEntry(json: JSON.parse(Data(line.utf8)))
        if entry.linkedBy.contains(where: { $0.id == id }) { return entry }
    }
    throw MBaaSError(.notFound, "no file linked by \(id)")
}

@Suite("Migration: the target the state belongs to")
struct TargetIdentityTests {
    @Test("a state whose target was removed starts over for the new one, says so, and ends verified; a resume into the same target still skips everything")
    func removedTargetStartsOver() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try NCMBExportBackend(directory: sampleExport)
        let first = try openLocal(scratch.path("memo.db"))
        let one = try await migrate(source, first, state: scratch.path("state"))
        #expect(one.ok && one.classes.first { $0.source == "MemoClass" }?.written == 12)
        await first.close()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(at: scratch.path("memo.db" + suffix)) }

        let second = try openLocal(scratch.path("memo.db"))
        let two = try await migrate(source, second, state: scratch.path("state"))
        let memo = try #require(two.classes.first { $0.source == "MemoClass" })
        #expect(memo.written == 12 && memo.skipped == 0 && memo.verified == 12 && memo.mismatched == 0, "\(two.mismatches)")
        #expect(two.users.written == 3 && two.files.written == one.files.written && two.files.written > 0, "\(two.users) \(two.files)")
        #expect(two.ok && two.mismatchCount == 0, "\(two.mismatches)")
        #expect(two.problems.contains { $0.contains("new or another one") && $0.contains(scratch.path("state").path) }, "\(two.problems)")
        #expect(try await second.count(Query("MemoClass")) == 12)

        // The same target again: a resume, nothing written, nothing said about starting over.
        let three = try await migrate(source, second, state: scratch.path("state"))
        #expect(three.classes.allSatisfy { $0.written == 0 && $0.skipped == $0.read } && three.ok)
        #expect(!three.problems.contains { $0.contains("new or another one") })
        await second.close()
    }

    @Test("a target holding some of what the state says was written is refused, naming the state folder and --restart; restart starts over")
    func partlyPresentTargetIsRefused() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try NCMBExportBackend(directory: sampleExport)
        let target = try openLocal(scratch.path("memo.db"))
        _ = try await migrate(source, target, state: scratch.path("state"))
        // The sample looks at the first mappings by class: the three Category records among them.
        for r in try await target.queryPage(Query("Category")).records { try await target.delete(className: "Category", id: r.id!, expectedVersion: nil) }
        let before = try await target.count(Query("MemoClass"))
        let error = await #expect(throws: MBaaSError.self) { try await migrate(source, target, state: scratch.path("state")) }
        #expect(error?.kind == .invalidRequest)
        #expect(error?.message.contains(scratch.path("state").path) == true && error?.message.contains("--restart") == true, "\(String(describing: error))")
        let (categories, memos) = (try await target.count(Query("Category")), try await target.count(Query("MemoClass")))
        #expect(categories == 0 && memos == before)

        let restarted = try await migrate(source, target, state: scratch.path("state"), options: MigrationOptions(restart: true))
        #expect(restarted.problems.contains { $0.contains("--restart") }, "\(restarted.problems)")
        let (categoriesNow, memosNow) = (try await target.count(Query("Category")), try await target.count(Query("MemoClass")))
        #expect(categoriesNow == 3 && memosNow == 12)
        #expect(restarted.ok, "\(restarted.mismatches)")
        await target.close()
    }

    @Test("none of the sampled records there, but their classes hold other records: refused, not started over (records hidden from the caller, or another store)")
    func absentRecordsInAnOccupiedClassAreRefused() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try NCMBExportBackend(directory: sampleExport)
        let target = try openLocal(scratch.path("memo.db"))
        _ = try await migrate(source, target, state: scratch.path("state"))
        for cls in ["Category", "MemoClass"] {
            for r in try await target.queryPage(Query(cls, limit: 1000)).records { try await target.delete(className: cls, id: r.id!, expectedVersion: nil) }
        }
        _ = try await target.create(Record(className: "Category", fields: ["name": "someone else's"]))
        let error = await #expect(throws: MBaaSError.self) { try await migrate(source, target, state: scratch.path("state")) }
        #expect(error?.kind == .invalidRequest)
        #expect(error?.message.contains("yet the target's classes hold records") == true && error?.message.contains("--restart") == true,
                "\(String(describing: error))")
        let (memos, categories) = (try await target.count(Query("MemoClass")), try await target.count(Query("Category")))
        #expect(memos == 0 && categories == 1)
        await target.close()
    }

    @Test("a bundle is written only into an empty or new folder: a folder with other data, or the source export itself, is refused untouched")
    func bundleNeverLandsOnOtherData() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let home = scratch.path("myhome")
        try FileManager.default.createDirectory(at: home.appendingPathComponent("records"), withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: home.appendingPathComponent("notes.txt"))
        try Data("mine".utf8).write(to: home.appendingPathComponent("records/mine.txt"))
        let before = try folderSnapshot(home)
        do {
            _ = try BundleBackend(directory: home)
            Issue.record("a bundle was opened for writing among other data")
        } catch {
            #expect(error.kind == .invalidRequest && error.message.contains("'notes.txt'") && error.message.contains("'records/mine.txt'"), "\(error)")
        }
        #expect(try folderSnapshot(home) == before)

        let export = try scratch.sampleExport()
        let exported = try folderSnapshot(export)
        #expect(throws: MBaaSError.self) { try BundleBackend(directory: export) }
        #expect(try folderSnapshot(export) == exported)
    }

    @Test("a bundle another run wrote is not written into by a state that did not write it; a removed bundle is started over")
    func foreignBundleIsRefused() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try NCMBExportBackend(directory: sampleExport)
        let bundle = scratch.path("bundle")
        _ = try await migrate(source, try BundleBackend(directory: bundle), state: scratch.path("s1"), options: MigrationOptions(mapping: .verbatim))
        let finished = try folderSnapshot(bundle)
        let error = await #expect(throws: MBaaSError.self) {
            try await migrate(source, try BundleBackend(directory: bundle), state: scratch.path("s2"), options: MigrationOptions(mapping: .verbatim))
        }
        #expect(error?.kind == .invalidRequest && error?.message.contains("already holds a finished bundle") == true, "\(String(describing: error))")
        #expect(try folderSnapshot(bundle) == finished)

        // The run that wrote it may run again (and verifies); removed, it is written afresh by the same state.
        let again = try await migrate(source, try BundleBackend(directory: bundle), state: scratch.path("s1"), options: MigrationOptions(mapping: .verbatim))
        #expect(again.ok && again.classes.allSatisfy { $0.written == 0 })
        try FileManager.default.removeItem(at: bundle)
        let afresh = try await migrate(source, try BundleBackend(directory: bundle), state: scratch.path("s1"), options: MigrationOptions(mapping: .verbatim))
        #expect(afresh.ok && afresh.classes.first { $0.source == "MemoClass" }?.written == 12, "\(afresh.mismatches)")
        try BundleManifest.read(bundle.appendingPathComponent("manifest.json")).check(directory: bundle)
    }

    @Test("a bundle whose blob is missing or damaged fails the files and the records that need them, each named; the rest is imported")
    func damagedBlobFailsItsRecords() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let bundle = scratch.path("bundle")
        _ = try await migrate(try NCMBExportBackend(directory: sampleExport), try BundleBackend(directory: bundle), state: scratch.path("s1"),
                              options: MigrationOptions(mapping: .verbatim))
        // The ramen picture's blob goes missing; another linked file's is cut short.
        let ramen = try bundleEntry(bundle, linkedBy: "KXBeNC7VSJ5zffgR")
        try FileManager.default.removeItem(at: bundle.appendingPathComponent("files/blobs/\(ramen.sha256!)"))
        let lines = try String(contentsOf: bundle.appendingPathComponent("files/index.ndjson"), encoding: .utf8).split(separator: "\n")
        let other = try #require(try lines.map { try BundleFileEntry(json: JSON.parse(Data($0.utf8))) }
            .first { $0.sha256 != ramen.sha256 && !$0.linkedBy.isEmpty && ($0.size ?? 0) > 1 })
        let cut = bundle.appendingPathComponent("files/blobs/\(other.sha256!)")
        try Data(try Data(contentsOf: cut).prefix(1)).write(to: cut)

        let target = try openLocal(scratch.path("copy.db"))
        let report = try await migrate(try BundleBackend(directory: bundle), target, state: scratch.path("s2"))
        #expect(!report.ok)
        #expect(report.files.failed >= 2, "\(report.files)")
        for (entry, why) in [(ramen, "missing"), (other, "bytes")] {
            for link in entry.linkedBy {
                #expect(report.mismatches.contains { $0.kind == "failed" && $0.sourceId == link.id && $0.detail.contains(entry.name) && $0.detail.contains(why) },
                        "\(link.id): \(report.mismatches)")
            }
        }
        // Records that need no damaged file are imported and verified.
        #expect(report.classes.first { $0.source == "Category" }.map { $0.written == 3 && $0.mismatched == 0 } == true)
        await target.close()
    }
}
