import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSNCMB
import Testing
@testable import MBaaSMigration

/// Keys holding NUL (U+0000): the migration's state is SQLite, where GRDB binds a `String` cut at its first NUL, so
/// `"K…\u{0}x"` would share the key of `"K…"`: on a second run it was skipped as already written.
@Suite("Migration keys holding NUL")
struct NULKeyTests {
    @Test("a source record or user id holding NUL fails by itself on every run, and never takes the key of the id before the NUL")
    func sourceIdsWithNUL() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = try scratch.sampleExport()
        let nulMemo = "KXBeNC7VSJ5zffgR\u{0}x", nulUser = "gbeUrX7bd75kT5PX\u{0}y"
        for (file, id, replaced) in [("MemoClass.json", "PqNPbAlQHdBdHTcf", "KXBeNC7VSJ5zffgR\\u0000x"),
                                      ("user.json", "GPwHcLR2Ktbo36vD", "gbeUrX7bd75kT5PX\\u0000y")] {
            let url = export.appendingPathComponent(file)
            let text = try String(contentsOf: url, encoding: .utf8)
            #expect(text.contains("\"objectId\": \"\(id)\""))
            try text.replacingOccurrences(of: "\"objectId\": \"\(id)\"", with: "\"objectId\": \"\(replaced)\"")
                .write(to: url, atomically: true, encoding: .utf8)
        }
        let source = try NCMBExportBackend(directory: export)
        let target = try openLocal(scratch.path("memo.db"))
        let sourceMemos = try await source.count(Query("MemoClass"))
        for run in 1...2 {
            let report = try await migrate(source, target, state: scratch.path("state"))
            let memo = try #require(report.classes.first { $0.source == "MemoClass" })
            #expect(memo.failed == 1, "run \(run)")
            #expect(memo.written + memo.skipped == sourceMemos - 1, "run \(run)")
            #expect(report.users.failed == 1, "run \(run)")
            for id in [nulMemo, nulUser] {
                #expect(report.mismatches.contains { $0.kind == "failed" && $0.sourceId == id && $0.detail.contains("NUL") }, "run \(run): \(id)")
            }
            #expect(!report.ok)
        }
        #expect(try await target.get(className: "MemoClass", id: "KXBeNC7VSJ5zffgR")["title"] == "Ramen Jiro")
    }

    @Test("a bundle's file entry whose name or link holds NUL is refused when read, naming it")
    func bundleFileEntryWithNUL() throws {
        for json in [#"{"name":"a\u0000b.png","linkedBy":[]}"#,
                     #"{"name":"a.png","linkedBy":[{"class":"Memo","id":"x\u0000y","field":"photo"}]}"#] {
            #expect { _ = try BundleFileEntry(json: JSON.parse(json)) } throws: { error in
                (error as? MBaaSError)?.kind == .decoding && (error as? MBaaSError)?.message.contains("NUL") == true
            }
        }
        #expect(try BundleFileEntry(json: JSON.parse(#"{"name":"a.png","linkedBy":[]}"#)).name == "a.png")
    }
}
