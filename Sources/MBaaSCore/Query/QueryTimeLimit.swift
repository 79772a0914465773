public import Foundation

/// Why a store stopped a query: it spent the time a store gives one request for its work (the Local store's
/// `$regex` budget: 250 ms on one value, 1 s over all the values of one page or count).
///
/// A store sets it as the ``MBaaSError/underlying`` of the ``MBaaSError/Kind/invalidRequest`` it throws (the
/// caller's query is what is too expensive), so that a server in front of the store can answer its vendor's
/// timeout-style error (``isTimeLimit(_:)``) without reading the message.
public struct QueryTimeLimitExceeded: Error, Sendable, Hashable {
    /// The limit that was spent, in seconds.
    public var limit: TimeInterval

    public init(limit: TimeInterval) { self.limit = limit }

    /// Whether an error is a query stopped for time (its ``MBaaSError/underlying`` is a ``QueryTimeLimitExceeded``).
    public static func isTimeLimit(_ error: MBaaSError) -> Bool { error.underlying is QueryTimeLimitExceeded }
}
