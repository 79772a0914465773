import Foundation
import MBaaSCore
import MBaaSTesting
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("mbaas migrate: the target is the state's, never the source, never other data", .serialized, .ownThreads)
struct MigrateTargetCLITests {
    @Test("the README's quick start twice, with the target removed in between: verified both times (exit 0), the second run says it started over")
    func quickStartTwice() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let home = cli.directory.appendingPathComponent("home").path
        let run = ["migrate", "--from", "ncmb-export:\(sampleExportDirectory)", "--to", "sqlite:memo.db", "--format", "json"]
        let first = try cli.run(run, sessionOption: false, environment: ["XDG_DATA_HOME": home])
        #expect(first.status == 0, "\(first.stderr)")
        for name in try FileManager.default.contentsOfDirectory(atPath: cli.directory.path) where name.hasPrefix("memo.db") {
            try FileManager.default.removeItem(at: cli.directory.appendingPathComponent(name))
        }
        let second = try cli.run(run, sessionOption: false, environment: ["XDG_DATA_HOME": home])
        #expect(second.status == 0, "\(second.stderr)")
        let json = try second.json()
        #expect(json["ok"] == true && json["verified"] == true)
        #expect(json["classes"]?.arrayValue?.first { $0["source"] == "MemoClass" }?["written"] == 12)
        #expect(second.stderr.contains("it is new or another one, so the state was discarded"), "\(second.stderr)")
        // And once more into the same target: a resume that writes nothing.
        let third = try cli.run(run, sessionOption: false, environment: ["XDG_DATA_HOME": home])
        #expect(third.status == 0 && !third.stderr.contains("new or another one"), "\(third.stderr)")
        #expect(try third.json()["classes"]?.arrayValue?.first { $0["source"] == "MemoClass" }?["written"] == 0)
    }

    @Test("a target that holds part of what the state recorded is refused with exit 2 naming the state folder and --restart; --restart starts over")
    func partlyPresentTarget() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let state = cli.directory.appendingPathComponent("state").path
        let run = ["migrate", "--from", "ncmb-export:\(sampleExportDirectory)", "--to", cli.url, "--state", state, "--format", "json"]
        #expect(try cli.run(run, sessionOption: false).status == 0)
        // Two of the three categories (open to everyone) are removed from the target; the rest is there.
        for id in ["M8qVv0jLxxF13OVQ", "3HWPtLnyrjdPjLxd"] { _ = try cli.json(["objects", "delete", cli.url, "Category", id]) }
        #expect(try cli.json(["objects", "query", cli.url, "Category"])["results"]?.arrayValue?.count == 1)
        let refused = try cli.run(run, sessionOption: false)
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains(state) && refused.stderr.contains("--restart"), "\(refused.stderr)")
        let restarted = try cli.run(run + ["--restart"], sessionOption: false)
        #expect(restarted.status == 0, "\(restarted.stderr)")
        #expect(try cli.json(["objects", "query", cli.url, "Category"])["results"]?.arrayValue?.count == 3)
    }

    @Test("--from X --to X is refused with exit 2 before anything is written, however the path is written; so is a bundle into the source export or a folder with other data")
    func targetIsNeverTheSource() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let fm = FileManager.default
        #expect(try cli.run(["migrate", "--from", "ncmb-export:\(sampleExportDirectory)", "--to", "sqlite:memo.db", "--state", "s0", "--format", "json"],
                            sessionOption: false).status == 0)
        try fm.createSymbolicLink(atPath: cli.directory.appendingPathComponent("link.db").path, withDestinationPath: "memo.db")
        let db = cli.directory.appendingPathComponent("memo.db")
        let bytes = try Data(contentsOf: db)
        for to in ["sqlite:memo.db", "sqlite:./memo.db", "sqlite:\(db.path)", "sqlite:link.db"] {
            let out = try cli.run(["migrate", "--from", "sqlite:memo.db", "--to", to, "--state", "s1", "--format", "json"], sessionOption: false)
            #expect(out.status == 2 && out.stderr.contains("--from and --to are the same store"), "\(to): \(out.stderr)")
        }
        #expect(try Data(contentsOf: db) == bytes)
        #expect(!fm.fileExists(atPath: cli.directory.appendingPathComponent("s1").path))

        // The source export as a bundle target.
        let export = cli.directory.appendingPathComponent("exp")
        try fm.copyItem(atPath: sampleExportDirectory, toPath: export.path)
        let exported = try folderSnapshot(export)
        let intoSource = try cli.run(["migrate", "--from", "ncmb-export:exp", "--to", "bundle:exp", "--state", "s2", "--format", "json"], sessionOption: false)
        #expect(intoSource.status == 2 && intoSource.stderr.contains("same store"), "\(intoSource.stderr)")
        #expect(try folderSnapshot(export) == exported)

        // A folder with other data: refused, untouched, and no state folder left behind.
        let myhome = cli.directory.appendingPathComponent("myhome")
        try fm.createDirectory(at: myhome.appendingPathComponent("records"), withIntermediateDirectories: true)
        try Data("notes".utf8).write(to: myhome.appendingPathComponent("notes.txt"))
        try Data("mine".utf8).write(to: myhome.appendingPathComponent("records/mine.txt"))
        let mine = try folderSnapshot(myhome)
        let onData = try cli.run(["export", "--from", "sqlite:memo.db", "--to", "myhome", "--state", "s3", "--format", "json"], sessionOption: false)
        #expect(onData.status == 2 && onData.stderr.contains("is not empty and is not a bundle") && onData.stderr.contains("'notes.txt'"), "\(onData.stderr)")
        #expect(try folderSnapshot(myhome) == mine)
        #expect(!fm.fileExists(atPath: cli.directory.appendingPathComponent("s3").path))
    }

    @Test("a bundle with a missing blob fails import with exit 8, naming the file and its records")
    func damagedBlob() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        #expect(try cli.run(["export", "--from", "ncmb-export:\(sampleExportDirectory)", "--to", "bundle", "--state", "s1", "--format", "json"],
                            sessionOption: false).status == 0)
        let index = try String(contentsOf: cli.directory.appendingPathComponent("bundle/files/index.ndjson"), encoding: .utf8)
        let ramen = try #require(try index.split(separator: "\n").map { try JSON.parse(Data($0.utf8)) }
            .first { $0["linkedBy"]?.arrayValue?.contains { $0["id"] == "KXBeNC7VSJ5zffgR" } == true })
        let sha = try #require(ramen["sha256"]?.stringValue)
        try FileManager.default.removeItem(at: cli.directory.appendingPathComponent("bundle/files/blobs/\(sha)"))
        let out = try cli.run(["import", "--from", "bundle", "--to", "sqlite:copy.db", "--state", "s2", "--format", "json"], sessionOption: false)
        #expect(out.status == 8, "\(out.stderr)")
        let json = try out.json()
        #expect(json["ok"] == false)
        let failed = json["mismatches"]?.arrayValue?.filter { $0["kind"] == "failed" } ?? []
        #expect(failed.contains { $0["sourceId"] == "KXBeNC7VSJ5zffgR" && $0["detail"]?.stringValue?.contains("missing from the bundle") == true }, "\(failed)")
    }

    @Test("a plan that fails leaves no target database and no state folder behind")
    func failedPlanLeavesNothing() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let export = cli.directory.appendingPathComponent("exp")
        try FileManager.default.copyItem(atPath: sampleExportDirectory, toPath: export.path)
        let memo = export.appendingPathComponent("MemoClass.json")
        let text = try String(contentsOf: memo, encoding: .utf8).replacingOccurrences(of: "\"title\": \"Snack\",", with: "\"title\": \"Snack\" \"oops\",")
        try text.write(to: memo, atomically: true, encoding: .utf8)
        let out = try cli.run(["migrate", "--from", "ncmb-export:exp", "--to", "sqlite:new.db", "--state", "s", "--format", "json"], sessionOption: false)
        #expect(out.status != 0 && out.stderr.contains("MemoClass.json line"), "\(out.stderr)")
        let left = try FileManager.default.contentsOfDirectory(atPath: cli.directory.path).filter { $0.hasPrefix("new.db") || $0 == "s" }
        #expect(left.isEmpty, "\(left)")

        // A state an earlier run filled stays; the target this failed run created does not.
        let good = try cli.run(["migrate", "--from", "ncmb-export:\(sampleExportDirectory)", "--to", "sqlite:new.db", "--state", "s", "--format", "json"],
                               sessionOption: false)
        #expect(good.status == 0, "\(good.stderr)")
        for name in try FileManager.default.contentsOfDirectory(atPath: cli.directory.path) where name.hasPrefix("new.db") {
            try FileManager.default.removeItem(at: cli.directory.appendingPathComponent(name))
        }
        let again = try cli.run(["migrate", "--from", "ncmb-export:exp", "--to", "sqlite:new.db", "--state", "s", "--format", "json"], sessionOption: false)
        #expect(again.status == out.status, "\(again.stderr)")
        let after = try FileManager.default.contentsOfDirectory(atPath: cli.directory.path)
        #expect(!after.contains { $0.hasPrefix("new.db") } && after.contains("s"), "\(after)")
    }
}
