import Foundation
import MBaaSCore
import MBaaSTesting
import Testing

/// `mbaas serve --dialect apppot`: users from a file, the printed backend URL, other mbaas commands through it.
@Suite("mbaas serve --dialect apppot", .ownThreads)
struct ServeAppPotCLITests {
    @Test func servesTheAppPotDialectWithUsersFromAFile() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let users = cli.directory.appendingPathComponent("users.json")
        try Data(#"[{"username":"alice","password":"alice-pass","groups":["Sales"]},{"username":"bob","password":"bob-pass"}]"#.utf8)
            .write(to: users)
        let (server, started) = try cli.startServer(["--dialect", "apppot", "--app-key", "cli-app-key", "--company", "24",
                                                     "--app-id", "jp.co.example.Cli", "--users", users.path])
        defer { if server.isRunning { server.terminate() } }
        #expect(started["dialect"] == "apppot")
        let backendURL = try #require(started["backendURL"]?.stringValue)
        #expect(backendURL.hasPrefix("apppot+http://cli-app-key@127.0.0.1:"))
        #expect(backendURL.contains("company=24") && backendURL.contains("app=jp.co.example.Cli"))
        // AppPot has no sign-up: alice logs in (the session is saved for the next commands on this URL). The class
        // the create defines keeps its column types beside the session file, so the next process reads them typed.
        let alice = backendURL
        let login = try cli.json(["auth", "login", alice, "alice", "--password", "alice-pass"])
        #expect(login.printed().contains("alice"))
        let created = try cli.json(["objects", "create", alice, "Memo", #"{"title":"from the cli","n":3}"#])
        let id = try #require(created["id"]?.stringValue)
        #expect(id.hasPrefix("Memo_"))
        let read = try cli.json(["objects", "get", alice, "Memo", id])
        #expect(read["fields"]?["title"] == "from the cli" && read["fields"]?["n"] == .int(3))
        // A wrong password is refused; carol is not in the file.
        #expect(try cli.run(["auth", "login", backendURL, "bob", "--password", "nope"]).status != 0)
        #expect(try cli.run(["auth", "login", backendURL, "carol", "--password", "carol-pass"]).status != 0)
        server.terminate()
        server.waitUntilExit()
        #expect(server.terminationStatus == 143 || server.terminationStatus == 15)
    }
}
