package import Foundation

/// A value behind a lock: the one lock type of the package (migration, replay, adapters and test doubles share it).
///
/// Contract: `body` runs with the lock held and must not suspend (it is synchronous) nor call back into the same
/// `Locked` (the lock is not recursive). Not `Synchronization.Mutex`, which needs iOS 18 / macOS 15; an `NSLock`
/// works on every platform the package declares.
package final class Locked<State>: @unchecked Sendable {
    @usableFromInline let lock = NSLock()
    @usableFromInline var state: State

    @inlinable package init(_ state: State) { self.state = state }

    /// Runs `body` on the value with the lock held; what it returns or throws is passed on.
    @inlinable package func withLock<T, E: Error>(_ body: (inout State) throws(E) -> T) throws(E) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }

    /// A copy of the value, read under the lock.
    @inlinable package var value: State { withLock { $0 } }
}
