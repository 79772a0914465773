import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSMigration
import MBaaSNCMB
import MBaaSTesting
import PostgresNIO
import Testing
@testable import MBaaSPostgres

extension LiveTests {
    @Suite("PostgreSQL migration, live")
    struct MigrationLiveTests {
        /// The memo app's NCMB export shipped under `Fixtures/Samples/ncmb-memo-export`.
        static let sampleExport = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/Samples/ncmb-memo-export")

        @Test("the NCMB sample export migrates into postgres:// (opened administrative, as mbaas migrate opens it) and verifies; the tables hold it; and out again into the embedded store, verified")
        func ncmbSampleIntoPostgres() async throws {
            let target = try await Live.fresh("m", administrative: true)
            defer { Task { await Live.drop(target) } }
            let state = try temporaryDirectory("mbaas-postgres-migration")
            defer { try? FileManager.default.removeItem(at: state) }
            let source = try NCMBExportBackend(directory: Self.sampleExport)
            let report = try await Migration(source: source, target: target, state: try MigrationState(directory: state)).run()
            let memo = try #require(report.classes.first { $0.source == "MemoClass" })
            #expect(memo.written == 12 && memo.verified == 12 && memo.mismatched == 0 && memo.failed == 0, "\(memo) \(report.mismatches)")
            #expect(report.ok && report.verified, "\(report.problems) \(report.mismatches)")
            #expect(report.users.verified == 3 && report.roles.verified == 1 && report.files.mismatched == 0 && report.files.verified >= 4,
                    "\(report.users) \(report.roles) \(report.files)")
            let train = try await target.queryPage(Query("MemoClass", predicate: .compare("money", .eq, .string("900"))))
            #expect(train.records.count == 1)
            let schema = target.schema
            #expect(try await Live.tables(schema) == ["file_chunks", "files", "mbaas_meta", "records", "sessions", "users"])
            #expect(try await Live.sql("SELECT count(*) FROM \(schema).records WHERE class = 'MemoClass'") { try $0.makeRandomAccess()[0].decode(Int64.self) } == [12])
            #expect(try await Live.sql("SELECT count(*) FROM \(schema).users WHERE password LIKE '!%'") { try $0.makeRandomAccess()[0].decode(Int64.self) } == [3])
            // Run again: it resumes and writes nothing new.
            let again = try await Migration(source: source, target: target, state: try MigrationState(directory: state)).run()
            let count = try await target.count(Query("MemoClass"))
            #expect(again.ok && count == 12)

            // And out again: the PostgreSQL store as a source (it lists its classes, users, roles and files), into the
            // embedded store, verified against it.
            let outState = try temporaryDirectory("mbaas-postgres-migration-out")
            defer { try? FileManager.default.removeItem(at: outState) }
            let local = try LocalBackend.inMemory(context: BackendContext(administrative: true),
                                                  options: LocalBackend.Options(passwordHashing: .testing))
            let out = try await Migration(source: target, target: local, state: try MigrationState(directory: outState)).run()
            #expect(out.ok && out.verified, "\(out.problems) \(out.mismatches)")
            let outMemo = try #require(out.classes.first { $0.source == "MemoClass" })
            #expect(outMemo.written == 12 && outMemo.verified == 12 && outMemo.mismatched == 0, "\(outMemo)")
            #expect(out.users.written == 3 && out.users.verified == 3 && out.roles.verified == 1, "\(out.users) \(out.roles)")
            #expect(out.files.mismatched == 0 && out.files.verified >= 4, "\(out.files)")
            let copied = try await local.queryPage(Query("MemoClass", predicate: .compare("money", .eq, .string("900"))))
            #expect(copied.records.count == 1, "the string money of the train ticket stays a string")
        }
    }
}
