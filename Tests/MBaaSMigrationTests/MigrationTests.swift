import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSNCMB
import Testing
@testable import MBaaSMigration

/// The memo app's NCMB export shipped under `Fixtures/Samples/ncmb-memo-export`.
let sampleExport = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures/Samples/ncmb-memo-export")

/// A scratch directory per test.
struct Scratch {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("mbaas-migration-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func path(_ name: String) -> URL { url.appendingPathComponent(name) }
    /// A copy of the memo app's sample export in `export/`, to change freely.
    func sampleExport() throws -> URL {
        let export = path("export")
        try FileManager.default.copyItem(at: MBaaSMigrationTests.sampleExport, to: export)
        return export
    }
    func remove() { try? FileManager.default.removeItem(at: url) }
}

let admin = BackendContext(administrative: true)

func openLocal(_ url: URL) throws -> LocalBackend { try LocalBackend(path: url.path, context: admin) }

func migrate(
    _ source: any Backend, _ target: any Backend, state: URL, options: MigrationOptions = MigrationOptions()
) async throws -> MigrationReport {
    let state = try MigrationState(directory: state)
    return try await Migration(source: source, target: target, options: options, state: state).run()
}

/// A Local source with the user `boss`, an open `Note` `n`, and `own.txt` attached to it (field `photo`) with an ACL of
/// its own, private to `boss`.
func sourceWithOwnAttachment(_ scratch: Scratch) async throws -> LocalBackend {
    let source = try openLocal(scratch.path("s.db"))
    _ = try await source.importUser(DirectoryUser(id: "boss", username: "boss"), password: .unusable)
    _ = try await source.create(Record(className: "Note", id: "n", acl: .publicReadWrite, fields: ["text": "n"]))
    _ = try await source.upload(FileUpload(name: "own.txt", source: .data(Data("own".utf8)), acl: .privateTo("boss"),
                                           attachment: FileAttachment(className: "Note", objectId: "n", field: "photo")))
    return source
}

/// Verifies again, against the state folder a migration left (``Migration/verify()``).
func reverify(
    _ source: any Backend, _ target: any Backend, state: URL, options: MigrationOptions = MigrationOptions()
) async throws -> MigrationReport {
    try await Migration(source: source, target: target, options: options, state: MigrationState(directory: state)).verify()
}

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
        let store = FlakyBackend(local, seed: 0, rate: 0, plainFileStore: true, uploadDelay: .milliseconds(200))
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
        let resumed = FlakyBackend(other, seed: 0, rate: 0, plainFileStore: true)
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
        let target = FlakyBackend(inner, seed: 0, rate: 0, plainFileStore: true, uploadDelay: .milliseconds(100))
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
        let store = FlakyBackend(other, seed: 0, rate: 0, plainFileStore: true, uploadDelay: .milliseconds(100))
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
        let typed = FlakyBackend(target, seed: 0, rate: 0, without: [.mixedFieldTypes])
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

    @Test("a malformed export stops the run before anything is written, naming the file and line")
    func malformedExport() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = try scratch.sampleExport()
        let memo = export.appendingPathComponent("MemoClass.json")
        var text = try String(contentsOf: memo, encoding: .utf8)
        text = text.replacingOccurrences(of: "\"title\": \"Snack\",", with: "\"title\": \"Snack\" \"oops\",")
        try text.write(to: memo, atomically: true, encoding: .utf8)
        let badLine = text.components(separatedBy: "\n").firstIndex { $0.contains("Snack") }! + 1
        let source = try NCMBExportBackend(directory: export)
        let target = try openLocal(scratch.path("memo.db"))
        let error = await #expect(throws: MBaaSError.self) { try await migrate(source, target, state: scratch.path("state")) }
        #expect(error?.kind == .decoding)
        #expect(error?.message.contains("MemoClass.json line") == true, "\(String(describing: error))")
        // The line of the record that holds the error (records start a few lines above the bad member).
        let named = Int(error?.message.split(separator: " ").drop { $0 != "line" }.dropFirst().first?.filter(\.isNumber) ?? "") ?? 0
        #expect(named > 0 && named <= badLine)
        try await expectNothingWritten(target)
    }

    @Test("a member given twice in an exported record stops the run before anything is written, naming it: neither value is guessed")
    func repeatedMemberInExport() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = try scratch.sampleExport()
        let memo = export.appendingPathComponent("MemoClass.json")
        var text = try String(contentsOf: memo, encoding: .utf8)
        #expect(text.contains("\"title\": \"Snack\","))
        text = text.replacingOccurrences(of: "\"title\": \"Snack\",", with: "\"title\": \"Snack\", \"title\": \"Snacks\",")
        try text.write(to: memo, atomically: true, encoding: .utf8)
        let source = try NCMBExportBackend(directory: export)
        let target = try openLocal(scratch.path("memo.db"))
        let error = await #expect(throws: MBaaSError.self) { try await migrate(source, target, state: scratch.path("state")) }
        #expect(error?.kind == .decoding)
        #expect(error?.message.contains("MemoClass.json line") == true, "\(String(describing: error))")
        #expect(error?.message.contains("title") == true && error?.message.contains("repeated") == true, "\(String(describing: error))")
        try await expectNothingWritten(target)
    }

    /// The target holds no class and no user; closes it.
    func expectNothingWritten(_ target: LocalBackend, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        #expect(try await target.listClasses().isEmpty, sourceLocation: sourceLocation)
        #expect(try await target.listUsers(after: nil, limit: 10).users.isEmpty, sourceLocation: sourceLocation)
        await target.close()
    }

    @Test("an export is checked on every core: a malformed record deep in a class is named by its line, and of two the earlier one")
    func malformedDeepInExport() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = scratch.path("export")
        try NCMBExportSample.write(records: 3_000, seed: 11, fileEvery: 0, to: export)
        let memo = export.appendingPathComponent("MemoClass.json")
        #expect(try await NCMBExportBackend(directory: export).count(Query("MemoClass")) == 3_000)
        // Record i is on line i + 3. A date that is not one (a decoding error) in record 1,800, and broken JSON in
        // record 2,500: both far past the first chunks the check hands out, the second in a later chunk.
        var lines = try String(contentsOf: memo, encoding: .utf8).components(separatedBy: "\n")
        #expect(lines[1_800 + 2].contains("\"title\":\"memo 1800\""))
        let good = lines[1_800 + 2]
        lines[1_800 + 2] = good.replacingOccurrences(of: "\"iso\":\"20", with: "\"iso\":\"2X")
        #expect(lines[1_800 + 2] != good)
        lines[2_500 + 2] = lines[2_500 + 2].replacingOccurrences(of: "\"title\":", with: "\"title\" ")
        try lines.joined(separator: "\n").write(to: memo, atomically: true, encoding: .utf8)
        let error = await #expect(throws: MBaaSError.self) { try await NCMBExportBackend(directory: export).count(Query("MemoClass")) }
        #expect(error?.kind == .decoding)
        #expect(error?.message.hasPrefix("ncmb-export: MemoClass.json line 1803:") == true, "\(String(describing: error))")
        // With only the broken JSON left, that one is named.
        lines[1_800 + 2] = good
        try lines.joined(separator: "\n").write(to: memo, atomically: true, encoding: .utf8)
        let second = await #expect(throws: MBaaSError.self) { try await NCMBExportBackend(directory: export).count(Query("MemoClass")) }
        #expect(second?.message.hasPrefix("ncmb-export: MemoClass.json line 2503:") == true, "\(String(describing: second))")
        // And a migration stops on it before anything is written.
        let target = try openLocal(scratch.path("t.db"))
        await #expect(throws: MBaaSError.self) { try await migrate(NCMBExportBackend(directory: export), target, state: scratch.path("state")) }
        try await expectNothingWritten(target)
    }

    @Test("an export's pages are parsed in parallel chunks: every record once and in file order across cursors; in a page, the earliest malformed record is named")
    func pagesInParallel() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = scratch.path("export")
        try NCMBExportSample.write(records: 3_000, seed: 12, fileEvery: 0, to: export)
        let memo = export.appendingPathComponent("MemoClass.json")
        // The order a plain front-to-back read gives.
        var reader = try JSONArrayFileReader(url: memo, member: "results")
        var expected: [String] = []
        while let element = try reader.next() { expected.append(element.value["objectId"]?.stringValue ?? "?") }
        reader.close()
        #expect(expected.count == 3_000)
        for pageSize in [1_000, 700, 90] {   // 1,000 and 700 are cut into chunks; 90 is decoded in one
            var ids: [String] = []
            var pages = 0
            for try await record in try NCMBExportBackend(directory: export).records(matching: Query("MemoClass"), pageSize: pageSize) {
                ids.append(record.id ?? "")
                if ids.count % pageSize == 1 { pages += 1 }
            }
            #expect(ids == expected, "pages of \(pageSize)")
            #expect(pages == (3_000 + pageSize - 1) / pageSize)
        }
        // Record i is on line i + 3. In the second page of 1,000: a date that is not one in record 1,200 (its first
        // chunk) and broken JSON in record 1,900 (its last): the first is named, as a front-to-back read would.
        var lines = try String(contentsOf: memo, encoding: .utf8).components(separatedBy: "\n")
        let good = lines[1_200 + 2]
        lines[1_200 + 2] = good.replacingOccurrences(of: "\"iso\":\"20", with: "\"iso\":\"2X")
        #expect(lines[1_200 + 2] != good)
        lines[1_900 + 2] = lines[1_900 + 2].replacingOccurrences(of: "\"title\":", with: "\"title\" ")
        try lines.joined(separator: "\n").write(to: memo, atomically: true, encoding: .utf8)
        let source = try NCMBExportBackend(directory: export)
        let first = try await source.queryPage(Query("MemoClass", limit: 1_000))
        #expect(first.records.count == 1_000 && first.nextCursor != nil)
        var page2 = Query("MemoClass", limit: 1_000)
        page2.cursor = first.nextCursor
        let error = await #expect(throws: MBaaSError.self) { try await source.queryPage(page2) }
        #expect(error?.message.hasPrefix("ncmb-export: MemoClass.json line 1203:") == true, "\(String(describing: error))")
        lines[1_200 + 2] = good
        try lines.joined(separator: "\n").write(to: memo, atomically: true, encoding: .utf8)
        let second = await #expect(throws: MBaaSError.self) { try await source.queryPage(page2) }
        #expect(second?.message.hasPrefix("ncmb-export: MemoClass.json line 1903:") == true, "\(String(describing: second))")
    }

    /// Replaces the export's users with `count` users: ids `u000…0<i>`, names `user<i>`; or, not `named`, ids
    /// `anon<i>` with neither userName nor mailAddress (NCMB's anonymous users have none).
    func writeUsers(_ count: Int, into export: URL, named: Bool = true) throws {
        let users = (0..<count).map { i -> JSON in
            var user: JSONObject = ["objectId": .string("anon\(i)"), "createDate": "2023-10-01T00:00:00.000Z", "updateDate": "2023-10-02T00:00:00.000Z"]
            if named {
                user["objectId"] = .string(String(format: "u%015d", i))
                user["userName"] = .string("user\(i)")
                user["mailAddress"] = .string("user\(i)@example.com")
            }
            return .object(user)
        }
        try JSON.object(["results": .array(users)]).printed().write(to: export.appendingPathComponent("user.json"), atomically: true, encoding: .utf8)
    }

    @Test("failed user imports: a refused user loses its mark, one in doubt keeps it; an error that ends the run keeps what was imported; the next run completes without duplicates")
    func userImportFailures() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = try scratch.sampleExport()
        try writeUsers(20, into: export)
        func id(_ i: Int) -> String { String(format: "u%015d", i) }
        let local = try openLocal(scratch.path("t.db"))
        let options = MigrationOptions(classes: ["Category"], concurrency: 1, files: false, maxAttempts: 2)
        // user3 is refused; user7 fails with 503 until the retries are used up.
        let first = FlakyBackend(local, seed: 0, rate: 0, userFault: { name in
            name == "user3" ? MBaaSError(.invalidRequest, "refused") : name == "user7" ? MBaaSError(.unavailable, "down", httpStatus: 503) : nil
        })
        let report = try await migrate(NCMBExportBackend(directory: export), first, state: scratch.path("state"), options: options)
        #expect(report.users.written == 18 && report.users.failed == 2, "\(report.users)")
        do {
            let state = try MigrationState(directory: scratch.path("state"))
            #expect(try state.pending(.user, className: "_User") == [id(7)])
            #expect(try state.mappedCount(.user, className: "_User") == 18)
        }
        // A second run tries user3 and user7 again, one at a time. user7's import now says "duplicate" and looking
        // it up fails (its first look-up, for its pending mark, works): the run ends with that error, after
        // committing user3, imported before it. user7 keeps its mark.
        let lookups = Counter()
        let second = FlakyBackend(local, seed: 0, rate: 0, userFault: { $0 == "user7" ? MBaaSError(.duplicate, "taken") : nil },
                                  findUserFault: { $0 == "user7" && lookups.next() > 1 ? MBaaSError(.invalidRequest, "lookup refused") : nil })
        await #expect(throws: MBaaSError.self) {
            try await migrate(NCMBExportBackend(directory: export), second, state: scratch.path("state"), options: options)
        }
        do {
            let state = try MigrationState(directory: scratch.path("state"))
            #expect(try state.mappedCount(.user, className: "_User") == 19)
            #expect(try state.targetId(.user, className: "_User", sourceId: id(3)) != nil)
            #expect(try state.pending(.user, className: "_User") == [id(7)])
        }
        // Without faults every user is there once.
        let last = try await migrate(NCMBExportBackend(directory: export), local, state: scratch.path("state"), options: options)
        #expect(last.users.failed == 0 && last.users.skipped == 19 && last.users.written == 1, "\(last.users)")
        #expect(try await local.listUsers(after: nil, limit: 100).users.count == 20)
        await local.close()
    }

    @Test("users move in groups: several groups, users an earlier run created while marked pending are adopted, a second run skips them all")
    func usersInGroups() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = try scratch.sampleExport()
        let count = Migration.userGroupSize * 2 + 57
        try writeUsers(count, into: export)
        let local = try openLocal(scratch.path("t.db"))
        // An earlier run marked users 300 and 301 pending and created them before it died.
        do {
            let state = try MigrationState(directory: scratch.path("state"))
            try state.addPending(.user, className: "_User", sourceIds: [String(format: "u%015d", 300), String(format: "u%015d", 301)])
        }
        for i in [300, 301] {
            let id = String(format: "u%015d", i)
            _ = try await local.importUser(DirectoryUser(id: id, username: "user\(i)", email: "user\(i)@example.com", fields: ["sourceObjectId": .string(id)]),
                                           password: .unusable)
        }
        let options = MigrationOptions(classes: ["Category"], files: false)
        let report = try await migrate(NCMBExportBackend(directory: export), local, state: scratch.path("state"), options: options)
        // The two an earlier run created are already there: skipped, not written.
        #expect(report.users.read == count && report.users.written == count - 2 && report.users.skipped == 2 && report.users.failed == 0, "\(report.users)")
        var stored: [DirectoryUser] = []
        var cursor: String?
        repeat {
            let page = try await local.listUsers(after: cursor, limit: 200)
            stored += page.users
            cursor = page.nextCursor
        } while cursor != nil
        #expect(stored.count == count)
        #expect(Set(stored.compactMap { $0.fields["sourceObjectId"]?.stringValue }).count == count)
        do {
            let state = try MigrationState(directory: scratch.path("state"))
            #expect(try state.pending(.user, className: "_User").isEmpty)
            #expect(try state.mappedCount(.user, className: "_User") == count)
        }
        #expect(report.userOutcomes.count == count && report.userOutcomes.allSatisfy { $0.password == "reset" })
        let again = try await migrate(NCMBExportBackend(directory: export), local, state: scratch.path("state"), options: options)
        #expect(again.users.written == 0 && again.users.skipped == count)
        await local.close()
    }

    @Test("users with neither a user name nor an e-mail: one an interrupted run imported is found by its source id, not imported twice")
    func namelessUsersResume() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = try scratch.sampleExport()
        try writeUsers(5, into: export, named: false)
        let local = try openLocal(scratch.path("t.db"))
        // An earlier run marked anon1 and anon3 pending and imported them before it died; the duplicate check of the
        // retry path sees anon4 as already taken.
        do {
            let state = try MigrationState(directory: scratch.path("state"))
            try state.addPending(.user, className: "_User", sourceIds: ["anon1", "anon3"])
        }
        var earlier: [String: String] = [:]
        for id in ["anon1", "anon3", "anon4"] {
            earlier[id] = try await local.importUser(DirectoryUser(id: id, fields: ["sourceObjectId": .string(id)]), password: .unusable).id
        }
        #expect(try await local.findUser(field: "sourceObjectId", equals: "anon3")?.id == earlier["anon3"])
        #expect(try await local.findUser(field: "sourceObjectId", equals: "nobody") == nil)
        await #expect(throws: MBaaSError.self) { try await local.findUser(field: "a.b", equals: "x") }
        let options = MigrationOptions(classes: ["Category"], files: false)
        let report = try await migrate(NCMBExportBackend(directory: export), local, state: scratch.path("state"), options: options)
        // anon1 and anon3 were pending and are found: skipped; anon4 is met as a duplicate and found: written.
        #expect(report.users.failed == 0 && report.users.written == 3 && report.users.skipped == 2, "\(report.users) \(report.mismatches)")
        let stored = try await local.listUsers(after: nil, limit: 100).users
        #expect(stored.count == 5)
        #expect(Set(stored.compactMap { $0.fields["sourceObjectId"]?.stringValue }) == ["anon0", "anon1", "anon2", "anon3", "anon4"])
        let state = try MigrationState(directory: scratch.path("state"))
        for (id, target) in earlier { #expect(try state.targetId(.user, className: "_User", sourceId: id) == target) }
        #expect(try state.pending(.user, className: "_User").isEmpty)
        await local.close()
    }

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

    @Test("transient failures (10% of writes, some after the write happened) complete with nothing lost or duplicated")
    func faults() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = scratch.path("export")
        try NCMBExportSample.write(records: 800, seed: 7, to: export)
        let source = try NCMBExportBackend(directory: export)
        let local = try openLocal(scratch.path("t.db"))
        let flaky = FlakyBackend(local, seed: 42)
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

    @Test("users are verified by user name, e-mail and fields, roles by their members: a changed field, a lost user and a lost member are named; what the target adds is not a difference")
    func verifyUsersAndRoles() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("s.db"))
        let target = try openLocal(scratch.path("t.db"))
        let joined = Date(timeIntervalSince1970: 1_700_000_000.25)
        func user(_ i: Int, nick: String) -> DirectoryUser {
            DirectoryUser(id: "u\(i)", username: "user\(i)", email: "user\(i)@example.com",
                          fields: ["nick": .string(nick), "age": .int(Int64(20 + i)), "joined": .date(joined)])
        }
        for i in 0..<3 { _ = try await source.importUser(user(i, nick: "N\(i)"), password: .unusable) }
        try await source.importRole(DirectoryRole(name: "staff", users: ["u0", "u1"]))
        let first = try await migrate(source, target, state: scratch.path("state"))
        #expect(first.users.verified == 3 && first.users.mismatched == 0, "\(first.users)")
        #expect(first.roles.written == 1 && first.roles.verified == 1 && first.roles.mismatched == 0, "\(first.roles)")
        #expect(first.mismatches.isEmpty && first.ok, "\(first.mismatches)")
        #expect(first.table.contains("(users)") && first.json["users"]?["verified"] == .int(3) && first.json["roles"]?["verified"] == .int(1))

        // The target gains a field of its own on user0 (not a difference), and loses user2 and user0's role; the
        // source's user1 changes its nick after the copy.
        await target.close()
        try executeBehindItsBack(database: scratch.path("t.db"), """
            UPDATE users SET fields = json_set(fields, '$.theme', 'dark') WHERE id = 'u0';
            UPDATE users SET roles = '[]' WHERE id = 'u0';
            DELETE FROM users WHERE id = 'u2';
            """)
        let reopened = try openLocal(scratch.path("t.db"))
        try await source.deleteUser(id: "u1")
        var changed = user(1, nick: "Changed")
        changed.roles = ["staff"]
        _ = try await source.importUser(changed, password: .unusable)
        let report = try await reverify(source, reopened, state: scratch.path("state"))
        #expect(report.users.verified == 1 && report.users.mismatched == 2, "\(report.users)")
        #expect(report.roles.verified == 0 && report.roles.mismatched == 1, "\(report.roles)")
        let byId = Dictionary(report.mismatches.map { ($0.sourceId ?? "", $0) }, uniquingKeysWith: { a, _ in a })
        #expect(byId["u1"]?.kind == "content" && byId["u1"]?.detail.contains(#"nick: expected "Changed", found "N1""#) == true, "\(report.mismatches)")
        #expect(byId["u2"]?.kind == "missing" && byId["u2"]?.detail.contains("is not on the target") == true, "\(report.mismatches)")
        #expect(byId["staff"]?.kind == "role" && byId["staff"]?.detail.contains("1 of 2 members") == true, "\(report.mismatches)")
        #expect(report.mismatchCount == 3 && !report.ok)
        await source.close()
        await reopened.close()
    }

    /// Two users (`user0`, `user1`, each with an e-mail and a `nick`) migrated into a target without `missing`; then
    /// the source's users are replaced by `changed` and verification runs again. The dry run's plan, the first run's
    /// report and the verification's.
    func twoUsersThenChanged(without missing: Capabilities.Feature, _ changed: [DirectoryUser])
        async throws -> (plan: MigrationReport, first: MigrationReport, verified: MigrationReport)
    {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("s.db"))
        let local = try openLocal(scratch.path("t.db"))
        let target = FlakyBackend(local, seed: 1, rate: 0, without: [missing])
        for i in 0..<2 {
            _ = try await source.importUser(DirectoryUser(id: "u\(i)", username: "user\(i)", email: "user\(i)@example.com",
                                                          fields: ["nick": .string("N\(i)")]), password: .unusable)
        }
        let plan = try await Migration(source: source, target: target, options: MigrationOptions(dryRun: true), state: nil).run()
        let first = try await migrate(source, target, state: scratch.path("state"))
        for user in changed {
            try await source.deleteUser(id: user.id)
            _ = try await source.importUser(user, password: .unusable)
        }
        let verified = try await reverify(source, target, state: scratch.path("state"))
        await source.close()
        await local.close()
        return (plan, first, verified)
    }

    @Test("a target that does not keep users' fields is said to in the plan, and its users are verified by user name and e-mail alone")
    func usersWithoutFields() async throws {
        // The source's nick changes (not compared: the target does not keep fields), and user1's e-mail (compared).
        let (plan, first, report) = try await twoUsersThenChanged(without: .userFields, [
            DirectoryUser(id: "u0", username: "user0", email: "user0@example.com", fields: ["nick": "other"]),
            DirectoryUser(id: "u1", username: "user1", email: "new1@example.com", fields: ["nick": "N1"]),
        ])
        let note = "users' custom fields and their source id ('sourceObjectId'): local does not keep them; users are verified by user name and e-mail"
        #expect(plan.plan?.unsupported.contains(note) == true, "\(plan.plan?.unsupported ?? [])")
        #expect(first.problems.contains(note) && first.users.verified == 2 && first.ok, "\(first.problems) \(first.mismatches)")
        #expect(report.users.verified == 1 && report.users.mismatched == 1, "\(report.mismatches)")
        let mismatch = try #require(report.mismatches.first)
        #expect(mismatch.sourceId == "u1" && mismatch.detail.contains(#"mailAddress: expected "new1@example.com", found "user1@example.com""#)
                && !mismatch.detail.contains("nick"), "\(mismatch)")
    }

    @Test("a target that does not keep users' e-mail addresses is said to in the plan, and an e-mail that differs is not a mismatch there")
    func usersWithoutEmail() async throws {
        // user0's e-mail changes (not compared), user1's nick (compared: the target keeps fields).
        let (plan, first, report) = try await twoUsersThenChanged(without: .userEmail, [
            DirectoryUser(id: "u0", username: "user0", email: "new0@example.com", fields: ["nick": "N0"]),
            DirectoryUser(id: "u1", username: "user1", email: "user1@example.com", fields: ["nick": "other"]),
        ])
        let note = "users' e-mail addresses: local does not keep them; users are verified by user name"
        #expect(plan.plan?.unsupported.contains(note) == true, "\(plan.plan?.unsupported ?? [])")
        #expect(first.problems.contains(note) && first.users.verified == 2 && first.ok, "\(first.problems) \(first.mismatches)")
        #expect(!first.problems.contains { $0.hasPrefix("users' custom fields") }, "\(first.problems)")
        #expect(report.users.verified == 1 && report.users.mismatched == 1, "\(report.mismatches)")
        let mismatch = try #require(report.mismatches.first)
        #expect(mismatch.sourceId == "u1" && mismatch.detail.contains(#"nick: expected "other", found "N1""#)
                && !mismatch.detail.contains("mailAddress"), "\(mismatch)")
    }

    @Test("a target that cannot store every ACL gets the narrowed one it names, in phase 1 and in phase 2 (a resumed record's ACL), one warning per ACL; verified")
    func narrowedACLs() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("s.db"))
        let local = try openLocal(scratch.path("t.db"))
        for store in [source, local] {
            _ = try await store.importUser(DirectoryUser(id: "boss", username: "boss"), password: .unusable)
            try await store.importRole(DirectoryRole(name: "staff", users: ["boss"]))
        }
        // The target stores read-write grants to users and everyone; anything else becomes the boss's own.
        let target = FlakyBackend(local, seed: 0, rate: 0, narrow: { acl in
            acl.entries.allSatisfy { p, a in a.read && a.write && !p.isRoleOrGroupForTest } ? nil : .privateTo("boss")
        })
        let readOnly = ACL([.everyone: .read])
        let withRole = ACL([.role("staff"): .readWrite, .user("boss"): .readWrite])
        for (id, acl) in [("n1", ACL.publicReadWrite), ("n2", readOnly), ("n3", withRole), ("n4", readOnly), ("n5", withRole)] {
            _ = try await source.create(Record(className: "Note", id: id, acl: acl, fields: ["text": .string(id)]))
        }
        // An earlier run wrote n5 without its ACL and died before recording it.
        let n5 = try await source.get(className: "Note", id: "n5")
        _ = try await local.create(Record(className: "Note", fields: [
            "text": "n5", "sourceObjectId": "n5", "sourceCreatedAt": .date(try #require(n5.createdAt)), "sourceUpdatedAt": .date(try #require(n5.updatedAt)),
        ]))
        try MigrationState(directory: scratch.path("state")).addPending(.record, className: "Note", sourceIds: ["n5"])
        let report = try await migrate(source, target, state: scratch.path("state"), options: MigrationOptions(classes: ["Note"], users: false))
        let note = try #require(report.classes.first)
        #expect(note.written == 4 && note.skipped == 1 && note.failed == 0 && note.verified == 5 && note.mismatched == 0, "\(report.mismatches)")
        #expect(report.problems.contains { $0.hasPrefix("ACLs: local cannot store every ACL") }, "\(report.problems)")
        let warnings = report.warnings.filter { $0.kind == "acl" && $0.detail.contains("cannot be stored on local") }
        #expect(warnings.count == 2 && warnings.allSatisfy { $0.detail.contains(#"written with {"boss":{"read":true,"write":true}}"#) }, "\(warnings)")
        for id in ["n2", "n3", "n4"] {
            let stored = try #require(try await local.queryPage(Query("Note", predicate: .compare("sourceObjectId", .eq, .string(id)))).records.first)
            #expect(stored.acl == .privateTo("boss"), "\(id): \(String(describing: stored.acl))")
        }
        let n1 = try await local.queryPage(Query("Note", predicate: .compare("sourceObjectId", .eq, "n1"))).records.first
        #expect(n1?.acl == .publicReadWrite)
        let resumed = try await local.queryPage(Query("Note", predicate: .compare("sourceObjectId", .eq, "n5"))).records
        #expect(resumed.count == 1 && resumed.first?.acl == .privateTo("boss"), "\(resumed)")
        await source.close()
        await local.close()
    }

    @Test("a file's ACL goes with it; a target whose files have no ACLs gets the file without it, said, and the run goes on")
    func fileACLs() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("s.db"))
        _ = try await source.importUser(DirectoryUser(id: "boss", username: "boss"), password: .unusable)
        _ = try await source.upload(FileUpload(name: "private.txt", source: .data(Data("mine".utf8)), contentType: "text/plain", acl: .privateTo("boss")))
        // A file a record links to has its own ACL in a separate file store: it goes with the file too.
        _ = try await source.upload(FileUpload(name: "linked.txt", source: .data(Data("linked".utf8)), contentType: "text/plain", acl: .privateTo("boss")))
        _ = try await source.upload(FileUpload(name: "open.txt", source: .data(Data("open".utf8)), contentType: "text/plain", acl: .publicReadWrite))
        _ = try await source.create(Record(className: "Note", fields: ["text": "n", "photo": .file(FileReference(name: "linked.txt")),
                                                                       "open": .file(FileReference(name: "open.txt"))]))
        for refuses in [false, true] {
            let local = try openLocal(scratch.path("t\(refuses).db"))
            let target = FlakyBackend(local, seed: 0, rate: 0, plainFileStore: true, refusesFileACLs: refuses)
            // The loss allowed (--acl-loss allow): by default such files fail (ACLLossTests).
            let plan = try await Migration(source: source, target: target, options: MigrationOptions(classes: ["Note"], dryRun: true, aclLoss: .allow), state: nil).run()
            #expect((plan.plan?.unsupported ?? []).contains { $0.hasPrefix("file ACLs: local does not keep them") } == refuses)
            let report = try await migrate(source, target, state: scratch.path("state\(refuses)"), options: MigrationOptions(classes: ["Note"], aclLoss: .allow))
            #expect(report.files.written == 3 && report.files.verified == 3 && report.files.failed == 0, "\(refuses): \(report.files) \(report.mismatches)")
            #expect(report.classes.first?.written == 1, "the run went on past the file")
            let stored = try #require(try await local.listFiles(prefix: "private", limit: 10).first)
            #expect(target.uploadAttempts.count == 3, "each file once: \(target.uploadAttempts)")
            // A file open to everyone loses nothing on a store without file ACLs: no warning for it.
            #expect(!report.warnings.contains { $0.sourceId == "open.txt" }, "\(report.warnings)")
            #expect(try await local.download(stored.reference) == Data("mine".utf8))
            let said = report.problems.contains { $0.hasPrefix("file ACLs: local does not keep them") }
            #expect(said == refuses, "\(report.problems)")
            #expect(report.warnings.contains { $0.sourceId == "private.txt" && $0.detail.contains("its ACL is not kept") } == refuses)
            #expect((stored.acl == .privateTo("boss")) == !refuses, "\(String(describing: stored.acl))")
            let linked = try #require(try await local.listFiles(prefix: "linked", limit: 10).first)
            #expect((linked.acl == .privateTo("boss")) == !refuses, "linked: \(String(describing: linked.acl))")
            #expect(report.warnings.contains { $0.sourceId == "linked.txt" && $0.detail.contains("its ACL is not kept") } == refuses)
            await local.close()
        }
        await source.close()
    }

    @Test("a linked file with an ACL of its own keeps it as an attachment where attachments have ACLs, and verification compares it; elsewhere it is reachable as its record is, which the plan and the report say")
    func attachedFileACLs() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("s.db"))
        _ = try await source.importUser(DirectoryUser(id: "boss", username: "boss"), password: .unusable)
        _ = try await source.upload(FileUpload(name: "private.txt", source: .data(Data("p".utf8)), acl: .privateTo("boss")))
        _ = try await source.upload(FileUpload(name: "open.txt", source: .data(Data("o".utf8)), acl: .publicReadWrite))
        _ = try await source.create(Record(className: "Note", id: "n", acl: .publicReadWrite,
                                           fields: ["photo": .file(FileReference(name: "private.txt")), "open": .file(FileReference(name: "open.txt"))]))
        for keeps in [true, false] {
            // The embedded store attaches files to their records, each with an ACL of its own (or, here, without).
            let local = try openLocal(scratch.path("t\(keeps).db"))
            let target = FlakyBackend(local, seed: 0, rate: 0, without: keeps ? [] : [.attachmentACL])
            let said = "file ACLs: files records link to are attached to their records on local and reachable as the record is; their own ACLs are not kept (files no record links to keep theirs)"
            // The loss allowed (--acl-loss allow): by default such files fail (ACLLossTests).
            let plan = try await Migration(source: source, target: target, options: MigrationOptions(classes: ["Note"], dryRun: true, aclLoss: .allow), state: nil).run()
            #expect(plan.plan?.unsupported.contains(said) == !keeps, "\(keeps): \(plan.plan?.unsupported ?? [])")
            let report = try await migrate(source, target, state: scratch.path("state\(keeps)"), options: MigrationOptions(classes: ["Note"], aclLoss: .allow))
            #expect(report.ok && report.files.written == 2 && report.files.failed == 0, "\(keeps): \(report.files) \(report.mismatches)")
            #expect(report.problems.contains(said) == !keeps, "\(keeps): \(report.problems)")
            let warnings = report.warnings.filter { $0.kind == "acl" }
            if keeps {
                #expect(warnings.isEmpty, "\(warnings)")
            } else {
                #expect(warnings.count == 1 && warnings.first?.sourceId == "n"
                        && warnings.first?.detail == #"file 'private.txt' (field photo): attached to its record on local, it is reachable as the record is; its own ACL {"boss":{"read":true,"write":true}} is not kept"#,
                        "\(warnings)")
            }
            let attached = try await local.listFiles(prefix: nil, limit: nil).filter { $0.reference.attachment != nil }
            let photo = try #require(attached.first { $0.reference.attachment?.field == "photo" })
            // Kept: the file's own ACL, the user's through the id map. Not kept: the record's, open to everyone.
            let boss = try #require(report.userOutcomes.first { $0.sourceId == "boss" }?.targetId)
            #expect(photo.acl == (keeps ? .privateTo(boss) : .publicReadWrite), "\(keeps): \(String(describing: photo.acl))")
            #expect(attached.first { $0.reference.attachment?.field == "open" }?.acl == .publicReadWrite)
            if keeps {
                // Verification compares an attachment's ACL where attachments have their own: the private one
                // opened on the target is a mismatch naming both ACLs, until it is put right.
                #expect(report.files.verified == 2 && report.files.mismatched == 0, "\(report.files)")
                func reattach(_ acl: ACL) async throws {
                    let current = try #require(try await local.listFiles(prefix: nil, limit: nil).first { $0.reference.attachment?.field == "photo" })
                    try await local.deleteFile(current.reference)
                    let again = try await local.upload(FileUpload(name: "private.txt", source: .data(Data("p".utf8)), acl: acl,
                                                                  attachment: photo.reference.attachment))
                    #expect(again.name == photo.reference.name)
                }
                let verify = { () async throws -> MigrationReport in
                    try await reverify(source, target, state: scratch.path("state\(keeps)"), options: MigrationOptions(classes: ["Note"]))
                }
                try await reattach(.publicReadWrite)
                let opened = try await verify()
                let expected = ACL.privateTo(boss).json.printed([.sortedKeys])
                #expect(!opened.ok && opened.files.verified == 1 && opened.files.mismatched == 1, "\(opened.files) \(opened.mismatches)")
                #expect(opened.mismatches.contains { $0.kind == "file" && $0.sourceId == "n"
                    && $0.detail == #"file \#(photo.reference.name): ACL {"*":{"read":true,"write":true}}, expected \#(expected)"# },
                        "\(opened.mismatches)")
                try await reattach(.privateTo(boss))
                let fixed = try await verify()
                #expect(fixed.ok && fixed.files.verified == 2 && fixed.files.mismatched == 0, "\(fixed.files) \(fixed.mismatches)")
            }
            await local.close()
        }
        await source.close()
    }

    @Test("a source attachment with an ACL of its own, copied into a target's separate store, is verified by that ACL")
    func sourceAttachmentIntoSeparateStore() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try await sourceWithOwnAttachment(scratch)
        // Into a store without attachments, whose own attachments may or may not have ACLs (a bundle has none).
        for attachmentACL in [true, false] {
            let local = try openLocal(scratch.path("t\(attachmentACL).db"))
            let target = FlakyBackend(local, seed: 0, rate: 0, plainFileStore: true, without: attachmentACL ? [] : [.attachmentACL])
            let state = scratch.path("state\(attachmentACL)")
            let report = try await migrate(source, target, state: state, options: MigrationOptions(classes: ["Note"]))
            #expect(report.ok && report.files.written == 1 && report.files.verified == 1, "\(report.files) \(report.mismatches)")
            let copy = try #require(try await local.listFiles(prefix: nil, limit: nil).first)
            let boss = try #require(report.userOutcomes.first { $0.sourceId == "boss" }?.targetId)
            #expect(copy.reference.attachment == nil && copy.acl == .privateTo(boss), "\(copy)")
            // Opened on the target: the verification names it.
            try await local.deleteFile(copy.reference)
            _ = try await local.upload(FileUpload(name: copy.reference.name, source: .data(Data("own".utf8)), acl: .publicReadWrite))
            let opened = try await reverify(source, target, state: state, options: MigrationOptions(classes: ["Note"]))
            #expect(!opened.ok && opened.files.mismatched == 1, "\(attachmentACL): \(opened.files) \(opened.mismatches)")
            #expect(opened.mismatches.contains { $0.kind == "file" && $0.detail.contains(#"ACL {"*":{"read":true,"write":true}}, expected"#) },
                    "\(attachmentACL): \(opened.mismatches)")
            await local.close()
        }
        await source.close()
    }

    @Test("an attachment whose own ACL grants less than its record's is said per file, and once for the run, where the target's attachments follow their record; one no narrower is not")
    func narrowerAttachmentsAreSaid() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("s.db"))
        _ = try await source.importUser(DirectoryUser(id: "boss", username: "boss"), password: .unusable)
        for (id, recordACL) in [("wide", ACL.publicReadWrite), ("same", ACL.privateTo("boss")), ("bare", nil)] {
            _ = try await source.create(Record(className: "Note", id: id, acl: recordACL, fields: ["text": .string(id)]))
            _ = try await source.upload(FileUpload(name: "\(id).txt", source: .data(Data(id.utf8)), acl: .privateTo("boss"),
                                                   attachment: FileAttachment(className: "Note", objectId: id, field: "photo")))
        }
        let local = try openLocal(scratch.path("t.db"))
        let target = FlakyBackend(local, seed: 0, rate: 0, without: [.attachmentACL])
        let said = { (line: String) in line.hasPrefix("file ACLs: files records link to are attached to their records on local") }
        // The plan cannot tell a narrower attachment from one with its record's ACL without reading the records.
        let plan = try await Migration(source: source, target: target, options: MigrationOptions(classes: ["Note"], dryRun: true), state: nil).run()
        #expect(plan.plan?.unsupported.contains(where: said) == false, "\(plan.plan?.unsupported ?? [])")
        // The loss allowed (--acl-loss allow): by default such attachments fail (ACLLossTests).
        let report = try await migrate(source, target, state: scratch.path("state"), options: MigrationOptions(classes: ["Note"], aclLoss: .allow))
        #expect(report.ok && report.files.written == 3 && report.files.failed == 0, "\(report.files) \(report.mismatches)")
        let warnings = report.warnings.filter { $0.kind == "acl" }
        // A record without an ACL is open to everyone: its private attachment is narrower too.
        #expect(warnings.compactMap(\.sourceId).sorted() == ["bare", "wide"] && warnings.count == 2, "\(warnings)")
        let name = try #require(try await source.listFiles(prefix: nil, limit: nil).first { $0.reference.attachment?.objectId == "wide" }?.reference.name)
        #expect(warnings.contains { $0.sourceId == "wide" && $0.detail == #"file '\#(name)' (field photo): attached to its record on local, it is reachable as the record is; its own ACL {"boss":{"read":true,"write":true}} is not kept"# },
                "\(warnings)")
        #expect(report.problems.contains(where: said), "\(report.problems)")

        // Attachments with their record's ACL (as Local gives one uploaded without its own): nothing is lost or said.
        let plain = try openLocal(scratch.path("s2.db"))
        _ = try await plain.importUser(DirectoryUser(id: "boss", username: "boss"), password: .unusable)
        _ = try await plain.create(Record(className: "Note", id: "p", acl: .privateTo("boss"), fields: ["text": "p"]))
        _ = try await plain.upload(FileUpload(name: "p.txt", source: .data(Data("p".utf8)),
                                              attachment: FileAttachment(className: "Note", objectId: "p", field: "photo")))
        let other = try openLocal(scratch.path("t2.db"))
        let quiet = try await migrate(plain, FlakyBackend(other, seed: 0, rate: 0, without: [.attachmentACL]), state: scratch.path("state2"),
                                      options: MigrationOptions(classes: ["Note"]))
        #expect(quiet.ok && quiet.files.written == 1, "\(quiet.files) \(quiet.mismatches)")
        #expect(quiet.warnings.filter { $0.kind == "acl" }.isEmpty && !quiet.problems.contains(where: said), "\(quiet.warnings) \(quiet.problems)")
        await other.close()
        await plain.close()
        await local.close()
        await source.close()
    }

    @Test("an attachment with an ACL of its own on the source keeps it on a target whose attachments have ACLs; a store that does not list its files' ACLs is said in the plan, and its files are not compared by ACL")
    func attachmentsAndUnlistedFileACLs() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try await sourceWithOwnAttachment(scratch)
        _ = try await source.upload(FileUpload(name: "loose.txt", source: .data(Data("loose".utf8)), acl: .privateTo("boss")))
        let local = try openLocal(scratch.path("t.db"))
        let report = try await migrate(source, local, state: scratch.path("state"), options: MigrationOptions(classes: ["Note"]))
        #expect(report.ok && report.files.written == 2, "\(report.files) \(report.mismatches)")
        let attached = try #require(try await local.listFiles(prefix: nil, limit: nil).first { $0.reference.attachment?.field == "photo" })
        #expect(attached.acl == .privateTo("boss"), "\(String(describing: attached.acl))")
        #expect(report.warnings.filter { $0.kind == "acl" }.isEmpty, "\(report.warnings)")

        // A source that keeps file ACLs but neither lists nor reads them: the plan says the files go without them.
        let unlisting = FlakyBackend(source, seed: 0, rate: 0, without: [.fileACLListing, .fileACLRead])
        let plan = try await Migration(source: unlisting, target: local, options: MigrationOptions(classes: ["Note"], dryRun: true), state: nil).run()
        #expect(plan.plan?.unsupported.contains { $0.hasPrefix("file ACLs: local does not list its files' ACLs") } == true, "\(plan.plan?.unsupported ?? [])")
        // A target that does not list them: its files are not compared by ACL, so a copy that lost its ACL passes
        // (what the capability declares: nothing to read it from), rather than every file failing.
        try await local.deleteFile(FileReference(name: "loose.txt"))
        _ = try await local.upload(FileUpload(name: "loose.txt", source: .data(Data("loose".utf8))))
        let listing = try await reverify(source, local, state: scratch.path("state"), options: MigrationOptions(classes: ["Note"]))
        #expect(!listing.ok && listing.mismatches.contains { $0.sourceId == "loose.txt" && $0.detail.contains("ACL none, expected") }, "\(listing.mismatches)")
        let unlisted = try await reverify(source, FlakyBackend(local, seed: 0, rate: 0, without: [.fileACLListing]), state: scratch.path("state"),
                                          options: MigrationOptions(classes: ["Note"]))
        #expect(unlisted.files.mismatched == 0 && !unlisted.mismatches.contains { $0.detail.contains("ACL") }, "\(unlisted.mismatches)")
        await local.close()
        await source.close()
    }

    @Test("a source that reads its files' ACLs one by one (fileACLRead, as Kii) hands them over: standalone and linked files keep them, verification compares them, and a file whose ACL cannot be read is not uploaded")
    func filesWithACLsReadOneByOne() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let inner = try openLocal(scratch.path("s.db"))
        _ = try await inner.importUser(DirectoryUser(id: "boss", username: "boss"), password: .unusable)
        _ = try await inner.upload(FileUpload(name: "loose.txt", source: .data(Data("loose".utf8)), acl: .privateTo("boss")))
        _ = try await inner.upload(FileUpload(name: "linked.png", source: .data(Data("linked".utf8)), acl: .privateTo("boss")))
        _ = try await inner.upload(FileUpload(name: "open.txt", source: .data(Data("open".utf8))))
        _ = try await inner.create(Record(className: "Note", id: "n", acl: .publicReadWrite, fields: ["photo": .file(FileReference(name: "linked.png"))]))
        // The list carries no ACLs: without the reads, the private files would land open to everyone.
        let source = FlakyBackend(inner, seed: 0, rate: 0, without: [.fileACLListing])
        let planned = try openLocal(scratch.path("plan.db"))
        let plan = try await Migration(source: source, target: planned, options: MigrationOptions(dryRun: true), state: nil).run()
        #expect(plan.plan?.unsupported.contains { $0.hasPrefix("file ACLs:") } == false, "\(plan.plan?.unsupported ?? [])")
        await planned.close()

        // Into a plain file store (File values copied before their records) and into one that attaches them.
        for plain in [true, false] {
            let local = try openLocal(scratch.path("t\(plain).db"))
            let target = FlakyBackend(local, seed: 0, rate: 0, plainFileStore: plain)
            let report = try await migrate(source, target, state: scratch.path("state\(plain)"))
            #expect(report.ok && report.files.written == 3 && report.files.verified == 3, "\(report.files) \(report.mismatches)")
            let stored = Dictionary(try await local.listFiles(prefix: nil, limit: nil).map { ($0.reference.name, $0.acl) }, uniquingKeysWith: { a, _ in a })
            #expect(stored["loose.txt"] == .some(.privateTo("boss")), "plain \(plain): \(stored)")
            // Attached, it is stored under its record's path (`Note/<id>/photo/linked.png`).
            let linked = stored.filter { $0.key.hasSuffix("linked.png") }
            #expect(linked.count == 1 && linked.first?.value == .some(.privateTo("boss")), "plain \(plain): \(stored)")
            #expect(report.warnings.filter { $0.kind == "acl" }.isEmpty, "\(report.warnings)")
            // Verification reads them too: a copy that lost its ACL is a mismatch.
            _ = try await local.repairFileACL(name: "loose.txt", acl: .publicReadWrite)
            let again = try await reverify(source, target, state: scratch.path("state\(plain)"))
            #expect(!again.ok && again.mismatches.contains { $0.sourceId == "loose.txt" && $0.detail.contains("ACL") }, "\(again.mismatches)")
            // A file whose ACL cannot be read is that file's mismatch, counted once; the others are compared.
            let unreadable = FlakyBackend(inner, seed: 0, rate: 0, without: [.fileACLListing],
                                          fileACLFault: { $0 == "open.txt" ? MBaaSError(.forbidden, "ACL read denied") : nil })
            let partly = try await reverify(unreadable, target, state: scratch.path("state\(plain)"))
            #expect(partly.mismatches.contains { $0.sourceId == "open.txt" && $0.detail.contains("ACL read denied") }, "\(partly.mismatches)")
            #expect(partly.files.mismatched == 2 && partly.files.verified == 1, "plain \(plain): \(partly.files) \(partly.mismatches)")
            await local.close()
        }
        // Three per copy, three per verification, three per re-verification, in each of the two runs.
        #expect(source.fileACLReads >= 18, "\(source.fileACLReads)")

        // A file whose ACL cannot be read is not uploaded (without it, it would be open to everyone); the record
        // linking it is not written; the run goes on, says so, and the same command moves them once it can be read.
        let denied = MBaaSError(.forbidden, "ACL read denied")
        let failing = FlakyBackend(inner, seed: 0, rate: 0, without: [.fileACLListing], fileACLFault: { $0 == "open.txt" ? nil : denied })
        let local = try openLocal(scratch.path("failing.db"))
        let target = FlakyBackend(local, seed: 0, rate: 0, plainFileStore: true)
        let first = try await migrate(failing, target, state: scratch.path("failing"))
        #expect(!first.ok && first.files.failed == 2 && first.files.written == 1, "\(first.files) \(first.mismatches)")
        #expect(first.mismatches.contains { $0.sourceId == "loose.txt" && $0.detail.contains("for its ACL") && $0.detail.contains("ACL read denied") },
                "\(first.mismatches)")
        #expect(first.mismatches.contains { $0.sourceId == "n" && $0.detail.contains("linked.png") }, "\(first.mismatches)")
        #expect(Set(target.uploadAttempts) == ["open.txt"], "\(target.uploadAttempts)")
        let second = try await migrate(source, target, state: scratch.path("failing"))
        #expect(second.ok && second.files.written == 2, "\(second.files) \(second.mismatches)")
        #expect(try await local.fileACL(FileReference(name: "loose.txt")) == .privateTo("boss"))
        await local.close()
        await inner.close()
    }

    @Test("a source whose records are read without their ACL (aclRead, as Kii) has each record's read apart: the copy carries it, verification compares it, and a record whose ACL cannot be read is not written")
    func recordACLsReadApart() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let inner = try openLocal(scratch.path("s.db"))
        _ = try await inner.importUser(DirectoryUser(id: "boss", username: "boss"), password: .unusable)
        let readOnly = ACL([.everyone: .read, .user("boss"): .readWrite])
        _ = try await inner.create(Record(className: "Note", id: "a", acl: .privateTo("boss"), fields: ["t": "a"]))
        _ = try await inner.create(Record(className: "Note", id: "b", acl: readOnly, fields: ["t": "b"]))
        _ = try await inner.create(Record(className: "Note", id: "c", acl: .publicReadWrite, fields: ["t": "c"]))
        let source = FlakyBackend(inner, seed: 0, rate: 0, readsACLsApart: true)
        #expect(try await source.get(className: "Note", id: "a").acl == nil)

        let planned = try openLocal(scratch.path("plan.db"))
        let plan = try await Migration(source: source, target: planned, options: MigrationOptions(classes: ["Note"], dryRun: true), state: nil).run()
        #expect(plan.plan?.conversions.contains { $0.hasPrefix("ACLs: local reads records without their ACLs") } == true, "\(plan.plan?.conversions ?? [])")
        let silent = FlakyBackend(inner, seed: 0, rate: 0, without: [.acl])
        let unsaid = try await Migration(source: silent, target: planned, options: MigrationOptions(classes: ["Note"], dryRun: true), state: nil).run()
        // A source that enforces no ACLs may still give them with its records (an NCMB export does): nothing is read
        // apart, and nothing is said.
        #expect(unsaid.plan?.unsupported.contains { $0.hasPrefix("ACLs:") } == false, "\(unsaid.plan?.unsupported ?? [])")
        #expect(unsaid.plan?.conversions.contains { $0.contains("read apart") } == false, "\(unsaid.plan?.conversions ?? [])")
        await planned.close()

        let target = try openLocal(scratch.path("t.db"))
        let report = try await migrate(source, target, state: scratch.path("state"), options: MigrationOptions(classes: ["Note"]))
        let notes = try #require(report.classes.first { $0.source == "Note" })
        #expect(report.ok && notes.written == 3 && notes.verified == 3, "\(report.classes) \(report.mismatches)")
        #expect(try await target.get(className: "Note", id: "a").acl == .privateTo("boss"))
        #expect(try await target.get(className: "Note", id: "b").acl == readOnly)
        #expect(try await target.get(className: "Note", id: "c").acl == .publicReadWrite)
        #expect(source.recordACLReads >= 6, "copy and verification: \(source.recordACLReads)")
        // Verification compares what it reads: a record whose ACL changed on the target is a mismatch.
        _ = try await target.update(className: "Note", id: "a", RecordUpdate(acl: .publicReadWrite))
        let changed = try await reverify(source, target, state: scratch.path("state"), options: MigrationOptions(classes: ["Note"]))
        #expect(!changed.ok && changed.mismatches.map(\.sourceId) == ["a"], "\(changed.mismatches)")
        await target.close()

        // A record whose ACL cannot be read is not written (it would get the target's default, open to everyone); the
        // others are, and the same command writes it once its ACL can be read.
        let denied = MBaaSError(.forbidden, "ACL read denied")
        let failing = FlakyBackend(inner, seed: 0, rate: 0, readsACLsApart: true, recordACLFault: { $0 == "b" ? denied : nil })
        let second = try openLocal(scratch.path("t2.db"))
        let one = MigrationOptions(classes: ["Note"], batchSize: 1, concurrency: 1)
        // The three in one batch: the refusal fails b alone (the batch is read again record by record).
        let first = try await migrate(failing, second, state: scratch.path("state2"), options: MigrationOptions(classes: ["Note"]))
        let firstNotes = try #require(first.classes.first { $0.source == "Note" })
        #expect(!first.ok && firstNotes.written == 2 && firstNotes.failed == 1, "\(first.classes)")
        #expect(first.mismatches.contains { $0.sourceId == "b" && $0.kind == "failed" && $0.detail.contains("ACL read denied") }, "\(first.mismatches)")
        #expect(try await second.count(Query("Note")) == 2)
        let again = try await migrate(source, second, state: scratch.path("state2"), options: one)
        #expect(again.ok && again.classes.first { $0.source == "Note" }?.written == 1, "\(again.classes) \(again.mismatches)")
        #expect(try await second.get(className: "Note", id: "b").acl == readOnly)
        await second.close()
        await inner.close()
    }

    @Test("a record left in flight whose ACL cannot be read keeps a mark of its own: the next run finds it on the target, not writing it twice")
    func inFlightRecordWithUnreadableACL() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let inner = try openLocal(scratch.path("s.db"))
        for id in ["a", "b", "c"] { _ = try await inner.create(Record(className: "Note", id: id, acl: .publicReadWrite, fields: ["t": .string(id)])) }
        let local = try openLocal(scratch.path("t.db"))
        let target = FlakyBackend(local, seed: 0, rate: 0)   // ids are not kept: only the look-up keeps b from being written twice
        // A run that recorded a, wrote b to the target, and died before recording it.
        do {
            let state = try MigrationState(directory: scratch.path("state"))
            try state.recordWritten(.record, className: "Note", [.init(sourceId: "a", targetId: "other-a", fixups: nil, attachments: [])])
            _ = try state.beginWrites(.record, className: "Note", sourceIds: ["b"])   // a batch's mark, as a run leaves it
        }
        _ = try await local.create(Record(className: "Note", id: "other-a", acl: .publicReadWrite, fields: ["t": "a", "sourceObjectId": "a"]))
        _ = try await local.create(Record(className: "Note", id: "other-b", acl: .publicReadWrite, fields: ["t": "b", "sourceObjectId": "b"]))
        let options = MigrationOptions(classes: ["Note"], mapping: MigrationMapping(keepSourceTimestamps: false), batchSize: 1, concurrency: 1)
        let failing = FlakyBackend(inner, seed: 0, rate: 0, readsACLsApart: true,
                                   recordACLFault: { $0 == "b" ? MBaaSError(.forbidden, "ACL read denied") : nil })
        let first = try await migrate(failing, target, state: scratch.path("state"), options: options)
        #expect(first.classes.first?.failed == 1 && first.classes.first?.written == 1, "\(first.classes)")
        let second = try await migrate(FlakyBackend(inner, seed: 0, rate: 0, readsACLsApart: true), target, state: scratch.path("state"), options: options)
        #expect(second.ok, "\(second.mismatches)")
        let b = try await local.queryPage(Query("Note", predicate: .compare("sourceObjectId", .eq, "b"))).records
        #expect(b.map(\.id) == ["other-b"], "b is on the target once: \(b.map(\.id))")
        #expect(try await local.count(Query("Note")) == 3)
        await local.close()
        await inner.close()
    }

    @Test("file copies follow fileConcurrency, record batches concurrency (mbaas export: batches one at a time, files four at a time)")
    func fileConcurrency() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("source.db"))
        for name in ["d.png", "e.png", "f.png", "g.png"] { _ = try await source.upload(FileUpload(name: name, source: .data(Data(name.utf8)))) }
        for i in 0..<4 { _ = try await source.create(Record(className: "Memo", id: "m\(i)", fields: ["photo": .file(FileReference(name: "h\(i).png"))])) }
        for i in 0..<4 { _ = try await source.upload(FileUpload(name: "h\(i).png", source: .data(Data("h\(i)".utf8)))) }
        for (files, most) in [(nil as Int?, 1...1), (4, 2...4)] {
            let inner = try openLocal(scratch.path("target\(files ?? 0).db"))
            let target = FlakyBackend(inner, seed: 0, rate: 0, plainFileStore: true, uploadDelay: .milliseconds(100))
            // One record a batch: the four linked files come one batch at a time, so only the standalone files can overlap.
            let options = MigrationOptions(batchSize: 1, concurrency: 1, fileConcurrency: files)
            let report = try await migrate(source, target, state: scratch.path("state\(files ?? 0)"), options: options)
            #expect(report.ok && report.files.written == 8 && report.files.verified == 8, "\(report.files) \(report.mismatches)")
            #expect(most.contains(target.maxUploadsInFlight), "fileConcurrency \(String(describing: files)): \(target.maxUploadsInFlight) uploads at once")
            await inner.close()
        }
        await source.close()
    }

    @Test("files open to everyone lose nothing on a store without file ACLs: neither the plan nor the report says so")
    func openFilesWithoutFileACLs() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("s.db"))
        _ = try await source.upload(FileUpload(name: "open.txt", source: .data(Data("open".utf8)), acl: .publicReadWrite))
        _ = try await source.create(Record(className: "Note", fields: ["text": "n"]))
        let local = try openLocal(scratch.path("t.db"))
        let target = FlakyBackend(local, seed: 0, rate: 0, refusesFileACLs: true)
        let plan = try await Migration(source: source, target: target, options: MigrationOptions(classes: ["Note"], dryRun: true), state: nil).run()
        #expect(!(plan.plan?.unsupported ?? []).contains { $0.hasPrefix("file ACLs:") }, "\(plan.plan?.unsupported ?? [])")
        let report = try await migrate(source, target, state: scratch.path("state"), options: MigrationOptions(classes: ["Note"]))
        #expect(report.ok && report.files.written == 1 && report.files.verified == 1, "\(report.files) \(report.mismatches)")
        #expect(!report.problems.contains { $0.hasPrefix("file ACLs:") } && report.warnings.isEmpty, "\(report.problems) \(report.warnings)")
        await local.close()
        await source.close()
    }

    @Test("verification compares a file's ACL where both stores keep them: a file on the target without its ACL (as an earlier version copied linked files) is a mismatch, named, until it is fixed")
    func fileACLsVerified() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("s.db"))
        _ = try await source.importUser(DirectoryUser(id: "boss", username: "boss"), password: .unusable)
        let grants = ACL([.user("boss"): .readWrite, .everyone: .read])
        for (name, acl) in [("linked.txt", grants), ("loose.txt", ACL.privateTo("boss")), ("plain.txt", nil)] {
            _ = try await source.upload(FileUpload(name: name, source: .data(Data(name.utf8)), contentType: "text/plain", acl: acl))
        }
        _ = try await source.create(Record(className: "Note", id: "n", fields: ["photo": .file(FileReference(name: "linked.txt"))]))
        let local = try openLocal(scratch.path("t.db"))
        let target = FlakyBackend(local, seed: 0, rate: 0, plainFileStore: true)
        let first = try await migrate(source, target, state: scratch.path("state"), options: MigrationOptions(classes: ["Note"]))
        #expect(first.ok && first.files.verified == 3 && first.files.mismatched == 0, "\(first.files) \(first.mismatches)")
        let bossOnTarget = try #require(first.userOutcomes.first { $0.sourceId == "boss" }?.targetId)
        let verify = { () async throws -> MigrationReport in
            try await reverify(source, target, state: scratch.path("state"), options: MigrationOptions(classes: ["Note"]))
        }
        // The target's copies lose their ACLs: the linked one without any, the loose one opened to everyone.
        for (name, acl) in [("linked.txt", nil as ACL?), ("loose.txt", ACL.publicReadWrite)] {
            try await local.deleteFile(FileReference(name: name))
            _ = try await local.upload(FileUpload(name: name, source: .data(Data(name.utf8)), contentType: "text/plain", acl: acl))
        }
        let broken = try await verify()
        #expect(!broken.ok && broken.files.verified == 1 && broken.files.mismatched == 2, "\(broken.files) \(broken.mismatches)")
        let expectedLinked = ACL([.user(bossOnTarget): .readWrite, .everyone: .read]).json.printed([.sortedKeys])
        #expect(broken.mismatches.contains { $0.kind == "file" && $0.sourceId == "linked.txt" && $0.detail == "file linked.txt: ACL none, expected \(expectedLinked)" },
                "\(broken.mismatches)")
        #expect(broken.mismatches.contains { $0.sourceId == "loose.txt" && $0.detail.contains(#"ACL {"*":{"read":true,"write":true}}, expected"#) },
                "\(broken.mismatches)")
        // Put right on the target, both verify again.
        for (name, acl) in [("linked.txt", ACL([.user(bossOnTarget): .readWrite, .everyone: .read])), ("loose.txt", ACL.privateTo(bossOnTarget))] {
            try await local.deleteFile(FileReference(name: name))
            _ = try await local.upload(FileUpload(name: name, source: .data(Data(name.utf8)), contentType: "text/plain", acl: acl))
        }
        let fixed = try await verify()
        #expect(fixed.ok && fixed.files.verified == 3 && fixed.files.mismatched == 0, "\(fixed.files) \(fixed.mismatches)")
        await local.close()
        await source.close()
    }

    @Test("a linked file whose ACL cannot be found (the source does not list it) is not uploaded open: it and its records fail alone")
    func unlistedLinkedFile() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let inner = try openLocal(scratch.path("s.db"))
        _ = try await inner.upload(FileUpload(name: "hidden.txt", source: .data(Data("h".utf8)), acl: .privateTo("nobody")))
        _ = try await inner.upload(FileUpload(name: "shown.txt", source: .data(Data("s".utf8)), acl: .publicReadWrite))
        _ = try await inner.create(Record(className: "Note", id: "h", fields: ["photo": .file(FileReference(name: "hidden.txt"))]))
        _ = try await inner.create(Record(className: "Note", id: "s", fields: ["photo": .file(FileReference(name: "shown.txt"))]))
        let source = FlakyBackend(inner, seed: 0, rate: 0, hidesFromList: { $0 == "hidden.txt" })
        let local = try openLocal(scratch.path("t.db"))
        let target = FlakyBackend(local, seed: 0, rate: 0, plainFileStore: true)
        let report = try await migrate(source, target, state: scratch.path("state"), options: MigrationOptions(classes: ["Note"]))
        let note = try #require(report.classes.first { $0.source == "Note" })
        #expect(note.written == 1 && note.failed == 1 && report.files.failed == 1, "\(note) \(report.files)")
        #expect(report.mismatches.contains { $0.sourceId == "h" && $0.detail.contains("file 'hidden.txt' (field photo) could not be copied")
            && $0.detail.contains("does not list the file, so its ACL is unknown") }, "\(report.mismatches)")
        #expect(target.uploadAttempts == ["shown.txt"], "\(target.uploadAttempts)")
        #expect(try await local.listFiles(prefix: nil, limit: nil).map(\.reference.name) == ["shown.txt"])
        await local.close()
        await inner.close()
    }

    @Test("a file the target refuses fails alone: the records linking it are not written and are named, the run goes on, and a later run moves them")
    func refusedFiles() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("s.db"))
        _ = try await source.importUser(DirectoryUser(id: "boss", username: "boss"), password: .unusable)
        for name in ["good.png", "bad.png", "loose.txt", "bad-loose.txt", "shared.txt"] {
            _ = try await source.upload(FileUpload(name: name, source: .data(Data(name.utf8)), contentType: "text/plain",
                                                   acl: name == "shared.txt" ? ACL([.role("staff"): .read]) : nil))
        }
        _ = try await source.create(Record(className: "Note", id: "n1", fields: ["photo": .file(FileReference(name: "good.png"))]))
        _ = try await source.create(Record(className: "Note", id: "n2", fields: ["photo": .file(FileReference(name: "bad.png"))]))
        _ = try await source.create(Record(className: "Note", id: "n3", fields: ["photo": .file(FileReference(name: "bad.png")), "n": 3]))
        _ = try await source.create(Record(className: "Note", id: "n4", fields: ["text": "no file"]))
        let local = try openLocal(scratch.path("t.db"))
        // Names starting with "bad" are refused as unsupported; so is a role grant on a file (the rule narrows it).
        // A plain file store: files are copied before the records that hold them (with attachments, the record is
        // written first and its attachment fails on its own, as `attach` reports).
        let refusing = FlakyBackend(local, seed: 0, rate: 0, plainFileStore: true, narrow: { acl in acl.entries.keys.contains { if case .role = $0 { true } else { false } } ? ACL() : nil },
                                    refusesFileName: { $0.hasPrefix("bad") })
        // One batch at a time: a second batch linking bad.png comes after its copy failed, and must not try again.
        let options = MigrationOptions(classes: ["Note"], batchSize: 1, concurrency: 1)
        for run in 1...2 {
            let report = try await migrate(source, refusing, state: scratch.path("state"), options: options)
            #expect(refusing.uploadAttempts.count { $0 == "bad.png" } == run, "run \(run): \(refusing.uploadAttempts)")
            let note = try #require(report.classes.first { $0.source == "Note" })
            #expect(note.written == (run == 1 ? 2 : 0) && note.skipped == (run == 1 ? 0 : 2) && note.failed == 2, "run \(run): \(note)")
            // bad.png once (not once per record or batch), bad-loose.txt, and shared.txt's role grant.
            #expect(report.files.failed == 3, "run \(run): \(report.files) \(report.mismatches)")
            let failures = report.mismatches.filter { $0.kind == "failed" }
            for id in ["n2", "n3"] {
                #expect(failures.contains { $0.sourceId == id && $0.detail.hasPrefix("file 'bad.png' (field photo) could not be copied, so the record was not written:")
                    && $0.detail.contains("the file name 'bad.png'") }, "run \(run) \(id): \(failures)")
            }
            #expect(failures.contains { $0.sourceId == "bad-loose.txt" && $0.detail.contains("the file name 'bad-loose.txt'") }, "\(failures)")
            #expect(failures.contains { $0.sourceId == "shared.txt" && $0.detail.contains("it narrows ACLs") }, "\(failures)")
            #expect(!report.ok)
        }
        // Nothing reached the target half-written: no record links a file the store lacks, no file lost its ACL.
        func stored(_ id: String) async throws -> Record {
            try #require(try await local.queryPage(Query("Note", predicate: .compare("sourceObjectId", .eq, .string(id)))).records.first)
        }
        #expect(try await stored("n1").fields["photo"]?.fileValue?.name == "good.png")
        #expect(try await local.count(Query("Note")) == 2)
        #expect(try await local.listFiles(prefix: nil, limit: nil).map(\.reference.name).sorted() == ["good.png", "loose.txt"])
        // The target now takes them: the same command moves what failed, and everything verifies.
        let report = try await migrate(source, FlakyBackend(local, seed: 0, rate: 0, plainFileStore: true), state: scratch.path("state"), options: options)
        let note = try #require(report.classes.first { $0.source == "Note" })
        #expect(note.written == 2 && note.failed == 0 && note.verified == 4 && report.files.failed == 0, "\(note) \(report.files) \(report.mismatches)")
        #expect(report.ok, "\(report.mismatches)")
        #expect(try await local.download(try #require(try await stored("n3").fields["photo"]?.fileValue)) == Data("bad.png".utf8))
        #expect(try await local.listFiles(prefix: "shared", limit: nil).first?.acl == ACL([.role("staff"): .read]))
        await local.close()
        await source.close()
    }

    @Test("on a target that keeps no user fields, users an interrupted run imported are matched by name, with a warning, not imported twice")
    func resumeUsersWithoutFields() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = try scratch.sampleExport()
        try writeUsers(5, into: export)
        func id(_ i: Int) -> String { String(format: "u%015d", i) }
        let local = try openLocal(scratch.path("t.db"))
        let target = FlakyBackend(local, seed: 0, rate: 0, without: [.userFields])
        // An earlier run marked user1 and user2 pending and created them, without their source id, before it died.
        do {
            let state = try MigrationState(directory: scratch.path("state"))
            try state.addPending(.user, className: "_User", sourceIds: [id(1), id(2)])
        }
        for i in [1, 2] {
            _ = try await local.importUser(DirectoryUser(id: "t\(i)", username: "user\(i)", email: "user\(i)@example.com"), password: .unusable)
        }
        let options = MigrationOptions(classes: ["Category"], files: false)
        let report = try await migrate(NCMBExportBackend(directory: export), target, state: scratch.path("state"), options: options)
        #expect(report.users.written == 3 && report.users.skipped == 2 && report.users.failed == 0 && report.users.verified == 5,
                "\(report.users) \(report.mismatches)")
        #expect(report.warnings.filter { $0.kind == "user" }.map(\.sourceId) == [id(1), id(2)], "\(report.warnings)")
        #expect(try await local.listUsers(after: nil, limit: 100).users.count == 5)
        let state = try MigrationState(directory: scratch.path("state"))
        #expect(try state.targetId(.user, className: "_User", sourceId: id(1)) == "t1")
        #expect(try state.pending(.user, className: "_User").isEmpty)
        await local.close()
    }

    @Test("a source that lists a user twice, far apart: imported once, and both listings verified against it")
    func userListedTwice() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = try scratch.sampleExport()
        try writeUsers(600, into: export)
        // The export lists user0 again at its end, in another group of verification than the first listing.
        let url = export.appendingPathComponent("user.json")
        var users = try #require(JSON.parse(Data(contentsOf: url))["results"]?.arrayValue)
        users.append(users[0])
        try JSON.object(["results": .array(users)]).printed().write(to: url, atomically: true, encoding: .utf8)
        let local = try openLocal(scratch.path("t.db"))
        let report = try await migrate(NCMBExportBackend(directory: export), local, state: scratch.path("state"),
                                       options: MigrationOptions(classes: ["Category"], files: false))
        #expect(report.users.read == 601 && report.users.written == 600 && report.users.skipped == 1, "\(report.users)")
        #expect(report.users.verified == 601 && report.users.mismatched == 0, "\(report.mismatches.prefix(3))")
        #expect(try await local.listUsers(after: nil, limit: 1000).users.count == 600)
        await local.close()
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
        let target = FlakyBackend(local, seed: 0, rate: 0)   // no faults; ids are not kept, as on most servers
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
        var report = try await migrate(source, FlakyBackend(first, seed: 0, rate: 100, afterOnly: true), state: scratch.path("s1"), options: options)
        var memo = try #require(report.classes.first)
        #expect(memo.written == 6 && memo.failed == 0, "\(memo) \(report.mismatches)")
        #expect(try await first.count(Query("Memo")) == 7)

        // The target cannot be asked either: the six are failed, and stay marked in flight.
        let second = try openLocal(scratch.path("t2.db"))
        try await premapped("s2", second)
        let blind = FlakyBackend(second, seed: 0, rate: 100, afterOnly: true)
        blind.queriesFail = true
        report = try await migrate(source, blind, state: scratch.path("s2"), options: options)
        memo = try #require(report.classes.first)
        #expect(memo.written == 0 && memo.failed == 6)
        #expect(try MigrationState(directory: scratch.path("s2")).pending(.record, className: "Memo").sorted() == (0..<6).map { "m\($0)" })
        // The next run finds them on the target: nothing is written twice.
        report = try await migrate(source, FlakyBackend(second, seed: 0, rate: 0), state: scratch.path("s2"),
                                   options: MigrationOptions(mapping: MigrationMapping(keepSourceTimestamps: false), users: false, files: false))
        memo = try #require(report.classes.first)
        #expect(try await second.count(Query("Memo")) == 7)
        #expect(memo.written == 0 && memo.skipped == 7 && memo.failed == 0 && memo.verified == 7 && memo.mismatched == 0, "\(report.mismatches)")
        await first.close()
        await second.close()
        await source.close()
    }
}

/// A thread-safe call counter for test doubles.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    /// Counts one more call and returns the count.
    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        value += 1
        return value
    }
}

/// Wraps a backend and fails some writes: before writing (503, 429 with Retry-After) and after writing (a reset
/// whose write happened), deterministically for a seed.
final class FlakyBackend: Backend, @unchecked Sendable {
    let inner: any Backend
    private let lock = NSLock()
    private var rng: UInt64
    private(set) var injected = 0

    let rate: UInt64

    /// Errors given instead of importing or finding a user, by user name (`nil`: none).
    let userFault: @Sendable (String) -> MBaaSError?
    let findUserFault: @Sendable (String) -> MBaaSError?

    /// Every injected fault comes after the write happened (a lost response).
    let afterOnly: Bool
    /// Without ``Capabilities/Feature/fileAttachment``: files go to the file store (names unique there) and records
    /// hold File values, as on NCMB or Parse.
    let plainFileStore: Bool
    /// How long each upload takes before it reaches the inner store.
    let uploadDelay: Duration
    /// The names of the uploads that reached the inner store, in order.
    var uploadedNames: [String] { lock.withLock { uploaded } }
    private var uploaded: [String] = []
    /// The names of every upload asked for, refused or not, in order.
    var uploadAttempts: [String] { lock.withLock { attempted } }
    private var attempted: [String] = []
    /// How many files' ACLs were read one by one (``fileACL(_:)``).
    var fileACLReads: Int { lock.withLock { aclReads } }
    private var aclReads = 0
    /// The most uploads that were under way at one moment.
    var maxUploadsInFlight: Int { lock.withLock { mostInFlight } }
    private var inFlight = 0
    private var mostInFlight = 0
    /// Queries fail with a 503 while set.
    var queriesFail: Bool {
        get { lock.withLock { failQueries } }
        set { lock.withLock { failQueries = newValue } }
    }
    private var failQueries = false

    /// `rate`: percent of writes that fail (half before, half after the write; all after with `afterOnly`).
    /// Features taken away from the inner backend's.
    let without: Set<Capabilities.Feature>
    /// Features added to the inner backend's (declared only: as a limit such as `emptyStringsAbsent`).
    let adding: Set<Capabilities.Feature>
    /// With a rule, the backend declares ``Capabilities/Feature/aclNarrowing``: an ACL the rule narrows (a non-nil
    /// answer) is refused on writes as `unsupported`, and ``narrowedACL(_:)`` answers the rule's ACL.
    let narrow: (@Sendable (ACL) -> ACL?)?
    /// Without ``Capabilities/Feature/fileACL``: uploads carrying an ACL are `unsupported`, as on a store whose files
    /// have no ACLs of their own.
    let refusesFileACLs: Bool
    /// File names the store refuses as `unsupported`, as NCMB's file store refuses full-width names.
    let refusesFileName: @Sendable (String) -> Bool
    /// File names its file list leaves out (as a source: a linked file whose ACL cannot be found).
    let hidesFromList: @Sendable (String) -> Bool
    /// Errors given instead of a file's ACL read on its own, by file name (`nil`: none).
    let fileACLFault: @Sendable (String) -> MBaaSError?
    /// As Kii: records are read without their ACL (no ``Capabilities/Feature/acl``), which
    /// ``recordACLs(className:ids:)`` reads apart (``Capabilities/Feature/aclRead``); the fault, by record id, fails
    /// the whole call.
    let readsACLsApart: Bool
    let recordACLFault: @Sendable (String) -> MBaaSError?

    init(_ inner: any Backend, seed: UInt64, rate: UInt64 = 10, afterOnly: Bool = false, plainFileStore: Bool = false,
         uploadDelay: Duration = .zero, without: Set<Capabilities.Feature> = [], adding: Set<Capabilities.Feature> = [], narrow: (@Sendable (ACL) -> ACL?)? = nil, refusesFileACLs: Bool = false,
         refusesFileName: @escaping @Sendable (String) -> Bool = { _ in false },
         hidesFromList: @escaping @Sendable (String) -> Bool = { _ in false },
         fileACLFault: @escaping @Sendable (String) -> MBaaSError? = { _ in nil },
         readsACLsApart: Bool = false, recordACLFault: @escaping @Sendable (String) -> MBaaSError? = { _ in nil },
         userFault: @escaping @Sendable (String) -> MBaaSError? = { _ in nil },
         findUserFault: @escaping @Sendable (String) -> MBaaSError? = { _ in nil }) {
        self.inner = inner
        rng = seed
        self.rate = rate
        self.afterOnly = afterOnly
        self.plainFileStore = plainFileStore
        self.uploadDelay = uploadDelay
        self.without = without
        self.adding = adding
        self.narrow = narrow
        self.refusesFileACLs = refusesFileACLs
        self.refusesFileName = refusesFileName
        self.hidesFromList = hidesFromList
        self.fileACLFault = fileACLFault
        self.readsACLsApart = readsACLsApart
        self.recordACLFault = recordACLFault
        self.userFault = userFault
        self.findUserFault = findUserFault
    }

    var adapterName: String { inner.adapterName }
    /// Without ``Capabilities/Feature/clientIds``: a second create is not refused as a duplicate id, so only the
    /// migration's look-up by `sourceObjectId` keeps writes from being duplicated.
    var capabilities: Capabilities {
        var c = inner.capabilities
        c.features.remove(.clientIds)
        if plainFileStore { c.features.remove(.fileAttachment) }
        c.features.subtract(without)
        c.features.formUnion(adding)
        if narrow != nil { c.features.insert(.aclNarrowing) }
        if refusesFileACLs { c.features.remove(.fileACL) }
        if readsACLsApart {
            c.features.remove(.acl)
            c.features.insert(.aclRead)
        }
        return c
    }

    /// How many records' ACLs were read apart (``recordACLs(className:ids:)``).
    var recordACLReads: Int { lock.withLock { recordReads } }
    private var recordReads = 0
    func recordACLs(className: String, ids: [String]) async throws -> [String: ACL] {
        guard readsACLsApart else { return try await inner.recordACLs(className: className, ids: ids) }
        for id in ids { if let fault = recordACLFault(id) { throw fault } }
        lock.withLock { recordReads += ids.count }
        var out: [String: ACL] = [:]
        for id in ids {
            guard let r = try? await inner.get(className: className, id: id) else { continue }
            out[id] = r.acl ?? .publicReadWrite
        }
        return out
    }

    func narrowedACL(_ acl: ACL) async throws -> ACL { narrow?(acl) ?? acl }
    func preflight(className: String, records: [Record]) async throws { try await inner.preflight(className: className, records: records) }

    /// Refuses an ACL the narrowing rule would change, as a backend that cannot store it does.
    private func checkStorable(_ acl: ACL?) throws {
        if let acl, let narrow, narrow(acl) != nil {
            throw MBaaSError.unsupported("the ACL \(acl.json.printed())", by: "flaky", reason: "it narrows ACLs")
        }
    }

    /// 0 none, 1 fail before, 2 fail after.
    private func roll() -> Int {
        lock.lock()
        defer { lock.unlock() }
        rng = rng &* 6364136223846793005 &+ 1442695040888963407
        let r = (rng >> 33) % 100
        if r < rate / 2 { injected += 1; return afterOnly ? 2 : 1 }
        if r < rate { injected += 1; return 2 }
        return 0
    }

    private func faulty<T>(_ body: () async throws -> T) async throws -> T {
        switch roll() {
        case 1: throw Bool.random() ? MBaaSError(.unavailable, "injected 503", httpStatus: 503)
            : MBaaSError(.rateLimited, "injected 429", httpStatus: 429, retryAfter: 0.01)
        case 2:
            _ = try await body()
            throw MBaaSError(.transport, "injected reset after the write")
        default: return try await body()
        }
    }

    func create(_ record: Record) async throws -> Record {
        try checkStorable(record.acl)
        return try await faulty { try await inner.create(record) }
    }
    func batch(_ operations: [BatchOperation]) async throws -> [BatchResult] {
        for op in operations {
            switch op {
            case .create(let r): try checkStorable(r.acl)
            case .update(_, _, let u): try checkStorable(u.acl)
            case .delete: break
            }
        }
        return try await faulty { try await inner.batch(operations) }
    }
    func get(className: String, id: String) async throws -> Record {
        var r = try await inner.get(className: className, id: id)
        if readsACLsApart { r.acl = nil }
        return r
    }
    func update(className: String, id: String, _ update: RecordUpdate) async throws -> Record {
        try checkStorable(update.acl)
        return try await faulty { try await inner.update(className: className, id: id, update) }
    }
    func delete(className: String, id: String, expectedVersion: String?) async throws {
        try await inner.delete(className: className, id: id, expectedVersion: expectedVersion)
    }
    func queryPage(_ query: Query) async throws -> RecordPage {
        if queriesFail { throw MBaaSError(.unavailable, "injected 503 on a query", httpStatus: 503) }
        var page = try await inner.queryPage(query)
        if readsACLsApart { for i in page.records.indices { page.records[i].acl = nil } }
        return page
    }
    func count(_ query: Query) async throws -> Int { try await inner.count(query) }
    func upload(_ upload: FileUpload) async throws -> FileReference {
        lock.withLock {
            attempted.append(upload.name)
            inFlight += 1
            mostInFlight = max(mostInFlight, inFlight)
        }
        defer { lock.withLock { inFlight -= 1 } }
        if uploadDelay > .zero { try await Task.sleep(for: uploadDelay) }
        if refusesFileACLs, upload.acl != nil { throw MBaaSError.unsupported("file ACLs", by: "flaky", reason: "its files have no ACLs") }
        // As PocketBase and Kii do: an attached file follows its record.
        if upload.attachment != nil, upload.acl != nil, !capabilities.has(.attachmentACL) {
            throw MBaaSError(.invalidRequest, "an attached file follows the ACL of its record")
        }
        if refusesFileName(upload.name) { throw MBaaSError.unsupported("the file name '\(upload.name)'", by: "flaky", reason: "it refuses such names") }
        try checkStorable(upload.acl)
        let stored = try await inner.upload(upload)
        lock.withLock { uploaded.append(upload.name) }
        return stored
    }
    func download(_ file: FileReference) async throws -> Data { try await inner.download(file) }
    func deleteFile(_ file: FileReference) async throws { try await inner.deleteFile(file) }
    /// Without ``Capabilities/Feature/fileACLListing`` the list carries no ACLs (as Kii's); without
    /// ``Capabilities/Feature/fileACLRead`` a file's ACL cannot be read on its own either.
    func listFiles(prefix: String?, limit: Int?) async throws -> [FileInfo] {
        let unlisted = without.contains(.fileACLListing)
        return try await inner.listFiles(prefix: prefix, limit: limit).filter { !hidesFromList($0.reference.name) }.map {
            var info = $0
            if unlisted { info.acl = nil }
            return info
        }
    }
    func fileACL(_ file: FileReference) async throws -> ACL? {
        if without.contains(.fileACLRead) { throw MBaaSError(.unsupported, "no fileACLRead") }
        lock.withLock { aclReads += 1 }
        if let fault = fileACLFault(file.name) { throw fault }
        return try await inner.fileACL(file)
    }
    func signUp(username: String, password: String, email: String?, fields: [String: Value]) async throws -> Session {
        try await inner.signUp(username: username, password: password, email: email, fields: fields)
    }
    func logIn(username: String, password: String) async throws -> Session { try await inner.logIn(username: username, password: password) }
    func logOut(confirmWithServer: Bool) async throws { try await inner.logOut(confirmWithServer: confirmWithServer) }
    func currentUser() async throws -> User { try await inner.currentUser() }
    var session: Session? { get async { await inner.session } }
    func restore(_ session: Session?) async { await inner.restore(session) }
    func listClasses() async throws -> [String] { try await inner.listClasses() }
    func listUsers(after cursor: String?, limit: Int) async throws -> DirectoryUserPage { try await inner.listUsers(after: cursor, limit: limit) }
    func listRoles() async throws -> [DirectoryRole] { try await inner.listRoles() }
    func findUser(username: String) async throws -> DirectoryUser? {
        if let e = findUserFault(username) { throw e }
        return try await inner.findUser(username: username)
    }
    func findUser(field: String, equals value: String) async throws -> DirectoryUser? {
        try await inner.findUser(field: field, equals: value)
    }
    func importUser(_ user: DirectoryUser, password: ImportedPassword) async throws -> DirectoryUser {
        if let name = user.username, let e = userFault(name) { throw e }
        return try await faulty { try await inner.importUser(user, password: password) }
    }
    func importRole(_ role: DirectoryRole) async throws { try await inner.importRole(role) }
}

@Suite("Reading large JSON arrays")
struct JSONArrayFileReaderTests {
    func write(_ text: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("array-\(UUID().uuidString).json")
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    @Test("elements are read one by one with their lines, strings holding brackets and escaped quotes included; a reader resumes at an element")
    func elements() throws {
        let url = try write("{\"other\":{\"results\":[1]},\n\"results\": [\n {\"a\":\"]}\\\"[\"},\n 2 ,\"x\",\n[3,{\"b\":[]}]\n]}")
        defer { try? FileManager.default.removeItem(at: url) }
        var reader = try JSONArrayFileReader(url: url, member: "results")
        let first = try #require(try reader.next())
        #expect(first.value == .object(["a": "]}\"["]) && first.line == 3)
        #expect(try reader.next()?.value == 2)
        let third = try #require(try reader.next())
        #expect(third.value == "x")
        #expect(try reader.next()?.value == .array([3, .object(["b": .array([])])]))
        #expect(try reader.next() == nil)
        reader.close()
        var resumed = try JSONArrayFileReader(url: url, resumingAt: third.endOffset, line: third.endLine)
        #expect(try resumed.next()?.line == 5)
        #expect(try resumed.next() == nil)
        resumed.close()
    }

    @Test("elements that straddle the reader's 1 MiB reads come out whole, with their lines, and a reader resumes past the first read")
    func acrossReads() throws {
        // ~1.2 MiB: the first read ends inside some element (strings with escaped quotes, brackets and unicode).
        let count = 3_500
        var parts: [String] = []
        for i in 0..<count {
            let filler = String(repeating: "é\\\"]}", count: 20 + i % 60)
            parts.append("{\"n\": \(i), \"s\": \"\(filler)\",\n \"a\": [\(i), {\"k\": \"v\"}]}")
        }
        let text = "{\"results\": [\n" + parts.joined(separator: ",\n") + "\n]}"
        #expect(text.utf8.count > 1 << 20)
        let url = try write(text)
        defer { try? FileManager.default.removeItem(at: url) }
        var reader = try JSONArrayFileReader(url: url, member: "results")
        var seen = 0
        var resumeAt: JSONArrayFileReader.Element?
        while let element = try reader.next() {
            #expect(element.value["n"] == .int(Int64(seen)) && element.line == 2 + 2 * seen, "element \(seen)")
            #expect(element.value["s"]?.stringValue?.count == 4 * (20 + seen % 60))   // é " ] }
            if seen == 3_000 { resumeAt = element }
            seen += 1
        }
        reader.close()
        #expect(seen == count)
        let mark = try #require(resumeAt)
        var resumed = try JSONArrayFileReader(url: url, resumingAt: mark.endOffset, line: mark.endLine)
        defer { resumed.close() }
        let next = try #require(try resumed.next())
        #expect(next.value["n"] == 3_001 && next.line == 2 + 2 * 3_001)
    }

    @Test("raw elements are the same elements with the same lines, parsed later; a malformed one names its line when parsed")
    func rawElements() throws {
        let url = try write("{\"results\": [\n {\"a\":\"]}\\\"[\"},\n 2 ,\"x\",\n[3,{\"b\":[]}],\n{\"c\" 1}\n]}")
        defer { try? FileManager.default.removeItem(at: url) }
        var reader = try JSONArrayFileReader(url: url, member: "results")
        defer { reader.close() }
        var raw: [JSONArrayFileReader.RawElement] = []
        while let element = try reader.nextRaw() { raw.append(element) }
        #expect(raw.map(\.line) == [2, 3, 3, 4, 5])
        #expect(try raw[0].parse() == .object(["a": "]}\"["]))
        #expect(try raw[3].parse() == .array([3, .object(["b": .array([])])]))
        let failure = #expect(throws: JSONArrayFileReader.Failure.self) { try raw[4].parse() }
        #expect(failure?.line == 5)
    }

    @Test("malformed arrays are errors naming the line: missing or extra commas, an unclosed array, no results member")
    func malformed() throws {
        for text in ["{\"results\":[{\"a\":1}\n {\"b\":2}]}", "{\"results\":[,1]}", "{\"results\":[1,]}", "{\"results\":[1,,2]}",
                     "{\"results\":[1, 2", "{\"other\":[]}", "[1]"] {
            let url = try write(text)
            defer { try? FileManager.default.removeItem(at: url) }
            #expect(throws: JSONArrayFileReader.Failure.self, "\(text)") {
                var reader = try JSONArrayFileReader(url: url, member: "results")
                while try reader.next() != nil {}
            }
        }
    }

    @Test("what follows the array is read too: a second results member, a repeated name, a bad member or trailing text is an error naming it; a resumed reader checks the same")
    func endOfFileIsChecked() throws {
        func failure(_ text: String, member: String? = "results", resumed: Bool = false) throws -> String? {
            let url = try write(text)
            defer { try? FileManager.default.removeItem(at: url) }
            do {
                var reader = try JSONArrayFileReader(url: url, member: member)
                if resumed {
                    // One element in, then a reader resumed from there.
                    let first = try #require(try reader.next())
                    reader.close()
                    reader = try JSONArrayFileReader(url: url, resumingAt: first.endOffset, line: first.endLine, member: member)
                }
                while try reader.nextRaw() != nil {}
                reader.close()
                return nil
            } catch let e as JSONArrayFileReader.Failure {
                return e.description
            }
        }
        for resumed in [false, true] {
            #expect(try failure("{\"results\":[1,2],\n\"results\":[3]}", resumed: resumed) == #"line 2: the top-level object has a second "results" member"#)
            #expect(try failure("{\"results\":[1,2]} x", resumed: resumed) == "line 1: unexpected characters after the top-level value")
            #expect(try failure("{\"results\":[1,2]", resumed: resumed) == "line 1: the file ends before the top-level object's closing '}'")
            #expect(try failure("{\"results\":[1,2],\"n\":01}", resumed: resumed)?.contains(#""n": invalid JSON"#) == true)
            #expect(try failure("{\"results\":[1,2] \"n\":1}", resumed: resumed) == #"line 1: expected ',' or '}' after the "results" array"#)
            #expect(try failure("[1,2] [3]", member: nil, resumed: resumed) == "line 1: unexpected characters after the top-level value")
            #expect(try failure("{\"count\":2,\"results\":[1,2],\"more\":{\"a\":[1]}}\n", resumed: resumed) == nil)
            #expect(try failure("[1,2]\n", member: nil, resumed: resumed) == nil)
        }
        #expect(try failure("{\"count\":1,\"count\":2,\"results\":[1]}") == #"line 1: the top-level object has a second "count" member"#)
        #expect(try failure("{\"n\":01,\"results\":[1]}")?.contains(#""n": invalid JSON"#) == true)      // before the array too
        #expect(try failure("{\"results\":[1],\"\\x\":1}")?.contains("invalid member name") == true)
        #expect(try failure("{\"results\":[1,2],\"count\":1,\"count\":2}") == #"line 1: the top-level object has a second "count" member"#)
    }
}

extension ACL.Principal {
    var isRoleOrGroupForTest: Bool {
        switch self {
        case .role, .group: true
        default: false
        }
    }
}
