import Foundation
import MBaaSCore
import MBaaSTesting
import Testing

/// `mbaas serve … --data URL`: the emulator on any server store named by a backend URL, several processes on one
/// database, and backend URLs whose store cannot serve refused as usage errors (exit status 64).
@Suite("mbaas serve --data URL", .ownThreads)
struct ServeDataURLCLITests {
    func startNCMB(_ cli: CLIHarness, data: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> (Process, String) {
        let (server, started) = try cli.startServer(["--dialect", "ncmb", "--application-key", "data-app-key", "--client-key", "data-client-key",
                                                     "--data", data, "--password-cost", "light"])
        #expect(started["data"]?.stringValue == data, "\(started.printed())", sourceLocation: sourceLocation)
        return (server, try #require(started["backendURL"]?.stringValue, sourceLocation: sourceLocation))
    }

    @Test("two serve processes on one sqlite: URL are one backend: a record and a session cross, increments add up")
    func twoProcessesOneDatabase() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let data = "sqlite:" + cli.directory.appendingPathComponent("shared.db").path
        let (first, urlA) = try startNCMB(cli, data: data)
        defer { if first.isRunning { first.terminate() } }
        let (second, urlB) = try startNCMB(cli, data: data)
        defer { if second.isRunning { second.terminate() } }
        #expect(urlA != urlB)
        let created = try cli.json(["objects", "create", urlA, "Memo", #"{"title":"through A","n":0}"#, "--acl", #"{"*":{"read":true,"write":true}}"#])
        let id = try #require(created["id"]?.stringValue)
        #expect(try cli.json(["objects", "get", urlB, "Memo", id])["fields"]?["title"] == "through A")
        for (i, url) in [urlA, urlB, urlA, urlB].enumerated() {
            let out = try cli.run(["objects", "update", url, "Memo", id, #"{"n":{"__op":"Increment","amount":1}}"#])
            #expect(out.status == 0, "update \(i): \(out.stderr)")
        }
        #expect(try cli.json(["objects", "get", urlA, "Memo", id])["fields"]?["n"] == 4)
        first.terminate()
        first.waitUntilExit()
        #expect(first.terminationStatus == 143)
        // The other instance keeps serving the same data.
        #expect(try cli.json(["objects", "get", urlB, "Memo", id])["fields"]?["n"] == 4)
        second.terminate()
        second.waitUntilExit()
        #expect(try cli.json(["objects", "get", data, "Memo", id])["fields"]?["n"] == 4)
    }

    @Test("a backend URL whose store cannot serve, an unknown scheme or a bad sqlite: URL is a usage error (64)")
    func refusedStores() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        func refused(_ data: String, saying text: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let out = try cli.run(["serve", "--dialect", "ncmb", "--application-key", "K", "--client-key", "C", "--data", data],
                                  sessionOption: false)
            #expect(out.status == 64, "\(data): \(out.stderr)", sourceLocation: sourceLocation)
            #expect(out.stderr.contains(text), "\(data): \(out.stderr)", sourceLocation: sourceLocation)
            #expect(!out.stderr.contains("s3cret"), "the secret is never printed", sourceLocation: sourceLocation)
        }
        try refused("pocketbase+http://127.0.0.1:8090", saying: "the pocketbase adapter is a client of a remote service, not a store the emulator can serve from")
        try refused("ncmb://key:s3cret@127.0.0.1", saying: "the ncmb adapter is a client of a remote service")
        try refused("nosuch://u:s3cret@127.0.0.1/db", saying: "unknown backend scheme 'nosuch'")
        try refused("sqlite://host/app.db", saying: "names a host")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: cli.directory.path).filter { $0.hasSuffix(".db") }
        #expect(leftovers.isEmpty, "nothing was created: \(leftovers)")
    }
}
