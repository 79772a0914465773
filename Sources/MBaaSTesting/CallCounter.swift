import MBaaSCore

/// A counter for test doubles, safe to use from concurrent tasks and threads: how many times a handler, a fault or a
/// callback ran.
///
/// ```swift
/// let calls = CallCounter()
/// let stub = StubTransport { _ in calls.increment(); return .json(200, .object([:])) }
/// #expect(calls.value == 1)
/// ```
public final class CallCounter: Sendable {
    private let count = Locked(0)

    public init() {}

    /// Counts one more call.
    public func increment() { count.withLock { $0 += 1 } }

    /// Counts one more call and returns the count (1 for the first).
    public func next() -> Int { count.withLock { $0 += 1; return $0 } }

    /// The calls counted so far.
    public var value: Int { count.value }
}
