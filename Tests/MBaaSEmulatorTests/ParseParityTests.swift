import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSEmulator
import MBaaSLocal
import MBaaSParseWire
import MBaaSReplay
import Testing

/// Parity: every request of every Parse cassette is sent to a fresh Parse dialect, and its answer is compared with
/// the recorded one (status, error code, body shape), server-made values (ids, tokens, dates, stored file names)
/// learned and substituted as in the other dialects' parity checks.
///
/// The Parse cassettes were recorded from this same dialect, so this check guards the dialect against drifting
/// from what it answered when they were recorded (and the cassettes against going stale); it is not evidence about
/// Parse Server. That evidence is the REST guide's examples in ``ParseVectorDialectTests``.
@Suite("Parse dialect parity with the cassettes")
struct ParseParityTests {
    @Test("each recorded exchange is answered with the recorded status, error code and body shape, or is allow-listed with a reason")
    func parity() async throws {
        try await Parity.run(adapter: "parse", minimumCassettes: 80, minimumExchanges: 500) { cassette, name in
            try await Self.check(cassette, name: name)
        }
    }

    static func check(_ cassette: Cassette, name: String) async throws -> ([ParityDivergence], Int) {
        let url = try BackendURL(parsing: cassette.backendURL ?? "")
        let appId = try #require(url.user), restKey = try #require(url.secret)
        let store = try LocalBackend.inMemory(options: LocalBackend.Options(passwordHashing: .light))
        let dialect = ParseDialect(store: store, configuration: .init(applicationId: appId, restKey: restKey))
        var substitutions: [(String, String)] = []
        var found: [ParityDivergence] = []
        func substitute(_ text: String) -> String {
            substitutions.reduce(text) { $0.replacingOccurrences(of: $1.0, with: $1.1) }
        }
        for (index, interaction) in cassette.interactions.enumerated() {
            let recorded = interaction.request
            let query = recorded.query.map { ($0.name, substitute($0.value)) }
            let requestURL = try URL.build(base: "http://\(url.host ?? "127.0.0.1"):\(url.port ?? 80)", path: substitute(recorded.path), query: query)
            var body = recorded.body.isNone ? nil : recorded.body.data()
            if let data = body, recorded.headers["Content-Type"]?.contains("json") == true {
                body = Data(substitute(String(decoding: data, as: UTF8.self)).utf8)
            }
            var request = TransportRequest(method: try #require(TransportRequest.Method(recorded.method)), url: requestURL, body: body)
            for field in recorded.headers { request.headers[field.name] = substitute(field.value) }
            let answer = try await EmulatorTransport(dialect).send(request)
            let expected = interaction.response
            let summary = "\(recorded.method) \(recorded.path)"
            if answer.status.code != expected.status {
                found.append(ParityDivergence(cassette: name, index: index, summary: summary,
                                              difference: "status \(expected.status) recorded, \(answer.status.code) emulated \(String(decoding: answer.body.prefix(160), as: UTF8.self))"))
                continue
            }
            guard case .json(let want) = expected.body else { continue }
            guard let got = try? JSON.parse(answer.body) else {
                found.append(ParityDivergence(cassette: name, index: index, summary: summary, difference: "recorded JSON, emulated a non-JSON body"))
                continue
            }
            if let difference = shapeDifference(want, got) {
                found.append(ParityDivergence(cassette: name, index: index, summary: summary, difference: difference))
            }
            learn(want, got, into: &substitutions)
        }
        return (found, cassette.interactions.count)
    }

    static func learn(_ want: JSON, _ got: JSON, into substitutions: inout [(String, String)]) {
        for key in ["objectId", "sessionToken", "createdAt", "updatedAt", "name", "url"] {
            if let a = want[key]?.stringValue, let b = got[key]?.stringValue, a != b, !substitutions.contains(where: { $0.0 == a }) {
                substitutions.append((a, b))
            }
        }
        for key in ["results", "success"] {
            if let a = want[key]?.arrayValue, let b = got[key]?.arrayValue, a.count == b.count {
                for (x, y) in zip(a, b) { learn(x, y, into: &substitutions) }
            } else if let a = want[key], let b = got[key], a.objectValue != nil {
                learn(a, b, into: &substitutions)
            }
        }
        if let a = want.arrayValue, let b = got.arrayValue, a.count == b.count {
            for (x, y) in zip(a, b) { learn(x, y, into: &substitutions) }
        }
    }

    /// The first difference of shape: error code, top-level keys, `results` count and element keys, batch items.
    static func shapeDifference(_ want: JSON, _ got: JSON) -> String? {
        if let a = want.arrayValue {
            guard let b = got.arrayValue, a.count == b.count else { return "array of \(a.count) recorded, \(got.printed().prefix(80)) emulated" }
            for (i, (x, y)) in zip(a, b).enumerated() { if let d = shapeDifference(x, y) { return "[\(i)] \(d)" } }
            return nil
        }
        if let code = want["code"]?.intValue {
            return got["code"]?.intValue == code ? nil : "error code \(code) recorded, \(got["code"]?.printed() ?? "none") emulated"
        }
        guard let w = want.objectValue, let g = got.objectValue else { return nil }
        let wk = Set(w.keys), gk = Set(g.keys)
        if wk != gk { return "keys: recorded only \(wk.subtracting(gk).sorted()), emulated only \(gk.subtracting(wk).sorted())" }
        if let a = w["count"], let b = g["count"], a != b { return "count \(a.printed()) recorded, \(b.printed()) emulated" }
        for key in ["results", "success", "error"] {
            if let a = w[key], let b = g[key], let d = shapeDifference(a, b) { return "\(key) \(d)" }
        }
        return nil
    }
}
