public import Foundation
public import Testing

/// Runs every job of a test on a thread of its own, never on one of Swift's cooperative threads.
///
/// Tests that wait synchronously (`Process.waitUntilExit()`, blocking pipe reads, semaphores) hold the thread they
/// run on. `swift test` runs every test target in one process with one cooperative pool, as wide as the cores: two
/// such waits on a two-core machine stall every other test of the run, in-process servers included, for as long as
/// they wait. A test scoped by ``OwnThreadsTrait`` (`@Suite(.ownThreads)`) prefers this executor, so its body, what
/// it awaits and its child tasks run on threads started for them.
///
/// A thread per job: simple and never starved, and too slow for anything but tests.
public final class OwnThreadsExecutor: TaskExecutor {
    public static let shared = OwnThreadsExecutor()
    /// The name of the threads, set from within (Linux ignores a name given before the thread starts).
    public static let threadName = "mbaas-test"

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        // A thread per job: a job that blocks holds only its own thread, whatever else is waiting.
        Thread {
            Thread.current.name = Self.threadName
            job.runSynchronously(on: executor)
        }.start()
    }
}

/// Scopes each test of a suite (recursively), or one test, to ``OwnThreadsExecutor``: `@Suite(.ownThreads)`.
public struct OwnThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    public init() {}
    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? { testCase == nil ? nil : self }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        try await withTaskExecutorPreference(OwnThreadsExecutor.shared) { try await function() }
    }
}

extension Trait where Self == OwnThreadsTrait {
    /// Runs the tests on threads of their own (``OwnThreadsExecutor``), off Swift's cooperative pool.
    public static var ownThreads: Self { OwnThreadsTrait() }
}

