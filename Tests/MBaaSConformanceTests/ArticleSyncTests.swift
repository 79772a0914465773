import Foundation
import Testing

/// The DocC article "Writing an adapter" quotes the example adapter (the product `MBaaSExampleAdapter`) and its
/// test; every quoted block must still be in the code, line for line.
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
        // The example is the library product MBaaSExampleAdapter (Sources/MBaaSExampleAdapter); its test is here.
        let product = Self.testsDirectory.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/MBaaSExampleAdapter")
        let files = try FileManager.default.contentsOfDirectory(at: product, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "swift" }.sorted { $0.lastPathComponent < $1.lastPathComponent }
        #expect(files.count >= 4)
        var code: [String] = []
        for file in files { code += Self.lines(try String(contentsOf: file, encoding: .utf8)) + [""] }
        code += Self.lines(try String(contentsOf: Self.testsDirectory.appendingPathComponent("ExampleAdapterTests.swift"), encoding: .utf8))
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

    /// The outside-package recipe names only MBaaSKit's public library products, and the example's among them.
    @Test func theOutsidePackageRecipeUsesPublicProductsOnly() throws {
        let text = try String(contentsOf: Self.article, encoding: .utf8)
        let manifest = try String(contentsOf: Self.testsDirectory.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Package.swift"), encoding: .utf8)
        let recipe = try #require(text.components(separatedBy: "// swift-tools-version").dropFirst().first?
            .components(separatedBy: "```").first)
        let named = recipe.components(separatedBy: ".product(name: \"").dropFirst()
            .compactMap { $0.components(separatedBy: "\"").first }
        #expect(Set(named) == ["MBaaSCore", "MBaaSExampleAdapter", "MBaaSConformance", "MBaaSTesting"])
        for product in named {
            #expect(manifest.contains(".library(name: \"\(product)\""), "\(product) is not a library product of MBaaSKit")
        }
        #expect(recipe.contains(".package(path: \"../MBaaSKit\")"))
    }
}
