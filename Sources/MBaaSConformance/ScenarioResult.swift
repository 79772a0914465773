public import MBaaSCore

/// The outcome of one (adapter, scenario) pair.
public enum Outcome: String, Sendable, Hashable, Codable, CaseIterable, Comparable {
    /// Every step met its expectations and the cleanup succeeded (and, on replay, every recorded interaction was
    /// used and no request went unmatched).
    case passed
    /// A step did not do what the contract says; the reason holds the difference.
    case failed
    /// A known loss: a step did not do what the contract says, on a backend that declares the limit the scenario
    /// names in `lossyUnder` (``Scenario/lossyUnder``: AppPot's `emptyStringsAbsent` reads an empty string back
    /// absent). The reason holds the declared limit and the difference (expected vs got). Never a pass: reports
    /// count it apart, and `mbaas conformance` exits non-zero (status 10) when nothing worse happened.
    case lossy
    /// A capability the scenario requires is missing (the reason comes from ``Capabilities/missing(_:)``), or one
    /// its `unless` excludes is declared. Never counted as a pass.
    case skipped
    /// The harness could not run the scenario: a missing or unusable cassette, a backend that would not open,
    /// an unexpected error from a step.
    case errored
    /// The scenario ran live and its cassette was written. Recording is never a pass: replay the cassette to
    /// get a verdict.
    case recorded

    /// Whether this outcome counts as a pass. Only ``passed`` does.
    public var isPass: Bool { self == .passed }

    public static func < (a: Outcome, b: Outcome) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}

/// Where the evidence behind a result came from.
///
/// A pass is only as strong as what answered the adapter: a real server (``recorded``, ``live``) proves the
/// adapter against the vendor; a simulator written by this project (``simulated``) proves only that the adapter
/// and that simulator agree; ``none`` means nothing answered at all (the scenario never reached a server, or it
/// did not run).
public enum Fixture: String, Sendable, Hashable, Codable, CaseIterable {
    /// Replayed from a cassette recorded from a real server.
    case recorded
    /// Replayed from a cassette authored by a simulator of this project: consistency, not proof of the vendor.
    case simulated
    /// Run live against a server or the embedded store.
    case live
    /// No server involved: the scenario never reaches the network (client-side checks), or it did not run.
    case none
}

/// The result of running one scenario against one adapter.
public struct ScenarioResult: Sendable, Hashable {
    public var adapter: String
    /// The scenario id.
    public var scenario: String
    public var outcome: Outcome
    /// Why it did not pass: the difference, the missing capability, the harness error. `nil` for a pass.
    public var reason: String?
    public var durationMs: Int
    /// Where the evidence came from (``Fixture/none`` for skips and results that never reached a server).
    public var fixture: Fixture

    public init(
        adapter: String, scenario: String, outcome: Outcome, reason: String? = nil, durationMs: Int = 0,
        fixture: Fixture = .none
    ) {
        self.adapter = adapter
        self.scenario = scenario
        self.outcome = outcome
        self.reason = reason
        self.durationMs = durationMs
        self.fixture = fixture
    }

    /// Whether the result is a skip for a capability reason: a feature the scenario requires is missing, or a
    /// feature whose presence excludes it is declared (`unless`). Every skip the runner makes is one of these.
    public var isCapabilitySkip: Bool {
        guard outcome == .skipped, let reason else { return false }
        return reason.hasPrefix("missing capability '") || reason.hasPrefix("declares capability '")
    }

    /// The scenario's group: the first component of its id (`objects` for `objects.crud.basic`).
    public var group: String {
        scenario.split(separator: ".", maxSplits: 1).first.map(String.init) ?? scenario
    }

    /// `{"adapter":..,"scenario":..,"outcome":..,"fixture":..,"reason":..,"durationMs":..}`, the form of the JSON
    /// report.
    public var json: JSON {
        .object([
            "adapter": .string(adapter), "scenario": .string(scenario), "outcome": .string(outcome.rawValue),
            "fixture": .string(fixture.rawValue),
            "reason": reason.map(JSON.string) ?? .null, "durationMs": .int(Int64(durationMs)),
        ])
    }

    /// Reads the JSON report form.
    public init(json: JSON) throws(MBaaSError) {
        guard let adapter = json["adapter"]?.stringValue, let scenario = json["scenario"]?.stringValue,
              let outcomeName = json["outcome"]?.stringValue
        else { throw MBaaSError(.invalidRequest, "a result needs string 'adapter', 'scenario' and 'outcome'") }
        guard let outcome = Outcome(rawValue: outcomeName) else {
            throw MBaaSError(.invalidRequest, "unknown outcome '\(outcomeName)' for \(adapter)/\(scenario)")
        }
        var fixture = Fixture.none
        if let name = json["fixture"] {
            guard let s = name.stringValue, let f = Fixture(rawValue: s) else {
                throw MBaaSError(.invalidRequest, "unknown fixture \(name.printed()) for \(adapter)/\(scenario) (known: \(Fixture.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            fixture = f
        }
        self.init(adapter: adapter, scenario: scenario, outcome: outcome, reason: json["reason"]?.stringValue,
                  durationMs: Int(json["durationMs"]?.intValue ?? 0), fixture: fixture)
    }
}
