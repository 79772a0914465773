import Foundation
import MBaaSCore
import MBaaSTesting
import Testing

/// AppPot from the command line, end to end against `mbaas serve --dialect apppot`: `user=` logs in, a class an
/// earlier command made can be written again and reads back typed (the kept field types beside the session file),
/// and `schemas=FILE` declares classes this CLI did not make.
@Suite("AppPot from the command line", .ownThreads)
struct AppPotCLITests {
    /// The dialect with alice and bob; the backend URL without a user, and with alice (`user=alice`, her password
    /// as the URL's secret).
    static func start(_ cli: CLIHarness) throws -> (server: Process, anonymous: String, alice: String) {
        let users = cli.directory.appendingPathComponent("users.json")
        try Data(#"[{"username":"alice","password":"alice-pass","groups":["Sales"]},{"username":"bob","password":"bob-pass"}]"#.utf8)
            .write(to: users)
        let (server, started) = try cli.startServer(["--dialect", "apppot", "--app-key", "cli-app-key", "--company", "24",
                                                     "--app-id", "jp.co.example.Cli", "--users", users.path])
        guard let url = started["backendURL"]?.stringValue, url.hasPrefix("apppot+http://cli-app-key@") else {
            server.terminate()
            throw MBaaSError(.internal, "the AppPot dialect printed no backend URL: \(started)")
        }
        let alice = url.replacingOccurrences(of: "cli-app-key@", with: "cli-app-key:alice-pass@") + "&user=alice"
        return (server, url, alice)
    }

    static func stop(_ server: Process) {
        if server.isRunning { server.terminate() }
        server.waitUntilExit()
    }

    @Test("user= in the URL logs that user in from the CLI (and the session is saved); without a user the error says how to log in on the command line")
    func userInTheURLLogsIn() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let (server, anonymous, alice) = try Self.start(cli)
        defer { Self.stop(server) }

        let refused = try cli.run(["objects", "create", anonymous, "Memo", #"{"title":"nobody"}"#])
        #expect(refused.status == 4)
        #expect(refused.stderr.contains("mbaas auth login URL USER") && refused.stderr.contains("user=USER"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("call logIn first"))

        let who = try cli.json(["auth", "whoami", alice])
        #expect(who["username"] == "alice")
        let sessions = try JSON.parse(Data(contentsOf: cli.sessionFile))
        let keys = sessions.objectValue?.keys ?? []
        #expect(keys.count == 1 && keys.allSatisfy { $0.contains("user=alice") && !$0.contains("alice-pass") }, "\(keys)")
        let created = try cli.json(["objects", "create", alice, "Memo", #"{"title":"by alice"}"#])
        #expect(created["fields"]?["title"] == "by alice")
        // The saved session is kept for the URL with user=alice only.
        #expect(try cli.run(["auth", "whoami", anonymous]).status == 4)

        // An expired saved session is not used: alice logs in again and the new session is saved.
        var saved = try #require(try JSON.parse(Data(contentsOf: cli.sessionFile)).objectValue)
        let key = try #require(saved.keys.first)
        var entry = try #require(saved[key]?.objectValue)
        entry["token"] = "stale-token"
        entry["expiresAt"] = "2000-01-01T00:00:00.000Z"
        saved[key] = .object(entry)
        try JSON.object(saved).data().write(to: cli.sessionFile)
        let again = try cli.run(["objects", "get", alice, "Memo", try #require(created["id"]?.stringValue), "--format", "json"])
        #expect(again.status == 0, "\(again.stderr)")
        let renewed = try JSON.parse(Data(contentsOf: cli.sessionFile))[key]
        #expect(renewed?["token"] != nil && renewed?["token"] != "stale-token" && renewed?["expiresAt"] != "2000-01-01T00:00:00.000Z")
    }

    @Test("a class made by an earlier command takes a second create, and reads come back typed: int stays int, bool stays bool; the types are kept 0600 beside the session file")
    func classMadeEarlierKeepsItsTypes() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let (server, _, alice) = try Self.start(cli)
        defer { Self.stop(server) }

        let first = try cli.json(["objects", "create", alice, "Task",
                                  #"{"title":"first","n":3,"done":true,"ratio":2.5,"due":{"__type":"Date","iso":"2026-01-02T03:04:05.000Z"},"tags":["a","b"]}"#])
        let id = try #require(first["id"]?.stringValue)
        let second = try cli.run(["objects", "create", alice, "Task", #"{"title":"second","n":4,"done":false}"#, "--format", "json"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(try second.json()["fields"]?["n"] == 4)

        let read = try cli.json(["objects", "get", alice, "Task", id])
        #expect(read["fields"]?["title"] == "first")
        #expect(read["fields"]?["n"] == .int(3))
        #expect(read["fields"]?["done"] == .bool(true))
        #expect(read["fields"]?["ratio"] == .double(2.5))
        #expect(read["fields"]?["due"] == .object(["__type": "Date", "iso": "2026-01-02T03:04:05.000Z"]))
        #expect(read["fields"]?["tags"] == .array(["a", "b"]))
        let page = try cli.json(["objects", "query", alice, "Task", "--where", #"{"done":false}"#])
        let results = page["results"]?.arrayValue ?? []
        #expect(results.count == 1 && results.first?["fields"]?["n"] == .int(4) && results.first?["fields"]?["done"] == .bool(false))

        let kept = cli.sessionFile.deletingLastPathComponent().appendingPathComponent("sessions.schemas.json")
        let attributes = try FileManager.default.attributesOfItem(atPath: kept.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let scopes = try JSON.parse(Data(contentsOf: kept)).objectValue ?? [:]
        #expect(scopes.keys.count == 1 && scopes.keys.allSatisfy { $0.hasSuffix("/apppot/api/24/jp.co.example.Cli/1.0") && !$0.contains("cli-app-key") })
        #expect(scopes.values.first?["Task"] == .object(["done": "bool", "due": "Date", "n": "int", "ratio": "double",
                                                         "tags": "json", "title": "string"]))
    }

    @Test("schemas=FILE declares a class this CLI did not make (class → field → core type name): typed reads and writes; a bad file is exit 2 naming the entry, a missing one exit 7")
    func schemasFileDeclaresOtherClasses() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let (server, _, alice) = try Self.start(cli)
        defer { Self.stop(server) }
        let created = try cli.json(["objects", "create", alice, "Note", #"{"title":"made elsewhere","n":3,"done":true}"#])
        let id = try #require(created["id"]?.stringValue)

        // Another machine: its own session file, nothing kept for this app.
        let other = cli.directory.appendingPathComponent("other/sessions.json").path
        func run(_ url: String, _ arguments: [String]) throws -> CLIHarness.Output {
            try cli.run(arguments.map { $0 == "URL" ? url : $0 } + ["--session-file", other, "--format", "json"], sessionOption: false)
        }
        let unknown = try run(alice, ["objects", "get", "URL", "Note", id])
        #expect(unknown.status == 2 && unknown.stderr.contains("schemas=FILE"), "\(unknown.stderr)")

        let file = cli.directory.appendingPathComponent("schemas.json")
        try Data(#"{"Note":{"title":"string","n":"int","done":"bool"}}"#.utf8).write(to: file)
        let declared = alice + "&schemas=" + file.path
        let read = try run(declared, ["objects", "get", "URL", "Note", id])
        #expect(read.status == 0, "\(read.stderr)")
        #expect(try read.json()["fields"] == .object(["title": "made elsewhere", "n": .int(3), "done": .bool(true)]))
        let again = try run(declared, ["objects", "create", "URL", "Note", #"{"title":"second","n":5,"done":false}"#])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try again.json()["fields"]?["n"] == .int(5))

        try Data(#"{"Note":{"title":"string","n":"integer"}}"#.utf8).write(to: file)
        let bad = try run(declared, ["objects", "get", "URL", "Note", id])
        #expect(bad.status == 2 && bad.stderr.contains("Note.n") && bad.stderr.contains("'integer'"), "\(bad.stderr)")
        try Data(#"["Note"]"#.utf8).write(to: file)
        let shape = try run(declared, ["objects", "get", "URL", "Note", id])
        #expect(shape.status == 2 && shape.stderr.contains(file.path), "\(shape.stderr)")
        let missing = try run(alice + "&schemas=" + cli.directory.appendingPathComponent("nope.json").path, ["objects", "get", "URL", "Note", id])
        #expect(missing.status == 7 && missing.stderr.contains("nope.json"), "\(missing.stderr)")
    }

    @Test("migrate from a source that cannot list its classes names --classes once (N20)")
    func classesHintOnce() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let db = cli.directory.appendingPathComponent("ncmb.db")
        let (server, started) = try cli.startServer(["--dialect", "ncmb", "--application-key", "cli-app-key",
                                                     "--client-key", "cli-client-key", "--data", db.path])
        defer { Self.stop(server) }
        let source = try #require(started["backendURL"]?.stringValue)
        let result = try cli.run(["migrate", "--from", source, "--to", cli.url, "--dry-run"], sessionOption: false)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.components(separatedBy: "--classes").count == 2, "\(result.stderr)")
    }
}
