import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSNCMB
import MBaaSTesting
import Testing
@testable import MBaaSMigration

/// Whole runs: what moves, running again, dry runs, retries, mapping, faults, resuming after a crash.
@Suite("Migration")
struct MigrationTests {
    @Test("the NCMB sample export moves into the embedded store with ids, pointers, ACLs, users, roles and files")
    func ncmbExportToLocal() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try NCMBExportBackend(directory: sampleExport)
        let target = try openLocal(scratch.path("memo.db"))
        let report = try await migrate(source, target, state: scratch.path("state"))

        let memo = try #require(report.classes.first { $0.source == "MemoClass" })
        #expect(memo.read == 12 && memo.written == 12 && memo.failed == 0 && memo.verified == 12 && memo.mismatched == 0)
        #expect(report.classes.first { $0.source == "Category" }?.written == 3)
        #expect(report.classes.first { $0.source == "_Installation" }?.written == 2)
        #expect(report.users.written == 3 && report.userOutcomes.allSatisfy { $0.password == "reset" })
        #expect(report.roles.written == 1)
        // The sample's two deliberate defects are reported as warnings (the target holds what the source held); the
        // verification finds no difference.
        #expect(report.mismatches.isEmpty, "\(report.mismatches)")
        #expect(Set(report.warnings.map(\.kind)) == ["pointer", "sourceFile"], "\(report.warnings)")
        #expect(report.warnings.contains { $0.kind == "pointer" && $0.sourceId == "X1HW7F8PcfzZay9B" })
        #expect(report.warnings.contains { $0.kind == "sourceFile" && $0.sourceId == "MNM0ZRAMK6fXIkl6" })
        #expect(report.problems.contains { $0.contains("MemoClass.likes") })
        #expect(report.ok)

        // Ids are kept (the store accepts them); source metadata is kept in fields.
        let ramen = try await target.get(className: "MemoClass", id: "KXBeNC7VSJ5zffgR")
        #expect(ramen["title"] == "Ramen Jiro" && ramen["money"] == .int(900))
        #expect(ramen["sourceObjectId"] == "KXBeNC7VSJ5zffgR")
        #expect(ramen["sourceCreatedAt"] == .date(ISO8601.parse("2023-10-01T03:12:45.120Z")!))
        #expect(ramen["author"] == .pointer(Pointer(className: "_User", objectId: "gbeUrX7bd75kT5PX")))
        #expect(ramen["category"] == .pointer(Pointer(className: "Category", objectId: "M8qVv0jLxxF13OVQ")))
        // The NCMB file name became a file attached to the record, with the same bytes.
        let file = try #require(ramen["filename"]?.fileValue)
        let bytes = try await target.download(file)
        #expect(bytes == (try Data(contentsOf: sampleExport.appendingPathComponent("files/ramen-2023_10_01.png"))))
        // The record whose file is missing keeps the name it had.
        #expect(try await target.get(className: "MemoClass", id: "MNM0ZRAMK6fXIkl6")["filename"] == "dinner_2023-12-24.png")
        // A pointer to a record that was not migrated is kept, not dropped.
        #expect(try await target.get(className: "MemoClass", id: "X1HW7F8PcfzZay9B")["category"]
                    == .pointer(Pointer(className: "Category", objectId: "x9rZYaW0mKzvZ9M0")))
        // ACLs keep their user principals (users kept their ids) and roles.
        let latte = try await target.get(className: "MemoClass", id: "IoTdx5XvSxzpLihK")
        #expect(latte.acl == ACL([.user("gbeUrX7bd75kT5PX"): .readWrite, .role("Admins"): .read]))
        // Users: imported without a usable password, with their source ids; the role has its member.
        let taro = try #require(try await target.findUser(username: "taro_yamada"))
        #expect(taro.id == "gbeUrX7bd75kT5PX" && taro.roles == ["Admins"] && taro.fields["sourceObjectId"] == "gbeUrX7bd75kT5PX")
        #expect(taro.email == "taro@example.com" && taro.emailVerified == true)
        await #expect(throws: MBaaSError.self) { try await target.logIn(username: "taro_yamada", password: "anything") }
        // The orphan file went to the file store.
        let stored = try await target.listFiles(prefix: "receipt", limit: nil)
        #expect(stored.map(\.reference.name) == ["receipt_old-scan.png"])
        await target.close()
    }

    @Test("running again changes nothing and creates no duplicate")
    func rerunIsIdempotent() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try NCMBExportBackend(directory: sampleExport)
        let target = try openLocal(scratch.path("memo.db"))
        _ = try await migrate(source, target, state: scratch.path("state"))
        let files = try await target.listFiles(prefix: nil, limit: nil).map(\.reference.name)
        #expect(files.count == 5)   // the shared image attached to both its records, two more linked files, the orphan
        let second = try await migrate(source, target, state: scratch.path("state"))
        #expect(second.classes.allSatisfy { $0.written == 0 && $0.skipped == $0.read })
        #expect(second.users.written == 0 && second.users.skipped == 3 && second.roles.skipped == 1)
        #expect(second.files.written == 0)
        #expect(try await target.count(Query("MemoClass")) == 12)
        #expect(try await target.listFiles(prefix: nil, limit: nil).map(\.reference.name) == files)
        await target.close()
    }

    @Test("running again says again what the first run warned of about the records it wrote, once, marked as an earlier run's")
    func rerunSaysEarlierWarnings() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try NCMBExportBackend(directory: sampleExport)
        let target = try openLocal(scratch.path("memo.db"))
        let first = try await migrate(source, target, state: scratch.path("state"))
        let missingFile = { (r: MigrationReport) in r.warnings.filter { $0.kind == "sourceFile" && $0.sourceId == "MNM0ZRAMK6fXIkl6" } }
        #expect(missingFile(first).count == 1 && !(missingFile(first).first?.detail.hasSuffix("(from an earlier run)") ?? true))
        for _ in 0..<2 {
            // The record is skipped (already there), yet the report still names its missing file, once.
            let again = try await migrate(source, target, state: scratch.path("state"))
            #expect(again.classes.allSatisfy { $0.written == 0 })
            let said = missingFile(again)
            #expect(said.count == 1, "\(again.warnings)")
            #expect(said.first?.detail == (missingFile(first).first?.detail ?? "") + " (from an earlier run)")
            // The pointer left dangling is looked at again by every run: said once, as this run's.
            let pointers = again.warnings.filter { $0.kind == "pointer" }
            #expect(pointers.count == 1 && !(pointers.first?.detail.hasSuffix("(from an earlier run)") ?? true), "\(pointers)")
            #expect(again.warningCount == first.warningCount, "\(again.warnings) vs \(first.warnings)")
            #expect(again.ok)
        }
        // Starting over (into a new target) writes everything again: the warning is this run's own, not doubled.
        let fresh = try openLocal(scratch.path("memo2.db"))
        let restarted = try await migrate(source, fresh, state: scratch.path("state"), options: MigrationOptions(restart: true))
        await fresh.close()
        #expect(missingFile(restarted).count == 1 && !(missingFile(restarted).first?.detail.hasSuffix("(from an earlier run)") ?? true),
                "\(restarted.warnings)")
        await target.close()
    }

    @Test("verifying again counts afresh; a record the target holds twice and a user not migrated count as mismatched")
    func verifyCountsAfresh() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try NCMBExportBackend(directory: sampleExport)
        let target = try openLocal(scratch.path("memo.db"))
        do {
            let migration = Migration(source: source, target: target, state: try MigrationState(directory: scratch.path("state")))
            let first = try await migration.run()
            #expect(first.ok && first.users.verified == 3, "\(first.mismatches)")
            let category = try #require(first.classes.first { $0.source == "Category" })
            #expect(category.verified == 3 && category.mismatched == 0)
            // A second copy of a category on the target.
            let one = try #require(try await target.queryPage(Query("Category", limit: 1)).records.first)
            _ = try await target.create(Record(className: "Category", fields: one.fields))
            let again = try await migration.verify()
            let counted = try #require(again.classes.first { $0.source == "Category" })
            #expect(counted.mismatched == 1 && counted.verified <= 3, "\(counted)")
            #expect(again.classes.first { $0.source == "MemoClass" }?.verified == 12)
            #expect(again.users.verified == 3 && again.users.mismatched == 0, "\(again.users)")
            #expect(!again.ok)
        }
        // A user the state no longer maps.
        let state = try MigrationState(directory: scratch.path("state"))
        try state.executeBehindItsBack("DELETE FROM idmap WHERE kind = 'user' AND source_id = (SELECT min(source_id) FROM idmap WHERE kind = 'user')")
        let report = try await Migration(source: source, target: target, state: state).verify()
        #expect(report.users.verified == 2 && report.users.mismatched == 1, "\(report.users)")
        await target.close()
    }

    @Test("into a file store with unique names: batches linking the same file share one upload; a file a killed run uploaded is adopted, not uploaded again")
    func linkedFilesOnce() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try NCMBExportBackend(directory: sampleExport)
        // One record per batch, four at a time, slow uploads: the two memos sharing an image are copied together.
        let options = MigrationOptions(batchSize: 1, concurrency: 4)
        let local = try openLocal(scratch.path("t1.db"))
        let store = FaultyBackend(local, seed: 0, rate: 0, plainFileStore: true, uploadDelay: .milliseconds(200))
        var report = try await migrate(source, store, state: scratch.path("s1"), options: options)
        #expect(report.ok && report.files.failed == 0, "\(report.mismatches.prefix(3)) \(report.problems)")
        // Asked for once: the second batch waited for the first's copy (a second upload would be refused as a
        // duplicate here, and then adopted, which hides it from the uploads that succeeded).
        #expect(store.uploadAttempts.count { $0 == "ramen-2023_10_01.png" } == 1, "\(store.uploadAttempts)")
        #expect(Set(store.uploadAttempts).count == store.uploadAttempts.count)

        // The killed run: the image uploaded under its mark, the run gone before recording it.
        let image = try Data(contentsOf: sampleExport.appendingPathComponent("files/ramen-2023_10_01.png"))
        let other = try openLocal(scratch.path("t2.db"))
        do {
            let state = try MigrationState(directory: scratch.path("s2"))
            try state.addPending(.file, className: Migration.linkedFiles, sourceIds: ["ramen-2023_10_01.png"])
            _ = try await other.upload(FileUpload(name: "ramen-2023_10_01.png", source: .data(image), contentType: "image/png"))
        }
        let resumed = FaultyBackend(other, seed: 0, rate: 0, plainFileStore: true)
        report = try await migrate(source, resumed, state: scratch.path("s2"), options: options)
        #expect(report.ok && report.files.failed == 0 && report.files.skipped >= 1, "\(report.files) \(report.mismatches.prefix(3))")
        #expect(!resumed.uploadAttempts.contains("ramen-2023_10_01.png"), "\(resumed.uploadAttempts)")
        #expect(try await other.listFiles(prefix: "ramen", limit: nil).count == 1)
        #expect(try MigrationState(directory: scratch.path("s2")).pending(.file, className: Migration.linkedFiles).isEmpty)
        await local.close()
        await other.close()
    }

    @Test("the files one batch links, and files no record links to, are copied side by side, each once; every record linking a file the source lacks is named")
    func batchFilesSideBySide() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("source.db"))
        for name in ["a.png", "b.png", "c.png"] { _ = try await source.upload(FileUpload(name: name, source: .data(Data(name.utf8)))) }
        let links = ["a.png", "b.png", "gone.png", "c.png", "gone.png", "a.png"]
        for (i, name) in links.enumerated() {
            _ = try await source.create(Record(className: "Memo", id: "m\(i)", fields: ["photo": .file(FileReference(name: name))]))
        }
        let inner = try openLocal(scratch.path("target.db"))
        let target = FaultyBackend(inner, seed: 0, rate: 0, plainFileStore: true, uploadDelay: .milliseconds(100))
        // One batch of six records: its three files are copied together, not one after another.
        let report = try await migrate(source, target, state: scratch.path("state"), options: MigrationOptions(batchSize: 100, concurrency: 4))
        #expect(report.classes.first { $0.source == "Memo" }?.written == 6, "\(report.classes)")
        #expect(target.uploadAttempts.sorted() == ["a.png", "b.png", "c.png"], "\(target.uploadAttempts)")
        #expect(target.maxUploadsInFlight >= 2, "uploads ran one at a time")
        let missing = report.warnings.filter { $0.kind == "sourceFile" }.compactMap(\.sourceId).sorted()
        #expect(missing == ["m2", "m4"], "\(report.warnings)")
        var bySource: [String: Record] = [:]   // the target made its own ids (no client ids here)
        for try await r in inner.records(matching: Query("Memo")) { bySource[r["sourceObjectId"]?.stringValue ?? "?"] = r }
        #expect(try await inner.download(try #require(bySource["m5"]?["photo"]?.fileValue)) == Data("a.png".utf8))
        #expect(bySource["m2"]?["photo"]?.fileValue?.name == "gone.png")

        // Files no record links to are copied (and verified) side by side too.
        let loose = try openLocal(scratch.path("loose.db"))
        for name in ["d.png", "e.png", "f.png"] { _ = try await loose.upload(FileUpload(name: name, source: .data(Data(name.utf8)))) }
        let other = try openLocal(scratch.path("other.db"))
        let store = FaultyBackend(other, seed: 0, rate: 0, plainFileStore: true, uploadDelay: .milliseconds(100))
        let files = try await migrate(loose, store, state: scratch.path("state2"), options: MigrationOptions(concurrency: 4)).files
        #expect(files.written == 3 && files.verified == 3 && files.failed == 0, "\(files)")
        #expect(store.uploadAttempts.sorted() == ["d.png", "e.png", "f.png"] && store.maxUploadsInFlight >= 2, "\(store.uploadAttempts)")
        await source.close()
        await inner.close()
        await loose.close()
        await other.close()
    }

    @Test("retries wait as the core retry policy says: Retry-After up to its cap, else backoff doubling from its base")
    func retryDelays() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let local = try openLocal(scratch.path("t.db"))
        let policy = RetryPolicy(maxAttempts: 3, baseDelay: 0.5, maxDelay: 1.5, maxRetryAfter: 20, random: { 0.5 })
        let migration = Migration(source: local, target: local, options: MigrationOptions(retry: policy), state: nil)
        #expect(migration.options.maxAttempts == 3)
        #expect(MigrationOptions(maxAttempts: 5, retry: policy).maxAttempts == 5)
        #expect(MigrationOptions().retry.maxRetryAfter == 60 && MigrationOptions().maxAttempts == 8)
        #expect(migration.retryDelay(attempt: 1, error: MBaaSError(.rateLimited, "slow down", retryAfter: 90)) == 20)
        #expect(migration.retryDelay(attempt: 1, error: MBaaSError(.rateLimited, "slow down", retryAfter: 3)) == 3)
        #expect(migration.retryDelay(attempt: 1, error: MBaaSError(.unavailable, "503")) == 0.25)
        #expect(migration.retryDelay(attempt: 2, error: nil) == 0.5)
        #expect(migration.retryDelay(attempt: 4, error: nil) == 0.75)   // 0.5 × 2³ capped at 1.5, times the jitter 0.5
    }

    @Test("a dry run plans and writes nothing anywhere")
    func dryRun() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try NCMBExportBackend(directory: sampleExport)
        let target = try openLocal(scratch.path("memo.db"))
        let report = try await Migration(source: source, target: target, options: MigrationOptions(dryRun: true), state: nil).run()
        let plan = try #require(report.plan)
        #expect(plan.classes.map(\.source) == ["Category", "MemoClass", "_Installation"])
        #expect(plan.classes.first { $0.source == "MemoClass" }?.count == 12)
        #expect(plan.classes.first { $0.source == "MemoClass" }?.fieldTypes["money"] == ["int", "double", "string"])
        #expect(plan.users == 3 && plan.roles == 1 && plan.files == 4)
        #expect(try await target.listClasses().isEmpty)
        #expect(try await target.listUsers(after: nil, limit: 10).users.isEmpty)
        #expect(report.classes.isEmpty)
        // The embedded store lets a field hold several types: nothing to say about money's.
        #expect(!plan.unsupported.contains { $0.contains("MemoClass.money") }, "\(plan.unsupported)")
        // A store that keeps one type per field is warned, naming the field and the types (numbers are one type).
        let typed = FaultyBackend(target, seed: 0, rate: 0, without: [.mixedFieldTypes])
        let typedPlan = try #require(try await Migration(source: source, target: typed, options: MigrationOptions(dryRun: true), state: nil).run().plan)
        let notes = typedPlan.unsupported.filter { $0.contains("keeps one type per field") }
        #expect(notes.count == 1 && notes[0].hasPrefix("MemoClass.money holds number and string values (among the first 12 records)"), "\(notes)")
        // What the target would refuse is found before anything is written (its preflight, on the sample).
        #expect(!plan.unsupported.contains { $0.contains("would refuse") }, "\(plan.unsupported)")
        var mapping = MigrationMapping()
        mapping.classes["MemoClass"] = .init(rename: "Memo-Class")
        let refused = try #require(try await Migration(source: source, target: typed, options: MigrationOptions(mapping: mapping, dryRun: true),
                                                       state: nil).run().plan)
        #expect(refused.unsupported.contains { $0.hasPrefix("MemoClass: local would refuse its records as they are: invalid class name 'Memo-Class'") },
                "\(refused.unsupported)")
        #expect(try await target.listClasses().isEmpty)
        await target.close()
    }

    @Test("the mapping renames classes and fields, drops fields and turns file names into files")
    func mapping() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let mapping = try MigrationMapping(json: JSON.parse("""
            {"classes":{"MemoClass":{"rename":"Memo","fields":{"filename":{"rename":"image","fileLink":true},"comment":{"drop":true}}},
                        "_Installation":{"skip":true}},
             "sourceIdField":"ncmbId","keepSourceTimestamps":false,"users":{"passwords":"temporary"}}
            """))
        let source = try NCMBExportBackend(directory: sampleExport)
        let target = try openLocal(scratch.path("memo.db"))
        let report = try await migrate(source, target, state: scratch.path("state"), options: MigrationOptions(mapping: mapping))
        #expect(report.classes.map(\.target).sorted() == ["Category", "Memo"])
        let memo = try await target.get(className: "Memo", id: "3qLOKZspITIcS8Fh")
        #expect(memo["comment"] == nil && memo["filename"] == nil && memo["ncmbId"] == "3qLOKZspITIcS8Fh")
        #expect(memo["sourceCreatedAt"] == nil)
        #expect(try await target.download(try #require(memo["image"]?.fileValue)) == (try Data(contentsOf: sampleExport.appendingPathComponent("files/notes-2023_11.txt"))))
        #expect(try await target.listClasses() == ["Category", "Memo"])
        // Temporary passwords: in a 0600 file in the state folder, and they work.
        let file = scratch.path("state/temporary-passwords.ndjson")
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
        let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map { try JSON.parse(String($0)) }
        let hanako = try #require(lines.first { $0.objectValue?["username"]?.stringValue == "hanako-suzuki" })
        let password = try #require(hanako.objectValue?["password"]?.stringValue)
        #expect(try await target.logIn(username: "hanako-suzuki", password: password).userId == "GPwHcLR2Ktbo36vD")
        #expect(report.userOutcomes.allSatisfy { $0.password == "temporary" })
        await target.close()
    }

    @Test("mapping files: unknown keys and wrong types are errors naming the path")
    func mappingErrors() throws {
        #expect(throws: MBaaSError.self) { try MigrationMapping(json: JSON.parse(#"{"clases":{}}"#)) }
        do {
            _ = try MigrationMapping(json: JSON.parse(#"{"classes":{"A":{"fields":{"x":{"renam":"y"}}}}}"#))
            Issue.record("an unknown key passed")
        } catch let error as MBaaSError {
            #expect(error.message.contains("$.classes.A.fields.x") && error.message.contains("renam"))
        }
        #expect(throws: MBaaSError.self) { try MigrationMapping(json: JSON.parse(#"{"users":{"passwords":"keep"}}"#)) }
        #expect(throws: MBaaSError.self) { try MigrationMapping(json: JSON.parse(#"{"keepSourceTimestamps":"yes"}"#)) }
        let off = try MigrationMapping(json: JSON.parse(#"{"sourceIdField":null}"#))
        #expect(off.sourceIdField == nil)
    }

    @Test("a second concurrent run on the same state is refused")
    func lock() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let first = try MigrationState(directory: scratch.path("state"))
        #expect(throws: MBaaSError.self) { try MigrationState(directory: scratch.path("state")) }
        do { _ = try MigrationState(directory: scratch.path("state")) } catch { #expect(error.kind == .conflict && error.message.contains("another migration")) }
        _ = first
    }

    @Test("transient failures (10% of writes, some after the write happened) complete with nothing lost or duplicated")
    func faults() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = scratch.path("export")
        try NCMBExportSample.write(records: 800, seed: 7, to: export)
        let source = try NCMBExportBackend(directory: export)
        let local = try openLocal(scratch.path("t.db"))
        let flaky = FaultyBackend(local, seed: 42)
        let report = try await migrate(source, flaky, state: scratch.path("state"), options: MigrationOptions(batchSize: 10, concurrency: 4))
        #expect(flaky.injected > 5, "the test injected too few faults to mean anything")
        let memo = try #require(report.classes.first { $0.source == "MemoClass" })
        #expect(memo.failed == 0 && memo.verified == 800 && memo.mismatched == 0, "\(report.mismatches.prefix(5))")
        #expect(try await local.count(Query("MemoClass")) == 800)
        #expect(report.ok, "\(report.mismatches.prefix(5)) \(report.problems)")
        await local.close()
    }

    @Test("mappings wait in memory and answer look-ups; a run that dies before committing them leaves their pending marks; the limit and a flush commit them")
    func writeBehind() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        func written(_ ids: [String]) -> [MigrationState.Written] {
            ids.map { .init(sourceId: $0, targetId: "t-\($0)", fixups: nil, attachments: []) }
        }
        do {
            let state = try MigrationState(directory: scratch.path("state"))
            let batch = try state.beginWrites(.record, className: "Memo", sourceIds: ["a", "b"])
            try state.recordWritten(.record, className: "Memo", written(["a", "b"]), deferred: true, settling: batch)
            #expect(try state.mapped(.record, className: "Memo", sourceIds: ["a", "b", "c"]) == ["a": "t-a", "b": "t-b"])
            #expect(try state.mapped(.record, className: "Other", sourceIds: ["a"]).isEmpty)
        }   // dies here: nothing was committed
        do {
            let state = try MigrationState(directory: scratch.path("state"))
            #expect(try state.mapped(.record, className: "Memo", sourceIds: ["a", "b"]).isEmpty)
            #expect(Set(try state.pending(.record, className: "Memo")) == ["a", "b"])
            // The next run found them on the target, and wrote c (whose write failed: its batch settles all the same).
            let left = try #require(try state.lastPendingBatch(.record, className: "Memo"))
            let batch = try state.beginWrites(.record, className: "Memo", sourceIds: ["c"])
            try state.recordWritten(.record, className: "Memo", written(["a", "b"]), deferred: true)
            try state.recordWritten(.record, className: "Memo", [], deferred: true, settling: batch)
            try state.flushWritten()
            #expect(Set(try state.pending(.record, className: "Memo")) == ["a", "b"])   // the earlier run's mark stays ...
            try state.settlePending(.record, className: "Memo", through: left)        // ... until the class is done
        }
        do {
            let state = try MigrationState(directory: scratch.path("state"))
            #expect(try state.mapped(.record, className: "Memo", sourceIds: ["a", "b"]).count == 2)
            #expect(try state.pending(.record, className: "Memo").isEmpty)
            // Reaching the limit commits without a flush.
            let many = (0..<MigrationState.writeBehindLimit).map { "m\($0)" }
            let first = try state.beginWrites(.record, className: "Memo", sourceIds: Array(many.dropLast()))
            let second = try state.beginWrites(.record, className: "Memo", sourceIds: [many.last!])
            try state.recordWritten(.record, className: "Memo", written(Array(many.dropLast())), deferred: true, settling: first)
            try state.recordWritten(.record, className: "Memo", written([many.last!]), deferred: true, settling: second)
        }
        let state = try MigrationState(directory: scratch.path("state"))
        #expect(try state.mappedCount(.record, className: "Memo") == 2 + MigrationState.writeBehindLimit)
        #expect(try state.pending(.record, className: "Memo").isEmpty)
    }

    @Test("verification keeps checksums, and still names the fields that differ")
    func verifyNamesDifferences() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("s.db"))
        let target = try openLocal(scratch.path("t.db"))
        for i in 0..<3 { _ = try await source.create(Record(className: "Memo", id: "m\(i)", fields: ["n": .int(Int64(i)), "title": .string("t\(i)")])) }
        let first = try await migrate(source, target, state: scratch.path("state"))
        #expect(first.classes.first?.verified == 3 && first.mismatches.isEmpty, "\(first.mismatches)")
        _ = try await target.update(className: "Memo", id: "m1", .set(["n": 99]))
        let state = try MigrationState(directory: scratch.path("state"))
        let report = try await Migration(source: source, target: target, options: MigrationOptions(), state: state).verify()
        let memo = try #require(report.classes.first)
        #expect(memo.verified == 2 && memo.mismatched == 1)
        let mismatch = try #require(report.mismatches.first)
        #expect(mismatch.kind == "content" && mismatch.sourceId == "m1" && mismatch.detail.contains("n: expected 1, found 99"), "\(mismatch)")
        await source.close()
        await target.close()
    }

    @Test("the verification digest compares what the canonical text compares, and nothing else")
    func digestFollowsCanonical() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let local = try openLocal(scratch.path("t.db"))
        let migration = Migration(source: local, target: local, options: MigrationOptions(), state: nil)
        let when = Date(timeIntervalSince1970: 1_700_000_000.123)
        var acl = ACL()
        acl.entries[.everyone] = .init(read: true, write: false)
        let base = Record(className: "Memo", id: "x", acl: acl, fields: [
            "n": .int(1), "s": "a", "nested": .object(["b": .array([.int(1), "x"]), "a": .date(when)]),
            "p": .pointer(Pointer(className: "C", objectId: "c1")), "g": .geoPoint(GeoPoint(latitude: 35.5, longitude: 139)),
            "photo": "photo.png", "gone": .null,
        ])
        func variant(_ change: (inout Record) -> Void) -> Record { var r = base; change(&r); return r }
        let files: Set<String> = ["photo"]
        let cases: [(String, Record)] = [
            ("a double equal to the integer", variant { $0.fields["n"] = .double(1) }),
            ("no null fields", variant { $0.fields["gone"] = nil }),
            ("another file value in a file field", variant { $0.fields["photo"] = .file(FileReference(name: "other")) }),
            ("an integral double inside an array", variant { $0.fields["nested"] = .object(["b": .array([.double(1), "x"]), "a": .date(when)]) }),
            ("another string", variant { $0.fields["s"] = "b" }),
            ("a string for a number", variant { $0.fields["n"] = "1" }),
            ("another array order", variant { $0.fields["nested"] = .object(["b": .array(["x", .int(1)]), "a": .date(when)]) }),
            ("another pointer", variant { $0.fields["p"] = .pointer(Pointer(className: "C", objectId: "c2")) }),
            ("another date", variant { $0.fields["nested"] = .object(["b": .array([.int(1), "x"]), "a": .date(when.addingTimeInterval(1))]) }),
            ("another ACL", variant { $0.acl?.entries[.everyone] = .init(read: true, write: true) }),
            ("a field renamed", variant { $0.fields["t"] = $0.fields.removeValue(forKey: "s") }),
            ("another geo point", variant { $0.fields["g"] = .geoPoint(GeoPoint(latitude: 35.5, longitude: 139.5)) }),
            ("bytes for a string", variant { $0.fields["s"] = .bytes(Data("a".utf8)) }),
        ]
        for (name, other) in cases {
            let sameText = migration.canonical(base, fileFields: files) == migration.canonical(other, fileFields: files)
            let sameDigest = migration.canonicalDigest(base, fileFields: files) == migration.canonicalDigest(other, fileFields: files)
            #expect(sameText == sameDigest, "\(name): canonical texts \(sameText ? "equal" : "differ"), digests \(sameDigest ? "equal" : "differ")")
        }
        #expect(cases.filter { migration.canonicalDigest(base, fileFields: files) == migration.canonicalDigest($0.1, fileFields: files) }.count == 4)
        await local.close()
    }

    @Test("records pending when a run died are found on the target, not created again")
    func resumeAfterCrashBetweenWriteAndCheckpoint() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let local = try openLocal(scratch.path("t.db"))
        let target = FaultyBackend(local, seed: 0, rate: 0)   // no faults; ids are not kept, as on most servers
        let source = try openLocal(scratch.path("s.db"))
        for i in 0..<10 { _ = try await source.create(Record(className: "Memo", id: "m\(i)", fields: ["n": .int(Int64(i))])) }
        // A run that recorded m9, wrote m0 and m1 to the target, then died before recording them. (With m9 mapped
        // the class is not "adopted" wholesale: only the pending path can find m0 and m1.)
        do {
            let state = try MigrationState(directory: scratch.path("state"))
            try state.recordWritten(.record, className: "Memo", [.init(sourceId: "m9", targetId: "other9", fixups: nil, attachments: [])])
            try state.addPending(.record, className: "Memo", sourceIds: ["m0", "m1"])
        }
        _ = try await local.create(Record(className: "Memo", id: "other9", fields: ["n": 9, "sourceObjectId": "m9"]))
        _ = try await local.create(Record(className: "Memo", id: "other0", fields: ["n": 0, "sourceObjectId": "m0"]))
        _ = try await local.create(Record(className: "Memo", id: "other1", fields: ["n": 1, "sourceObjectId": "m1"]))
        let report = try await migrate(source, target, state: scratch.path("state"),
                                       options: MigrationOptions(mapping: MigrationMapping(keepSourceTimestamps: false)))
        #expect(try await local.count(Query("Memo")) == 10)
        let memo = try #require(report.classes.first)
        // m9 was mapped, m0 and m1 are found by their marks: three skipped, seven written.
        #expect(memo.written == 7 && memo.skipped == 3 && memo.failed == 0 && memo.verified == 10 && memo.mismatched == 0, "\(report.mismatches)")
        #expect(try await local.get(className: "Memo", id: "other0")["n"] == 0)
        await local.close()
        await source.close()
    }

    @Test("a write whose last attempt failed is looked up before it is called failed; one that cannot be looked up keeps an in-flight mark, so the next run does not write it twice")
    func unknownOutcomeKeepsItsMark() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("s.db"))
        for i in 0..<6 { _ = try await source.create(Record(className: "Memo", id: "m\(i)", fields: ["n": .int(Int64(i))])) }
        _ = try await source.create(Record(className: "Memo", id: "m9", fields: ["n": 9]))
        // One attempt per write; every write is applied and its answer lost.
        let options = MigrationOptions(mapping: MigrationMapping(keepSourceTimestamps: false), batchSize: 3, concurrency: 1,
                                       verify: false, users: false, files: false, maxAttempts: 1)
        // m9 was mapped by an earlier run: the class is not matched wholesale ("adopted"), only marks are looked up.
        func premapped(_ name: String, _ target: LocalBackend) async throws {
            let state = try MigrationState(directory: scratch.path(name))
            try state.recordWritten(.record, className: "Memo", [.init(sourceId: "m9", targetId: "other9", fixups: nil, attachments: [])])
            _ = try await target.create(Record(className: "Memo", id: "other9", fields: ["n": 9, "sourceObjectId": "m9"]))
        }

        // The target can be asked: the lost writes are found and mapped, none is failed.
        let first = try openLocal(scratch.path("t1.db"))
        try await premapped("s1", first)
        var report = try await migrate(source, FaultyBackend(first, seed: 0, rate: 100, afterOnly: true), state: scratch.path("s1"), options: options)
        var memo = try #require(report.classes.first)
        #expect(memo.written == 6 && memo.failed == 0, "\(memo) \(report.mismatches)")
        #expect(try await first.count(Query("Memo")) == 7)

        // The target cannot be asked either: the six are failed, and stay marked in flight.
        let second = try openLocal(scratch.path("t2.db"))
        try await premapped("s2", second)
        let blind = FaultyBackend(second, seed: 0, rate: 100, afterOnly: true)
        blind.queriesFail = true
        report = try await migrate(source, blind, state: scratch.path("s2"), options: options)
        memo = try #require(report.classes.first)
        #expect(memo.written == 0 && memo.failed == 6)
        #expect(try MigrationState(directory: scratch.path("s2")).pending(.record, className: "Memo").sorted() == (0..<6).map { "m\($0)" })
        // The next run finds them on the target: nothing is written twice.
        report = try await migrate(source, FaultyBackend(second, seed: 0, rate: 0), state: scratch.path("s2"),
                                   options: MigrationOptions(mapping: MigrationMapping(keepSourceTimestamps: false), users: false, files: false))
        memo = try #require(report.classes.first)
        #expect(try await second.count(Query("Memo")) == 7)
        #expect(memo.written == 0 && memo.skipped == 7 && memo.failed == 0 && memo.verified == 7 && memo.mismatched == 0, "\(report.mismatches)")
        await first.close()
        await second.close()
        await source.close()
    }
}
