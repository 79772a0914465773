public import Foundation
public import MBaaSCore

/// Salesforce's datetime and date forms, read and written exactly.
///
/// - REST bodies carry datetimes as `2017-03-21T12:11:06.000+0000`: milliseconds and an offset without a colon
///   [capture: salesforce.md "Datetimes"; sdk: MobileSync parses `yyyy-MM-dd'T'HH:mm:ss.SSSZ`]. ``format(_:)``
///   always writes UTC (`+0000`); ``parse(_:)`` also reads `Z`, `±hh:mm`, `±hhmm` and no fraction.
/// - SOQL date literals are `2024-01-02` (``formatDate(_:)``); datetime literals are written in the REST form,
///   which MobileSync sends in its rewritten queries [sdk: salesforce.md "Sync-down on the wire"].
/// - `If-Unmodified-Since` takes an HTTP-date, `Tue, 02 Jan 2024 03:04:05 GMT` (``httpDate(_:)``), to the second
///   [sdk: Mobile SDK `testUpdateWithIfUnmodifiedSince`].
public enum SalesforceDateTime {
    /// `2024-01-02T03:04:05.000+0000` (UTC, truncated to the millisecond).
    public static func format(_ date: Date) -> String {
        let iso = ISO8601.format(date)
        guard iso.hasSuffix("Z") else { return iso }
        return String(iso.dropLast()) + "+0000"
    }

    /// Whether a string has exactly the REST datetime shape `yyyy-MM-ddTHH:mm:ss.SSS±hhmm` (and is a real instant).
    public static func isDateTimeString(_ s: String) -> Bool {
        let u = Array(s.utf8)
        guard u.count == 28 else { return false }
        let digits: [Int] = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22, 24, 25, 26, 27]
        guard digits.allSatisfy({ (48...57).contains(u[$0]) }), u[4] == 45, u[7] == 45, u[10] == 84, u[13] == 58,
              u[16] == 58, u[19] == 46, u[23] == 43 || u[23] == 45 else { return false }
        return parse(s) != nil
    }

    /// Reads `yyyy-MM-ddTHH:mm:ss[.SSS](Z|±hhmm|±hh:mm)`; `nil` for anything else (a date alone, a day the month
    /// does not have, no zone).
    public static func parse(_ text: String) -> Date? {
        var s = text
        let u = Array(s.utf8)
        guard u.count >= 20 else { return nil }
        let last = u[u.count - 1]
        if last == 90 || last == 122 { return ISO8601.parse(s) }
        // ±hhmm → ±hh:mm for the core's parser.
        if u.count >= 5, u[u.count - 5] == 43 || u[u.count - 5] == 45,
           u[(u.count - 4)...].allSatisfy({ (48...57).contains($0) }) {
            s = String(decoding: u[..<(u.count - 2)], as: UTF8.self) + ":" + String(decoding: u[(u.count - 2)...], as: UTF8.self)
            return ISO8601.parse(s)
        }
        if u.count >= 6, u[u.count - 6] == 43 || u[u.count - 6] == 45, u[u.count - 3] == 58 { return ISO8601.parse(s) }
        return nil
    }

    /// `2024-01-02`, the SOQL date literal of a date's UTC day.
    public static func formatDate(_ date: Date) -> String { String(ISO8601.format(date).prefix(10)) }

    /// Reads `yyyy-MM-dd` as midnight UTC; `nil` for anything else.
    public static func parseDate(_ text: String) -> Date? {
        guard text.utf8.count == 10 else { return nil }
        return ISO8601.parse(text + "T00:00:00.000Z")
    }

    private static let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `Tue, 02 Jan 2024 03:04:05 GMT` (RFC 9110 IMF-fixdate), the form of `If-Unmodified-Since`.
    public static func httpDate(_ date: Date) -> String {
        let iso = Array(ISO8601.format(date).utf8)
        func part(_ r: Range<Int>) -> String { String(decoding: iso[r], as: UTF8.self) }
        let seconds = Int64((date.timeIntervalSince1970).rounded(.down))
        let days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400
        let weekday = weekdays[Int(((days % 7) + 7) % 7)]
        let month = months[(Int(part(5..<7)) ?? 1) - 1]
        return "\(weekday), \(part(8..<10)) \(month) \(part(0..<4)) \(part(11..<19)) GMT"
    }

    /// Reads an IMF-fixdate (`Tue, 02 Jan 2024 03:04:05 GMT`); `nil` for anything else.
    public static func parseHTTPDate(_ text: String) -> Date? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[0].hasSuffix(","), parts[5] == "GMT", parts[1].count == 2, parts[3].count == 4,
              let m = months.firstIndex(of: String(parts[2])), parts[4].count == 8 else { return nil }
        let month = m + 1 < 10 ? "0\(m + 1)" : "\(m + 1)"
        return ISO8601.parse("\(parts[3])-\(month)-\(parts[1])T\(parts[4]).000Z")
    }
}
