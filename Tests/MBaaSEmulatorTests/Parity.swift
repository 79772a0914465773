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

    /// Replays a cassette's exchanges through `transport` (a fresh dialect) and compares each answer with the
    /// recorded one: the status; for a JSON body, `shape`'s first difference; for any other body, its bytes.
    /// Server-made values (ids, tokens, dates) are learned from each answer by `learn` and substituted into the
    /// requests that follow (path, query, JSON body, headers); `prepare` finishes a request before it is sent
    /// (NCMB signs it again). Returns the divergences and the number of exchanges.
    static func replay(
        _ cassette: Cassette, name: String, base: String, transport: any HTTPTransport,
        prepare: (inout TransportRequest, RecordedRequest) throws -> Void = { _, _ in },
        shape: (JSON, JSON) -> String?,
        learn: (JSON, JSON, inout [(String, String)]) -> Void
    ) async throws -> ([ParityDivergence], Int) {
        var substitutions: [(String, String)] = []
        var found: [ParityDivergence] = []
        func substitute(_ text: String) -> String {
            substitutions.reduce(text) { $0.replacingOccurrences(of: $1.0, with: $1.1) }
        }
        for (index, interaction) in cassette.interactions.enumerated() {
            let recorded = interaction.request
            var path = substitute(recorded.path)
            if !path.hasPrefix("/") { path = "/" + path }
            let query = recorded.query.map { ($0.name, substitute($0.value)) }
            var body = recorded.body.isNone ? nil : recorded.body.data()
            if let data = body, case .json = recorded.body {
                body = Data(substitute(String(decoding: data, as: UTF8.self)).utf8)
            } else if let data = body, recorded.headers["Content-Type"]?.contains("json") == true {
                body = Data(substitute(String(decoding: data, as: UTF8.self)).utf8)
            }
            var request = TransportRequest(method: try #require(TransportRequest.Method(recorded.method)),
                                           url: try URL.build(base: base, path: path, query: query), body: body)
            for field in recorded.headers { request.headers[field.name] = substitute(field.value) }
            if case .multipart = recorded.body {
                request.headers["Content-Type"] = "multipart/form-data; boundary=mbaas-replay-boundary"
            }
            try prepare(&request, recorded)
            let answer = try await transport.send(request)
            let expected = interaction.response
            let summary = "\(recorded.method) \(recorded.path)"
            func diverge(_ difference: String) {
                found.append(ParityDivergence(cassette: name, index: index, summary: summary, difference: difference))
            }
            if answer.status.code != expected.status {
                diverge("status \(expected.status) recorded, \(answer.status.code) emulated \(String(decoding: answer.body.prefix(160), as: UTF8.self))")
                continue
            }
            guard case .json(let want) = expected.body else {
                if !expected.body.isNone, expected.body.data() != answer.body { diverge("the body bytes differ") }
                continue
            }
            guard let got = try? JSON.parse(answer.body) else {
                diverge("recorded JSON, emulated a non-JSON body")
                continue
            }
            if let difference = shape(want, got) { diverge(difference) }
            learn(want, got, &substitutions)
        }
        return (found, cassette.interactions.count)
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
