import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSLocal
import MBaaSTesting
import Testing
@testable import MBaaSPostgres

extension LiveTests {
    /// The conformance suite live against the server, every scenario on a fresh schema, side by side with the Local
    /// store on fresh databases: every scenario Local passes passes here.
    @Suite("PostgreSQL conformance, live")
    struct ConformanceLiveTests {
        @Test("every scenario the Local store passes passes on PostgreSQL (each on a fresh schema); the rest name the missing capability")
        func everyLocalPassPasses() async throws {
            let suite = try ConformanceSuite.bundled()
            let run = Live.runId()
            defer { Task { await Live.dropSchemas(prefix: "c\(run)_") } }
            let base = try Live.url(schema: "public")
            let results = await ConformanceRunner.live(adapter: "postgres", factory: Live.factory, scenarios: suite.scenarios) { scenario in
                var url = base
                url.options["schema"] = Self.schemaName(run: run, scenario: scenario.id)
                return url
            }
            let local = await ConformanceRunner.liveOnFreshDatabases(
                adapter: "local",
                factory: LocalBackendFactory(options: LocalBackend.Options(passwordHashing: LocalPasswordHasher.Parameters(logN: 4, blockSize: 8, parallelism: 1))),
                scenarios: suite.scenarios) { file in BackendURL(scheme: "sqlite", path: file.path) }
            let localPassed = Set(local.filter { $0.outcome == .passed }.map(\.scenario))
            let report = ConformanceReport(results: results, suiteVersion: suite.version)
            print(report.table(listSkips: true))
            #expect(results.count == suite.scenarios.count)
            for result in results {
                if localPassed.contains(result.scenario) {
                    #expect(result.outcome == .passed, "\(result.scenario): \(result.outcome) \(result.reason ?? "")")
                } else if result.outcome == .skipped {
                    #expect(result.isCapabilitySkip, "\(result.scenario): \(result.reason ?? "")")
                }
            }
            // 90 of 123 when this was written: the rest are probes of capabilities both stores declare (skipped).
            #expect(localPassed.count >= 90, "Local passed only \(localPassed.count)")
            #expect(results.filter { $0.outcome == .failed || $0.outcome == .errored || $0.outcome == .lossy }.map(\.scenario) == [])
            await Live.dropSchemas(prefix: "c\(run)_")
        }

        /// `c<run>_<scenario id, lowercased, other characters as _>_<hash>`, at most 63 bytes.
        static func schemaName(run: String, scenario: String) -> String {
            var hash: UInt32 = 2166136261
            for b in scenario.utf8 { hash = (hash ^ UInt32(b)) &* 16777619 }
            let cleaned = String(scenario.lowercased().map { $0.isASCII && ($0.isLetter || $0.isNumber) ? $0 : "_" }.prefix(40))
            return "c\(run)_\(cleaned)_\(String(hash, radix: 16))"
        }
    }
}
