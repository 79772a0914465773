import Foundation
@testable import MBaaSConformance
import MBaaSCore
import MBaaSExampleAdapter
import MBaaSReplay
import MBaaSTesting
import Testing

/// Record and replay plumbing, with the in-memory example (which sends no HTTP, so its cassettes hold no
/// interactions) and hand-made cassettes.
@Suite struct ReplayPlumbingTests {
    let factory = MemoryBackendFactory()

    @Test func recordingIsNeverAPassAndReplayVerifies() async throws {
        let suite = try ConformanceSuite.bundled().selecting(["objects", "auth.signUp.logIn", "batch.create"])
        let dir = try temporaryDirectory("conformance")
        defer { try? FileManager.default.removeItem(at: dir) }
        let pinned = Date(timeIntervalSince1970: 1_700_000_000)
        let recorded = await ConformanceRunner.record(
            adapter: "memory", factory: factory, url: try BackendURL(parsing: "memory://rec"),
            transport: CapabilityProbe.RefusingTransport(), clock: { pinned },
            provenance: .recorded(server: "example"), scenarios: suite.scenarios, to: dir)
        #expect(!recorded.contains { $0.outcome == .passed })
        #expect(recorded.first { $0.scenario == "objects.crud.basic" }?.outcome == .recorded)
        #expect(recorded.first { $0.scenario == "batch.create" }?.outcome == .skipped)
        #expect(ConformanceReport(results: recorded).hasProblems)

        let cassette = try Cassette.load(from: dir.appendingPathComponent("objects.crud.basic.json"))
        #expect(cassette.recordedAt == pinned)
        #expect(cassette.variables["run"]?.count == 8)
        #expect(cassette.backendURL == "memory://rec")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("batch.create.json").path))

        // A fresh factory: the example keeps its state in memory, where a real replay keeps it in the cassette.
        let replayed = await suite.replay(adapter: "memory", factory: MemoryBackendFactory(), cassettes: dir)
        for r in replayed.results {
            let skipped = ["batch.create", "objects.version.conflict", "objects.update.increment", "objects.update.arrayOps",
                           "objects.concurrent.increment"]
            #expect(r.outcome == (skipped.contains(r.scenario) ? .skipped : .passed), "\(r.scenario): \(r.reason ?? "")")
        }
    }

    @Test func missingUnusedAndMalformedCassettes() async throws {
        let suite = try ConformanceSuite.bundled().selecting(["objects.crud.basic", "objects.create.metadata",
                                                              "errors.negativeLimit", "objects.version.conflict"])
        let dir = try temporaryDirectory("conformance")
        defer { try? FileManager.default.removeItem(at: dir) }
        let interaction = Interaction(request: RecordedRequest(method: "GET", path: "/never"),
                                      response: RecordedResponse(status: 200))
        // objects.crud.basic: one interaction the adapter never asks for.
        try Cassette(name: "objects.crud.basic", adapter: "memory", provenance: .authored(facts: []),
                     recordedAt: Date(timeIntervalSince1970: 0), backendURL: "memory://unused",
                     variables: ["run": "abcd1234"], interactions: [interaction])
            .write(to: dir.appendingPathComponent("objects.crud.basic.json"))
        // objects.create.metadata: no run variable.
        try Cassette(name: "objects.create.metadata", adapter: "memory", provenance: .authored(facts: []),
                     recordedAt: Date(timeIntervalSince1970: 0), backendURL: "memory://x", variables: [:], interactions: [])
            .write(to: dir.appendingPathComponent("objects.create.metadata.json"))
        // errors.negativeLimit: no cassette at all. objects.version.conflict: no cassette, but not runnable.
        let results = await ConformanceRunner.replay(adapter: "memory", factory: factory, cassettes: dir,
                                                     scenarios: suite.scenarios)
        let byID = Dictionary(uniqueKeysWithValues: results.map { ($0.scenario, $0) })
        #expect(byID["objects.crud.basic"]?.outcome == .errored)
        #expect(byID["objects.crud.basic"]?.reason?.contains("1 of 1 recorded interactions were not used: #0 GET /never") == true)
        #expect(byID["objects.create.metadata"]?.outcome == .errored)
        #expect(byID["objects.create.metadata"]?.reason == "cassette objects.create.metadata.json has no variables.run")
        #expect(byID["errors.negativeLimit"]?.outcome == .errored)
        #expect(byID["errors.negativeLimit"]?.reason?.hasPrefix("no cassette memory/errors.negativeLimit.json") == true)
        #expect(byID["objects.version.conflict"]?.outcome == .skipped)
        #expect(byID["objects.version.conflict"]?.reason == "missing capability 'optimisticLocking': the example keeps no versions")
    }

    @Test func scenarioPasswordsGetStablePlaceholders() throws {
        let suite = try ConformanceSuite.bundled()
        let s = try #require(suite.scenario("auth.logIn.wrongPassword"))
        #expect(ConformanceRunner.scenarioSecrets(s, run: "abcd1234") ==
                ["<SCENARIO_PASSWORD_1>": "pw-abcd1234-Secret1", "<SCENARIO_PASSWORD_2>": "not-the-password"])
        #expect(ConformanceRunner.urlString(try BackendURL(parsing: "pocketbase+http://a%40b.c:p%20w@127.0.0.1:8090/x?k=v"))
                == "pocketbase+http://a%40b.c:p%20w@127.0.0.1:8090/x?k=v")
        #expect(ConformanceRunner.urlString(try BackendURL(parsing: "sqlite::memory:")) == "sqlite::memory:")
    }

    @Test func fixturesListAdaptersWithCassettesOnly() throws {
        let root = try temporaryDirectory("conformance")
        defer { try? FileManager.default.removeItem(at: root) }
        let fixtures = ConformanceFixtures(root: root)
        for (dir, file) in [("kii", "a.b.json"), ("empty", nil), ("notes", "README.md"), ("ncmb", "x.y.json")] as [(String, String?)] {
            try FileManager.default.createDirectory(at: fixtures.cassettes(for: dir), withIntermediateDirectories: true)
            if let file { try Data("{}".utf8).write(to: fixtures.cassettes(for: dir).appendingPathComponent(file)) }
        }
        #expect(fixtures.cassetteAdapters() == ["kii", "ncmb"])
        #expect(ConformanceFixtures.locate(explicit: root.path).baseline.path == root.appendingPathComponent("conformance-baseline.json").path)
        // No fallback to MBaaSKit's own checkout unless asked for (the mbaas CLI asks): an outside adapter's
        // cassettes are looked for in its own ./Fixtures.
        #expect(ConformanceFixtures.locate(currentDirectory: root).root == root.appendingPathComponent("Fixtures"))
        #expect(ConformanceFixtures.locate(currentDirectory: root, fallback: ConformanceSuite.bundledFixtures).root
                == ConformanceSuite.bundledFixtures)
    }
}
