import Foundation
import MBaaSCore
import Testing

@Suite("JSON array file reader")
struct JSONArrayFileReaderTests {
    @Test("a malformed element over many lines is named by the line of the problem, parsed in place or apart")
    func failureNamesTheBadLine() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("reader-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: url) }
        // Line 1 `{"results":[`, the good element on 2-5, the bad one starts on 6 and breaks on 9.
        let text = "{\"results\":[\n{\n  \"a\": 1,\n  \"b\": 2\n},\n{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\" 3\n}\n]}\n"
        try Data(text.utf8).write(to: url)
        var reader = try JSONArrayFileReader(url: url, member: "results")
        #expect(try reader.next()?.line == 2)
        #expect { _ = try reader.next() } throws: { ($0 as? JSONArrayFileReader.Failure)?.line == 9 }
        var raw = try JSONArrayFileReader(url: url, member: "results")
        _ = try raw.nextRaw()
        let element = try #require(try raw.nextRaw())
        #expect(element.line == 6)
        #expect { _ = try element.parse() } throws: { ($0 as? JSONArrayFileReader.Failure)?.line == 9 }
    }
}
