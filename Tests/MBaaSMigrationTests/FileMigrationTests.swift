import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSNCMB
import MBaaSTesting
import Testing
@testable import MBaaSMigration

/// Linked, attached and standalone files: their ACLs, concurrency, refusals and verification.
@Suite("Migration: files")
struct FileMigrationTests {
    @Test("a file's ACL goes with it; a target whose files have no ACLs gets the file without it, said, and the run goes on")
    func fileACLs() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("s.db"))
        _ = try await source.importUser(DirectoryUser(id: "boss", username: "boss"), password: .unusable)
        _ = try await source.upload(FileUpload(name: "private.txt", source: .data(Data("mine".utf8)), contentType: "text/plain", acl: .privateTo("boss")))
        // A file a record links to has its own ACL in a separate file store: it goes with the file too.
        _ = try await source.upload(FileUpload(name: "linked.txt", source: .data(Data("linked".utf8)), contentType: "text/plain", acl: .privateTo("boss")))
        _ = try await source.upload(FileUpload(name: "open.txt", source: .data(Data("open".utf8)), contentType: "text/plain", acl: .publicReadWrite))
        _ = try await source.create(Record(className: "Note", fields: ["text": "n", "photo": .file(FileReference(name: "linked.txt")),
                                                                       "open": .file(FileReference(name: "open.txt"))]))
        for refuses in [false, true] {
            let local = try openLocal(scratch.path("t\(refuses).db"))
            let target = FaultyBackend(local, seed: 0, rate: 0, plainFileStore: true, refusesFileACLs: refuses)
            // The loss allowed (--acl-loss allow): by default such files fail (ACLLossTests).
            let plan = try await Migration(source: source, target: target, options: MigrationOptions(classes: ["Note"], dryRun: true, aclLoss: .allow), state: nil).run()
            #expect((plan.plan?.unsupported ?? []).contains { $0.hasPrefix("file ACLs: local does not keep them") } == refuses)
            let report = try await migrate(source, target, state: scratch.path("state\(refuses)"), options: MigrationOptions(classes: ["Note"], aclLoss: .allow))
            #expect(report.files.written == 3 && report.files.verified == 3 && report.files.failed == 0, "\(refuses): \(report.files) \(report.mismatches)")
            #expect(report.classes.first?.written == 1, "the run went on past the file")
            let stored = try #require(try await local.listFiles(prefix: "private", limit: 10).first)
            #expect(target.uploadAttempts.count == 3, "each file once: \(target.uploadAttempts)")
            // A file open to everyone loses nothing on a store without file ACLs: no warning for it.
            #expect(!report.warnings.contains { $0.sourceId == "open.txt" }, "\(report.warnings)")
            #expect(try await local.download(stored.reference) == Data("mine".utf8))
            let said = report.problems.contains { $0.hasPrefix("file ACLs: local does not keep them") }
            #expect(said == refuses, "\(report.problems)")
            #expect(report.warnings.contains { $0.sourceId == "private.txt" && $0.detail.contains("its ACL is not kept") } == refuses)
            #expect((stored.acl == .privateTo("boss")) == !refuses, "\(String(describing: stored.acl))")
            let linked = try #require(try await local.listFiles(prefix: "linked", limit: 10).first)
            #expect((linked.acl == .privateTo("boss")) == !refuses, "linked: \(String(describing: linked.acl))")
            #expect(report.warnings.contains { $0.sourceId == "linked.txt" && $0.detail.contains("its ACL is not kept") } == refuses)
            await local.close()
        }
        await source.close()
    }

    @Test("a linked file with an ACL of its own keeps it as an attachment where attachments have ACLs, and verification compares it; elsewhere it is reachable as its record is, which the plan and the report say")
    func attachedFileACLs() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("s.db"))
        _ = try await source.importUser(DirectoryUser(id: "boss", username: "boss"), password: .unusable)
        _ = try await source.upload(FileUpload(name: "private.txt", source: .data(Data("p".utf8)), acl: .privateTo("boss")))
        _ = try await source.upload(FileUpload(name: "open.txt", source: .data(Data("o".utf8)), acl: .publicReadWrite))
        _ = try await source.create(Record(className: "Note", id: "n", acl: .publicReadWrite,
                                           fields: ["photo": .file(FileReference(name: "private.txt")), "open": .file(FileReference(name: "open.txt"))]))
        for keeps in [true, false] {
            // The embedded store attaches files to their records, each with an ACL of its own (or, here, without).
            let local = try openLocal(scratch.path("t\(keeps).db"))
            let target = FaultyBackend(local, seed: 0, rate: 0, without: keeps ? [] : [.attachmentACL])
            let said = "file ACLs: files records link to are attached to their records on local and reachable as the record is; their own ACLs are not kept (files no record links to keep theirs)"
            // The loss allowed (--acl-loss allow): by default such files fail (ACLLossTests).
            let plan = try await Migration(source: source, target: target, options: MigrationOptions(classes: ["Note"], dryRun: true, aclLoss: .allow), state: nil).run()
            #expect(plan.plan?.unsupported.contains(said) == !keeps, "\(keeps): \(plan.plan?.unsupported ?? [])")
            let report = try await migrate(source, target, state: scratch.path("state\(keeps)"), options: MigrationOptions(classes: ["Note"], aclLoss: .allow))
            #expect(report.ok && report.files.written == 2 && report.files.failed == 0, "\(keeps): \(report.files) \(report.mismatches)")
            #expect(report.problems.contains(said) == !keeps, "\(keeps): \(report.problems)")
            let warnings = report.warnings.filter { $0.kind == "acl" }
            if keeps {
                #expect(warnings.isEmpty, "\(warnings)")
            } else {
                #expect(warnings.count == 1 && warnings.first?.sourceId == "n"
                        && warnings.first?.detail == #"file 'private.txt' (field photo): attached to its record on local, it is reachable as the record is; its own ACL {"boss":{"read":true,"write":true}} is not kept"#,
                        "\(warnings)")
            }
            let attached = try await local.listFiles(prefix: nil, limit: nil).filter { $0.reference.attachment != nil }
            let photo = try #require(attached.first { $0.reference.attachment?.field == "photo" })
            // Kept: the file's own ACL, the user's through the id map. Not kept: the record's, open to everyone.
            let boss = try #require(report.userOutcomes.first { $0.sourceId == "boss" }?.targetId)
            #expect(photo.acl == (keeps ? .privateTo(boss) : .publicReadWrite), "\(keeps): \(String(describing: photo.acl))")
            #expect(attached.first { $0.reference.attachment?.field == "open" }?.acl == .publicReadWrite)
            if keeps {
                // Verification compares an attachment's ACL where attachments have their own: the private one
                // opened on the target is a mismatch naming both ACLs, until it is put right.
                #expect(report.files.verified == 2 && report.files.mismatched == 0, "\(report.files)")
                func reattach(_ acl: ACL) async throws {
                    let current = try #require(try await local.listFiles(prefix: nil, limit: nil).first { $0.reference.attachment?.field == "photo" })
                    try await local.deleteFile(current.reference)
                    let again = try await local.upload(FileUpload(name: "private.txt", source: .data(Data("p".utf8)), acl: acl,
                                                                  attachment: photo.reference.attachment))
                    #expect(again.name == photo.reference.name)
                }
                let verify = { () async throws -> MigrationReport in
                    try await reverify(source, target, state: scratch.path("state\(keeps)"), options: MigrationOptions(classes: ["Note"]))
                }
                try await reattach(.publicReadWrite)
                let opened = try await verify()
                let expected = ACL.privateTo(boss).json.printed([.sortedKeys])
                #expect(!opened.ok && opened.files.verified == 1 && opened.files.mismatched == 1, "\(opened.files) \(opened.mismatches)")
                #expect(opened.mismatches.contains { $0.kind == "file" && $0.sourceId == "n"
                    && $0.detail == #"file \#(photo.reference.name): ACL {"*":{"read":true,"write":true}}, expected \#(expected)"# },
                        "\(opened.mismatches)")
                try await reattach(.privateTo(boss))
                let fixed = try await verify()
                #expect(fixed.ok && fixed.files.verified == 2 && fixed.files.mismatched == 0, "\(fixed.files) \(fixed.mismatches)")
            }
            await local.close()
        }
        await source.close()
    }

    @Test("a source attachment with an ACL of its own, copied into a target's separate store, is verified by that ACL")
    func sourceAttachmentIntoSeparateStore() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try await sourceWithOwnAttachment(scratch)
        // Into a store without attachments, whose own attachments may or may not have ACLs (a bundle has none).
        for attachmentACL in [true, false] {
            let local = try openLocal(scratch.path("t\(attachmentACL).db"))
            let target = FaultyBackend(local, seed: 0, rate: 0, plainFileStore: true, without: attachmentACL ? [] : [.attachmentACL])
            let state = scratch.path("state\(attachmentACL)")
            let report = try await migrate(source, target, state: state, options: MigrationOptions(classes: ["Note"]))
            #expect(report.ok && report.files.written == 1 && report.files.verified == 1, "\(report.files) \(report.mismatches)")
            let copy = try #require(try await local.listFiles(prefix: nil, limit: nil).first)
            let boss = try #require(report.userOutcomes.first { $0.sourceId == "boss" }?.targetId)
            #expect(copy.reference.attachment == nil && copy.acl == .privateTo(boss), "\(copy)")
            // Opened on the target: the verification names it.
            try await local.deleteFile(copy.reference)
            _ = try await local.upload(FileUpload(name: copy.reference.name, source: .data(Data("own".utf8)), acl: .publicReadWrite))
            let opened = try await reverify(source, target, state: state, options: MigrationOptions(classes: ["Note"]))
            #expect(!opened.ok && opened.files.mismatched == 1, "\(attachmentACL): \(opened.files) \(opened.mismatches)")
            #expect(opened.mismatches.contains { $0.kind == "file" && $0.detail.contains(#"ACL {"*":{"read":true,"write":true}}, expected"#) },
                    "\(attachmentACL): \(opened.mismatches)")
            await local.close()
        }
        await source.close()
    }

    @Test("an attachment whose own ACL grants less than its record's is said per file, and once for the run, where the target's attachments follow their record; one no narrower is not")
    func narrowerAttachmentsAreSaid() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("s.db"))
        _ = try await source.importUser(DirectoryUser(id: "boss", username: "boss"), password: .unusable)
        for (id, recordACL) in [("wide", ACL.publicReadWrite), ("same", ACL.privateTo("boss")), ("bare", nil)] {
            _ = try await source.create(Record(className: "Note", id: id, acl: recordACL, fields: ["text": .string(id)]))
            _ = try await source.upload(FileUpload(name: "\(id).txt", source: .data(Data(id.utf8)), acl: .privateTo("boss"),
                                                   attachment: FileAttachment(className: "Note", objectId: id, field: "photo")))
        }
        let local = try openLocal(scratch.path("t.db"))
        let target = FaultyBackend(local, seed: 0, rate: 0, without: [.attachmentACL])
        let said = { (line: String) in line.hasPrefix("file ACLs: files records link to are attached to their records on local") }
        // The plan cannot tell a narrower attachment from one with its record's ACL without reading the records.
        let plan = try await Migration(source: source, target: target, options: MigrationOptions(classes: ["Note"], dryRun: true), state: nil).run()
        #expect(plan.plan?.unsupported.contains(where: said) == false, "\(plan.plan?.unsupported ?? [])")
        // The loss allowed (--acl-loss allow): by default such attachments fail (ACLLossTests).
        let report = try await migrate(source, target, state: scratch.path("state"), options: MigrationOptions(classes: ["Note"], aclLoss: .allow))
        #expect(report.ok && report.files.written == 3 && report.files.failed == 0, "\(report.files) \(report.mismatches)")
        let warnings = report.warnings.filter { $0.kind == "acl" }
        // A record without an ACL is open to everyone: its private attachment is narrower too.
        #expect(warnings.compactMap(\.sourceId).sorted() == ["bare", "wide"] && warnings.count == 2, "\(warnings)")
        let name = try #require(try await source.listFiles(prefix: nil, limit: nil).first { $0.reference.attachment?.objectId == "wide" }?.reference.name)
        #expect(warnings.contains { $0.sourceId == "wide" && $0.detail == #"file '\#(name)' (field photo): attached to its record on local, it is reachable as the record is; its own ACL {"boss":{"read":true,"write":true}} is not kept"# },
                "\(warnings)")
        #expect(report.problems.contains(where: said), "\(report.problems)")

        // Attachments with their record's ACL (as Local gives one uploaded without its own): nothing is lost or said.
        let plain = try openLocal(scratch.path("s2.db"))
        _ = try await plain.importUser(DirectoryUser(id: "boss", username: "boss"), password: .unusable)
        _ = try await plain.create(Record(className: "Note", id: "p", acl: .privateTo("boss"), fields: ["text": "p"]))
        _ = try await plain.upload(FileUpload(name: "p.txt", source: .data(Data("p".utf8)),
                                              attachment: FileAttachment(className: "Note", objectId: "p", field: "photo")))
        let other = try openLocal(scratch.path("t2.db"))
        let quiet = try await migrate(plain, FaultyBackend(other, seed: 0, rate: 0, without: [.attachmentACL]), state: scratch.path("state2"),
                                      options: MigrationOptions(classes: ["Note"]))
        #expect(quiet.ok && quiet.files.written == 1, "\(quiet.files) \(quiet.mismatches)")
        #expect(quiet.warnings.filter { $0.kind == "acl" }.isEmpty && !quiet.problems.contains(where: said), "\(quiet.warnings) \(quiet.problems)")
        await other.close()
        await plain.close()
        await local.close()
        await source.close()
    }

    @Test("an attachment with an ACL of its own on the source keeps it on a target whose attachments have ACLs; a store that does not list its files' ACLs is said in the plan, and its files are not compared by ACL")
    func attachmentsAndUnlistedFileACLs() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try await sourceWithOwnAttachment(scratch)
        _ = try await source.upload(FileUpload(name: "loose.txt", source: .data(Data("loose".utf8)), acl: .privateTo("boss")))
        let local = try openLocal(scratch.path("t.db"))
        let report = try await migrate(source, local, state: scratch.path("state"), options: MigrationOptions(classes: ["Note"]))
        #expect(report.ok && report.files.written == 2, "\(report.files) \(report.mismatches)")
        let attached = try #require(try await local.listFiles(prefix: nil, limit: nil).first { $0.reference.attachment?.field == "photo" })
        #expect(attached.acl == .privateTo("boss"), "\(String(describing: attached.acl))")
        #expect(report.warnings.filter { $0.kind == "acl" }.isEmpty, "\(report.warnings)")

        // A source that keeps file ACLs but neither lists nor reads them: the plan says the files go without them.
        let unlisting = FaultyBackend(source, seed: 0, rate: 0, without: [.fileACLListing, .fileACLRead])
        let plan = try await Migration(source: unlisting, target: local, options: MigrationOptions(classes: ["Note"], dryRun: true), state: nil).run()
        #expect(plan.plan?.unsupported.contains { $0.hasPrefix("file ACLs: local does not list its files' ACLs") } == true, "\(plan.plan?.unsupported ?? [])")
        // A target that does not list them: its files are not compared by ACL, so a copy that lost its ACL passes
        // (what the capability declares: nothing to read it from), rather than every file failing.
        try await local.deleteFile(FileReference(name: "loose.txt"))
        _ = try await local.upload(FileUpload(name: "loose.txt", source: .data(Data("loose".utf8))))
        let listing = try await reverify(source, local, state: scratch.path("state"), options: MigrationOptions(classes: ["Note"]))
        #expect(!listing.ok && listing.mismatches.contains { $0.sourceId == "loose.txt" && $0.detail.contains("ACL none, expected") }, "\(listing.mismatches)")
        let unlisted = try await reverify(source, FaultyBackend(local, seed: 0, rate: 0, without: [.fileACLListing]), state: scratch.path("state"),
                                          options: MigrationOptions(classes: ["Note"]))
        #expect(unlisted.files.mismatched == 0 && !unlisted.mismatches.contains { $0.detail.contains("ACL") }, "\(unlisted.mismatches)")
        await local.close()
        await source.close()
    }

    @Test("a source that reads its files' ACLs one by one (fileACLRead, as Kii) hands them over: standalone and linked files keep them, verification compares them, and a file whose ACL cannot be read is not uploaded")
    func filesWithACLsReadOneByOne() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let inner = try openLocal(scratch.path("s.db"))
        _ = try await inner.importUser(DirectoryUser(id: "boss", username: "boss"), password: .unusable)
        _ = try await inner.upload(FileUpload(name: "loose.txt", source: .data(Data("loose".utf8)), acl: .privateTo("boss")))
        _ = try await inner.upload(FileUpload(name: "linked.png", source: .data(Data("linked".utf8)), acl: .privateTo("boss")))
        _ = try await inner.upload(FileUpload(name: "open.txt", source: .data(Data("open".utf8))))
        _ = try await inner.create(Record(className: "Note", id: "n", acl: .publicReadWrite, fields: ["photo": .file(FileReference(name: "linked.png"))]))
        // The list carries no ACLs: without the reads, the private files would land open to everyone.
        let source = FaultyBackend(inner, seed: 0, rate: 0, without: [.fileACLListing])
        let planned = try openLocal(scratch.path("plan.db"))
        let plan = try await Migration(source: source, target: planned, options: MigrationOptions(dryRun: true), state: nil).run()
        #expect(plan.plan?.unsupported.contains { $0.hasPrefix("file ACLs:") } == false, "\(plan.plan?.unsupported ?? [])")
        await planned.close()

        // Into a plain file store (File values copied before their records) and into one that attaches them.
        for plain in [true, false] {
            let local = try openLocal(scratch.path("t\(plain).db"))
            let target = FaultyBackend(local, seed: 0, rate: 0, plainFileStore: plain)
            let report = try await migrate(source, target, state: scratch.path("state\(plain)"))
            #expect(report.ok && report.files.written == 3 && report.files.verified == 3, "\(report.files) \(report.mismatches)")
            let stored = Dictionary(try await local.listFiles(prefix: nil, limit: nil).map { ($0.reference.name, $0.acl) }, uniquingKeysWith: { a, _ in a })
            #expect(stored["loose.txt"] == .some(.privateTo("boss")), "plain \(plain): \(stored)")
            // Attached, it is stored under its record's path (`Note/<id>/photo/linked.png`).
            let linked = stored.filter { $0.key.hasSuffix("linked.png") }
            #expect(linked.count == 1 && linked.first?.value == .some(.privateTo("boss")), "plain \(plain): \(stored)")
            #expect(report.warnings.filter { $0.kind == "acl" }.isEmpty, "\(report.warnings)")
            // Verification reads them too: a copy that lost its ACL is a mismatch.
            _ = try await local.repairFileACL(name: "loose.txt", acl: .publicReadWrite)
            let again = try await reverify(source, target, state: scratch.path("state\(plain)"))
            #expect(!again.ok && again.mismatches.contains { $0.sourceId == "loose.txt" && $0.detail.contains("ACL") }, "\(again.mismatches)")
            // A file whose ACL cannot be read is that file's mismatch, counted once; the others are compared.
            let unreadable = FaultyBackend(inner, seed: 0, rate: 0, without: [.fileACLListing],
                                          fileACLFault: { $0 == "open.txt" ? MBaaSError(.forbidden, "ACL read denied") : nil })
            let partly = try await reverify(unreadable, target, state: scratch.path("state\(plain)"))
            #expect(partly.mismatches.contains { $0.sourceId == "open.txt" && $0.detail.contains("ACL read denied") }, "\(partly.mismatches)")
            #expect(partly.files.mismatched == 2 && partly.files.verified == 1, "plain \(plain): \(partly.files) \(partly.mismatches)")
            await local.close()
        }
        // Three per copy, three per verification, three per re-verification, in each of the two runs.
        #expect(source.fileACLReads >= 18, "\(source.fileACLReads)")

        // A file whose ACL cannot be read is not uploaded (without it, it would be open to everyone); the record
        // linking it is not written; the run goes on, says so, and the same command moves them once it can be read.
        let denied = MBaaSError(.forbidden, "ACL read denied")
        let failing = FaultyBackend(inner, seed: 0, rate: 0, without: [.fileACLListing], fileACLFault: { $0 == "open.txt" ? nil : denied })
        let local = try openLocal(scratch.path("failing.db"))
        let target = FaultyBackend(local, seed: 0, rate: 0, plainFileStore: true)
        let first = try await migrate(failing, target, state: scratch.path("failing"))
        #expect(!first.ok && first.files.failed == 2 && first.files.written == 1, "\(first.files) \(first.mismatches)")
        #expect(first.mismatches.contains { $0.sourceId == "loose.txt" && $0.detail.contains("for its ACL") && $0.detail.contains("ACL read denied") },
                "\(first.mismatches)")
        #expect(first.mismatches.contains { $0.sourceId == "n" && $0.detail.contains("linked.png") }, "\(first.mismatches)")
        #expect(Set(target.uploadAttempts) == ["open.txt"], "\(target.uploadAttempts)")
        let second = try await migrate(source, target, state: scratch.path("failing"))
        #expect(second.ok && second.files.written == 2, "\(second.files) \(second.mismatches)")
        #expect(try await local.fileACL(FileReference(name: "loose.txt")) == .privateTo("boss"))
        await local.close()
        await inner.close()
    }

    @Test("file copies follow fileConcurrency, record batches concurrency (mbaas export: batches one at a time, files four at a time)")
    func fileConcurrency() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("source.db"))
        for name in ["d.png", "e.png", "f.png", "g.png"] { _ = try await source.upload(FileUpload(name: name, source: .data(Data(name.utf8)))) }
        for i in 0..<4 { _ = try await source.create(Record(className: "Memo", id: "m\(i)", fields: ["photo": .file(FileReference(name: "h\(i).png"))])) }
        for i in 0..<4 { _ = try await source.upload(FileUpload(name: "h\(i).png", source: .data(Data("h\(i)".utf8)))) }
        for (files, most) in [(nil as Int?, 1...1), (4, 2...4)] {
            let inner = try openLocal(scratch.path("target\(files ?? 0).db"))
            let target = FaultyBackend(inner, seed: 0, rate: 0, plainFileStore: true, uploadDelay: .milliseconds(100))
            // One record a batch: the four linked files come one batch at a time, so only the standalone files can overlap.
            let options = MigrationOptions(batchSize: 1, concurrency: 1, fileConcurrency: files)
            let report = try await migrate(source, target, state: scratch.path("state\(files ?? 0)"), options: options)
            #expect(report.ok && report.files.written == 8 && report.files.verified == 8, "\(report.files) \(report.mismatches)")
            #expect(most.contains(target.maxUploadsInFlight), "fileConcurrency \(String(describing: files)): \(target.maxUploadsInFlight) uploads at once")
            await inner.close()
        }
        await source.close()
    }

    @Test("files open to everyone lose nothing on a store without file ACLs: neither the plan nor the report says so")
    func openFilesWithoutFileACLs() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("s.db"))
        _ = try await source.upload(FileUpload(name: "open.txt", source: .data(Data("open".utf8)), acl: .publicReadWrite))
        _ = try await source.create(Record(className: "Note", fields: ["text": "n"]))
        let local = try openLocal(scratch.path("t.db"))
        let target = FaultyBackend(local, seed: 0, rate: 0, refusesFileACLs: true)
        let plan = try await Migration(source: source, target: target, options: MigrationOptions(classes: ["Note"], dryRun: true), state: nil).run()
        #expect(!(plan.plan?.unsupported ?? []).contains { $0.hasPrefix("file ACLs:") }, "\(plan.plan?.unsupported ?? [])")
        let report = try await migrate(source, target, state: scratch.path("state"), options: MigrationOptions(classes: ["Note"]))
        #expect(report.ok && report.files.written == 1 && report.files.verified == 1, "\(report.files) \(report.mismatches)")
        #expect(!report.problems.contains { $0.hasPrefix("file ACLs:") } && report.warnings.isEmpty, "\(report.problems) \(report.warnings)")
        await local.close()
        await source.close()
    }

    @Test("verification compares a file's ACL where both stores keep them: a file on the target without its ACL (as an earlier version copied linked files) is a mismatch, named, until it is fixed")
    func fileACLsVerified() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("s.db"))
        _ = try await source.importUser(DirectoryUser(id: "boss", username: "boss"), password: .unusable)
        let grants = ACL([.user("boss"): .readWrite, .everyone: .read])
        for (name, acl) in [("linked.txt", grants), ("loose.txt", ACL.privateTo("boss")), ("plain.txt", nil)] {
            _ = try await source.upload(FileUpload(name: name, source: .data(Data(name.utf8)), contentType: "text/plain", acl: acl))
        }
        _ = try await source.create(Record(className: "Note", id: "n", fields: ["photo": .file(FileReference(name: "linked.txt"))]))
        let local = try openLocal(scratch.path("t.db"))
        let target = FaultyBackend(local, seed: 0, rate: 0, plainFileStore: true)
        let first = try await migrate(source, target, state: scratch.path("state"), options: MigrationOptions(classes: ["Note"]))
        #expect(first.ok && first.files.verified == 3 && first.files.mismatched == 0, "\(first.files) \(first.mismatches)")
        let bossOnTarget = try #require(first.userOutcomes.first { $0.sourceId == "boss" }?.targetId)
        let verify = { () async throws -> MigrationReport in
            try await reverify(source, target, state: scratch.path("state"), options: MigrationOptions(classes: ["Note"]))
        }
        // The target's copies lose their ACLs: the linked one without any, the loose one opened to everyone.
        for (name, acl) in [("linked.txt", nil as ACL?), ("loose.txt", ACL.publicReadWrite)] {
            try await local.deleteFile(FileReference(name: name))
            _ = try await local.upload(FileUpload(name: name, source: .data(Data(name.utf8)), contentType: "text/plain", acl: acl))
        }
        let broken = try await verify()
        #expect(!broken.ok && broken.files.verified == 1 && broken.files.mismatched == 2, "\(broken.files) \(broken.mismatches)")
        let expectedLinked = ACL([.user(bossOnTarget): .readWrite, .everyone: .read]).json.printed([.sortedKeys])
        #expect(broken.mismatches.contains { $0.kind == "file" && $0.sourceId == "linked.txt" && $0.detail == "file linked.txt: ACL none, expected \(expectedLinked)" },
                "\(broken.mismatches)")
        #expect(broken.mismatches.contains { $0.sourceId == "loose.txt" && $0.detail.contains(#"ACL {"*":{"read":true,"write":true}}, expected"#) },
                "\(broken.mismatches)")
        // Put right on the target, both verify again.
        for (name, acl) in [("linked.txt", ACL([.user(bossOnTarget): .readWrite, .everyone: .read])), ("loose.txt", ACL.privateTo(bossOnTarget))] {
            try await local.deleteFile(FileReference(name: name))
            _ = try await local.upload(FileUpload(name: name, source: .data(Data(name.utf8)), contentType: "text/plain", acl: acl))
        }
        let fixed = try await verify()
        #expect(fixed.ok && fixed.files.verified == 3 && fixed.files.mismatched == 0, "\(fixed.files) \(fixed.mismatches)")
        await local.close()
        await source.close()
    }

    @Test("a linked file whose ACL cannot be found (the source does not list it) is not uploaded open: it and its records fail alone")
    func unlistedLinkedFile() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let inner = try openLocal(scratch.path("s.db"))
        _ = try await inner.upload(FileUpload(name: "hidden.txt", source: .data(Data("h".utf8)), acl: .privateTo("nobody")))
        _ = try await inner.upload(FileUpload(name: "shown.txt", source: .data(Data("s".utf8)), acl: .publicReadWrite))
        _ = try await inner.create(Record(className: "Note", id: "h", fields: ["photo": .file(FileReference(name: "hidden.txt"))]))
        _ = try await inner.create(Record(className: "Note", id: "s", fields: ["photo": .file(FileReference(name: "shown.txt"))]))
        let source = FaultyBackend(inner, seed: 0, rate: 0, hidesFromList: { $0 == "hidden.txt" })
        let local = try openLocal(scratch.path("t.db"))
        let target = FaultyBackend(local, seed: 0, rate: 0, plainFileStore: true)
        let report = try await migrate(source, target, state: scratch.path("state"), options: MigrationOptions(classes: ["Note"]))
        let note = try #require(report.classes.first { $0.source == "Note" })
        #expect(note.written == 1 && note.failed == 1 && report.files.failed == 1, "\(note) \(report.files)")
        #expect(report.mismatches.contains { $0.sourceId == "h" && $0.detail.contains("file 'hidden.txt' (field photo) could not be copied")
            && $0.detail.contains("does not list the file, so its ACL is unknown") }, "\(report.mismatches)")
        #expect(target.uploadAttempts == ["shown.txt"], "\(target.uploadAttempts)")
        #expect(try await local.listFiles(prefix: nil, limit: nil).map(\.reference.name) == ["shown.txt"])
        await local.close()
        await inner.close()
    }

    @Test("a file the target refuses fails alone: the records linking it are not written and are named, the run goes on, and a later run moves them")
    func refusedFiles() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("s.db"))
        _ = try await source.importUser(DirectoryUser(id: "boss", username: "boss"), password: .unusable)
        for name in ["good.png", "bad.png", "loose.txt", "bad-loose.txt", "shared.txt"] {
            _ = try await source.upload(FileUpload(name: name, source: .data(Data(name.utf8)), contentType: "text/plain",
                                                   acl: name == "shared.txt" ? ACL([.role("staff"): .read]) : nil))
        }
        _ = try await source.create(Record(className: "Note", id: "n1", fields: ["photo": .file(FileReference(name: "good.png"))]))
        _ = try await source.create(Record(className: "Note", id: "n2", fields: ["photo": .file(FileReference(name: "bad.png"))]))
        _ = try await source.create(Record(className: "Note", id: "n3", fields: ["photo": .file(FileReference(name: "bad.png")), "n": 3]))
        _ = try await source.create(Record(className: "Note", id: "n4", fields: ["text": "no file"]))
        let local = try openLocal(scratch.path("t.db"))
        // Names starting with "bad" are refused as unsupported; so is a role grant on a file (the rule narrows it).
        // A plain file store: files are copied before the records that hold them (with attachments, the record is
        // written first and its attachment fails on its own, as `attach` reports).
        let refusing = FaultyBackend(local, seed: 0, rate: 0, plainFileStore: true, narrow: { acl in acl.entries.keys.contains { if case .role = $0 { true } else { false } } ? ACL() : nil },
                                    refusesFileName: { $0.hasPrefix("bad") })
        // One batch at a time: a second batch linking bad.png comes after its copy failed, and must not try again.
        let options = MigrationOptions(classes: ["Note"], batchSize: 1, concurrency: 1)
        for run in 1...2 {
            let report = try await migrate(source, refusing, state: scratch.path("state"), options: options)
            #expect(refusing.uploadAttempts.count { $0 == "bad.png" } == run, "run \(run): \(refusing.uploadAttempts)")
            let note = try #require(report.classes.first { $0.source == "Note" })
            #expect(note.written == (run == 1 ? 2 : 0) && note.skipped == (run == 1 ? 0 : 2) && note.failed == 2, "run \(run): \(note)")
            // bad.png once (not once per record or batch), bad-loose.txt, and shared.txt's role grant.
            #expect(report.files.failed == 3, "run \(run): \(report.files) \(report.mismatches)")
            let failures = report.mismatches.filter { $0.kind == "failed" }
            for id in ["n2", "n3"] {
                #expect(failures.contains { $0.sourceId == id && $0.detail.hasPrefix("file 'bad.png' (field photo) could not be copied, so the record was not written:")
                    && $0.detail.contains("the file name 'bad.png'") }, "run \(run) \(id): \(failures)")
            }
            #expect(failures.contains { $0.sourceId == "bad-loose.txt" && $0.detail.contains("the file name 'bad-loose.txt'") }, "\(failures)")
            #expect(failures.contains { $0.sourceId == "shared.txt" && $0.detail.contains("it narrows ACLs") }, "\(failures)")
            #expect(!report.ok)
        }
        // Nothing reached the target half-written: no record links a file the store lacks, no file lost its ACL.
        func stored(_ id: String) async throws -> Record {
            try #require(try await local.queryPage(Query("Note", predicate: .compare("sourceObjectId", .eq, .string(id)))).records.first)
        }
        #expect(try await stored("n1").fields["photo"]?.fileValue?.name == "good.png")
        #expect(try await local.count(Query("Note")) == 2)
        #expect(try await local.listFiles(prefix: nil, limit: nil).map(\.reference.name).sorted() == ["good.png", "loose.txt"])
        // The target now takes them: the same command moves what failed, and everything verifies.
        let report = try await migrate(source, FaultyBackend(local, seed: 0, rate: 0, plainFileStore: true), state: scratch.path("state"), options: options)
        let note = try #require(report.classes.first { $0.source == "Note" })
        #expect(note.written == 2 && note.failed == 0 && note.verified == 4 && report.files.failed == 0, "\(note) \(report.files) \(report.mismatches)")
        #expect(report.ok, "\(report.mismatches)")
        #expect(try await local.download(try #require(try await stored("n3").fields["photo"]?.fileValue)) == Data("bad.png".utf8))
        #expect(try await local.listFiles(prefix: "shared", limit: nil).first?.acl == ACL([.role("staff"): .read]))
        await local.close()
        await source.close()
    }
}
