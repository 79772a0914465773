public import Foundation
public import MBaaSCore

/// A set of scenarios with a version, and the entry points to run them against an adapter.
///
/// ```swift
/// let suite = try ConformanceSuite.bundled()
/// let report = await suite.run(adapter: "mine", factory: MyFactory(), url: try BackendURL(parsing: "mine://..."))
/// print(report.table())
/// ```
public struct ConformanceSuite: Sendable {
    /// The version of the scenario format and runner semantics.
    public static let formatVersion = 1

    public var scenarios: [Scenario]

    public init(scenarios: [Scenario]) {
        self.scenarios = scenarios
    }

    /// `<format>+<hash of the scenarios>`, e.g. `1+3f2a9c1b`: two reports with the same version ran the same cases.
    public var version: String {
        let text = JSON.array(scenarios.map(\.json)).printed([.sortedKeys])
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        let hex = String(hash, radix: 16)
        let padded = String(repeating: "0", count: max(0, 16 - hex.count)) + hex
        return "\(ConformanceSuite.formatVersion)+" + padded.prefix(8)
    }

    /// The scenario groups in order of first appearance.
    public var groups: [String] {
        var seen: [String] = []
        for s in scenarios where !seen.contains(s.group) { seen.append(s.group) }
        return seen
    }

    /// Loads `<directory>/*.json` (see ``ScenarioCatalog/load(directory:)``).
    public static func load(directory: URL) throws -> ConformanceSuite {
        ConformanceSuite(scenarios: try ScenarioCatalog.load(directory: directory))
    }

    /// The scenarios shipped with MBaaSKit, a resource of this module (`Bundle.module`), so a third-party adapter
    /// that depends on MBaaSKit through SwiftPM runs the same suite wherever its build puts the bundle.
    public static func bundled() throws -> ConformanceSuite {
        try load(directory: bundledScenarios)
    }

    /// The directory of the shipped scenarios: the module's resource bundle (the source tree's
    /// `Sources/MBaaSConformance/Scenarios`, linked as `Fixtures/Scenarios`, when the bundle is not found).
    public static var bundledScenarios: URL {
        if let url = Bundle.module.url(forResource: "Scenarios", withExtension: nil) { return url }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Scenarios")
    }

    /// `Fixtures/` of the package checkout this module was compiled from: MBaaSKit's own cassettes and baseline
    /// (development data of the built-in adapters, not shipped as resources). Never a place for another
    /// package's cassettes: an outside adapter names its own directory (``ConformanceFixtures/locate(explicit:currentDirectory:fallback:)``
    /// looks in `./Fixtures`, with no fallback to this one).
    public static var bundledFixtures: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures")
    }

    /// Whether an id is selected by a pattern: the exact id, a dotted prefix of it (`queries` selects
    /// `queries.eq`), or any prefix when the pattern ends with `*`.
    public static func matches(_ id: String, pattern: String) -> Bool {
        if pattern.hasSuffix("*") { return id.hasPrefix(String(pattern.dropLast())) }
        let p = pattern.hasSuffix(".") ? String(pattern.dropLast()) : pattern
        return id == p || id.hasPrefix(p + ".")
    }

    /// The scenarios selected by any of the patterns (all when there are none); ``matches(_:pattern:)``.
    public func selecting(_ patterns: [String]) -> ConformanceSuite {
        guard !patterns.isEmpty else { return self }
        return ConformanceSuite(scenarios: scenarios.filter { s in patterns.contains { ConformanceSuite.matches(s.id, pattern: $0) } })
    }

    /// The scenario with an id.
    public func scenario(_ id: String) -> Scenario? { scenarios.first { $0.id == id } }

    // MARK: Running

    /// Runs every scenario live against backends opened from one URL, each scenario with fresh instances and
    /// a unique `${run}`, and reports.
    public func run(
        adapter: String, factory: any BackendFactory, url: BackendURL, context: BackendContext = BackendContext(),
        fixtureUsers: [String: FixtureUser] = [:]
    ) async -> ConformanceReport {
        await run(adapter: adapter, factory: factory, context: context, fixtureUsers: fixtureUsers) { _ in url }
    }

    /// Runs every scenario live, with a URL per scenario (a fresh embedded database for each), and reports.
    public func run(
        adapter: String, factory: any BackendFactory, context: BackendContext = BackendContext(),
        fixtureUsers: [String: FixtureUser] = [:], url: @escaping @Sendable (Scenario) throws -> BackendURL
    ) async -> ConformanceReport {
        let results = await ConformanceRunner.live(adapter: adapter, factory: factory, scenarios: scenarios,
                                                   context: context, fixtureUsers: fixtureUsers, url: url)
        return ConformanceReport(results: results, suiteVersion: version)
    }

    /// Replays every scenario from `<cassettes>/<scenario-id>.json` and reports
    /// (see ``ConformanceRunner/replay(adapter:factory:cassettes:scenarios:substitutions:)``).
    public func replay(
        adapter: String, factory: any BackendFactory, cassettes: URL, substitutions: [String: String] = [:]
    ) async -> ConformanceReport {
        let results = await ConformanceRunner.replay(adapter: adapter, factory: factory, cassettes: cassettes,
                                                     scenarios: scenarios, substitutions: substitutions)
        return ConformanceReport(results: results, suiteVersion: version)
    }
}
