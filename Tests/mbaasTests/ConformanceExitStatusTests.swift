import Foundation
import MBaaSCore
import Testing

/// Issue 33, points 5 and 13 (iii): `mbaas conformance` exits 10 for a known loss (a lossy result never looks
/// like a pass) and 11 when an adapter ran fewer scenarios than `--min-run`.
@Suite struct ConformanceExitStatusTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures").path

    @Test("AppPot's empty string is lossy: reported with the difference, exit status 10; --check-baseline knows it (0)")
    func lossyExitsTen() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let r = try cli.run(["conformance", "--adapter", "apppot", "--scenario", "values.string", "--fixtures", Self.fixtures],
                            sessionOption: false)
        #expect(r.status == 10, "\(r.stderr)")
        #expect(r.text.contains("~ apppot values.string [lossy]: known loss under declared 'emptyStringsAbsent'"), "\(r.text)")
        #expect(r.text.contains("1 passed, 0 failed, 0 skipped, 0 errored, 1 lossy (a declared loss: not a pass)"), "\(r.text)")
        #expect(r.stderr.contains("1 lossy result: a loss the backend declares is not a pass (exit status 10)"), "\(r.stderr)")

        let json = try cli.run(["conformance", "--adapter", "apppot", "--scenario", "values.string", "--format", "json",
                                "--fixtures", Self.fixtures], sessionOption: false)
        #expect(json.status == 10)
        let report = try json.json()
        #expect(report["summary"]?["apppot"]?["lossy"] == .int(1))
        #expect(report["results"]?.arrayValue?.first { $0["scenario"] == "values.string" }?["outcome"] == "lossy")

        let known = try cli.run(["conformance", "--adapter", "apppot", "--scenario", "values.string", "--check-baseline",
                                 "--fixtures", Self.fixtures], sessionOption: false)
        #expect(known.status == 0, "\(known.stderr)")
        #expect(known.stderr.contains("baseline: no regressions"))
    }

    @Test("--min-run: an adapter that ran fewer scenarios exits 11; skips never count; a bad value is a usage error (64)")
    func minRunExitsEleven() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        // Local declares every feature the probes probe: all of them skip, and the table says the run proves little.
        let probes = try cli.run(["conformance", "--adapter", "local", "--scenario", "probes", "--min-run", "1",
                                  "--fixtures", Self.fixtures], sessionOption: false)
        #expect(probes.status == 11, "\(probes.stderr)")
        #expect(probes.stderr.contains("local ran 0 of 31 scenarios (31 skipped), fewer than --min-run 1"), "\(probes.stderr)")
        #expect(probes.text.contains("warning: local ran 0 of 31 scenarios (31 skipped)"), "\(probes.text)")
        // Without the flag the same run passes (nothing failed), still with the warning.
        let lenient = try cli.run(["conformance", "--adapter", "local", "--scenario", "probes", "--fixtures", Self.fixtures],
                                  sessionOption: false)
        #expect(lenient.status == 0, "\(lenient.stderr)")
        #expect(lenient.text.contains("warning: local ran 0 of 31 scenarios"))

        let crud = try cli.run(["conformance", "--adapter", "local", "--scenario", "objects.crud", "--min-run", "100%",
                                "--fixtures", Self.fixtures], sessionOption: false)
        #expect(crud.status == 0, "\(crud.stderr)")
        let bad = try cli.run(["conformance", "--adapter", "local", "--min-run", "half", "--fixtures", Self.fixtures],
                              sessionOption: false)
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("--min-run: a minimum run must be a count of scenarios (e.g. 80) or a percentage (e.g. 60%), got 'half'"), "\(bad.stderr)")
    }
}
