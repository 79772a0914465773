import Foundation
import MBaaSCore
import MBaaSTesting
import Testing

/// `mbaas serve … --tls-self-signed DIR` and `--tls-cert FILE --tls-key FILE`: HTTPS, the CA's path on the start
/// line, https URLs; bad files and flag combinations with their documented exit statuses.
@Suite("mbaas serve over HTTPS", .ownThreads)
struct ServeTLSCLITests {
    /// `curl --silent` with `arguments`: its exit status and standard output.
    func curl(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["curl", "--silent", "--max-time", "20"] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try ChildProcesses.run(process)
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }

    @Test("--tls-self-signed: the start line names the CA, the URLs are https, a client trusting the CA gets answers")
    func selfSigned() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let certs = cli.directory.appendingPathComponent("certs")
        let (server, started) = try cli.startServer(["--dialect", "parse", "--app-id", "tlsapp", "--rest-key", "tls-rest-key",
                                                     "--tls-self-signed", certs.path])
        defer { if server.isRunning { server.terminate() } }
        let ca = certs.appendingPathComponent("ca.pem").path
        #expect(started["caCertificate"]?.stringValue == ca, "\(started.printed())")
        let base = try #require(started["baseURL"]?.stringValue)
        #expect(base.hasPrefix("https://127.0.0.1:"), "\(base)")
        #expect(started["backendURL"]?.stringValue?.hasPrefix("parse://tlsapp:tls-rest-key@127.0.0.1:") == true, "\(started.printed())")
        let headers = ["-H", "X-Parse-Application-Id: tlsapp", "-H", "X-Parse-REST-API-Key: tls-rest-key", "-H", "Content-Type: application/json"]
        let created = try curl(["--cacert", ca] + headers + ["-d", #"{"title":"over TLS"}"#, base + "/parse/classes/Memo"])
        #expect(created.status == 0 && created.output.contains("\"objectId\""), "exit \(created.status): \(created.output)")
        let refused = try curl(headers + [base + "/parse/classes/Memo"])
        #expect(refused.status == 60, "without the CA: exit \(refused.status)")
        server.terminate()
        server.waitUntilExit()
        #expect(server.terminationStatus == 143)
    }

    @Test("--tls-cert/--tls-key serve a given certificate; the https form of the URL is served")
    func givenCertificateAndURLForm() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let certs = cli.directory.appendingPathComponent("given")
        // A certificate made by a first run; the second serves it as a brought certificate.
        let (first, firstLine) = try cli.startServer(["ncmb://K1:C1@127.0.0.1", "--tls-self-signed", certs.path])
        defer { if first.isRunning { first.terminate() } }
        #expect(firstLine["backendURL"]?.stringValue?.hasPrefix("ncmb://K1:C1@127.0.0.1:") == true, "\(firstLine.printed())")
        first.terminate()
        first.waitUntilExit()
        let (server, started) = try cli.startServer(["ncmb+http://K2:C2@127.0.0.1", "--tls-cert", certs.appendingPathComponent("server.pem").path,
                                                     "--tls-key", certs.appendingPathComponent("server-key.pem").path])
        defer { if server.isRunning { server.terminate() } }
        #expect(started["caCertificate"] == nil, "\(started.printed())")
        let base = try #require(started["baseURL"]?.stringValue)
        let answer = try curl(["--cacert", certs.appendingPathComponent("ca.pem").path, "-o", "/dev/null", "-w", "%{http_code}",
                               base + "/2013-09-01/classes/Memo"])
        #expect(answer.status == 0 && answer.output == "401", "exit \(answer.status): \(answer.output)")
        server.terminate()
        server.waitUntilExit()
    }

    @Test("--dialect salesforce over HTTPS: the users file's user gets a token from the printed instance; a wrong secret is invalid_client")
    func salesforceDialect() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let users = cli.directory.appendingPathComponent("users.json")
        try Data(#"[{"username":"ada@example.com","password":"ada-pass-1"}]"#.utf8).write(to: users)
        let certs = cli.directory.appendingPathComponent("sf-certs")
        let (server, started) = try cli.startServer(["--dialect", "salesforce", "--client-id", "cid", "--client-secret", "csecret",
                                                     "--users", users.path, "--tls-self-signed", certs.path])
        defer { if server.isRunning { server.terminate() } }
        #expect(started["dialect"] == "salesforce")
        #expect(started["backendURL"]?.stringValue?.hasPrefix("salesforce://cid:csecret@127.0.0.1:") == true, "\(started.printed())")
        let base = try #require(started["baseURL"]?.stringValue)
        let ca = try #require(started["caCertificate"]?.stringValue)
        let form = "grant_type=password&client_id=cid&client_secret=csecret&username=ada%40example.com&password=ada-pass-1"
        let token = try curl(["--cacert", ca, "-d", form, base + "/services/oauth2/token"])
        let body = try JSON.parse(Data(token.output.utf8))
        #expect(body["instance_url"] == .string(base) && body["access_token"]?.stringValue?.isEmpty == false, "\(token.output)")
        let wrong = try curl(["--cacert", ca, "-d", form.replacingOccurrences(of: "csecret", with: "other"), base + "/services/oauth2/token"])
        #expect(wrong.output.contains(#""error":"invalid_client""#), "\(wrong.output)")
        server.terminate()
        server.waitUntilExit()
        #expect(server.terminationStatus == 143)
    }

    @Test("bad TLS input: a missing file exits 7, a file that is not PEM or a key of another certificate 2, half a pair or both forms 64")
    func badInput() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let one = cli.directory.appendingPathComponent("one"), two = cli.directory.appendingPathComponent("two")
        // Two certificate sets, written by runs that stop at once (a port in use would not matter: the files come first).
        for dir in [one, two] {
            let (server, _) = try cli.startServer(["--dialect", "ncmb", "--application-key", "K", "--client-key", "C", "--tls-self-signed", dir.path])
            server.terminate()
            server.waitUntilExit()
        }
        let text = cli.directory.appendingPathComponent("notes.txt")
        try Data("hello\n".utf8).write(to: text)
        let base = ["serve", "--dialect", "ncmb", "--application-key", "K", "--client-key", "C"]
        func expect(_ extra: [String], status: Int32, saying words: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let out = try cli.run(base + extra, sessionOption: false)
            #expect(out.status == status, "\(extra): \(out.stderr)", sourceLocation: sourceLocation)
            #expect(out.stderr.contains(words), "\(extra): \(out.stderr)", sourceLocation: sourceLocation)
        }
        let cert = one.appendingPathComponent("server.pem").path, key = one.appendingPathComponent("server-key.pem").path
        try expect(["--tls-cert", cli.directory.appendingPathComponent("absent.pem").path, "--tls-key", key], status: 7, saying: "absent.pem does not exist")
        try expect(["--tls-cert", text.path, "--tls-key", key], status: 2, saying: "notes.txt")
        try expect(["--tls-cert", cert, "--tls-key", two.appendingPathComponent("server-key.pem").path], status: 2,
                   saying: "does not belong to the first certificate")
        try expect(["--tls-self-signed", text.path], status: 2, saying: "is a file")
        try expect(["--tls-cert", cert], status: 64, saying: "--tls-cert needs --tls-key")
        try expect(["--tls-key", key], status: 64, saying: "--tls-key needs --tls-cert")
        try expect(["--tls-cert", cert, "--tls-key", key, "--tls-self-signed", two.path], status: 64,
                   saying: "either --tls-self-signed or --tls-cert/--tls-key")
    }
}
