import Foundation
import MBaaSCore
import MBaaSTesting
import Testing

/// Runs the built `mbaas` executable in a private temporary directory, with its own database and session file.
struct CLIHarness {
    struct Output {
        var status: Int32
        var stdout: Data
        var stderr: String
        var text: String { String(decoding: stdout, as: UTF8.self) }
        /// Stdout parsed as JSON.
        func json(sourceLocation: SourceLocation = #_sourceLocation) throws -> JSON {
            do { return try JSON.parse(stdout) } catch {
                Issue.record("stdout is not JSON (\(error)): \(text)\nstderr: \(stderr)", sourceLocation: sourceLocation)
                throw error
            }
        }
    }

    let directory: URL
    let sessionFile: URL
    /// `sqlite:<dir>/db.sqlite`
    let url: String

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mbaas-cli-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        sessionFile = directory.appendingPathComponent("config/mbaas/sessions.json")
        url = "sqlite:" + directory.appendingPathComponent("db.sqlite").path
    }

    func cleanUp() { try? FileManager.default.removeItem(at: directory) }

    /// Starts a process through ``MBaaSTesting/ChildProcesses``: one start at a time, and it ends with the test
    /// process (a crashed test run leaves no server behind).
    static func launch(_ process: Process) throws {
        try ChildProcesses.run(process)
    }

    /// The executable: next to the test bundle (the products directory), or `.build/debug/mbaas` of this package.
    static func binary() throws -> URL {
        var candidates: [URL] = []
        let bundle = Bundle.main.bundleURL
        candidates.append(bundle.appendingPathComponent("mbaas"))
        candidates.append(bundle.deletingLastPathComponent().appendingPathComponent("mbaas"))
        for bundle in Bundle.allBundles where bundle.bundleURL.pathExtension == "xctest" {
            candidates.append(bundle.bundleURL.deletingLastPathComponent().appendingPathComponent("mbaas"))
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        candidates.append(root.appendingPathComponent(".build/debug/mbaas"))
        if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) { return found }
        throw MBaaSError(.notFound, "the mbaas executable was not found (looked at \(candidates.map(\.path).joined(separator: ", "))); build it with `swift build --build-tests`")
    }

    /// Runs `mbaas <arguments>` with the session file option added after the subcommand words.
    /// `standardOutput` replaces the captured stdout (then `Output.stdout` is empty); `environment` adds variables.
    @discardableResult
    func run(_ arguments: [String], stdin: String? = nil, sessionOption: Bool = true, standardOutput: FileHandle? = nil,
             environment: [String: String] = [:]) throws -> Output {
        let process = try makeProcess(arguments, sessionOption: sessionOption, environment: environment)
        let out = directory.appendingPathComponent("stdout-\(UUID().uuidString)")
        let err = directory.appendingPathComponent("stderr-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: out); try? FileManager.default.removeItem(at: err) }
        let outHandle = try FileHandle(forWritingTo: out), errHandle = try FileHandle(forWritingTo: err)
        process.standardOutput = standardOutput ?? outHandle
        process.standardError = errHandle
        let input = Pipe()
        process.standardInput = input
        try CLIHarness.launch(process)
        // A child that never ends must fail its test, not hang the whole run: killed after `childTimeout`.
        let watchdog = Self.killAfter(Self.childTimeout, process)
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        watchdog.cancel()
        try outHandle.close()
        try errHandle.close()
        let output = Output(status: process.terminationStatus, stdout: try Data(contentsOf: out),
                            stderr: String(decoding: try Data(contentsOf: err), as: UTF8.self))
        if process.terminationReason == .uncaughtSignal, process.terminationStatus == SIGKILL, watchdog.fired {
            throw MBaaSError(.unavailable, "mbaas \(arguments.joined(separator: " ")) did not end within \(Int(Self.childTimeout)) s and was killed; its stderr: \(output.stderr.suffix(2000))")
        }
        return output
    }

    /// How long one `mbaas` run may take before it is killed and its test fails (`MBAAS_TEST_CHILD_TIMEOUT` seconds,
    /// default 600: generous for a loaded two-core machine, far below the CI run's own limit).
    static let childTimeout: TimeInterval = ProcessInfo.processInfo.environment["MBAAS_TEST_CHILD_TIMEOUT"].flatMap(TimeInterval.init) ?? 600

    /// Kills `process` with SIGKILL after `seconds` unless cancelled first.
    final class Watchdog: @unchecked Sendable {
        private let lock = NSLock()
        private var cancelled = false
        private(set) var fired = false
        func cancel() { lock.lock(); cancelled = true; lock.unlock() }
        func fire(_ pid: Int32) {
            lock.lock(); defer { lock.unlock() }
            guard !cancelled else { return }
            fired = true
            kill(pid, SIGKILL)
        }
    }

    static func killAfter(_ seconds: TimeInterval, _ process: Process) -> Watchdog {
        let watchdog = Watchdog()
        let pid = process.processIdentifier
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { watchdog.fire(pid) }
        return watchdog
    }

    /// A configured, not yet started `mbaas <arguments>` process (stdio inherited until set).
    /// Starts `mbaas serve …` (arguments after `serve`, `--format json` added) and returns the process with the
    /// JSON line it prints once listening (`{"dialect","baseURL","backendURL","data"}`). Stop it with `terminate()`.
    func startServer(_ arguments: [String]) throws -> (process: Process, started: JSON) {
        let server = try makeProcess(["serve"] + arguments + ["--format", "json"], sessionOption: false)
        let out = Pipe()
        server.standardOutput = out
        server.standardError = FileHandle.nullDevice
        try CLIHarness.launch(server)
        var line = Data()
        // A server that neither prints its line nor exits is killed at the deadline, which ends the blocking read.
        let watchdog = Self.killAfter(120, server)
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        watchdog.cancel()
        if watchdog.fired {
            server.waitUntilExit()
            throw MBaaSError(.unavailable, "mbaas serve \(arguments.joined(separator: " ")) printed no start line within 120 s and was killed")
        }
        do {
            return (server, try JSON.parse(line.split(separator: UInt8(ascii: "\n")).first.map { Data($0) } ?? Data()))
        } catch {
            server.terminate()
            throw error
        }
    }

    func makeProcess(_ arguments: [String], sessionOption: Bool = true, environment: [String: String] = [:]) throws -> Process {
        let process = Process()
        process.executableURL = try Self.binary()
        process.arguments = arguments + (sessionOption ? ["--session-file", sessionFile.path] : [])
        var env = ProcessInfo.processInfo.environment
        env["XDG_CONFIG_HOME"] = directory.appendingPathComponent("xdg").path
        env["MBAAS_BACKEND_URL"] = nil
        // Cheap password hashes in the stores the children open (what the tests check does not depend on the cost;
        // the default took over a second a hash in a debug build). A test may set it back through `environment`.
        env["MBAAS_PASSWORD_COST"] = "light"
        for (k, v) in environment { env[k] = v }
        process.environment = env
        process.currentDirectoryURL = directory
        return process
    }

    /// Runs and expects exit status 0, returning stdout as JSON.
    func json(_ arguments: [String], stdin: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> JSON {
        let result = try run(arguments + ["--format", "json"], stdin: stdin)
        #expect(result.status == 0, "mbaas \(arguments.joined(separator: " ")) failed: \(result.stderr)", sourceLocation: sourceLocation)
        return try result.json(sourceLocation: sourceLocation)
    }
}
