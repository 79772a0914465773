public import ArgumentParser
import Foundation
import MBaaSBuiltins
import MBaaSConformance
import MBaaSCore
import MBaaSLocal
import MBaaSReplay

/// `mbaas conformance`: runs the conformance suite by replaying cassettes (default), live against a backend, or
/// live while recording cassettes, and reports as a table, JSON, JUnit XML or Markdown.
struct ConformanceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conformance",
        abstract: "Run the conformance suite against adapters.",
        discussion: """
            --mode replay (default) replays Fixtures/Cassettes/<adapter>/<scenario>.json for every adapter that has \
            cassettes, and runs Local directly (each scenario on a fresh database). --mode live --backend URL runs \
            the scenarios against a live backend; with --record it writes cassettes into \
            Fixtures/Cassettes/<adapter>/ (recording is never a pass: replay afterwards).

            Outcomes: passed, failed (with the difference), lossy (a loss the backend declares, e.g. AppPot's empty \
            strings read back absent, with the difference: not a pass), skipped (a declared capability is missing), \
            errored (missing cassette, unexpected error). A report whose results are mostly skips says so.

            Exit status: 0 when nothing below applies; 1 when anything failed, errored or was only recorded (with \
            --check-baseline: only when a pair regressed against Fixtures/conformance-baseline.json, a pass that \
            no longer passes, passes on weaker evidence or became lossy, or a known loss that became worse); 11 \
            when an adapter ran fewer scenarios than --min-run (skips do not count); 10 when results are lossy \
            (without --check-baseline). The first that applies wins; 64 for a usage error.
            """)

    enum Mode: String, ExpressibleByArgument, CaseIterable {
        case replay, live
    }

    @Option(name: .customLong("adapter"), help: ArgumentHelp("Only this adapter (repeatable): \(Builtins.conformanceOrder.joined(separator: ", ")), or a third-party adapter's name.", valueName: "NAME"))
    var adapters: [String] = []

    @Option(name: .customLong("scenario"), help: ArgumentHelp("A scenario id or a prefix such as 'queries' (repeatable; 'queries.e*' for a raw prefix).", valueName: "ID-or-prefix"))
    var scenarios: [String] = []

    @Option(help: "replay (cassettes, the default) or live (against --backend).")
    var mode: Mode = .replay

    @Option(help: ArgumentHelp("The backend URL for --mode live, e.g. pocketbase+http://admin%40example.com:secret@127.0.0.1:8090.", valueName: "URL"))
    var backend: String?

    @Flag(help: "With --mode live: write one cassette per passing scenario into Fixtures/Cassettes/<adapter>/.")
    var record = false

    @Option(help: "table, json, junit or markdown.")
    var format: ConformanceReport.Format = .table

    @Option(help: ArgumentHelp("Write the report to this file instead of standard output.", valueName: "PATH"))
    var output: String?

    @Option(name: .customLong("server-version"), help: ArgumentHelp("With --record: the server's version (e.g. 0.40.6), used only when the server states none (provenance then says serverVersionFrom: flag); a cassette recorded from `mbaas serve` is labelled simulated.", valueName: "VERSION"))
    var serverVersion: String?

    @Flag(name: .customLong("check-baseline"), help: "Fail only on regressions against Fixtures/conformance-baseline.json.")
    var checkBaseline = false

    @Option(name: .customLong("fixture-user"), help: ArgumentHelp("With --mode live: an existing user that scenarios name, NAME=USERNAME (repeatable), e.g. alice=taro; the password comes from the environment variable MBAAS_FIXTURE_PASSWORD_<NAME> (never the command line). Users not given are signed up where the backend can.", valueName: "NAME=USERNAME"))
    var fixtureUser: [String] = []

    @Option(name: .customLong("min-run"), help: ArgumentHelp("Exit 11 unless every adapter ran (did not skip) at least N scenarios, or P% of those selected (e.g. 80 or 60%).", valueName: "N-or-P%"))
    var minRun: String?

    @Option(help: ArgumentHelp("The fixtures directory (default: ./Fixtures if it exists, else the package's own).", valueName: "DIR"))
    var fixtures: String?

    func validate() throws {
        switch mode {
        case .replay:
            if backend != nil { throw ValidationError("--backend needs --mode live") }
            if record { throw ValidationError("--record needs --mode live --backend URL") }
        case .live:
            if backend == nil { throw ValidationError("--mode live needs --backend URL") }
        }
        if mode == .replay, !fixtureUser.isEmpty { throw ValidationError("--fixture-user needs --mode live") }
        _ = try fixtureUsers()
        _ = try minimumRun()
    }

    /// `--min-run N` or `--min-run P%`.
    func minimumRun() throws -> MinimumRun? {
        guard let minRun else { return nil }
        do { return try MinimumRun(parsing: minRun) } catch { throw ValidationError("--min-run: \(error.message)") }
    }

    /// `--fixture-user NAME=USERNAME`, each password from `MBAAS_FIXTURE_PASSWORD_<NAME>`.
    func fixtureUsers() throws -> [String: FixtureUser] {
        var out: [String: FixtureUser] = [:]
        for item in fixtureUser {
            let parts = item.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw ValidationError("--fixture-user expects NAME=USERNAME (e.g. alice=taro), got '\(item)'")
            }
            let variable = "MBAAS_FIXTURE_PASSWORD_\(parts[0].uppercased())"
            guard let password = ProcessInfo.processInfo.environment[variable], !password.isEmpty else {
                throw ValidationError("--fixture-user \(parts[0]): set the password in the environment variable \(variable)")
            }
            out[parts[0]] = FixtureUser(username: parts[1], password: password)
        }
        return out
    }

    func run() async throws {
        let registry = BuiltinAdapters.registry()
        let fixtures = ConformanceFixtures.locate(explicit: fixtures, fallback: ConformanceSuite.bundledFixtures)
        let suite = try ConformanceSuite.load(directory: fixtures.scenarios).selecting(scenarios)
        guard !suite.scenarios.isEmpty else {
            throw ValidationError("no scenario matches \(scenarios.joined(separator: ", ")) in \(fixtures.scenarios.path)")
        }
        var results: [ScenarioResult] = []
        var shown: [String] = []
        switch mode {
        case .replay:
            let order = BuiltinAdapters.conformanceOrder
            let available = ConformanceReport.ordered(["local"] + fixtures.cassetteAdapters(), by: order)
            let known = Set(available).union(registry.adapterNames)
            if let unknown = adapters.first(where: { !known.contains($0) }) {
                throw ValidationError("unknown adapter '\(unknown)'; with cassettes or built in: \(ConformanceReport.ordered(Array(known), by: order).joined(separator: ", "))")
            }
            let selected = adapters.isEmpty ? available : ConformanceReport.ordered(adapters, by: order)
            shown = adapters.isEmpty ? ConformanceReport.ordered(order + available, by: order) : selected
            // The legs are independent (their own databases and cassettes): run them side by side, report in order.
            let legs = await withTaskGroup(of: (String, [ScenarioResult]).self) { group in
                for adapter in selected {
                    progress("\(adapter): \(suite.scenarios.count) scenario\(suite.scenarios.count == 1 ? "" : "s")")
                    group.addTask { (adapter, await replay(adapter: adapter, suite: suite, registry: registry, fixtures: fixtures)) }
                }
                var byAdapter: [String: [ScenarioResult]] = [:]
                for await (adapter, leg) in group { byAdapter[adapter] = leg }
                return byAdapter
            }
            for adapter in selected { results += legs[adapter] ?? [] }
        case .live:
            let url = try BackendURL(parsing: backend!)
            guard let factory = registry.factory(forScheme: url.scheme) else {
                throw ValidationError("no adapter opens '\(url.scheme):' URLs; known schemes: \(registry.schemes.joined(separator: ", "))")
            }
            if !adapters.isEmpty, !adapters.contains(factory.adapterName) {
                throw ValidationError("--backend \(url) is a \(factory.adapterName) URL, not \(adapters.joined(separator: ", "))")
            }
            shown = [factory.adapterName]
            if record {
                let directory = fixtures.cassettes(for: factory.adapterName)
                progress("recording \(suite.scenarios.count) scenarios against \(url) into \(directory.path)")
                results = await ConformanceRunner.record(
                    adapter: factory.adapterName, factory: factory, url: url, transport: URLSessionTransport(),
                    clock: nil,
                    provenance: .recorded(server: factory.adapterName, version: serverVersion, notes: "mbaas conformance --record"),
                    fixtureUsers: try fixtureUsers(), scenarios: suite.scenarios, to: directory)
            } else {
                progress("running \(suite.scenarios.count) scenarios live against \(url)")
                results = await ConformanceRunner.live(adapter: factory.adapterName, factory: factory, url: url,
                                                       fixtureUsers: try fixtureUsers(), scenarios: suite.scenarios)
            }
        }

        let report = ConformanceReport(results: results, suiteVersion: suite.version, adapters: shown)
        let text = report.rendered(format)
        if let output {
            // Never replaces a device, a FIFO or a symbolic link, never creates a folder (OutputFile).
            do { try OutputFile.write(Data(text.utf8), to: output, what: "the report", mode: 0o666) } catch {
                reportError(error)
                throw ExitCode(exitStatus(for: error.kind))
            }
            if format != .table { Terminal.writeOut(Data(report.table().utf8)) }
            progress("wrote \(format.rawValue) report to \(output)")
        } else {
            // A stdout write failure (a full disk) is exit 7 with a message (Terminal.writeOut), never ignored.
            Terminal.writeOut(Data((text.hasSuffix("\n") ? text : text + "\n").utf8))
        }

        if checkBaseline {
            let baseline = try fixtures.loadBaseline()
            let adapterScope = Set(shown)
            let patterns = scenarios
            let comparison = BaselineComparison(baseline: baseline, current: report) { adapter, scenario in
                adapterScope.contains(adapter)
                    && (patterns.isEmpty || patterns.contains { ConformanceSuite.matches(scenario, pattern: $0) })
            }
            progress(comparison.summary.trimmingCharacters(in: .newlines))
            if comparison.hasRegressions { throw ExitCode(1) }
        } else if report.hasProblems {
            throw ExitCode(1)
        }
        if let minimum = try minimumRun() {
            let below = report.belowMinimumRun(minimum)
            for (adapter, c) in below {
                progress("\(adapter) ran \(c.ran) of \(c.total) scenarios (\(c.skipped) skipped), fewer than --min-run \(minimum)")
            }
            if !below.isEmpty { throw ExitCode(11) }
        }
        if !checkBaseline, report.hasLosses {
            progress("\(report.totals.lossy) lossy result\(report.totals.lossy == 1 ? "" : "s"): a loss the backend declares is not a pass (exit status 10)")
            throw ExitCode(10)
        }
    }

    /// One adapter in replay mode: Local runs directly on fresh databases, the others replay their cassettes.
    private func replay(adapter: String, suite: ConformanceSuite, registry: BackendRegistry,
                        fixtures: ConformanceFixtures) async -> [ScenarioResult] {
        guard let factory = registry.schemes.lazy.compactMap(registry.factory(forScheme:))
            .first(where: { $0.adapterName == adapter })
        else {
            return suite.scenarios.map {
                ScenarioResult(adapter: adapter, scenario: $0.id, outcome: .errored,
                               reason: "adapter '\(adapter)' is not built into this mbaas")
            }
        }
        if adapter == "local" {
            // Throwaway databases: a minimal password-hash cost (scrypt at production cost was 80% of this leg's CPU,
            // and still 23% at N=2^10); what is checked is the store's behaviour, not the hash's strength. They live
            // in a memory-backed directory where the system has one (/dev/shm), as nothing of them must survive.
            let cheap = LocalBackendFactory(options: LocalBackend.Options(
                passwordHashing: LocalPasswordHasher.Parameters(logN: 4, blockSize: 8, parallelism: 1)))
            return await ConformanceRunner.liveOnFreshDatabases(adapter: adapter, factory: cheap,
                                                                scenarios: suite.scenarios, in: Self.scratchDirectory) { file in
                BackendURL(scheme: "sqlite", path: file.path)
            }
        }
        return await ConformanceRunner.replay(adapter: adapter, factory: factory,
                                              cassettes: fixtures.cassettes(for: adapter), scenarios: suite.scenarios)
    }

    /// `/dev/shm` when it is a writable directory (Linux), else the temporary directory.
    static var scratchDirectory: URL {
        let shm = "/dev/shm"
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: shm, isDirectory: &isDirectory), isDirectory.boolValue,
           FileManager.default.isWritableFile(atPath: shm) {
            return URL(fileURLWithPath: shm)
        }
        return FileManager.default.temporaryDirectory
    }

    private func progress(_ message: String) {
        Terminal.writeErr("mbaas conformance: " + message + "\n")
    }
}

extension ConformanceReport.Format: ExpressibleByArgument {}
