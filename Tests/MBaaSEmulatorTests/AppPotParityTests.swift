import Foundation
import MBaaSAppPot
import MBaaSConformance
import MBaaSCore
import MBaaSEmulator
import MBaaSReplay
import Testing

/// Parity: every request of every AppPot cassette is sent to the AppPot dialect (fresh per cassette, holding the
/// cassette's app and the fixture users), and its answer is compared with the recorded one: HTTP status, `errCode`,
/// top-level keys, and for `results` and data rows the count and the keys of each element. Server-made values
/// (anonymous and user tokens, object ids, server times, file names) are masked: a value the dialect answers in
/// place of a recorded one is substituted for it in the requests that follow.
///
/// A divergence fails the test unless `Fixtures/Parity/apppot.json` lists it with a reason; a listed divergence
/// that no longer happens fails too, so the list stays true.
@Suite("AppPot dialect parity with the cassettes")
struct AppPotParityTests {
    typealias Divergence = ParityDivergence

    @Test("each recorded AppPot exchange is answered with the recorded status, errCode and shape, or is allow-listed with a reason")
    func parity() async throws {
        try await Parity.run(adapter: "apppot", minimumCassettes: 61, minimumExchanges: 500, load: { file in
            try Cassette.load(from: file, substitutions: [
                "FIXTURE_PASSWORD_ALICE": "alice-pass", "FIXTURE_PASSWORD_BOB": "bob-pass", "FIXTURE_PASSWORD_CAROL": "carol-pass",
            ])
        }) { cassette, name in
            try await Self.check(cassette, name: name)
        }
    }

    /// Replays one cassette against a fresh dialect with the cassette's app key, company, app and version.
    static func check(_ cassette: Cassette, name: String) async throws -> ([Divergence], Int) {
        let url = try BackendURL(parsing: cassette.backendURL ?? "")
        let appKey = try #require(url.user)
        let company = try #require(url.option("company")), app = try #require(url.option("app"))
        let version = url.option("version") ?? "1.0"
        let dialect = try await makeAppPotDialect(appKey: appKey, company: company, appId: app, configure: { $0.appVersion = version })
        return try await Parity.replay(cassette, name: name, base: "http://apppot.example.test:8080", transport: EmulatorTransport(dialect),
                                       shape: shapeDifference, learn: { learn($0, $1, into: &$2) })
    }

    /// Server-made values the dialect answered in place of recorded ones: tokens (`results` of anonymousTokens,
    /// `authInfor.userTokens`), object ids, server times and stored file names, wherever they appear.
    static func learn(_ want: JSON, _ got: JSON, into substitutions: inout [(String, String)]) {
        func pair(_ a: String?, _ b: String?) {
            if let a, let b, a != b, !a.isEmpty, !substitutions.contains(where: { $0.0 == a }) { substitutions.append((a, b)) }
        }
        if let w = want.objectValue, let g = got.objectValue {
            for key in ["objectId", "serverCreateTime", "serverUpdateTime", "userTokens", "name"] { pair(w[key]?.stringValue, g[key]?.stringValue) }
            // A server time comes back in queries in the client's UTC form (`…Z`): mask that form too.
            for key in ["serverCreateTime", "serverUpdateTime"] {
                if let a = w[key]?.stringValue.flatMap(ISO8601.parse), let b = g[key]?.stringValue.flatMap(ISO8601.parse) {
                    pair(ISO8601.format(a), ISO8601.format(b))
                }
            }
            if let a = w["results"], let b = g["results"] {
                if let s = a.stringValue { pair(s, b.stringValue) } else { learn(a, b, into: &substitutions) }
            }
            for (key, value) in w where key == "authInfor" || value.arrayValue != nil {
                if let other = g[key] { learn(value, other, into: &substitutions) }
            }
        } else if let a = want.arrayValue, let b = got.arrayValue, a.count == b.count {
            for (x, y) in zip(a, b) { learn(x, y, into: &substitutions) }
        }
    }

    /// The first difference of shape: errCode, top-level keys, and for arrays (results, data rows) the count and
    /// each element's keys.
    static func shapeDifference(_ want: JSON, _ got: JSON) -> String? {
        if let code = want["errCode"]?.intValue, code != 0 {
            return got["errCode"]?.intValue == code ? nil : "errCode \(code) recorded, \(got["errCode"]?.printed() ?? "none") emulated"
        }
        guard let w = want.objectValue, let g = got.objectValue else { return nil }
        let wk = Set(w.keys), gk = Set(g.keys)
        if wk != gk {
            let error = g["errCode"].flatMap { $0.intValue == 0 ? nil : " (emulated errCode \($0.printed()): \(g["description"]?.stringValue ?? ""))" } ?? ""
            return "keys: recorded only \(wk.subtracting(gk).sorted()), emulated only \(gk.subtracting(wk).sorted())" + error
        }
        if let a = w["count"], let b = g["count"], a != b { return "count \(a.printed()) recorded, \(b.printed()) emulated" }
        for (key, value) in w {
            guard let a = value.arrayValue, let b = g[key]?.arrayValue else { continue }
            if a.count != b.count { return "\(key): \(a.count) recorded, \(b.count) emulated" }
            for (i, (x, y)) in zip(a, b).enumerated() {
                if let xo = x.objectValue, let yo = y.objectValue, Set(xo.keys) != Set(yo.keys) {
                    return "\(key)[\(i)] keys: recorded only \(Set(xo.keys).subtracting(yo.keys).sorted()), emulated only \(Set(yo.keys).subtracting(xo.keys).sorted())"
                }
            }
        }
        return nil
    }
}
