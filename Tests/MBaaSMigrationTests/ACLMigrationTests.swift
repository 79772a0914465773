import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSNCMB
import MBaaSTesting
import Testing
@testable import MBaaSMigration

/// Records' ACLs: narrowed by the target, read apart from the source, kept in flight.
@Suite("Migration: ACLs")
struct ACLMigrationTests {
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
        let target = FaultyBackend(local, seed: 0, rate: 0, narrow: { acl in
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
        let source = FaultyBackend(inner, seed: 0, rate: 0, readsACLsApart: true)
        #expect(try await source.get(className: "Note", id: "a").acl == nil)

        let planned = try openLocal(scratch.path("plan.db"))
        let plan = try await Migration(source: source, target: planned, options: MigrationOptions(classes: ["Note"], dryRun: true), state: nil).run()
        #expect(plan.plan?.conversions.contains { $0.hasPrefix("ACLs: local reads records without their ACLs") } == true, "\(plan.plan?.conversions ?? [])")
        let silent = FaultyBackend(inner, seed: 0, rate: 0, without: [.acl])
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
        let failing = FaultyBackend(inner, seed: 0, rate: 0, readsACLsApart: true, recordACLFault: { $0 == "b" ? denied : nil })
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
        let target = FaultyBackend(local, seed: 0, rate: 0)   // ids are not kept: only the look-up keeps b from being written twice
        // A run that recorded a, wrote b to the target, and died before recording it.
        do {
            let state = try MigrationState(directory: scratch.path("state"))
            try state.recordWritten(.record, className: "Note", [.init(sourceId: "a", targetId: "other-a", fixups: nil, attachments: [])])
            _ = try state.beginWrites(.record, className: "Note", sourceIds: ["b"])   // a batch's mark, as a run leaves it
        }
        _ = try await local.create(Record(className: "Note", id: "other-a", acl: .publicReadWrite, fields: ["t": "a", "sourceObjectId": "a"]))
        _ = try await local.create(Record(className: "Note", id: "other-b", acl: .publicReadWrite, fields: ["t": "b", "sourceObjectId": "b"]))
        let options = MigrationOptions(classes: ["Note"], mapping: MigrationMapping(keepSourceTimestamps: false), batchSize: 1, concurrency: 1)
        let failing = FaultyBackend(inner, seed: 0, rate: 0, readsACLsApart: true,
                                   recordACLFault: { $0 == "b" ? MBaaSError(.forbidden, "ACL read denied") : nil })
        let first = try await migrate(failing, target, state: scratch.path("state"), options: options)
        #expect(first.classes.first?.failed == 1 && first.classes.first?.written == 1, "\(first.classes)")
        let second = try await migrate(FaultyBackend(inner, seed: 0, rate: 0, readsACLsApart: true), target, state: scratch.path("state"), options: options)
        #expect(second.ok, "\(second.mismatches)")
        let b = try await local.queryPage(Query("Note", predicate: .compare("sourceObjectId", .eq, "b"))).records
        #expect(b.map(\.id) == ["other-b"], "b is on the target once: \(b.map(\.id))")
        #expect(try await local.count(Query("Note")) == 3)
        await local.close()
        await inner.close()
    }
}
