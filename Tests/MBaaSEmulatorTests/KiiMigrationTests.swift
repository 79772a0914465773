import Foundation
import MBaaSCore
import MBaaSEmulator
import MBaaSKii
import MBaaSLocal
import MBaaSMigration
import MBaaSNCMB
import MBaaSTesting
import Testing

/// A migration whose source is a live Kii app: the Kii dialect served over HTTP, read through the Kii client.
@Suite("Migration out of a live Kii-dialect app")
struct KiiMigrationTests {
    @Test("a Kii-dialect app's app-scope bucket into the embedded store: records and their fields, verified; a re-run writes nothing")
    func toLocal() async throws {
        let dialect = try makeKiiDialect()
        let running = try await EmulatorServer(dialect: dialect).start()
        // 120 s per request: in a full parallel run on two cores, the server may wait long for the cooperative pool.
        let url = try BackendURL(parsing: dialect.backendURL(host: "127.0.0.1", port: running.port) + "?timeout=120")
        let source = try await KiiBackendFactory().open(url, context: BackendContext())
        let run = String(UUID().uuidString.lowercased().filter(\.isLetter).prefix(6))
        _ = try await source.signUp(username: "kii\(run)", password: "pw-kii-user", email: nil, fields: [:])
        let bucket = "Memo\(run)"
        var ids: [String] = []
        for n in 0..<7 {
            let r = try await source.create(Record(className: bucket, fields: [
                "title": .string("memo \(n)"), "n": .int(Int64(n)), "tags": .array([.string("t\(n % 2)")]),
                "when": .date(Date(timeIntervalSince1970: 1_700_000_000 + Double(n))),
            ]))
            ids.append(try #require(r.id))
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mbaas-kii-migration-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let target = try LocalBackend(path: dir.appendingPathComponent("app.db").path, context: BackendContext(administrative: true),
                                      options: LocalBackend.Options(passwordHashing: .testing))
        var options = MigrationOptions()
        options.classes = [bucket]
        let report = try await Migration(source: source, target: target, options: options,
                                         state: try MigrationState(directory: dir.appendingPathComponent("state"))).run()
        let memo = try #require(report.classes.first { $0.source == bucket })
        #expect(memo.read == 7 && memo.written == 7 && memo.failed == 0 && memo.verified == 7 && memo.mismatched == 0,
                "\(report.mismatches) \(report.problems)")
        #expect(report.mismatches.isEmpty)
        let copied = try await target.get(className: bucket, id: ids[3])
        #expect(copied["title"] == "memo 3" && copied["n"] == .int(3) && copied["tags"] == .array(["t1"]))
        #expect(copied["when"] == .date(Date(timeIntervalSince1970: 1_700_000_003)))
        let again = try await Migration(source: source, target: target, options: options,
                                        state: try MigrationState(directory: dir.appendingPathComponent("state"))).run()
        #expect(again.classes.first { $0.source == bucket }.map { $0.written == 0 && $0.skipped == 7 } == true)
        await target.close()
        await running.stop()
    }
}

@Suite("Migration into the Kii dialect")
struct KiiTargetMigrationTests {
    @Test("the NCMB sample export into Kii: a memo whose ACL is not open to everyone is not written by default (it would be readable by everyone), each named; with --acl-loss allow it is, each listed; records and files verified; users and ACLs, which Kii cannot take, said in the plan; a re-run writes nothing")
    func ncmbExportToKii() async throws {
        let dialect = try makeKiiDialect(clientID: "cid", clientSecret: "csecret")
        let target = kiiClient(dialect, admin: true)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mbaas-kii-target-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        // The sample's memos with an ACL that is not open to everyone (owner-only, read-only for others, none at all).
        let restricted = try await NCMBExportBackend(directory: ncmbSampleExport).queryPage(Query("MemoClass", limit: 100)).records
            .filter { r in r.acl.map { !($0[.everyone].read && $0[.everyone].write) } ?? false }.compactMap(\.id).sorted()
        #expect(!restricted.isEmpty)
        let refused = try await migrateNCMBSample(into: target, scratch: dir)
        let kept = try #require(refused.classes.first { $0.source == "MemoClass" })
        #expect(!refused.ok && kept.failed == restricted.count && kept.written == 12 - restricted.count, "\(refused.classes)")
        let failed = refused.mismatches.filter { $0.kind == "failed" && $0.className == "MemoClass" && $0.detail.contains("does not enforce per-record ACLs, so the record would be readable by everyone there") }
        #expect(failed.compactMap(\.sourceId).sorted() == restricted, "\(refused.mismatches)")
        for id in restricted {
            #expect(try await target.queryPage(Query("MemoClass", predicate: .compare("sourceObjectId", .eq, .string(id)))).records.isEmpty)
        }
        // Allowed, the same command writes them, and lists each.
        let report = try await migrateNCMBSample(into: target, scratch: dir, aclLoss: .allow)
        #expect(report.warnings.filter { $0.kind == "acl" && $0.className == "MemoClass" && $0.detail.hasSuffix("written so (--acl-loss allow)") }.compactMap(\.sourceId).sorted() == restricted,
                "\(report.warnings)")
        let memo = try #require(report.classes.first { $0.source == "MemoClass" })
        #expect(memo.read == 12 && memo.written == restricted.count && memo.skipped == 12 - restricted.count && memo.failed == 0
                && memo.verified == 12 && memo.mismatched == 0, "\(report.mismatches) \(report.problems)")
        #expect(report.mismatches.isEmpty, "\(report.mismatches)")
        // The public-read category with a role grant went the same way.
        #expect(refused.classes.first { $0.source == "Category" }.map { $0.written == 2 && $0.failed == 1 } == true, "\(refused.classes)")
        #expect(report.classes.first { $0.source == "Category" }.map { $0.written == 1 && $0.verified == 3 } == true, "\(report.classes)")
        // The refused memos' files went with them in the second run.
        #expect(refused.files.written + report.files.written == 5 && report.files.verified == 5 && report.files.mismatched == 0,
                "\(refused.files) \(report.files)")
        // What Kii cannot take is said in the plan, and the pointers to users are kept with their source ids, warned.
        #expect(report.problems.contains("users: kii cannot import users") && report.users.written == 0, "\(report.problems)")
        #expect(report.problems.contains { $0.hasPrefix("ACLs: kii does not enforce per-record ACLs") })
        #expect((refused.warnings + report.warnings).contains { $0.kind == "pointer" && $0.detail.contains("_User/gbeUrX7bd75kT5PX") })
        let ramen = try #require(try await target.queryPage(Query("MemoClass", predicate: .compare("sourceObjectId", .eq, "KXBeNC7VSJ5zffgR"))).records.first)
        #expect(ramen["title"] == "Ramen Jiro" && ramen["money"] == .int(900))
        let again = try await migrateNCMBSample(into: target, scratch: dir)
        #expect(again.classes.allSatisfy { $0.written == 0 && $0.failed == 0 }, "\(again.classes)")
    }
}
