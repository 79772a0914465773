import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSNCMB
import MBaaSPocketBase
import MBaaSReplay
import Testing
@testable import MBaaSMigration

/// Live against the PocketBase that `.ci/pocketbase.sh run -- swift test` starts (skipped without it).
enum LivePocketBase {
    static let url = ProcessInfo.processInfo.environment["MBAAS_POCKETBASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
    static let skipReason: Comment = "MBAAS_POCKETBASE_URL is not set: run `.ci/pocketbase.sh run -- swift test` to include live PocketBase migrations"

    static func open(transport: any HTTPTransport = URLSessionTransport()) async throws -> any Backend {
        try await PocketBaseBackendFactory().open(try BackendURL(parsing: url!), context: BackendContext(transport: transport, administrative: true))
    }
}

@Suite("Migration to and from a live PocketBase", .serialized, .enabled(if: LivePocketBase.url != nil, LivePocketBase.skipReason))
struct PocketBaseMigrationTests {
    /// Class names unique to a run, so that runs and tests do not see each other's collections.
    static func mapping(_ run: String) throws -> MigrationMapping {
        try MigrationMapping(json: JSON.parse("""
            {"classes":{"MemoClass":{"rename":"Memo\(run)"},"Category":{"rename":"Category\(run)"},"_Installation":{"rename":"Installation\(run)"}}}
            """))
    }

    @Test("the NCMB sample into PocketBase: files attached, users imported, pointers rewritten to PocketBase ids, verified; a re-run adds nothing")
    func ncmbSampleToPocketBase() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let run = String(UUID().uuidString.lowercased().filter(\.isLetter).prefix(6))
        let export = scratch.path("export")
        try FileManager.default.copyItem(at: sampleExport, to: export)
        // Users must be new to this server: give them per-run names.
        let users = export.appendingPathComponent("user.json")
        var text = try String(contentsOf: users, encoding: .utf8)
        for name in ["taro_yamada", "hanako-suzuki", "taro@example.com", "hanako@example.com", "r1C9kQ2mTz0XbW5pLs7Ve"] {
            text = text.replacingOccurrences(of: "\"\(name)\"", with: "\"\(run)\(name)\"")
        }
        try text.write(to: users, atomically: true, encoding: .utf8)
        let source = try NCMBExportBackend(directory: export)
        let target = try await LivePocketBase.open()
        let options = MigrationOptions(mapping: try Self.mapping(run))
        let report = try await migrate(source, target, state: scratch.path("state"), options: options)

        let memo = try #require(report.classes.first { $0.source == "MemoClass" })
        // "Train ticket" keeps `money` as the string "900": PocketBase's number column (made from the first record)
        // refuses it, and the run says so instead of converting it.
        #expect(memo.written == 11 && memo.failed == 1 && memo.verified == 11, "\(report.mismatches)")
        #expect(report.mismatches.contains { $0.kind == "failed" && $0.sourceId == "UjRGYgncJqJatLWm" && $0.detail.contains("money") })
        #expect(report.classes.first { $0.source == "Category" }.map { $0.written == 3 && $0.verified == 3 } == true)
        #expect(report.users.written == 3 && report.files.mismatched == 0 && report.files.verified >= 4)
        #expect(report.problems.contains { $0.contains("roles") })
        #expect(!report.ok)

        // Ids are PocketBase's own; pointers and ACL user ids point at the new ids.
        let page = try await target.queryPage(Query("Memo\(run)", predicate: .compare("sourceObjectId", .eq, "KXBeNC7VSJ5zffgR")))
        let ramen = try #require(page.records.first)
        #expect(ramen.id != "KXBeNC7VSJ5zffgR" && ramen["title"] == "Ramen Jiro")
        let taro = try #require(try await target.findUser(username: "\(run)taro_yamada"))
        #expect(ramen["author"] == .pointer(Pointer(className: "_User", objectId: taro.id)))
        let file = try #require(ramen["filename"]?.fileValue)
        #expect(try await target.download(file) == (try Data(contentsOf: sampleExport.appendingPathComponent("files/ramen-2023_10_01.png"))))
        let latte = try await target.queryPage(Query("Memo\(run)", predicate: .compare("sourceObjectId", .eq, "IoTdx5XvSxzpLihK"))).records.first
        #expect(latte?.acl == ACL([.user(taro.id): .readWrite]))   // role grants are left out: PocketBase has no roles

        let again = try await migrate(source, target, state: scratch.path("state"), options: options)
        #expect(again.classes.first { $0.source == "MemoClass" }.map { $0.written == 0 && $0.skipped == 11 } == true)
        #expect(try await target.count(Query("Memo\(run)")) == 11)
        await target.close()
    }

    @Test("10% injected HTTP faults (429, 503, resets, truncated bodies) complete with nothing lost or duplicated")
    func faultsOverHTTP() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let run = String(UUID().uuidString.lowercased().filter(\.isLetter).prefix(6))
        let export = scratch.path("export")
        try NCMBExportSample.write(records: 600, seed: 11, to: export)
        let users = export.appendingPathComponent("user.json")
        try (String(contentsOf: users, encoding: .utf8).replacingOccurrences(of: "\"user", with: "\"\(run)user")).write(to: users, atomically: true, encoding: .utf8)
        let faults = FaultInjectingTransport(wrapping: URLSessionTransport(), seed: 5, rate: 0.1,
                                             faults: [.rateLimited(retryAfter: 0), .serverError(status: 503), .connectionReset, .truncatedBody])
        let target = try await LivePocketBase.open(transport: faults)
        let report = try await migrate(try NCMBExportBackend(directory: export), target, state: scratch.path("state"),
                                       options: MigrationOptions(mapping: try Self.mapping(run), batchSize: 10))
        #expect(faults.injected.count > 5, "too few faults injected to mean anything")
        let memo = try #require(report.classes.first { $0.source == "MemoClass" })
        #expect(memo.written == 600 && memo.failed == 0 && memo.verified == 600 && memo.mismatched == 0, "\(report.mismatches.prefix(5))")
        #expect(report.ok, "\(report.mismatches.prefix(5))")
        let clean = try await LivePocketBase.open()
        #expect(try await clean.count(Query("Memo\(run)")) == 600)
        await target.close()
    }
}
