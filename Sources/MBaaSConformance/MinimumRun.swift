import Foundation
public import MBaaSCore

/// How many scenarios an adapter must run (not skip) for a run to count: a number (`80`) or a percentage of the
/// scenarios selected (`60%`). `mbaas conformance --min-run` takes either form and exits 11 when an adapter ran
/// fewer (``ConformanceReport/belowMinimumRun(_:)``); a skip is never a pass, and a run that is mostly skips
/// proves little however clean it looks.
public enum MinimumRun: Sendable, Hashable, CustomStringConvertible {
    /// At least this many scenarios ran.
    case count(Int)
    /// At least this percentage (0 to 100) of the scenarios selected for the adapter ran (rounded up).
    case percent(Int)

    /// Reads `N` or `P%`; anything else (negative, a fraction, a percentage above 100) is an error naming the
    /// problem.
    public init(parsing text: String) throws(MBaaSError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasSuffix("%") {
            guard let p = Int(trimmed.dropLast()), (0...100).contains(p) else {
                throw MBaaSError(.invalidRequest, "a minimum run percentage must be a whole number from 0% to 100%, got '\(text)'")
            }
            self = .percent(p)
        } else {
            guard let n = Int(trimmed), n >= 0 else {
                throw MBaaSError(.invalidRequest, "a minimum run must be a count of scenarios (e.g. 80) or a percentage (e.g. 60%), got '\(text)'")
            }
            self = .count(n)
        }
    }

    /// The number of scenarios that must run out of `total` selected.
    public func required(of total: Int) -> Int {
        switch self {
        case .count(let n): n
        case .percent(let p): (total * p + 99) / 100
        }
    }

    public var description: String {
        switch self {
        case .count(let n): "\(n)"
        case .percent(let p): "\(p)%"
        }
    }
}
