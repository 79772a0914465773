public import Foundation
public import MBaaSCore

/// The conformance fixtures directory:
///
/// ```
/// Fixtures/
///   Scenarios/*.json                      the scenarios
///   Cassettes/<adapter>/<scenario>.json   one cassette per (adapter, scenario)
///   conformance-baseline.json             the committed baseline report
/// ```
public struct ConformanceFixtures: Sendable, Hashable {
    public var root: URL

    public init(root: URL) { self.root = root }

    /// `--fixtures DIR` when given; else `./Fixtures` when it holds scenarios; else `fallback` when given; else
    /// `./Fixtures` (absent: a caller's errors then name the directory it looked in).
    ///
    /// There is no default fallback: an adapter outside MBaaSKit keeps its cassettes in its own package, and never
    /// silently reads (or misses) them in MBaaSKit's checkout. The `mbaas` CLI, whose built-in adapters' cassettes
    /// are MBaaSKit's, passes ``ConformanceSuite/bundledFixtures``.
    public static func locate(explicit: String? = nil, currentDirectory: URL? = nil, fallback: URL? = nil) -> ConformanceFixtures {
        if let explicit { return ConformanceFixtures(root: URL(fileURLWithPath: explicit)) }
        let cwd = currentDirectory ?? URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        let local = cwd.appendingPathComponent("Fixtures")
        if FileManager.default.fileExists(atPath: local.appendingPathComponent("Scenarios").path) {
            return ConformanceFixtures(root: local)
        }
        return ConformanceFixtures(root: fallback ?? local)
    }

    public var scenarios: URL { root.appendingPathComponent("Scenarios") }
    public var cassettes: URL { root.appendingPathComponent("Cassettes") }
    public var baseline: URL { root.appendingPathComponent("conformance-baseline.json") }

    /// The cassette directory of an adapter.
    public func cassettes(for adapter: String) -> URL { cassettes.appendingPathComponent(adapter) }

    /// Adapters with a cassette directory holding at least one cassette (`Cassettes/<adapter>/*.json`), sorted.
    public func cassetteAdapters() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: cassettes.path)) ?? []
        return names.filter { name in
            let files = (try? FileManager.default.contentsOfDirectory(atPath: cassettes(for: name).path)) ?? []
            return !name.hasPrefix(".") && files.contains { $0.hasSuffix(".json") }
        }.sorted()
    }

    /// The committed baseline report.
    public func loadBaseline() throws -> ConformanceReport {
        let data: Data
        do { data = try Data(contentsOf: baseline) } catch {
            throw MBaaSError(.notFound, "no baseline at \(baseline.path): \(MBaaSError.describe(error))")
        }
        return try ConformanceReport(json: JSON.parse(data))
    }
}

extension ConformanceRunner {
    /// Runs scenarios live against an embedded database backend, each scenario on a fresh database file in a
    /// new directory under `parent` (the temporary directory by default; removed afterwards); the instances of one
    /// scenario share its file.
    ///
    /// `fixtureUsers` names users that exist in every fresh database (a store whose users are provisioned, not
    /// signed up, as ``live(adapter:factory:scenarios:context:fixtureUsers:url:)`` takes them); users not given
    /// are signed up where the backend can.
    ///
    /// ```swift
    /// let results = await ConformanceRunner.liveOnFreshDatabases(adapter: "mine", factory: MyFactory(),
    ///                                                              scenarios: suite.scenarios) { file in
    ///     BackendURL(scheme: "mine", path: file.path)
    /// }
    /// ```
    public static func liveOnFreshDatabases(
        adapter: String, factory: any BackendFactory, scenarios: [Scenario], context: BackendContext = BackendContext(),
        fixtureUsers: [String: FixtureUser] = [:], in parent: URL = FileManager.default.temporaryDirectory,
        url: @escaping @Sendable (_ databaseFile: URL) -> BackendURL
    ) async -> [ScenarioResult] {
        let directory = parent.appendingPathComponent("mbaas-conformance-\(adapter)-\(UUID().uuidString)")
        do { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) } catch {
            return scenarios.map {
                ScenarioResult(adapter: adapter, scenario: $0.id, outcome: .errored,
                               reason: "cannot create \(directory.path): \(MBaaSError.describe(error))")
            }
        }
        defer { try? FileManager.default.removeItem(at: directory) }
        return await live(adapter: adapter, factory: factory, scenarios: scenarios, context: context,
                          fixtureUsers: fixtureUsers) { scenario in
            url(directory.appendingPathComponent(scenario.id + ".db"))
        }
    }
}

extension ConformanceSuite {
    /// Runs every scenario live on a fresh database file each
    /// (``ConformanceRunner/liveOnFreshDatabases(adapter:factory:scenarios:context:in:url:)``) and reports, as
    /// ``run(adapter:factory:url:context:fixtureUsers:)`` does for a server: the entry point for a backend with
    /// no server (an embedded database, a JSON file).
    ///
    /// ```swift
    /// let suite = try ConformanceSuite.bundled()
    /// let report = await suite.runOnFreshDatabases(adapter: "mine", factory: MyFactory()) { file in
    ///     BackendURL(scheme: "mine", path: file.path)
    /// }
    /// ```
    public func runOnFreshDatabases(
        adapter: String, factory: any BackendFactory, context: BackendContext = BackendContext(),
        in parent: URL = FileManager.default.temporaryDirectory,
        url: @escaping @Sendable (_ databaseFile: URL) -> BackendURL
    ) async -> ConformanceReport {
        let results = await ConformanceRunner.liveOnFreshDatabases(adapter: adapter, factory: factory, scenarios: scenarios,
                                                                   context: context, in: parent, url: url)
        return ConformanceReport(results: results, suiteVersion: version)
    }
}
