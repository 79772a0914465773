import Foundation
import GRDB
import MBaaSCore

/// The `mbaas_regexp(value, pattern, options)` SQL function behind the `regex` operator.
///
/// Patterns are ICU syntax (NSRegularExpression), which covers the PCRE features the vendors' `$regex` use.
/// Options: `i` case-insensitive, `m` `^`/`$` match at line breaks, `s` `.` matches line breaks, `x` ignore
/// whitespace and `#` comments in the pattern. A non-text value never matches. Compiled patterns are cached per
/// connection (a query runs one pattern over many rows).
enum LocalRegex {
    /// Compiles a pattern; an invalid pattern or option is ``MBaaSError/Kind/invalidRequest``.
    static func compile(_ pattern: String, options: String) throws(MBaaSError) -> NSRegularExpression {
        var o: NSRegularExpression.Options = []
        for c in options {
            switch c {
            case "i": o.insert(.caseInsensitive)
            case "m": o.insert(.anchorsMatchLines)
            case "s": o.insert(.dotMatchesLineSeparators)
            case "x": o.insert(.allowCommentsAndWhitespace)
            default: throw MBaaSError(.invalidRequest, "regex option '\(c)' is not one of i, m, s, x")
            }
        }
        do {
            return try NSRegularExpression(pattern: pattern, options: o)
        } catch {
            throw MBaaSError(.invalidRequest, "invalid regular expression '\(pattern)': \(error.localizedDescription)")
        }
    }

    /// A new function instance with its own pattern cache (register one per connection).
    static func function() -> DatabaseFunction {
        let cache = Cache()
        return DatabaseFunction("mbaas_regexp", argumentCount: 3, pure: true) { args in
            guard let text = String.fromDatabaseValue(args[0]),
                  let pattern = String.fromDatabaseValue(args[1]) else { return false }
            let options = String.fromDatabaseValue(args[2]) ?? ""
            let regex = try cache.regex(pattern, options)
            let range = NSRange(text.startIndex..<text.endIndex, in: text)
            return regex.firstMatch(in: text, options: [], range: range) != nil
        }
    }

    /// The last few compiled patterns of one connection. SQLite calls a connection's functions from one thread at a
    /// time; the lock keeps this safe regardless.
    private final class Cache: @unchecked Sendable {
        private let lock = NSLock()
        private var entries: [String: NSRegularExpression] = [:]

        func regex(_ pattern: String, _ options: String) throws -> NSRegularExpression {
            let key = options + "/" + pattern
            lock.lock()
            defer { lock.unlock() }
            if let r = entries[key] { return r }
            let r = try LocalRegex.compile(pattern, options: options)
            if entries.count >= 16 { entries.removeAll(keepingCapacity: true) }
            entries[key] = r
            return r
        }
    }
}
