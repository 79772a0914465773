import DequeModule
import Foundation
import MBaaSCore
#if canImport(Glibc)
import Glibc
#endif

// How the migration runs work at once, in one place: task-group fan-out (``concurrently(_:limit:_:)``), state calls on
// threads of their own (``offPool(_:)``, ``StateCallThreads``) and giving freed memory back (``releaseFreedMemory()``).
// Shared mutable pieces sit behind the package's one lock type, `Locked` (MBaaSCore).

/// Runs `body` for each item, up to `limit` at a time (at least one); the first error stops the others.
func concurrently<Items: Sequence>(
    _ items: Items, limit: Int, _ body: @escaping @Sendable (Items.Element) async throws -> Void
) async throws where Items.Element: Sendable {
    try await withThrowingTaskGroup(of: Void.self) { group in
        var inFlight = 0
        for item in items {
            if inFlight >= max(1, limit) {
                try await group.next()
                inFlight -= 1
            }
            group.addTask { try await body(item) }
            inFlight += 1
        }
        try await group.waitForAll()
    }
}

/// Gives the heap's free pages back to the system (glibc keeps what the copy freed, in every thread's arena): without
/// it, verification's working set stacks on what the copy left behind — measured on a 1M-record migration into
/// SQLite, the peak was reached in verification. No-op where the C library has no `malloc_trim` (looked up at run
/// time: Swift's Glibc module does not export `malloc.h`).
func releaseFreedMemory() {
    #if canImport(Glibc)
    typealias Trim = @convention(c) (Int) -> Int32
    if let symbol = dlsym(nil, "malloc_trim") { _ = unsafeBitCast(symbol, to: Trim.self)(0) }   // nil: RTLD_DEFAULT
    #endif
}

/// Runs a state call that may wait (a commit of thousands of mappings, or a transaction another task holds) on a
/// thread of its own, and suspends until it is done: waiting for the state database never holds one of Swift's
/// cooperative threads, which would stall every other task of the process (a server in the same process, the
/// migration's own reads) on a machine with few cores.
///
/// The call is dropped before the caller resumes: nothing it captured (the state, whose lock is released when it goes)
/// outlives the `await` on the queue's thread, so a state folder is free again as soon as its last user returns.
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    let call = OffPoolCall(body)
    return try await withCheckedThrowingContinuation { continuation in
        StateCallThreads.shared.submit {
            let result = call.run()
            continuation.resume(with: result)
        }
    }
}

/// One ``offPool(_:)`` call, given up as it runs.
private final class OffPoolCall<T: Sendable>: @unchecked Sendable {
    private var body: (@Sendable () throws -> T)?
    init(_ body: @escaping @Sendable () throws -> T) { self.body = body }

    /// Runs the call once and lets go of it (and of what it captured) before returning.
    func run() -> Result<T, any Error> {
        guard let body = body.take() else { return .failure(CancellationError()) }
        return Result(catching: body)
    }
}

/// Where ``offPool(_:)`` runs its calls: threads of their own, one per call under way (an idle one is reused, a new one
/// started when none is idle), so that a call waiting on the state database holds up neither another call that
/// would find it free nor Swift's cooperative threads. Not a dispatch queue: on Linux a concurrent queue's jobs run on
/// the default root queue's threads, the ones Swift's tasks run on (their thread names say so), so a call waiting
/// there would hold one of them. Their number is bounded in practice by the migration's concurrency.
final class StateCallThreads: Sendable {
    static let shared = StateCallThreads()
    private struct Queue {
        var jobs = Deque<@Sendable () -> Void>()
        /// Each idle thread waits on its own semaphore: one submit wakes exactly one, or starts a thread.
        var idle: [DispatchSemaphore] = []
    }
    private let queue = Locked(Queue())

    func submit(_ job: @escaping @Sendable () -> Void) {
        let wake: DispatchSemaphore? = queue.withLock { q in
            q.jobs.append(job)
            return q.idle.popLast()
        }
        if let wake { wake.signal(); return }
        // Named from within (Linux keeps 15 characters, and a name set before the start is not applied there).
        let thread = Thread { [self] in
            Thread.current.name = "mbaas-state"
            work()
        }
        thread.start()
    }

    private func work() {
        let mine = DispatchSemaphore(value: 0)
        while true {
            let job: (@Sendable () -> Void)? = queue.withLock { q in
                if let job = q.jobs.popFirst() { return job }
                q.idle.append(mine)
                return nil
            }
            if let job { job() } else { mine.wait() }
        }
    }
}
