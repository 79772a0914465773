import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSExampleAdapter
import MBaaSLocal
import MBaaSTesting
import Testing
import MBaaSReplay

/// The extension path: a third-party adapter runs the bundled suite in a few lines (the code of the DocC article
/// "Writing an adapter").
@Suite struct ExampleAdapterTests {
    @Test func exampleAdapterPassesEveryScenarioItCanRun() async throws {
        // The lines the article shows:
        let suite = try ConformanceSuite.bundled()
        let report = await suite.run(adapter: "memory", factory: MemoryBackendFactory(),
                                     url: try BackendURL(parsing: "memory://example"))
        print(report.table(listSkips: true))

        for result in report.results where result.outcome != .skipped {
            #expect(result.outcome == .passed, "\(result.scenario): \(result.reason ?? "")")
        }
        let counts = try #require(report.summary["memory"])
        // Exactly the scenarios whose capabilities the example lacks (or whose `unless` it declares) are skipped;
        // every other one passes.
        let capabilities = MemoryBackend(server: MemoryServer(), context: BackendContext()).capabilities
        let skippable = suite.scenarios.filter { scenario in
            capabilities.missing(scenario.requires) != nil || scenario.unless.contains { capabilities.has($0) }
        }
        #expect(counts.skipped == skippable.count)
        #expect(counts.passed == suite.scenarios.count - skippable.count)
        #expect(counts.failed == 0 && counts.errored == 0)
        // What the example does not declare is skipped, with the adapter's own note as the reason.
        for result in report.results where result.outcome == .skipped {
            #expect(result.isCapabilitySkip, "\(result.scenario): \(result.reason ?? "")")
        }
        #expect(report.result(adapter: "memory", scenario: "queries.regex")?.reason
                == "missing capability 'operator.regex': the example evaluates only operators it implements itself")
        #expect(report.result(adapter: "memory", scenario: "batch.create")?.outcome == .skipped)
        #expect(report.result(adapter: "memory", scenario: "auth.acl.private")?.outcome == .skipped)
    }

    /// The article's recording step, compiled here so the article cannot drift (it needs a live server, so it is
    /// not a test; `RecordReplayRoundTripTests` records the HTTP example the same way).
    static func recordAgainstYourServer(to cassettesDirectory: URL) async throws -> [ScenarioResult] {
        let results = await ConformanceRunner.record(
            adapter: "mine", factory: MyBackendFactory(), url: try BackendURL(parsing: "mine+http://user:secret@127.0.0.1:8090"),
            transport: URLSessionTransport(), clock: nil,
            provenance: .recorded(server: "Mine", version: "1.2.3"),
            scenarios: try ConformanceSuite.bundled().scenarios, to: cassettesDirectory)
        return results
    }
    typealias MyBackendFactory = HTTPExampleFactory

    /// The public helpers read system keys from the metadata: a matcher that read only `fields` matched nothing.
    @Test func systemKeysAreQueriedAndSortedLikeFields() async throws {
        let backend = try await MemoryBackendFactory().open(try BackendURL(parsing: "memory://system-keys"), context: BackendContext())
        let first = try await backend.create(Record(className: "Memo", fields: ["n": 1]))
        let second = try await backend.create(Record(className: "Memo", fields: ["n": 2]))
        let byId = try await backend.queryPage(Query("Memo", predicate: .compare("id", .eq, .string(try #require(second.id)))))
        #expect(byId.records.map(\.id) == [second.id])
        let notFirst = try await backend.queryPage(Query("Memo", predicate: .compare("id", .ne, .string(try #require(first.id)))))
        #expect(notFirst.records.map(\.id) == [second.id])
        let since = try await backend.queryPage(Query("Memo", predicate: .compare("createdAt", .gte, .date(try #require(first.createdAt)))))
        #expect(since.records.count == 2)
        let newestFirst = try await backend.queryPage(Query("Memo").sorted(by: [SortKey("id", ascending: false)]))
        #expect(newestFirst.records.map(\.id) == [second.id, first.id])
        #expect(InMemoryQuery.value(of: "updatedAt", in: second) == .date(try #require(second.updatedAt)))
        #expect(throws: MBaaSError.self) { try InMemoryQuery.validate(className: "bad name!") }
    }

    /// A backend without a server (an embedded database, a JSON file) gets a report from the suite, as `run` gives.
    @Test func freshDatabasesReportLikeRun() async throws {
        let suite = try ConformanceSuite.bundled().selecting(["objects.crud.basic", "queries.regex", "errors.invalidClassName"])
        let factory = LocalBackendFactory(options: LocalBackend.Options(passwordHashing: .testing))
        let report = await suite.runOnFreshDatabases(adapter: "local", factory: factory) { file in
            BackendURL(scheme: "sqlite", path: file.path)
        }
        #expect(report.suiteVersion == suite.version)
        #expect(report.results.map(\.scenario).sorted() == ["errors.invalidClassName", "objects.crud.basic", "queries.regex"])
        let counts = try #require(report.summary["local"])
        #expect(counts.passed == 3 && counts.failed == 0 && counts.skipped == 0 && counts.errored == 0)
    }

    @Test func scenariosOfASecondUserShareTheServerButNotTheSession() async throws {
        let factory = MemoryBackendFactory()
        let url = try BackendURL(parsing: "memory://shared")
        let alice = try await factory.open(url, context: BackendContext())
        let bob = try await factory.open(url, context: BackendContext())
        _ = try await alice.signUp(username: "alice", password: "pw")
        #expect(await alice.session != nil)
        #expect(await bob.session == nil)
        let memo = try await alice.create(Record(className: "Memo", fields: ["title": "shared"]))
        #expect(try await bob.get(className: "Memo", id: memo.id!)["title"] == "shared")
    }
}
