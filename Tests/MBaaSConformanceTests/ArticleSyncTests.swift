import Foundation
import Testing

/// The DocC article "Writing an adapter" quotes the example adapter and its test; every quoted block must still
/// be in the code, line for line.
@Suite struct ArticleSyncTests {
    static let testsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    static let article = testsDirectory.deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/MBaaSConformance/MBaaSConformance.docc/WritingAnAdapter.md")

    static func lines(_ text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    @Test func everySwiftBlockIsInTheExampleOrItsTest() throws {
        let text = try String(contentsOf: Self.article, encoding: .utf8)
        let adapter = try String(contentsOf: Self.testsDirectory.appendingPathComponent("ExampleAdapter.swift"), encoding: .utf8)
        let test = try String(contentsOf: Self.testsDirectory.appendingPathComponent("ExampleAdapterTests.swift"), encoding: .utf8)
        let code: [String] = Self.lines(adapter) + Self.lines(test)
        let blocks: [String] = text.components(separatedBy: "```swift\n").dropFirst()
            .map { (chunk: String) -> String in chunk.components(separatedBy: "```").first ?? "" }
        #expect(blocks.count >= 5)
        for block in blocks {
            let quoted = Self.lines(block)
            let found = code.indices.contains { (start: Int) -> Bool in
                start + quoted.count <= code.count && Array(code[start..<(start + quoted.count)]) == quoted
            }
            #expect(found, "not in the example: \(quoted.first ?? "")")
        }
    }
}
