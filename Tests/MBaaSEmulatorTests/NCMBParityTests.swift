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
        return try await Parity.replay(
            cassette, name: name, base: "http://mbaas.api.nifcloud.com", transport: EmulatorTransport(dialect),
            prepare: { request, recorded in
                let stamp = recorded.headers[NCMBSigner.Header.timestamp] ?? ISO8601.format(firstStamp)
                try signer.sign(&request, timestamp: stamp)
            },
            shape: shapeDifference, learn: { learn($0, $1, into: &$2) })
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

