import Foundation
import GRDB
import Testing
@testable import MBaaSMigration

/// The state's memory of settled kinds and classes (``MigrationState/settle(_:className:)``), checked by changing
/// the state database behind its back.
@Suite("Settled mappings")
struct SettledMappingsTests {
    @Test("settled mappings answer from memory once seen; a mapping written for them afterwards ends that; ids with quotes and accents round-trip")
    func settledMappings() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let state = try MigrationState(directory: scratch.path("state"))
        let odd = "q\"u\\o-t\u{e9}"
        try state.recordWritten(.user, className: "_User", [.init(sourceId: "u1", targetId: "t1", fixups: nil, attachments: []),
                                                           .init(sourceId: odd, targetId: "t-odd", fixups: nil, attachments: [])])
        #expect(try state.mapped(.user, className: "_User", sourceIds: ["u1", odd, "u2"]) == ["u1": "t1", odd: "t-odd"])
        state.settle(.user, className: "_User")
        #expect(try state.mapped(.user, className: "_User", sourceIds: ["u1", "u2"]) == ["u1": "t1"])
        // Gone from the database, still answered: the settled mapping came from memory.
        try state.db.write { try $0.execute(sql: "DELETE FROM idmap WHERE source_id = 'u1'") }
        #expect(try state.mapped(.user, className: "_User", sourceIds: ["u1", "u2"]) == ["u1": "t1"])
        // A mapping written afterwards unsettles the kind and class: look-ups go to the database again.
        try state.recordWritten(.user, className: "_User", [.init(sourceId: "u2", targetId: "t2", fixups: nil, attachments: [])])
        #expect(try state.mapped(.user, className: "_User", sourceIds: ["u1", "u2", odd]) == ["u2": "t2", odd: "t-odd"])
        // Other classes were never settled.
        try state.recordWritten(.record, className: "Memo", [.init(sourceId: "m1", targetId: "x1", fixups: nil, attachments: [])])
        try state.db.write { try $0.execute(sql: "DELETE FROM idmap WHERE source_id = 'm1'") }
        #expect(try state.mapped(.record, className: "Memo", sourceIds: ["m1"]).isEmpty)
    }
}
