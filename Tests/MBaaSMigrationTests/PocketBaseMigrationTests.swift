import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSNCMB
import MBaaSPocketBase
import MBaaSReplay
import MBaaSTesting
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

/// Holds the process-wide "pocketbase-users" lock: these migrations change the users collection's fields, which
/// other suites' migrations into the same server change too.
@Suite("Migration to and from a live PocketBase", .serialized, .enabled(if: LivePocketBase.url != nil, LivePocketBase.skipReason),
       .exclusive("pocketbase-users"))
struct PocketBaseMigrationTests {
    /// Class names unique to a run, so that runs and tests do not see each other's collections.
    /// `installations`: the source has `_Installation` (the shipped sample does, a generated export does not: a mapping
    /// entry for a class the source lacks is refused).
    static func mapping(_ run: String, installations: Bool = true) throws -> MigrationMapping {
        let installation = installations ? #","_Installation":{"rename":"Installation\#(run)"}"# : ""
        return try MigrationMapping(json: JSON.parse("""
            {"classes":{"MemoClass":{"rename":"Memo\(run)"},"Category":{"rename":"Category\(run)"}\(installation)}}
            """))
    }

    @Test("the NCMB sample into PocketBase: files attached, users imported, pointers rewritten to PocketBase ids, verified; a re-run adds nothing")
    func ncmbSampleToPocketBase() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let run = String(UUID().uuidString.lowercased().filter(\.isLetter).prefix(6))
        let export = try scratch.sampleExport()
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
        // Users are found by their source id too (how a resumed run finds one without a user name or e-mail); other
        // runs on this server imported a taro as well, so only the field is checked.
        #expect(try await target.findUser(field: "sourceObjectId", equals: "gbeUrX7bd75kT5PX")?.fields["sourceObjectId"] == "gbeUrX7bd75kT5PX")
        #expect(try await target.findUser(field: "sourceObjectId", equals: "no-such-source-id") == nil)
        // A field the users collection does not have (yet: a run killed before its first import) finds nobody.
        #expect(try await target.findUser(field: "noSuchField\(run)", equals: "x") == nil)
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
        // As the CLI does: the core retry policy under the adapter (idempotent requests), the migration's own retries
        // and look-ups above it (batches, which are not idempotent).
        let target = try await LivePocketBase.open(transport: RetryingTransport(faults, policy: RetryPolicy(baseDelay: 0.01)))
        let report = try await migrate(try NCMBExportBackend(directory: export), target, state: scratch.path("state"),
                                       options: MigrationOptions(mapping: try Self.mapping(run, installations: false), batchSize: 10))
        #expect(faults.injected.count > 5, "too few faults injected to mean anything")
        let memo = try #require(report.classes.first { $0.source == "MemoClass" })
        #expect(memo.written == 600 && memo.failed == 0 && memo.verified == 600 && memo.mismatched == 0, "\(report.mismatches.prefix(5))")
        #expect(report.ok, "\(report.mismatches.prefix(5))")
        let clean = try await LivePocketBase.open()
        #expect(try await clean.count(Query("Memo\(run)")) == 600)
        await target.close()
    }
}

/// Also holds the "pocketbase-users" lock: its imports add fields to the users collection, and PocketBase can refuse
/// a user create (HTTP 400, no field detail) while another client changes that collection's fields.
@Suite("Migration between every pair of Local, bundle, NCMB export and live PocketBase", .serialized,
       .enabled(if: LivePocketBase.url != nil, LivePocketBase.skipReason), .exclusive("pocketbase-users"))
struct MigrationPairTests {
    /// One hop, checked: everything written and verified, nothing failed or different.
    func hop(_ from: any Backend, _ to: any Backend, classes: [String], mapping: MigrationMapping = MigrationMapping(), state: URL,
             expect: [String: Int]) async throws {
        // The live server is shared with suites that sign users up while this one runs: users are not copied from it
        // (its user directory changes under the test); they are from every other source.
        let users = from.adapterName != "pocketbase"
        let report = try await migrate(from, to, state: state, options: MigrationOptions(classes: classes, mapping: mapping, users: users))
        for (cls, n) in expect {
            let c = report.classes.first { $0.source == cls }
            #expect(c?.written == n && c?.verified == n && c?.failed == 0 && c?.mismatched == 0,
                    "\(from.adapterName) -> \(to.adapterName) \(cls): \(String(describing: c)) \(report.mismatches.prefix(3))")
        }
        #expect(report.mismatchCount == 0, "\(from.adapterName) -> \(to.adapterName): \(report.mismatches.prefix(3))")
    }

    @Test("export -> Local -> PocketBase -> bundle -> Local, and export -> bundle -> PocketBase -> Local, each hop verified")
    func chains() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let run = String(UUID().uuidString.lowercased().filter(\.isLetter).prefix(6))
        /// An export whose users have per-run names (users are unique on the shared server).
        func export(_ name: String, seed: UInt64, prefix: String) throws -> NCMBExportBackend {
            let dir = scratch.path(name)
            try NCMBExportSample.write(records: 120, seed: seed, to: dir)
            let users = dir.appendingPathComponent("user.json")
            try (String(contentsOf: users, encoding: .utf8).replacingOccurrences(of: "\"user", with: "\"\(prefix)user"))
                .write(to: users, atomically: true, encoding: .utf8)
            return try NCMBExportBackend(directory: dir)
        }
        let ncmb = try export("export1", seed: 9, prefix: run)
        let rename = try MigrationMapping(json: JSON.parse(#"{"classes":{"MemoClass":{"rename":"Memo\#(run)"},"Category":{"rename":"Cat\#(run)"}}}"#))
        let names = ["Memo\(run)", "Cat\(run)"]
        let counts = ["Memo\(run)": 120, "Cat\(run)": 10]

        // export -> Local -> PocketBase -> bundle -> Local
        let a = try openLocal(scratch.path("a.db"))
        try await hop(ncmb, a, classes: ["Category", "MemoClass"], mapping: rename, state: scratch.path("s1"), expect: ["MemoClass": 120, "Category": 10])
        let pb = try await LivePocketBase.open()
        try await hop(a, pb, classes: names, state: scratch.path("s2"), expect: counts)
        let bundle = try BundleBackend(directory: scratch.path("bundle1"))
        try await hop(pb, bundle, classes: names, mapping: .verbatim, state: scratch.path("s3"), expect: counts)
        let b = try openLocal(scratch.path("b.db"))
        try await hop(try BundleBackend(directory: scratch.path("bundle1")), b, classes: names, state: scratch.path("s4"), expect: counts)

        // export -> bundle -> PocketBase -> Local
        let run2 = String(UUID().uuidString.lowercased().filter(\.isLetter).prefix(6))
        let rename2 = try MigrationMapping(json: JSON.parse(#"{"classes":{"MemoClass":{"rename":"Memo\#(run2)"},"Category":{"rename":"Cat\#(run2)"}}}"#))
        let names2 = ["Memo\(run2)", "Cat\(run2)"]
        let counts2 = ["Memo\(run2)": 120, "Cat\(run2)": 10]
        try await hop(try export("export2", seed: 9, prefix: run2), try BundleBackend(directory: scratch.path("bundle2")),
                      classes: ["Category", "MemoClass"], mapping: rename2,
                      state: scratch.path("s5"), expect: ["MemoClass": 120, "Category": 10])
        try await hop(try BundleBackend(directory: scratch.path("bundle2")), pb, classes: names2, state: scratch.path("s6"), expect: counts2)
        let c = try openLocal(scratch.path("c.db"))
        try await hop(pb, c, classes: names2, state: scratch.path("s7"), expect: counts2)

        // The end of each chain holds the first record with its title, money and due date as the export had them.
        for (db, cls) in [(b, "Memo\(run)"), (c, "Memo\(run2)")] {
            let first = try await db.queryPage(Query(cls, predicate: .compare("title", .eq, "memo 0"))).records.first
            #expect(first?["title"] == "memo 0" && first?["due"] == .date(ISO8601.parse("2023-10-01T00:00:00.000Z")!))
            #expect(first?["author"]?.typeName == "Pointer" && first?["filename"]?.fileValue != nil)
        }
        await a.close()
        await b.close()
        await c.close()
    }
}
