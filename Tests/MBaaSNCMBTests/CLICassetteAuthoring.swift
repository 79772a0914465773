import Foundation
import MBaaSCore
import MBaaSNCMB
import MBaaSReplay
import MBaaSTesting
import Testing

/// Authors `Fixtures/CLICassettes/ncmb/session.json`, the cassette the CLI end-to-end test
/// (`Tests/mbaasTests/NCMBCLITests.swift`) replays: the built `mbaas` binary runs a fixed script of object, file
/// and auth commands against the simulator behind a loopback server, through a recording transport.
/// A generator, not a test: it runs only with `MBAAS_AUTHOR_CASSETTES=1` (build the `mbaas` product first).
@Suite("NCMB CLI cassette", .ownThreads)
struct CLICassetteAuthoring {
    static let appKey = "cliApplicationKey"
    static let clientKey = "cliClientKey"
    static let password = "cli-Secret-1"

    @Test("author the ncmb-cli cassette from the simulator",
          .enabled(if: ProcessInfo.processInfo.environment["MBAAS_AUTHOR_CASSETTES"] == "1"))
    func author() async throws {
        let binary = try #require(Self.mbaasBinary(), "build the mbaas product first (swift build --product mbaas)")
        let sim = NCMBSimulator(applicationKey: Self.appKey, clientKey: Self.clientKey, start: ConformanceCassetteTests.authoredAt)
        let recorder = RecordingTransport(wrapping: sim, profile: .ncmb, secrets: [
            ("<APPLICATION_KEY>", Self.appKey), ("<BACKEND_SECRET>", Self.clientKey), ("<CLI_PASSWORD>", Self.password),
        ])
        let server = try LoopbackServer { request in
            (try? await recorder.send(request)) ?? TransportResponse(status: 500)
        }
        defer { server.stop() }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("ncmb-cli-author-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }

        let url = "ncmb+http://\(Self.appKey):\(Self.clientKey)@127.0.0.1:\(server.port)"
        let common = ["--format", "json", "--session-file", work.appendingPathComponent("sessions.json").path]
        func run(_ args: [String]) throws -> JSON {
            let (status, out, err) = try Self.runProcess(binary, args + common)
            guard status == 0 else { throw MBaaSError(.invalidRequest, "mbaas \(args.prefix(2).joined(separator: " ")) exited \(status): \(err)") }
            return try JSON.parse(out)
        }
        let created = try run(["objects", "create", url, "Memo", #"{"title":"hello from the CLI","money":5}"#])
        let id = try #require(created["id"]?.stringValue)
        _ = try run(["objects", "get", url, "Memo", id])
        _ = try run(["objects", "query", url, "Memo", "--where", #"{"money":{"$gte":5}}"#])
        let local = work.appendingPathComponent("note.txt")
        try Data("uploaded by the mbaas CLI\n".utf8).write(to: local)
        _ = try run(["files", "upload", url, local.path, "--name", "cli-note.txt"])
        _ = try run(["files", "download", url, "cli-note.txt", "-o", work.appendingPathComponent("out.txt").path])
        _ = try run(["auth", "signup", url, "cliuser", "--password", Self.password])
        _ = try run(["auth", "logout", url])
        _ = try run(["auth", "login", url, "cliuser", "--password", Self.password])
        _ = try run(["auth", "whoami", url])

        let cassette = recorder.cassette(
            name: "ncmb-cli.session", adapter: "ncmb",
            provenance: Provenance(kind: .authored, server: ConformanceCassetteTests.provenance.server,
                                   serverVersion: "2013-09-01", facts: ConformanceCassetteTests.provenance.facts,
                                   notes: "The mbaas CLI (objects create/get/query, files upload/download, auth signup/logout/login/whoami) against the documented-behaviour simulator behind a loopback server; replayed by Tests/mbaasTests/NCMBCLITests.swift."),
            recordedAt: ConformanceCassetteTests.authoredAt, backendURL: "ncmb+http://\(Self.appKey):\(Self.clientKey)@127.0.0.1")
        // The simulator named each exchange's fact (X-MBaaS-Fact); the recorder moved it into the cassette.
        #expect(cassette.interactions.allSatisfy { $0.evidence != nil })
        let file = ConformanceCassetteTests.fixtures.appendingPathComponent("CLICassettes/ncmb/session.json")
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try cassette.write(to: file)
        #expect(cassette.interactions.count >= 9)
    }

    /// The `mbaas` executable built next to the tests.
    static func mbaasBinary() -> URL? {
        var candidates = [Bundle.main.bundleURL, URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()]
        candidates += Bundle.allBundles.map { $0.bundleURL.deletingLastPathComponent() }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        candidates.append(root.appendingPathComponent(".build/debug"))
        for dir in candidates {
            let binary = dir.appendingPathComponent("mbaas")
            if FileManager.default.isExecutableFile(atPath: binary.path) { return binary }
        }
        return nil
    }

    /// Runs a process to completion; returns its status, stdout and stderr.
    static func runProcess(_ binary: URL, _ arguments: [String]) throws -> (Int32, String, String) {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try ChildProcesses.run(process)
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
    }
}
