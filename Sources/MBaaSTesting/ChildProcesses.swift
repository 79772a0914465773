public import Foundation

/// Starts a test's child processes (servers, CLI runs, scripts) so that they end with the test process.
///
/// A test process that crashes or is killed does not run its tests' clean-up: the servers they started would go on
/// running, holding ports, files and the pipes a CI script waits on. On Linux each child is started under util-linux's
/// `setpriv --pdeathsig TERM`, so the kernel sends it `SIGTERM` when its parent goes (where `/usr/bin/setpriv` is
/// missing, children start as they are and ``parentDeathSignal`` is `nil`). The parent the kernel watches is the *thread* that started
/// the child: the children are started from one thread that lives as long as the process, never from a test's
/// thread, which may end first (``OwnThreadsExecutor`` runs each job on a thread of its own). The signal reaches the
/// children only: what they start in turn is theirs to stop.
///
/// Starts are also serialized: Foundation's `Process.run()` on Linux lists `/proc/self/fd` to close descriptors in
/// the child and can read past its buffer when about 1,300 are open (fixed upstream after this toolchain,
/// swift-corelibs-foundation PR 5472). Only the start is; the children run, and are waited for, side by side.
public enum ChildProcesses {
    /// Runs `process` (configured, not started) from the launcher thread, under `setpriv --pdeathsig TERM` where
    /// setpriv takes it. The process keeps its identifier (`setpriv` replaces itself with the program), so signals sent to it
    /// reach the program; its `executableURL` and `arguments` name `setpriv` afterwards.
    public static func run(_ process: Process) throws {
        try LauncherThread.shared.perform {
            // A program that cannot run is left to `Process.run()` to refuse, as it would without setpriv in front.
            if let setpriv = setprivURL, let program = process.executableURL, FileManager.default.isExecutableFile(atPath: program.path) {
                if program.standardizedFileURL == setpriv {
                    // Already under setpriv (a test running its child as another user): the signal goes with its own
                    // options, which it sets after the user change that would clear it.
                    process.arguments = ["--pdeathsig", "TERM"] + (process.arguments ?? [])
                } else {
                    process.arguments = ["--pdeathsig", "TERM", "--", program.path] + (process.arguments ?? [])
                    process.executableURL = setpriv
                }
            }
            try process.run()
        }
        keepRunLoopWaitable()
    }

    /// Gives the calling thread's run loop a source (a timer that never fires), once per thread.
    ///
    /// `waitUntilExit()` runs the current run loop in slices of 50 ms that the child's end wakes early. A run loop
    /// with no source returns from each slice at once, so the wait spins on a core for as long as the child runs.
    /// `Process.run()` adds a source to the run loop of the thread that starts the process: now the launcher's, not
    /// the caller's, which would otherwise spin (measured: 1.99 CPU-s on the waiting thread for a 2 s child).
    static func keepRunLoopWaitable() {
        let key = "MBaaSTesting.ChildProcesses.waitable"
        guard Thread.current.threadDictionary[key] == nil else { return }
        let timer = Timer(timeInterval: 86_400, repeats: true) { _ in }
        RunLoop.current.add(timer, forMode: .default)
        Thread.current.threadDictionary[key] = timer
    }

    /// The signal children get when the test process ends (`"TERM"`), or `nil` where it cannot be set.
    public static var parentDeathSignal: String? { setprivURL == nil ? nil : "TERM" }

    /// `/usr/bin/setpriv` where it takes `--pdeathsig` (util-linux 2.33 and later; tried once, from whichever thread
    /// asks first: the launcher, or a suite's `.enabled(if:)` before any child is started).
    static let setprivURL: URL? = {
        #if os(Linux)
        let url = URL(fileURLWithPath: "/usr/bin/setpriv")
        guard FileManager.default.isExecutableFile(atPath: url.path) else { return nil }
        let probe = Process()
        probe.executableURL = url
        probe.arguments = ["--pdeathsig", "TERM", "--", url.path, "--version"]
        probe.standardOutput = FileHandle.nullDevice
        probe.standardError = FileHandle.nullDevice
        do { try probe.run() } catch { return nil }
        probe.waitUntilExit()
        return probe.terminationStatus == 0 ? url : nil
        #else
        return nil
        #endif
    }()
}

/// One thread, started on first use and never ended, that runs the calls handed to it one at a time.
private final class LauncherThread: @unchecked Sendable {
    static let shared = LauncherThread()

    private let condition = NSCondition()
    private var calls: [() -> Void] = []

    private init() {
        let thread = Thread { [self] in loop() }
        thread.name = "mbaas-test-launcher"
        thread.start()
    }

    private func loop() -> Never {
        // Children inherit the signal mask of the thread that starts them, and this thread inherited its creator's:
        // a pool thread's blocks SIGTERM, which would then neither stop a child (`terminate()`) nor reach it when
        // the test process dies.
        var none = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, nil)
        while true {
            condition.lock()
            while calls.isEmpty { condition.wait() }
            let call = calls.removeFirst()
            condition.unlock()
            call()
        }
    }

    /// Runs `body` on the thread and waits for it; rethrows what it threw.
    func perform(_ body: @escaping () throws -> Void) throws {
        let outcome = Outcome()
        condition.lock()
        calls.append {
            let result = Result { try body() }
            outcome.finish(result)
        }
        condition.signal()
        condition.unlock()
        try outcome.wait().get()
    }

    private final class Outcome: @unchecked Sendable {
        private let condition = NSCondition()
        private var result: Result<Void, any Error>?

        func finish(_ result: Result<Void, any Error>) {
            condition.lock()
            self.result = result
            condition.broadcast()
            condition.unlock()
        }

        func wait() -> Result<Void, any Error> {
            condition.lock()
            defer { condition.unlock() }
            while result == nil { condition.wait() }
            return result!
        }
    }
}
