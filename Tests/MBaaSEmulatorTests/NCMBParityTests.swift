import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSEmulator
import MBaaSNCMB
import MBaaSReplay
import MBaaSTesting
import Testing

/// Parity: every request of every NCMB cassette is sent to the NCMB dialect, and its answer is compared with the
/// recorded one: status, error code, and body shape (top-level keys; for `results`, the count and the keys of
/// each element). Server-made values (ids, tokens, dates) are masked: an id, token or date the dialect answers is
/// substituted for the recorded one in the requests that follow, which are then signed again.
///
/// A divergence fails the test unless `Fixtures/Parity/ncmb.json` lists it with a reason; a listed divergence
/// that no longer happens fails too, so the list stays true.
@Suite("NCMB dialect parity with the cassettes")
struct NCMBParityTests {
    typealias Divergence = ParityDivergence

    @Test("each recorded exchange is answered with the recorded status, error code and body shape, or is allow-listed with a reason")
    func parity() async throws {
        try await Parity.run(adapter: "ncmb", minimumCassettes: 61, minimumExchanges: 500) { cassette, name in
            try await Self.check(cassette, name: name)
        }
    }

    /// Replays one cassette against a fresh dialect holding the cassette's (dummy) keys and clock.
    static func check(_ cassette: Cassette, name: String) async throws -> ([Divergence], Int) {
        let url = try BackendURL(parsing: cassette.backendURL ?? "")
        let appKey = try #require(url.user), clientKey = try #require(url.secret)
        let firstStamp = cassette.interactions.first?.request.headers[NCMBSigner.Header.timestamp].flatMap(ISO8601.parse)
            ?? cassette.recordedAt
        // The store's clock starts at the cassette's and ticks a millisecond per reading, like the recording's.
        let ticks = TestClock(firstStamp, tick: 0.001)
        let dialect = try makeDialect(applicationKey: appKey, clientKey: clientKey, clock: { firstStamp },
                                      storeClock: ticks.function)
        let signer = NCMBSigner(applicationKey: appKey, clientKey: clientKey)
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
            let requestURL = try URL.build(base: "http://mbaas.api.nifcloud.com", path: path, query: query)
            var body = recorded.body.isNone ? nil : recorded.body.data()
            if let data = body, recorded.headers["Content-Type"]?.contains("json") == true {
                body = Data(substitute(String(decoding: data, as: UTF8.self)).utf8)
            }
            var request = TransportRequest(method: try #require(TransportRequest.Method(recorded.method)), url: requestURL, body: body)
            for field in recorded.headers { request.headers[field.name] = substitute(field.value) }
            if case .multipart = recorded.body {
                request.headers["Content-Type"] = "multipart/form-data; boundary=mbaas-replay-boundary"
            }
            let stamp = recorded.headers[NCMBSigner.Header.timestamp] ?? ISO8601.format(firstStamp)
            try signer.sign(&request, timestamp: stamp)
            let answer = try await EmulatorTransport(dialect).send(request)
            let expected = interaction.response
            let summary = "\(recorded.method) \(recorded.path)"
            if answer.status.code != expected.status {
                found.append(Divergence(cassette: name, index: index, summary: summary,
                                        difference: "status \(expected.status) recorded, \(answer.status.code) emulated \(String(decoding: answer.body.prefix(160), as: UTF8.self))"))
                continue
            }
            guard case .json(let want) = expected.body else { continue }
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

    /// Server-made values (ids, tokens) the dialect answered in place of recorded ones.
    static func learn(_ want: JSON, _ got: JSON, into substitutions: inout [(String, String)]) {
        for key in ["objectId", "sessionToken", "createDate", "updateDate"] {
            if let a = want[key]?.stringValue, let b = got[key]?.stringValue, a != b, !substitutions.contains(where: { $0.0 == a }) {
                substitutions.append((a, b))
            }
        }
        if let a = want["results"]?.arrayValue, let b = got["results"]?.arrayValue, a.count == b.count {
            for (x, y) in zip(a, b) { learn(x, y, into: &substitutions) }
        }
    }

    /// The first difference of shape: error code, top-level keys, `results` count and element keys.
    static func shapeDifference(_ want: JSON, _ got: JSON) -> String? {
        if let code = want["code"]?.stringValue {
            return got["code"]?.stringValue == code ? nil : "error code \(code) recorded, \(got["code"]?.printed() ?? "none") emulated"
        }
        guard let w = want.objectValue, let g = got.objectValue else { return nil }
        let wk = Set(w.keys), gk = Set(g.keys)
        if wk != gk {
            return "keys: recorded only \(wk.subtracting(gk).sorted()), emulated only \(gk.subtracting(wk).sorted())"
        }
        if let a = w["count"], let b = g["count"], a != b { return "count \(a.printed()) recorded, \(b.printed()) emulated" }
        if let a = w["results"]?.arrayValue, let b = g["results"]?.arrayValue {
            if a.count != b.count { return "results: \(a.count) recorded, \(b.count) emulated" }
            for (i, (x, y)) in zip(a, b).enumerated() {
                if let d = shapeDifference(x, y) { return "results[\(i)] \(d)" }
            }
        }
        return nil
    }
}

