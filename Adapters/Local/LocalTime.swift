import Foundation
import MBaaSCore

/// Milliseconds since 1970, the resolution of every stored timestamp.
enum LocalTime {
    static func millis(_ date: Date) -> Int64 { ISO8601.millis(date) }
    static func date(_ millis: Int64) -> Date { Date(timeIntervalSince1970: Double(millis) / 1000) }
}
