import Foundation
import MBaaSCore
import MBaaSTesting
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The CLI under misuse and faults, run as a child process (issue 11): output errors, concurrent logins,
/// database modes, interrupted uploads.
@Suite("mbaas CLI hardening", .ownThreads)
struct HardeningTests {
    // MARK: Output errors

    @Test func aFullDiskOnStdoutIsAnOrdinaryError() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let full = try FileHandle(forWritingTo: URL(fileURLWithPath: "/dev/full"))
        defer { try? full.close() }
        let r = try cli.run(["objects", "create", cli.url, "Memo", #"{"a":1}"#, "--format", "json"], standardOutput: full)
        #expect(r.status == 7, "stderr: \(r.stderr)")
        #expect(r.stderr.hasPrefix("mbaas: error: localIO: cannot write to standard output: No space left on device"))
        #expect(r.stderr.contains("changes the command made before printing are kept"))
        #expect(!r.stderr.contains("Fatal error"))
        // The record was committed before printing: exactly one.
        let counted = try cli.json(["objects", "query", cli.url, "Memo", "--limit", "0", "--count"])
        #expect(counted["count"] == 1)
    }

    @Test("a misspelt URL option is refused, named with the known ones, before anything is opened: never ignored in silence")
    func unknownURLOptionsAreRefused() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let db = cli.directory.appendingPathComponent("typo.db").path
        for (url, said) in [
            ("sqlite:\(db)?file=/tmp", "unknown sqlite URL option 'file' (known: files)"),
            ("ncmb+http://A:C@127.0.0.1:9/?verifyResponseSignatures=true", "unknown NCMB URL option 'verifyResponseSignatures' (known: apiVersion,"),
            ("parse+http://APP:KEY@127.0.0.1:9/parse?masterkey=M", "unknown Parse URL option 'masterkey' (known: batchSize, currentUserRoles, masterKey, timeout)"),
            ("bundle:\(cli.directory.path)/b?x=1", "unknown bundle URL option 'x' (it takes none)"),
            ("ncmb-export:\(cli.directory.path)/e?x=1", "unknown ncmb-export URL option 'x' (it takes none)"),
        ] {
            // A create: the one command that would make a missing sqlite: file.
            let r = try cli.run(["objects", "create", url, "Memo", #"{"a":1}"#, "--format", "json"])
            #expect(r.status == 2 && r.stderr.contains(said), "\(url): \(r.status) \(r.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: db), "nothing was created")
        // The migration commands refuse them the same way, before any state folder exists.
        let state = cli.directory.appendingPathComponent("state").path
        let m = try cli.run(["migrate", "--from", "sqlite:\(db)?file=x", "--to", cli.url, "--state", state], sessionOption: false)
        #expect(m.status == 2 && m.stderr.contains("unknown sqlite URL option 'file'") && !FileManager.default.fileExists(atPath: state), "\(m.stderr)")
    }

    @Test func aBrokenPipeEndsQuietly() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let source = cli.directory.appendingPathComponent("big.bin")
        try Data(repeating: 7, count: 1_000_000).write(to: source)
        _ = try cli.json(["files", "upload", cli.url, source.path, "--name", "big.bin"])
        for arguments in [["files", "download", cli.url, "big.bin"], ["objects", "query", cli.url, "Memo"]] {
            let pipe = Pipe()
            // No reader at all: the first write fails with EPIPE (SIGPIPE is ignored by mbaas).
            try pipe.fileHandleForReading.close()
            let r = try cli.run(arguments, standardOutput: pipe.fileHandleForWriting)
            try? pipe.fileHandleForWriting.close()
            #expect(r.status == 141, "\(arguments): stderr: \(r.stderr)")
            #expect(r.stderr.isEmpty, "\(arguments): stderr: \(r.stderr)")
        }
    }

    // MARK: Concurrent logins

    @Test func parallelLoginsKeepEverySession() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let urls = (1...4).map { "sqlite:" + cli.directory.appendingPathComponent("s\($0).db").path }
        func parallel(_ verb: String) throws {
            let processes = try urls.enumerated().map { i, url in
                let p = try cli.makeProcess(["auth", verb, url, "u\(i)", "--password", "pw", "--format", "json"])
                p.standardOutput = FileHandle.nullDevice
                p.standardError = FileHandle.nullDevice
                try CLIHarness.launch(p)
                return p
            }
            for p in processes { p.waitUntilExit(); #expect(p.terminationStatus == 0, "\(verb) failed") }
        }
        try parallel("signup")
        for round in 0..<4 {
            try FileManager.default.removeItem(at: cli.sessionFile)
            try parallel("login")
            let saved = try JSON.parse(Data(contentsOf: cli.sessionFile))
            #expect(saved.objectValue?.count == 4, "round \(round): \(saved.objectValue?.keys.sorted() ?? [])")
        }
    }

    // MARK: Database file and modes

    @Test func theDatabaseIsPrivateAndReadsCreateNothing() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        _ = try cli.json(["objects", "create", cli.url, "Memo", #"{"a":1}"#])
        let path = String(cli.url.dropFirst("sqlite:".count))
        let mode = try (FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
        #expect(mode.map { $0 & 0o777 } == 0o600)

        let typo = "sqlite:" + cli.directory.appendingPathComponent("typo.db").path
        let missing = try cli.run(["objects", "get", typo, "Memo", "abc"])
        #expect(missing.status == 3 && missing.stderr.contains("no database at"), "\(missing.stderr)")
        let query = try cli.run(["objects", "query", typo, "Memo"])
        #expect(query.status == 3)
        #expect(!FileManager.default.fileExists(atPath: cli.directory.appendingPathComponent("typo.db").path))
        #expect(!FileManager.default.fileExists(atPath: cli.directory.appendingPathComponent("typo.db-wal").path))
    }

    /// Run as `nobody` (needs root and setpriv; skipped otherwise): a 0444 database in a 0555 directory can be read.
    @Test func aReadOnlyDatabaseCanBeRead() throws {
        guard geteuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else { return }
        let cli = try CLIHarness()
        defer {
            chmod(cli.directory.appendingPathComponent("ro").path, 0o755)
            cli.cleanUp()
        }
        let dir = cli.directory.appendingPathComponent("ro")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let url = "sqlite:" + dir.appendingPathComponent("ro.db").path
        let created = try cli.json(["objects", "create", url, "Memo", #"{"a":1}"#])
        let id = try #require(created["id"]?.stringValue)
        chmod(dir.appendingPathComponent("ro.db").path, 0o444)
        chmod(dir.path, 0o555)
        chmod(cli.directory.path, 0o755)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        p.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", try CLIHarness.binary().path,
                       "objects", "get", url, "Memo", id, "--format", "json", "--session-file", "/nonexistent/sessions.json"]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try CLIHarness.launch(p)
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "stderr: \(stderr)")
        #expect((try? JSON.parse(stdout))?["fields"]?["a"] == 1)
    }

    /// Run as `nobody` on a database it may write (0666 in a 0777 directory) but does not own: repair-acl is
    /// refused. Needs root and setpriv; skipped otherwise.
    @Test func repairACLIsRefusedToOtherUsers() throws {
        guard geteuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else { return }
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let dir = cli.directory.appendingPathComponent("shared")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let db = dir.appendingPathComponent("s.db").path
        let created = try cli.json(["objects", "create", "sqlite:" + db, "Memo", #"{"a":1}"#])
        let id = try #require(created["id"]?.stringValue)
        for path in [dir.path, cli.directory.path] { chmod(path, 0o777) }
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: db + suffix) { chmod(db + suffix, 0o666) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        p.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", try CLIHarness.binary().path,
                       "objects", "repair-acl", "sqlite:" + db, "Memo", id, #"{"*":{"read":true}}"#,
                       "--session-file", "/nonexistent/sessions.json"]
        let err = Pipe()
        p.standardOutput = FileHandle.nullDevice
        p.standardError = err
        try CLIHarness.launch(p)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 4 && stderr.contains("only the owner of"), "\(stderr)")
    }

    // MARK: Interrupted uploads

    @Test(arguments: [SIGINT, SIGTERM])
    func anInterruptedUploadLeavesNoPartialFile(signal signo: Int32) throws {
        signal(SIGPIPE, SIG_IGN)
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        _ = try cli.json(["objects", "create", cli.url, "Memo", #"{"a":1}"#])   // the database exists
        let fifo = cli.directory.appendingPathComponent("source.fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        // A writer that keeps the upload busy until the reader goes away.
        let writer = Thread {
            let fd = open(fifo, O_WRONLY)
            guard fd >= 0 else { return }
            let chunk = [UInt8](repeating: 1, count: 65536)
            for _ in 0..<100_000 { if write(fd, chunk, chunk.count) < 0 { break }; usleep(1000) }
            close(fd)
        }
        writer.start()
        let process = try cli.makeProcess(["files", "upload", cli.url, fifo, "--name", "big.bin"])
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try CLIHarness.launch(process)
        let files = cli.directory.appendingPathComponent("db.sqlite-files")
        func partials() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: files.path)) ?? []).filter { $0.hasPrefix(".partial-") }
        }
        var waited = 0
        while partials().isEmpty, waited < 3000 { usleep(10_000); waited += 10 }
        #expect(!partials().isEmpty, "the upload never started")
        usleep(200_000)
        kill(process.processIdentifier, signo)
        process.waitUntilExit()
        #expect(process.terminationStatus == 128 + signo)
        #expect(partials().isEmpty, "left behind: \(partials())")
        #expect(try cli.json(["files", "list", cli.url])["results"] == .array([]))
    }

    /// `--timeout` bounds an HTTP request to a server that accepts the connection and never answers.
    @Test func aHangingServerTimesOutWithAClearMessage() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let (fd, port) = try silentTCPListener()
        defer { close(fd) }
        // The kernel completes the handshake (backlog); nobody ever reads or answers.
        let started = Date()
        let r = try cli.run(["objects", "get", "ncmb+http://appkey:clientkey@127.0.0.1:\(port)", "Memo", "x", "--timeout", "1"])
        #expect(r.status == 6, "\(r.stderr)")
        #expect(r.stderr.contains("timed out after 1 s") && !r.stderr.contains("NSURLErrorDomain"), "\(r.stderr)")
        #expect(Date().timeIntervalSince(started) < 30)
    }

    // MARK: Terminal safety, secrets, sessions, errors

    @Test func controlCharactersAreEscaped() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let table = try cli.run(["objects", "create", cli.url, "Esc", #"{"evil":"\u001b[31mRED\u001b[0m\u0007bell\rCR\u009b"}"#,
                                 "--format", "table"])
        #expect(table.status == 0)
        #expect(!table.stdout.contains(0x1B) && !table.stdout.contains(0x07) && !table.stdout.contains(0x0D))
        #expect(table.text.contains(#"\x1B[31mRED"#) && table.text.contains(#"\x07bell\x0DCR\x9B"#))
        let error = try cli.run(["objects", "get", cli.url, "Esc", "id\u{1B}[2Jclear"])
        #expect(error.status != 0 && !error.stderr.contains("\u{1B}") && error.stderr.contains(#"\x1B[2Jclear"#))
    }

    @Test func theURLCanComeFromAFileOrTheEnvironment() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        _ = try cli.json(["objects", "create", cli.url, "Memo", #"{"a":1}"#, "--id", "m1"])
        let file = cli.directory.appendingPathComponent("backend.url")
        try Data((cli.url + "\n").utf8).write(to: file)
        chmod(file.path, 0o644)
        let open = try cli.run(["objects", "get", "-", "Memo", "m1", "--url-file", file.path])
        #expect(open.status == 2 && open.stderr.contains("chmod 600"), "\(open.stderr)")
        chmod(file.path, 0o600)
        #expect(try cli.json(["objects", "get", "-", "Memo", "m1", "--url-file", file.path])["id"] == "m1")
        let env = try cli.run(["objects", "get", "-", "Memo", "m1", "--format", "json"], environment: ["MBAAS_BACKEND_URL": cli.url])
        #expect(env.status == 0 && (try? env.json())?["id"] == "m1")
        let neither = try cli.run(["objects", "get", "-", "Memo", "m1"])
        #expect(neither.status == 2 && neither.stderr.contains("MBAAS_BACKEND_URL"))
    }

    @Test func anUnreadableSessionFileDoesNotBlockAnonymousWork() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let notAFile = cli.directory.appendingPathComponent("sessions-dir")
        try FileManager.default.createDirectory(at: notAFile, withIntermediateDirectories: true)
        let r = try cli.run(["objects", "create", cli.url, "Memo", #"{"a":1}"#, "--format", "json", "--session-file", notAFile.path],
                            sessionOption: false)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("warning: the session file") && r.stderr.contains("continuing without a saved session"))
        #expect(!r.stderr.contains("NSCocoaErrorDomain"))
    }

    @Test func logoutRevokesAndMemoryRefusesSessions() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        _ = try cli.json(["auth", "signup", cli.url, "alice", "--password", "pw"])
        let copy = cli.directory.appendingPathComponent("copy.json")
        try FileManager.default.copyItem(at: cli.sessionFile, to: copy)
        #expect(try cli.json(["auth", "logout", cli.url])["loggedOut"] == true)
        let stale = try cli.run(["auth", "whoami", cli.url, "--session-file", copy.path], sessionOption: false)
        #expect(stale.status == 4, "a copied token still works after logout: \(stale.text)")

        let memory = try cli.run(["auth", "signup", "sqlite::memory:", "m", "--password", "pw"])
        #expect(memory.status == 2 && memory.stderr.contains("sqlite::memory:"))
        let saved = try JSON.parse(Data(contentsOf: cli.sessionFile))
        #expect(saved["sqlite::memory:"] == nil)
    }

    @Test func machineReadableErrorsAndVersion() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let missing = try cli.run(["objects", "get", cli.url, "Memo", "x", "--format", "json"])
        #expect(missing.status == 3)
        let error = try JSON.parse(Data(missing.stderr.utf8))
        #expect(error["error"]?["kind"] == "notFound" && error["error"]?["exitStatus"] == 3)
        #expect(error["error"]?["message"]?.stringValue?.contains("no database") == true)
        #expect(error["error"]?["vendorCode"] == .null && error["error"]?["httpStatus"] == .null)

        let usage = try cli.run(["objects", "query", cli.url, "Memo", "--bogus", "--format", "json"])
        #expect(usage.status == 64)
        #expect((try? JSON.parse(Data(usage.stderr.utf8)))?["error"]?["kind"] == "usage", "\(usage.stderr)")

        let negative = try cli.run(["objects", "query", cli.url, "Memo", "--limit", "-1"])
        #expect(negative.status == 64 && negative.stderr.contains("--limit must be >= 0"), "\(negative.stderr)")

        let version = try cli.run(["--version"], sessionOption: false)
        #expect(version.status == 0 && version.text.trimmingCharacters(in: .whitespacesAndNewlines) == MBaaSKitVersion.current)
    }

    // MARK: Streaming, large arguments, limits, administration

    @Test func queriesStreamAsJSONAndNDJSON() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let fields = cli.directory.appendingPathComponent("fields.json")
        for i in 0..<7 {
            try Data(#"{"n":\#(i),"big":"\#(String(repeating: "x", count: 200_000))"}"#.utf8).write(to: fields)
            _ = try cli.json(["objects", "create", cli.url, "Memo", "@" + fields.path])   // beyond one argv string
        }
        let all = try cli.json(["objects", "query", cli.url, "Memo", "--all", "--page-size", "3", "--order", "n", "--count",
                                "--keys", "n"])
        #expect(all["count"] == 7)
        #expect(all["results"]?.arrayValue?.map { $0["fields"]?["n"] } == (0..<7).map { JSON.int(Int64($0)) })
        let nd = try cli.run(["objects", "query", cli.url, "Memo", "--all", "--order", "n", "--keys", "n", "--count",
                              "--format", "ndjson"])
        let lines: [JSON] = nd.text.split(separator: "\n").compactMap { try? JSON.parse(Data($0.utf8)) }
        #expect(nd.status == 0 && lines.count == 8)
        #expect(lines.first?["fields"]?["n"] == 0 && lines.last == .object(["count": 7]))
        let none = try cli.json(["objects", "query", cli.url, "Memo", "--where", "-", "--keys", "n"], stdin: #"{"n":{"$gt":100}}"#)
        #expect(none["results"] == .array([]))
        let piped = try cli.json(["objects", "query", cli.url, "Memo", "--where", "-", "--keys", "n"], stdin: #"{"n":3}"#)
        #expect(piped["results"]?.arrayValue?.count == 1)
    }

    @Test func limitsAndRegexAreInvalidRequests() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        _ = try cli.json(["objects", "create", cli.url, "Memo", #"{"s":"\#(String(repeating: "a", count: 46))"}"#])
        let ors = "{\"$or\":[" + (0..<990).map { "{\"k\":\($0)}" }.joined(separator: ",") + "]}"
        let tooMany = try cli.run(["objects", "query", cli.url, "Memo", "--where", ors])
        #expect(tooMany.status == 2 && tooMany.stderr.contains("at most 500"), "\(tooMany.stderr)")
        let keys = (0..<2000).map { "k\($0)" }.joined(separator: ",")
        let sorted = try cli.run(["objects", "query", cli.url, "Memo", "--order", keys])
        #expect(sorted.status == 2 && sorted.stderr.contains("at most 32"))
        let regex = try cli.run(["objects", "query", cli.url, "Memo", "--where", #"{"s":{"$regex":"(a|a)+c|!"}}"#])
        #expect(regex.status == 2 && regex.stderr.contains("took more than 250 ms"), "\(regex.stderr)")
    }

    @Test func downloadsStreamToAFileAtomically() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let bytes = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        let source = cli.directory.appendingPathComponent("in.bin")
        try bytes.write(to: source)
        _ = try cli.json(["files", "upload", cli.url, source.path, "--name", "in.bin"])
        let target = cli.directory.appendingPathComponent("out.bin")
        #expect(try cli.json(["files", "download", cli.url, "in.bin", "-o", target.path])["size"] == 3_000_000)
        #expect(try Data(contentsOf: target) == bytes)
        let noDir = try cli.run(["files", "download", cli.url, "in.bin", "-o", "/nonexistent/dir/out.bin"])
        #expect(noDir.status == 7 && noDir.stderr.contains("No such file or directory") && !noDir.stderr.contains("NSCocoaErrorDomain"))
        let missing = try cli.run(["files", "download", cli.url, "nope", "-o", target.path])
        #expect(missing.status == 3)
        #expect(try Data(contentsOf: target) == bytes)                       // the old target is untouched
        #expect(try FileManager.default.contentsOfDirectory(atPath: cli.directory.path).allSatisfy { !$0.hasSuffix(".download") && !$0.hasSuffix(".tmp") })
    }

    @Test func repairACLNeedsTheFileOwner() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let alice = try cli.json(["auth", "signup", cli.url, "alice", "--password", "pw"])
        let userId = try #require(alice["userId"]?.stringValue)
        let memo = try cli.json(["objects", "create", cli.url, "Memo", #"{"a":1}"#])
        #expect(memo["acl"]?[userId]?["write"] == true && memo["acl"]?["*"] == nil)   // owner-only by default
        let id = try #require(memo["id"]?.stringValue)
        let lockout = try cli.run(["objects", "create", cli.url, "Memo", "{}", "--acl", "{}"])
        #expect(lockout.status == 2 && lockout.stderr.contains("grants nothing"))
        _ = try cli.json(["auth", "logout", cli.url])
        #expect(try cli.run(["objects", "get", cli.url, "Memo", id]).status == 3)
        let repaired = try cli.json(["objects", "repair-acl", cli.url, "Memo", id, #"{"*":{"read":true}}"#])
        #expect(repaired["acl"] == .object(["*": .object(["read": true])]))
        #expect(try cli.json(["objects", "get", cli.url, "Memo", id])["fields"]?["a"] == 1)
        let file = cli.directory.appendingPathComponent("f.txt")
        try Data("f".utf8).write(to: file)
        _ = try cli.json(["auth", "login", cli.url, "alice", "--password", "pw"])
        _ = try cli.json(["files", "upload", cli.url, file.path])                // private to alice
        _ = try cli.json(["auth", "logout", cli.url])
        #expect(try cli.run(["files", "download", cli.url, "f.txt"]).status == 3)
        _ = try cli.json(["files", "repair-acl", cli.url, "f.txt", #"{"*":{"read":true}}"#])
        #expect(try cli.run(["files", "download", cli.url, "f.txt"]).stdout == Data("f".utf8))
        let notLocal = try cli.run(["objects", "repair-acl", "ncmb://a:b@127.0.0.1:1", "Memo", id, #"{"*":{"read":true}}"#])
        #expect(notLocal.status == 2 && notLocal.stderr.contains("sqlite:"))
    }
}
