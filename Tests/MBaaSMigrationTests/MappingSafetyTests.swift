import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSNCMB
import MBaaSTesting
import Testing
@testable import MBaaSMigration

/// Lines a migration's observer saw, collected across tasks.
final class NoteLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    var all: [String] { lock.withLock { lines } }
    func observe(_ event: MigrationEvent) { if case .note(let n) = event { lock.withLock { lines.append(n) } } }
}

/// A mapping never overwrites data (issue 32, point 3), lineage survives hops (point 5), and a write is tried again
/// without its id only when the target said it refused the id (point 10).
@Suite("Migration: mappings that never overwrite, lineage across hops, retries for a reason")
struct MappingSafetyTests {
    @Test("a mapping that would overwrite data by itself is refused when it is read, naming the entry")
    func refusedWhenRead() throws {
        let cases: [(String, String)] = [
            (#"{"classes":{"A":{"fields":{"x":{"drop":true,"rename":"y"}}}}}"#, "$.classes.A.fields.x:"),
            (#"{"classes":{"A":{"fields":{"x":{"rename":"id"}}}}}"#, "$.classes.A.fields.x.rename:"),
            (#"{"classes":{"A":{"fields":{"x":{"rename":"sourceObjectId"}}}}}"#, "$.classes.A.fields.x.rename:"),
            (#"{"classes":{"A":{"fields":{"x":{"rename":"sourceUpdatedAt"}}}}}"#, "$.classes.A.fields.x.rename:"),
            (#"{"sourceIdField":"ncmbId","classes":{"A":{"fields":{"x":{"rename":"ncmbId"}}}}}"#, "$.classes.A.fields.x.rename:"),
            (#"{"classes":{"A":{"fields":{"x":{"rename":"z"},"y":{"rename":"z"}}}}}"#, "$.classes.A.fields.y.rename:"),
            (#"{"classes":{"A":{"fields":{"id":{"drop":true}}}}}"#, "$.classes.A.fields.id:"),
            (#"{"classes":{"A":{"rename":"C"},"B":{"rename":"C"}}}"#, "$.classes.B:"),
            (#"{"classes":{"A":{"rename":"B"},"B":{}}}"#, "$.classes.B:"),
            (#"{"sourceIdField":"id"}"#, "$.sourceIdField:"),
            (#"{"sourceIdField":"t","sourceCreatedAtField":"t"}"#, "$.sourceCreatedAtField:"),
        ]
        for (text, path) in cases {
            let json = try JSON.parse(text)
            do {
                _ = try MigrationMapping(json: json)
                Issue.record("accepted: \(text)")
            } catch {
                #expect(error.kind == .invalidRequest && error.message.hasPrefix(path), "\(text): \(error.message)")
            }
        }
        // Nothing is overwritten: a swap, a rename onto a dropped field, onto a timestamp field that is not written.
        for text in [#"{"classes":{"A":{"fields":{"x":{"rename":"y"},"y":{"rename":"x"}}}}}"#,
                     #"{"classes":{"A":{"fields":{"x":{"rename":"y"},"y":{"drop":true}}}}}"#,
                     #"{"keepSourceTimestamps":false,"classes":{"A":{"fields":{"x":{"rename":"sourceCreatedAt"}}}}}"#] {
            let json = try JSON.parse(text)
            do { _ = try MigrationMapping(json: json) } catch { Issue.record("refused \(text): \(error.message)") }
        }
    }

    @Test("against the source, the plan refuses before anything is written, naming the entry: a rename onto a field the records keep, a lineage field naming a real field, a class or field the source lacks, two classes onto one")
    func refusedAgainstTheSource() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try NCMBExportBackend(directory: sampleExport)
        let cases: [(String, String)] = [
            (#"{"classes":{"MemoClass":{"fields":{"money":{"rename":"title"}}}}}"#, "mapping $.classes.MemoClass.fields.money.rename:"),
            (#"{"sourceIdField":"title"}"#, "mapping $.sourceIdField:"),
            (#"{"sourceCreatedAtField":"due"}"#, "mapping $.sourceCreatedAtField:"),
            (#"{"classes":{"MemoClas":{"fields":{"money":{"drop":true}}}}}"#, "mapping $.classes.MemoClas:"),
            (#"{"classes":{"MemoClass":{"fields":{"monye":{"drop":true}}}}}"#, "mapping $.classes.MemoClass.fields.monye:"),
            (#"{"classes":{"Category":{"rename":"MemoClass"}}}"#, "mapping $.classes.Category.rename:"),
        ]
        for (i, (text, path)) in cases.enumerated() {
            let target = try openLocal(scratch.path("t\(i).db"))
            let mapping = try MigrationMapping(json: JSON.parse(text))
            do {
                let report = try await migrate(source, target, state: scratch.path("s\(i)"), options: MigrationOptions(mapping: mapping))
                Issue.record("ran: \(text) \(report.classes)")
            } catch let error as MBaaSError {
                #expect(error.kind == .invalidRequest && error.message.hasPrefix(path), "\(text): \(error.message)")
            }
            #expect(try await target.listClasses().isEmpty, "\(text)")
            #expect(try await target.listUsers(after: nil, limit: 10).users.isEmpty, "\(text)")
            await target.close()
        }
        // Renames that overwrite nothing run: money and title swapped, each value under the other's name, verified.
        let target = try openLocal(scratch.path("swap.db"))
        let swap = try MigrationMapping(json: JSON.parse(#"{"classes":{"MemoClass":{"fields":{"money":{"rename":"title"},"title":{"rename":"money"}}}}}"#))
        let report = try await migrate(source, target, state: scratch.path("swap"), options: MigrationOptions(mapping: swap))
        #expect(report.ok && report.classes.first { $0.source == "MemoClass" }?.verified == 12, "\(report.mismatches)")
        let memo = try await target.get(className: "MemoClass", id: "KXBeNC7VSJ5zffgR")
        #expect(memo["title"] == .int(900) && memo["money"]?.stringValue != nil, "\(memo.fields)")
        await target.close()
    }

    @Test("a record beyond the plan's sample that a rename would overwrite is not written: it fails named, verification lists it missing, the run is not ok")
    func overwriteBeyondTheSample() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("s.db"))
        // 100 records with money alone (the plan samples them), then one with money and title.
        for i in 0..<100 {
            _ = try await source.create(Record(className: "Note", id: String(format: "n%03d", i), acl: .publicReadWrite, fields: ["money": .int(Int64(i))]))
        }
        _ = try await source.create(Record(className: "Note", id: "n100", acl: .publicReadWrite, fields: ["money": .int(100), "title": "kept"]))
        let target = try openLocal(scratch.path("t.db"))
        let mapping = try MigrationMapping(json: JSON.parse(#"{"classes":{"Note":{"fields":{"money":{"rename":"title"}}}}}"#))
        let report = try await migrate(source, target, state: scratch.path("state"), options: MigrationOptions(mapping: mapping, users: false))
        let note = try #require(report.classes.first { $0.source == "Note" })
        #expect(note.written == 100 && note.failed == 1 && note.verified == 100 && note.mismatched == 1, "\(note)")
        #expect(!report.ok)
        #expect(report.mismatches.contains { $0.kind == "failed" && $0.sourceId == "n100" && $0.detail.contains("$.classes.Note.fields.money.rename") },
                "\(report.mismatches)")
        #expect(report.mismatches.contains { $0.kind == "missing" && $0.sourceId == "n100" }, "\(report.mismatches)")
        #expect(try await target.count(Query("Note")) == 100)
        #expect(try await target.get(className: "Note", id: "n050")["title"] == .int(50))
        await source.close()
        await target.close()
    }

    @Test("a target that silently drops a renamed field is a mismatch naming it, never \"agree\"")
    func droppedRenamedFieldIsAMismatch() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try NCMBExportBackend(directory: sampleExport)
        let target = try openLocal(scratch.path("t.db"))
        let mapping = try MigrationMapping(json: JSON.parse(#"{"classes":{"MemoClass":{"fields":{"money":{"rename":"amount"}}}}}"#))
        let options = MigrationOptions(mapping: mapping)
        let report = try await migrate(source, target, state: scratch.path("state"), options: options)
        #expect(report.ok, "\(report.mismatches)")
        // The target loses the renamed field of one record.
        _ = try await target.update(className: "MemoClass", id: "KXBeNC7VSJ5zffgR", RecordUpdate(changes: ["amount": .delete]))
        let again = try await reverify(source, target, state: scratch.path("state"), options: options)
        let memo = try #require(again.classes.first { $0.source == "MemoClass" })
        #expect(memo.mismatched == 1 && memo.verified == 11 && !again.ok, "\(memo)")
        #expect(again.mismatches.contains { $0.sourceId == "KXBeNC7VSJ5zffgR" && $0.detail.contains("amount: expected 900, found (absent)") },
                "\(again.mismatches)")
        await target.close()
    }

    /// The NCMB export's records, by id.
    func exportRecords(_ cls: String) async throws -> [String: Record] {
        let source = try NCMBExportBackend(directory: sampleExport)
        var out: [String: Record] = [:]
        for try await r in source.records(matching: Query(cls), pageSize: 100) { out[r.id!] = r }
        return out
    }

    @Test("lineage survives hops: NCMB export → sqlite → bundle → sqlite ends with the NCMB ids and dates and the first copy's attachment names; every hop verified")
    func lineageThroughThreeHops() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let originals = try await exportRecords("MemoClass")
        let first = try openLocal(scratch.path("memo.db"))
        let hop1 = try await migrate(try NCMBExportBackend(directory: sampleExport), first, state: scratch.path("s1"))
        let hop2 = try await migrate(first, try BundleBackend(directory: scratch.path("bundle")), state: scratch.path("s2"),
                                     options: MigrationOptions(mapping: .verbatim))
        let last = try openLocal(scratch.path("fresh.db"))
        let hop3 = try await migrate(try BundleBackend(directory: scratch.path("bundle")), last, state: scratch.path("s3"))
        for (n, hop) in [hop1, hop2, hop3].enumerated() {
            #expect(hop.ok && hop.classes.first { $0.source == "MemoClass" }?.verified == 12, "hop \(n + 1): \(hop.mismatches)")
        }
        // The import's plan says what happens to timestamps, and that the records carry lineage.
        let plan = try #require(hop3.plan)
        #expect(plan.conversions.contains { $0.hasPrefix("timestamps: local sets its own createdAt/updatedAt (the time of writing)") }, "\(plan.conversions)")
        #expect(plan.conversions.contains { $0.hasPrefix("MemoClass: its records carry 'sourceCreatedAt', 'sourceObjectId', 'sourceUpdatedAt' from an earlier migration") },
                "\(plan.conversions)")
        var attachments = 0
        for (id, original) in originals {
            let copy = try await last.get(className: "MemoClass", id: id)
            #expect(copy["sourceObjectId"] == .string(id))
            #expect(copy["sourceCreatedAt"]?.looselyEquals(.date(try #require(original.createdAt))) == true, "\(id): \(String(describing: copy["sourceCreatedAt"]))")
            #expect(copy["sourceUpdatedAt"]?.looselyEquals(.date(try #require(original.updatedAt))) == true, "\(id): \(String(describing: copy["sourceUpdatedAt"]))")
            if let file = copy["filename"]?.fileValue {
                let firstName = try #require(try await first.get(className: "MemoClass", id: id)["filename"]?.fileValue?.name)
                #expect(file.name == firstName && file.name.hasPrefix("MemoClass/\(id)/filename/") && !file.name.dropFirst(1).contains("MemoClass/"),
                        "\(file.name)")
                attachments += 1
            }
        }
        #expect(attachments == 4)   // the fifth link names a file the export lacks
        await first.close()
        await last.close()
    }

    @Test("a source id carried from an earlier migration is kept where a hop's target made its own ids, and records are found by it: verified, a second run and an adopting run write nothing")
    func carriedIdAcrossNewIds() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let originals = try await exportRecords("MemoClass")
        // The first copy makes its own ids (a target without clientIds).
        let a = try openLocal(scratch.path("a.db"))
        let hop1 = try await migrate(try NCMBExportBackend(directory: sampleExport), FaultyBackend(a, seed: 1, rate: 0), state: scratch.path("s1"),
                                     options: MigrationOptions(users: false))
        #expect(hop1.ok, "\(hop1.mismatches)")
        var aIds: [String: String] = [:]   // NCMB id → a's id
        for try await r in a.records(matching: Query("MemoClass"), pageSize: 100) { aIds[try #require(r["sourceObjectId"]?.stringValue)] = r.id }
        #expect(Set(aIds.keys) == Set(originals.keys) && aIds.allSatisfy { $0.key != $0.value })
        let b = try openLocal(scratch.path("b.db"))
        let hop2 = try await migrate(a, b, state: scratch.path("s2"), options: MigrationOptions(users: false))
        #expect(hop2.ok && hop2.classes.first { $0.source == "MemoClass" }?.verified == 12, "\(hop2.mismatches)")
        for (ncmbId, aId) in aIds {
            let copy = try await b.get(className: "MemoClass", id: aId)
            #expect(copy["sourceObjectId"] == .string(ncmbId))
            #expect(copy["sourceCreatedAt"]?.looselyEquals(.date(try #require(originals[ncmbId]?.createdAt))) == true)
        }
        let rerun = try await migrate(a, b, state: scratch.path("s2"), options: MigrationOptions(users: false))
        let adopted = try await migrate(a, b, state: scratch.path("s3"), options: MigrationOptions(users: false))
        for run in [rerun, adopted] {
            let memo = try #require(run.classes.first { $0.source == "MemoClass" })
            #expect(run.ok && memo.written == 0 && memo.skipped == 12 && memo.verified == 12, "\(memo) \(run.mismatches)")
        }
        #expect(try await b.count(Query("MemoClass")) == 12)
        await a.close()
        await b.close()
    }

    @Test("a write is tried again without its id only when the target said it refused the id, never because the message contains \"id\" (as \"invalid\" does)")
    func retriesOnlyARefusedId() async throws {
        let record = Record(className: "Note", id: "x")
        #expect(!Migration.retriesWithoutId(MBaaSError(.invalidRequest, "invalid field name 'a.b'"), record))
        #expect(!Migration.retriesWithoutId(MBaaSError(.invalidRequest, "record id 'x' is not valid"), record))
        #expect(Migration.retriesWithoutId(MBaaSError(.invalidRequest, "no").refusing(MBaaSError.recordIdKey), record))
        #expect(!Migration.retriesWithoutId(MBaaSError(.invalidRequest, "no").refusing(MBaaSError.recordIdKey), Record(className: "Note")))
        #expect(!Migration.retriesWithoutId(MBaaSError(.invalidRequest, "no").refusing("title"), record))

        // On the embedded store: an id it refuses is written again without it; a field name it refuses fails at once.
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("s.db"))
        let target = try openLocal(scratch.path("t.db"))
        let notes = NoteLines()
        let migration = Migration(source: source, target: target, state: try MigrationState(directory: scratch.path("state")),
                                  observer: { notes.observe($0) })
        let outcome = try await migration.createWithRetry([
            .init(sourceId: "bad/id", record: Record(className: "Note", id: "bad/id", fields: ["text": "a"])),
            .init(sourceId: "p", record: Record(className: "Note", id: "p", fields: ["a.b": "x"])),
        ], className: "Note")
        let made = try #require(outcome.created["bad/id"])
        #expect(made != "bad/id")
        #expect(try await target.get(className: "Note", id: made)["text"] == "a")
        #expect(outcome.failed["p"]?.kind == .invalidRequest && outcome.failed["p"]?.refusedField == nil, "\(String(describing: outcome.failed["p"]))")
        let retries = notes.all.filter { $0.contains("retrying") }
        #expect(retries.count == 1 && retries[0].hasPrefix("Note: retrying 1 writes (attempt 2)"), "\(retries)")
        // Each adapter that refuses a client id says so in the detail (the embedded store here).
        do {
            _ = try await target.create(Record(className: "Note", id: "bad/id"))
            Issue.record("created")
        } catch let error as MBaaSError {
            #expect(error.refusesRecordId && error.kind == .invalidRequest)
        }
        await source.close()
        await target.close()
    }
}
