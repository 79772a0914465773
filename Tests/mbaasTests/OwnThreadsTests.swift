import Foundation
import MBaaSTesting
import Testing

@Suite("CLI tests run off the cooperative pool", .ownThreads)
struct OwnThreadsTests {
    @Test("a synchronous test body runs on a thread of its own")
    func synchronousBody() {
        #expect(Thread.current.name == OwnThreadsTrait.threadName)
    }

    @Test("an asynchronous body, after an await and in its child tasks, stays off the pool")
    func asynchronousBody() async throws {
        try await Task.sleep(for: .milliseconds(1))
        #expect(currentThreadName() == OwnThreadsTrait.threadName)
        let names = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<4 { group.addTask { currentThreadName() } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(names == Array(repeating: OwnThreadsTrait.threadName, count: 4))
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
