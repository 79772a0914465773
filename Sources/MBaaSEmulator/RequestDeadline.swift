import Foundation
public import MBaaSCore

/// The server's deadline for every request (``EmulatorServer/requestTimeout``).
///
/// # Contract
/// - Each request's work runs in a task of its own, except a point read (``EmulatorDialect/isPointRead(_:)``: a
///   record by id), which runs in the request's task: nothing in it would stop on cancellation, so a task to cancel
///   would only cost its scheduling (about a tenth of the GETs per second measured by `Benchmarks/http-get.sh`).
///   One watchdog task per deadline (not a timer per request) wakes every tenth of the deadline (at least every
///   millisecond, at most every 250 ms) and cancels the work of every request past its deadline; it ends by itself
///   when no request is under way.
/// - The answer is always the work's own outcome, awaited: the deadline never answers for work still running.
///   Cancellation interrupts what listens for it: GRDB's asynchronous reads and writes (`sqlite3_interrupt`) and every
///   `await` that checks for it. A synchronous step (the Local store's point read, a regular expression on one
///   value: at most 250 ms) runs to its end first; PostgreSQL's client (postgres-nio) does not cancel a statement the
///   server is running, so a request on PostgreSQL is answered when its statement ends.
/// - If the work was cancelled for time, or ended past its deadline before the watchdog came round, and did not
///   succeed (``EmulatorDialect/isSuccess(_:)``), the answer is the dialect's timeout-style error
///   (``EmulatorDialect/answer(_:to:)`` for an ``MBaaSCore/MBaaSError/Kind/unavailable`` error with a
///   ``MBaaSCore/QueryTimeLimitExceeded`` of scope `request`). A success it still reached (a write that
///   committed before it noticed) is answered as the success it is: no client is told a write failed when it was made.
/// - A request whose own task is cancelled (the server shutting down) cancels its work, which answers as it does.
public final class RequestDeadline: Sendable {
    /// How long one request may run.
    public let limit: Duration
    private let watch: Watch

    public init(_ limit: Duration) {
        self.limit = limit
        let nanoseconds = Self.nanoseconds(limit)
        watch = Watch(tick: min(max(nanoseconds / 10, 1_000_000), 250_000_000))
    }

    /// Answers `request` with `dialect` within ``limit`` (see the type's contract).
    ///
    /// The work is a child task (`async let`: allocated from the request task's own allocator, cancelled with it);
    /// the watchdog cancels that child alone, so the request's task, and the connection it serves, go on.
    public func answer(_ request: TransportRequest, by dialect: any EmulatorDialect) async -> TransportResponse {
        let deadline = DispatchTime.now().uptimeNanoseconds &+ Self.nanoseconds(limit)
        if dialect.isPointRead(request) {
            // Nothing in a point read waits for anything a cancellation would stop (the dialect's contract): it runs in
            // the request's own task, with no task of its own for the watchdog, and is judged by its end alone.
            let response = await dialect.respond(to: request)
            return DispatchTime.now().uptimeNanoseconds > deadline ? late(response, request, dialect) : response
        }
        let watch = self.watch
        async let work: (response: TransportResponse, cancelled: Bool) = {
            let key = withUnsafeCurrentTask { watch.add(deadline: deadline, task: $0!) }
            let response = await dialect.respond(to: request)
            return (response, watch.remove(key))
        }()
        let (response, cancelled) = await work
        // Past the deadline also when the watchdog had not yet run (a loaded machine): the same answer either way.
        return cancelled || DispatchTime.now().uptimeNanoseconds > deadline ? late(response, request, dialect) : response
    }

    /// The answer to work that was stopped or ended past its deadline: its own success, else the timeout-style error.
    private func late(_ response: TransportResponse, _ request: TransportRequest, _ dialect: any EmulatorDialect) -> TransportResponse {
        guard !dialect.isSuccess(response) else { return response }
        return dialect.answer(MBaaSError(
            .unavailable,
            "the request did not finish within the server's deadline of \(Self.shown(limit)) (mbaas serve --request-timeout) and was stopped; narrow the query or try again",
            underlying: QueryTimeLimitExceeded(limit: Double(Self.nanoseconds(limit)) / 1e9, scope: .request)), to: request)
    }

    /// `30 s`, `1.5 s`, `20 ms`.
    static func shown(_ d: Duration) -> String {
        let ns = nanoseconds(d)
        if ns >= 1_000_000_000 {
            let s = Double(ns) / 1e9
            return s == s.rounded() ? "\(Int(s)) s" : String(format: "%.3g s", s)
        }
        return "\(Int((Double(ns) / 1e6).rounded())) ms"
    }

    static func nanoseconds(_ d: Duration) -> UInt64 {
        let c = d.components
        return UInt64(max(0, c.seconds)) * 1_000_000_000 + UInt64(max(0, c.attoseconds) / 1_000_000_000)
    }

    /// The requests under way, their deadlines and their work's tasks; the watchdog task runs while any is listed.
    ///
    /// A listed task is alive: it unlists itself (``remove(_:)``, under the lock) before it ends, and the watchdog
    /// cancels only while holding that lock, so it never reaches a task that has ended. (Swift's documentation asks not
    /// to keep an `UnsafeCurrentTask` beyond its closure because nothing else keeps the task alive; here the listing's
    /// lifetime is inside the task's, and `cancel()` may be called from any thread.) Cancelling runs the task's
    /// cancellation handlers on the watchdog's thread; none of them takes this lock.
    final class Watch: @unchecked Sendable {
        private struct Entry {
            var deadline: UInt64
            var task: UnsafeCurrentTask
            var fired = false
        }
        private let lock = NSLock()
        private var entries: [UInt64: Entry] = [:]
        private var nextKey: UInt64 = 0
        private var watching = false
        private let tick: UInt64

        init(tick: UInt64) { self.tick = tick }

        /// Lists the work's task (the calling task); starts the watchdog when none runs.
        func add(deadline: UInt64, task: UnsafeCurrentTask) -> UInt64 {
            lock.lock()
            nextKey &+= 1
            let key = nextKey
            entries[key] = Entry(deadline: deadline, task: task)
            let start = !watching
            watching = true
            lock.unlock()
            if start { Task.detached { await self.run() } }
            return key
        }

        /// Unlists a request; `true` when the watchdog cancelled it for time.
        func remove(_ key: UInt64) -> Bool {
            lock.lock()
            defer { lock.unlock() }
            return entries.removeValue(forKey: key)?.fired ?? false
        }

        private func run() async {
            while true {
                try? await Task.sleep(nanoseconds: tick)
                if sweep(now: DispatchTime.now().uptimeNanoseconds) { return }
            }
        }

        /// Cancels the tasks past their deadline (under the lock, see the type); `true` when none is listed (the
        /// watchdog then ends, and the next request starts another).
        private func sweep(now: UInt64) -> Bool {
            lock.lock()
            defer { lock.unlock() }
            for (key, entry) in entries where !entry.fired && entry.deadline <= now {
                entries[key]?.fired = true
                entry.task.cancel()
            }
            if entries.isEmpty { watching = false }
            return entries.isEmpty
        }
    }
}
