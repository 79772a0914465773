import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSEmulator
import MBaaSLocal
import MBaaSReplay
import MBaaSSalesforce
import MBaaSTesting
import Testing

extension SalesforceCassettes {
    /// The provenance every Salesforce cassette carries: authored from the emulator's dialect, which is this
    /// project's reading of the REST API (`shared/reference/salesforce.md`), not an org; each exchange names the fact
    /// the dialect followed (`X-MBaaS-Fact`, from `SalesforceDialect+Facts.swift`).
    static func withProvenance(_ cassette: Cassette) -> Cassette {
        var c = cassette
        var facts = ["[doc] salesforce.md OAuth 2: the password grant at /services/oauth2/token returns access_token and instance_url; every REST call carries Authorization: Bearer"]
        for i in c.interactions { if let f = i.fact, !facts.contains(f) { facts.append(f) } }
        c.provenance = Provenance(
            kind: .authored, server: "MBaaSKit emulator, Salesforce dialect (this project's reading of the Salesforce REST API)",
            facts: facts,
            notes: "Recorded from the Salesforce client (MBaaSSalesforce) talking to Sources/MBaaSEmulator/Salesforce (SalesforceDialect) on an in-memory store. The dialect is built on MBaaSSalesforceWire, the same wire module as the client, so these exchanges show the two agree with each other and with salesforce.md, not with an org; simple-salesforce drives the dialect in SalesforcePythonClientTests, and the recorded org responses of the reference are asserted in SalesforceWireTests.")
        return c
    }
}

/// The Salesforce cassettes (`Fixtures/Cassettes/salesforce`): replayed by `ConformancePairTests` with every other
/// adapter's, checked here for what they must carry, and authored here from the dialect.
@Suite("Salesforce cassettes")
struct SalesforceCassetteTests {
    @Test("replay: every runnable scenario passes but the listed ones; losses are the declared ones; skips name a capability")
    func replay() async throws {
        let suite = try ConformanceSuite.bundled()
        let results = await ConformanceRunner.replay(adapter: "salesforce", factory: SalesforceBackendFactory(),
                                                     cassettes: SalesforceCassettes.directory, scenarios: suite.scenarios)
        SalesforceConformanceTests.expectOutcomes(results, of: suite, mode: "in replay")
        let passed = results.filter { $0.outcome == .passed }
        // What a pass rests on: this project's simulator answered, never a real org.
        #expect(passed.allSatisfy { $0.fixture == .simulated || $0.fixture == .none }, "\(passed.map { "\($0.scenario) \($0.fixture.rawValue)" })")
    }

    @Test("every exchange of every Salesforce cassette names its fact; the provenance says it is the emulator; no secret is kept")
    func provenance() throws {
        let files = SecretScanner.cassetteFiles(under: SalesforceCassettes.directory)
        #expect(files.count >= 50)
        for file in files {
            let c = try Cassette(json: JSON.parse(Data(contentsOf: file)))
            #expect(c.provenance.kind == .authored, "\(file.lastPathComponent)")
            #expect(c.provenance.server?.contains("emulator") == true, "\(file.lastPathComponent)")
            for (n, i) in c.interactions.enumerated() {
                #expect(i.evidence != nil, "\(file.lastPathComponent) #\(n): \(i.fact ?? "no fact")")
            }
            let text = try String(contentsOf: file, encoding: .utf8)
            for secret in [SalesforceCassettes.clientSecret, "admin-pass", "alice-pass", "bob-pass"] {
                #expect(!text.contains(secret), "\(file.lastPathComponent) holds '\(secret)'")
            }
        }
        let findings = try SecretScanner.scanCassettes(under: SalesforceCassettes.directory)
        #expect(findings.isEmpty, "\(findings.prefix(5))")
    }

    /// Writes the cassettes (a generator, not a check: only with `MBAAS_AUTHOR_CASSETTES=1`).
    @Test("author Salesforce cassettes from the emulator's Salesforce dialect",
          .enabled(if: ProcessInfo.processInfo.environment["MBAAS_AUTHOR_CASSETTES"] == "1"))
    func author() async throws {
        let suite = try ConformanceSuite.bundled()
        let directory = SalesforceCassettes.directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for old in SecretScanner.cassetteFiles(under: directory) { try FileManager.default.removeItem(at: old) }
        let start = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z
        let ticks = TestClock(start, tick: 0.001)
        let dialect = try await SalesforceCassettes.dialect(clock: ticks.function, namesFacts: true)
        let secrets: [(placeholder: String, value: String)] = [
            (placeholder: "CLIENT_SECRET", value: SalesforceCassettes.clientSecret),
            (placeholder: "ADMIN_PASSWORD", value: "admin-pass"),
            // The fixture users' passwords are the runner's to scrub (and to substitute in replay).
        ]
        let results = await ConformanceRunner.record(
            adapter: "salesforce", factory: SalesforceBackendFactory(), url: try SalesforceCassettes.url(dialect),
            transport: EmulatorTransport(dialect), clock: { start }, provenance: .authored(facts: []),
            scrubber: Scrubber(profile: SalesforceBackendFactory().wireProfile, secrets: secrets),
            fixtureUsers: SalesforceCassettes.fixtureUsers, scenarios: suite.scenarios, to: directory,
            // The known failures are kept: their cassettes replay as those failures, with the reason, instead of "no cassette".
            keepFailures: true)
        for file in SecretScanner.cassetteFiles(under: directory) {
            try SalesforceCassettes.withProvenance(try Cassette(json: JSON.parse(Data(contentsOf: file)))).write(to: file)
        }
        for r in results where r.outcome != .recorded && r.outcome != .skipped
            && !SalesforceConformanceTests.knownFailures.contains(r.scenario) {
            Issue.record("\(r.scenario): \(r.outcome.rawValue) \(r.reason ?? "")")
        }
        let findings = try SecretScanner.scanCassettes(under: directory)
        #expect(findings.isEmpty, "\(findings.prefix(5))")
    }
}
