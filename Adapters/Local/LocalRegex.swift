import Foundation
import GRDB
import MBaaSCore

/// The `mbaas_regexp(value, pattern, options)` SQL function behind the `regex` operator.
///
/// Patterns are ICU syntax (NSRegularExpression), which covers the PCRE features the vendors' `$regex` use.
/// Options: `i` case-insensitive, `m` `^`/`$` match at line breaks, `s` `.` matches line breaks, `x` ignore
/// whitespace and `#` comments in the pattern. A non-text value never matches. Compiled patterns are cached per
/// connection (a query runs one pattern over many rows).
///
/// Matching is bounded twice: a pattern that backtracks catastrophically (`(a|a)+c` over a long run of `a`s) is
/// stopped after ``timeLimit`` on one value, and one query (a page or a count) may spend ``queryTimeLimit`` on all
/// its values together; past either the query fails with `invalidRequest` naming the pattern, instead of running for
/// minutes (a per-value bound alone let one request over 10k short values take minutes, and hold a reader from
/// other clients that long). ICU reports progress while matching; the match is abandoned there.
enum LocalRegex {
    /// The longest one value may take to match (documented: 250 ms).
    static let timeLimit: TimeInterval = 0.25
    /// The longest one query may spend matching, over all its values (documented: 1 s).
    static let queryTimeLimit: TimeInterval = 1
    /// The thread-dictionary key of the running query's deadline (``withQueryBudget(_:_:)``).
    private static let deadlineKey = "mbaas.regex.queryDeadline"

    /// The deadline of the query running on this thread, in uptime nanoseconds.
    private final class Deadline {
        let nanoseconds: UInt64
        init(_ nanoseconds: UInt64) { self.nanoseconds = nanoseconds }
    }

    /// Runs a query's statements (`body`, on the database thread that calls `mbaas_regexp`) with one matching budget
    /// of `limit` for every value they match.
    static func withQueryBudget<T>(_ limit: TimeInterval = queryTimeLimit, _ body: () throws -> T) rethrows -> T {
        let dictionary = Thread.current.threadDictionary
        dictionary[deadlineKey] = Deadline(DispatchTime.now().uptimeNanoseconds + UInt64(limit * 1e9))
        defer { dictionary.removeObject(forKey: deadlineKey) }
        return try body()
    }
    /// Marks the SQLite error raised when ``timeLimit`` or ``queryTimeLimit`` is exceeded, so
    /// ``LocalStore/mapError(_:)`` reports it as `invalidRequest` with a ``QueryTimeLimitExceeded`` underneath (the
    /// emulator's dialects answer their vendor's timeout-style error for it).
    static let timeoutMarker = "mbaas-regex-timeout: "

    /// Whether `regex` matches `text`, giving up after `limit` seconds (then throws `invalidRequest`).
    static func matches(_ regex: NSRegularExpression, _ text: String, limit: TimeInterval = timeLimit) throws(MBaaSError) -> Bool {
        let range = NSRange(text.startIndex..<text.endIndex, in: text)
        let now = DispatchTime.now().uptimeNanoseconds
        let queryDeadline = (Thread.current.threadDictionary[deadlineKey] as? Deadline)?.nanoseconds ?? .max
        let spent = {
            MBaaSError(.invalidRequest, "the regular expression '\(regex.pattern)' used up this query's matching budget of \(Int(queryTimeLimit * 1000)) ms over all its values and was stopped; avoid nested repetition such as (a|a)+, or narrow the query with other conditions",
                       underlying: QueryTimeLimitExceeded(limit: queryTimeLimit))
        }
        if now >= queryDeadline { throw spent() }
        let deadline = min(now + UInt64(limit * 1e9), queryDeadline)
        var matched = false, timedOut = false
        regex.enumerateMatches(in: text, options: [.reportProgress], range: range) { result, _, stop in
            if result != nil {
                matched = true
                stop.pointee = true
            } else if DispatchTime.now().uptimeNanoseconds > deadline {
                timedOut = true
                stop.pointee = true
            }
        }
        if timedOut {
            if deadline == queryDeadline { throw spent() }
            throw MBaaSError(.invalidRequest, "the regular expression '\(regex.pattern)' took more than \(Int(limit * 1000)) ms on one value (\(text.utf16.count) characters) and was stopped; avoid nested repetition such as (a|a)+",
                             underlying: QueryTimeLimitExceeded(limit: limit))
        }
        return matched
    }

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
            throw MBaaSError(.invalidRequest, "invalid regular expression '\(pattern)': not valid ICU regular expression syntax (unbalanced parentheses or brackets, a dangling quantifier, an unknown escape)")
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
            do {
                return try matches(regex, text)
            } catch let error as MBaaSError {
                throw DatabaseError(resultCode: .SQLITE_ERROR, message: timeoutMarker + error.message)
            }
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

/// Admits queries with a `regex` a few at a time, before they take a database connection.
///
/// Each such query may spend its whole matching budget (``LocalRegex/queryTimeLimit``, 1 s). Without a gate, eight
/// of them at once held an in-memory store's one connection for 8 s, queued in front of every other request, and took
/// every reader of a file's pool. Waiting here instead, outside the database, they leave a connection to the other
/// queries: at most one admitted at a time on a store with one connection (in memory), at most two on a pool of
/// readers (GRDB's five by default), so other clients' queries wait at most for one budget, and on a file not at all
/// for a reader. Measured in docs/emulator.md ("Queries stopped for time").
actor LocalRegexGate {
    private var running = 0
    private var nextTicket = 0
    /// Waiting queries in arrival order: their ticket and how to let them in (or turn them away when cancelled).
    private var waiting: [(ticket: Int, resume: CheckedContinuation<Void, any Error>)] = []

    /// Runs `body` once fewer than `limit` gated queries run. A query cancelled while it waits leaves the queue at
    /// once with `CancellationError` (the server's request deadline does not wait for its turn).
    func run<T: Sendable>(limit: Int, _ body: @Sendable () async throws -> T) async throws -> T {
        try Task.checkCancellation()
        if running >= limit {
            nextTicket += 1
            let ticket = nextTicket
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { waiting.append((ticket, $0)) }
            } onCancel: {
                Task { await self.cancel(ticket) }
            }
        } else {
            running += 1
        }
        // The slot is this query's from here (handed over by `leave` or taken above) until `leave`.
        defer { leave() }
        return try await body()
    }

    /// Hands the slot to the first waiting query, or frees it.
    private func leave() {
        if waiting.isEmpty { running -= 1 } else { waiting.removeFirst().resume.resume() }
    }

    /// Turns a waiting query away (it never took a slot); one already let in runs as usual.
    private func cancel(_ ticket: Int) {
        guard let i = waiting.firstIndex(where: { $0.ticket == ticket }) else { return }
        waiting.remove(at: i).resume.resume(throwing: CancellationError())
    }
}
