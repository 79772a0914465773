import MBaaSCore
import NIOCore
import NIOPosix

/// Where the emulator's request handlers run: on SwiftNIO's event loops (the threads that read and write the
/// sockets), or on Swift concurrency's global pool.
///
/// Hummingbird reads each request on an event loop and, by default, runs its handler on the global concurrency pool,
/// so every request crosses threads twice, and a store on PostgreSQL twice more (postgres-nio's connections live on
/// the same event loops). ``useEventLoops()`` makes the event loops the global executor: the handler, its store calls
/// and its socket I/O then stay on one thread. `mbaas serve` does this unless given `--executor pool`.
///
/// Measured (docs/benchmarks.md, `Benchmarks/http-get.sh 10 32 2`, release build, two cores, three runs): the NCMB
/// dialect's record GET on a database file served 20.0–21.0k requests/s this way against 16.1–16.4k with
/// `--executor pool` in the same runs.
///
/// What it asks of the code that runs in the server: nothing that blocks a thread for long, since a blocked event
/// loop also stops the sockets it serves (on the pool, the same code blocks one of its few threads instead). Where
/// the stores stand:
/// - SQLite queries, pages, counts and writes run on GRDB's own queues; the handler waits without holding the loop.
/// - A point read (`get`, one indexed lookup) runs in place, on the loop. On a file each loop's read takes a
///   read-only connection of its own (one per processor, 2 to 8; past that, the pool's) and does not wait for
///   writers (WAL) or for the other loops; in memory it shares the one connection and waits for a write transaction
///   in progress (a batch: milliseconds).
/// - Password hashing (scrypt, tens of milliseconds) runs on threads of its own (the core's blocking-work queues,
///   one per processor).
/// - File uploads are written in 256 KiB chunks, yielding the thread between them; a download of a file the Local
///   store keeps is read whole (a 20 MiB file: milliseconds from the page cache).
public enum EmulatorExecutor {
    /// `nil` until the first call of ``useEventLoops()``, then its answer (SwiftNIO's hook may be tried only once).
    private static let installed = Locked<Bool?>(nil)

    /// Makes SwiftNIO's shared event loop group (``NIOCore/NIOSingletons``, which Hummingbird's server and postgres-nio's
    /// connections use) Swift concurrency's global executor.
    ///
    /// Call it once, first thing in the process, before any task starts, from the main thread (a command's `main`).
    /// Returns `false`, and changes nothing, where SwiftNIO cannot do it (Windows; a runtime without the hook).
    /// A second call returns the first call's answer.
    @discardableResult
    public static func useEventLoops() -> Bool {
        installed.withLock { answer in
            if answer == nil { answer = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() }
            return answer!
        }
    }

    /// Whether ``useEventLoops()`` took effect in this process.
    public static var isUsingEventLoops: Bool { installed.withLock { $0 ?? false } }
}
