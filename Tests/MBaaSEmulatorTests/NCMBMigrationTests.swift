import Foundation
import MBaaSCore
import MBaaSEmulator
import MBaaSLocal
import MBaaSMigration
import MBaaSNCMB
import MBaaSPocketBase
import MBaaSTesting
import Testing

/// Migrations whose source is a live NCMB app: the NCMB dialect served over HTTP, read through the NCMB client
/// (records, users, files), written to the embedded store and to a real PocketBase, verified.
@Suite("Migration out of a live NCMB-dialect app", .serialized)
struct NCMBMigrationTests {
    /// An app on the dialect: 2 users, 5 memos (pointers to their authors, one private), 2 standalone files.
    struct App {
        let running: EmulatorServer.RunningEmulator
        let source: NCMBBackend
        let className: String
        let users: [String: String]  // username -> NCMB id
        let run: String
    }

    static func makeApp() async throws -> App {
        let dialect = try makeDialect()
        let running = try await EmulatorServer(dialect: dialect).start()
        let url = try BackendURL(parsing: dialect.backendURL(host: "127.0.0.1", port: running.port))
        let run = String(UUID().uuidString.lowercased().filter(\.isLetter).prefix(6))
        let className = "Memo" + run
        var users: [String: String] = [:]
        // This suite runs beside every other one on two cores: a request may wait long for a thread of the
        // cooperative pool, which is not what it tests.
        var configuration = try NCMBConfiguration(url: url)
        configuration.timeout = 120
        let owner = NCMBBackend(configuration: configuration)
        for name in ["taro", "hanako"] {
            let session = try await owner.signUp(username: run + name, password: "pw-\(name)", email: "\(run)\(name)@example.com",
                                                 fields: ["nickname": .string(name.capitalized)])
            users[name] = session.userId
            for n in 1...2 {
                _ = try await owner.create(Record(className: className, fields: [
                    "title": .string("\(name) \(n)"), "n": .int(Int64(n)),
                    "author": .pointer(Pointer(className: "_User", objectId: session.userId)),
                ]))
            }
        }
        // One record only taro may read: the migration reads as taro (the NCMB app's data as a user sees it).
        _ = try await owner.logIn(username: run + "taro", password: "pw-taro")
        _ = try await owner.create(Record(className: className, acl: ACL.privateTo(users["taro"]!), fields: ["title": "secret", "n": 9]))
        for name in ["a", "b"] {
            _ = try await owner.upload(FileUpload(name: "\(run)-\(name).txt", source: .data(Data("file \(name)".utf8)), contentType: "text/plain"))
        }
        return App(running: running, source: owner, className: className, users: users, run: run)
    }

    static func migrate(_ app: App, to target: any Backend, state: URL) async throws -> MigrationReport {
        var options = MigrationOptions()
        options.classes = [app.className]
        return try await Migration(source: app.source, target: target, options: options,
                                   state: try MigrationState(directory: state)).run()
    }

    @Test("an NCMB-dialect app into the embedded store: records, users and files, verified; a re-run writes nothing")
    func toLocal() async throws {
        let app = try await Self.makeApp()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mbaas-ncmb-migration-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let target = try LocalBackend(path: dir.appendingPathComponent("app.db").path, context: BackendContext(administrative: true),
                                      options: LocalBackend.Options(passwordHashing: .testing))
        let report = try await Self.migrate(app, to: target, state: dir.appendingPathComponent("state"))
        let memo = try #require(report.classes.first { $0.source == app.className })
        #expect(memo.read == 5 && memo.written == 5 && memo.failed == 0 && memo.verified == 5 && memo.mismatched == 0, "\(report.mismatches)")
        #expect(report.users.written == 2, "\(report.problems)")
        #expect(report.files.verified >= 2 && report.files.mismatched == 0)
        #expect(report.mismatches.isEmpty, "\(report.mismatches)")
        // Read as a user, NCMB shows what ACLs grant that user: the plan and the report say only that is moved, and
        // point at the console export for the rest.
        let partial = report.problems.filter { $0.hasPrefix("partial source: ncmb enforces ACLs and this caller has no administrative identity there") }
        #expect(partial.count == 1 && partial.first?.contains("the app's console export (read as ncmb-export:DIR) holds every record") == true,
                "\(report.problems)")
        #expect(report.plan?.unsupported.contains(partial.first ?? "-") == true)
        // Ids are kept by the store, pointers still reach the authors, the private record keeps its owner.
        let taroId = try #require(app.users["taro"])
        let secret = try await target.queryPage(Query(app.className, predicate: .compare("title", .eq, "secret"))).records.first
        #expect(secret?.acl == ACL.privateTo(taroId))
        let taro = try #require(try await target.findUser(username: app.run + "taro"))
        #expect(taro.email == "\(app.run)taro@example.com" && taro.fields["nickname"] == "Taro")
        let first = try await target.queryPage(Query(app.className, predicate: .compare("title", .eq, "taro 1"))).records.first
        #expect(first?["author"] == .pointer(Pointer(className: "_User", objectId: taro.id)))
        #expect(try await target.download(FileReference(name: "\(app.run)-a.txt")) == Data("file a".utf8))
        let again = try await Self.migrate(app, to: target, state: dir.appendingPathComponent("state"))
        #expect(again.classes.first { $0.source == app.className }.map { $0.written == 0 && $0.skipped == 5 } == true)
        await target.close()
        await app.running.stop()
    }

    @Test("an NCMB-dialect app into a live PocketBase, verified", .enabled(if: ProcessInfo.processInfo.environment["MBAAS_POCKETBASE_URL"] != nil,
                                                                       "MBAAS_POCKETBASE_URL is not set"),
          .exclusive("pocketbase-users"))  // the import adds fields to the shared users collection, as other suites' do
    func toPocketBase() async throws {
        let app = try await Self.makeApp()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mbaas-ncmb-pb-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let pb = try BackendURL(parsing: ProcessInfo.processInfo.environment["MBAAS_POCKETBASE_URL"]!)
        let target = try await PocketBaseBackendFactory().open(pb, context: BackendContext(administrative: true))
        let report = try await Self.migrate(app, to: target, state: dir.appendingPathComponent("state"))
        let memo = try #require(report.classes.first { $0.source == app.className })
        #expect(memo.read == 5 && memo.written == 5 && memo.failed == 0 && memo.verified == 5 && memo.mismatched == 0, "\(report.mismatches)")
        #expect(report.users.written == 2, "\(report.problems)")
        #expect(report.files.verified >= 2 && report.files.mismatched == 0)
        let taro = try #require(try await target.findUser(username: app.run + "taro"))
        let first = try await target.queryPage(Query(app.className, predicate: .compare("title", .eq, "taro 1"))).records.first
        #expect(first?["author"] == .pointer(Pointer(className: "_User", objectId: taro.id)))
        #expect(first?["sourceObjectId"] != nil)
        await target.close()
        await app.running.stop()
    }
}
