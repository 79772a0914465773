import Foundation
import MBaaSTesting
import Testing
// `struct stat`, `timeval` and the like belong to whichever C module loaded their header first (CDispatch or
// CoreFoundation, depending on the dependencies in the graph); member import visibility asks for it by name.
#if canImport(CDispatch)
import CDispatch
#endif
#if canImport(CoreFoundation)
import CoreFoundation
#endif

@Suite("Test children end with the test process", .ownThreads,
       .enabled(if: ChildProcesses.parentDeathSignal != nil, "no /usr/bin/setpriv: children start without a parent-death signal"))
struct ChildProcessesTests {
    /// What `setpriv --dump` says of the process it runs in: started by a shell, or by `setpriv` with `arguments`.
    func dump(_ arguments: [String]) throws -> String {
        let process = Process()
        if arguments.isEmpty {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "exec /usr/bin/setpriv --dump"]
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = arguments + ["--", "/usr/bin/setpriv", "--dump"]
        }
        let out = Pipe()
        process.standardOutput = out
        try ChildProcesses.run(process)
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        return text
    }

    @Test("a child runs with SIGTERM as its parent-death signal, also one that runs as another user through setpriv")
    func parentDeathSignalIsSet() throws {
        let plain = try dump([])
        #expect(plain.contains("Parent death signal: TERM"), "\(plain)")
        // Changing the user clears the signal: a child that is setpriv itself gets it among its own options.
        if getuid() == 0 {
            let other = try dump(["--reuid=65534", "--regid=65534", "--clear-groups"])
            #expect(other.contains("Parent death signal: TERM") && other.contains("uid: 65534"), "\(other)")
        }
    }

    @Test("a child started from a thread that ends at once keeps running: the kernel watches the launcher thread")
    func childOutlivesTheThreadThatAskedForIt() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sleep")
        process.arguments = ["30"]
        let started = DispatchSemaphore(value: 0)
        let failure = Box()
        Thread {
            do { try ChildProcesses.run(process) } catch { failure.set("\(error)") }
            started.signal()
        }.start()
        #expect(started.wait(timeout: .now() + 20) == .success)
        #expect(failure.value == nil)
        // The thread that asked has ended by now; a child tied to it would have had its SIGTERM.
        Thread.sleep(forTimeInterval: 1)
        #expect(process.isRunning)
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGTERM)
    }
}

extension ChildProcessesTests {
    @Test("waiting for a child does not spin: the waiting thread sleeps while the child runs")
    func waitingDoesNotSpin() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sleep")
        process.arguments = ["2"]
        let before = threadCPUSeconds()
        try ChildProcesses.run(process)
        process.waitUntilExit()
        let used = threadCPUSeconds() - before
        #expect(process.terminationStatus == 0)
        #expect(used < 0.5, "\(used) s of CPU on the waiting thread for a 2 s child")
    }
}

/// CPU time the calling thread has used.
private func threadCPUSeconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

private final class Box: @unchecked Sendable {
    private let lock = NSLock()
    private var text: String?
    func set(_ value: String) { lock.withLock { text = value } }
    var value: String? { lock.withLock { text } }
}
