import Foundation
import MBaaSCore

/// The difference between a committed baseline report and a new run.
///
/// Only regressions fail a `--check-baseline` run: a pair that passed in the baseline and now does not, that
/// vanished (its scenario or its adapter's cassette is gone), or that still passes on weaker evidence (a
/// ``Fixture/recorded`` or ``Fixture/live`` pass that became ``Fixture/simulated`` or ``Fixture/none``, or a
/// simulated one that became `none`). A pass that became ``Outcome/lossy`` is a regression like any other pass
/// lost; a pair that was lossy in the baseline is a known loss while it stays lossy, and a regression when it
/// becomes anything but lossy or passed (failed, errored, skipped or vanished: a known loss must not hide again).
/// A pair that newly passes is an improvement,
/// reported so the baseline can be refreshed. Pairs that did not pass before and still do not are known
/// failures and change nothing.
public struct BaselineComparison: Sendable, Hashable {
    /// One pair whose outcome changed.
    public struct Change: Sendable, Hashable, CustomStringConvertible {
        public var adapter: String
        public var scenario: String
        /// The outcome in the baseline; `nil` when the pair is new.
        public var before: Outcome?
        /// The outcome now; `nil` when the pair vanished.
        public var after: Outcome?
        public var reason: String?

        public var description: String {
            "\(adapter) \(scenario): \(before?.rawValue ?? "absent") -> \(after?.rawValue ?? "vanished")"
                + (reason.map { " (\($0))" } ?? "")
        }
    }

    public var regressions: [Change]
    public var improvements: [Change]

    /// Compares `current` with `baseline`. `inScope` limits the baseline pairs considered to those the current
    /// run was asked to cover (an `--adapter` or `--scenario` filter must not turn every other pair into a
    /// vanished one).
    public init(
        baseline: ConformanceReport, current: ConformanceReport,
        inScope: (_ adapter: String, _ scenario: String) -> Bool = { _, _ in true }
    ) {
        var now: [String: ScenarioResult] = [:]
        for r in current.results { now["\(r.adapter)\u{0}\(r.scenario)"] = r }
        var before: [String: ScenarioResult] = [:]
        for r in baseline.results { before["\(r.adapter)\u{0}\(r.scenario)"] = r }
        var regressions: [Change] = []
        var improvements: [Change] = []
        for b in baseline.results where b.outcome == .passed && inScope(b.adapter, b.scenario) {
            let n = now["\(b.adapter)\u{0}\(b.scenario)"]
            if n?.outcome != .passed {
                regressions.append(Change(adapter: b.adapter, scenario: b.scenario, before: .passed, after: n?.outcome,
                                          reason: n?.reason))
            } else if let n, Self.strength(n.fixture) < Self.strength(b.fixture) {
                regressions.append(Change(adapter: b.adapter, scenario: b.scenario, before: .passed, after: .passed,
                                          reason: "weaker evidence: \(b.fixture.rawValue) -> \(n.fixture.rawValue)"))
            }
        }
        for b in baseline.results where b.outcome == .lossy && inScope(b.adapter, b.scenario) {
            let n = now["\(b.adapter)\u{0}\(b.scenario)"]
            if n?.outcome != .lossy, n?.outcome != .passed {
                regressions.append(Change(adapter: b.adapter, scenario: b.scenario, before: .lossy, after: n?.outcome,
                                          reason: n?.reason))
            }
        }
        for n in current.results where n.outcome == .passed {
            let b = before["\(n.adapter)\u{0}\(n.scenario)"]
            if b?.outcome != .passed {
                improvements.append(Change(adapter: n.adapter, scenario: n.scenario, before: b?.outcome, after: .passed))
            }
        }
        self.regressions = regressions
        self.improvements = improvements
    }

    public var hasRegressions: Bool { !regressions.isEmpty }

    /// How much a pass proves: a real server (recorded or live) over a simulator of this project over nothing.
    static func strength(_ fixture: Fixture) -> Int {
        switch fixture {
        case .recorded, .live: 2
        case .simulated: 1
        case .none: 0
        }
    }

    /// What changed, for the terminal.
    public var summary: String {
        var out = ""
        if regressions.isEmpty {
            out += "baseline: no regressions\n"
        } else {
            out += "baseline: \(regressions.count) regression\(regressions.count == 1 ? "" : "s"):\n"
            for c in regressions { out += "  REGRESSION \(c)\n" }
        }
        if !improvements.isEmpty {
            out += "baseline: \(improvements.count) improvement\(improvements.count == 1 ? "" : "s") (refresh the baseline to keep them):\n"
            for c in improvements { out += "  improved \(c)\n" }
        }
        return out
    }
}
