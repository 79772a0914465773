import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSEmulator
import MBaaSLocal
import MBaaSReplay
import MBaaSSalesforce
import MBaaSTesting
import Testing

/// How Salesforce cassettes are authored: the scenarios run through the Salesforce client (`MBaaSSalesforce`)
/// against the emulator's Salesforce dialect (this project's reading of the Salesforce REST API, not an org), each
/// exchange carrying the rule of `salesforce.md` the dialect names where it builds the answer
/// (`SalesforceDialect.Configuration.namesFacts`). The dialect and the client share `MBaaSSalesforceWire`, so these
/// cassettes show that the two agree with each other and with the reference, not with Salesforce: the evidence from
/// outside the project is simple-salesforce driving the dialect (`SalesforcePythonClientTests`) and the recorded org
/// responses asserted in `SalesforceWireTests`.
enum SalesforceCassettes {
    static let clientSecret = "emu-client-secret"
    static let directory = ConformanceSuite.bundledFixtures.appendingPathComponent("Cassettes/salesforce")
    /// Salesforce has no sign-up: the org's users are provisioned (`mbaas serve --users`), and the runner logs in.
    static let fixtureUsers: [String: FixtureUser] = [
        "alice": FixtureUser(username: "alice@example.com", password: "alice-pass"),
        "bob": FixtureUser(username: "bob@example.com", password: "bob-pass"),
    ]
    static let users: [SalesforceDialect.ProvisionedUser] = [
        .init(username: "admin@example.com", password: "admin-pass"),
        .init(username: "alice@example.com", password: "alice-pass"),
        .init(username: "bob@example.com", password: "bob-pass"),
    ]

    static func dialect(clock: @escaping @Sendable () -> Date = { Date() }, namesFacts: Bool = false) async throws -> SalesforceDialect {
        let store = try LocalBackend.inMemory(context: BackendContext(clock: clock), options: LocalBackend.Options(passwordHashing: .light))
        var configuration = SalesforceDialect.Configuration(clientId: "emu-client", clientSecret: clientSecret)
        configuration.namesFacts = namesFacts
        let dialect = SalesforceDialect(store: store, configuration: configuration, clock: clock)
        try await dialect.provision(users)
        return dialect
    }

    /// The dialect's backend URL with the org user the client acts as before a fixture user logs in.
    static func url(_ dialect: SalesforceDialect) throws -> BackendURL {
        try BackendURL(parsing: dialect.backendURL(host: "salesforce.example.test", port: 8443)
                       + "?username=admin%40example.com&password=admin-pass")
    }

    static func withProvenance(_ cassette: Cassette) -> Cassette {
        var c = cassette
        var facts = ["[doc] salesforce.md Authentication: OAuth 2 password grant at /services/oauth2/token, then Authorization: Bearer on every REST call"]
        for i in c.interactions { if let f = i.fact, !facts.contains(f) { facts.append(f) } }
        c.provenance = Provenance(
            kind: .authored, server: "MBaaSKit emulator, Salesforce dialect (this project's reading of the Salesforce REST API)",
            facts: facts,
            notes: "Recorded from the Salesforce client talking to Sources/MBaaSEmulator/Salesforce (SalesforceDialect) on an in-memory store. The dialect is built on MBaaSSalesforceWire, the same wire module as the client, so these exchanges show the two agree with each other and with salesforce.md, not with a Salesforce org; simple-salesforce drives the same dialect in SalesforcePythonClientTests.")
        return c
    }
}

@Suite("Salesforce conformance")
struct SalesforceConformanceTests {
    @Test("live against the dialect: nothing fails; what is skipped names the capability the org model lacks")
    func live() async throws {
        let dialect = try await SalesforceCassettes.dialect()
        let suite = try ConformanceSuite.bundled()
        let results = await ConformanceRunner.live(adapter: "salesforce", factory: SalesforceBackendFactory(),
                                                   url: try SalesforceCassettes.url(dialect), transport: EmulatorTransport(dialect),
                                                   fixtureUsers: SalesforceCassettes.fixtureUsers, scenarios: suite.scenarios)
        #expect(results.count == suite.scenarios.count)
        let bad = results.filter { $0.outcome != .passed && $0.outcome != .skipped && $0.outcome != .lossy }
        #expect(bad.isEmpty, "\(bad.map { "\($0.scenario): \($0.outcome) \($0.reason ?? "")" }.joined(separator: "\n"))")
        for r in results where r.outcome == .skipped {
            #expect(r.isCapabilitySkip, "\(r.scenario): \(r.reason ?? "")")
        }
        let passed = results.filter { $0.outcome == .passed }.map(\.scenario)
        #expect(passed.count >= 50, "passed: \(passed.count)")
        for id in ["objects.crud.basic", "queries.paging"] {
            #expect(passed.contains(id), "\(id) does not pass live")
        }
    }

    @Test("every runnable scenario passes in replay as it did live; the rest are skipped with the capability named")
    func replay() async throws {
        let suite = try ConformanceSuite.bundled()
        let results = await ConformanceRunner.replay(adapter: "salesforce", factory: SalesforceBackendFactory(),
                                                     cassettes: SalesforceCassettes.directory, scenarios: suite.scenarios)
        #expect(results.count == suite.scenarios.count)
        for r in results where r.outcome != .passed && r.outcome != .skipped && r.outcome != .lossy {
            Issue.record("\(r.scenario): \(r.outcome.rawValue) \(r.reason ?? "")")
        }
        let passed = results.filter { $0.outcome == .passed }.map(\.scenario)
        #expect(passed.count >= 50, "passed: \(passed.count)")
    }

    @Test("every exchange of every Salesforce cassette names its fact, and the provenance says it is the emulator")
    func provenance() throws {
        let files = SecretScanner.cassetteFiles(under: SalesforceCassettes.directory)
        #expect(files.count >= 50)
        for file in files {
            let c = try Cassette.load(from: file)
            #expect(c.provenance.kind == .authored, "\(file.lastPathComponent)")
            #expect(c.provenance.server?.contains("emulator") == true, "\(file.lastPathComponent)")
            for (n, i) in c.interactions.enumerated() {
                #expect(i.evidence != nil, "\(file.lastPathComponent) #\(n): \(i.fact ?? "no fact")")
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
        let results = await ConformanceRunner.record(
            adapter: "salesforce", factory: SalesforceBackendFactory(), url: try SalesforceCassettes.url(dialect),
            transport: EmulatorTransport(dialect), clock: { start }, provenance: .authored(facts: []),
            scrubber: Scrubber(profile: SalesforceBackendFactory().wireProfile,
                               secrets: [(placeholder: "CLIENT_SECRET", value: SalesforceCassettes.clientSecret),
                                         (placeholder: "ADMIN_PASSWORD", value: "admin-pass"),
                                         (placeholder: "ALICE_PASSWORD", value: "alice-pass"),
                                         (placeholder: "BOB_PASSWORD", value: "bob-pass")]),
            fixtureUsers: SalesforceCassettes.fixtureUsers, scenarios: suite.scenarios, to: directory)
        for file in SecretScanner.cassetteFiles(under: directory) {
            try SalesforceCassettes.withProvenance(try Cassette(json: JSON.parse(Data(contentsOf: file)))).write(to: file)
        }
        for r in results where r.outcome != .recorded && r.outcome != .skipped {
            Issue.record("\(r.scenario): \(r.outcome.rawValue) \(r.reason ?? "")")
        }
        let findings = try SecretScanner.scanCassettes(under: directory)
        #expect(findings.isEmpty, "\(findings.prefix(5))")
    }
}
