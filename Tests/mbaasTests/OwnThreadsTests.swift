import Foundation
import MBaaSTesting
import Testing

@Suite("CLI tests run off the cooperative pool", .ownThreads)
struct OwnThreadsTests {
    @Test("a synchronous test body runs on a thread of its own")
    func synchronousBody() {
        #expect(OwnThreadsTrait.isOnOwnThread)
    }

    @Test("an asynchronous body, after an await and in its child tasks, stays off the pool")
    func asynchronousBody() async throws {
        try await Task.sleep(for: .milliseconds(1))
        #expect(onOwnThread())
        let own = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<4 { group.addTask { onOwnThread() } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(own == [true, true, true, true])
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

/// Whether the caller's job runs on one of ``OwnThreadsExecutor``'s threads (a synchronous function, so that an async
/// test asks about the job it is in).
func onOwnThread() -> Bool { OwnThreadsTrait.isOnOwnThread }

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
