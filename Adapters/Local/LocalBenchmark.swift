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
/// - **get**: ``defaultGets`` (20,000) point reads by id, ids repeating when there are fewer records, through
///   ``LocalBackend/get(className:id:)``; raw: a cached
///   `SELECT … WHERE class = ? AND id = ?` on a dedicated read-only connection (`inDatabase`, no transaction
///   around it), stepped once and its columns read in place, the JSON not decoded (the SQLite floor); script: the
///   same `SELECT` with `json.loads`.
///
/// So `local/raw` is what the adapter's layers cost over SQLite itself (JSON decoding into `Value`s, validation,
/// ACL and type checks in SQL, keyset cursors, the actor), and `local/script` is the comparison a user makes.
///
/// For query and get a fourth figure, **raw+decode**, runs the raw side again and also turns each row into a
/// ``Record`` with Local's own row decoder (``LocalStore/decodeRecord(className:statement:keys:knownID:)``: the fields parsed
/// in SQLite's buffer with the core's ``Value/parse(jsonBytes:path:)``, the ACL, the metadata). That is the least a
/// reader that hands out records decoded with the core's parser must do, so `raw+decode / raw`
/// (``Measurement/eagerBound``) is the highest `local/raw` such a reader reaches on this machine, and
/// `local / raw+decode` is what Local's own layers cost on top of decoding.
///
/// The sides **alternate** so that the machine's speed, which drifts on a shared host, weighs on every side alike:
/// the inserts chunk by chunk, the query three whole times per side, the point reads in nine slices per side, each
/// round starting with the next side. Each side's point-read connection is opened, and its statements prepared,
/// before the reads are timed: the raw side opens its read-only connection, and one
/// ``LocalBackend/get(className:id:)`` (which opens Local's) runs untimed.
public struct LocalBenchmark: Sendable {
    public var records: Int
    public var chunkSize: Int
    public var pageSize: Int
    /// The baseline script (`Benchmarks/local_baseline.py`) run with `python3`; `nil` leaves the script column out.
    public var baselineScript: URL?
    /// The Python interpreter for ``baselineScript``, looked up in `PATH` when it has no slash.
    public var python: String
    /// Point reads per side (`nil`: ``defaultGets``); the ids repeat when it is above `records`.
    public var gets: Int?
    /// Point reads per side when ``gets`` is `nil`: enough that each side reads for a fair share of a second.
    public static let defaultGets = 20_000
    /// Whole passes of the query per side, alternating with the other sides.
    static let queryRounds = 3
    /// Slices of the point reads per side, alternating with the other sides (a multiple of the three sides, so that
    /// each goes first equally often).
    static let getRounds = 9

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
        /// Raw GRDB that also decodes every row into a ``Record`` (query and get; `nil` for insert).
        public var rawDecoded: Double? = nil
        public var ratio: Double { raw > 0 ? local / raw : 0 }
        /// `local / rawDecoded`: Local's layers over decoding, when ``rawDecoded`` was measured.
        public var decodedRatio: Double? { rawDecoded.flatMap { $0 > 0 ? local / $0 : nil } }
        /// `rawDecoded / raw`: the highest `local/raw` a reader that decodes every record with the core's parser
        /// reaches here.
        public var eagerBound: Double? { rawDecoded.flatMap { raw > 0 ? $0 / raw : nil } }
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
                             "scriptRatio": m.scriptRatio.map { .double(($0 * 100).rounded() / 100) } ?? .null,
                             "rawDecoded": m.rawDecoded.map { .double($0.rounded()) } ?? .null,
                             "decodedRatio": m.decodedRatio.map { .double(($0 * 100).rounded() / 100) } ?? .null,
                             "eagerBound": m.eagerBound.map { .double(($0 * 100).rounded() / 100) } ?? .null])
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
            func r(_ x: Double?) -> String { x.map { String(format: "%.2f", $0) } ?? "-" }
            let rows = measurements.map {
                [$0.name, n($0.local), n($0.raw), $0.script.map(n) ?? "-", r($0.ratio), r($0.scriptRatio),
                 $0.rawDecoded.map(n) ?? "-", r($0.decodedRatio), r($0.eagerBound), $0.detail]
            }
            let headers = ["workload", "local rec/s", "raw rec/s", "script rec/s", "local/raw", "local/script",
                           "raw+decode rec/s", "local/(raw+decode)", "eager bound", "what"]
            var widths = headers.map(\.count)
            for r in rows { for (i, c) in r.enumerated() { widths[i] = max(widths[i], c.count) } }
            for r in [headers] + rows {
                lines.append(r.enumerated().map { i, c in i == 0 || i == headers.count - 1 ? c.padding(toLength: widths[i], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[i] - c.count) + c }.joined(separator: "  "))
            }
            lines.append("")
            if let skipped = script.skipped {
                lines.append("script: not run (\(skipped))")
            } else {
                lines.append("script: \(script.path ?? "?") (Python \(script.python ?? "?"), SQLite \(script.sqlite ?? "?"))")
            }
            lines.append("raw+decode: raw GRDB that also decodes each row into a Record; eager bound = raw+decode / raw, "
                + "the highest local/raw for a reader that decodes every record with the core's parser")
            return lines.joined(separator: "\n")
        }
    }

    public func run() async throws -> Result {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mbaas-bench-\(SecureRandom.alphanumeric(10))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let inputs = (0..<records).map(Self.fields)
        let gets = self.gets ?? Self.defaultGets

        // Local through its public API; raw GRDB with the same schema and index, cached statements, no JSON decoding.
        // The inserts alternate chunk by chunk (the side that goes first alternating too), and so do the reads below.
        let local = try LocalBackend(path: dir.appendingPathComponent("local.db").path)
        let figures: Figures
        do {
            figures = try await measure(local, dir: dir, inputs: inputs, gets: gets)
            await local.close()
        } catch {
            await local.close()
            throw error
        }
        let localMatches = figures.matches
        let readMatches = localMatches * Self.queryRounds
        let (localInsert, rawInsert) = figures.insert
        let (localQuery, rawQuery, rawDecodedQuery) = figures.query
        let (localGet, rawGet, rawDecodedGet) = figures.get

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
                        local: Double(readMatches) / localQuery, raw: Double(readMatches) / rawQuery, script: script["query"],
                        rawDecoded: Double(readMatches) / rawDecodedQuery),
            Measurement(name: "get", detail: "\(gets) point reads by id",
                        local: Double(gets) / localGet, raw: Double(gets) / rawGet, script: script["get"],
                        rawDecoded: Double(gets) / rawDecodedGet),
        ], script: scriptRun)
    }

    /// The timed part of a run: seconds per side (Local, raw, raw+decode) of each workload.
    private struct Figures {
        var matches: Int
        var insert: (Double, Double)
        var query: (Double, Double, Double)
        var get: (Double, Double, Double)
    }

    /// Fills Local's database and a raw one, then times the reads; `local` is closed by the caller.
    private func measure(_ local: LocalBackend, dir: URL, inputs: [[String: Value]], gets: Int) async throws -> Figures {
        try await local.createIndex(className: "Bench", key: "money")
        let raw = try Self.openRaw(dir.appendingPathComponent("raw.db").path)
        defer { try? raw.close() }
        var insertTime = [0.0, 0.0]
        for (round, start) in stride(from: 0, to: inputs.count, by: chunkSize).enumerated() {
            let chunk = inputs[start..<min(start + chunkSize, inputs.count)]
            for k in 0..<2 {
                let side = (round + k) % 2
                insertTime[side] += try await time {
                    if side == 0 {
                        let ops = chunk.map { BatchOperation.create(Record(className: "Bench", fields: $0)) }
                        for case .failure(let e) in try await local.batch(ops) { throw e }
                    } else {
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
            }
        }

        // Queries: each side runs the whole query once per round; the side that goes first rotates.
        let query = Query("Bench", predicate: Field("money") >= 100, sort: [SortKey("money", ascending: false), SortKey("title")])
        var queryTime = [0.0, 0.0, 0.0]
        var queryMatches: [Set<Int>] = [[], [], []]
        for round in 0..<Self.queryRounds {
            for k in 0..<3 {
                let side = (round + k) % 3
                var matches = 0
                queryTime[side] += try await time {
                    switch side {
                    case 0: for try await _ in local.records(matching: query, pageSize: pageSize) { matches += 1 }
                    case 1: matches = try await Self.rawQuery(raw, pageSize: pageSize, decode: false)
                    default: matches = try await Self.rawQuery(raw, pageSize: pageSize, decode: true)
                    }
                }
                queryMatches[side].insert(matches)
            }
        }
        guard queryMatches.allSatisfy({ $0.count == 1 }), Set(queryMatches.flatMap { $0 }).count == 1,
              let localMatches = queryMatches[0].first else {
            throw MBaaSError(.unavailable, "benchmark mismatch: the query found \(queryMatches.map { $0.sorted() }) records (local, raw, raw+decode)")
        }

        // Point reads: the samples are cut into slices; each round reads one slice on each side, the first side
        // rotating, so that a slow spell of the machine falls on every side alike.
        let ids = try await local.records(matching: Query("Bench", keys: []), pageSize: 1000).collect().compactMap(\.id)
        let sample = Self.sample(ids, count: gets)
        let rawIds = try await raw.read { db in try String.fetchAll(db, sql: "SELECT id FROM records") }
        let rawSample = Self.sample(rawIds, count: gets)
        // A dedicated read-only connection: GRDB's cheapest point read (the pool's `read` adds a checkout, a schema
        // check and a transaction around each lookup).
        var readOnly = Configuration()
        readOnly.readonly = true
        let rawQueue = try DatabaseQueue(path: dir.appendingPathComponent("raw.db").path, configuration: readOnly)
        defer { try? rawQueue.close() }
        let pointSQL = "SELECT id, created_at, updated_at, version, acl, fields FROM records WHERE class = 'Bench' AND id = ?"
        // The decoding side selects Local's record columns, which its row decoder reads.
        let decodedPointSQL = "SELECT seq, id, created_at, updated_at, version, acl, fields FROM records WHERE class = 'Bench' AND id = ?"
        func rawRead<T>(_ id: String, sql: String, _ body: (SQLiteStatement) throws -> T) throws -> T {
            try rawQueue.inDatabase { db -> T in
                guard let value = try LocalColumn.stepOnce(db.cachedStatement(sql: sql), db, bind: [id], body) else {
                    throw MBaaSError(.notFound, id)
                }
                return value
            }
        }
        guard gets > 0, sample.count == gets, rawSample.count == gets else {
            throw MBaaSError(.invalidRequest, "bench local needs at least one record and one point read")
        }
        // Untimed: opens Local's point-read connection and prepares both statements (the raw connection is open).
        _ = try await local.get(className: "Bench", id: sample[0])
        _ = try rawRead(rawSample[0], sql: pointSQL, Self.touch)
        _ = try rawRead(rawSample[0], sql: decodedPointSQL) { try Self.decode($0, knownID: rawSample[0]) }
        var rawBytes = 0
        var rawDecodedFields = 0
        var getTime = [0.0, 0.0, 0.0]
        let slices = min(Self.getRounds, gets)
        for round in 0..<slices {
            let range = (gets * round / slices)..<(gets * (round + 1) / slices)
            for k in 0..<3 {
                let side = (round + k) % 3
                getTime[side] += try await time {
                    switch side {
                    case 0: for id in sample[range] { _ = try await local.get(className: "Bench", id: id) }
                    case 1: for id in rawSample[range] { rawBytes &+= try rawRead(id, sql: pointSQL, Self.touch) }
                    default:
                        for id in rawSample[range] {
                            rawDecodedFields &+= try rawRead(id, sql: decodedPointSQL) { try Self.decode($0, knownID: id) }.fields.count
                        }
                    }
                }
            }
        }
        guard rawBytes > 0, rawDecodedFields > 0 else { throw MBaaSError(.unavailable, "benchmark mismatch: raw point reads read nothing") }
        return Figures(matches: localMatches, insert: (insertTime[0], insertTime[1]),
                       query: (queryTime[0], queryTime[1], queryTime[2]), get: (getTime[0], getTime[1], getTime[2]))
    }

    /// One result from several runs of the same benchmark: per workload and column, the median of the runs (the
    /// middle value; for an even count, the mean of the two middle ones). Within a run the Swift sides alternate, but
    /// the script runs after them, so a slow spell of the machine may still fall on one side of one run; the median
    /// leaves such a run out. The ratios are of the medians.
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
            let decoded = same.compactMap(\.rawDecoded)
            out.rawDecoded = decoded.count == same.count && !decoded.isEmpty ? median(decoded) : nil
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
            _ = FileManager.default.createFile(atPath: errFile.path, contents: nil)
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

    /// The least an eager reader does with a row of Local's record columns (`seq, id, created_at, updated_at, version,
    /// acl, fields`, ``LocalStore/recordColumns``): Local's own row decoder, fields parsed in SQLite's buffer.
    ///
    /// `knownID`: the id a point read selected the row by, which Local's `get` also takes instead of reading it back
    /// (a reader that asked for an id knows it).
    static func decode(_ statement: SQLiteStatement, knownID: String? = nil) throws -> Record {
        try LocalStore.decodeRecord(className: "Bench", statement: statement, knownID: knownID).record
    }

    static func touch(_ row: Row) -> Int {
        let id: String = row["id"], fields: String = row["fields"], acl: String? = row["acl"]
        let created: Int64 = row["created_at"], updated: Int64 = row["updated_at"], version: Int64 = row["version"]
        return id.utf8.count &+ fields.utf8.count &+ (acl?.utf8.count ?? 0) &+ Int(truncatingIfNeeded: created &+ updated &+ version)
    }

    /// The query a GRDB user would write by hand: the same filter and order, keyset pages on (money, title, seq)
    /// bounded by the last money value so the index range shrinks page by page. With `decode`, each row also becomes
    /// a ``Record`` read in place from the cursor's statement (``decode(_:)``, the row starting with Local's record
    /// columns), the page's records kept until the page ends as a page of results would be.
    private static func rawQuery(_ pool: DatabasePool, pageSize: Int, decode: Bool) async throws -> Int {
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
                let statement: Statement, cursor: RowCursor
                if let (m, t, s) = after {
                    statement = try db.cachedStatement(sql: nextSQL)
                    cursor = try Row.fetchCursor(statement, arguments: [m, m, m, t, t, s, pageSize])
                } else {
                    statement = try db.cachedStatement(sql: firstSQL)
                    cursor = try Row.fetchCursor(statement, arguments: [pageSize])
                }
                var count = 0, bytes = 0
                var end: (Int64, String, Int64)?
                var page: [Record] = []
                while let row = try cursor.next() {
                    if decode {
                        page.append(try Self.decode(statement.sqliteStatement))
                    } else {
                        bytes &+= touch(row)
                    }
                    count += 1
                    end = (row[7], row[8], row[0])
                }
                bytes &+= page.reduce(0) { $0 &+ $1.fields.count }
                guard count == 0 || bytes > 0 else { throw MBaaSError(.unavailable, "benchmark mismatch: raw query rows read nothing") }
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
