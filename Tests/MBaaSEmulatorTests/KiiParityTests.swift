import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSEmulator
import MBaaSKiiWire
import MBaaSReplay
import MBaaSTesting
import Testing

/// Parity: every request of every Kii cassette is sent to the Kii dialect, and its answer is compared with the
/// recorded one: status, errorCode, and body shape (top-level keys; for `results`, the count and the keys of each
/// element; `aggregations` by value; non-JSON bodies byte for byte). Server-made values (user, object and group ids,
/// access tokens, pagination keys) are masked: a value the dialect answers is substituted for the recorded one in
/// the requests that follow.
///
/// The cassettes were authored against the Kii adapter's test simulator, an independent reading of the same
/// documents; the dialect does not reuse it. A divergence fails the test unless `Fixtures/Parity/kii.json` lists it
/// with a reason; a listed divergence that no longer happens fails too, so the list stays true.
@Suite("Kii dialect parity with the cassettes")
struct KiiParityTests {
    typealias Divergence = ParityDivergence

    @Test("each recorded exchange is answered with the recorded status, errorCode and body shape, or is allow-listed with a reason")
    func parity() async throws {
        try await Parity.run(adapter: "kii", minimumCassettes: 60, minimumExchanges: 400) { cassette, name in
            // The app ID the requests name (a placeholder in the cassette, a dummy value once substituted).
            let appID = cassette.interactions.first?.request.headers["X-Kii-AppID"] ?? "simapp"
            return try await Self.check(cassette, appID: appID, name: name)
        }
    }

    /// Replays one cassette against a fresh dialect holding the cassette's app ID.
    static func check(_ cassette: Cassette, appID: String, name: String) async throws -> ([Divergence], Int) {
        let ticks = TestClock(cassette.recordedAt.addingTimeInterval(0.001), tick: 0.001)
        let dialect = try makeKiiDialect(appID: appID, storeClock: ticks.function)
        var substitutions: [(String, String)] = []
        var found: [Divergence] = []
        func substitute(_ text: String) -> String {
            substitutions.reduce(text) { $0.replacingOccurrences(of: $1.0, with: $1.1) }
        }
        for (index, interaction) in cassette.interactions.enumerated() {
            let recorded = interaction.request
            var path = substitute(recorded.path)
            if !path.hasPrefix("/") { path = "/" + path }
            let query = recorded.query.map { ($0.name, substitute($0.value)) }
            let requestURL = try URL.build(base: "https://api-jp.kii.com", path: path, query: query)
            var body = recorded.body.isNone ? nil : recorded.body.data()
            if let data = body, case .json = recorded.body {
                body = Data(substitute(String(decoding: data, as: UTF8.self)).utf8)
            }
            var request = TransportRequest(method: try #require(TransportRequest.Method(recorded.method)), url: requestURL, body: body)
            for field in recorded.headers { request.headers[field.name] = substitute(field.value) }
            let answer = try await EmulatorTransport(dialect).send(request)
            let expected = interaction.response
            let summary = "\(recorded.method) \(recorded.path)"
            if answer.status.code != expected.status {
                found.append(Divergence(cassette: name, index: index, summary: summary,
                                        difference: "status \(expected.status) recorded, \(answer.status.code) emulated \(String(decoding: answer.body.prefix(160), as: UTF8.self))"))
                continue
            }
            guard case .json(let want) = expected.body else {
                if !expected.body.isNone, expected.body.data() != answer.body {
                    found.append(Divergence(cassette: name, index: index, summary: summary, difference: "the body bytes differ"))
                }
                continue
            }
            guard let got = try? JSON.parse(answer.body) else {
                found.append(Divergence(cassette: name, index: index, summary: summary, difference: "recorded JSON, emulated a non-JSON body"))
                continue
            }
            if let difference = shapeDifference(want, got) {
                found.append(Divergence(cassette: name, index: index, summary: summary, difference: difference))
            }
            learn(want, got, into: &substitutions)
        }
        return (found, cassette.interactions.count)
    }

    /// Server-made values (ids, tokens, pagination keys) the dialect answered in place of recorded ones.
    static func learn(_ want: JSON, _ got: JSON, into substitutions: inout [(String, String)]) {
        for key in ["userID", "id", "access_token", "objectID", "_id", "groupID", "nextPaginationKey"] {
            if let a = want[key]?.stringValue, let b = got[key]?.stringValue, a != b, !substitutions.contains(where: { $0.0 == a }) {
                substitutions.append((a, b))
            }
        }
        if let a = want["results"]?.arrayValue, let b = got["results"]?.arrayValue, a.count == b.count {
            for (x, y) in zip(a, b) { learn(x, y, into: &substitutions) }
        }
    }

    /// The first difference of shape: errorCode, top-level keys, `results` count and element keys, aggregations.
    static func shapeDifference(_ want: JSON, _ got: JSON) -> String? {
        if let code = want["errorCode"]?.stringValue {
            return got["errorCode"]?.stringValue == code ? nil : "errorCode \(code) recorded, \(got["errorCode"]?.printed() ?? "none") emulated"
        }
        if let w = want.arrayValue, let g = got.arrayValue {
            return w.count == g.count ? nil : "array of \(w.count) recorded, \(g.count) emulated"
        }
        guard let w = want.objectValue, let g = got.objectValue else { return nil }
        let wk = Set(w.keys), gk = Set(g.keys)
        if wk != gk {
            return "keys: recorded only \(wk.subtracting(gk).sorted()), emulated only \(gk.subtracting(wk).sorted())"
        }
        if let a = w["aggregations"], let b = g["aggregations"], a != b {
            return "aggregations \(a.printed()) recorded, \(b.printed()) emulated"
        }
        if let a = w["results"]?.arrayValue, let b = g["results"]?.arrayValue {
            if a.count != b.count { return "results: \(a.count) recorded, \(b.count) emulated" }
            for (i, (x, y)) in zip(a, b).enumerated() {
                if let d = shapeDifference(x, y) { return "results[\(i)] \(d)" }
            }
        }
        return nil
    }
}
