import MBaaSCore

/// The outcome of one (adapter, scenario) pair.
public enum Outcome: String, Sendable, Hashable, Codable, CaseIterable, Comparable {
    /// Every step met its expectations (and, on replay, every recorded interaction was used).
    case passed
    /// A step did not do what the contract says; the reason holds the difference.
    case failed
    /// A capability the scenario requires is missing; the reason comes from ``Capabilities/missing(_:)``.
    /// Never counted as a pass.
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

/// The result of running one scenario against one adapter.
public struct ScenarioResult: Sendable, Hashable {
    public var adapter: String
    /// The scenario id.
    public var scenario: String
    public var outcome: Outcome
    /// Why it did not pass: the difference, the missing capability, the harness error. `nil` for a pass.
    public var reason: String?
    public var durationMs: Int

    public init(adapter: String, scenario: String, outcome: Outcome, reason: String? = nil, durationMs: Int = 0) {
        self.adapter = adapter
        self.scenario = scenario
        self.outcome = outcome
        self.reason = reason
        self.durationMs = durationMs
    }

    /// The scenario's group: the first component of its id (`objects` for `objects.crud.basic`).
    public var group: String {
        scenario.split(separator: ".", maxSplits: 1).first.map(String.init) ?? scenario
    }

    /// `{"adapter":..,"scenario":..,"outcome":..,"reason":..,"durationMs":..}`, the form of the JSON report.
    public var json: JSON {
        .object([
            "adapter": .string(adapter), "scenario": .string(scenario), "outcome": .string(outcome.rawValue),
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
        self.init(adapter: adapter, scenario: scenario, outcome: outcome, reason: json["reason"]?.stringValue,
                  durationMs: Int(json["durationMs"]?.intValue ?? 0))
    }
}
