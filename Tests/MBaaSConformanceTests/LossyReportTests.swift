import Foundation
@testable import MBaaSConformance
import MBaaSCore
import Testing

/// Issue 33, points 5 and 13 (iii): how reports, the baseline check and `--min-run` count a known loss and a run
/// that is mostly skips.
@Suite struct LossyReportTests {
    static let loss = ScenarioResult(adapter: "apppot", scenario: "values.string", outcome: .lossy,
                                     reason: "known loss under declared 'emptyStringsAbsent': step 1 `create`: field 'empty': expected \"\", but the field is missing",
                                     fixture: .simulated)
    static let report = ConformanceReport(results: [
        ScenarioResult(adapter: "apppot", scenario: "values.int", outcome: .passed, fixture: .simulated),
        loss,
        ScenarioResult(adapter: "apppot", scenario: "values.null", outcome: .skipped, reason: "missing capability 'value.null'"),
    ], suiteVersion: "1+abcdef12")

    @Test func theJSONReportHasTheOutcomeAndACountAndReadsBack() throws {
        let json = Self.report.json
        #expect(json["results"]?.arrayValue?[1]["outcome"] == "lossy")
        #expect(json["summary"]?["apppot"] == .object([
            "passed": 1, "failed": 0, "skipped": 1, "errored": 0, "lossy": 1,
            "passedBy": .object(["recorded": 0, "simulated": 1, "live": 0, "none": 0]),
        ]))
        let back = try ConformanceReport(json: JSON.parse(Self.report.jsonText))
        #expect(back.results == Self.report.results)
        #expect(back.summary["apppot"]?.lossy == 1)
        // An older report (no "lossy" count) still reads.
        var old = json.objectValue!
        old["summary"] = .object(["apppot": .object(["passed": 1, "failed": 0, "skipped": 1, "errored": 0])])
        #expect(try ConformanceReport(json: .object(old)).results.count == 3)
    }

    @Test func theTableJUnitAndMarkdownShowTheLossApart() {
        let table = Self.report.table()
        #expect(table.contains("1/3 ✓ (1 simulated) 1 skip 1 lossy"), "\(table)")
        #expect(table.contains("~ apppot values.string [lossy]: known loss under declared 'emptyStringsAbsent'"))
        #expect(table.contains("1 passed, 0 failed, 1 skipped, 0 errored, 1 lossy (a declared loss: not a pass)"))
        let junit = Self.report.junitXML
        #expect(junit.contains("tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\""))
        #expect(junit.contains("type=\"lossy\">known loss under declared"))
        let md = Self.report.markdown
        #expect(md.contains("| `values.string` | 〰️ |"))
        #expect(md.contains("- 〰️ **apppot** `values.string` lossy: known loss"))
        #expect(Self.report.hasLosses && !Self.report.hasProblems)
    }

    @Test func theBaselineCountsALossAsARegressionFromAPassAndGuardsAKnownLoss() {
        func report(_ outcome: Outcome?) -> ConformanceReport {
            ConformanceReport(results: outcome.map { [ScenarioResult(adapter: "apppot", scenario: "values.string", outcome: $0, fixture: .simulated)] } ?? [])
        }
        // A pass that became lossy is a regression.
        let fromPass = BaselineComparison(baseline: report(.passed), current: report(.lossy))
        #expect(fromPass.regressions.map(\.description) == ["apppot values.string: passed -> lossy"])
        // A known loss that stays lossy is not; one that passes now is an improvement.
        #expect(!BaselineComparison(baseline: report(.lossy), current: report(.lossy)).hasRegressions)
        let fixed = BaselineComparison(baseline: report(.lossy), current: report(.passed))
        #expect(!fixed.hasRegressions && fixed.improvements.map(\.description) == ["apppot values.string: lossy -> passed"])
        // A known loss that hides again (skipped), fails, errors or vanishes is a regression.
        for now in [Outcome.skipped, .failed, .errored] {
            let c = BaselineComparison(baseline: report(.lossy), current: report(now))
            #expect(c.regressions.map(\.description) == ["apppot values.string: lossy -> \(now.rawValue)"])
        }
        #expect(BaselineComparison(baseline: report(.lossy), current: report(nil)).regressions.map(\.description)
                == ["apppot values.string: lossy -> vanished"])
        // Out of scope, nothing.
        #expect(!BaselineComparison(baseline: report(.lossy), current: report(nil)) { _, _ in false }.hasRegressions)
    }

    @Test func aMinimumRunIsACountOrAPercentageAndSkipsDoNotCount() throws {
        #expect(try MinimumRun(parsing: "80") == .count(80))
        #expect(try MinimumRun(parsing: "60%") == .percent(60))
        for bad in ["-1", "1.5", "101%", "x", "%", ""] {
            #expect(throws: MBaaSError.self) { try MinimumRun(parsing: bad) }
        }
        #expect(MinimumRun.percent(60).required(of: 119) == 72)
        #expect(MinimumRun.percent(100).required(of: 3) == 3)
        let c = try #require(Self.report.summary["apppot"])
        #expect(c.ran == 2 && c.total == 3 && !c.mostlySkipped)
        #expect(Self.report.belowMinimumRun(.count(2)).isEmpty)
        #expect(Self.report.belowMinimumRun(.count(3)).map(\.adapter) == ["apppot"])
        #expect(Self.report.belowMinimumRun(.percent(66)).isEmpty)
        #expect(Self.report.belowMinimumRun(.percent(67)).map(\.adapter) == ["apppot"])
    }

    @Test func aRunThatIsMostlySkipsSaysSo() {
        var results = [ScenarioResult(adapter: "mine", scenario: "objects.crud.basic", outcome: .passed, fixture: .live)]
        for i in 0..<118 {
            results.append(ScenarioResult(adapter: "mine", scenario: "s.\(i)", outcome: .skipped, reason: "missing capability 'auth'"))
        }
        let report = ConformanceReport(results: results + [
            ScenarioResult(adapter: "other", scenario: "objects.crud.basic", outcome: .passed, fixture: .live),
        ])
        #expect(report.mostlySkippedAdapters == ["mine"])
        let warning = "warning: mine ran 1 of 119 scenarios (118 skipped): a skip is not a pass, so this run proves little (mbaas conformance --min-run N fails such a run)"
        #expect(report.table().contains(warning + "\n"))
        #expect(report.markdown.contains("**" + warning + "**"))
        #expect(!Self.report.table().contains("warning:"))
    }
}
