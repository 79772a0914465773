import Foundation
import MBaaSCore
import MBaaSTesting
import Testing
import XCTest

@Suite("mbaas CLI, end to end on a sqlite: database", .ownThreads)
struct CLITests {
    @Test func objectsCRUD() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let created = try cli.json(["objects", "create", cli.url, "Memo", #"{"title":"rent","money":50,"due":{"__type":"Date","iso":"2025-04-01T00:00:00.000Z"}}"#])
        let id = try #require(created["id"]?.stringValue)
        #expect(created["class"] == "Memo" && created["version"] == "1")
        #expect(created["fields"]?["due"] == .object(["__type": "Date", "iso": "2025-04-01T00:00:00.000Z"]))

        let got = try cli.json(["objects", "get", cli.url, "Memo", id])
        #expect(got == created)

        let updated = try cli.json(["objects", "update", cli.url, "Memo", id, #"{"money":{"__op":"Increment","amount":5},"note":"paid"}"#])
        #expect(updated["fields"]?["money"] == 55 && updated["fields"]?["note"] == "paid" && updated["version"] == "2")

        let stale = try cli.run(["objects", "update", cli.url, "Memo", id, #"{"money":1}"#, "--expected-version", "1"])
        #expect(stale.status == 5 && stale.stderr.contains("conflict:"))

        let deleted = try cli.json(["objects", "delete", cli.url, "Memo", id])
        #expect(deleted["deleted"] == true)
        let gone = try cli.run(["objects", "get", cli.url, "Memo", id])
        #expect(gone.status == 3)
        #expect(gone.stderr == "mbaas: error: notFound: record Memo/\(id) not found\n")
        #expect(gone.stdout.isEmpty)

        let bad = try cli.run(["objects", "create", cli.url, "Memo", #"{"title":"#])
        #expect(bad.status == 2 && bad.stderr.contains("invalidRequest: fields: invalid JSON"))
        let reserved = try cli.run(["objects", "create", cli.url, "Memo", #"{"id":"x"}"#])
        #expect(reserved.status == 2 && reserved.stderr.contains("'id' is reserved"))
        let twice = try cli.run(["objects", "create", cli.url, "Memo", #"{"title":"a","money":1,"title":"b"}"#])
        #expect(twice.status == 2, "\(twice.stderr)")
        #expect(twice.stderr.contains("invalidRequest: fields: invalid JSON") && twice.stderr.contains("$.title")
            && twice.stderr.contains("repeated"), "\(twice.stderr)")
        #expect(try cli.json(["objects", "query", cli.url, "Memo", "--count"])["count"] == 0)
    }

    @Test func queryOptions() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        for (title, money) in [("a", 10), ("b", 40), ("c", 40), ("d", 25), ("e", 5), ("f", 60)] {
            _ = try cli.json(["objects", "create", cli.url, "Memo", #"{"title":"\#(title)","money":\#(money)}"#])
        }
        let result = try cli.json(["objects", "query", cli.url, "Memo", "--where", #"{"money":{"$gte":20}}"#,
                                   "--order", "-money,title", "--limit", "2", "--skip", "1", "--count"])
        let titles = result["results"]?.arrayValue?.map { $0["fields"]?["title"]?.stringValue ?? "?" }
        #expect(titles == ["b", "c"])                        // f, [b, c], d
        #expect(result["count"] == 4)

        let paged = try cli.json(["objects", "query", cli.url, "Memo", "--order", "title", "--limit", "5", "--page-size", "2"])
        #expect(paged["results"]?.arrayValue?.map { $0["fields"]?["title"]?.stringValue ?? "?" } == ["a", "b", "c", "d", "e"])
        #expect(paged["count"] == nil)

        let keys = try cli.json(["objects", "query", cli.url, "Memo", "--where", #"{"title":{"$in":["e"]}}"#, "--keys", "title"])
        #expect(keys["results"]?.arrayValue?.first?["fields"] == .object(["title": "e"]))

        let countOnly = try cli.json(["objects", "query", cli.url, "Memo", "--limit", "0", "--count"])
        #expect(countOnly["results"] == .array([]) && countOnly["count"] == 6)

        let table = try cli.run(["objects", "query", cli.url, "Memo", "--order", "money", "--limit", "2", "--format", "table"])
        #expect(table.status == 0)
        #expect(table.text.hasPrefix("id ") && table.text.contains("(2 records)") && table.text.contains("money"))

        // Japanese text lines up: the column after it starts at the same screen column on every line.
        _ = try cli.run(["objects", "create", cli.url, "Wide", #"{"title":"ラーメン二郎","n":1}"#, "--id", "w1"])
        _ = try cli.run(["objects", "create", cli.url, "Wide", #"{"title":"soba","n":2}"#, "--id", "w2"])
        let wide = try cli.run(["objects", "query", cli.url, "Wide", "--order", "n", "--format", "table"])
        let lines = wide.text.split(separator: "\n").map(String.init).filter { $0.hasPrefix("w1") || $0.hasPrefix("w2") || $0.hasPrefix("id") }
        let starts = lines.map { line -> Int in
            // The screen column where the updatedAt column begins: after the last run of two spaces.
            let head = line[..<line.range(of: "  ", options: .backwards)!.upperBound]
            return String(head).displayWidth
        }
        #expect(lines.count == 3 && Set(starts).count == 1, "\(wide.text)")
    }

    @Test(arguments: [
        (#"{"money":{"$gtx":1}}"#, "'$gtx'"),
        (#"{"$nor":[{"a":1}]}"#, "'$nor'"),
        (#"{"title":{"$regex":"("}}"#, "invalid regular expression"),
        (#"{"money":"#, "where: invalid JSON"),
        (#"{"money":1,"money":{"$gt":5}}"#, "repeated"),
    ])
    func malformedWhereIsRejected(where text: String, expected: String) throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let r = try cli.run(["objects", "query", cli.url, "Memo", "--where", text])
        #expect(r.status == 2)
        #expect(r.stderr.hasPrefix("mbaas: error: invalidRequest: ") && r.stderr.contains(expected), "stderr: \(r.stderr)")
    }

    @Test func files() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
        let source = cli.directory.appendingPathComponent("photo.bin")
        try bytes.write(to: source)

        let ref = try cli.json(["files", "upload", cli.url, source.path, "--name", "photos/p 1.bin"])
        #expect(ref["name"] == "photos/p 1.bin" && ref["size"] == 300_000 && ref["__type"] == "File")

        let list = try cli.json(["files", "list", cli.url, "--prefix", "photos/"])
        #expect(list["results"]?.arrayValue?.map { $0["name"]?.stringValue } == ["photos/p 1.bin"])
        #expect(try cli.json(["files", "list", cli.url, "--prefix", "other/"])["results"] == .array([]))

        let target = cli.directory.appendingPathComponent("copy.bin")
        let saved = try cli.json(["files", "download", cli.url, "photos/p 1.bin", "--output", target.path])
        #expect(saved["size"] == 300_000)
        #expect(try Data(contentsOf: target) == bytes)
        let piped = try cli.run(["files", "download", cli.url, "photos/p 1.bin"])
        #expect(piped.status == 0 && piped.stdout == bytes)

        let memo = try cli.json(["objects", "create", cli.url, "Memo", #"{"title":"with file"}"#])
        let memoId = try #require(memo["id"]?.stringValue)
        let attached = try cli.json(["files", "upload", cli.url, source.path, "--attach", "Memo/\(memoId)/photo"])
        #expect(attached["attachment"]?["field"] == "photo")
        #expect(try cli.json(["objects", "get", cli.url, "Memo", memoId])["fields"]?["photo"]?["name"] == attached["name"])

        #expect(try cli.json(["files", "delete", cli.url, "photos/p 1.bin"])["deleted"] == true)
        let missing = try cli.run(["files", "download", cli.url, "photos/p 1.bin"])
        #expect(missing.status == 3 && missing.stderr.contains("not found"))
        let noSource = try cli.run(["files", "upload", cli.url, "/nonexistent/file"])
        #expect(noSource.status == 7 && noSource.stderr.contains("cannot read the local file"))   // local I/O (issue 32)
    }

    @Test func authSessionsPersistBetweenRuns() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let whoNobody = try cli.run(["auth", "whoami", cli.url])
        #expect(whoNobody.status == 4 && whoNobody.stderr.contains("unauthorized: not logged in"))

        let signed = try cli.json(["auth", "signup", cli.url, "alice", "--password", "s3cret pass", "--email", "alice@example.com"])
        let userId = try #require(signed["userId"]?.stringValue)
        #expect(signed["token"] == nil)                                      // tokens are never printed

        // The session file: 0600 in a 0700 directory, keyed by the URL, holding the token.
        let attributes = try FileManager.default.attributesOfItem(atPath: cli.sessionFile.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let dirAttributes = try FileManager.default.attributesOfItem(atPath: cli.sessionFile.deletingLastPathComponent().path)
        #expect((dirAttributes[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        let saved = try JSON.parse(Data(contentsOf: cli.sessionFile))
        #expect(saved[cli.url]?["userId"]?.stringValue == userId && saved[cli.url]?["token"]?.stringValue?.isEmpty == false)

        let me = try cli.json(["auth", "whoami", cli.url])
        #expect(me["id"]?.stringValue == userId && me["username"] == "alice" && me["email"] == "alice@example.com")

        // Records created while logged in can be private to the user.
        let secret = try cli.json(["objects", "create", cli.url, "Note", #"{"t":"x"}"#, "--acl", #"{"\#(userId)":{"read":true,"write":true}}"#])
        let secretId = try #require(secret["id"]?.stringValue)

        let wrong = try cli.run(["auth", "login", cli.url, "alice", "--password", "nope"])
        #expect(wrong.status == 4)
        #expect(wrong.stderr == "mbaas: error: unauthorized: wrong user name or password\n")
        #expect(try cli.json(["auth", "whoami", cli.url])["id"]?.stringValue == userId)   // previous session kept

        #expect(try cli.json(["auth", "logout", cli.url, "--server"])["loggedOut"] == true)
        let after = try cli.run(["auth", "whoami", cli.url])
        #expect(after.status == 4)
        let hidden = try cli.run(["objects", "get", cli.url, "Note", secretId])
        #expect(hidden.status == 3)                                            // anonymous cannot see it

        let login = try cli.json(["auth", "login", cli.url, "alice", "--password-stdin"], stdin: "s3cret pass\n")
        #expect(login["userId"]?.stringValue == userId)
        #expect(try cli.json(["objects", "get", cli.url, "Note", secretId])["fields"]?["t"] == "x")

        let duplicate = try cli.run(["auth", "signup", cli.url, "alice", "--password", "x"])
        #expect(duplicate.status == 5 && duplicate.stderr.contains("already taken"))
        let noPassword = try cli.run(["auth", "login", cli.url, "alice"])
        #expect(noPassword.status != 0 && noPassword.stderr.contains("--password"))
    }

    @Test func badURLsAreExplained() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let unknown = try cli.run(["objects", "get", "nosuch://x", "Memo", "1"])
        #expect(unknown.status == 2 && unknown.stderr.contains("unknown backend scheme 'nosuch'") && unknown.stderr.contains("sqlite"))
        let noScheme = try cli.run(["objects", "get", "demo.db", "Memo", "1"])
        #expect(noScheme.status == 2 && noScheme.stderr.contains("has no scheme"))
        let badClass = try cli.run(["objects", "get", cli.url, "1Memo", "1"])
        #expect(badClass.status == 2 && badClass.stderr.contains("invalid class name '1Memo'"))
    }
}

@Suite("bench commands run end to end", .ownThreads)
struct BenchCLITests {
    /// Every built-in HTTP adapter is measured on its cassette's canned answers (a few operations: this checks that the
    /// bench runs, not its numbers, which belong to release builds).
    @Test func benchAdaptersMeasuresEveryHTTPAdapter() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let out = try cli.run(["bench", "adapters", "--operations", "20", "--format", "json"], sessionOption: false)
        #expect(out.status == 0, "\(out.stderr)")
        let results = try out.json()["results"]?.arrayValue ?? []
        // Every built-in HTTP adapter, from the one built-in list (Parse was missing while the bench kept its own).
        #expect(results.compactMap { $0["adapter"]?.stringValue } == ["ncmb", "kii", "apppot", "pocketbase", "parse", "salesforce"])
        for r in results {
            #expect((r["get"]?.doubleValue ?? 0) > 0 && (r["create"]?.doubleValue ?? 0) > 0, "\(r.printed())")
        }
    }
}

extension BenchCLITests {
    /// A small migration benchmark: every row is there with the records it moved (not its numbers). Into PocketBase
    /// too where CI runs one (`MBAAS_POCKETBASE_URL`), which drives the plain loaders' own PocketBase calls, and into
    /// PostgreSQL where it runs one (`MBAAS_POSTGRES_URL`), with the psycopg script's row when CI installed psycopg.
    @Test func benchMigrateReportsEveryRow() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let live = !(ProcessInfo.processInfo.environment["MBAAS_POCKETBASE_URL"] ?? "").isEmpty
        let env = ProcessInfo.processInfo.environment
        // Into PostgreSQL where CI runs one, with its psycopg baseline (CI installs psycopg; without MBAAS_PSYCOPG_PYTHON
        // the script's row is not expected, and a run without PostgreSQL has no postgres rows at all).
        let postgres = !(env["MBAAS_POSTGRES_URL"] ?? "").isEmpty
        let psycopg = env["MBAAS_PSYCOPG_PYTHON"].flatMap { $0.isEmpty ? nil : $0 }
        var arguments = ["bench", "migrate", "--records", "200", "--loop-records", "20", "--format", "json"]
        if let psycopg { arguments += ["--postgres-python", psycopg] }
        let out = try cli.run(arguments, sessionOption: false)
        #expect(out.status == 0, "\(out.stderr)")
        let results = try out.json()["results"]?.arrayValue ?? []
        func row(_ target: String, _ prefix: String) -> JSON? {
            results.first { $0["target"]?.stringValue == target && $0["method"]?.stringValue?.hasPrefix(prefix) == true }
        }
        var expected: [(String, String, Int64)] = [
            ("sqlite", "mbaas migrate", 210), ("sqlite", "  users and roles phase", 3), ("sqlite", "  records phase", 200),
            ("sqlite", "mbaas verify", 210), ("sqlite", "per-record create loop", 20), ("sqlite", "export check", 200),
            ("sqlite", "Local batch insert", 200),
        ]
        if live {
            expected += [("pocketbase", "mbaas migrate", 210), ("pocketbase", "  users and roles phase", 3), ("pocketbase", "  records phase", 200),
                         ("pocketbase", "per-record create loop", 20),
                         ("pocketbase", "direct /api/batch loader", 200), ("pocketbase", "direct loader, the migrated records' own content", 200),
                         ("pocketbase", "direct user creates", 3)]
        }
        if postgres {
            expected += [("postgres", "mbaas migrate", 200), ("postgres", "  records phase", 200)]
            if psycopg != nil { expected += [("postgres", "psycopg script", 200)] }
        }
        for (target, method, records) in expected {
            let r = row(target, method)
            #expect(r?["records"]?.intValue == records, "\(target) \(method): \(r?.printed() ?? "missing")")
            #expect((r?["recordsPerSecond"]?.doubleValue ?? 0) > 0, "\(target) \(method)")
        }
        #expect(results.count == expected.count, "\(results.map { $0.printed() })")
    }
}

/// CI needs at least one XCTest test per target (see the README's test notes).
final class CLISmokeTests: XCTestCase {
    func testHelpListsTheCommands() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let help = try cli.run(["--help"], sessionOption: false)
        XCTAssertEqual(help.status, 0, help.stderr)
        for word in ["objects", "files", "auth", "bench"] {
            XCTAssertTrue(help.text.contains(word), "--help does not mention \(word): \(help.text)")
        }
    }
}

extension BenchCLITests {
    /// `bench local` at a small size: every workload is there with its three columns and, for query and get, the
    /// raw+decode column and the ratios derived from it (not the numbers, which belong to release builds).
    @Test func benchLocalReportsTheDecodingBound() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let out = try cli.run(["bench", "local", "--records", "300", "--gets", "50", "--no-script", "--format", "json"],
                              sessionOption: false)
        #expect(out.status == 0, "\(out.stderr)")
        let results = try out.json()["results"]?.arrayValue ?? []
        #expect(results.compactMap { $0["name"]?.stringValue } == ["insert", "query", "get"])
        for r in results {
            #expect((r["local"]?.doubleValue ?? 0) > 0 && (r["raw"]?.doubleValue ?? 0) > 0, "\(r.printed())")
            let name = r["name"]?.stringValue
            if name == "insert" {
                #expect(r["rawDecoded"] == .null && r["eagerBound"] == .null, "\(r.printed())")
            } else {
                let decoded = r["rawDecoded"]?.doubleValue ?? 0, raw = r["raw"]?.doubleValue ?? 0
                #expect(decoded > 0, "\(r.printed())")
                let bound = r["eagerBound"]?.doubleValue ?? 0
                #expect(abs(bound - decoded / raw) < 0.01, "\(r.printed())")
                #expect((r["decodedRatio"]?.doubleValue ?? 0) > 0, "\(r.printed())")
            }
        }
        let bad = try cli.run(["bench", "local", "--gets", "0"], sessionOption: false)
        #expect(bad.status != 0 && bad.stderr.contains("--gets must be >= 1"), "\(bad.stderr)")
    }
}
