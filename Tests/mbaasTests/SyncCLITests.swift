import Foundation
import MBaaSCore
import MBaaSTesting
import Testing

@Suite("mbaas sync, end to end", .ownThreads)
struct SyncCLITests {
    @Test("init, offline writes through replica:, the status JSON shape, sync exits 0, bad input exits 2 writing nothing")
    func endToEnd() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let config = cli.directory.appendingPathComponent("sync.json")
        try Data(#"{"classes":{"Memo":{"persistence":"localAndServer","merge":"leaveIfChanged"}}}"#.utf8).write(to: config)
        let path = cli.directory.appendingPathComponent("memos.replica").path
        let replica = "replica:" + path
        let initialized = try cli.run(["sync", "init", replica, "--remote", cli.url, "--config", config.path, "--format", "json"])
        #expect(initialized.status == 0, "\(initialized.stderr)")
        #expect(try initialized.json()["classes"] == ["Memo"])
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) == 0o600)

        let created = try cli.run(["objects", "create", replica, "Memo", #"{"title":"offline"}"#, "--format", "json"])
        #expect(created.status == 0, "\(created.stderr)")
        // A replica's records print their syncStatus (create, get, query); a remote's never do.
        #expect(try created.json()["syncStatus"] == "created", "\(created.text)")
        let createdId = try #require(try created.json()["id"]?.stringValue)
        let got = try cli.run(["objects", "get", replica, "Memo", createdId, "--format", "json"])
        #expect(try got.json()["syncStatus"] == "created", "\(got.text)")
        let listed = try cli.run(["objects", "query", replica, "Memo", "--format", "ndjson"])
        #expect(listed.status == 0 && listed.text.contains(#""syncStatus":"created""#), "\(listed.text)")
        let status = try cli.run(["sync", "status", replica, "--format", "json"])
        #expect(status.status == 0, "\(status.stderr)")
        #expect(try status.json() == .object([
            "remote": .object(["reachable": true]),
            "classes": .object(["Memo": .object(["pending": 1, "conflicts": 0, "lastSyncDown": .null, "lastSyncUp": .null])]),
        ]))

        let synced = try cli.run(["sync", replica, "--format", "json"])
        #expect(synced.status == 0, "\(synced.stderr)")
        #expect(try synced.json()["classes"]?["Memo"]?["up"] == 1)
        let remote = try cli.run(["objects", "query", cli.url, "Memo", "--format", "json"])
        #expect(remote.text.contains("offline"))
        #expect(!remote.text.contains("syncStatus"))
        #expect(try cli.run(["objects", "get", replica, "Memo", createdId, "--format", "json"]).json()["syncStatus"] == "synced")
        let after = try cli.run(["sync", "status", replica, "--format", "json"]).json()
        #expect(after["classes"]?["Memo"]?["pending"] == 0)
        #expect(after["classes"]?["Memo"]?["lastSyncUp"]?.stringValue != nil)

        let badMerge = try cli.run(["sync", replica, "--merge", "theirs"])
        #expect(badMerge.status == 2 && badMerge.stderr.contains("unknown merge mode 'theirs'"), "\(badMerge.stderr)")

        let badConfig = cli.directory.appendingPathComponent("bad.json")
        try Data(#"{"classes":{"Memo":{"persistence":"localOnly","where":{"a":1}}}}"#.utf8).write(to: badConfig)
        let other = cli.directory.appendingPathComponent("other.replica").path
        let refused = try cli.run(["sync", "init", "replica:" + other, "--remote", cli.url, "--config", badConfig.path])
        #expect(refused.status == 2 && refused.stderr.contains("a localOnly class has no 'where'"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: other))
    }

    @Test("sync init refuses a declared field type the remote cannot hold (NCMB has no bytes): exit 2, naming it, no file written")
    func initChecksFieldTypes() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let config = cli.directory.appendingPathComponent("sync.json")
        try Data(#"{"classes":{"Memo":{"persistence":"localAndServer","fields":{"title":"string","scan":"Bytes"}}}}"#.utf8).write(to: config)
        let path = cli.directory.appendingPathComponent("memos.replica").path
        let refused = try cli.run(["sync", "init", "replica:" + path, "--remote", "ncmb+http://K:C@127.0.0.1:9", "--config", config.path])
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("class 'Memo': field 'scan' is declared Bytes, which the remote (ncmb) cannot hold: NCMB has no binary type"),
                "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: path))
        // The same file on a remote that holds bytes (a Local store) is taken.
        let taken = try cli.run(["sync", "init", "replica:" + path, "--remote", cli.url, "--config", config.path])
        #expect(taken.status == 0, "\(taken.stderr)")
    }

    @Test("mbaas bench sync reports sync down next to the Local insert, sync up next to the migration where PocketBase runs, and peak memory")
    func benchSync() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let live = !(ProcessInfo.processInfo.environment["MBAAS_POCKETBASE_URL"] ?? "").isEmpty
        let out = try cli.run(["bench", "sync", "--records", "300", "--up-records", "30", "--page-size", "100", "--format", "json"], sessionOption: false)
        #expect(out.status == 0, "\(out.stderr)")
        let json = try out.json()
        let results = json["results"]?.arrayValue ?? []
        var expected: [(String, String, Int64)] = [("sqlite", "Local batch insert", 300), ("sqlite", "replica sync down", 300)]
        if live { expected += [("pocketbase", "mbaas migrate", 30), ("pocketbase", "replica sync up", 30)] }
        #expect(results.count == expected.count, "\(json.printed())")
        for (target, method, records) in expected {
            let r = results.first { $0["target"]?.stringValue == target && $0["method"]?.stringValue?.hasPrefix(method) == true }
            #expect(r?["records"]?.intValue == records, "\(target) \(method): \(r?.printed() ?? "missing")")
            #expect((r?["recordsPerSecond"]?.doubleValue ?? 0) > 0, "\(target) \(method)")
        }
        #expect((json["peakMemoryKB"]?.intValue ?? 0) > 1000)
        let bad = try cli.run(["bench", "sync", "--records", "0"], sessionOption: false)
        #expect(bad.status != 0 && bad.stderr.contains("--records, --up-records and --page-size must be >= 1"), "\(bad.stderr)")
    }

    @Test("an unreachable remote: sync exits 6 and keeps the outbox; status says unreachable")
    func unreachable() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let config = cli.directory.appendingPathComponent("sync.json")
        try Data(#"{"classes":{"Memo":{"persistence":"localAndServer"}}}"#.utf8).write(to: config)
        let replica = "replica:" + cli.directory.appendingPathComponent("memos.replica").path
        let remote = "parse+http://APP:KEY@127.0.0.1:9/parse"
        let initialized = try cli.run(["sync", "init", replica, "--remote", "-", "--config", config.path],
                                      environment: ["MBAAS_REMOTE_URL": remote])
        #expect(initialized.status == 0, "\(initialized.stderr)")
        #expect(try cli.run(["objects", "create", replica, "Memo", #"{"title":"queued"}"#]).status == 0)
        let run = try cli.run(["sync", replica, "--up", "--format", "json"])
        #expect(run.status == 6, "\(run.stderr)")
        #expect(try run.json()["outcome"] == "unreachable")
        let status = try cli.run(["sync", "status", replica, "--format", "json"]).json()
        #expect(status["remote"]?["reachable"] == false)
        #expect(status["classes"]?["Memo"]?["pending"] == 1)
        // Reads stay local and work offline.
        let query = try cli.run(["objects", "query", replica, "Memo", "--format", "json"])
        #expect(query.status == 0 && query.text.contains("queued"), "\(query.stderr)")
    }

    @Test("--watch syncs until SIGTERM and exits 143, also while the remote is unreachable")
    func watchUntilTerminated() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let config = cli.directory.appendingPathComponent("sync.json")
        try Data(#"{"classes":{"Memo":{"persistence":"localAndServer"}}}"#.utf8).write(to: config)
        let replica = "replica:" + cli.directory.appendingPathComponent("memos.replica").path
        #expect(try cli.run(["sync", "init", replica, "--remote", "parse+http://APP:KEY@127.0.0.1:9/parse", "--config", config.path]).status == 0)
        let process = try cli.makeProcess(["sync", replica, "--watch", "0.2", "--format", "json"])
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try CLIHarness.launch(process)
        // The first report (unreachable) arrives; the loop goes on.
        var seen = Data()
        let deadline = Date().addingTimeInterval(60)
        while !seen.contains(UInt8(ascii: "\n")), Date() < deadline {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
        }
        #expect(String(decoding: seen, as: UTF8.self).contains("\"unreachable\""))
        #expect(process.isRunning)
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationStatus == 143)
    }
}
