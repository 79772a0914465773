import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSEmulator
import MBaaSLocal
import MBaaSParseWire
import MBaaSReplay
import MBaaSTesting
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
        let store = try LocalBackend.inMemory(options: LocalBackend.Options(passwordHashing: .testing))
        let dialect = ParseDialect(store: store, configuration: .init(applicationId: appId, restKey: restKey))
        return try await Parity.replay(cassette, name: name, base: "http://\(url.host ?? "127.0.0.1"):\(url.port ?? 80)",
                                       transport: EmulatorTransport(dialect), shape: shapeDifference,
                                       learn: { learn($0, $1, into: &$2) })
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
