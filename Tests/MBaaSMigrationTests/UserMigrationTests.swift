import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSNCMB
import MBaaSTesting
import Testing
@testable import MBaaSMigration

/// Users and roles: imports in groups, resuming, verification by user name, e-mail, fields and members.
@Suite("Migration: users and roles")
struct UserMigrationTests {
    @Test("failed user imports: a refused user loses its mark, one in doubt keeps it; an error that ends the run keeps what was imported; the next run completes without duplicates")
    func userImportFailures() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = try scratch.sampleExport()
        try writeUsers(20, into: export)
        func id(_ i: Int) -> String { String(format: "u%015d", i) }
        let local = try openLocal(scratch.path("t.db"))
        let options = MigrationOptions(classes: ["Category"], concurrency: 1, files: false, maxAttempts: 2)
        // user3 is refused; user7 fails with 503 until the retries are used up.
        let first = FaultyBackend(local, seed: 0, rate: 0, userFault: { name in
            name == "user3" ? MBaaSError(.invalidRequest, "refused") : name == "user7" ? MBaaSError(.unavailable, "down", httpStatus: 503) : nil
        })
        let report = try await migrate(NCMBExportBackend(directory: export), first, state: scratch.path("state"), options: options)
        #expect(report.users.written == 18 && report.users.failed == 2, "\(report.users)")
        do {
            let state = try MigrationState(directory: scratch.path("state"))
            #expect(try state.pending(.user, className: "_User") == [id(7)])
            #expect(try state.mappedCount(.user, className: "_User") == 18)
        }
        // A second run tries user3 and user7 again, one at a time. user7's import now says "duplicate" and looking
        // it up fails (its first look-up, for its pending mark, works): the run ends with that error, after
        // committing user3, imported before it. user7 keeps its mark.
        let lookups = CallCounter()
        let second = FaultyBackend(local, seed: 0, rate: 0, userFault: { $0 == "user7" ? MBaaSError(.duplicate, "taken") : nil },
                                  findUserFault: { $0 == "user7" && lookups.next() > 1 ? MBaaSError(.invalidRequest, "lookup refused") : nil })
        await #expect(throws: MBaaSError.self) {
            try await migrate(NCMBExportBackend(directory: export), second, state: scratch.path("state"), options: options)
        }
        do {
            let state = try MigrationState(directory: scratch.path("state"))
            #expect(try state.mappedCount(.user, className: "_User") == 19)
            #expect(try state.targetId(.user, className: "_User", sourceId: id(3)) != nil)
            #expect(try state.pending(.user, className: "_User") == [id(7)])
        }
        // Without faults every user is there once.
        let last = try await migrate(NCMBExportBackend(directory: export), local, state: scratch.path("state"), options: options)
        #expect(last.users.failed == 0 && last.users.skipped == 19 && last.users.written == 1, "\(last.users)")
        #expect(try await local.listUsers(after: nil, limit: 100).users.count == 20)
        await local.close()
    }

    @Test("users move in groups: several groups, users an earlier run created while marked pending are adopted, a second run skips them all")
    func usersInGroups() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = try scratch.sampleExport()
        let count = Migration.userGroupSize * 2 + 57
        try writeUsers(count, into: export)
        let local = try openLocal(scratch.path("t.db"))
        // An earlier run marked users 300 and 301 pending and created them before it died.
        do {
            let state = try MigrationState(directory: scratch.path("state"))
            try state.addPending(.user, className: "_User", sourceIds: [String(format: "u%015d", 300), String(format: "u%015d", 301)])
        }
        for i in [300, 301] {
            let id = String(format: "u%015d", i)
            _ = try await local.importUser(DirectoryUser(id: id, username: "user\(i)", email: "user\(i)@example.com", fields: ["sourceObjectId": .string(id)]),
                                           password: .unusable)
        }
        let options = MigrationOptions(classes: ["Category"], files: false)
        let report = try await migrate(NCMBExportBackend(directory: export), local, state: scratch.path("state"), options: options)
        // The two an earlier run created are already there: skipped, not written.
        #expect(report.users.read == count && report.users.written == count - 2 && report.users.skipped == 2 && report.users.failed == 0, "\(report.users)")
        var stored: [DirectoryUser] = []
        var cursor: String?
        repeat {
            let page = try await local.listUsers(after: cursor, limit: 200)
            stored += page.users
            cursor = page.nextCursor
        } while cursor != nil
        #expect(stored.count == count)
        #expect(Set(stored.compactMap { $0.fields["sourceObjectId"]?.stringValue }).count == count)
        do {
            let state = try MigrationState(directory: scratch.path("state"))
            #expect(try state.pending(.user, className: "_User").isEmpty)
            #expect(try state.mappedCount(.user, className: "_User") == count)
        }
        #expect(report.userOutcomes.count == count && report.userOutcomes.allSatisfy { $0.password == "reset" })
        let again = try await migrate(NCMBExportBackend(directory: export), local, state: scratch.path("state"), options: options)
        #expect(again.users.written == 0 && again.users.skipped == count)
        await local.close()
    }

    @Test("users with neither a user name nor an e-mail: one an interrupted run imported is found by its source id, not imported twice")
    func namelessUsersResume() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = try scratch.sampleExport()
        try writeUsers(5, into: export, named: false)
        let local = try openLocal(scratch.path("t.db"))
        // An earlier run marked anon1 and anon3 pending and imported them before it died; the duplicate check of the
        // retry path sees anon4 as already taken.
        do {
            let state = try MigrationState(directory: scratch.path("state"))
            try state.addPending(.user, className: "_User", sourceIds: ["anon1", "anon3"])
        }
        var earlier: [String: String] = [:]
        for id in ["anon1", "anon3", "anon4"] {
            earlier[id] = try await local.importUser(DirectoryUser(id: id, fields: ["sourceObjectId": .string(id)]), password: .unusable).id
        }
        #expect(try await local.findUser(field: "sourceObjectId", equals: "anon3")?.id == earlier["anon3"])
        #expect(try await local.findUser(field: "sourceObjectId", equals: "nobody") == nil)
        await #expect(throws: MBaaSError.self) { try await local.findUser(field: "a.b", equals: "x") }
        let options = MigrationOptions(classes: ["Category"], files: false)
        let report = try await migrate(NCMBExportBackend(directory: export), local, state: scratch.path("state"), options: options)
        // anon1 and anon3 were pending and are found: skipped; anon4 is met as a duplicate and found: written.
        #expect(report.users.failed == 0 && report.users.written == 3 && report.users.skipped == 2, "\(report.users) \(report.mismatches)")
        let stored = try await local.listUsers(after: nil, limit: 100).users
        #expect(stored.count == 5)
        #expect(Set(stored.compactMap { $0.fields["sourceObjectId"]?.stringValue }) == ["anon0", "anon1", "anon2", "anon3", "anon4"])
        let state = try MigrationState(directory: scratch.path("state"))
        for (id, target) in earlier { #expect(try state.targetId(.user, className: "_User", sourceId: id) == target) }
        #expect(try state.pending(.user, className: "_User").isEmpty)
        await local.close()
    }

    @Test("users are verified by user name, e-mail and fields, roles by their members: a changed field, a lost user and a lost member are named; what the target adds is not a difference")
    func verifyUsersAndRoles() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("s.db"))
        let target = try openLocal(scratch.path("t.db"))
        let joined = Date(timeIntervalSince1970: 1_700_000_000.25)
        func user(_ i: Int, nick: String) -> DirectoryUser {
            DirectoryUser(id: "u\(i)", username: "user\(i)", email: "user\(i)@example.com",
                          fields: ["nick": .string(nick), "age": .int(Int64(20 + i)), "joined": .date(joined)])
        }
        for i in 0..<3 { _ = try await source.importUser(user(i, nick: "N\(i)"), password: .unusable) }
        try await source.importRole(DirectoryRole(name: "staff", users: ["u0", "u1"]))
        let first = try await migrate(source, target, state: scratch.path("state"))
        #expect(first.users.verified == 3 && first.users.mismatched == 0, "\(first.users)")
        #expect(first.roles.written == 1 && first.roles.verified == 1 && first.roles.mismatched == 0, "\(first.roles)")
        #expect(first.mismatches.isEmpty && first.ok, "\(first.mismatches)")
        #expect(first.table.contains("(users)") && first.json["users"]?["verified"] == .int(3) && first.json["roles"]?["verified"] == .int(1))

        // The target gains a field of its own on user0 (not a difference), and loses user2 and user0's role; the
        // source's user1 changes its nick after the copy.
        await target.close()
        try executeBehindItsBack(database: scratch.path("t.db"), """
            UPDATE users SET fields = json_set(fields, '$.theme', 'dark') WHERE id = 'u0';
            UPDATE users SET roles = '[]' WHERE id = 'u0';
            DELETE FROM users WHERE id = 'u2';
            """)
        let reopened = try openLocal(scratch.path("t.db"))
        try await source.deleteUser(id: "u1")
        var changed = user(1, nick: "Changed")
        changed.roles = ["staff"]
        _ = try await source.importUser(changed, password: .unusable)
        let report = try await reverify(source, reopened, state: scratch.path("state"))
        #expect(report.users.verified == 1 && report.users.mismatched == 2, "\(report.users)")
        #expect(report.roles.verified == 0 && report.roles.mismatched == 1, "\(report.roles)")
        let byId = Dictionary(report.mismatches.map { ($0.sourceId ?? "", $0) }, uniquingKeysWith: { a, _ in a })
        #expect(byId["u1"]?.kind == "content" && byId["u1"]?.detail.contains(#"nick: expected "Changed", found "N1""#) == true, "\(report.mismatches)")
        #expect(byId["u2"]?.kind == "missing" && byId["u2"]?.detail.contains("is not on the target") == true, "\(report.mismatches)")
        #expect(byId["staff"]?.kind == "role" && byId["staff"]?.detail.contains("1 of 2 members") == true, "\(report.mismatches)")
        #expect(report.mismatchCount == 3 && !report.ok)
        await source.close()
        await reopened.close()
    }

    /// Two users (`user0`, `user1`, each with an e-mail and a `nick`) migrated into a target without `missing`; then
    /// the source's users are replaced by `changed` and verification runs again. The dry run's plan, the first run's
    /// report and the verification's.
    func twoUsersThenChanged(without missing: Capabilities.Feature, _ changed: [DirectoryUser])
        async throws -> (plan: MigrationReport, first: MigrationReport, verified: MigrationReport)
    {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let source = try openLocal(scratch.path("s.db"))
        let local = try openLocal(scratch.path("t.db"))
        let target = FaultyBackend(local, seed: 1, rate: 0, without: [missing])
        for i in 0..<2 {
            _ = try await source.importUser(DirectoryUser(id: "u\(i)", username: "user\(i)", email: "user\(i)@example.com",
                                                          fields: ["nick": .string("N\(i)")]), password: .unusable)
        }
        let plan = try await Migration(source: source, target: target, options: MigrationOptions(dryRun: true), state: nil).run()
        let first = try await migrate(source, target, state: scratch.path("state"))
        for user in changed {
            try await source.deleteUser(id: user.id)
            _ = try await source.importUser(user, password: .unusable)
        }
        let verified = try await reverify(source, target, state: scratch.path("state"))
        await source.close()
        await local.close()
        return (plan, first, verified)
    }

    @Test("a target that does not keep users' fields is said to in the plan, and its users are verified by user name and e-mail alone")
    func usersWithoutFields() async throws {
        // The source's nick changes (not compared: the target does not keep fields), and user1's e-mail (compared).
        let (plan, first, report) = try await twoUsersThenChanged(without: .userFields, [
            DirectoryUser(id: "u0", username: "user0", email: "user0@example.com", fields: ["nick": "other"]),
            DirectoryUser(id: "u1", username: "user1", email: "new1@example.com", fields: ["nick": "N1"]),
        ])
        let note = "users' custom fields and their source id ('sourceObjectId'): local does not keep them; users are verified by user name and e-mail"
        #expect(plan.plan?.unsupported.contains(note) == true, "\(plan.plan?.unsupported ?? [])")
        #expect(first.problems.contains(note) && first.users.verified == 2 && first.ok, "\(first.problems) \(first.mismatches)")
        #expect(report.users.verified == 1 && report.users.mismatched == 1, "\(report.mismatches)")
        let mismatch = try #require(report.mismatches.first)
        #expect(mismatch.sourceId == "u1" && mismatch.detail.contains(#"mailAddress: expected "new1@example.com", found "user1@example.com""#)
                && !mismatch.detail.contains("nick"), "\(mismatch)")
    }

    @Test("a target that does not keep users' e-mail addresses is said to in the plan, and an e-mail that differs is not a mismatch there")
    func usersWithoutEmail() async throws {
        // user0's e-mail changes (not compared), user1's nick (compared: the target keeps fields).
        let (plan, first, report) = try await twoUsersThenChanged(without: .userEmail, [
            DirectoryUser(id: "u0", username: "user0", email: "new0@example.com", fields: ["nick": "N0"]),
            DirectoryUser(id: "u1", username: "user1", email: "user1@example.com", fields: ["nick": "other"]),
        ])
        let note = "users' e-mail addresses: local does not keep them; users are verified by user name"
        #expect(plan.plan?.unsupported.contains(note) == true, "\(plan.plan?.unsupported ?? [])")
        #expect(first.problems.contains(note) && first.users.verified == 2 && first.ok, "\(first.problems) \(first.mismatches)")
        #expect(!first.problems.contains { $0.hasPrefix("users' custom fields") }, "\(first.problems)")
        #expect(report.users.verified == 1 && report.users.mismatched == 1, "\(report.mismatches)")
        let mismatch = try #require(report.mismatches.first)
        #expect(mismatch.sourceId == "u1" && mismatch.detail.contains(#"nick: expected "other", found "N1""#)
                && !mismatch.detail.contains("mailAddress"), "\(mismatch)")
    }

    @Test("on a target that keeps no user fields, users an interrupted run imported are matched by name, with a warning, not imported twice")
    func resumeUsersWithoutFields() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = try scratch.sampleExport()
        try writeUsers(5, into: export)
        func id(_ i: Int) -> String { String(format: "u%015d", i) }
        let local = try openLocal(scratch.path("t.db"))
        let target = FaultyBackend(local, seed: 0, rate: 0, without: [.userFields])
        // An earlier run marked user1 and user2 pending and created them, without their source id, before it died.
        do {
            let state = try MigrationState(directory: scratch.path("state"))
            try state.addPending(.user, className: "_User", sourceIds: [id(1), id(2)])
        }
        for i in [1, 2] {
            _ = try await local.importUser(DirectoryUser(id: "t\(i)", username: "user\(i)", email: "user\(i)@example.com"), password: .unusable)
        }
        let options = MigrationOptions(classes: ["Category"], files: false)
        let report = try await migrate(NCMBExportBackend(directory: export), target, state: scratch.path("state"), options: options)
        #expect(report.users.written == 3 && report.users.skipped == 2 && report.users.failed == 0 && report.users.verified == 5,
                "\(report.users) \(report.mismatches)")
        #expect(report.warnings.filter { $0.kind == "user" }.map(\.sourceId) == [id(1), id(2)], "\(report.warnings)")
        #expect(try await local.listUsers(after: nil, limit: 100).users.count == 5)
        let state = try MigrationState(directory: scratch.path("state"))
        #expect(try state.targetId(.user, className: "_User", sourceId: id(1)) == "t1")
        #expect(try state.pending(.user, className: "_User").isEmpty)
        await local.close()
    }

    @Test("a source that lists a user twice, far apart: imported once, and both listings verified against it")
    func userListedTwice() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = try scratch.sampleExport()
        try writeUsers(600, into: export)
        // The export lists user0 again at its end, in another group of verification than the first listing.
        let url = export.appendingPathComponent("user.json")
        var users = try #require(JSON.parse(Data(contentsOf: url))["results"]?.arrayValue)
        users.append(users[0])
        try JSON.object(["results": .array(users)]).printed().write(to: url, atomically: true, encoding: .utf8)
        let local = try openLocal(scratch.path("t.db"))
        let report = try await migrate(NCMBExportBackend(directory: export), local, state: scratch.path("state"),
                                       options: MigrationOptions(classes: ["Category"], files: false))
        #expect(report.users.read == 601 && report.users.written == 600 && report.users.skipped == 1, "\(report.users)")
        #expect(report.users.verified == 601 && report.users.mismatched == 0, "\(report.mismatches.prefix(3))")
        #expect(try await local.listUsers(after: nil, limit: 1000).users.count == 600)
        await local.close()
    }
}
