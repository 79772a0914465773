import Foundation
import Testing

/// Runs every job of a test on a thread of its own, never on one of Swift's cooperative threads.
///
/// The CLI tests wait for child processes synchronously (`waitUntilExit`, blocking pipe reads). Every test target
/// runs in one process with one cooperative pool, as wide as the cores (two here): two such waits on it would stall
/// every other test of the run, servers included, for as long as the children run. A test scoped by
/// ``OwnThreadsTrait`` prefers this executor, so its body and what it awaits run on threads started for them.
final class OwnThreadsExecutor: TaskExecutor {
    static let shared = OwnThreadsExecutor()
    /// The name of the threads, set from within (Linux ignores a name given before the thread starts).
    static let threadName = "mbaas-cli-test"

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        // A thread per job: a job that blocks holds only its own thread, whatever else is waiting.
        Thread {
            Thread.current.name = Self.threadName
            job.runSynchronously(on: executor)
        }.start()
    }
}

/// Scopes each test of a suite (recursively) to ``OwnThreadsExecutor``.
struct OwnThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? { testCase == nil ? nil : self }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        try await withTaskExecutorPreference(OwnThreadsExecutor.shared) { try await function() }
    }
}

extension Trait where Self == OwnThreadsTrait {
    /// Runs the tests on threads of their own (``OwnThreadsExecutor``), off Swift's cooperative pool.
    static var ownThreads: Self { OwnThreadsTrait() }
}

@Suite("CLI tests run off the cooperative pool", .ownThreads)
struct OwnThreadsTests {
    @Test("a synchronous test body runs on a thread of its own")
    func synchronousBody() {
        #expect(Thread.current.name == OwnThreadsExecutor.threadName)
    }

    @Test("an asynchronous body, after an await and in its child tasks, stays off the pool")
    func asynchronousBody() async throws {
        try await Task.sleep(for: .milliseconds(1))
        #expect(currentThreadName() == OwnThreadsExecutor.threadName)
        let names = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<4 { group.addTask { currentThreadName() } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(names == Array(repeating: OwnThreadsExecutor.threadName, count: 4))
    }

    @Test("four waits that block at once do not wait for one another")
    func blockingWaitsRunTogether() async {
        // Each blocks its thread until all four have started: on a pool as wide as two cores this would never end,
        // so the wait is bounded and the count checked.
        let started = Arrivals()
        let ended = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    started.arrive()
                    return started.waitForAll(4, timeout: 20)
                }
            }
            return await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        #expect(ended == 4)
    }
}

/// The name of the thread running the caller (a synchronous function: `Thread.current` is not for async code, which
/// may move between threads; here the caller wants the thread of the job it is in).
func currentThreadName() -> String? { Thread.current.name }

/// A count of arrivals that blocking callers wait on.
final class Arrivals: @unchecked Sendable {
    private let condition = NSCondition()
    private var count = 0
    func arrive() {
        condition.lock()
        count += 1
        condition.broadcast()
        condition.unlock()
    }
    func waitForAll(_ n: Int, timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while count < n { if !condition.wait(until: deadline) { return false } }
        return true
    }
}
