import Foundation
import MBaaSCore
import MBaaSNCMB
import MBaaSReplay
import MBaaSTesting
import Testing

/// The `mbaas` binary end to end against NCMB: `ncmb signature` on the documented vectors, and object, file and
/// auth commands on an `ncmb+http://` URL served by a loopback server that replays an authored cassette
/// (`Fixtures/CLICassettes/ncmb/session.json`, written by `MBAAS_AUTHOR_CASSETTES=1 swift test --filter
/// CLICassetteAuthoring` from the NCMB simulator).
@Suite("mbaas CLI against NCMB", .ownThreads)
struct NCMBCLITests {
    static let appKey = "cliApplicationKey"
    static let clientKey = "cliClientKey"
    static let password = "cli-Secret-1"
    static var root: URL { URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent() }

    @Test("ncmb signature: the official vector, signed verbatim, with a response signature from --response-body")
    func signature() throws {
        let args = ["ncmb", "signature", "--method", "GET",
                    "--url", "https://mbaas.api.nifcloud.com/2013-09-01/classes/TestClass?where=%7B%22testKey%22%3A%22testValue%22%7D",
                    "--application-key", "6145f91061916580c742f806bab67649d10f45920246ff459404c46f00ff3e56",
                    "--client-key", "1343d198b510a0315db1c03f3aa0e32418b7a743f8e4b47cbff670601345cf75",
                    "--timestamp", "2013-12-02T02:44:35.452Z"]
        let (status, out, err) = try Self.run(args)
        #expect(status == 0, "\(err)")
        let json = try JSON.parse(out)
        #expect(json["signature"] == "AltGkQgXurEV7u0qMd+87ud7BKuueldoCjaMgVc9Bes=")
        #expect(json["stringToSign"] == "GET\nmbaas.api.nifcloud.com\n/2013-09-01/classes/TestClass\nSignatureMethod=HmacSHA256&SignatureVersion=2&X-NCMB-Application-Key=6145f91061916580c742f806bab67649d10f45920246ff459404c46f00ff3e56&X-NCMB-Timestamp=2013-12-02T02:44:35.452Z&where=%7B%22testKey%22%3A%22testValue%22%7D")
        #expect(json["responseSignature"] == .null)

        // The real server's response signature (ncmb_android NCMBResponseTest), timestamp signed percent-encoded.
        let body = FileManager.default.temporaryDirectory.appendingPathComponent("ncmb-body-\(UUID().uuidString).json")
        try Data(#"{"createDate":"2016-05-27T04:46:10.572Z","objectId":"5V67LBiCaOJl5psP"}"#.utf8).write(to: body)
        defer { try? FileManager.default.removeItem(at: body) }
        let (s2, out2, err2) = try Self.run([
            "ncmb", "signature", "--method", "POST", "--url", "https://mb.api.cloud.nifty.com/2013-09-01/classes/ResponseSignatureTest",
            "--application-key", "6e58668eb431b6cef540116a18ac269eeee83383acd61cdb08101e2531cdeece",
            "--client-key", "9714b04345bcdad2d609d3b9ba9bd89c7bed612189d4e6a923c70bf87da60e76",
            "--timestamp", "2016-05-27T04%3A46%3A09.376Z", "--response-body", body.path])
        #expect(s2 == 0, "\(err2)")
        #expect(try JSON.parse(out2)["responseSignature"] == "tLdHmmi7td5+YnjdPxhPYfjV6Lh8pZNBrd2kH7EejnU=")

        let (s3, _, err3) = try Self.run(["ncmb", "signature", "--url", "not a url", "--application-key", "a", "--client-key", "b"])
        #expect(s3 != 0)
        #expect(err3.contains("--url"))
    }

    @Test("objects, files and auth commands on an ncmb+http:// URL (replayed NCMB behaviour)")
    func commands() throws {
        let cassette = try Cassette.load(
            from: Self.root.appendingPathComponent("Fixtures/CLICassettes/ncmb/session.json"),
            substitutions: ["<APPLICATION_KEY>": Self.appKey, "<BACKEND_SECRET>": Self.clientKey, "<CLI_PASSWORD>": Self.password])
        let replay = ReplayingTransport(cassette: cassette, profile: NCMBBackendFactory().wireProfile, strict: false)
        let server = try LoopbackServer { request in
            do { return try await replay.send(request) } catch {
                return TransportResponse(status: 599, body: Data("\(error)".utf8))
            }
        }
        defer { server.stop() }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("ncmb-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let url = "ncmb+http://\(Self.appKey):\(Self.clientKey)@127.0.0.1:\(server.port)"
        let common = ["--format", "json", "--session-file", work.appendingPathComponent("sessions.json").path]
        func run(_ args: [String]) throws -> JSON {
            let (status, out, err) = try Self.run(args + common)
            #expect(status == 0, "mbaas \(args.prefix(2).joined(separator: " ")): \(err)")
            return (try? JSON.parse(out)) ?? .null
        }

        let created = try run(["objects", "create", url, "Memo", #"{"title":"hello from the CLI","money":5}"#])
        let id = try #require(created["id"]?.stringValue)
        #expect(created["class"] == "Memo")
        #expect(created["fields"]?["money"] == 5)
        let got = try run(["objects", "get", url, "Memo", id])
        #expect(got["fields"]?["title"] == "hello from the CLI")
        #expect(got["createdAt"] == created["createdAt"])
        let found = try run(["objects", "query", url, "Memo", "--where", #"{"money":{"$gte":5}}"#])
        #expect(found["results"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == [id])

        let local = work.appendingPathComponent("note.txt")
        let content = Data("uploaded by the mbaas CLI\n".utf8)
        try content.write(to: local)
        let uploaded = try run(["files", "upload", url, local.path, "--name", "cli-note.txt"])
        #expect(uploaded["name"] == "cli-note.txt")
        #expect(uploaded["size"] == .int(Int64(content.count)))
        let out = work.appendingPathComponent("out.txt")
        _ = try run(["files", "download", url, "cli-note.txt", "-o", out.path])
        #expect(try Data(contentsOf: out) == content)

        let signedUp = try run(["auth", "signup", url, "cliuser", "--password", Self.password])
        #expect(signedUp["username"] == "cliuser")
        _ = try run(["auth", "logout", url])
        let loggedIn = try run(["auth", "login", url, "cliuser", "--password", Self.password])
        #expect(loggedIn["userId"] == signedUp["userId"])
        let me = try run(["auth", "whoami", url])
        #expect(me["username"] == "cliuser")
        #expect(me["id"] == signedUp["userId"])
        // The session is kept in the session file, never printed.
        #expect(FileManager.default.fileExists(atPath: work.appendingPathComponent("sessions.json").path))
        #expect(loggedIn["token"] == nil)
        #expect(replay.unusedInteractions.isEmpty, "unused: \(replay.unusedInteractions)")
    }

    /// Runs the built `mbaas` (located by ``CLIHarness``) with exactly these arguments.
    static func run(_ arguments: [String]) throws -> (Int32, String, String) {
        let harness = try CLIHarness()
        defer { harness.cleanUp() }
        let output = try harness.run(arguments, sessionOption: false)
        return (output.status, output.text, output.stderr)
    }
}
