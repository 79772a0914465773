import Foundation
public import Testing

/// Runs every job of a test on a thread of its own, never on one of Swift's cooperative threads.
///
/// Tests that wait synchronously (`Process.waitUntilExit()`, blocking pipe reads, semaphores) hold the thread they
/// run on. `swift test` runs every test target in one process with one cooperative pool, as wide as the cores: two
/// such waits on a two-core machine stall every other test of the run, in-process servers included, for as long as
/// they wait. A test scoped by ``OwnThreadsTrait`` (`@Suite(.ownThreads)`) prefers this executor, so its body, what
/// it awaits and its child tasks run on threads started for them.
///
/// A thread per job: simple and never starved, and too slow for anything but tests. Unstructured tasks (`Task {}`)
/// a test starts do not inherit the preference and run on the pool, as they would anyway.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
public final class OwnThreadsExecutor: TaskExecutor {
    public static let shared = OwnThreadsExecutor()

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        // A thread per job: a job that blocks holds only its own thread, whatever else is waiting.
        Thread {
            Thread.current.threadDictionary[OwnThreadsTrait.marker] = true
            Thread.current.name = OwnThreadsTrait.threadName
            job.runSynchronously(on: executor)
        }.start()
    }
}

/// Scopes each test of a suite (recursively), or one test, to ``OwnThreadsExecutor``: `@Suite(.ownThreads)`.
///
/// At most as many such tests as there are cores run at once, process-wide (``OwnThreadsTrait/running``): the pool
/// used to hold them to that, and each runs child processes that need the cores. A test waiting for its turn holds
/// no thread. Before macOS 15 and iOS 18 (no task executors) the test runs as it would without the trait.
public struct OwnThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    public init() {}
    public var isRecursive: Bool { true }

    /// The name of ``OwnThreadsExecutor``'s threads, for debuggers and `top -H`, set from within (Linux ignores a
    /// name given before the thread starts). Only mostly: Foundation's `Thread.name` names the thread `start()`
    /// recorded, and a new thread can get there first, keeping the name it inherited. Ask
    /// ``isOnOwnThread`` instead.
    public static let threadName = "mbaas-test"

    /// Whether the caller runs on one of ``OwnThreadsExecutor``'s threads (a synchronous question: an asynchronous
    /// caller may move between threads at each suspension).
    public static var isOnOwnThread: Bool { Thread.current.threadDictionary[marker] as? Bool == true }

    /// The key ``OwnThreadsExecutor`` marks its threads' dictionaries with.
    static let marker = "MBaaSTesting.OwnThreadsExecutor"

    /// The turns of tests under this trait: as many at once as there are cores, at least 2.
    public static let running = AsyncLock(permits: max(2, ProcessInfo.processInfo.activeProcessorCount))

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? { testCase == nil ? nil : self }

    /// Whether the current task already holds a turn (the trait given twice, on a suite and on its test, takes one).
    @TaskLocal static var holdsTurn = false

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        @Sendable func run() async throws {
            if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *) {
                try await withTaskExecutorPreference(OwnThreadsExecutor.shared) { try await function() }
            } else {
                try await function()
            }
        }
        if Self.holdsTurn { return try await run() }
        try await Self.running.withLock { try await Self.$holdsTurn.withValue(true) { try await run() } }
    }
}

extension Trait where Self == OwnThreadsTrait {
    /// Runs the tests on threads of their own (``OwnThreadsExecutor``), off Swift's cooperative pool.
    public static var ownThreads: Self { OwnThreadsTrait() }
}

