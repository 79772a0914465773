import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSNCMB
import MBaaSTesting
import Testing
@testable import MBaaSMigration

/// The run as a list of stages (``MigrationStage``): their order, which apply, and what observers see.
@Suite("Migration: stages")
struct MigrationStageTests {
    /// Runs the memo sample into `target` and returns the report and the phases announced, in order.
    func phases(into target: any Backend, _ scratch: Scratch, options: MigrationOptions = MigrationOptions())
        async throws -> (MigrationReport, [String])
    {
        let seen = Collector<String>()
        let migration = Migration(
            source: try NCMBExportBackend(directory: sampleExport), target: target, options: options,
            state: try MigrationState(directory: scratch.path("state")),
            observer: { if case .phase(let name) = $0 { seen.append(name) } })
        let report = try await migration.run()
        return (report, seen.all)
    }

    @Test("the stages run in one order: users, roles, records, files, pointers, finishing the target, verification")
    func order() {
        #expect(Migration.stages.map(\.name) == ["users", "roles", "records", "files", "pointers", "finish", "verify"])
        #expect(Migration.stages.filter { !$0.announced }.map(\.name) == ["finish"])
    }

    @Test("a whole run announces each stage that applies, in order (attachments inside records)")
    func everyStage() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let (report, seen) = try await phases(into: try openLocal(scratch.path("t.db")), scratch)
        #expect(seen == ["users", "roles", "records", "attachments", "files", "pointers", "verify"])
        #expect(report.ok && report.roles.written == 1)
    }

    @Test("without users, files and verification only records and pointers run; nothing of users, roles or files is written")
    func recordsAndPointersOnly() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let target = try openLocal(scratch.path("t.db"))
        var options = MigrationOptions()
        options.users = false
        options.files = false
        options.verify = false
        let (report, seen) = try await phases(into: target, scratch, options: options)
        #expect(seen == ["records", "pointers"])   // no files: no attachments either
        #expect(report.users.written == 0 && report.roles.written == 0)
        #expect(report.classes.allSatisfy { $0.verified == 0 })
        #expect(try await target.listFiles(prefix: "receipt", limit: nil).isEmpty)
        #expect(try await target.listUsers(after: nil, limit: 10).users.isEmpty)
    }

    @Test("a target without roles skips the roles stage, and the users stage says how many roles were not carried")
    func noRolesOnTarget() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let target = FaultyBackend(try openLocal(scratch.path("t.db")), seed: 0, rate: 0, without: [.roles])
        let (report, seen) = try await phases(into: target, scratch)
        #expect(!seen.contains("roles") && seen.first == "users" && seen.contains("records"))
        #expect(report.roles.written == 0)
        #expect(report.problems.contains("1 roles not carried: local has no roles"), "\(report.problems)")
    }
}
