import Foundation
import MBaaSCore
import MBaaSTesting
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
// `struct stat` belongs to CDispatch once swift-crypto (linked by the emulator) has loaded libdispatch's headers, as in
// Sources/mbaas/OutputFile.swift.
#if canImport(CDispatch)
import CDispatch
#endif

/// Issue 32, points 2, 11, 12 and 14: outputs never replace what they point at; exit statuses and errors as the
/// README documents them; input the CLI refuses (exit 2, naming the argument); files fetched by their File value.
@Suite("mbaas outputs, inputs and exit statuses", .ownThreads)
struct OutputsAndInputsTests {
    static func fileType(_ path: String) -> mode_t {
        var info = stat()
        guard lstat(path, &info) == 0 else { return 0 }
        return info.st_mode & 0o170000
    }

    /// A harness with one stored file `in.txt` holding "hello".
    static func withStoredFile() throws -> CLIHarness {
        let cli = try CLIHarness()
        let source = cli.directory.appendingPathComponent("in.txt")
        try Data("hello".utf8).write(to: source)
        _ = try cli.json(["files", "upload", cli.url, source.path, "--name", "in.txt"])
        return cli
    }

    // MARK: 2. Outputs never replace what they point at

    @Test("--output into a FIFO writes through to its reader; the FIFO stays a FIFO")
    func outputIntoAFIFO() throws {
        let cli = try Self.withStoredFile()
        defer { cli.cleanUp() }
        let fifo = cli.directory.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let reader = open(fifo, O_RDONLY | O_NONBLOCK)   // a reader is there, so the writer's open does not wait
        #expect(reader >= 0)
        defer { close(reader) }
        let r = try cli.run(["files", "download", cli.url, "in.txt", "--output", fifo, "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = read(reader, &buffer, 64)
        #expect(n == 5 && String(decoding: buffer.prefix(max(n, 0)), as: UTF8.self) == "hello", "read \(n) bytes")
        #expect(Self.fileType(fifo) == 0o010000, "still a FIFO")
    }

    @Test("--output through a symbolic link replaces what it points at, the link stays; a dangling link is refused (7)")
    func outputThroughASymbolicLink() throws {
        let cli = try Self.withStoredFile()
        defer { cli.cleanUp() }
        let real = cli.directory.appendingPathComponent("real.txt")
        try Data("old".utf8).write(to: real)
        let link = cli.directory.appendingPathComponent("link.txt").path
        #expect(symlink("real.txt", link) == 0)
        let r = try cli.run(["files", "download", cli.url, "in.txt", "--output", link, "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(Self.fileType(link) == 0o120000, "the link is still a link")
        #expect(try String(contentsOf: real, encoding: .utf8) == "hello")

        let dangling = cli.directory.appendingPathComponent("dangling.txt").path
        #expect(symlink("missing.txt", dangling) == 0)
        let refused = try cli.run(["files", "download", cli.url, "in.txt", "--output", dangling])
        #expect(refused.status == 7 && refused.stderr.contains("symbolic link"), "\(refused.stderr)")
        #expect(Self.fileType(dangling) == 0o120000)
        #expect(!FileManager.default.fileExists(atPath: cli.directory.appendingPathComponent("missing.txt").path))

        // The report of a migration follows the same rule (--report).
        let reportTarget = cli.directory.appendingPathComponent("report-real.json")
        try Data().write(to: reportTarget)
        let reportLink = cli.directory.appendingPathComponent("report.json").path
        #expect(symlink("report-real.json", reportLink) == 0)
        let target = "sqlite:" + cli.directory.appendingPathComponent("copy.db").path
        let migrated = try cli.run(["migrate", "--from", cli.url, "--to", target, "--state", cli.directory.appendingPathComponent("state").path,
                                    "--report", reportLink, "--format", "json"], sessionOption: false)
        #expect(migrated.status == 0, "\(migrated.stderr)")
        #expect(Self.fileType(reportLink) == 0o120000)
        #expect((try? JSON.parse(Data(contentsOf: reportTarget)))?["ok"] == true)
    }

    @Test("--output onto a directory or into a missing folder: exit 7, nothing created; a regular file is replaced whole")
    func outputOntoDirectoriesAndMissingFolders() throws {
        let cli = try Self.withStoredFile()
        defer { cli.cleanUp() }
        let dir = cli.directory.appendingPathComponent("adir")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: false)
        let onDir = try cli.run(["files", "download", cli.url, "in.txt", "--output", dir.path])
        #expect(onDir.status == 7 && onDir.stderr.contains("it is a directory"), "\(onDir.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)

        let nowhere = cli.directory.appendingPathComponent("no/such/dir/r.txt").path
        let conformance = try cli.run(["conformance", "--adapter", "local", "--scenario", "objects.crud.basic", "--output", nowhere],
                                      sessionOption: false)
        #expect(conformance.status == 7 && conformance.stderr.contains("localIO: cannot write the report \(nowhere)"),
                "\(conformance.stderr)")
        #expect(!conformance.stderr.contains("NSCocoaErrorDomain"))
        #expect(!FileManager.default.fileExists(atPath: cli.directory.appendingPathComponent("no").path), "no folder was created")

        let regular = cli.directory.appendingPathComponent("out.txt")
        try Data("previous".utf8).write(to: regular)
        #expect(try cli.json(["files", "download", cli.url, "in.txt", "--output", regular.path])["size"] == 5)
        #expect(try String(contentsOf: regular, encoding: .utf8) == "hello")
        #expect(Self.fileType(regular.path) == 0o100000)
        #expect(try FileManager.default.contentsOfDirectory(atPath: cli.directory.path).allSatisfy { !$0.hasSuffix(".tmp") })
    }

    @Test("--output onto a character device writes through; the device node stays (as root: mknod)",
          .enabled(if: geteuid() == 0, "mknod of a character device needs root; the FIFO and link cases run for everyone"))
    func outputOntoADevice() throws {
        let cli = try Self.withStoredFile()
        defer { cli.cleanUp() }
        let device = cli.directory.appendingPathComponent("mynull").path
        #expect(mknod(device, 0o020000 | 0o666, dev_t((1 << 8) | 3)   /* makedev(1, 3): /dev/null's numbers on Linux */) == 0, "mknod: \(String(cString: strerror(errno)))")
        let r = try cli.run(["files", "download", cli.url, "in.txt", "--output", device, "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(Self.fileType(device) == 0o020000, "still a character device")
        let report = try cli.run(["conformance", "--adapter", "local", "--scenario", "objects.crud.basic", "--output", device],
                                 sessionOption: false)
        #expect(report.status == 0, "\(report.stderr)")
        #expect(Self.fileType(device) == 0o020000, "still a character device")
    }

    // MARK: 14. Files by their File value

    @Test("files download and delete take the File value (JSON, @FILE, -) of a file attached to a record")
    func filesByTheirFileValue() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let memo = try cli.json(["objects", "create", cli.url, "Memo", #"{"title":"with a file"}"#])
        let id = try #require(memo["id"]?.stringValue)
        let source = cli.directory.appendingPathComponent("doc.txt")
        try Data("attached bytes".utf8).write(to: source)
        _ = try cli.json(["files", "upload", cli.url, source.path, "--attach", "Memo/\(id)/doc"])
        let record = try cli.json(["objects", "get", cli.url, "Memo", id])
        let file = try #require(record["fields"]?["doc"])
        #expect(file["__type"] == "File")
        let text = file.printed()

        let inline = try cli.run(["files", "download", cli.url, text])
        #expect(inline.status == 0 && inline.text == "attached bytes", "\(inline.stderr)")
        let valueFile = cli.directory.appendingPathComponent("file.json")
        try Data(text.utf8).write(to: valueFile)
        let fromFile = try cli.run(["files", "download", cli.url, "@" + valueFile.path])
        #expect(fromFile.status == 0 && fromFile.text == "attached bytes", "\(fromFile.stderr)")
        let out = cli.directory.appendingPathComponent("out.txt")
        let fromStdin = try cli.run(["files", "download", cli.url, "-", "--output", out.path, "--format", "json"], stdin: text)
        #expect(fromStdin.status == 0, "\(fromStdin.stderr)")
        #expect(try String(contentsOf: out, encoding: .utf8) == "attached bytes")

        let notAFile = try cli.run(["files", "download", cli.url, #"{"__type":"Date","iso":"2025-01-01T00:00:00.000Z"}"#])
        #expect(notAFile.status == 2 && notAFile.stderr.contains("File value"), "\(notAFile.stderr)")

        let deleted = try cli.run(["files", "delete", cli.url, "-", "--format", "json"], stdin: text)
        #expect(deleted.status == 0, "\(deleted.stderr)")
        let gone = try cli.run(["files", "download", cli.url, text])
        #expect(gone.status == 3, "\(gone.stderr)")
    }

    // MARK: 12. Input the CLI refuses

    @Test("inputs that would be ignored, dropped or changed are refused: exit 2 naming the argument, nothing written")
    func inputsAreRefused() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let memo = try cli.json(["objects", "create", cli.url, "Memo", #"{"n":1,"d":0.1}"#])
        let id = try #require(memo["id"]?.stringValue)
        #expect(memo["fields"]?["d"] == .double(0.1), "a decimal a double keeps as written is accepted")
        func refused(_ arguments: [String], _ named: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let r = try cli.run(arguments, sessionOption: arguments[0] != "migrate")
            #expect(r.status == 2 && r.stderr.contains(named), "mbaas \(arguments.joined(separator: " ")): \(r.status) \(r.stderr)",
                    sourceLocation: sourceLocation)
        }
        for order in ["-", ",,,", "$x", "title,", "--money"] {
            try refused(["objects", "query", cli.url, "Memo", "--order", order], "--order")
        }
        try refused(["objects", "query", cli.url, "Memo", "--keys", ""], "--keys")
        try refused(["objects", "query", cli.url, "Memo", "--keys", "a,,b"], "--keys")
        try refused(["objects", "query", cli.url, "Memo", "--page-size", "5000"], "--page-size 5000 is above this backend's maximum of 1000")
        try refused(["objects", "create", cli.url, "Memo", #"{"due":{"__type":"Date","iso":"2025-01-01T00:00:00.000Z","tz":"JST"}}"#], "'tz' would be lost")
        try refused(["objects", "create", cli.url, "Memo", #"{"n":{"__op":"Increment","amount":1}}"#], "is an update operation")
        try refused(["objects", "create", cli.url, "Memo", #"{"list":[{"__op":"Delete"}]}"#], "list[0]")
        try refused(["objects", "create", cli.url, "Memo", #"{"p":{"__type":"Pointer","className":"../x","objectId":"a"}}"#], "Pointer className '../x'")
        try refused(["objects", "create", cli.url, "Memo", #"{"p":{"__type":"Pointer","className":"a/b","objectId":"a"}}"#], "Pointer className 'a/b'")
        try refused(["objects", "update", cli.url, "Memo", id, #"{"p":{"__type":"Pointer","className":"..","objectId":"a"}}"#], "Pointer className '..'")
        try refused(["objects", "create", cli.url, "Memo", #"{"d":123456789.123456789}"#], "123456789.123456789 cannot be kept exactly")
        try refused(["objects", "update", cli.url, "Memo", id, #"{"d":0.12345678901234567890}"#], "cannot be kept exactly")
        try refused(["objects", "update", cli.url, "Memo", id, #"{"n":2}"#, "--expected-version", "abc"], "expected version 'abc'")
        try refused(["objects", "delete", cli.url, "Memo", id, "--expected-version", "abc"], "expected version 'abc'")
        let export = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/Samples/ncmb-memo-export").path
        let target = "sqlite:" + cli.directory.appendingPathComponent("target.db").path
        try refused(["migrate", "--from", "ncmb-export:" + export, "--to", target, "--classes", ""], "--classes")
        try refused(["migrate", "--from", "ncmb-export:" + export, "--to", target, "--classes", "MemoClass,,"], "--classes")
        #expect(!FileManager.default.fileExists(atPath: cli.directory.appendingPathComponent("target.db").path))
        // Nothing was written: the one record, at version 1, unchanged.
        let after = try cli.json(["objects", "get", cli.url, "Memo", id])
        #expect(after["version"] == "1" && after["fields"] == memo["fields"], "\(after)")
        #expect(try cli.json(["objects", "query", cli.url, "Memo", "--count", "--limit", "0"])["count"] == 1)
        // What stays accepted.
        #expect(try cli.run(["objects", "query", cli.url, "Memo", "--order", "-n, title", "--keys", "n", "--page-size", "1000"]).status == 0)
        #expect(try cli.run(["objects", "update", cli.url, "Memo", id, #"{"n":{"__op":"Increment","amount":1}}"#, "--expected-version", "1"]).status == 0)
    }

    // MARK: 11. Exit statuses and errors as documented

    @Test("local files and databases that cannot be read are local I/O (7); a text file as a database is named (2)")
    func localFilesAndDatabases() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let missing = try cli.run(["files", "upload", cli.url, "missing.txt"])
        #expect(missing.status == 7 && missing.stderr.contains("cannot read the local file missing.txt: No such file or directory"),
                "\(missing.stderr)")
        let text = cli.directory.appendingPathComponent("notes.txt")
        try Data(String(repeating: "just some text\n", count: 200).utf8).write(to: text)
        for command in [["objects", "get", "sqlite:" + text.path, "Memo", "x"], ["objects", "create", "sqlite:" + text.path, "Memo", "{}"]] {
            let r = try cli.run(command)
            #expect(r.status == 2 && r.stderr.contains("is not a SQLite database"), "\(command): \(r.stderr)")
        }
        #expect(try String(contentsOf: text, encoding: .utf8).hasPrefix("just some text"), "left untouched")
    }

    @Test("another user's database is local I/O (7), named with its owner (as root: run as nobody)",
          .enabled(if: geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "needs root and setpriv to act as another user"))
    func anotherUsersDatabase() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        _ = try cli.json(["objects", "create", cli.url, "Memo", #"{"n":1}"#])
        chmod(cli.directory.path, 0o755)
        for verb in [["objects", "get", cli.url, "Memo", "x"], ["objects", "create", cli.url, "Memo", "{}"]] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", try CLIHarness.binary().path] + verb
                + ["--session-file", "/tmp/mbaas-nobody-\(UUID().uuidString).json"]
            let err = Pipe()
            process.standardError = err
            process.standardOutput = FileHandle.nullDevice
            try CLIHarness.launch(process)
            let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 7 && stderr.contains("Permission denied") && stderr.contains("belongs to uid 0"),
                    "\(verb[1]): \(process.terminationStatus) \(stderr)")
        }
    }

    @Test("conformance and ncmb signature report a stdout write failure: exit 7")
    func stdoutWriteFailures() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let full = try FileHandle(forWritingTo: URL(fileURLWithPath: "/dev/full"))
        defer { try? full.close() }
        let signature = try cli.run(["ncmb", "signature", "--method", "GET", "--url", "https://example.com/2013-09-01/classes/A",
                                     "--application-key", "a", "--client-key", "b", "--timestamp", "2013-12-02T02:44:35.452Z"],
                                    sessionOption: false, standardOutput: full)
        #expect(signature.status == 7 && signature.stderr.contains("cannot write to standard output: No space left on device"),
                "\(signature.stderr)")
        let conformance = try cli.run(["conformance", "--adapter", "local", "--scenario", "objects.crud.basic"],
                                      sessionOption: false, standardOutput: full)
        #expect(conformance.status == 7 && conformance.stderr.contains("cannot write to standard output: No space left on device"),
                "\(conformance.stderr)")
    }

    @Test("auth signup whose session cannot be saved says the account was created (7)")
    func signupWithAnUnwritableSessionFile() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let blocker = cli.directory.appendingPathComponent("afile")
        try Data("x".utf8).write(to: blocker)
        let sessions = blocker.appendingPathComponent("sessions.json").path   // under a regular file: never writable
        let r = try cli.run(["auth", "signup", cli.url, "carol", "--password", "pw-123456", "--session-file", sessions], sessionOption: false)
        #expect(r.status == 7 && r.stderr.contains("the account 'carol' was created") && r.stderr.contains("mbaas auth login"), "\(r.stderr)")
        let login = try cli.run(["auth", "login", cli.url, "carol", "--password", "pw-123456"])
        #expect(login.status == 0, "the account exists: \(login.stderr)")
    }

    @Test("--timeout bounds the whole call, retries included; serve on a port in use is exit 9 with a clear message")
    func timeoutsAndPortsInUse() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let (fd, port) = try silentTCPListener()
        defer { close(fd) }
        let started = Date()
        let r = try cli.run(["objects", "get", "parse+http://app:rest@127.0.0.1:\(port)/parse", "Memo", "abc", "--timeout", "2"])
        let elapsed = Date().timeIntervalSince(started)
        #expect(r.status == 6 && r.stderr.contains("timed out after 2 s"), "\(r.stderr)")
        // Per attempt, the retries took about 9 s; the whole call is bounded (a generous margin for process start-up).
        #expect(elapsed < 7, "took \(elapsed) s: the retries went past --timeout 2")

        let serve = try cli.run(["serve", "--dialect", "ncmb", "--application-key", "appkey", "--client-key", "clientkey",
                                 "--port", "\(port)"], sessionOption: false)
        #expect(serve.status == 9 && serve.stderr.contains("cannot listen on 127.0.0.1:\(port): Address already in use"), "\(serve.stderr)")
        #expect(!serve.stderr.contains("errno"))
    }
}
