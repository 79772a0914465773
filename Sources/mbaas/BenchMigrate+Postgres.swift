import Foundation
import MBaaSCore
import MBaaSMigration
import MBaaSNCMB

/// `mbaas bench migrate --postgres URL`: the migration into PostgreSQL next to a plain psycopg script
/// (`Benchmarks/postgres_baseline.py`: `executemany` in batches of 500 into the same table shape, committed per batch).
extension BenchMigrate {
    /// The migration of the export's MemoClass into a fresh schema of `url`, and the script's load of the same file
    /// into another fresh schema, as rows of the report. The script's row is left out, with a note saying why, when
    /// it cannot run (no interpreter, psycopg missing).
    func postgresRows(url: String, export: URL, source: NCMBExportBackend, scratch: URL) async throws -> [Row] {
        let run = String(UUID().uuidString.lowercased().filter(\.isLetter).prefix(6))
        let separator = url.contains("?") ? "&" : "?"
        let admin = BackendContext(administrative: true)
        let pg = try await BuiltinAdapters.registry().open(url + separator + "schema=bench_\(run)", context: admin)
        let options = MigrationOptions(classes: ["MemoClass"], concurrency: 4, verify: false, users: false, files: false)
        var clock = PhaseClock()
        let (report, seconds) = try await timed {
            try await Migration(source: source, target: pg, options: options,
                                state: MigrationState(directory: scratch.appendingPathComponent("s-postgres")),
                                observer: clock.observer).run()
        }
        var rows = [Row(target: "postgres", method: "mbaas migrate", records: try written(report), seconds: seconds)]
        rows += clock.rows(target: "postgres", report: report)
        await pg.close()

        let leftover = "postgres: schema bench_\(run) (the migration's \(records) records) is left in the database: DROP SCHEMA bench_\(run) CASCADE"
        guard let script = Self.postgresBaselineScript() else {
            printNote("postgres: Benchmarks/postgres_baseline.py not found; the psycopg row is left out")
            printNote(leftover)
            return rows
        }
        do {
            let out = try Self.runScript(python: postgresPython, arguments: [
                script.path, "--schema", "bench_py_\(run)", "--export", export.path, "--also-drop", "bench_\(run)",
            ], environment: ["MBAAS_BASELINE_POSTGRES_URL": url.components(separatedBy: "?")[0]])
            guard let n = out["records"]?.intValue, let s = out["seconds"]?.doubleValue else {
                throw MBaaSError(.unavailable, "the script printed no records/seconds")
            }
            printNote("postgres: the baseline ran with psycopg \(out["psycopg"]?.stringValue ?? "?"), Python \(out["python"]?.stringValue ?? "?"), PostgreSQL \(out["server"]?.stringValue ?? "?")")
            rows.append(Row(target: "postgres", method: "psycopg script, executemany, 500 per commit", records: Int(n), seconds: s))
        } catch {
            printNote("postgres: the psycopg script did not run (\(MBaaSError.describe(error))); its row is left out. Install psycopg for \(postgresPython): pip install 'psycopg[binary]'")
            printNote(leftover)
        }
        return rows
    }

    /// `Benchmarks/postgres_baseline.py` in the current directory or in the source tree this binary was built from.
    static func postgresBaselineScript() -> URL? {
        let relative = "Benchmarks/postgres_baseline.py"
        let cwd = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(relative)
        if FileManager.default.fileExists(atPath: cwd.path) { return cwd }
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(relative)
        return FileManager.default.fileExists(atPath: source.path) ? source : nil
    }

    /// Runs `python arguments…` with `environment` added and parses the JSON object it prints; its stderr is the
    /// error when it fails. Standard error goes to a file, so that neither pipe can fill while the other is read.
    static func runScript(python: String, arguments: [String], environment: [String: String] = [:]) throws -> JSONObject {
        let process = Process()
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        if python.contains("/") {
            process.executableURL = URL(fileURLWithPath: python)
            process.arguments = arguments
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [python] + arguments
        }
        let out = Pipe()
        let errFile = FileManager.default.temporaryDirectory.appendingPathComponent("mbaas-bench-\(UUID().uuidString).err")
        FileManager.default.createFile(atPath: errFile.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errFile) }
        process.standardOutput = out
        process.standardError = try FileHandle(forWritingTo: errFile)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let errors = (try? Data(contentsOf: errFile)) ?? Data()
        guard process.terminationStatus == 0 else {
            let last = String(decoding: errors, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
            throw MBaaSError(.unavailable, "exit \(process.terminationStatus): \(last)")
        }
        guard let object = try JSON.parse(output).objectValue else { throw MBaaSError(.decoding, "the script printed no JSON object") }
        return object
    }
}
