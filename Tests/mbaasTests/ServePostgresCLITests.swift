import Foundation
import MBaaSCore
import MBaaSTesting
import Testing

/// `mbaas serve --dialect ncmb --data postgres://…`: the emulator on the PostgreSQL store, two processes on one schema.
/// Needs the server of `MBAAS_POSTGRES_URL` (`.ci/postgres.sh run -- swift test`); skipped with that reason without it
/// (MBaaSPostgresTests fails under CI=true when it is missing).
@Suite("mbaas serve --data postgres://", .ownThreads,
       .enabled(if: ProcessInfo.processInfo.environment["MBAAS_POSTGRES_URL"].map { !$0.isEmpty } ?? false,
                "MBAAS_POSTGRES_URL is not set: run `.ci/postgres.sh run -- swift test` to include the emulator on PostgreSQL"))
struct ServePostgresCLITests {
    @Test("two serve processes on one postgres:// schema are one backend: a record crosses, increments add up, one killed and the other serves on")
    func twoProcessesOnePostgres() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let base = try #require(ProcessInfo.processInfo.environment["MBAAS_POSTGRES_URL"])
        let schema = "serve_" + String(UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(8))
        let data = base + "?schema=" + schema
        func start() throws -> (Process, String) {
            let (server, started) = try cli.startServer(["--dialect", "ncmb", "--application-key", "pg-app-key", "--client-key", "pg-client-key",
                                                         "--data", data, "--password-cost", "light"])
            return (server, try #require(started["backendURL"]?.stringValue))
        }
        let (first, urlA) = try start()
        defer { if first.isRunning { first.terminate() } }
        let (second, urlB) = try start()
        defer { if second.isRunning { second.terminate() } }
        let created = try cli.json(["objects", "create", urlA, "Memo", #"{"title":"through A","n":0}"#, "--acl", #"{"*":{"read":true,"write":true}}"#])
        let id = try #require(created["id"]?.stringValue)
        #expect(try cli.json(["objects", "get", urlB, "Memo", id])["fields"]?["title"] == "through A")
        for (i, url) in [urlA, urlB, urlA, urlB].enumerated() {
            let out = try cli.run(["objects", "update", url, "Memo", id, #"{"n":{"__op":"Increment","amount":1}}"#])
            #expect(out.status == 0, "update \(i): \(out.stderr)")
        }
        #expect(try cli.json(["objects", "get", urlA, "Memo", id])["fields"]?["n"] == 4)
        kill(first.processIdentifier, SIGKILL)
        first.waitUntilExit()
        #expect(try cli.json(["objects", "get", urlB, "Memo", id])["fields"]?["n"] == 4)
        second.terminate()
        second.waitUntilExit()
        // The data is in the database, not in either process: read straight from the store.
        #expect(try cli.json(["objects", "get", data, "Memo", id])["fields"]?["n"] == 4)
    }
}
