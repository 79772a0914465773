import Foundation
import MBaaSAppPot
import MBaaSCore
import MBaaSReplay

/// How AppPot cassettes are authored: the scrubber and the cassette's provenance. Each exchange's fact is set by
/// the simulator where it builds the answer (header `X-MBaaS-Fact`, moved into the interaction by
/// ``RecordingTransport``); nothing here labels exchanges after the fact.
enum AppPotCassettes {
    static let reference = "apppot-salesforce.md"

    /// The adapter's wire profile: `apppot-token` (captured, secret) and its token members `userTokens` (the
    /// login's user token, A5; v4's anonymous token too) and the string `results` of `anonymousTokens` (A5).
    static let profile = AppPotBackendFactory().wireProfile

    /// The profile's scrubber with the application key as a known secret.
    static func scrubber(appKey: String) -> Scrubber {
        Scrubber(profile: profile, secrets: [(placeholder: "APP_KEY", value: appKey)])
    }

    /// The facts a whole cassette follows: the base URL and envelope, then each distinct fact its exchanges
    /// name, in order of first use.
    static func facts(of cassette: Cassette) -> [String] {
        var out = ["[doc] \(reference) A3 base URL /{contextRoot}/api/{companyId}/{appId}/{appVersion}/",
                   "[doc] \(reference) A4 envelope {status, errCode, description, results}; errors {status:error, errCode, description}"]
        for i in cassette.interactions {
            if let f = i.fact, !out.contains(f) { out.append(f) }
        }
        return out
    }

    /// The cassette with the provenance of an authored AppPot cassette (the interactions' facts untouched).
    static func withProvenance(_ cassette: Cassette) -> Cassette {
        var c = cassette
        c.provenance = Provenance(
            kind: .authored, server: "AppPot (documented behaviour simulator, MySQL semantics)", facts: facts(of: c),
            notes: "Authored by running the scenario through Tests/MBaaSAppPotTests/AppPotSimulator.swift (generation v2), which implements the documented AppPot REST behaviour independently of the adapter's codec; each exchange's fact is marked [doc], [sdk] or [inferred].")
        return c
    }
}
