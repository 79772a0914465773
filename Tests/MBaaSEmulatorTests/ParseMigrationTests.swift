import Foundation
import MBaaSCore
import MBaaSEmulator
import MBaaSMigration
import MBaaSNCMB
import MBaaSParse
import MBaaSParseWire
import Testing

/// The memo app's NCMB export (`Fixtures/Samples/ncmb-memo-export`), the move NCMB itself advised: into Parse.
let ncmbSampleExport = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Fixtures/Samples/ncmb-memo-export")

/// Migrates the sample's `Category` and `MemoClass` (not `_Installation`, a push class the dialects do not serve) into
/// `target`, with the state in `scratch/state`: called again with the same folder, it resumes.
func migrateNCMBSample(
    into target: any Backend, scratch: URL, aclLoss: MigrationMapping.ACLLossPolicy = .fail
) async throws -> MigrationReport {
    try await Migration(source: try NCMBExportBackend(directory: ncmbSampleExport), target: target,
                        options: MigrationOptions(classes: ["Category", "MemoClass"], aclLoss: aclLoss),
                        state: try MigrationState(directory: scratch.appendingPathComponent("state"))).run()
}

@Suite("Migration into the Parse dialect")
struct ParseMigrationTests {
    @Test("the NCMB sample export into Parse: records, users, the role, pointers and ACLs through the id map, NCMB file names turned into Parse File fields; verified; a re-run writes nothing")
    func ncmbExportToParse() async throws {
        let dialect = try makeParseDialect()
        let target = try await parseClient(dialect, master: true)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mbaas-parse-migration-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let report = try await migrateNCMBSample(into: target, scratch: dir)
        let memo = try #require(report.classes.first { $0.source == "MemoClass" })
        #expect(memo.read == 12 && memo.written == 12 && memo.failed == 0 && memo.verified == 12 && memo.mismatched == 0,
                "\(report.mismatches) \(report.problems)")
        #expect(report.classes.first { $0.source == "Category" }?.written == 3)
        #expect(report.users.written == 3 && report.userOutcomes.allSatisfy { $0.password == "reset" })
        #expect(report.roles.written == 1)
        #expect(report.mismatches.isEmpty, "\(report.mismatches)")
        #expect(report.ok, "\(report.problems) \(report.warnings)")

        // Parse makes its own ids: records are found by the source id they keep.
        func bySource(_ cls: String, _ id: String) async throws -> Record {
            let page = try await target.queryPage(Query(cls, predicate: .compare("sourceObjectId", .eq, .string(id)), limit: 2))
            #expect(page.records.count == 1)
            return try #require(page.records.first)
        }
        let ramen = try await bySource("MemoClass", "KXBeNC7VSJ5zffgR")
        #expect(ramen["title"] == "Ramen Jiro" && ramen["money"] == .int(900))
        #expect(ramen["sourceCreatedAt"] == .date(ISO8601.parse("2023-10-01T03:12:45.120Z")!))
        // The author pointer now names the user Parse created for taro_yamada.
        let taro = try #require(try await target.findUser(username: "taro_yamada"))
        #expect(taro.id != "gbeUrX7bd75kT5PX")
        #expect(try await target.findUser(field: "sourceObjectId", equals: "gbeUrX7bd75kT5PX")?.id == taro.id)
        #expect(try await target.findUser(field: "sourceObjectId", equals: "no-such-source-id") == nil)
        #expect(ramen["author"] == .pointer(Pointer(className: "_User", objectId: taro.id)))
        let category = try await bySource("Category", "M8qVv0jLxxF13OVQ")
        #expect(ramen["category"] == .pointer(Pointer(className: "Category", objectId: try #require(category.id))))
        // NCMB's file name string became a Parse File field: `{"__type":"File","name":"<prefix>_ramen…","url"}`.
        let file = try #require(ramen["filename"]?.fileValue)
        #expect(file.name.hasSuffix("_ramen-2023_10_01.png") && file.url?.contains("/parse/files/emuapp/") == true)
        #expect(try await target.download(file) == (try Data(contentsOf: ncmbSampleExport.appendingPathComponent("files/ramen-2023_10_01.png"))))
        // ACLs name the Parse user and keep the role.
        let latte = try await bySource("MemoClass", "IoTdx5XvSxzpLihK")
        #expect(latte.acl == ACL([.user(taro.id): .readWrite, .role("Admins"): .read]))
        // The role holds its member in Parse's `users` relation; imported users cannot log in until they reset.
        let roles = try await target.listRoles()
        #expect(roles.map(\.name) == ["Admins"] && roles.first?.users == [taro.id])
        let app = try await parseClient(dialect)
        await #expect(throws: MBaaSError.self) { try await app.logIn(username: "taro_yamada", password: "anything") }

        let again = try await migrateNCMBSample(into: target, scratch: dir)
        #expect(again.classes.allSatisfy { $0.written == 0 && $0.failed == 0 }, "\(again.classes)")
        #expect(try await target.count(Query("MemoClass")) == 12)
    }
}
