public import Foundation

/// A clock for tests: stands still until moved, or ticks a fixed step each time it is read.
///
/// ```swift
/// let clock = TestClock(ISO8601.parse("2024-03-01T00:00:00.000Z")!)
/// let context = BackendContext(clock: clock.function)
/// clock.advance(by: 3600)
/// ```
public final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date
    private let step: TimeInterval

    /// - Parameters:
    ///   - start: the first time read.
    ///   - tick: seconds added after each read (0: the clock stands still until ``advance(by:)``).
    public init(_ start: Date = Date(timeIntervalSince1970: 1_735_689_600), tick: TimeInterval = 0) {
        current = start
        step = tick
    }

    /// The current time (then moved on by the tick, if any).
    public var now: Date {
        lock.withLock {
            let value = current
            current += step
            return value
        }
    }

    /// Moves the clock forward (or back, with a negative value).
    public func advance(by seconds: TimeInterval) { lock.withLock { current += seconds } }

    /// The clock as the function ``MBaaSCore/BackendContext`` takes.
    public var function: @Sendable () -> Date { { [self] in self.now } }
}

/// A thread-safe list, for collecting callbacks (progress, logs) from concurrent code.
public final class Collector<Element: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [Element] = []

    public init() {}

    public func append(_ item: Element) { lock.withLock { items.append(item) } }
    public var all: [Element] { lock.withLock { items } }
}
