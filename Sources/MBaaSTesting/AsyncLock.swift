import Foundation
import MBaaSCore

/// A lock for async code: tasks that share a live resource (one server's schema, a port) take turns, first come
/// first served, across suites and test targets of one process. With `permits` above 1, a semaphore: that many
/// hold it at once. Waiting holds no thread.
///
/// ```swift
/// try await AsyncLock.named("pocketbase-users").withLock { try await migrateUsers() }
/// ```
public actor AsyncLock {
    private let permits: Int
    private var holders = 0
    private var waiters: [CheckedContinuation<Void, Never>] = []

    public init(permits: Int = 1) { self.permits = max(1, permits) }

    /// Runs `body` while holding the lock (released when it returns or throws).
    public func withLock<T: Sendable>(_ body: @Sendable () async throws -> T) async rethrows -> T {
        await acquire()
        defer { release() }
        return try await body()
    }

    private func acquire() async {
        if holders < permits { holders += 1; return }
        await withCheckedContinuation { waiters.append($0) }
    }

    /// A waiter takes over the permit; with none, it is given back.
    private func release() {
        if waiters.isEmpty { holders -= 1 } else { waiters.removeFirst().resume() }
    }

    private static let registry = NamedLocks()

    /// The process-wide lock of that name (created on first use).
    public static func named(_ name: String) -> AsyncLock { registry.lock(name) }
}

private final class NamedLocks: Sendable {
    private let locks = Locked<[String: AsyncLock]>([:])

    func lock(_ name: String) -> AsyncLock {
        locks.withLock { locks in
            if let existing = locks[name] { return existing }
            let created = AsyncLock()
            locks[name] = created
            return created
        }
    }
}

#if canImport(Testing)
public import Testing

/// A Swift Testing trait that runs a test (or a whole suite) while holding ``AsyncLock/named(_:)``: tests in
/// different suites or targets that change one live server's shared state take turns.
///
/// ```swift
/// @Test(.exclusive("pocketbase-users")) func importsUsers() async throws { … }
/// ```
public struct ExclusiveAccessTrait: TestTrait, SuiteTrait, TestScoping {
    public let name: String

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        try await AsyncLock.named(name).withLock { try await function() }
    }
}

extension Trait where Self == ExclusiveAccessTrait {
    /// Runs the test or suite while holding the process-wide lock `name`.
    public static func exclusive(_ name: String) -> Self { ExclusiveAccessTrait(name: name) }
}
#endif
