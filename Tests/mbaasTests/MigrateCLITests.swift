import Foundation
import MBaaSCore
@testable import MBaaSMigration
import MBaaSTesting
import Testing
#if canImport(Glibc)
import Glibc
#endif

let sampleExportDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Fixtures/Samples/ncmb-memo-export").path

@Suite("mbaas migrate, export, import, verify, samples", .serialized, .ownThreads)
struct MigrateCLITests {
    @Test("the README's main job: the NCMB sample into the embedded store, verified, with a JSON report")
    func mainJob() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let report = cli.directory.appendingPathComponent("report.json")
        let state = cli.directory.appendingPathComponent("state").path
        let out = try cli.run(["migrate", "--from", "ncmb-export:\(sampleExportDirectory)", "--to", cli.url, "--state", state,
                               "--report", report.path, "--format", "json"], sessionOption: false)
        #expect(out.status == 0, "\(out.stderr)")
        let json = try out.json()
        #expect(json["ok"] == true && json["verified"] == true)
        let memo = json["classes"]?.arrayValue?.first { $0["source"] == "MemoClass" }
        #expect(memo?["written"] == 12 && memo?["verified"] == 12 && memo?["mismatched"] == 0)
        #expect(json["users"]?["passwords"]?["reset"] == 3)
        #expect(json["warningCount"] == 2)
        #expect(try JSON.parse(Data(contentsOf: report))["ok"] == true)
        #expect(out.stderr.contains("mbaas: state: \(state)"))
        // Not a terminal: one line per class and phase on stderr.
        #expect(out.stderr.contains("mbaas: MemoClass -> MemoClass: read 12, written 12"))

        let got = try cli.json(["objects", "get", cli.url, "MemoClass", "KXBeNC7VSJ5zffgR"])
        #expect(got["fields"]?["title"] == "Ramen Jiro")

        // verify alone agrees; a record changed on the target is found.
        let verify = try cli.run(["verify", "--from", "ncmb-export:\(sampleExportDirectory)", "--to", cli.url, "--state", state, "--format", "json"],
                                 sessionOption: false)
        #expect(verify.status == 0, "\(verify.stderr)")
        _ = try cli.run(["objects", "update", cli.url, "MemoClass", "KXBeNC7VSJ5zffgR", #"{"title":"changed"}"#])
        let changed = try cli.run(["verify", "--from", "ncmb-export:\(sampleExportDirectory)", "--to", cli.url, "--state", state, "--format", "json"],
                                  sessionOption: false)
        #expect(changed.status == 8)
        let mismatch = try changed.json()["mismatches"]?.arrayValue?.first
        #expect(mismatch?["kind"] == "content" && mismatch?["sourceId"] == "KXBeNC7VSJ5zffgR")
        #expect(mismatch?["detail"]?.stringValue?.contains("title") == true)
    }

    @Test("secrets stay out of argv: '-' reads --from-url-file / --to-url-file (0600 only) or $MBAAS_FROM_URL / $MBAAS_TO_URL; the state folder is the same as with the URLs given")
    func urlFiles() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let source = "ncmb-export:\(sampleExportDirectory)"
        let (fromFile, toFile) = (cli.directory.appendingPathComponent("from.url"), cli.directory.appendingPathComponent("to.url"))
        try Data((source + "\n").utf8).write(to: fromFile)
        try Data((cli.url + "\n").utf8).write(to: toFile)
        chmod(fromFile.path, 0o600)
        chmod(toFile.path, 0o644)
        let plan = ["migrate", "--from", "-", "--to", "-", "--from-url-file", fromFile.path, "--to-url-file", toFile.path, "--dry-run", "--format", "json"]
        // A file others can read is refused before anything is opened.
        let open = try cli.run(plan, sessionOption: false)
        #expect(open.status == 2 && open.stderr.contains("--to-url-file \(toFile.path) is readable or writable by others (mode 644); run chmod 600"), "\(open.stderr)")
        chmod(toFile.path, 0o600)
        let dry = try cli.run(plan, sessionOption: false)
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(try dry.json()["dryRun"] == true)
        // A URL argument and a file at once, or '-' with neither, is an invalid request naming the option.
        let both = try cli.run(["verify", "--from", source, "--from-url-file", fromFile.path, "--to", cli.url, "--format", "json"], sessionOption: false)
        #expect(both.status == 2 && both.stderr.contains("give the URL either as an argument or with --from-url-file"), "\(both.stderr)")
        let neither = try cli.run(["verify", "--from", source, "--to", "-", "--format", "json"], sessionOption: false)
        #expect(neither.status == 2 && neither.stderr.contains("read it from --to-url-file FILE or $MBAAS_TO_URL"), "\(neither.stderr)")
        // The environment, and the default state folder derived from the URLs themselves (a resume finds it either way).
        let home = cli.directory.appendingPathComponent("home").path
        let viaEnv = try cli.run(["migrate", "--from", "-", "--to", "-", "--format", "json"], sessionOption: false,
                                 environment: ["MBAAS_FROM_URL": source, "MBAAS_TO_URL": cli.url, "XDG_DATA_HOME": home])
        #expect(viaEnv.status == 0, "\(viaEnv.stderr)")
        let again = try cli.run(["migrate", "--from", source, "--to", cli.url, "--format", "json"], sessionOption: false, environment: ["XDG_DATA_HOME": home])
        #expect(again.status == 0, "\(again.stderr)")
        let memo = try again.json()["classes"]?.arrayValue?.first { $0["source"] == "MemoClass" }
        #expect(memo?["written"] == 0 && memo?["skipped"] == 12, "\(String(describing: memo))")
        // A bundle side takes no URL file.
        let export = try cli.run(["export", "--from", source, "--to", cli.directory.appendingPathComponent("b").path, "--to-url-file", toFile.path], sessionOption: false)
        #expect(export.status == 2 && export.stderr.contains("--to-url-file: export's --to is a bundle directory"), "\(export.stderr)")
    }

    @Test("a bad mapping file is exit 2 (7 when it cannot be read) with the error's own message; the report is 0600, and a report that cannot be written is exit 7, or stays 8 when the run found differences")
    func mappingAndReportErrors() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let source = "ncmb-export:\(sampleExportDirectory)"
        let state = cli.directory.appendingPathComponent("state").path
        let mapping = cli.directory.appendingPathComponent("mapping.json")
        try Data(#"{"classes":{"MemoClass":{"renam":"Memo"}}}"#.utf8).write(to: mapping)
        let bad = try cli.run(["migrate", "--from", source, "--to", cli.url, "--mapping", mapping.path, "--state", state], sessionOption: false)
        #expect(bad.status == 2 && bad.stderr.hasPrefix("mbaas: error: invalidRequest: mapping file mapping.json:") && bad.stderr.contains("renam"), "\(bad.stderr)")
        let missing = try cli.run(["migrate", "--from", source, "--to", cli.url, "--mapping", mapping.path + ".none", "--state", state, "--format", "json"],
                                  sessionOption: false)
        #expect(missing.status == 7, "\(missing.stderr)")
        #expect((try? JSON.parse(Data(missing.stderr.utf8)))?["error"]?["kind"] == "localIO", "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: state), "nothing was opened")

        let report = cli.directory.appendingPathComponent("report.json")
        let ok = try cli.run(["migrate", "--from", source, "--to", cli.url, "--state", state, "--report", report.path, "--format", "json"], sessionOption: false)
        #expect(ok.status == 0, "\(ok.stderr)")
        let mode = try FileManager.default.attributesOfItem(atPath: report.path)[.posixPermissions] as? Int
        #expect(mode.map { $0 & 0o777 } == 0o600, "mode \(String(mode ?? -1, radix: 8))")
        let nowhere = cli.directory.appendingPathComponent("no-such-dir/report.json").path
        let unwritable = try cli.run(["verify", "--from", source, "--to", cli.url, "--state", state, "--report", nowhere, "--format", "json"], sessionOption: false)
        #expect(unwritable.status == 7 && unwritable.stderr.contains("cannot write the report \(nowhere)"), "\(unwritable.stderr)")
        let summary = try unwritable.json()
        #expect(summary["ok"] == true, "the summary is printed first")
        _ = try cli.run(["objects", "update", cli.url, "MemoClass", "KXBeNC7VSJ5zffgR", #"{"title":"changed"}"#])
        let differs = try cli.run(["verify", "--from", source, "--to", cli.url, "--state", state, "--report", nowhere, "--format", "json"], sessionOption: false)
        #expect(differs.status == 8 && differs.stderr.contains("cannot write the report"), "\(differs.stderr)")
        // Folders the file system refuses (even to root: nothing can be made under /proc) are localIO, exit 7, named.
        let noState = try cli.run(["migrate", "--from", source, "--to", cli.url, "--state", "/proc/mbaas-test-state"], sessionOption: false)
        #expect(noState.status == 7 && noState.stderr.contains("localIO: cannot create the state folder /proc/mbaas-test-state: No such file or directory"),
                "\(noState.stderr)")
        let noBundle = try cli.run(["export", "--from", source, "--to", "/proc/mbaas-test-bundle", "--state", cli.directory.appendingPathComponent("s3").path],
                                   sessionOption: false)
        #expect(noBundle.status == 7 && noBundle.stderr.contains("localIO: cannot create the bundle directory /proc/mbaas-test-bundle"), "\(noBundle.stderr)")
    }

    @Test("a mapping that would overwrite data is exit 2 (invalidRequest) before any record is written, naming the entry: when the file is read, and against the source")
    func mappingThatOverwrites() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let source = "ncmb-export:\(sampleExportDirectory)"
        let state = cli.directory.appendingPathComponent("state").path
        let mapping = cli.directory.appendingPathComponent("map.json")
        for (text, entry) in [(#"{"classes":{"MemoClass":{"fields":{"money":{"drop":true,"rename":"m"}}}}}"#,
                               "invalidRequest: mapping file map.json: $.classes.MemoClass.fields.money: "),
                              (#"{"classes":{"MemoClass":{"fields":{"money":{"rename":"title"}}}}}"#,
                               "invalidRequest: mapping $.classes.MemoClass.fields.money.rename: 'title' is a field of MemoClass that is kept")] {
            try Data(text.utf8).write(to: mapping)
            let out = try cli.run(["migrate", "--from", source, "--to", cli.url, "--mapping", mapping.path, "--state", state], sessionOption: false)
            #expect(out.status == 2 && out.stderr.contains(entry), "\(text): \(out.status) \(out.stderr)")
            // No record was written (the database may not even have been created).
            let db = String(cli.url.dropFirst("sqlite:".count))
            let count = FileManager.default.fileExists(atPath: db) ? try cli.json(["objects", "query", cli.url, "MemoClass", "--count"])["count"] : 0
            #expect(count == 0, "nothing written")
        }
    }

    @Test("--dry-run prints the plan and writes nothing, not even the state folder")
    func dryRun() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let state = cli.directory.appendingPathComponent("state")
        let out = try cli.run(["migrate", "--from", "ncmb-export:\(sampleExportDirectory)", "--to", cli.url, "--state", state.path,
                               "--dry-run", "--format", "table"], sessionOption: false)
        #expect(out.status == 0, "\(out.stderr)")
        #expect(out.text.contains("MemoClass -> MemoClass: 12 records; file links filename"))
        #expect(out.text.contains("dry run: nothing was written"))
        #expect(!FileManager.default.fileExists(atPath: state.path))
        #expect(!FileManager.default.fileExists(atPath: cli.directory.appendingPathComponent("db.sqlite").path))
    }

    @Test("export to a bundle directory and import it into another store")
    func exportImport() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let bundle = cli.directory.appendingPathComponent("bundle").path
        let exported = try cli.run(["export", "--from", "ncmb-export:\(sampleExportDirectory)", "--to", bundle,
                                    "--state", cli.directory.appendingPathComponent("s1").path, "--format", "json"], sessionOption: false)
        #expect(exported.status == 0, "\(exported.stderr)")
        #expect(FileManager.default.fileExists(atPath: bundle + "/manifest.json"))
        #expect(FileManager.default.fileExists(atPath: bundle + "/records/MemoClass.ndjson"))
        let imported = try cli.run(["import", "--from", bundle, "--to", cli.url,
                                    "--state", cli.directory.appendingPathComponent("s2").path, "--format", "json"], sessionOption: false)
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(try imported.json()["classes"]?.arrayValue?.first { $0["source"] == "MemoClass" }?["verified"] == 12)

        // A mistyped bundle is not found (exit 3), an unfinished one is refused (exit 2); neither run creates the
        // directory, a state folder or the target.
        let mistyped = cli.directory.appendingPathComponent("bundel").path
        let state = cli.directory.appendingPathComponent("s3")
        let other = "sqlite:" + cli.directory.appendingPathComponent("other.db").path
        let missing = try cli.run(["import", "--from", mistyped, "--to", other, "--state", state.path], sessionOption: false)
        #expect(missing.status == 3 && missing.stderr.contains("there is no bundle at \(mistyped)"), "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: mistyped) && !FileManager.default.fileExists(atPath: state.path))
        #expect(!FileManager.default.fileExists(atPath: cli.directory.appendingPathComponent("other.db").path))
        let unfinished = cli.directory.appendingPathComponent("unfinished")
        try FileManager.default.createDirectory(at: unfinished, withIntermediateDirectories: false)
        let refused = try cli.run(["import", "--from", unfinished.path, "--to", other, "--state", state.path], sessionOption: false)
        #expect(refused.status == 2 && refused.stderr.contains("has no manifest.json"), "\(refused.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: unfinished.path).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: state.path))
    }

    @Test("without --state, the state folder is under $XDG_DATA_HOME, else under the platform's user data directory")
    func defaultStateFolder() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let data = cli.directory.appendingPathComponent("data")
        let arguments = ["migrate", "--from", "ncmb-export:\(sampleExportDirectory)", "--to", cli.url, "--classes", "Category", "--format", "json"]
        let out = try cli.run(arguments, sessionOption: false, environment: ["XDG_DATA_HOME": data.path])
        #expect(out.status == 0, "\(out.stderr)")
        let migrations = data.appendingPathComponent("mbaas/migrations")
        let folders = try FileManager.default.contentsOfDirectory(atPath: migrations.path)
        #expect(folders.count == 1 && out.stderr.contains("mbaas: state: \(migrations.path)/\(folders.first ?? "?")"), "\(out.stderr)")
        #if os(Linux)
        let home = cli.directory.appendingPathComponent("home")
        let again = try cli.run(arguments, sessionOption: false, environment: ["XDG_DATA_HOME": "", "HOME": home.path])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.contains("mbaas: state: \(home.path)/.local/share/mbaas/migrations/"), "\(again.stderr)")
        #endif
    }

    @Test("a second run on a state folder in use is refused (exit 5)")
    func concurrentRunRefused() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let state = cli.directory.appendingPathComponent("state")
        let held = try MigrationState(directory: state)
        let out = try cli.run(["migrate", "--from", "ncmb-export:\(sampleExportDirectory)", "--to", cli.url, "--state", state.path],
                              sessionOption: false)
        #expect(out.status == 5 && out.stderr.contains("another migration is running"), "\(out.stderr)")
        #expect(!FileManager.default.fileExists(atPath: cli.directory.appendingPathComponent("db.sqlite").path))
        _ = held
    }

    @Test("killed with SIGKILL at random points and resumed, the target ends equal to the source with no duplicate")
    func killAndResume() async throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let export = cli.directory.appendingPathComponent("export").path
        let samples = try cli.run(["samples", "ncmb-export", "--records", "3000", "--out", export, "--seed", "3"], sessionOption: false)
        #expect(samples.status == 0, "\(samples.stderr)")
        let state = cli.directory.appendingPathComponent("state").path
        let arguments = ["migrate", "--from", "ncmb-export:\(export)", "--to", cli.url, "--state", state, "--batch", "50", "--format", "json"]
        // Minutes of waiting for child processes: on the suite's own threads (`.ownThreads`), off the cooperative pool.
        let (kills, log) = try Self.killRepeatedly(arguments, in: cli, state: URL(fileURLWithPath: state), className: "MemoClass")
        let last = try cli.run(arguments, sessionOption: false)
        #expect(last.status == 0, "\(last.stderr)")
        let json = try last.json()
        let memo = json["classes"]?.arrayValue?.first { $0["source"] == "MemoClass" }
        #expect(memo?["verified"] == 3000 && memo?["mismatched"] == 0 && memo?["failed"] == 0, "\(json)")
        // Every source record exactly once.
        let queried = try cli.run(["objects", "query", cli.url, "MemoClass", "--all", "--keys", "sourceObjectId", "--format", "json"])
        #expect(queried.status == 0, "\(queried.stderr)")
        let all = try queried.json()
        let ids = all["results"]?.arrayValue?.compactMap { $0["fields"]?["sourceObjectId"]?.stringValue } ?? []
        #expect(ids.count == 3000 && Set(ids).count == 3000)
        #expect(kills >= 1, "no run was killed with writes in flight; the test proved nothing: \(log)")
    }

    @Test("exported into a bundle, killed with SIGKILL at random points and resumed: every record once, though nothing refuses a second line")
    func killAndResumeIntoBundle() async throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let export = cli.directory.appendingPathComponent("export").path
        let samples = try cli.run(["samples", "ncmb-export", "--records", "3000", "--out", export, "--seed", "4"], sessionOption: false)
        #expect(samples.status == 0, "\(samples.stderr)")
        let bundle = cli.directory.appendingPathComponent("bundle")
        let state = cli.directory.appendingPathComponent("state").path
        // A bundle appends lines and keeps ids, with no key to refuse a record written twice: only the in-flight
        // marks, looked up in the bundle on resume, keep a killed run's records from being written again.
        let arguments = ["migrate", "--from", "ncmb-export:\(export)", "--to", "bundle:\(bundle.path)", "--state", state, "--batch", "50",
                         "--format", "json"]
        // Minutes of waiting for child processes: on the suite's own threads (`.ownThreads`), off the cooperative pool.
        let (kills, log) = try Self.killRepeatedly(arguments, in: cli, state: URL(fileURLWithPath: state), className: "MemoClass")
        let last = try cli.run(arguments, sessionOption: false)
        #expect(last.status == 0, "\(last.stderr)")
        let memo = try last.json()["classes"]?.arrayValue?.first { $0["source"] == "MemoClass" }
        #expect(memo?["verified"] == 3000 && memo?["mismatched"] == 0 && memo?["failed"] == 0, "\(String(describing: memo))")
        let lines = try String(contentsOf: bundle.appendingPathComponent("records/MemoClass.ndjson"), encoding: .utf8)
            .split(separator: "\n").map { try JSON.parse(Data($0.utf8))["id"]?.stringValue ?? "" }
        #expect(lines.count == 3000 && Set(lines).count == 3000, "\(lines.count) lines, \(Set(lines).count) ids")
        #expect(kills >= 1, "no run was killed with writes in flight; the test proved nothing: \(log)")
    }

    /// Runs the CLI up to six times (until two runs were killed with writes in flight), each killed, if still going,
    /// at a random point of its copy of `className`: 0-150 ms after its progress line on stderr reaches a random
    /// 10-70% of the class (`mbaas: MemoClass: 900 of 3000 (30%, …)`). The point is set by the copy's progress, not
    /// by the clock, so a loaded machine moves it no later. Returns how many runs were killed with writes of that
    /// class in flight, as the state's marks show: the runs whose resumption the test then proves.
    static func killRepeatedly(_ arguments: [String], in cli: CLIHarness, state: URL, className: String) throws -> (inFlight: Int, log: [String]) {
        var generator = SystemRandomNumberGenerator()
        var inFlight = 0
        var log: [String] = []
        let prefix = "mbaas: \(className): "
        for _ in 0..<10 where inFlight < 2 {
            let target = Int.random(in: 1...7, using: &generator) * 10
            let process = Process()
            process.executableURL = try CLIHarness.binary()
            process.arguments = arguments
            process.currentDirectoryURL = cli.directory
            process.standardOutput = FileHandle.nullDevice
            let errors = Pipe()
            process.standardError = errors
            try CLIHarness.launch(process)
            var seen = Data()
            var reached = false
            while !reached {
                let chunk = errors.fileHandleForReading.availableData
                if chunk.isEmpty { break }   // the run ended first
                seen.append(chunk)
                reached = String(decoding: seen, as: UTF8.self).split(separator: "\n").contains { line in
                    guard line.hasPrefix(prefix), let open = line.firstIndex(of: "("), let percent = line[line.index(after: open)...].split(separator: "%").first
                    else { return false }
                    return (Int(percent) ?? 0) >= target
                }
            }
            // A short pause: batches now take milliseconds (about 6,000 records a second in a debug build), and a
            // longer one let the run finish the class before the kill, with nothing in flight to prove anything.
            let pause = UInt32.random(in: 0...15_000, using: &generator)
            usleep(pause)
            var killed = false
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                killed = true
            }
            process.waitUntilExit()
            let marked = killed ? try MigrationState(directory: state).pending(.record, className: className).count : 0
            if marked > 0 { inFlight += 1 }
            log.append("at \(target)% + \(pause / 1000) ms, \(killed ? "killed" : "ended (\(process.terminationStatus))"), \(marked) marked; stderr: "
                       + String(decoding: seen.suffix(300), as: UTF8.self))
        }
        return (inFlight, log)
    }
}
