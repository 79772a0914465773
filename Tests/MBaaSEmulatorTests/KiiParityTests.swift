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
        return try await Parity.replay(cassette, name: name, base: "https://api-jp.kii.com", transport: EmulatorTransport(dialect),
                                       shape: shapeDifference, learn: { learn($0, $1, into: &$2) })
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
