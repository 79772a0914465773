import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSTesting
import Testing
@testable import MBaaSMigration

/// Issue 33, point 5: a migration into a target that reads an empty string back absent (`emptyStringsAbsent`, as
/// AppPot) says which fields lose one, per class and field, instead of verification silently counting "" and absent
/// as equal.
@Suite("Migration: empty strings a target reads back absent")
struct EmptyStringLossTests {
    @Test("into an emptyStringsAbsent target, the plan says empty strings are warned, and the run warns once per class and field with the count and the first ids; a target without the limit warns nothing")
    func warnsPerClassAndField() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("s.db"))
        for i in 1...7 {
            _ = try await source.create(Record(className: "Note", id: "n\(i)", fields: ["title": .string(i <= 6 ? "" : "x"), "body": .string("b")]))
        }
        _ = try await source.create(Record(className: "Note", id: "n8", fields: ["title": "t", "body": .string("")]))
        _ = try await source.create(Record(className: "Tag", id: "t1", fields: ["name": .string("")]))

        let planned = try await Migration(source: source, target: FaultyBackend(try openLocal(scratch.path("p.db")), seed: 0, rate: 0, adding: [.emptyStringsAbsent]),
                                          options: MigrationOptions(classes: ["Note", "Tag"], dryRun: true), state: nil).run()
        let lines = planned.plan?.unsupported ?? []
        #expect(lines.contains { $0.hasPrefix("empty strings: local reads them back absent") && $0.hasSuffix("each class and field whose records hold one is warned (with the count and the first record ids)") }, "\(lines)")

        let lossy = FaultyBackend(try openLocal(scratch.path("t.db")), seed: 0, rate: 0, adding: [.emptyStringsAbsent])
        let report = try await migrate(source, lossy, state: scratch.path("state"), options: MigrationOptions(classes: ["Note", "Tag"]))
        let warned = report.warnings.filter { $0.kind == "emptyString" }
        #expect(warned.map(\.className) == ["Note", "Note", "Tag"], "\(report.warnings)")
        #expect(warned.map(\.detail) == [
            "1 record holds an empty string in 'body', which local reads back absent (first: n8)",
            "6 records hold an empty string in 'title', which local reads back absent (first: n1, n2, n3, n4, n5, …)",
            "1 record holds an empty string in 'name', which local reads back absent (first: t1)",
        ], "\(warned)")
        #expect(report.table.contains("warning: emptyString: Note: 6 records hold an empty string in 'title'"), "\(report.table)")

        let plain = try openLocal(scratch.path("u.db"))
        let kept = try await migrate(source, plain, state: scratch.path("state2"), options: MigrationOptions(classes: ["Note", "Tag"]))
        #expect(kept.ok && kept.warnings.filter { $0.kind == "emptyString" }.isEmpty, "\(kept.warnings)")
    }
}
