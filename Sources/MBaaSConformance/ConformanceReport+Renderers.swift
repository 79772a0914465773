import Foundation
import MBaaSCore

// MARK: - Terminal table

extension ConformanceReport {
    /// A cell of the matrix: `12/14 ✓ 2 skip`, with ` 1 ✗` for failures, ` 1 lossy` for known losses, ` 1 err`,
    /// ` 1 rec` when present;
    /// passes that no real server answered are shown apart: `52/60 ✓ (44 simulated, 4 no network) 8 skip`;
    /// `—` when nothing ran.
    public static func cell(_ c: Counts) -> String {
        guard c.total > 0 else { return "—" }
        var s = "\(c.passed)/\(c.total) ✓"
        let apart = [(Fixture.simulated, "simulated"), (.none, "no network")]
            .compactMap { kind, word in (c.passedBy[kind] ?? 0) > 0 ? "\(c.passedBy[kind]!) \(word)" : nil }
        if !apart.isEmpty { s += " (" + apart.joined(separator: ", ") + ")" }
        if c.skipped > 0 { s += " \(c.skipped) skip" }
        if c.failed > 0 { s += " \(c.failed) ✗" }
        if c.lossy > 0 { s += " \(c.lossy) lossy" }
        if c.errored > 0 { s += " \(c.errored) err" }
        if c.recorded > 0 { s += " \(c.recorded) rec" }
        return s
    }

    /// Counts for one adapter in one group (all groups when `group` is `nil`).
    public func counts(adapter: String, group: String? = nil) -> Counts {
        results.filter { $0.adapter == adapter && (group == nil || $0.group == group) }
            .reduce(into: Counts()) { $0.add($1) }
    }

    /// The terminal table without skip reasons (``table(listSkips:)``).
    public var table: String { table(listSkips: false) }

    /// The terminal table: one row per adapter, one column per scenario group and a total, then one line per
    /// pair that failed, lost data (lossy) or errored (and, when `listSkips`, was skipped) with its reason, the
    /// totals, and a warning per adapter whose results are mostly skips.
    public func table(listSkips: Bool = false) -> String {
        let groups = self.groups
        let header = ["adapter"] + groups + ["total"]
        var rows: [[String]] = []
        for adapter in adapters {
            let total = counts(adapter: adapter)
            if total.total == 0 {
                rows.append([adapter] + groups.map { _ in "—" } + ["not run"])
            } else {
                rows.append([adapter] + groups.map { ConformanceReport.cell(counts(adapter: adapter, group: $0)) }
                            + [ConformanceReport.cell(total)])
            }
        }
        var widths = header.map(\.displayWidth)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.displayWidth) } }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, c in c.padded(toDisplayWidth: widths[i]) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        var out = "MBaaSKit conformance (suite \(suiteVersion))\n"
        out += line(header) + "\n"
        out += line(widths.map { String(repeating: "-", count: $0) }) + "\n"
        for row in rows { out += line(row) + "\n" }
        let listed = results.filter {
            $0.outcome == .failed || $0.outcome == .lossy || $0.outcome == .errored || (listSkips && $0.outcome == .skipped)
        }
        if !listed.isEmpty {
            out += "\n"
            for r in listed {
                let mark = switch r.outcome {
                case .failed: "✗"
                case .lossy: "~"
                case .errored: "!"
                default: "-"
                }
                out += "\(mark) \(r.adapter) \(r.scenario) [\(r.outcome.rawValue)]: \(r.reason ?? "")\n"
            }
        }
        let t = totals
        out += "\n\(t.passed) passed, \(t.failed) failed, \(t.skipped) skipped, \(t.errored) errored"
        if t.recorded > 0 { out += ", \(t.recorded) recorded (not a pass: replay to verify)" }
        if t.lossy > 0 { out += ", \(t.lossy) lossy (a declared loss: not a pass)" }
        let by = Fixture.allCases.map { "\(t.passedBy[$0] ?? 0) \($0.rawValue)" }.joined(separator: ", ")
        out += "\npasses by evidence: \(by) (simulated: a simulator of this project answered, not the vendor)"
        for line in mostlySkippedWarnings { out += "\n" + line }

        return out + "\n"
    }
}

extension ConformanceReport {
    /// One line per adapter whose results are mostly skips: `warning: mine ran 1 of 119 scenarios (118 skipped): …`.
    var mostlySkippedWarnings: [String] {
        let counts = summary
        return mostlySkippedAdapters.map { adapter in
            let c = counts[adapter]!
            return "warning: \(adapter) ran \(c.ran) of \(c.total) scenarios (\(c.skipped) skipped): a skip is not a pass, so this run proves little (mbaas conformance --min-run N fails such a run)"
        }
    }
}

// MARK: - JUnit XML

extension ConformanceReport {
    /// JUnit XML: one `<testsuite>` per adapter, one `<testcase>` per scenario (`classname` is
    /// `<adapter>.<group>`); `failed` is `<failure>`, `errored` `<error>`, `skipped` `<skipped>`, `recorded`
    /// a `<failure type="recorded">` because recording is never a pass, and `lossy` a `<failure type="lossy">`
    /// (a declared loss is not a pass either).
    public var junitXML: String {
        func attr(_ s: String) -> String { XML.escape(s) }
        func seconds(_ ms: Int) -> String { String(format: "%.3f", Double(ms) / 1000) }
        let t = totals
        let totalMs = results.reduce(0) { $0 + $1.durationMs }
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        out += "<testsuites name=\"MBaaSKit conformance \(attr(suiteVersion))\" tests=\"\(t.total)\" "
            + "failures=\"\(t.failed + t.recorded + t.lossy)\" errors=\"\(t.errored)\" skipped=\"\(t.skipped)\" time=\"\(seconds(totalMs))\">\n"
        for adapter in adapters {
            let rs = results.filter { $0.adapter == adapter }
            let c = counts(adapter: adapter)
            let ms = rs.reduce(0) { $0 + $1.durationMs }
            out += "  <testsuite name=\"\(attr(adapter))\" tests=\"\(c.total)\" failures=\"\(c.failed + c.recorded + c.lossy)\" "
                + "errors=\"\(c.errored)\" skipped=\"\(c.skipped)\" time=\"\(seconds(ms))\">\n"
            for r in rs {
                let open = "    <testcase classname=\"\(attr(r.adapter)).\(attr(r.group))\" name=\"\(attr(r.scenario))\" time=\"\(seconds(r.durationMs))\""
                let reason = r.reason ?? ""
                switch r.outcome {
                case .passed:
                    out += open + "/>\n"
                case .failed:
                    out += open + ">\n      <failure message=\"\(attr(reason))\" type=\"failed\">\(XML.escape(reason))</failure>\n    </testcase>\n"
                case .lossy:
                    out += open + ">\n      <failure message=\"\(attr(reason))\" type=\"lossy\">\(XML.escape(reason))</failure>\n    </testcase>\n"
                case .recorded:
                    out += open + ">\n      <failure message=\"recorded, not a pass\" type=\"recorded\">\(XML.escape(reason))</failure>\n    </testcase>\n"
                case .errored:
                    out += open + ">\n      <error message=\"\(attr(reason))\" type=\"errored\">\(XML.escape(reason))</error>\n    </testcase>\n"
                case .skipped:
                    out += open + ">\n      <skipped message=\"\(attr(reason))\"/>\n    </testcase>\n"
                }
            }
            out += "  </testsuite>\n"
        }
        out += "</testsuites>\n"
        return out
    }
}

enum XML {
    /// Escapes text for XML attributes and content, dropping characters XML 1.0 cannot carry.
    static func escape(_ s: String) -> String {
        var out = ""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\n": out += "&#10;"
            case "\t": out += "&#9;"
            case "\r": out += "&#13;"
            default:
                let v = scalar.value
                if v < 0x20 || (0xFFFE...0xFFFF).contains(v) { out += "?" } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out
    }
}

// MARK: - Markdown

extension ConformanceReport {
    static func mark(_ result: ScenarioResult?) -> String {
        guard let result else { return "—" }
        if result.outcome == .passed, result.fixture == .simulated { return "✅ sim" }
        if result.outcome == .passed, result.fixture == .none { return "✅ offline" }
        return mark(result.outcome)
    }

    static func mark(_ outcome: Outcome?) -> String {
        switch outcome {
        case .passed?: "✅"
        case .failed?: "❌"
        case .lossy?: "〰️"
        case .skipped?: "⏭️"
        case .errored?: "💥"
        case .recorded?: "📼"
        case nil: "—"
        }
    }

    /// A Markdown page: a matrix of groups × adapters, a matrix of scenarios × adapters, and the reason of
    /// every pair that did not pass.
    public var markdown: String {
        let adapters = self.adapters
        func row(_ cells: [String]) -> String { "| " + cells.map { $0.replacingOccurrences(of: "|", with: "\\|") }.joined(separator: " | ") + " |\n" }
        var out = "# MBaaSKit conformance\n\n"
        let scenarioIDs = orderedScenarioIDs
        out += "Suite `\(suiteVersion)`, \(plural(scenarioIDs.count, "scenario")), \(plural(adapters.count, "adapter")).\n\n"
        out += "## By group\n\n"
        out += row(["Group"] + adapters)
        out += row(Array(repeating: "---", count: adapters.count + 1))
        for g in groups {
            out += row([g] + adapters.map { ConformanceReport.cell(counts(adapter: $0, group: g)) })
        }
        out += row(["**Total**"] + adapters.map { "**" + ConformanceReport.cell(counts(adapter: $0)) + "**" })
        out += "\n## By scenario\n\n"
        out += row(["Scenario"] + adapters)
        out += row(Array(repeating: "---", count: adapters.count + 1))
        for id in scenarioIDs {
            out += row(["`\(id)`"] + adapters.map { ConformanceReport.mark(result(adapter: $0, scenario: id)) })
        }
        out += "\n✅ passed against a real server (recorded or live) · ✅ sim passed against a simulator of this project "
            + "(consistency, not proof of the vendor) · ✅ offline passed without reaching a server · ❌ failed · "
            + "〰️ lossy (a loss the backend declares: not a pass) · "
            + "⏭️ skipped (capability missing) · 💥 errored · 📼 recorded (not a pass) · — not run\n"
        for line in mostlySkippedWarnings { out += "\n**\(line)**\n" }
        let notPassed = results.filter { $0.outcome != .passed }
        if !notPassed.isEmpty {
            out += "\n## Not passed\n\n"
            for r in notPassed {
                let reason = (r.reason ?? "").replacingOccurrences(of: "\n", with: " ")
                out += "- \(ConformanceReport.mark(r.outcome)) **\(r.adapter)** `\(r.scenario)` \(r.outcome.rawValue): \(reason)\n"
            }
        }
        return out
    }

    /// Scenario ids in the order they first appear.
    var orderedScenarioIDs: [String] {
        var seen: Set<String> = []
        return results.compactMap { seen.insert($0.scenario).inserted ? $0.scenario : nil }
    }
}

func plural(_ n: Int, _ word: String) -> String { "\(n) \(word)\(n == 1 ? "" : "s")" }

// MARK: - Formats

extension ConformanceReport {
    /// The formats the CLI writes.
    public enum Format: String, Sendable, CaseIterable {
        case table, json, junit, markdown
    }

    /// The report in a format.
    public func rendered(_ format: Format) -> String {
        switch format {
        case .table: table()
        case .json: jsonText
        case .junit: junitXML
        case .markdown: markdown
        }
    }
}
