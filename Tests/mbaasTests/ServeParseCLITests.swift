import Foundation
import MBaaSCore
import MBaaSTesting
import Testing

/// `mbaas serve --dialect parse`: the printed backend URL, other mbaas commands through it, the master key option.
@Suite("mbaas serve --dialect parse", .ownThreads)
struct ServeParseCLITests {
    @Test func servesTheParseDialect() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let (server, started) = try cli.startServer(["--dialect", "parse", "--app-id", "cliapp", "--rest-key", "cli-rest-key",
                                                     "--master-key", "cli-master-key"])
        defer { if server.isRunning { server.terminate() } }
        #expect(started["dialect"] == "parse")
        let backendURL = try #require(started["backendURL"]?.stringValue)
        #expect(backendURL.hasPrefix("parse+http://cliapp:cli-rest-key@127.0.0.1:") && backendURL.hasSuffix("/parse"))
        #expect(started["baseURL"]?.stringValue?.hasPrefix("http://127.0.0.1:") == true)
        // Sign up, then objects through the dialect as that user.
        let signUp = try cli.run(["auth", "signup", backendURL, "carol", "--password", "carol-pass-1"])
        #expect(signUp.status == 0, "\(signUp.stderr)")
        let created = try cli.json(["objects", "create", backendURL, "Memo", #"{"title":"from the cli","n":3}"#])
        let id = try #require(created["id"]?.stringValue)
        let read = try cli.json(["objects", "get", backendURL, "Memo", id])
        #expect(read["fields"]?["title"] == "from the cli" && read["fields"]?["n"] == 3)
        // The wrong REST key is refused (Parse's 403 "unauthorized").
        let wrong = backendURL.replacingOccurrences(of: "cli-rest-key", with: "other-key")
        #expect(try cli.run(["objects", "get", wrong, "Memo", id]).status != 0)
        server.terminate()
        server.waitUntilExit()
        #expect(server.terminationStatus == 143 || server.terminationStatus == 15)
    }

    @Test func missingKeysAreUsageErrors() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let out = try cli.run(["serve", "--dialect", "parse", "--app-id", "x"], sessionOption: false)
        #expect(out.status == 64, "\(out.stderr)")
        #expect(out.stderr.contains("--rest-key"))
        let same = try cli.run(["serve", "--dialect", "parse", "--app-id", "x", "--rest-key", "k", "--master-key", "k"],
                               sessionOption: false)
        #expect(same.status == 64 && same.stderr.contains("--master-key"), "\(same.stderr)")
    }
}
