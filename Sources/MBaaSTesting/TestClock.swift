public import Foundation
import MBaaSCore

/// A clock for tests: stands still until moved, or ticks a fixed step each time it is read.
///
/// ```swift
/// let clock = TestClock(ISO8601.parse("2024-03-01T00:00:00.000Z")!)
/// let context = BackendContext(clock: clock.function)
/// clock.advance(by: 3600)
/// ```
public final class TestClock: Sendable {
    private let current: Locked<Date>
    private let step: TimeInterval

    /// - Parameters:
    ///   - start: the first time read.
    ///   - tick: seconds added after each read (0: the clock stands still until ``advance(by:)``).
    public init(_ start: Date = Date(timeIntervalSince1970: 1_735_689_600), tick: TimeInterval = 0) {
        current = Locked(start)
        step = tick
    }

    /// The current time (then moved on by the tick, if any).
    public var now: Date {
        current.withLock {
            let value = $0
            $0 += step
            return value
        }
    }

    /// Moves the clock forward (or back, with a negative value).
    public func advance(by seconds: TimeInterval) { current.withLock { $0 += seconds } }

    /// Sets the time the clock reads next.
    public func set(to date: Date) { current.withLock { $0 = date } }

    /// The clock as the function ``MBaaSCore/BackendContext`` takes.
    public var function: @Sendable () -> Date { { [self] in self.now } }
}

/// A thread-safe list, for collecting callbacks (progress, logs) from concurrent code.
public final class Collector<Element: Sendable>: Sendable {
    private let items = Locked<[Element]>([])

    public init() {}

    public func append(_ item: Element) { items.withLock { $0.append(item) } }
    public var all: [Element] { items.value }
}
