import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSEmulator
import MBaaSLocal
import MBaaSParse
import MBaaSParseWire
import MBaaSReplay
import MBaaSTesting
import Testing

/// How Parse cassettes are authored: the scenarios run through the Parse client against the emulator's Parse
/// dialect (this project's own reading of Parse Server, not a Parse Server), and each exchange carries the documented
/// rule the dialect names where it builds the answer (`ParseDialect.Configuration.namesFacts`). The evidence from outside the project is the REST guide's and the SDKs'
/// examples, which ``ParseVectorDialectTests`` sends to the same dialect.
enum ParseCassettes {
    static let reference = "parse.md"
    static let restKey = "emu-rest-key"
    static let directory = ConformanceSuite.bundledFixtures.appendingPathComponent("Cassettes/parse")

    static func withProvenance(_ cassette: Cassette) -> Cassette {
        var c = cassette
        var facts = ["[doc] \(reference) Transport and authentication: X-Parse-Application-Id and X-Parse-REST-API-Key on every request, X-Parse-Session-Token for a user"]
        for i in c.interactions { if let f = i.fact, !facts.contains(f) { facts.append(f) } }
        c.provenance = Provenance(
            kind: .authored, server: "MBaaSKit emulator, Parse dialect (this project's reading of Parse Server)", facts: facts,
            notes: "Recorded from the Parse client talking to Sources/MBaaSEmulator/Parse (ParseDialect) on an in-memory store. The dialect is built on MBaaSParseWire, the same wire module as the client, so these exchanges show the two agree with each other and with parse.md, not with a Parse Server; the REST guide's examples are checked against the dialect in ParseVectorDialectTests.")
        return c
    }
}

@Suite("Parse conformance")
struct ParseConformanceTests {
    @Test("every runnable scenario passes in replay; the rest are skipped with the capability named")
    func replay() async throws {
        let suite = try ConformanceSuite.bundled()
        let results = await ConformanceRunner.replay(adapter: "parse", factory: ParseBackendFactory(),
                                                     cassettes: ParseCassettes.directory, scenarios: suite.scenarios)
        #expect(results.count == suite.scenarios.count)
        for r in results where r.outcome != .passed && r.outcome != .skipped {
            Issue.record("\(r.scenario): \(r.outcome.rawValue) \(r.reason ?? "")")
        }
        for r in results where r.outcome == .skipped {
            #expect(r.isCapabilitySkip, "\(r.scenario): \(r.reason ?? "")")
        }
        let passed = results.filter { $0.outcome == .passed }.map(\.scenario)
        #expect(passed.count >= 80, "passed: \(passed.count)")
        for id in ["objects.crud.basic", "queries.paging", "batch.mixed", "files.metadata", "acl.private.crossUser",
                   "auth.fixture.logOut.server", "values.pointer"] {
            #expect(passed.contains(id), "\(id) does not pass in replay")
        }
    }

    @Test("every exchange of every Parse cassette names its fact, and the provenance says it is the emulator")
    func provenance() throws {
        let files = SecretScanner.cassetteFiles(under: ParseCassettes.directory)
        #expect(files.count >= 80)
        for file in files {
            let c = try Cassette.load(from: file)
            #expect(c.provenance.kind == .authored, "\(file.lastPathComponent)")
            #expect(c.provenance.server?.contains("emulator") == true, "\(file.lastPathComponent)")
            for (n, i) in c.interactions.enumerated() {
                #expect(i.evidence != nil, "\(file.lastPathComponent) #\(n): \(i.fact ?? "no fact")")
            }
        }
        let findings = try SecretScanner.scanCassettes(under: ParseCassettes.directory)
        #expect(findings.isEmpty, "\(findings.prefix(5))")
    }

    /// Writes the cassettes (a generator, not a check: only with `MBAAS_AUTHOR_CASSETTES=1`).
    @Test("author Parse cassettes from the emulator's Parse dialect",
          .enabled(if: ProcessInfo.processInfo.environment["MBAAS_AUTHOR_CASSETTES"] == "1"))
    func author() async throws {
        // MBAAS_AUTHOR_SCENARIOS=id,id... authors only those scenarios (exact ids) and leaves every other cassette as it is.
        let authoring = ProcessInfo.processInfo.environment["MBAAS_AUTHOR_SCENARIOS"]?.split(separator: ",").map(String.init) ?? []
        let suite = ConformanceSuite(scenarios: try ConformanceSuite.bundled().scenarios.filter { authoring.isEmpty || authoring.contains($0.id) })
        let directory = ParseCassettes.directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if authoring.isEmpty {
            for old in SecretScanner.cassetteFiles(under: directory) { try FileManager.default.removeItem(at: old) }
        }
        let start = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z
        let ticks = TestClock(start, tick: 0.001)
        let store = try LocalBackend.inMemory(context: BackendContext(clock: ticks.function),
                                              options: LocalBackend.Options(passwordHashing: .testing))
        // File prefixes from a known list, scrubbed into placeholders (32 hex digits look like a key to the scanner).
        let prefixes = (1...200).map { n in String(format: "%032x", n * 7_919) }
        let next = Collector<Int>()
        var configuration = ParseDialect.Configuration(applicationId: "emuapp", restKey: ParseCassettes.restKey)
        configuration.filePrefix = { next.append(0); return prefixes[next.all.count - 1] }
        configuration.namesFacts = true
        let dialect = ParseDialect(store: store, configuration: configuration, clock: ticks.function)
        let results = await ConformanceRunner.record(
            adapter: "parse", factory: ParseBackendFactory(),
            url: try BackendURL(parsing: dialect.backendURL(host: "parse.example.test", port: 8080)),
            transport: EmulatorTransport(dialect), clock: { start },
            provenance: .authored(facts: []),
            scrubber: Scrubber(profile: ParseBackendFactory().wireProfile,
                               secrets: [(placeholder: "REST_KEY", value: ParseCassettes.restKey)]
                                   + prefixes.enumerated().map { (placeholder: "FILE_PREFIX_\($0.offset + 1)", value: $0.element) }),
            scenarios: suite.scenarios, to: directory)
        let written = Set(suite.scenarios.map { $0.id + ".json" })
        for file in SecretScanner.cassetteFiles(under: directory) where written.contains(file.lastPathComponent) {
            try ParseCassettes.withProvenance(try Cassette(json: JSON.parse(Data(contentsOf: file)))).write(to: file)
        }
        for r in results where r.outcome != .recorded && r.outcome != .skipped {
            Issue.record("\(r.scenario): \(r.outcome.rawValue) \(r.reason ?? "")")
        }
        let findings = try SecretScanner.scanCassettes(under: directory)
        #expect(findings.isEmpty, "\(findings.prefix(5))")
    }
}
