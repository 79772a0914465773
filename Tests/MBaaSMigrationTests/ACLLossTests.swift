import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSTesting
import Testing
@testable import MBaaSMigration

/// Issue 32, points 6, 7 and 9: nothing private becomes readable by more people (`--acl-loss`), partial sources are
/// said, and attachment names a target refuses reach it anyway.
@Suite("Migration: ACL loss, partial sources, attachment names")
struct ACLLossTests {
    /// A Local source with the user `boss`, four `Note`s (open to everyone, owner-only, read-only for others, none),
    /// and two standalone files (owner-only, open).
    static func source(_ scratch: Scratch) async throws -> LocalBackend {
        let source = try openLocal(scratch.path("s.db"))
        _ = try await source.importUser(DirectoryUser(id: "boss", username: "boss"), password: .unusable)
        let readOnly = ACL([.everyone: .read, .user("boss"): .readWrite])
        for (id, acl) in [("open", ACL.publicReadWrite), ("owner", .privateTo("boss")), ("readOnly", readOnly)] as [(String, ACL)] {
            _ = try await source.create(Record(className: "Note", id: id, acl: acl, fields: ["text": .string(id)]))
        }
        _ = try await source.create(Record(className: "Note", id: "bare", fields: ["text": "bare"]))
        _ = try await source.upload(FileUpload(name: "secret.txt", source: .data(Data("s".utf8)), acl: .privateTo("boss")))
        _ = try await source.upload(FileUpload(name: "public.txt", source: .data(Data("p".utf8)), acl: .publicReadWrite))
        return source
    }

    @Test("into a target without ACLs, a record or file whose ACL is not open to everyone fails, named, by default (the plan says so first); --acl-loss allow, or the class's mapping entry, writes it and lists each")
    func recordsAndFilesWithoutACLs() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try await Self.source(scratch)
        func target(_ name: String) throws -> (LocalBackend, FaultyBackend) {
            let local = try openLocal(scratch.path(name))
            return (local, FaultyBackend(local, seed: 0, rate: 0, without: [.acl, .fileACL]))
        }
        let (planned, plannedTarget) = try target("plan.db")
        let plan = try await Migration(source: source, target: plannedTarget, options: MigrationOptions(classes: ["Note"], dryRun: true), state: nil).run()
        let lines = plan.plan?.unsupported ?? []
        #expect(lines.contains { $0.hasPrefix("ACLs: local does not enforce per-record ACLs") && $0.contains("so it is not written: it fails, named") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("file ACLs: local does not keep them") && $0.contains("so it is not copied: it fails, named") }, "\(lines)")
        #expect(try await planned.count(Query("Note")) == 0)

        // By default: the owner-only and read-only records and the private file fail, each named; nothing of them
        // reaches the target; the run is not ok (exit 8).
        let (local, refusing) = try target("t.db")
        let refused = try await migrate(source, refusing, state: scratch.path("state"), options: MigrationOptions(classes: ["Note"]))
        let notes = try #require(refused.classes.first)
        #expect(!refused.ok && notes.read == 4 && notes.written == 2 && notes.failed == 2, "\(refused.classes)")
        let failed = refused.mismatches.filter { $0.kind == "failed" }
        #expect(Set(failed.compactMap(\.sourceId)) == ["owner", "readOnly", "secret.txt"], "\(refused.mismatches)")
        #expect(failed.contains { $0.sourceId == "owner" && $0.detail == #"its ACL {"boss":{"read":true,"write":true}} cannot be kept: local does not enforce per-record ACLs, so the record would be readable by everyone there, so the record was not written (--acl-loss allow writes it)"# },
                "\(failed)")
        #expect(failed.contains { $0.sourceId == "secret.txt" && $0.detail.contains("cannot be kept: local's files have none") }, "\(failed)")
        #expect(refused.files.written == 1 && refused.files.failed == 1, "\(refused.files)")
        let written = try await local.queryPage(Query("Note", limit: 10)).records.compactMap { $0["sourceObjectId"]?.stringValue }
        #expect(Set(written) == ["open", "bare"], "\(written)")
        #expect(try await local.listFiles(prefix: nil, limit: nil).map(\.reference.name) == ["public.txt"])

        // Allowed, the same command writes what failed, and lists each record and file it widened.
        let allowed = try await migrate(source, refusing, state: scratch.path("state"), options: MigrationOptions(classes: ["Note"], aclLoss: .allow))
        #expect(allowed.ok && allowed.classes.first?.written == 2 && allowed.files.written == 1, "\(allowed.classes) \(allowed.files) \(allowed.mismatches)")
        let widened = allowed.warnings.filter { $0.kind == "acl" }
        #expect(Set(widened.compactMap(\.sourceId)) == ["owner", "readOnly", "secret.txt"] && widened.count == 3, "\(widened)")
        #expect(widened.contains { $0.sourceId == "owner" && $0.detail.hasSuffix("; written so (--acl-loss allow)") }, "\(widened)")
        #expect(try await local.count(Query("Note")) == 4)

        // A class's mapping entry allows it for that class alone: its records are written, the private standalone
        // file still fails.
        let (mapped, mappedTarget) = try target("m.db")
        let mapping = try MigrationMapping(json: JSON.parse(Data(#"{"classes":{"Note":{"aclLoss":"allow"}}}"#.utf8)))
        let byClass = try await migrate(source, mappedTarget, state: scratch.path("state-m"), options: MigrationOptions(classes: ["Note"], mapping: mapping))
        #expect(byClass.classes.first?.written == 4 && byClass.classes.first?.failed == 0, "\(byClass.classes)")
        #expect(!byClass.ok && byClass.files.failed == 1 && Set(byClass.mismatches.compactMap(\.sourceId)) == ["secret.txt"], "\(byClass.mismatches)")
        #expect(try await mapped.count(Query("Note")) == 4)
        do {
            _ = try MigrationMapping(json: JSON.parse(Data(#"{"classes":{"Note":{"aclLoss":"maybe"}}}"#.utf8)))
            Issue.record("an aclLoss of 'maybe' was accepted")
        } catch let e as MBaaSError {
            #expect(e.kind == .invalidRequest && e.message == #"$.classes.Note.aclLoss must be "fail" or "allow""#, "\(e)")
        }
        for store in [planned, local, mapped, source] { await store.close() }
    }

    @Test("a target that would store an ACL wider (granting more to someone but the writing user) fails its records by default; --acl-loss allow writes them, each listed")
    func widenedByNarrowing() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try await Self.source(scratch)
        for allow in [false, true] {
            let local = try openLocal(scratch.path("t\(allow).db"))
            // This target stores an ACL that grants everyone nothing (the owner-only one) as open to everyone; every
            // other ACL as given.
            let target = FaultyBackend(local, seed: 0, rate: 0, narrow: { $0.entries[.everyone] == nil ? .publicReadWrite : nil })
            let report = try await migrate(source, target, state: scratch.path("state\(allow)"),
                                           options: MigrationOptions(classes: ["Note"], files: false, aclLoss: allow ? .allow : .fail))
            let notes = try #require(report.classes.first)
            #expect(notes.written == (allow ? 4 : 3) && notes.failed == (allow ? 0 : 1) && report.ok == allow, "\(report.classes) \(report.mismatches)")
            // (Refused, it is also missing in verification.)
            let named = (allow ? report.warnings : report.mismatches.filter { $0.kind == "failed" }).filter { $0.sourceId == "owner" }
            #expect(named.count == 1 && named.first?.detail.contains(#"would be stored on local as {"*":{"read":true,"write":true}}, which grants more"#) == true,
                    "\(report.warnings) \(report.mismatches)")
            // Never said as a narrowing that "grants nobody else more".
            #expect(!report.warnings.contains { $0.detail.contains("grants nobody else more") }, "\(report.warnings)")
            await local.close()
        }
        await source.close()
    }

    @Test("an attachment whose own ACL grants less than its record's fails by default on a target whose attachments follow their record, and is attached with --acl-loss allow")
    func narrowerAttachmentFails() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        // `n` is open to everyone; its attachment is the boss's alone.
        let source = try await sourceWithOwnAttachment(scratch)
        let local = try openLocal(scratch.path("t.db"))
        let target = FaultyBackend(local, seed: 0, rate: 0, without: [.attachmentACL])
        let refused = try await migrate(source, target, state: scratch.path("state"), options: MigrationOptions(classes: ["Note"]))
        #expect(!refused.ok && refused.files.failed == 1 && refused.files.written == 0, "\(refused.files)")
        #expect(refused.mismatches.contains { $0.kind == "failed" && $0.sourceId == "n" && $0.detail.hasSuffix("so it was not attached (--acl-loss allow attaches it)") },
                "\(refused.mismatches)")
        #expect(try await local.listFiles(prefix: nil, limit: nil).isEmpty)
        let allowed = try await migrate(source, target, state: scratch.path("state"), options: MigrationOptions(classes: ["Note"], aclLoss: .allow))
        #expect(allowed.ok && allowed.files.written == 1, "\(allowed.files) \(allowed.mismatches)")
        #expect(allowed.warnings.contains { $0.kind == "acl" && $0.sourceId == "n" && $0.detail.contains("its own ACL") }, "\(allowed.warnings)")
        await local.close()
        await source.close()
    }

    @Test("a source that enforces ACLs read without an administrative identity is said in the plan and the report, with the adapter's way to read it all; an administrative one is not")
    func partialSourceIsSaid() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let owner = try openLocal(scratch.path("s.db"))
        _ = try await owner.importUser(DirectoryUser(id: "boss", username: "boss"), password: .unusable)
        _ = try await owner.create(Record(className: "Note", id: "public", acl: .publicReadWrite, fields: ["text": "p"]))
        _ = try await owner.create(Record(className: "Note", id: "private", acl: .privateTo("boss"), fields: ["text": "s"]))
        await owner.close()
        // Opened as an app would (not administrative): the caller reads what ACLs grant everyone.
        let anonymous = try LocalBackend(path: scratch.path("s.db").path, context: BackendContext(),
                                         options: LocalBackend.Options(passwordHashing: .testing))
        let said = "partial source: local enforces ACLs and this caller has no administrative identity there, so only what it may read is moved; records and files others keep private are neither copied nor counted, and verification cannot see them (to move everything: calls without a session read what ACLs grant everyone; open the database administrative (as mbaas migrate does) to read every record)"
        let target = try openLocal(scratch.path("t.db"))
        let plan = try await Migration(source: anonymous, target: target, options: MigrationOptions(classes: ["Note"], dryRun: true, users: false), state: nil).run()
        #expect(plan.plan?.unsupported.contains(said) == true, "\(plan.plan?.unsupported ?? [])")
        let report = try await migrate(anonymous, target, state: scratch.path("state"), options: MigrationOptions(classes: ["Note"], users: false))
        #expect(report.problems.contains(said) && report.classes.first?.read == 1, "\(report.problems) \(report.classes)")
        #expect(report.table.contains("note: \(said)"))
        await anonymous.close()
        let administrative = try openLocal(scratch.path("s.db"))
        let other = try openLocal(scratch.path("t2.db"))
        let whole = try await migrate(administrative, other, state: scratch.path("state2"), options: MigrationOptions(classes: ["Note"]))
        #expect(whole.ok && whole.classes.first?.read == 2 && !whole.problems.contains { $0.hasPrefix("partial source") }, "\(whole.problems)")
        for store in [target, administrative, other] { await store.close() }
    }

    @Test("a file name with '/' that the target refuses (as NCMB, Parse and AppPot do) goes under a name it takes, attached or as a File value; an attachment goes under its own name; the record has its file, verified")
    func fileNamesTheTargetRefuses() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        // Local names the attachment `Note/n/photo/own.txt`; the copy uploads it as `own.txt` (no prefix per hop).
        let source = try await sourceWithOwnAttachment(scratch)
        // A stored file whose own name has a '/', linked by another record's File value.
        let doc = try await source.upload(FileUpload(name: "docs/a.txt", source: .data(Data("doc".utf8)), acl: .publicReadWrite))
        _ = try await source.create(Record(className: "Note", id: "m", acl: .publicReadWrite, fields: ["photo": .file(doc)]))
        for plain in [false, true] {
            let local = try openLocal(scratch.path("t\(plain).db"))
            let target = FaultyBackend(local, seed: 0, rate: 0, plainFileStore: plain, refusesFileName: { $0.contains("/") })
            let report = try await migrate(source, target, state: scratch.path("state\(plain)"), options: MigrationOptions(classes: ["Note"]))
            #expect(report.ok && report.files.failed == 0, "plain \(plain): \(report.files) \(report.mismatches)")
            // Attached on the target, the attachment goes under its own name (the target adds its record's prefix);
            // into a separate store, under the whole name, which the target refuses and takes with '_'.
            let own = plain ? ["Note/n/photo/own.txt", "Note_n_photo_own.txt"] : ["own.txt"]
            #expect(target.uploadAttempts.sorted() == (own + ["docs/a.txt", "docs_a.txt"]).sorted(), "plain \(plain): \(target.uploadAttempts)")
            for (id, name, content) in [("n", own.last!, "own"), ("m", "docs_a.txt", "doc")] {
                let record = try #require(try await local.queryPage(Query("Note", predicate: .compare("sourceObjectId", .eq, .string(id)))).records.first)
                let file = try #require(record["photo"]?.fileValue, "plain \(plain): \(record.fields)")
                let bytes = try await local.download(file)
                #expect(file.name.hasSuffix(name) && !file.name.contains("/docs/") && bytes == Data(content.utf8), "\(file)")
            }
            await local.close()
        }
        await source.close()
    }
}
