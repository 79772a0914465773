import Foundation
import MBaaSCore
import MBaaSLocal
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
        guard let script = LocalBenchmark.locateScript("Benchmarks/postgres_baseline.py") else {
            printNote("postgres: Benchmarks/postgres_baseline.py not found; the psycopg row is left out")
            printNote(leftover)
            return rows
        }
        do {
            let out = try LocalBenchmark.runScript(python: postgresPython, script: script, arguments: [
                "--schema", "bench_py_\(run)", "--export", export.path, "--also-drop", "bench_\(run)",
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
}
