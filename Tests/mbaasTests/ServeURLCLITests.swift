import Foundation
import MBaaSCore
import MBaaSTesting
import Testing

/// `mbaas serve URL`: the dialect registered for the URL's scheme serves the URL its client opens, driven end to
/// end by the matching client adapter (through other mbaas commands); bad URLs are usage errors (exit status 64).
@Suite("mbaas serve URL", .ownThreads)
struct ServeURLCLITests {
    /// Starts `mbaas serve <url> [extra]` and checks the dialect and the printed backend URL's start.
    func start(_ cli: CLIHarness, _ url: String, _ extra: [String] = [], dialect: String, prefix: String,
               sourceLocation: SourceLocation = #_sourceLocation) throws -> (Process, String) {
        let (server, started) = try cli.startServer([url] + extra)
        #expect(started["dialect"]?.stringValue == dialect, "\(started.printed())", sourceLocation: sourceLocation)
        let backendURL = try #require(started["backendURL"]?.stringValue, sourceLocation: sourceLocation)
        #expect(backendURL.hasPrefix(prefix), "\(backendURL)", sourceLocation: sourceLocation)
        return (server, backendURL)
    }

    /// Stops a server with SIGTERM and expects the graceful exit status.
    func stop(_ server: Process, sourceLocation: SourceLocation = #_sourceLocation) {
        server.terminate()
        server.waitUntilExit()
        #expect(server.terminationStatus == 143, sourceLocation: sourceLocation)
    }

    @Test func ncmbFromItsURL() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let db = cli.directory.appendingPathComponent("app.db")
        let (server, url) = try start(cli, "ncmb+http://url-app-key:url-client-key@127.0.0.1", ["--data", db.path],
                                      dialect: "ncmb", prefix: "ncmb+http://url-app-key:url-client-key@127.0.0.1:")
        defer { if server.isRunning { server.terminate() } }
        let created = try cli.json(["objects", "create", url, "Memo", #"{"title":"from a URL"}"#])
        let id = try #require(created["id"]?.stringValue)
        #expect(try cli.json(["objects", "get", url, "Memo", id])["fields"]?["title"] == "from a URL")
        // The keys are the URL's: another client key is refused.
        let wrong = url.replacingOccurrences(of: "url-client-key", with: "other-key")
        #expect(try cli.run(["objects", "get", wrong, "Memo", id]).status == 4)
        stop(server)
        // --data as with --dialect: the record is in the file sqlite: opens.
        #expect(try cli.json(["objects", "get", "sqlite:" + db.path, "Memo", id])["fields"]?["title"] == "from a URL")
    }

    @Test func kiiFromItsURL() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let (server, url) = try start(cli, "kii+http://URLAPP:URLKEY@127.0.0.1", dialect: "kii", prefix: "kii+http://URLAPP:URLKEY@127.0.0.1:")
        defer { if server.isRunning { server.terminate() } }
        #expect(try cli.run(["auth", "signup", url, "dana", "--password", "dana-pass-1"]).status == 0)
        let created = try cli.json(["objects", "create", url, "Memo", #"{"title":"kii from a URL","n":2}"#])
        let id = try #require(created["id"]?.stringValue)
        let read = try cli.json(["objects", "get", url, "Memo", id])
        #expect(read["fields"]?["title"] == "kii from a URL" && read["fields"]?["n"] == 2)
        stop(server)
    }

    @Test func appPotFromItsURLWithUsers() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let users = cli.directory.appendingPathComponent("users.json")
        try Data(#"[{"username":"alice","password":"alice-pass","groups":["Sales"]}]"#.utf8).write(to: users)
        let (server, url) = try start(cli, "apppot+http://url-app-key@127.0.0.1/apppot?company=24&app=jp.co.example.Url&version=1.0.0",
                                      ["--users", users.path], dialect: "apppot", prefix: "apppot+http://url-app-key@127.0.0.1:")
        defer { if server.isRunning { server.terminate() } }
        // The version and company of the URL are served (the SDKs' configurations say 1.0.0).
        #expect(url.hasSuffix("/apppot?company=24&app=jp.co.example.Url&version=1.0.0"), "\(url)")
        #expect(try cli.run(["auth", "login", url, "alice", "--password", "alice-pass"]).status == 0)
        let created = try cli.json(["objects", "create", url, "Memo", #"{"title":"apppot from a URL","n":3}"#])
        let id = try #require(created["id"]?.stringValue)
        let read = try cli.json(["objects", "get", url, "Memo", id])
        #expect(read["fields"]?["title"] == "apppot from a URL" && read["fields"]?["n"] == .int(3))
        // Another app version is not this app (errCode 106), as a client of version 1.0 finds.
        let other = url.replacingOccurrences(of: "version=1.0.0", with: "version=1.0")
        #expect(try cli.run(["auth", "login", other, "alice", "--password", "alice-pass"]).status != 0)
        stop(server)
    }

    @Test func parseFromItsURLWithMountAndMasterKey() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let (server, url) = try start(cli, "parse+http://urlapp:url-rest-key@127.0.0.1/api?masterKey=url-master-key",
                                      dialect: "parse", prefix: "parse+http://urlapp:url-rest-key@127.0.0.1:")
        defer { if server.isRunning { server.terminate() } }
        #expect(url.hasSuffix("/api"), "the URL's mount point is served: \(url)")
        #expect(try cli.run(["auth", "signup", url, "erin", "--password", "erin-pass-1"]).status == 0)
        let created = try cli.json(["objects", "create", url, "Memo", #"{"title":"parse from a URL"}"#])
        let id = try #require(created["id"]?.stringValue)
        #expect(try cli.json(["objects", "get", url, "Memo", id])["fields"]?["title"] == "parse from a URL")
        // The default mount is not served when the URL names another.
        let root = url.replacingOccurrences(of: "/api", with: "/parse")
        #expect(try cli.run(["objects", "get", root, "Memo", id]).status != 0)
        stop(server)
    }

    @Test("an unknown scheme, an https URL, a URL without keys or with --dialect's flags are usage errors (64)")
    func badURLsAreUsageErrors() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        func refused(_ arguments: [String], saying text: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let out = try cli.run(["serve"] + arguments, sessionOption: false)
            #expect(out.status == 64, "\(arguments): \(out.stderr)", sourceLocation: sourceLocation)
            #expect(out.stderr.contains(text), "\(arguments): \(out.stderr)", sourceLocation: sourceLocation)
        }
        try refused(["kinvey+http://a:b@127.0.0.1:8080"],
                    saying: "no dialect serves 'kinvey' URLs; served: apppot+http, kii+http, ncmb+http, parse+http, salesforce+http")
        try refused(["pocketbase+http://127.0.0.1:8090"], saying: "no dialect serves 'pocketbase' URLs")
        try refused(["ncmb://K:C@127.0.0.1"], saying: "the emulator speaks plain HTTP")
        try refused(["ncmb+http://K@127.0.0.1"], saying: "the ncmb dialect needs the application key and client key in the URL")
        try refused(["parse+http://app@127.0.0.1/parse"], saying: "the parse dialect needs the application id and REST key")
        try refused(["apppot+http://K@127.0.0.1/apppot?company=24&app=X"], saying: "the apppot dialect needs '?version=…'")
        try refused(["ncmb+http://K:C@127.0.0.1?apiVerison=2"], saying: "the ncmb dialect does not know the URL option 'apiVerison'")
        try refused(["ncmb+http://K:C@127.0.0.1", "--users", "users.json"], saying: "the ncmb dialect takes no users file")
        try refused(["ncmb+http://K:C@127.0.0.1", "--dialect", "ncmb"], saying: "give either a backend URL or --dialect, not both")
        try refused(["ncmb+http://K:C@127.0.0.1", "--application-key", "K"], saying: "--application-key is for the --dialect form")
        try refused(["ncmb+http://K:C@127.0.0.1:8080", "--port", "9090"], saying: "--port 9090 differs from the URL's port 8080")
        try refused(["ncmb+http://K:C@0.0.0.0"], saying: "add --allow-remote")
        try refused([], saying: "give the backend URL to serve")
        try refused(["not a url"], saying: "has no scheme")
    }
}
