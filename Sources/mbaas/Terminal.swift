import Foundation
import MBaaSCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's standard streams, written without `FileHandle.write(_:)` (which traps on any write error).
///
/// # Contract
/// - A failure to write stdout (a full disk, `/dev/full`, a closed file) prints
///   `mbaas: error: localIO: cannot write to standard output: <reason>; …` on stderr and exits with status
///   ``Terminal/outputFailedStatus`` (7, local I/O). Work the command did before printing (a created record) is
///   kept: the message says so, so a script does not retry blindly.
/// - A broken pipe (the reader went away: `mbaas … | head -1`) ends the process quietly, with no message, with
///   status ``Terminal/brokenPipeStatus`` (141, the status a shell shows for a process ended by SIGPIPE).
///   SIGPIPE itself is ignored (see ``prepare()``), so the write returns `EPIPE` instead of killing the process.
/// - Writes to stderr never fail loudly: an error message that cannot be written is dropped.
enum Terminal {
    /// Exit status after a stdout write error other than a broken pipe.
    static let outputFailedStatus: Int32 = 7
    /// Exit status after a broken pipe on stdout (quiet).
    static let brokenPipeStatus: Int32 = 141

    /// Called once at start-up: SIGPIPE is ignored so broken pipes surface as `EPIPE`.
    static func prepare() {
        signal(SIGPIPE, SIG_IGN)
        limitMallocArenas()
    }

    /// On glibc, two malloc arenas per processor (at least four; glibc's default is eight per processor), unless
    /// `MALLOC_ARENA_MAX` says otherwise. The CLI's long jobs (a migration, a sync) run a few threads at once; each
    /// arena the C library adds keeps the memory it once held. Measured (`/usr/bin/time -v mbaas migrate` of a
    /// 100k-record NCMB export into SQLite, release build, two cores, alternating): peak 98–106 MB with glibc's
    /// default, 92–94 MB with four arenas in 9.3–9.6 s, 81–83 MB with two but 5–20% slower (docs/benchmarks.md).
    static func limitMallocArenas() {
        #if canImport(Glibc)
        guard ProcessInfo.processInfo.environment["MALLOC_ARENA_MAX"] == nil else { return }
        // mallopt(M_ARENA_MAX, n): <malloc.h> is not part of the Glibc module; M_ARENA_MAX is -8 in it.
        typealias MallocOption = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(nil, "mallopt") else { return }   // nil: RTLD_DEFAULT
        _ = unsafeBitCast(symbol, to: MallocOption.self)(-8, Int32(max(4, 2 * ProcessInfo.processInfo.activeProcessorCount)))
        #endif
    }

    /// Writes all of `data` to stdout, or ends the process as the contract says.
    static func writeOut(_ data: Data) {
        if let errorNumber = writeAll(STDOUT_FILENO, data) {
            if errorNumber == EPIPE { exit(brokenPipeStatus) }
            let reason = String(cString: strerror(errorNumber))
            writeErr("mbaas: error: localIO: cannot write to standard output: \(reason); the output is incomplete "
                + "(changes the command made before printing are kept)\n")
            exit(outputFailedStatus)
        }
    }

    /// Writes to stderr, ignoring failures.
    static func writeErr(_ text: String) {
        _ = writeAll(STDERR_FILENO, Data(text.utf8))
    }

    /// Writes every byte, retrying on `EINTR` and short writes; returns `errno` on failure, `nil` on success.
    static func writeAll(_ fd: Int32, _ data: Data) -> Int32? {
        data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) -> Int32? in
            guard let base = buffer.baseAddress else { return nil }
            var offset = 0
            while offset < buffer.count {
                let n = write(fd, base + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += n
            }
            return nil
        }
    }
}

/// SIGINT (Ctrl-C) and SIGTERM cancel the running command instead of killing the process at once, so work in
/// progress cleans up: an upload stops between chunks and removes its partial file, nothing is stored.
///
/// # Contract
/// - The first signal cancels the command's task; the process then exits with 128 + the signal number (130 for
///   SIGINT, 143 for SIGTERM) after the command has unwound, or after ``graceSeconds`` if it does not (a read
///   blocked on a slow source). A second signal exits at once.
/// - Whatever is left behind by a process that could not clean up (kill -9) is swept by the next open of the
///   database (`.partial-*` files whose upload is gone).
enum Interruption {
    /// Seconds a cancelled command gets to unwind before the process exits anyway.
    static let graceSeconds = 5.0

    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []
    private static let state = NSLock()
    nonisolated(unsafe) private static var signalNumber: Int32?

    /// The signal that interrupted the command, if any.
    static var received: Int32? { state.withLock { signalNumber } }

    static func install(_ cancel: @escaping @Sendable () -> Void) {
        for signo in [SIGINT, SIGTERM] {
            signal(signo, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signo, queue: .global())
            source.setEventHandler {
                let first: Bool = state.withLock {
                    defer { if signalNumber == nil { signalNumber = signo } }
                    return signalNumber == nil
                }
                guard first else { Foundation.exit(128 + signo) }
                cancel()
                DispatchQueue.global().asyncAfter(deadline: .now() + graceSeconds) { Foundation.exit(128 + signo) }
            }
            source.resume()
            sources.append(source)
        }
    }
}
