import Dispatch
public import Foundation
import GRDB
import GRDBSQLite
public import MBaaSCore

/// Measures the Local backend's throughput next to raw GRDB on the same schema and, when a Python 3 interpreter
/// and the baseline script are available, next to a plain Python script (stdlib `sqlite3` + `json`,
/// `Benchmarks/local_baseline.py`) doing the same work, all in one invocation. Used by `mbaas bench local`; not a
/// test.
///
/// Every side gets a fresh database file in WAL mode with `synchronous = NORMAL`, the Local schema, and an
/// expression index on `money` (created before the inserts). Workloads:
/// - **insert**: `records` records through the public ``LocalBackend/batch(_:)`` in chunks of `chunkSize` (one
///   transaction each); raw: one cached `INSERT` per record, one transaction per chunk, the fields printed with the
///   core's direct printer; script: `executemany` with `json.dumps`.
/// - **query**: every record with `money >= 100`, sorted by `-money,title`, in pages of `pageSize` through
///   ``LocalBackend/records(matching:pageSize:)`` (every record decoded into a ``Record`` of ``Value``s); raw: a
///   hand-written keyset query, one read per page, the rows' columns read as text without decoding the JSON (the
///   SQLite floor); script: the same keyset query with `json.loads` per row.
/// - **get**: `min(records, 5000)` point reads by id through ``LocalBackend/get(className:id:)``; raw: a cached
///   `SELECT … WHERE class = ? AND id = ?` on a dedicated read-only connection (`inDatabase`, no transaction
///   around it), stepped once and its columns read in place, the JSON not decoded (the SQLite floor); script: the
///   same `SELECT` with `json.loads`.
///
/// So `local/raw` is what the adapter's layers cost over SQLite itself (JSON decoding into `Value`s, validation,
/// ACL and type checks in SQL, keyset cursors, the actor), and `local/script` is the comparison a user makes.
public struct LocalBenchmark: Sendable {
    public var records: Int
    public var chunkSize: Int
    public var pageSize: Int
    /// The baseline script (`Benchmarks/local_baseline.py`) run with `python3`; `nil` leaves the script column out.
    public var baselineScript: URL?
    /// The Python interpreter for ``baselineScript``, looked up in `PATH` when it has no slash.
    public var python: String
    /// Point reads per side (`nil`: `min(records, 5000)`); the ids repeat when it is above `records`.
    public var gets: Int?

    public init(records: Int = 20_000, chunkSize: Int = 500, pageSize: Int = 500, baselineScript: URL? = nil,
                python: String = "python3", gets: Int? = nil) {
        self.gets = gets
        self.records = records
        self.chunkSize = chunkSize
        self.pageSize = pageSize
        self.baselineScript = baselineScript
        self.python = python
    }

    /// `Benchmarks/local_baseline.py` in the current directory or in the source tree this binary was built from.
    public static func defaultBaselineScript() -> URL? { locateScript("Benchmarks/local_baseline.py") }

    /// A script of this repository (`Benchmarks/…`, relative to its root) in the current directory or in the source
    /// tree this binary was built from; `nil` when neither has it.
    public static func locateScript(_ relative: String) -> URL? {
        let cwd = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(relative)
        if FileManager.default.fileExists(atPath: cwd.path) { return cwd }
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(relative)
        return FileManager.default.fileExists(atPath: source.path) ? source : nil
    }

    /// One workload's throughput, in operations (records) per second.
    public struct Measurement: Sendable, Hashable {
        public var name: String
        public var detail: String
        public var local: Double
        public var raw: Double
        /// The plain Python script's throughput, when it ran.
        public var script: Double?
        public var ratio: Double { raw > 0 ? local / raw : 0 }
        /// `local / script`, when the script ran.
        public var scriptRatio: Double? { script.flatMap { $0 > 0 ? local / $0 : nil } }
    }

    /// How the script side ran: its interpreter and SQLite versions, or why it did not run.
    public struct ScriptRun: Sendable, Hashable {
        public var path: String?
        public var python: String?
        public var sqlite: String?
        /// Set when the script could not run (no interpreter, no script, an error); the script column is empty.
        public var skipped: String?
    }

    public struct Result: Sendable {
        public var records: Int
        public var chunkSize: Int
        public var pageSize: Int
        /// `debug` or `release`.
        public var build: String
        public var measurements: [Measurement]
        public var script: ScriptRun
        /// How many runs the figures are the median of (``LocalBenchmark/median(of:)``); 1 for one run.
        public var runs: Int = 1

        public var json: JSON {
            .object([
                "records": .int(Int64(records)), "chunkSize": .int(Int64(chunkSize)), "pageSize": .int(Int64(pageSize)),
                "build": .string(build), "runs": .int(Int64(runs)), "goalRatio": 0.5,
                "goalRatios": .object(["insert": 0.8, "query": 0.8, "get": 0.9]), "scriptGoalRatio": 1.0,
                "results": .array(measurements.map { m in
                    .object(["name": .string(m.name), "detail": .string(m.detail), "unit": "records/s",
                             "local": .double(m.local.rounded()), "raw": .double(m.raw.rounded()),
                             "ratio": .double((m.ratio * 100).rounded() / 100),
                             "script": m.script.map { .double($0.rounded()) } ?? .null,
                             "scriptRatio": m.scriptRatio.map { .double(($0 * 100).rounded() / 100) } ?? .null])
                }),
                "script": .object([
                    "path": script.path.map(JSON.string) ?? .null, "python": script.python.map(JSON.string) ?? .null,
                    "sqlite": script.sqlite.map(JSON.string) ?? .null, "skipped": script.skipped.map(JSON.string) ?? .null,
                ]),
            ])
        }

        public var table: String {
            func n(_ x: Double) -> String {
                let f = NumberFormatter()
                f.numberStyle = .decimal
                f.maximumFractionDigits = 0
                return f.string(from: NSNumber(value: x)) ?? String(Int(x))
            }
            var lines = ["Local backend vs raw GRDB vs a plain Python script: \(records) records, \(build) build"
                + (runs > 1 ? ", median of \(runs) runs " : " ")
                + "(goals: local/raw >= 0.8 insert and query, >= 0.9 get as a median of 3 runs; local/script >= 1)", ""]
            let rows = measurements.map {
                [$0.name, n($0.local), n($0.raw), $0.script.map(n) ?? "-", String(format: "%.2f", $0.ratio),
                 $0.scriptRatio.map { String(format: "%.2f", $0) } ?? "-", $0.detail]
            }
            let headers = ["workload", "local rec/s", "raw rec/s", "script rec/s", "local/raw", "local/script", "what"]
            var widths = headers.map(\.count)
            for r in rows { for (i, c) in r.enumerated() { widths[i] = max(widths[i], c.count) } }
            for r in [headers] + rows {
                lines.append(r.enumerated().map { i, c in i == 0 || i == 6 ? c.padding(toLength: widths[i], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[i] - c.count) + c }.joined(separator: "  "))
            }
            lines.append("")
            if let skipped = script.skipped {
                lines.append("script: not run (\(skipped))")
            } else {
                lines.append("script: \(script.path ?? "?") (Python \(script.python ?? "?"), SQLite \(script.sqlite ?? "?"))")
            }
            return lines.joined(separator: "\n")
        }
    }

    public func run() async throws -> Result {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mbaas-bench-\(SecureRandom.alphanumeric(10))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let inputs = (0..<records).map(Self.fields)
        let gets = self.gets ?? min(records, 5000)

        // Local backend through its public API.
        let local = try LocalBackend(path: dir.appendingPathComponent("local.db").path)
        try await local.createIndex(className: "Bench", key: "money")
        let localInsert = try await time {
            for start in stride(from: 0, to: inputs.count, by: chunkSize) {
                let ops = inputs[start..<min(start + chunkSize, inputs.count)].map { BatchOperation.create(Record(className: "Bench", fields: $0)) }
                for case .failure(let e) in try await local.batch(ops) { throw e }
            }
        }
        let query = Query("Bench", predicate: Field("money") >= 100, sort: [SortKey("money", ascending: false), SortKey("title")])
        var localMatches = 0
        let localQuery = try await time {
            for try await _ in local.records(matching: query, pageSize: pageSize) { localMatches += 1 }
        }
        let ids = try await local.records(matching: Query("Bench", keys: []), pageSize: 1000).collect().compactMap(\.id)
        let sample = Self.sample(ids, count: gets)
        let localGet = try await time {
            for id in sample { _ = try await local.get(className: "Bench", id: id) }
        }
        await local.close()

        // Raw GRDB: the same schema and index, cached statements, no JSON decoding, no async hop per row.
        let raw = try Self.openRaw(dir.appendingPathComponent("raw.db").path)
        let rawInsert = try await time {
            for start in stride(from: 0, to: inputs.count, by: chunkSize) {
                let chunk = inputs[start..<min(start + chunkSize, inputs.count)]
                try await raw.write { db in
                    let stmt = try db.cachedStatement(sql: """
                        INSERT INTO records(class, id, created_at, updated_at, version, acl, fields) VALUES ('Bench', ?, ?, ?, 1, NULL, ?)
                        """)
                    let now = LocalTime.millis(Date())
                    for fields in chunk {
                        try stmt.execute(arguments: [LocalRecordIds.next(), now, now, Value.object(fields).jsonText])
                    }
                }
            }
        }
        var rawMatches = 0
        let rawQuery = try await time { rawMatches = try await Self.rawQuery(raw, pageSize: pageSize) }
        let rawIds = try await raw.read { db in try String.fetchAll(db, sql: "SELECT id FROM records") }
        let rawSample = Self.sample(rawIds, count: gets)
        var rawBytes = 0
        // A dedicated read-only connection: GRDB's cheapest point read (the pool's `read` adds a checkout, a schema
        // check and a transaction around each lookup).
        var readOnly = Configuration()
        readOnly.readonly = true
        let rawQueue = try DatabaseQueue(path: dir.appendingPathComponent("raw.db").path, configuration: readOnly)
        let rawGet = try await time {
            for id in rawSample {
                rawBytes &+= try rawQueue.inDatabase { db -> Int in
                    let stmt = try db.cachedStatement(sql: "SELECT id, created_at, updated_at, version, acl, fields FROM records WHERE class = 'Bench' AND id = ?")
                    guard let bytes = try LocalColumn.stepOnce(stmt, db, bind: [id], Self.touch) else { throw MBaaSError(.notFound, id) }
                    return bytes
                }
            }
        }
        try rawQueue.close()
        try raw.close()

        guard rawBytes > 0 else { throw MBaaSError(.unavailable, "benchmark mismatch: raw point reads read nothing") }
        guard localMatches == rawMatches else {
            throw MBaaSError(.unavailable, "benchmark mismatch: local query found \(localMatches) records, raw \(rawMatches)")
        }

        // The plain script, after the Swift sides so that they do not compete for the CPU.
        var scriptRun = ScriptRun(path: baselineScript?.path)
        var script: [String: Double] = [:]
        if let baselineScript {
            do {
                let output = try Self.runScript(python: python, script: baselineScript, arguments: [
                    "--records", String(records), "--chunk-size", String(chunkSize), "--page-size", String(pageSize),
                    "--gets", String(gets), "--dir", dir.path,
                ])
                for key in ["insert", "query", "get"] { script[key] = output[key]?.doubleValue }
                scriptRun.python = output["python"]?.stringValue
                scriptRun.sqlite = output["sqlite"]?.stringValue
                if let matches = output["matches"]?.intValue, matches != Int64(localMatches) {
                    scriptRun.skipped = "the script found \(matches) matches, Local \(localMatches)"
                    script = [:]
                }
            } catch {
                scriptRun.skipped = "\(error)"
            }
        } else {
            scriptRun.skipped = "Benchmarks/local_baseline.py not found (pass --script)"
        }

        #if DEBUG
        let build = "debug"
        #else
        let build = "release"
        #endif
        return Result(records: records, chunkSize: chunkSize, pageSize: pageSize, build: build, measurements: [
            Measurement(name: "insert", detail: "batch create, \(chunkSize) per transaction",
                        local: Double(records) / localInsert, raw: Double(records) / rawInsert, script: script["insert"]),
            Measurement(name: "query", detail: "\(localMatches) matches of money >= 100 sorted -money,title, pages of \(pageSize)",
                        local: Double(localMatches) / localQuery, raw: Double(rawMatches) / rawQuery, script: script["query"]),
            Measurement(name: "get", detail: "\(sample.count) point reads by id",
                        local: Double(sample.count) / localGet, raw: Double(rawSample.count) / rawGet, script: script["get"]),
        ], script: scriptRun)
    }

    /// One result from several runs of the same benchmark: per workload and column, the median of the runs (the
    /// middle value; for an even count, the mean of the two middle ones). Each run measures the sides one after another
    /// (Local, then raw GRDB, then the script), so a slow spell of the machine may fall on one side of one run;
    /// repeated runs alternate the sides, and the median leaves such a run out. The ratios are of the medians.
    /// `nil` for no runs.
    public static func median(of results: [Result]) -> Result? {
        guard var first = results.first else { return nil }
        func median(_ xs: [Double]) -> Double {
            let s = xs.sorted()
            return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
        }
        first.measurements = first.measurements.map { m in
            let same = results.compactMap { $0.measurements.first { $0.name == m.name } }
            var out = m
            out.local = median(same.map(\.local))
            out.raw = median(same.map(\.raw))
            let scripts = same.compactMap(\.script)
            out.script = scripts.count == same.count ? median(scripts) : nil
            return out
        }
        first.runs = results.count
        return first
    }

    /// Runs the baseline script and parses the JSON object it prints. Foundation's `Process` exists on macOS and
    /// Linux only: on iOS, tvOS and watchOS the script side is `unsupported` (the app's library still builds).
    ///
    /// - Parameter environment: added to this process's environment for the script (a URL with a password goes here,
    ///   never into the arguments, which other users of the machine can read).
    /// Standard error goes to a temporary file, so that neither pipe can fill while the other is read.
    public static func runScript(python: String, script: URL, arguments: [String],
                                 environment: [String: String] = [:]) throws -> JSONObject {
        #if os(macOS) || os(Linux)
        let process = Process()
        if python.contains("/") {
            process.executableURL = URL(fileURLWithPath: python)
            process.arguments = [script.path] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [python, script.path] + arguments
        }
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let out = Pipe()
        let errFile = FileManager.default.temporaryDirectory.appendingPathComponent("mbaas-bench-\(UUID().uuidString).err")
        defer { try? FileManager.default.removeItem(at: errFile) }
        do {
            FileManager.default.createFile(atPath: errFile.path, contents: nil)
            process.standardOutput = out
            process.standardError = try FileHandle(forWritingTo: errFile)
            process.standardInput = FileHandle.nullDevice
            try process.run()
        } catch {
            throw MBaaSError(.unavailable, "cannot run \(python): \(error.localizedDescription)")
        }
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let stderr = (try? Data(contentsOf: errFile)) ?? Data()
            let message = String(decoding: stderr.suffix(400), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            throw MBaaSError(.unavailable, "\(python) \(script.lastPathComponent) exited with status \(process.terminationStatus): \(message)")
        }
        guard let object = try? JSON.parse(stdout).objectValue else {
            throw MBaaSError(.decoding, "\(script.lastPathComponent) did not print a JSON object")
        }
        return object
        #else
        throw MBaaSError.unsupported("running the baseline script", by: "this platform", reason: "Foundation has no Process here")
        #endif
    }

    // MARK: Workload pieces

    /// Deterministic fields of record `i`: strings, ints, doubles, a date, a boolean and an array.
    static func fields(_ i: Int) -> [String: Value] {
        [
            "title": .string("item-\(String(format: "%06d", (i &* 7919) % 1_000_003))"),
            "money": .int(Int64((i &* 7919) % 1000)),
            "score": .double(Double(i % 97) / 7),
            "flag": .bool(i % 2 == 0),
            "tags": .array([.string("t\(i % 5)"), .string("u\(i % 7)")]),
            "due": .date(Date(timeIntervalSince1970: 1_700_000_000 + Double(i) * 60)),
        ]
    }

    private static func sample(_ ids: [String], count: Int) -> [String] {
        guard !ids.isEmpty else { return [] }
        var rng = SystemRandomNumberGenerator()
        return (0..<count).map { _ in ids[Int(rng.next(upperBound: UInt64(ids.count)))] }
    }

    private static func openRaw(_ path: String) throws -> DatabasePool {
        var config = Configuration()
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        let pool = try DatabasePool(path: path, configuration: config)
        try LocalSchema.migrator().migrate(pool)
        try pool.write { db in
            try db.execute(sql: "CREATE INDEX records_idx_money ON records(class, json_extract(fields, '$.\"money\"'))")
        }
        return pool
    }

    /// Reads every column of a record row (the text as Swift strings) without decoding the JSON: the floor.
    /// Reads the columns of a point read in place (`id, created_at, updated_at, version, acl, fields`).
    static func touch(_ statement: SQLiteStatement) -> Int {
        let id = LocalColumn.text(statement, 0)?.utf8.count ?? 0
        let fields = LocalColumn.withText(statement, 5) { $0?.count ?? 0 }
        let acl = LocalColumn.withText(statement, 4) { $0?.count ?? 0 }
        let numbers = (1...3).reduce(Int64(0)) { $0 &+ sqlite3_column_int64(statement, $1) }
        return id &+ fields &+ acl &+ Int(truncatingIfNeeded: numbers)
    }

    static func touch(_ row: Row) -> Int {
        let id: String = row["id"], fields: String = row["fields"], acl: String? = row["acl"]
        let created: Int64 = row["created_at"], updated: Int64 = row["updated_at"], version: Int64 = row["version"]
        return id.utf8.count &+ fields.utf8.count &+ (acl?.utf8.count ?? 0) &+ Int(truncatingIfNeeded: created &+ updated &+ version)
    }

    /// The query a GRDB user would write by hand: the same filter and order, keyset pages on (money, title, seq)
    /// bounded by the last money value so the index range shrinks page by page.
    private static func rawQuery(_ pool: DatabasePool, pageSize: Int) async throws -> Int {
        let money = "json_extract(fields, '$.\"money\"')", title = "json_extract(fields, '$.\"title\"')"
        let select = "SELECT seq, id, created_at, updated_at, version, acl, fields, \(money), \(title) FROM records WHERE class = 'Bench' AND \(money) >= 100"
        let order = " ORDER BY \(money) DESC, \(title) ASC, seq ASC LIMIT ?"
        let firstSQL = select + order
        let nextSQL = select + " AND \(money) <= ? AND (\(money) < ? OR (\(money) = ? AND (\(title) > ? OR (\(title) = ? AND seq > ?))))" + order
        var last: (Int64, String, Int64)?
        var total = 0
        while true {
            let after = last
            let (count, end) = try await pool.read { db -> (Int, (Int64, String, Int64)?) in
                let cursor: RowCursor
                if let (m, t, s) = after {
                    cursor = try Row.fetchCursor(db.cachedStatement(sql: nextSQL), arguments: [m, m, m, t, t, s, pageSize])
                } else {
                    cursor = try Row.fetchCursor(db.cachedStatement(sql: firstSQL), arguments: [pageSize])
                }
                var count = 0, bytes = 0
                var end: (Int64, String, Int64)?
                while let row = try cursor.next() {
                    bytes &+= touch(row)
                    count += 1
                    end = (row[7], row[8], row[0])
                }
                return (count, end)
            }
            total += count
            guard count == pageSize, let end else { return total }
            last = end
        }
    }

    private func time(_ body: () async throws -> Void) async throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try await body()
        return max(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9, 1e-9)
    }
}
