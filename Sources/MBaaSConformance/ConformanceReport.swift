public import MBaaSCore

/// The results of a conformance run, with renderers for the terminal, JSON, JUnit XML and Markdown.
///
/// The JSON form is read by other tools (and is the shape of the committed baseline); its keys are fixed:
///
/// ```json
/// {"suiteVersion":"1+3f2a9c1b",
///  "results":[{"adapter":"local","scenario":"objects.crud.basic","outcome":"passed","fixture":"live",
///              "reason":null,"durationMs":3}],
///  "summary":{"local":{"passed":40,"failed":0,"skipped":0,"errored":0,"lossy":0,
///                      "passedBy":{"recorded":0,"simulated":0,"live":40,"none":0}}}}
/// ```
/// (`summary` entries gain a `recorded` count only when something was recorded, and come in the order of
/// ``adapters``; `lossy` counts ``Outcome/lossy`` results, a declared loss that is not a pass, and is always
/// present: a reader of an older report takes a missing one as 0.) Each result's `fixture` says where its evidence came from (``Fixture``: `recorded` from a real
/// server, `simulated` by a simulator of this project, `live`, or `none`), and `passedBy` counts an adapter's passes
/// per fixture kind, so a pass against a simulator is never read as a pass against the vendor.
public struct ConformanceReport: Sendable, Hashable {
    public var suiteVersion: String
    public var results: [ScenarioResult]
    /// The adapters the matrix shows, in this order, results or not (an adapter without results shows as not
    /// run). Defaults to the adapters that have results, in the order they first appear.
    public var adapters: [String]

    /// - Parameter adapters: the matrix's columns in order (repeats dropped); a caller that lists adapters in an
    ///   order of its own (a tool's built-in adapters) passes ``ordered(_:by:)`` of them.
    public init(results: [ScenarioResult], suiteVersion: String = "unversioned", adapters: [String]? = nil) {
        self.results = results
        self.suiteVersion = suiteVersion
        self.adapters = ConformanceReport.unique(adapters ?? results.map(\.adapter))
    }

    /// Orders adapter names: those in `order` first, in that order, then the rest by name, without repeats.
    public static func ordered(_ names: [String], by order: [String] = []) -> [String] {
        let unique = Array(Set(names))
        return unique.sorted { a, b in
            let ia = order.firstIndex(of: a) ?? Int.max, ib = order.firstIndex(of: b) ?? Int.max
            return ia != ib ? ia < ib : a < b
        }
    }

    /// The names in their first order, without repeats.
    static func unique(_ names: [String]) -> [String] {
        var seen = Set<String>()
        return names.filter { seen.insert($0).inserted }
    }

    /// Counts of each outcome.
    public struct Counts: Sendable, Hashable {
        public var passed = 0, failed = 0, skipped = 0, errored = 0, recorded = 0
        /// Known losses (``Outcome/lossy``): not passes.
        public var lossy = 0
        /// Passes per fixture kind (every kind present, zero when none).
        public var passedBy: [Fixture: Int] = Dictionary(uniqueKeysWithValues: Fixture.allCases.map { ($0, 0) })
        public init() {}
        public var total: Int { passed + failed + skipped + errored + recorded + lossy }
        /// The scenarios that ran: every result but a skip (a pass, a failure, a loss, an error, a recording).
        public var ran: Int { total - skipped }
        /// Whether most results are skips (more skipped than ran): such a run proves little, and the table and
        /// Markdown reports say so (`mbaas conformance --min-run` turns it into an exit status).
        public var mostlySkipped: Bool { skipped > ran }
        /// Counts a result: its outcome and, for a pass, its fixture kind.
        public mutating func add(_ result: ScenarioResult) {
            add(result.outcome)
            if result.outcome == .passed { passedBy[result.fixture, default: 0] += 1 }
        }
        public mutating func add(_ outcome: Outcome) {
            switch outcome {
            case .passed: passed += 1
            case .failed: failed += 1
            case .lossy: lossy += 1
            case .skipped: skipped += 1
            case .errored: errored += 1
            case .recorded: recorded += 1
            }
        }
        public subscript(outcome: Outcome) -> Int {
            switch outcome {
            case .passed: passed
            case .failed: failed
            case .lossy: lossy
            case .skipped: skipped
            case .errored: errored
            case .recorded: recorded
            }
        }
    }

    /// Counts per adapter.
    public var summary: [String: Counts] {
        results.reduce(into: [:]) { $0[$1.adapter, default: Counts()].add($1) }
    }

    /// Counts over every result.
    public var totals: Counts { results.reduce(into: Counts()) { $0.add($1) } }

    /// Whether anything failed, errored or was only recorded (the CLI then exits 1).
    public var hasProblems: Bool { results.contains { $0.outcome == .failed || $0.outcome == .errored || $0.outcome == .recorded } }

    /// Whether any result is a known loss (``Outcome/lossy``; the CLI then exits 10 when nothing worse happened).
    public var hasLosses: Bool { results.contains { $0.outcome == .lossy } }

    /// The adapters (in the order of ``adapters``) whose results are mostly skips (``Counts/mostlySkipped``).
    public var mostlySkippedAdapters: [String] {
        let counts = summary
        return adapters.filter { counts[$0]?.mostlySkipped == true }
    }

    /// The adapters (in the order of ``adapters``, those with results) that ran fewer scenarios than `minimum`
    /// asks, each with its counts: what `mbaas conformance --min-run` checks.
    public func belowMinimumRun(_ minimum: MinimumRun) -> [(adapter: String, counts: Counts)] {
        let counts = summary
        return adapters.compactMap { adapter in
            guard let c = counts[adapter], c.total > 0, c.ran < minimum.required(of: c.total) else { return nil }
            return (adapter, c)
        }
    }

    /// The scenario groups, in the order they first appear.
    public var groups: [String] {
        var seen: [String] = []
        for r in results where !seen.contains(r.group) { seen.append(r.group) }
        return seen
    }

    /// The result of a pair, if it ran.
    public func result(adapter: String, scenario: String) -> ScenarioResult? {
        results.first { $0.adapter == adapter && $0.scenario == scenario }
    }

    // MARK: JSON

    /// The JSON report (fixed keys, see the type's documentation).
    public var json: JSON {
        var summary = JSONObject()
        let counts = self.summary
        for adapter in ConformanceReport.ordered(Array(counts.keys), by: adapters) {
            let c = counts[adapter]!
            var o: JSONObject = [
                "passed": .int(Int64(c.passed)), "failed": .int(Int64(c.failed)),
                "skipped": .int(Int64(c.skipped)), "errored": .int(Int64(c.errored)),
                "lossy": .int(Int64(c.lossy)),
            ]
            if c.recorded > 0 { o["recorded"] = .int(Int64(c.recorded)) }
            o["passedBy"] = .object(JSONObject(Fixture.allCases.map { ($0.rawValue, JSON.int(Int64(c.passedBy[$0] ?? 0))) }))
            summary[adapter] = .object(o)
        }
        return .object([
            "suiteVersion": .string(suiteVersion),
            "results": .array(results.map(\.json)),
            "summary": .object(summary),
        ])
    }

    /// The JSON report as pretty-printed text with a trailing newline (stable, diffable: the baseline format).
    public var jsonText: String { json.printed([.pretty]) + "\n" }

    /// Reads a JSON report (or a baseline). `summary` is recomputed from the results.
    public init(json: JSON) throws(MBaaSError) {
        guard let items = json["results"]?.arrayValue else {
            throw MBaaSError(.invalidRequest, "a conformance report needs a 'results' array")
        }
        var results: [ScenarioResult] = []
        for item in items { results.append(try ScenarioResult(json: item)) }
        // The summary lists the adapters in the report's order (an adapter shown without results has no entry).
        let order = json["summary"]?.objectValue?.keys ?? []
        self.init(results: results, suiteVersion: json["suiteVersion"]?.stringValue ?? "unversioned",
                  adapters: order + results.map(\.adapter))
    }
}
