import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSNCMB
import MBaaSTesting
import Testing
@testable import MBaaSMigration

/// An export is read and checked whole before anything is written.
@Suite("Migration: reading exports")
struct ExportReadingTests {
    @Test("a malformed export stops the run before anything is written, naming the file and line")
    func malformedExport() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = try scratch.sampleExport()
        let memo = export.appendingPathComponent("MemoClass.json")
        var text = try String(contentsOf: memo, encoding: .utf8)
        text = text.replacingOccurrences(of: "\"title\": \"Snack\",", with: "\"title\": \"Snack\" \"oops\",")
        try text.write(to: memo, atomically: true, encoding: .utf8)
        let badLine = text.components(separatedBy: "\n").firstIndex { $0.contains("Snack") }! + 1
        let source = try NCMBExportBackend(directory: export)
        let target = try openLocal(scratch.path("memo.db"))
        let error = await #expect(throws: MBaaSError.self) { try await migrate(source, target, state: scratch.path("state")) }
        #expect(error?.kind == .decoding)
        #expect(error?.message.contains("MemoClass.json line") == true, "\(String(describing: error))")
        // The line of the record that holds the error (records start a few lines above the bad member).
        let named = Int(error?.message.split(separator: " ").drop { $0 != "line" }.dropFirst().first?.filter(\.isNumber) ?? "") ?? 0
        #expect(named > 0 && named <= badLine)
        try await expectNothingWritten(target)
    }

    @Test("a member given twice in an exported record stops the run before anything is written, naming it: neither value is guessed")
    func repeatedMemberInExport() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = try scratch.sampleExport()
        let memo = export.appendingPathComponent("MemoClass.json")
        var text = try String(contentsOf: memo, encoding: .utf8)
        #expect(text.contains("\"title\": \"Snack\","))
        text = text.replacingOccurrences(of: "\"title\": \"Snack\",", with: "\"title\": \"Snack\", \"title\": \"Snacks\",")
        try text.write(to: memo, atomically: true, encoding: .utf8)
        let source = try NCMBExportBackend(directory: export)
        let target = try openLocal(scratch.path("memo.db"))
        let error = await #expect(throws: MBaaSError.self) { try await migrate(source, target, state: scratch.path("state")) }
        #expect(error?.kind == .decoding)
        #expect(error?.message.contains("MemoClass.json line") == true, "\(String(describing: error))")
        #expect(error?.message.contains("title") == true && error?.message.contains("repeated") == true, "\(String(describing: error))")
        try await expectNothingWritten(target)
    }

    /// The target holds no class and no user; closes it.
    func expectNothingWritten(_ target: LocalBackend, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        #expect(try await target.listClasses().isEmpty, sourceLocation: sourceLocation)
        #expect(try await target.listUsers(after: nil, limit: 10).users.isEmpty, sourceLocation: sourceLocation)
        await target.close()
    }

    @Test("an export is checked on every core: a malformed record deep in a class is named by its line, and of two the earlier one")
    func malformedDeepInExport() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = scratch.path("export")
        try NCMBExportSample.write(records: 3_000, seed: 11, fileEvery: 0, to: export)
        let memo = export.appendingPathComponent("MemoClass.json")
        #expect(try await NCMBExportBackend(directory: export).count(Query("MemoClass")) == 3_000)
        // Record i is on line i + 3. A date that is not one (a decoding error) in record 1,800, and broken JSON in
        // record 2,500: both far past the first chunks the check hands out, the second in a later chunk.
        var lines = try String(contentsOf: memo, encoding: .utf8).components(separatedBy: "\n")
        #expect(lines[1_800 + 2].contains("\"title\":\"memo 1800\""))
        let good = lines[1_800 + 2]
        lines[1_800 + 2] = good.replacingOccurrences(of: "\"iso\":\"20", with: "\"iso\":\"2X")
        #expect(lines[1_800 + 2] != good)
        lines[2_500 + 2] = lines[2_500 + 2].replacingOccurrences(of: "\"title\":", with: "\"title\" ")
        try lines.joined(separator: "\n").write(to: memo, atomically: true, encoding: .utf8)
        let error = await #expect(throws: MBaaSError.self) { try await NCMBExportBackend(directory: export).count(Query("MemoClass")) }
        #expect(error?.kind == .decoding)
        #expect(error?.message.hasPrefix("ncmb-export: MemoClass.json line 1803:") == true, "\(String(describing: error))")
        // With only the broken JSON left, that one is named.
        lines[1_800 + 2] = good
        try lines.joined(separator: "\n").write(to: memo, atomically: true, encoding: .utf8)
        let second = await #expect(throws: MBaaSError.self) { try await NCMBExportBackend(directory: export).count(Query("MemoClass")) }
        #expect(second?.message.hasPrefix("ncmb-export: MemoClass.json line 2503:") == true, "\(String(describing: second))")
        // And a migration stops on it before anything is written.
        let target = try openLocal(scratch.path("t.db"))
        await #expect(throws: MBaaSError.self) { try await migrate(NCMBExportBackend(directory: export), target, state: scratch.path("state")) }
        try await expectNothingWritten(target)
    }

    @Test("an export's pages are parsed in parallel chunks: every record once and in file order across cursors; in a page, the earliest malformed record is named")
    func pagesInParallel() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let export = scratch.path("export")
        try NCMBExportSample.write(records: 3_000, seed: 12, fileEvery: 0, to: export)
        let memo = export.appendingPathComponent("MemoClass.json")
        // The order a plain front-to-back read gives.
        var reader = try JSONArrayFileReader(url: memo, member: "results")
        var expected: [String] = []
        while let element = try reader.next() { expected.append(element.value["objectId"]?.stringValue ?? "?") }
        reader.close()
        #expect(expected.count == 3_000)
        for pageSize in [1_000, 700, 90] {   // 1,000 and 700 are cut into chunks; 90 is decoded in one
            var ids: [String] = []
            var pages = 0
            for try await record in try NCMBExportBackend(directory: export).records(matching: Query("MemoClass"), pageSize: pageSize) {
                ids.append(record.id ?? "")
                if ids.count % pageSize == 1 { pages += 1 }
            }
            #expect(ids == expected, "pages of \(pageSize)")
            #expect(pages == (3_000 + pageSize - 1) / pageSize)
        }
        // Record i is on line i + 3. In the second page of 1,000: a date that is not one in record 1,200 (its first
        // chunk) and broken JSON in record 1,900 (its last): the first is named, as a front-to-back read would.
        var lines = try String(contentsOf: memo, encoding: .utf8).components(separatedBy: "\n")
        let good = lines[1_200 + 2]
        lines[1_200 + 2] = good.replacingOccurrences(of: "\"iso\":\"20", with: "\"iso\":\"2X")
        #expect(lines[1_200 + 2] != good)
        lines[1_900 + 2] = lines[1_900 + 2].replacingOccurrences(of: "\"title\":", with: "\"title\" ")
        try lines.joined(separator: "\n").write(to: memo, atomically: true, encoding: .utf8)
        let source = try NCMBExportBackend(directory: export)
        let first = try await source.queryPage(Query("MemoClass", limit: 1_000))
        #expect(first.records.count == 1_000 && first.nextCursor != nil)
        var page2 = Query("MemoClass", limit: 1_000)
        page2.cursor = first.nextCursor
        let error = await #expect(throws: MBaaSError.self) { try await source.queryPage(page2) }
        #expect(error?.message.hasPrefix("ncmb-export: MemoClass.json line 1203:") == true, "\(String(describing: error))")
        lines[1_200 + 2] = good
        try lines.joined(separator: "\n").write(to: memo, atomically: true, encoding: .utf8)
        let second = await #expect(throws: MBaaSError.self) { try await source.queryPage(page2) }
        #expect(second?.message.hasPrefix("ncmb-export: MemoClass.json line 1903:") == true, "\(String(describing: second))")
    }
}
