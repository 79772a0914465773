public import Foundation

/// Why a store or a server stopped work for time: a query spent the matching budget a store gives it (the Local
/// store's `$regex` budget: 250 ms on one value, 1 s over all the values of one page or count), or a request ran past
/// the deadline a server gives every request (`mbaas serve --request-timeout`).
///
/// It is set as the ``MBaaSError/underlying`` of the error thrown (``MBaaSError/Kind/invalidRequest`` for a query
/// budget: the caller's query is what is too expensive; ``MBaaSError/Kind/unavailable`` for a request deadline), so
/// that a server in front of the store can answer its vendor's timeout-style error (``isTimeLimit(_:)``) without
/// reading the message.
public struct QueryTimeLimitExceeded: Error, Sendable, Hashable {
    /// Which limit was spent.
    public enum Scope: String, Sendable, Hashable {
        /// A query's matching budget in a store (one value, or all the values of one page or count).
        case query
        /// A server's deadline for one whole request.
        case request
    }

    /// The limit that was spent, in seconds.
    public var limit: TimeInterval
    /// Which limit it was.
    public var scope: Scope

    public init(limit: TimeInterval, scope: Scope = .query) {
        self.limit = limit
        self.scope = scope
    }

    /// Whether an error is work stopped for time (its ``MBaaSError/underlying`` is a ``QueryTimeLimitExceeded``).
    public static func isTimeLimit(_ error: MBaaSError) -> Bool { error.underlying is QueryTimeLimitExceeded }

    /// The limit behind an error stopped for time, or `nil`.
    public static func of(_ error: MBaaSError) -> QueryTimeLimitExceeded? { error.underlying as? QueryTimeLimitExceeded }
}
