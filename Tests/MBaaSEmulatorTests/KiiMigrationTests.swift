import Foundation
import MBaaSCore
import MBaaSEmulator
import MBaaSKii
import MBaaSLocal
import MBaaSMigration
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
        let target = try LocalBackend(path: dir.appendingPathComponent("app.db").path, context: BackendContext(administrative: true))
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
