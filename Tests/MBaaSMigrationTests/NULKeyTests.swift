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
        // And a record linking a file whose name holds NUL (`filename` is a file link): the state keys links by name.
        let memoURL = export.appendingPathComponent("MemoClass.json")
        let memoText = try String(contentsOf: memoURL, encoding: .utf8)
        #expect(memoText.contains("\"filename\": \"notes-2023_11.txt\""))
        try memoText.replacingOccurrences(of: "\"filename\": \"notes-2023_11.txt\"", with: "\"filename\": \"notes\\u0000-2023_11.txt\"")
            .write(to: memoURL, atomically: true, encoding: .utf8)
        let source = try NCMBExportBackend(directory: export)
        let target = try openLocal(scratch.path("memo.db"))
        let sourceMemos = try await source.count(Query("MemoClass"))
        for run in 1...2 {
            let report = try await migrate(source, target, state: scratch.path("state"))
            let memo = try #require(report.classes.first { $0.source == "MemoClass" })
            #expect(memo.failed == 2, "run \(run)")
            #expect(memo.written + memo.skipped == sourceMemos - 2, "run \(run)")
            #expect(report.mismatches.contains { $0.sourceId == "3qLOKZspITIcS8Fh" && $0.detail.contains("file name in field filename") && $0.detail.contains("NUL") },
                    "run \(run)")
            #expect(report.users.failed == 1, "run \(run)")
            for id in [nulMemo, nulUser] {
                #expect(report.mismatches.contains { $0.kind == "failed" && $0.sourceId == id && $0.detail.contains("NUL") }, "run \(run): \(id)")
            }
            #expect(!report.ok)
        }
        #expect(try await target.get(className: "MemoClass", id: "KXBeNC7VSJ5zffgR")["title"] == "Ramen Jiro")
    }

    @Test("a bundle refuses to write a record or file it could not read back: an id or file name holding NUL")
    func bundleWriterRefusesNUL() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let bundle = try BundleBackend(directory: scratch.path("bundle"))
        await #expect { _ = try await bundle.upload(FileUpload(name: "a\u{0}b.png", source: .data(Data("x".utf8)))) } throws: {
            ($0 as? MBaaSError)?.kind == .invalidRequest
        }
        let results = try await bundle.batch([
            .create(Record(className: "Memo", id: "m\u{0}1", fields: [:])),
            .create(Record(className: "Memo", id: "m2", fields: ["photo": .file(FileReference(name: "p\u{0}.png"))])),
            .create(Record(className: "Memo", id: "m3", fields: ["t": "ok"])),
            .create(Record(className: "Me\u{0}mo", id: "m4", fields: [:])),
        ])
        let kinds: [MBaaSError.Kind?] = results.map { result in
            if case .failure(let e) = result { return e.kind }
            return nil
        }
        #expect(kinds == [.invalidRequest, .invalidRequest, nil, .invalidRequest])
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
