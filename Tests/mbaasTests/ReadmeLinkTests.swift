import ArgumentParser
import Foundation
import Testing

@testable import mbaas

/// The README and `docs/*.md` stay true to the tree: every relative link resolves to a file or folder of the
/// package, and every `mbaas …` command the README shows in a shell block parses with the CLI's own parser
/// (arguments, options, subcommands and their validation; nothing is run).
@Suite("README and docs: links resolve, commands parse")
struct ReadmeLinkTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The Markdown files checked: README.md and every docs/*.md.
    static func documents() throws -> [URL] {
        let docs = root.appendingPathComponent("docs")
        let names = try FileManager.default.contentsOfDirectory(atPath: docs.path).filter { $0.hasSuffix(".md") }.sorted()
        return [root.appendingPathComponent("README.md")] + names.map { docs.appendingPathComponent($0) }
    }

    /// The lines outside fenced code blocks, and the lines of the ```sh blocks.
    static func split(_ text: String) -> (prose: [String], shell: [String]) {
        var prose: [String] = [], shell: [String] = []
        var fence: String?
        for line in text.components(separatedBy: "\n") {
            if line.hasPrefix("```") {
                fence = fence == nil ? String(line.dropFirst(3)) : nil
                continue
            }
            switch fence {
            case nil: prose.append(line)
            case "sh"?: shell.append(line)
            default: break
            }
        }
        return (prose, shell)
    }

    /// The targets of inline links `[text](target)` in Markdown prose (code spans removed first).
    static func linkTargets(_ prose: [String]) -> [String] {
        var targets: [String] = []
        for line in prose {
            let text = line.split(separator: "`", omittingEmptySubsequences: false).enumerated()
                .filter { $0.offset % 2 == 0 }.map(\.element).joined()
            var rest = Substring(text)
            while let open = rest.range(of: "](") {
                let after = rest[open.upperBound...]
                guard let close = after.firstIndex(of: ")") else { break }
                targets.append(String(after[..<close]))
                rest = after[close...]
            }
        }
        return targets
    }

    /// Shell words, with '…' and "…" quoting (the README's commands use nothing else).
    static func words(_ line: String) -> [String] {
        var words: [String] = [], current = "", quote: Character?, inWord = false
        for c in line {
            if let q = quote {
                if c == q { quote = nil } else { current.append(c) }
            } else if c == "'" || c == "\"" {
                quote = c; inWord = true
            } else if c == " " {
                if inWord { words.append(current); current = ""; inWord = false }
            } else {
                current.append(c); inWord = true
            }
        }
        if inWord { words.append(current) }
        return words
    }

    @Test("every relative link in README.md and docs/*.md names a file or folder that exists")
    func relativeLinksResolve() throws {
        var checked = 0
        for document in try Self.documents() {
            let text = try String(contentsOf: document, encoding: .utf8)
            for target in Self.linkTargets(Self.split(text).prose) {
                if target.contains("://") || target.hasPrefix("mailto:") || target.hasPrefix("#") { continue }
                let path = String(target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0])
                let resolved = document.deletingLastPathComponent().appendingPathComponent(path).standardizedFileURL
                #expect(FileManager.default.fileExists(atPath: resolved.path),
                        "\(document.lastPathComponent): the link \(target) resolves to \(resolved.path), which does not exist")
                checked += 1
            }
        }
        // The README links every docs/*.md file; fewer links means the check saw nothing.
        #expect(checked >= (try Self.documents().count - 1))
    }

    @Test("the README links every docs/*.md file, so none is orphaned")
    func everyDocIsLinked() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let linked = Set(Self.linkTargets(Self.split(readme).prose))
        for document in try Self.documents().dropFirst() {
            #expect(linked.contains("docs/" + document.lastPathComponent), "README.md does not link docs/\(document.lastPathComponent)")
        }
    }

    @Test("every mbaas command in the README's shell blocks parses with the CLI's own parser")
    func readmeCommandsParse() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        var commands: [[String]] = []
        for line in Self.split(readme).shell {
            var words = Self.words(line.components(separatedBy: " #")[0].trimmingCharacters(in: .whitespaces))
            if words.starts(with: ["swift", "run"]) { words.removeFirst(2) }
            guard words.first == "mbaas" else { continue }
            commands.append(Array(words.dropFirst()))
        }
        #expect(commands.count >= 7, "the README shows \(commands.count) mbaas commands")
        for arguments in commands {
            do {
                _ = try MBaaSCommand.parseAsRoot(arguments)
            } catch {
                Issue.record("mbaas \(arguments.joined(separator: " ")) does not parse: \(MBaaSCommand.message(for: error))")
            }
        }
    }

    @Test("the parser check fails for a command that does not parse (the check can fail)")
    func badCommandIsCaught() {
        #expect(throws: (any Error).self) { try MBaaSCommand.parseAsRoot(["objects", "query", "sqlite:app.db", "Memo", "--no-such-option"]) }
        #expect(throws: (any Error).self) { try MBaaSCommand.parseAsRoot(["migrate", "--from"]) }
        #expect(Self.words(#"objects create sqlite:app.db Memo '{"title":"rent"}'"#) == ["objects", "create", "sqlite:app.db", "Memo", #"{"title":"rent"}"#])
        #expect(Self.linkTargets(["see [a](docs/a.md) and `[b](no.md)` and [c](../x#y)"]) == ["docs/a.md", "../x#y"])
    }
}
