import Foundation
import MBaaSCore
import MBaaSTesting
import Testing

/// `mbaas serve --dialect ncmb` as a process: the printed URLs, a client command through it, SIGTERM, and the
/// documented errors.
@Suite("mbaas serve --dialect ncmb", .ownThreads)
struct ServeNCMBCLITests {
    @Test("serves with --data, answers objects commands, and on SIGTERM exits 143 with the data folded into the file")
    func servesAndStops() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let db = cli.directory.appendingPathComponent("app.db")
        let (server, started) = try cli.startServer(["--dialect", "ncmb", "--application-key", "cli-app-key",
                                                     "--client-key", "cli-client-key", "--data", db.path])
        defer { if server.isRunning { server.terminate() } }
        #expect(started["dialect"] == "ncmb" && started["data"] == .string(db.path))
        // Handlers run on the event loops by default (EmulatorExecutor); the start line says so.
        #expect(started["executor"] == "event-loops", "\(started)")
        let url = try #require(started["backendURL"]?.stringValue)
        #expect(url.hasPrefix("ncmb+http://cli-app-key:cli-client-key@127.0.0.1:"))
        let created = try cli.json(["objects", "create", url, "Memo", #"{"title":"served"}"#])
        let id = try #require(created["id"]?.stringValue)
        #expect(try cli.json(["objects", "get", url, "Memo", id])["fields"]?["title"] == "served")
        server.terminate()  // SIGTERM
        server.waitUntilExit()
        #expect(server.terminationStatus == 143)
        // The write-ahead log was folded into the database file on the way out.
        let wal = (try? FileManager.default.attributesOfItem(atPath: db.path + "-wal")[.size] as? Int) ?? 0
        #expect(wal == 0)
        #expect(FileManager.default.fileExists(atPath: db.path))
    }

    @Test("--executor pool runs the handlers on the concurrency pool; users sign up and log in under either executor")
    func executors() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        for executor in ["pool", "event-loops"] {
            let (server, started) = try cli.startServer(["--dialect", "ncmb", "--application-key", "app", "--client-key", "client",
                                                         "--executor", executor])
            defer { if server.isRunning { server.terminate() } }
            #expect(started["executor"] == .string(executor), "\(started)")
            let url = try #require(started["backendURL"]?.stringValue)
            // Sign-up and log-in hash passwords (scrypt) off the event loops; records go through the store.
            let signed = try cli.json(["auth", "signup", url, "alice", "--password", "s3cret pass"])
            #expect(signed["userId"]?.stringValue != nil, "\(signed)")
            let wrong = try cli.run(["auth", "login", url, "alice", "--password", "nope"])
            #expect(wrong.status == 4, "\(wrong.stderr)")
            let created = try cli.json(["objects", "create", url, "Memo", #"{"title":"\#(executor)"}"#])
            let id = try #require(created["id"]?.stringValue)
            #expect(try cli.json(["objects", "get", url, "Memo", id])["fields"]?["title"] == .string(executor))
            server.terminate()
            server.waitUntilExit()
            #expect(server.terminationStatus == 143)
        }
        let bad = try cli.run(["serve", "--dialect", "ncmb", "--application-key", "k", "--client-key", "c", "--executor", "threads"],
                              sessionOption: false)
        #expect(bad.status == 64 && bad.stderr.contains("--executor"), "\(bad.stderr)")
    }

    @Test("an unknown dialect, or missing keys, are usage errors (exit status 64)")
    func errors() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let unknown = try cli.run(["serve", "--dialect", "kinvey", "--format", "json"], sessionOption: false)
        #expect(unknown.status == 64, "\(unknown.stderr)")
        let noKeys = try cli.run(["serve", "--dialect", "ncmb"], sessionOption: false, environment: [
            "MBAAS_NCMB_APPLICATION_KEY": "", "MBAAS_NCMB_CLIENT_KEY": "",
        ])
        #expect(noKeys.status == 64)
        #expect(noKeys.stderr.contains("--application-key and --client-key"))
    }
}
