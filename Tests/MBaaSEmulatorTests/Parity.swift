import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSReplay
import Testing

/// One exchange of a cassette that a dialect answers with another status, error code or body shape.
struct ParityDivergence: Hashable, CustomStringConvertible {
    var cassette: String
    var index: Int
    var summary: String
    var difference: String
    /// `<cassette>#<index>`, as `Fixtures/Parity/<adapter>.json` names it.
    var key: String { "\(cassette)#\(index)" }
    var description: String { "\(key) \(summary): \(difference)" }
}

/// The parity check every dialect runs against its adapter's cassettes: each cassette is replayed against a fresh
/// dialect by `check`, and the divergences found must be exactly those `Fixtures/Parity/<adapter>.json` lists,
/// each with a reason (an unexplained divergence fails, and so does a listed one that no longer happens).
enum Parity {
    static func run(
        adapter: String, minimumCassettes: Int, minimumExchanges: Int,
        load: (URL) throws -> Cassette = { try Cassette.load(from: $0).substituting() },
        check: (Cassette, String) async throws -> ([ParityDivergence], Int),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let directory = ConformanceSuite.bundledFixtures.appendingPathComponent("Cassettes/\(adapter)")
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "json" }.sorted { $0.lastPathComponent < $1.lastPathComponent }
        #expect(files.count >= minimumCassettes, sourceLocation: sourceLocation)
        var divergences: [ParityDivergence] = []
        var exchanges = 0
        for file in files {
            let (found, count) = try await check(try load(file), file.deletingPathExtension().lastPathComponent)
            divergences += found
            exchanges += count
        }
        #expect(exchanges > minimumExchanges, sourceLocation: sourceLocation)
        let allowed = try allowList(adapter)
        let unexplained = divergences.filter { allowed[$0.key] == nil }
        #expect(unexplained.isEmpty, "divergences not in Fixtures/Parity/\(adapter).json:\n\(unexplained.map(\.description).joined(separator: "\n"))",
                sourceLocation: sourceLocation)
        let stale = Set(allowed.keys).subtracting(divergences.map(\.key))
        #expect(stale.isEmpty, "allow-listed but no longer diverging: \(stale.sorted())", sourceLocation: sourceLocation)
        for (key, reason) in allowed {
            #expect(reason.count >= 20, "\(key): the reason must explain the divergence", sourceLocation: sourceLocation)
        }
    }

    /// `{"divergences":[{"exchange":"<cassette>#<index>","reason":"…"}]}` as exchange → reason (empty without a file).
    static func allowList(_ adapter: String) throws -> [String: String] {
        let url = ConformanceSuite.bundledFixtures.appendingPathComponent("Parity/\(adapter).json")
        guard FileManager.default.fileExists(atPath: url.path) else { return [:] }
        let json = try JSON.parse(Data(contentsOf: url))
        var out: [String: String] = [:]
        for entry in json["divergences"]?.arrayValue ?? [] {
            if let key = entry["exchange"]?.stringValue { out[key] = entry["reason"]?.stringValue ?? "" }
        }
        return out
    }
}
