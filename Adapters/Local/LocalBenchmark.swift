import Dispatch
import Foundation
import GRDB
import MBaaSCore

/// Measures the Local backend's throughput next to raw GRDB doing the equivalent work on the same schema, in the
/// same process, so the ratio shows what the adapter's layers cost (validation, ACL and type checks in SQL,
/// keyset cursors, `Record` values, the actor and async hops). Used by `mbaas bench local`; not a test.
///
/// Workloads, each on its own fresh database file in a temporary directory:
/// - **insert**: `records` records through the public ``LocalBackend/batch(_:)`` in chunks of `chunkSize` (one
///   transaction each), vs one prepared `INSERT` per record in one transaction per chunk; both generate ids and
///   print the neutral field JSON.
/// - **query**: every record with `money >= 100`, sorted by `-money,title`, in pages of `pageSize` through
///   ``LocalBackend/records(matching:pageSize:)``, vs a hand-written keyset query over the same JSON columns;
///   both decode each row's fields into `Value`s.
/// - **get**: `min(records, 5000)` point reads by id, vs a prepared `SELECT … WHERE class = ? AND id = ?`.
public struct LocalBenchmark: Sendable {
    public var records: Int
    public var chunkSize: Int
    public var pageSize: Int

    public init(records: Int = 20_000, chunkSize: Int = 500, pageSize: Int = 500) {
        self.records = records
        self.chunkSize = chunkSize
        self.pageSize = pageSize
    }

    /// One workload's throughput, in operations (records) per second.
    public struct Measurement: Sendable, Hashable {
        public var name: String
        public var detail: String
        public var local: Double
        public var raw: Double
        public var ratio: Double { raw > 0 ? local / raw : 0 }
    }

    public struct Result: Sendable {
        public var records: Int
        public var chunkSize: Int
        public var pageSize: Int
        /// `debug` or `release`.
        public var build: String
        public var measurements: [Measurement]

        public var json: JSON {
            .object([
                "records": .int(Int64(records)), "chunkSize": .int(Int64(chunkSize)), "pageSize": .int(Int64(pageSize)),
                "build": .string(build), "goalRatio": 0.5,
                "results": .array(measurements.map { m in
                    .object(["name": .string(m.name), "detail": .string(m.detail), "unit": "records/s",
                             "local": .double(m.local.rounded()), "raw": .double(m.raw.rounded()),
                             "ratio": .double((m.ratio * 100).rounded() / 100)])
                }),
            ])
        }

        public var table: String {
            func n(_ x: Double) -> String {
                let f = NumberFormatter()
                f.numberStyle = .decimal
                f.maximumFractionDigits = 0
                return f.string(from: NSNumber(value: x)) ?? String(Int(x))
            }
            var lines = ["Local backend vs raw GRDB: \(records) records, \(build) build (goal: local/raw >= 0.5)", ""]
            let rows = measurements.map { [$0.name, n($0.local), n($0.raw), String(format: "%.2f", $0.ratio), $0.detail] }
            let headers = ["workload", "local rec/s", "raw rec/s", "local/raw", "what"]
            var widths = headers.map(\.count)
            for r in rows { for (i, c) in r.enumerated() { widths[i] = max(widths[i], c.count) } }
            for r in [headers] + rows {
                lines.append(r.enumerated().map { i, c in i == 0 || i == 4 ? c.padding(toLength: widths[i], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[i] - c.count) + c }.joined(separator: "  "))
            }
            return lines.joined(separator: "\n")
        }
    }

    public func run() async throws -> Result {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mbaas-bench-\(LocalRandom.alphanumeric(10))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let inputs = (0..<records).map(Self.fields)

        // Local backend through its public API.
        let local = try LocalBackend(path: dir.appendingPathComponent("local.db").path)
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
        let sample = Self.sample(ids, count: min(records, 5000))
        let localGet = try await time {
            for id in sample { _ = try await local.get(className: "Bench", id: id) }
        }
        await local.close()

        // Raw GRDB: the same schema, hand-written prepared statements.
        let raw = try Self.openRaw(dir.appendingPathComponent("raw.db").path)
        let rawInsert = try await time {
            for start in stride(from: 0, to: inputs.count, by: chunkSize) {
                let chunk = Array(inputs[start..<min(start + chunkSize, inputs.count)])
                try await raw.write { db in
                    let stmt = try db.cachedStatement(sql: """
                        INSERT INTO records(class, id, created_at, updated_at, version, acl, fields) VALUES ('Bench', ?, ?, ?, 1, NULL, ?)
                        """)
                    let now = LocalTime.millis(Date())
                    for fields in chunk {
                        try stmt.execute(arguments: [LocalRandom.id(), now, now, Value.object(fields).json.printed()])
                    }
                }
            }
        }
        var rawMatches = 0
        let rawQuery = try await time { rawMatches = try await Self.rawQuery(raw, pageSize: pageSize) }
        let rawIds = try await raw.read { db in try String.fetchAll(db, sql: "SELECT id FROM records") }
        let rawSample = Self.sample(rawIds, count: min(records, 5000))
        let rawGet = try await time {
            for id in rawSample {
                _ = try await raw.read { db -> [String: Value] in
                    let stmt = try db.cachedStatement(sql: "SELECT id, created_at, updated_at, version, acl, fields FROM records WHERE class = 'Bench' AND id = ?")
                    guard let row = try Row.fetchOne(stmt, arguments: [id]) else { throw MBaaSError(.notFound, id) }
                    return try Self.decodeFields(row[5])
                }
            }
        }
        try raw.close()

        guard localMatches == rawMatches else {
            throw MBaaSError(.unavailable, "benchmark mismatch: local query found \(localMatches) records, raw \(rawMatches)")
        }
        #if DEBUG
        let build = "debug"
        #else
        let build = "release"
        #endif
        return Result(records: records, chunkSize: chunkSize, pageSize: pageSize, build: build, measurements: [
            Measurement(name: "insert", detail: "batch create, \(chunkSize) per transaction",
                        local: Double(records) / localInsert, raw: Double(records) / rawInsert),
            Measurement(name: "query", detail: "\(localMatches) matches of money >= 100 sorted -money,title, pages of \(pageSize)",
                        local: Double(localMatches) / localQuery, raw: Double(rawMatches) / rawQuery),
            Measurement(name: "get", detail: "\(sample.count) point reads by id",
                        local: Double(sample.count) / localGet, raw: Double(rawSample.count) / rawGet),
        ])
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
        return pool
    }

    static func decodeFields(_ text: String) throws -> [String: Value] {
        guard case .object(let o) = try JSON.parse(text) else { return [:] }
        var fields: [String: Value] = [:]
        for (k, v) in o { fields[k] = try Value(json: v) }
        return fields
    }

    /// The query a GRDB user would write by hand: the same filter and order, keyset pages on (money, title, seq).
    private static func rawQuery(_ pool: DatabasePool, pageSize: Int) async throws -> Int {
        let money = "json_extract(fields, '$.\"money\"')", title = "json_extract(fields, '$.\"title\"')"
        var last: (Int64, String, Int64)?
        var total = 0
        while true {
            let after = last
            let page = try await pool.read { db -> [(Int64, String, Int64, [String: Value])] in
                var sql = "SELECT seq, id, created_at, updated_at, version, acl, fields, \(money), \(title) FROM records WHERE class = 'Bench' AND \(money) >= 100"
                var args: StatementArguments = []
                if let (m, t, s) = after {
                    sql += " AND (\(money) < ? OR (\(money) = ? AND (\(title) > ? OR (\(title) = ? AND seq > ?))))"
                    args = [m, m, t, t, s]
                }
                sql += " ORDER BY \(money) DESC, \(title) ASC, seq ASC LIMIT ?"
                args += [pageSize]
                var rows: [(Int64, String, Int64, [String: Value])] = []
                let cursor = try Row.fetchCursor(db.cachedStatement(sql: sql), arguments: args)
                while let row = try cursor.next() {
                    rows.append((row[7], row[8], row[0], try decodeFields(row[6])))
                }
                return rows
            }
            total += page.count
            guard page.count == pageSize, let end = page.last else { return total }
            last = (end.0, end.1, end.2)
        }
    }

    private func time(_ body: () async throws -> Void) async throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try await body()
        return max(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9, 1e-9)
    }
}
