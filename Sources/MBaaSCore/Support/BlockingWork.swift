import Dispatch
import Foundation

/// Runs work that holds a thread for long (a password hash: milliseconds to a tenth of a second, and 32 MB at the
/// strong scrypt cost) on threads of its own, at most one job per processor at a time, and suspends the caller
/// until it is done. A server's I/O threads, which may be the executor its handlers run on (see the emulator's
/// `EmulatorExecutor`), keep serving other requests meanwhile, and memory stays bounded however many callers wait.
///
/// Jobs go round-robin to one serial queue per processor; a job is not cancelled once it has started.
enum BlockingWork {
    private static let queues: [DispatchQueue] = (0..<max(1, ProcessInfo.processInfo.activeProcessorCount)).map {
        DispatchQueue(label: "MBaaSCore.BlockingWork.\($0)", qos: .userInitiated)
    }
    private static let next = Locked(0)

    static func run<T: Sendable>(_ body: @escaping @Sendable () throws(MBaaSError) -> T) async throws(MBaaSError) -> T {
        let queue = next.withLock { index in
            defer { index = (index + 1) % queues.count }
            return queues[index]
        }
        let result: Result<T, MBaaSError> = await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: Result { () throws(MBaaSError) -> T in try body() }) }
        }
        return try result.get()
    }
}
