import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSLocal
import MBaaSEmulator
import MBaaSParse
import MBaaSTesting
import Testing
@testable import MBaaSSync

/// Opens `replica:PATH` as a replica whose every class is `localAndServer`, with a Local remote at `PATH.remote.db`.
struct ConformanceReplicaFactory: BackendFactory {
    let schemes = ["replica"]
    let adapterName = "replica"
    var wireProfile: WireProfile { WireProfile.generic.merging(WireProfile(requiresHost: false)) }

    func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend {
        let remote = try LocalBackend(path: url.path + ".remote.db", context: context,
                                      options: LocalBackend.Options(passwordHashing: .testing))
        return try await ReplicaBackend.open(
            path: url.path, remote: remote,
            configuration: ReplicaConfiguration(defaultPolicy: ReplicaPolicy(persistence: .localAndServer)), context: context)
    }
}

@Suite("Conformance of a replica")
struct ReplicaConformanceTests {
    @Test("the conformance suite passes against a replica with a Local remote wherever Local passes (the rest skipped with a reason)")
    func conformance() async throws {
        let suite = try ConformanceSuite.bundled()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let localResults = await ConformanceRunner.liveOnFreshDatabases(
            adapter: "local", factory: LocalBackendFactory(options: LocalBackend.Options(passwordHashing: .testing)),
            scenarios: suite.scenarios, in: dir) { file in BackendURL(scheme: "sqlite", path: file.path) }
        let replicaResults = await ConformanceRunner.live(adapter: "replica", factory: ConformanceReplicaFactory(),
                                                          scenarios: suite.scenarios) { scenario in
            BackendURL(scheme: "replica", path: dir.appendingPathComponent("\(scenario.id)-\(UUID().uuidString).replica").path)
        }
        let localPassed = Set(localResults.filter { $0.outcome == .passed }.map(\.scenario))
        let bad = replicaResults.filter { $0.outcome == .failed || $0.outcome == .errored }
        #expect(bad.isEmpty, "\(bad.map { "\($0.scenario): \($0.outcome) \($0.reason ?? "")" }.joined(separator: "\n"))")
        let skipped = replicaResults.filter { $0.outcome == .skipped }
        for result in skipped { #expect(result.reason?.isEmpty == false, "\(result.scenario) skipped without a reason") }
        let passed = replicaResults.filter { $0.outcome == .passed }
        #expect(passed.count >= 40)
        let lost = localPassed.subtracting(passed.map(\.scenario)).sorted()
        print("replica conformance: \(passed.count) passed, \(skipped.count) skipped (local: \(localPassed.count) passed); not passed here: \(lost.joined(separator: ", "))")
    }
}

/// Opens `replica:PATH` over a Parse-dialect emulator in process (``MBaaSEmulator/EmulatorTransport``, no socket): one
/// in-memory store per PATH, shared by every open of that PATH (a scenario with several users opens it several
/// times). With `replicated` false it opens the Parse adapter on that dialect alone: the remote's own results.
struct DialectReplicaFactory: BackendFactory {
    let schemes = ["replica"]
    let replicated: Bool
    var adapterName: String { replicated ? "replica" : "parse" }
    var wireProfile: WireProfile { WireProfile.generic.merging(WireProfile(requiresHost: false)) }
    static let dialects = Locked<[String: ParseDialect]>([:])

    func dialect(for path: String, clock: @escaping @Sendable () -> Date) throws -> ParseDialect {
        if let known = Self.dialects.withLock({ $0[path] }) { return known }
        let store = try LocalBackend.inMemory(context: BackendContext(clock: clock), options: LocalBackend.Options(passwordHashing: .testing))
        let made = ParseDialect(store: store, configuration: .init(applicationId: "app", restKey: "rest", masterKey: "master"), clock: clock)
        return Self.dialects.withLock { dialects in
            if let raced = dialects[path] { return raced }
            dialects[path] = made
            return made
        }
    }

    func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend {
        let dialect = try dialect(for: url.path, clock: context.clock)
        var remoteContext = context
        remoteContext.transport = EmulatorTransport(dialect)
        let remote = try await ParseBackendFactory().open(try BackendURL(parsing: dialect.backendURL(host: "127.0.0.1", port: 8080)),
                                                          context: remoteContext)
        guard replicated else { return remote }
        return try await ReplicaBackend.open(
            path: url.path, remote: remote,
            configuration: ReplicaConfiguration(defaultPolicy: ReplicaPolicy(persistence: .localAndServer)), context: context)
    }
}

@Suite("Conformance of a replica over a dialect remote")
struct ReplicaDialectConformanceTests {
    @Test("a replica whose remote is the Parse dialect in process passes every scenario that remote passes, or skips it with a reason")
    func conformanceOverParseDialect() async throws {
        let suite = try ConformanceSuite.bundled()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        func url(_ tag: String) -> @Sendable (Scenario) throws -> BackendURL {
            { scenario in BackendURL(scheme: "replica", path: dir.appendingPathComponent("\(tag)-\(scenario.id)-\(UUID().uuidString).replica").path) }
        }
        let remoteResults = await ConformanceRunner.live(adapter: "parse", factory: DialectReplicaFactory(replicated: false),
                                                         scenarios: suite.scenarios, url: url("remote"))
        let replicaResults = await ConformanceRunner.live(adapter: "replica", factory: DialectReplicaFactory(replicated: true),
                                                          scenarios: suite.scenarios, url: url("replica"))
        let remotePassed = Set(remoteResults.filter { $0.outcome == .passed }.map(\.scenario))
        #expect(remotePassed.count >= 40, "the Parse dialect alone passed \(remotePassed.count)")
        let bad = replicaResults.filter { $0.outcome == .failed || $0.outcome == .errored }
        #expect(bad.isEmpty, "\(bad.map { "\($0.scenario): \($0.outcome) \($0.reason ?? "")" }.joined(separator: "\n"))")
        let replicaPassed = Set(replicaResults.filter { $0.outcome == .passed }.map(\.scenario))
        let skipped = replicaResults.filter { $0.outcome == .skipped }
        for result in skipped { #expect(result.reason?.isEmpty == false, "\(result.scenario) skipped without a reason") }
        // What the remote passes and the replica does not: each one a declared skip, listed with its reason.
        let notPassed = replicaResults.filter { remotePassed.contains($0.scenario) && !replicaPassed.contains($0.scenario) }
        for result in notPassed { #expect(result.outcome == .skipped, "\(result.scenario): \(result.outcome) \(result.reason ?? "")") }
        #expect(replicaPassed.count >= 40)
        print("replica over the Parse dialect: \(replicaPassed.count) passed, \(skipped.count) skipped (the dialect alone: \(remotePassed.count) passed); skipped here but passed by the remote:\n"
              + notPassed.map { "  \($0.scenario): \($0.reason ?? "")" }.joined(separator: "\n"))
    }
}
