import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSNCMB
import MBaaSTesting
import Testing
@testable import MBaaSMigration

/// The memo app's NCMB export shipped under `Fixtures/Samples/ncmb-memo-export`.
let sampleExport = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures/Samples/ncmb-memo-export")

/// A scratch directory per test.
struct Scratch {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("mbaas-migration-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func path(_ name: String) -> URL { url.appendingPathComponent(name) }
    /// A copy of the memo app's sample export in `export/`, to change freely.
    func sampleExport() throws -> URL {
        let export = path("export")
        try FileManager.default.copyItem(at: MBaaSMigrationTests.sampleExport, to: export)
        return export
    }
    func remove() { try? FileManager.default.removeItem(at: url) }
}

let admin = BackendContext(administrative: true)

/// The Local store the migration tests write to: administrative, with the cheap scrypt cost (`.light`). The default
/// cost (2^15, p = 3), with BoringSSL unoptimised in a debug build, took seconds a hash and was a third of the whole
/// test run's CPU; what these tests check does not depend on it.
func openLocal(_ url: URL) throws -> LocalBackend {
    try LocalBackend(path: url.path, context: admin, options: LocalBackend.Options(passwordHashing: .testing))
}

func migrate(
    _ source: any Backend, _ target: any Backend, state: URL, options: MigrationOptions = MigrationOptions()
) async throws -> MigrationReport {
    let state = try MigrationState(directory: state)
    return try await Migration(source: source, target: target, options: options, state: state).run()
}

/// A Local source with the user `boss`, an open `Note` `n`, and `own.txt` attached to it (field `photo`) with an ACL of
/// its own, private to `boss`.
func sourceWithOwnAttachment(_ scratch: Scratch) async throws -> LocalBackend {
    let source = try openLocal(scratch.path("s.db"))
    _ = try await source.importUser(DirectoryUser(id: "boss", username: "boss"), password: .unusable)
    _ = try await source.create(Record(className: "Note", id: "n", acl: .publicReadWrite, fields: ["text": "n"]))
    _ = try await source.upload(FileUpload(name: "own.txt", source: .data(Data("own".utf8)), acl: .privateTo("boss"),
                                           attachment: FileAttachment(className: "Note", objectId: "n", field: "photo")))
    return source
}

/// Verifies again, against the state folder a migration left (``Migration/verify()``).
func reverify(
    _ source: any Backend, _ target: any Backend, state: URL, options: MigrationOptions = MigrationOptions()
) async throws -> MigrationReport {
    try await Migration(source: source, target: target, options: options, state: MigrationState(directory: state)).verify()
}

/// Replaces the export's users with `count` users: ids `u000…0<i>`, names `user<i>`; or, not `named`, ids
/// `anon<i>` with neither userName nor mailAddress (NCMB's anonymous users have none).
func writeUsers(_ count: Int, into export: URL, named: Bool = true) throws {
    let users = (0..<count).map { i -> JSON in
        var user: JSONObject = ["objectId": .string("anon\(i)"), "createDate": "2023-10-01T00:00:00.000Z", "updateDate": "2023-10-02T00:00:00.000Z"]
        if named {
            user["objectId"] = .string(String(format: "u%015d", i))
            user["userName"] = .string("user\(i)")
            user["mailAddress"] = .string("user\(i)@example.com")
        }
        return .object(user)
    }
    try JSON.object(["results": .array(users)]).printed().write(to: export.appendingPathComponent("user.json"), atomically: true, encoding: .utf8)
}

extension ACL.Principal {
    var isRoleOrGroupForTest: Bool {
        switch self {
        case .role, .group: true
        default: false
        }
    }
}
