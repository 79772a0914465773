import Foundation
import MBaaSCore
import MBaaSTesting
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The live replica proof needs a PocketBase it can stop and restart: the shared one of `.ci/pocketbase.sh run`
/// (`MBAAS_POCKETBASE_URL`) cannot be. It starts a private server from the binary the script installs
/// (`MBAAS_POCKETBASE_BIN`, exported by `run` and `env`). Without either variable the suite is skipped with this
/// reason; with the URL but no binary (a CI script that does not export it) it fails.
enum LiveSync {
    static let environment = ProcessInfo.processInfo.environment
    static let binary = environment["MBAAS_POCKETBASE_BIN"].flatMap { $0.isEmpty ? nil : $0 }
    static let sharedURL = environment["MBAAS_POCKETBASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
    static var isEnabled: Bool { binary != nil || sharedURL != nil }
    static let skipReason: Comment =
        "MBAAS_POCKETBASE_BIN is not set: run `.ci/pocketbase.sh run -- swift test --filter SyncPocketBaseLiveTests` to include the replica's live PocketBase proof"
}

/// A PocketBase of one test: loopback only, a free port, its data in the test's directory, the superuser setup
/// `.ci/pocketbase.sh` does (`superuser upsert`, then `serve --automigrate=false` with every writable folder in the
/// throwaway directory). ``stop()`` ends it (SIGTERM, then SIGKILL after 5 s); ``start()`` again reuses its port and
/// data, as a restarted server would.
final class PrivatePocketBase {
    let binary: String
    let base: URL
    let port: Int
    let email = "admin@example.com"
    let password: String
    private var process: Process?

    var url: String { "pocketbase+http://admin%40example.com:\(password)@127.0.0.1:\(port)" }
    var dataDirectory: URL { base.appendingPathComponent("pb_data") }

    init(binary: String, directory: URL) throws {
        self.binary = binary
        self.base = directory
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("pb_data"), withIntermediateDirectories: true)
        let listener = try silentTCPListener()
        close(listener.fd)
        port = listener.port
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        password = String((0..<24).map { _ in alphabet.randomElement()! })
        let upsert = try Self.runToEnd(binary, ["superuser", "upsert", email, password, "--dir", dataDirectory.path])
        guard upsert.status == 0 else { throw MBaaSError(.internal, "pocketbase superuser upsert failed: \(upsert.output)") }
    }

    static func runToEnd(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try ChildProcesses.run(process)
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// Starts the server and waits (30 s at most) until `/api/health` answers.
    func start() throws {
        let server = Process()
        server.executableURL = URL(fileURLWithPath: binary)
        server.arguments = ["serve", "--http", "127.0.0.1:\(port)", "--dir", dataDirectory.path, "--automigrate=false",
                            "--migrationsDir", base.appendingPathComponent("pb_migrations").path,
                            "--hooksDir", base.appendingPathComponent("pb_hooks").path,
                            "--publicDir", base.appendingPathComponent("pb_public").path]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try ChildProcesses.run(server)
        process = server
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            guard server.isRunning else { throw MBaaSError(.internal, "PocketBase exited before it became healthy") }
            if (try? Self.runToEnd("/usr/bin/env", ["curl", "-fsS", "--max-time", "2", "http://127.0.0.1:\(port)/api/health"]))?.status == 0 {
                return
            }
            usleep(100_000)
        }
        stop()
        throw MBaaSError(.unavailable, "PocketBase did not answer /api/health on 127.0.0.1:\(port) within 30 s")
    }

    /// Stops the server (idempotent).
    func stop() {
        guard let server = process else { return }
        process = nil
        if server.isRunning { server.terminate() }
        let deadline = Date().addingTimeInterval(5)
        while server.isRunning, Date() < deadline { usleep(50_000) }
        if server.isRunning { kill(server.processIdentifier, SIGKILL) }
        server.waitUntilExit()
    }
}

@Suite("mbaas sync against a real PocketBase", .ownThreads, .serialized, .enabled(if: LiveSync.isEnabled, LiveSync.skipReason))
struct SyncPocketBaseLiveTests {
    /// The titles of every Memo on a backend (one per record: duplicates stay visible).
    func titles(_ cli: CLIHarness, _ url: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String] {
        let out = try cli.run(["objects", "query", url, "Memo", "--all", "--format", "ndjson"])
        #expect(out.status == 0, "query \(url): \(out.stderr)", sourceLocation: sourceLocation)
        return out.text.split(separator: "\n").compactMap { line in
            (try? JSON.parse(Data(line.utf8)))?["fields"]?["title"]?.stringValue
        }.sorted()
    }

    @Test("sync down; offline writes while the server is stopped; sync up after it restarts; a conflict; kill -9 during sync up, then resume: no loss, no duplicate")
    func stopRestartConflictKill() throws {
        let binary = try #require(LiveSync.binary, "MBAAS_POCKETBASE_URL is set but MBAAS_POCKETBASE_BIN is not: .ci/pocketbase.sh run must export the binary")
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let server = try PrivatePocketBase(binary: binary, directory: cli.directory.appendingPathComponent("pocketbase"))
        defer { server.stop() }
        try server.start()
        let remote = server.url

        // Three memos on the server, mirrored by sync down.
        var seeded: [String] = []
        for i in 1...3 {
            let out = try cli.run(["objects", "create", remote, "Memo", #"{"title":"seed\#(i)"}"#, "--format", "json"])
            #expect(out.status == 0, "\(out.stderr)")
            seeded.append(try #require(try out.json()["id"]?.stringValue))
        }
        let config = cli.directory.appendingPathComponent("sync.json")
        try Data(#"{"classes":{"Memo":{"persistence":"localAndServer","merge":"leaveIfChanged"}}}"#.utf8).write(to: config)
        let replica = "replica:" + cli.directory.appendingPathComponent("memos.replica").path
        let initialized = try cli.run(["sync", "init", replica, "--remote", remote, "--config", config.path])
        #expect(initialized.status == 0, "\(initialized.stderr)")
        let down = try cli.run(["sync", replica, "--down", "--format", "json"])
        #expect(down.status == 0, "\(down.stderr)")
        #expect(try down.json()["classes"]?["Memo"]?["down"] == 3)

        // The server stops: writes go on offline, sync up keeps them (exit 6).
        server.stop()
        for i in 1...5 {
            let out = try cli.run(["objects", "create", replica, "Memo", #"{"title":"offline\#(i)"}"#])
            #expect(out.status == 0, "\(out.stderr)")
        }
        let edited = try cli.run(["objects", "update", replica, "Memo", seeded[0], #"{"title":"local edit"}"#])
        #expect(edited.status == 0, "\(edited.stderr)")
        let offline = try cli.run(["sync", replica, "--up", "--format", "json"])
        #expect(offline.status == 6, "\(offline.stderr)")
        #expect(try offline.json()["outcome"] == "unreachable")
        #expect(try cli.run(["sync", "status", replica, "--format", "json"]).json()["classes"]?["Memo"]?["pending"] == 6)

        // It restarts; meanwhile someone changed seed1 on the server: that record is a conflict, the rest goes up.
        try server.start()
        let serverEdit = try cli.run(["objects", "update", remote, "Memo", seeded[0], #"{"title":"server edit"}"#])
        #expect(serverEdit.status == 0, "\(serverEdit.stderr)")
        let back = try cli.run(["sync", replica, "--format", "json"])
        #expect(back.status == 8, "\(back.stderr)")
        let report = try back.json()
        #expect(report["classes"]?["Memo"]?["up"] == 5)
        #expect(report["conflicts"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == [seeded[0]])
        #expect(try titles(cli, remote) == ["offline1", "offline2", "offline3", "offline4", "offline5", "seed2", "seed3", "server edit"])

        // 120 more offline creates; the sync up sending them (batch calls of up to 50 creates, PocketBase's batch, one
        // call at a time: with calls in flight together the second starts before the first is answered) is killed
        // (SIGKILL) once its second send starts.
        let bulk = (1...120).map { String(format: "bulk%03d", $0) }
        for title in bulk {
            let out = try cli.run(["objects", "create", replica, "Memo", #"{"title":"\#(title)"}"#])
            #expect(out.status == 0, "\(out.stderr)")
        }
        let sending = try cli.makeProcess(["sync", replica, "--up", "--calls-in-flight", "1"])
        let progress = Pipe()
        sending.standardError = progress
        sending.standardOutput = FileHandle.nullDevice
        try CLIHarness.launch(sending)
        var seen = ""
        while seen.components(separatedBy: "sending ").count - 1 < 2 {
            let chunk = progress.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen += String(decoding: chunk, as: UTF8.self)
        }
        kill(sending.processIdentifier, SIGKILL)
        sending.waitUntilExit()
        #expect(sending.terminationReason == .uncaughtSignal, "the sync up ended before it was killed: \(seen)")
        let partial = try titles(cli, remote).filter { $0.hasPrefix("bulk") }
        #expect(partial.count >= 1 && partial.count < 120, "sent before the kill: \(partial.count)")

        // Resume: everything arrives once; the conflict still waits (exit 8) until it is resolved.
        let resumed = try cli.run(["sync", replica, "--up", "--format", "json"])
        #expect(resumed.status == 8, "\(resumed.stderr)")
        let afterResume = try titles(cli, remote)
        #expect(afterResume.filter { $0.hasPrefix("bulk") } == bulk, "no loss, no duplicate")
        #expect(afterResume.count == 128)
        let resolved = try cli.run(["sync", "resolve", replica, "Memo", seeded[0], "--keep", "remote"])
        #expect(resolved.status == 0, "\(resolved.stderr)")
        let final = try cli.run(["sync", replica, "--format", "json"])
        #expect(final.status == 0, "\(final.stderr)")
        #expect(try titles(cli, replica) == afterResume, "the replica equals the server")
        let status = try cli.run(["sync", "status", replica, "--format", "json"]).json()
        #expect(status["classes"]?["Memo"]?["pending"] == 0)
        #expect(status["classes"]?["Memo"]?["conflicts"] == 0)
    }
}
