import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
@testable import MBaaSConformance
import MBaaSCore
import Testing

@Suite struct ReportTests {
    let report = ConformanceReport(results: [
        ScenarioResult(adapter: "local", scenario: "objects.crud.basic", outcome: .passed, durationMs: 3, fixture: .live),
        ScenarioResult(adapter: "local", scenario: "queries.regex", outcome: .passed, durationMs: 2, fixture: .live),
        ScenarioResult(adapter: "kii", scenario: "objects.crud.basic", outcome: .failed,
                       reason: "step 2 `get`: field 'n': expected 2, got <1> & \"one\"", durationMs: 5),
        ScenarioResult(adapter: "kii", scenario: "queries.regex", outcome: .skipped,
                       reason: "missing capability 'operator.regex': Kii has no regex"),
        ScenarioResult(adapter: "ncmb", scenario: "objects.crud.basic", outcome: .errored, reason: "missing cassette"),
        ScenarioResult(adapter: "ncmb", scenario: "queries.regex", outcome: .recorded, reason: "cassette written"),
    ], suiteVersion: "1+abcdef12", adapters: ["local", "ncmb", "kii"])

    @Test func jsonHasExactlyTheAgreedKeysAndParsesBack() throws {
        let json = try JSON.parse(report.jsonText)
        #expect(json.objectValue?.keys.sorted() == ["results", "suiteVersion", "summary"])
        #expect(json["suiteVersion"] == "1+abcdef12")
        let first = try #require(json["results"]?.arrayValue?.first)
        #expect(first.objectValue?.keys.sorted() == ["adapter", "durationMs", "fixture", "outcome", "reason", "scenario"])
        #expect(first == .object(["adapter": "local", "scenario": "objects.crud.basic", "outcome": "passed",
                                  "fixture": "live", "reason": .null, "durationMs": 3]))
        let summary = try #require(json["summary"]?.objectValue)
        #expect(summary.keys == ["local", "ncmb", "kii"])
        let none: JSON = .object(["recorded": 0, "simulated": 0, "live": 0, "none": 0])
        #expect(summary["local"] == .object(["passed": 2, "failed": 0, "skipped": 0, "errored": 0, "lossy": 0,
                                             "passedBy": .object(["recorded": 0, "simulated": 0, "live": 2, "none": 0])]))
        #expect(summary["kii"] == .object(["passed": 0, "failed": 1, "skipped": 1, "errored": 0, "lossy": 0, "passedBy": none]))
        #expect(summary["ncmb"] == .object(["passed": 0, "failed": 0, "skipped": 0, "errored": 1, "recorded": 1,
                                            "lossy": 0, "passedBy": none]))
        let back = try ConformanceReport(json: json)
        #expect(back.results == report.results)
        #expect(back.suiteVersion == report.suiteVersion)
    }

    @Test func junitIsWellFormedWithCounts() throws {
        let xml = report.junitXML
        final class Collector: NSObject, XMLParserDelegate, @unchecked Sendable {
            var elements: [String: Int] = [:]
            var attributes: [String: [String: String]] = [:]
            func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                        attributes: [String: String] = [:]) {
                elements[name, default: 0] += 1
                if name == "testsuites" || (name == "testsuite" && attributes["name"] == "kii") {
                    self.attributes[name] = attributes
                }
            }
        }
        let parser = XMLParser(data: Data(xml.utf8))
        let collector = Collector()
        parser.delegate = collector
        #expect(parser.parse(), "\(parser.parserError.map { "\($0)" } ?? "")")
        #expect(collector.elements["testcase"] == 6)
        #expect(collector.elements["testsuite"] == 3)
        #expect(collector.elements["failure"] == 2) // failed + recorded
        #expect(collector.elements["error"] == 1)
        #expect(collector.elements["skipped"] == 1)
        let top = try #require(collector.attributes["testsuites"])
        #expect(top["tests"] == "6")
        #expect(top["failures"] == "2")
        #expect(top["errors"] == "1")
        #expect(top["skipped"] == "1")
        #expect(collector.attributes["testsuite"]?["tests"] == "2")
        #expect(xml.contains("expected 2, got &lt;1&gt; &amp; &quot;one&quot;"))
    }

    @Test func tableCellsAndProblems() {
        let table = report.table
        #expect(table == report.table(listSkips: false))
        #expect(table.contains("local    1/1 ✓        1/1 ✓         2/2 ✓\n"))
        #expect(table.contains("kii      0/1 ✓ 1 ✗    0/1 ✓ 1 skip  0/2 ✓ 1 skip 1 ✗\n"))
        #expect(table.contains("✗ kii objects.crud.basic [failed]: step 2 `get`"))
        #expect(table.contains("! ncmb objects.crud.basic [errored]: missing cassette"))
        #expect(!table.contains("Kii has no regex"))
        #expect(report.table(listSkips: true).contains("Kii has no regex"))
        #expect(table.contains("\n2 passed, 1 failed, 1 skipped, 1 errored, 1 recorded (not a pass: replay to verify)\n"))
        #expect(table.hasSuffix("passes by evidence: 0 recorded, 0 simulated, 2 live, 0 none (simulated: a simulator of this project answered, not the vendor)\n"))
        var c = ConformanceReport.Counts()
        for _ in 0..<12 { c.add(.passed) }
        c.add(.skipped); c.add(.skipped)
        #expect(ConformanceReport.cell(c) == "12/14 ✓ 2 skip")
        var mixed = ConformanceReport.Counts()
        for f in [Fixture.simulated, .simulated, .none, .recorded] {
            mixed.add(ScenarioResult(adapter: "a", scenario: "s", outcome: .passed, fixture: f))
        }
        mixed.add(ScenarioResult(adapter: "a", scenario: "s", outcome: .skipped))
        #expect(ConformanceReport.cell(mixed) == "4/5 ✓ (2 simulated, 1 no network) 1 skip")
        #expect(mixed.passedBy == [.recorded: 1, .simulated: 2, .live: 0, .none: 1])
        #expect(ConformanceReport.cell(ConformanceReport.Counts()) == "—")
    }

    @Test func adaptersWithoutResultsShowAsNotRun() {
        var r = report
        r.adapters = ConformanceReport.ordered(r.adapters + ["zeta", "other"], by: r.adapters)
        #expect(r.adapters == ["local", "ncmb", "kii", "other", "zeta"])
        #expect(r.table().split(separator: "\n").contains { $0.hasPrefix("other ") && $0.hasSuffix("not run") })
        #expect(r.markdown.contains("| `objects.crud.basic` | ✅ | 💥 | ❌ | — | — |"))
    }

    @Test func columnsFollowTheCallersOrderOrTheResults() throws {
        // No order of its own: the results' first appearance, or the order given.
        let results = [ScenarioResult(adapter: "b", scenario: "s", outcome: .passed),
                       ScenarioResult(adapter: "a", scenario: "s", outcome: .passed),
                       ScenarioResult(adapter: "b", scenario: "t", outcome: .passed)]
        #expect(ConformanceReport(results: results).adapters == ["b", "a"])
        #expect(ConformanceReport(results: results, adapters: ["a", "b", "a"]).adapters == ["a", "b"])
        #expect(ConformanceReport.ordered(["c", "b", "a", "b"]) == ["a", "b", "c"])
        #expect(ConformanceReport.ordered(["c", "b", "a"], by: ["c", "x"]) == ["c", "a", "b"])
        // A JSON report keeps its column order (the summary's) when read back.
        let shown = ConformanceReport(results: results, adapters: ["a", "b"])
        #expect(try JSON.parse(shown.jsonText)["summary"]?.objectValue?.keys == ["a", "b"])
        #expect(try ConformanceReport(json: JSON.parse(shown.jsonText)).adapters == ["a", "b"])
    }

    @Test func fixtureKindsRoundTripAndUnknownKindsAreRefused() throws {
        let sim = ScenarioResult(adapter: "ncmb", scenario: "a.b", outcome: .passed, fixture: .simulated)
        #expect(try ScenarioResult(json: sim.json) == sim)
        var bad = sim.json.objectValue!
        bad["fixture"] = "vendor"
        #expect(throws: MBaaSError.self) { try ScenarioResult(json: .object(bad)) }
        let md = ConformanceReport(results: [sim]).markdown
        #expect(md.contains("| `a.b` | ✅ sim |"))
    }

    @Test func markdownMatrix() {
        let md = report.markdown
        #expect(md.contains("| Group | local | ncmb | kii |"))
        #expect(md.contains("| objects | 1/1 ✓ | 0/1 ✓ 1 err | 0/1 ✓ 1 ✗ |"))
        #expect(md.contains("| `queries.regex` | ✅ | 📼 | ⏭️ |"))
        #expect(md.contains("- ⏭️ **kii** `queries.regex` skipped: missing capability 'operator.regex': Kii has no regex"))
        #expect(report.hasProblems)
    }
}

@Suite struct BaselineEvidenceTests {
    @Test func aPassOnWeakerEvidenceIsARegression() {
        func r(_ f: Fixture) -> ScenarioResult { ScenarioResult(adapter: "pb", scenario: "a.one", outcome: .passed, fixture: f) }
        let baseline = ConformanceReport(results: [r(.recorded)])
        let weaker = BaselineComparison(baseline: baseline, current: ConformanceReport(results: [r(.simulated)]))
        #expect(weaker.hasRegressions)
        #expect(weaker.regressions.first?.reason == "weaker evidence: recorded -> simulated")
        #expect(!BaselineComparison(baseline: baseline, current: ConformanceReport(results: [r(.live)])).hasRegressions)
        #expect(!BaselineComparison(baseline: ConformanceReport(results: [r(.simulated)]),
                                    current: ConformanceReport(results: [r(.recorded)])).hasRegressions)
    }
}

@Suite struct BaselineTests {
    func r(_ a: String, _ s: String, _ o: Outcome) -> ScenarioResult { ScenarioResult(adapter: a, scenario: s, outcome: o) }

    @Test func regressionsImprovementsAndKnownFailures() {
        let baseline = ConformanceReport(results: [
            r("local", "a.one", .passed), r("local", "a.two", .passed), r("local", "a.gone", .passed),
            r("kii", "a.one", .failed), r("kii", "a.two", .skipped), r("kii", "a.three", .errored),
        ])
        let current = ConformanceReport(results: [
            r("local", "a.one", .passed), r("local", "a.two", .skipped),
            r("kii", "a.one", .passed), r("kii", "a.two", .skipped), r("kii", "a.three", .failed),
            r("local", "a.new", .passed),
        ])
        let c = BaselineComparison(baseline: baseline, current: current)
        #expect(c.hasRegressions)
        #expect(c.regressions.map { "\($0.adapter) \($0.scenario)" } == ["local a.two", "local a.gone"])
        #expect(c.regressions[1].after == nil)
        #expect(c.improvements.map { "\($0.adapter) \($0.scenario)" } == ["kii a.one", "local a.new"])
        #expect(c.summary.contains("REGRESSION local a.gone: passed -> vanished"))
        #expect(c.summary.contains("improved local a.new: absent -> passed"))
    }

    @Test func aFilteredRunOnlyAnswersForItsScope() {
        let baseline = ConformanceReport(results: [r("local", "a.one", .passed), r("kii", "a.one", .passed)])
        let current = ConformanceReport(results: [r("local", "a.one", .passed)])
        #expect(BaselineComparison(baseline: baseline, current: current).regressions.count == 1)
        let scoped = BaselineComparison(baseline: baseline, current: current) { adapter, _ in adapter == "local" }
        #expect(!scoped.hasRegressions)
        #expect(scoped.summary == "baseline: no regressions\n")
    }
}
