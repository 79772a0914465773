import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSAppPot
import MBaaSKii
import MBaaSLocal
import MBaaSNCMB
import MBaaSParse
import MBaaSPocketBase
import Testing

/// Every (adapter, scenario) pair: Local live (each scenario on a fresh database), and every adapter with a
/// directory under `Fixtures/Cassettes/` in replay mode. A pair that did not pass in the committed baseline is a
/// known issue; anything else that does not pass fails the test.
@Suite struct ConformancePairTests {
    /// Factories by adapter name. An adapter whose cassettes are committed must be listed here.
    static let factories: [String: any BackendFactory] = [
        // A cheaper scrypt cost than the default keeps the auth scenarios fast in debug builds; what the
        // scenarios check does not depend on it.
        "local": LocalBackendFactory(options: LocalBackend.Options(
            passwordHashing: LocalPasswordHasher.Parameters(logN: 10, blockSize: 8, parallelism: 1))),
        "pocketbase": PocketBaseBackendFactory(),
        "ncmb": NCMBBackendFactory(),
        "kii": KiiBackendFactory(),
        "apppot": AppPotBackendFactory(),
        "parse": ParseBackendFactory(),
    ]

    static let fixtures = ConformanceFixtures(root: ConformanceSuite.bundledFixtures)
    static let suite = try? ConformanceSuite.bundled()
    static let baseline = try? fixtures.loadBaseline()

    struct Pair: Sendable, Hashable, CustomTestStringConvertible {
        var adapter: String
        var scenario: String
        var testDescription: String { "\(adapter) \(scenario)" }
    }

    static var pairs: [Pair] {
        let adapters = ConformanceReport.ordered(["local"] + fixtures.cassetteAdapters())
        return adapters.flatMap { adapter in (suite?.scenarios ?? []).map { Pair(adapter: adapter, scenario: $0.id) } }
    }

    /// Features that state a limit rather than a capability: the embedded store, which declares every capability,
    /// has none of them, so it skips the scenarios that require one (they test how a limited backend behaves).
    static let limits: Set<Capabilities.Feature> = [.emptyStringsAbsent, .readOnly]

    @Test func pairsAreDiscovered() throws {
        let suite = try #require(Self.suite)
        #expect(Self.pairs.filter { $0.adapter == "local" }.count == suite.scenarios.count)
        let withCassettes = Set(Self.fixtures.cassetteAdapters())
        for adapter in withCassettes {
            #expect(Self.factories[adapter] != nil, "cassettes for '\(adapter)' but no factory in ConformancePairTests.factories")
        }
        // And the other way: an adapter listed here whose cassettes vanished must not drop out silently.
        for adapter in Self.factories.keys where adapter != "local" {
            #expect(withCassettes.contains(adapter), "no cassettes for '\(adapter)' under Fixtures/Cassettes")
        }
    }

    @Test(arguments: pairs)
    func pair(_ pair: Pair) async throws {
        let scenario = try #require(Self.suite?.scenario(pair.scenario))
        let factory = try #require(Self.factories[pair.adapter], "no factory for adapter '\(pair.adapter)'")
        let results: [ScenarioResult]
        if pair.adapter == "local" {
            results = await ConformanceRunner.liveOnFreshDatabases(adapter: "local", factory: factory,
                                                                   scenarios: [scenario]) { file in
                BackendURL(scheme: "sqlite", path: file.path)
            }
        } else {
            results = await ConformanceRunner.replay(adapter: pair.adapter, factory: factory,
                                                     cassettes: Self.fixtures.cassettes(for: pair.adapter),
                                                     scenarios: [scenario])
        }
        let result = try #require(results.first)
        switch result.outcome {
        case .passed:
            break
        case .skipped where pair.adapter != "local" || !scenario.unless.isEmpty || !Self.limits.isDisjoint(with: scenario.requires):
            #expect(result.isCapabilitySkip, "skipped without a capability reason: \(result.reason ?? "")")
            // A pair that passed in the baseline must not turn into a skip (an adapter dropping a capability).
            // A broken baseline must not switch this check off silently.
            let baseline = try #require(Self.baseline, "Fixtures/conformance-baseline.json does not load")
            let known = baseline.result(adapter: pair.adapter, scenario: pair.scenario)?.outcome
            #expect(known != .passed, "passed in Fixtures/conformance-baseline.json, now skipped: \(result.reason ?? "")")
        default:
            let baseline = try #require(Self.baseline, "Fixtures/conformance-baseline.json does not load")
            let known = baseline.result(adapter: pair.adapter, scenario: pair.scenario)?.outcome
            let message = Comment(rawValue: "\(result.outcome.rawValue): \(result.reason ?? "")")
            if let known, known == .failed || known == .errored {
                withKnownIssue("not passing in Fixtures/conformance-baseline.json", isIntermittent: true) {
                    Issue.record(message)
                }
            } else {
                Issue.record(message)
            }
        }
    }
}
