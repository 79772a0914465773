import ArgumentParser
import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSMigration
import MBaaSNCMB
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `mbaas bench migrate`: migration throughput next to the baselines nobody tuned, in one run.
struct BenchMigrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Migration throughput (synthetic NCMB export) into SQLite, PocketBase and PostgreSQL, next to a per-record loop and a direct /api/batch loader.",
        discussion: """
            Build with -c release: swift build -c release --product mbaas && .build/release/mbaas bench migrate --records 100000. \
            PocketBase runs only with --pocketbase URL (a superuser URL) or MBAAS_POCKETBASE_URL; PostgreSQL only with \
            --postgres URL or MBAAS_POSTGRES_URL (its baseline, Benchmarks/postgres_baseline.py, needs psycopg: --postgres-python). Not a test.
            """)
    @Option(help: "Records in the synthetic export") var records = 100_000
    @Option(name: .customLong("loop-records"), help: "Records for the per-record create loops (a rate, so fewer suffice)") var loopRecords = 2000
    @Option(help: "A PocketBase superuser URL (default: $MBAAS_POCKETBASE_URL; no PocketBase part without one)") var pocketbase: String?
    @Option(name: .customLong("loader-concurrency"), help: "Requests in flight for the direct PocketBase loader") var loaderConcurrency = 4
    @Option(help: "A PostgreSQL URL (default: $MBAAS_POSTGRES_URL; no PostgreSQL part without one): the migration into a fresh schema next to Benchmarks/postgres_baseline.py")
    var postgres: String?
    @Option(name: .customLong("postgres-python"), help: "The Python interpreter with psycopg that runs Benchmarks/postgres_baseline.py (default python3)")
    var postgresPython = "python3"
    @Option(help: "Output format: json or table") var format: OutputFormat?

    struct Row {
        var target: String
        var method: String
        var records: Int
        var seconds: Double
        var rate: Double { seconds > 0 ? Double(records) / seconds : 0 }
    }

    /// A rate as reported: whole records per second from 100 up, three significant digits below (a phase that moved
    /// 3 users in 7 s ran at 0.429 rec/s, not 0).
    static func reported(_ rate: Double) -> Double {
        guard rate > 0, rate.isFinite, rate < 100 else { return rate.rounded() }
        let scale = pow(10, 2 - floor(log10(rate)))
        return (rate * scale).rounded() / scale
    }

    func run() async throws {
        try await runReportingErrors {
            let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("mbaas-bench-migrate-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: scratch) }
            let export = scratch.appendingPathComponent("export")
            printNote("writing a synthetic export of \(records) records")
            let sample = try NCMBExportSample.write(records: records, seed: 1, fileEvery: 0, to: export)
            var rows: [Row] = []
            let source = try NCMBExportBackend(directory: export)
            let admin = BackendContext(administrative: true)
            let options = MigrationOptions(classes: ["Category", "MemoClass"], concurrency: 4, verify: false, users: true, files: false)

            // SQLite: the migration, then the per-record create loop through the adapter.
            let db = try LocalBackend(path: scratch.appendingPathComponent("bench.db").path, context: admin)
            var clock = PhaseClock()
            var (report, seconds) = try await timed {
                try await Migration(source: source, target: db, options: options, state: MigrationState(directory: scratch.appendingPathComponent("s1")),
                                    observer: clock.observer).run()
            }
            rows.append(Row(target: "sqlite", method: "mbaas migrate", records: try written(report), seconds: seconds))
            rows += clock.rows(target: "sqlite", report: report)
            (report, seconds) = try await timed {
                try await Migration(source: source, target: db, options: MigrationOptions(classes: ["Category", "MemoClass"], verify: true, users: true, files: false),
                                    state: MigrationState(directory: scratch.appendingPathComponent("s1"))).verify()
            }
            rows.append(Row(target: "sqlite", method: "mbaas verify", records: report.classes.map(\.verified).reduce(0, +), seconds: seconds))
            let loopDB = try LocalBackend(path: scratch.appendingPathComponent("loop.db").path, context: admin)
            seconds = try await loop(source, into: loopDB)
            rows.append(Row(target: "sqlite", method: "per-record create loop", records: min(loopRecords, records), seconds: seconds))
            // What the migration does before it writes anything: parse and decode every record of the export.
            let (checked, checkSeconds) = try await timed { try await NCMBExportBackend(directory: export).count(Query("MemoClass")) }
            rows.append(Row(target: "sqlite", method: "export check (parse and decode, before any write)", records: checked, seconds: checkSeconds))
            let insertDB = try LocalBackend(path: scratch.appendingPathComponent("insert.db").path, context: admin)
            let (inserted, insertSeconds) = try await localInsert(source, into: insertDB)
            rows.append(Row(target: "sqlite", method: "Local batch insert (same records, 1000 per call)", records: inserted, seconds: insertSeconds))
            await db.close()
            await loopDB.close()
            await insertDB.close()

            if let url = pocketbase ?? ProcessInfo.processInfo.environment["MBAAS_POCKETBASE_URL"], !url.isEmpty {
                let run = String(UUID().uuidString.lowercased().filter(\.isLetter).prefix(6))
                // Users are unique per server: give this run's their own names.
                let users = export.appendingPathComponent("user.json")
                try (String(contentsOf: users, encoding: .utf8).replacingOccurrences(of: "\"user", with: "\"\(run)user"))
                    .write(to: users, atomically: true, encoding: .utf8)
                let pb = try await BuiltinAdapters.registry().open(url, context: admin)
                var mapping = MigrationMapping()
                mapping.classes["MemoClass"] = .init(rename: "Bench\(run)")
                mapping.classes["Category"] = .init(rename: "BenchCat\(run)")
                var pbOptions = options
                pbOptions.mapping = mapping
                pbOptions.batchSize = pb.capabilities.maxBatchSize
                clock = PhaseClock()
                (report, seconds) = try await timed {
                    try await Migration(source: source, target: pb, options: pbOptions, state: MigrationState(directory: scratch.appendingPathComponent("s2")),
                                        observer: clock.observer).run()
                }
                rows.append(Row(target: "pocketbase", method: "mbaas migrate", records: try written(report), seconds: seconds))
                rows += clock.rows(target: "pocketbase", report: report)
                seconds = try await loop(source, into: pb, className: "Loop\(run)")
                rows.append(Row(target: "pocketbase", method: "per-record create loop", records: min(loopRecords, records), seconds: seconds))
                // The loader's own collection, made by the adapter with the same plain fields, so that it starts empty
                // as the migration's did, with the same definition (the id field and its case-insensitive index).
                _ = try await pb.create(Record(className: "Direct\(run)", fields: ["title": "t", "money": 1, "comment": "c", "sourceObjectId": "s"]))
                let server = try await PocketBaseBenchSession(url: try BackendURL(parsing: url))
                let (written, loaderSeconds) = try await directLoader(server, export: export, collection: "Direct\(run)")
                rows.append(Row(target: "pocketbase", method: "direct /api/batch loader (\(loaderConcurrency) in flight, 50 per request)",
                                records: written, seconds: loaderSeconds))
                // The same loader posting exactly what the migration stored (every column of the migrated records, read
                // back untimed, without their ids, as the migration sends none) into a collection of the same definition.
                let bodies = try await server.storedBodies(collection: "Bench\(run)")
                try await server.copyDefinition(of: "Bench\(run)", as: "Same\(run)")
                var stored = bodies.makeIterator()
                let (same, sameSeconds) = try await timed { try await post(server, collection: "Same\(run)") { stored.next() } }
                rows.append(Row(target: "pocketbase", method: "direct loader, the migrated records' own content",
                                records: same, seconds: sameSeconds))
                // The users the migration imported, created the plain way: PocketBase hashes each password itself,
                // whoever sends it, so this is the floor of the migration's users phase.
                let (created, usersSeconds) = try await directUsers(server, count: sample.users, run: run)
                rows.append(Row(target: "pocketbase", method: "direct user creates, the export's users (\(loaderConcurrency) in flight)",
                                records: created, seconds: usersSeconds))
                await pb.close()
            }
            if let url = postgres ?? ProcessInfo.processInfo.environment["MBAAS_POSTGRES_URL"], !url.isEmpty {
                rows += try await postgresRows(url: url, export: export, source: source, scratch: scratch)
            }
            let json = JSON.object([
                "records": .int(Int64(records)),
                "results": .array(rows.map {
                    .object(["target": .string($0.target), "method": .string($0.method), "records": .int(Int64($0.records)),
                             "seconds": .double(($0.seconds * 1000).rounded() / 1000), "recordsPerSecond": .double(Self.reported($0.rate))])
                }),
            ])
            var table = "target      method                                                      records   seconds     rec/s\n"
            for r in rows {
                table += r.target.padding(toLength: 12, withPad: " ", startingAt: 0) + r.method.padding(toLength: 58, withPad: " ", startingAt: 0)
                    + String(format: r.rate >= 100 ? "%9d %9.2f %9.0f\n" : "%9d %9.2f %9.3g\n", r.records, r.seconds, r.rate)
            }
            if let m = rows.first(where: { $0.target == "postgres" && $0.method == "mbaas migrate" }),
               let p = rows.first(where: { $0.target == "postgres" && $0.method.hasPrefix("psycopg script") }), p.rate > 0 {
                table += String(format: "postgres: migrate / psycopg script = %.2fx\n", m.rate / p.rate)
            }
            for target in ["sqlite", "pocketbase"] {
                guard let m = rows.first(where: { $0.target == target && $0.method == "mbaas migrate" }),
                      let l = rows.first(where: { $0.target == target && $0.method == "per-record create loop" }), l.rate > 0 else { continue }
                table += String(format: "%@: migrate / per-record loop = %.1fx", target, m.rate / l.rate)
                if let d = rows.first(where: { $0.target == target && $0.method.hasPrefix("direct /api/batch") }), d.rate > 0 {
                    table += String(format: "; migrate / direct loader = %.2fx", m.rate / d.rate)
                }
                if let i = rows.first(where: { $0.target == target && $0.method.hasPrefix("Local batch insert") }), i.rate > 0 {
                    table += String(format: "; migrate / Local batch insert = %.2fx", m.rate / i.rate)
                }
                // The same job done by the plain loaders: the export's users, then its records (plain, or with the
                // migrated records' own content), one after the other as the migration does them.
                if let u = rows.first(where: { $0.target == target && $0.method.hasPrefix("direct user creates") }) {
                    for (prefix, label) in [("direct /api/batch", "plain records"), ("direct loader, the migrated", "same content")] {
                        if let d = rows.first(where: { $0.target == target && $0.method.hasPrefix(prefix) }), m.seconds > 0 {
                            table += String(format: "; migrate / direct users + %@ loader = %.2fx", label, (d.seconds + u.seconds) / m.seconds)
                        }
                    }
                }
                if let r = rows.first(where: { $0.target == target && $0.method.hasPrefix(PhaseClock.recordsPhase) }) {
                    if let i = rows.first(where: { $0.target == target && $0.method.hasPrefix("Local batch insert") }), i.rate > 0 {
                        table += String(format: "; records phase / Local batch insert = %.2fx", r.rate / i.rate)
                    }
                    if let d = rows.first(where: { $0.target == target && $0.method.hasPrefix("direct loader, the migrated") }), d.rate > 0 {
                        table += String(format: "; records phase / same-content loader = %.2fx", r.rate / d.rate)
                    }
                }
                table += "\n"
            }
            emit(json, table: table, format: format ?? defaultFormat())
        }
    }

    /// Records written in all classes (or found there already), with a failure stopping the benchmark: a number
    /// from a run that lost records would mean nothing.
    func written(_ report: MigrationReport) throws -> Int {
        guard report.classes.allSatisfy({ $0.failed == 0 }) else {
            throw MBaaSError(.unavailable, "the benchmark migration failed records: \(report.mismatches.prefix(3))")
        }
        return report.classes.map(\.written).reduce(0, +)
    }

    func timed<T>(_ body: () async throws -> T) async throws -> (T, Double) {
        let start = DispatchTime.now().uptimeNanoseconds
        let value = try await body()
        return (value, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
    }

    /// Creates the first `loopRecords` records one at a time through the adapter (the usual one-off script).
    func loop(_ source: NCMBExportBackend, into target: any Backend, className: String = "MemoClass") async throws -> Double {
        var batch: [Record] = []
        for try await r in source.records(matching: Query("MemoClass"), pageSize: 1000) {
            var copy = Record(className: className, fields: r.fields)   // the naive script: no ACLs, no users
            copy.fields["sourceObjectId"] = .string(r.id ?? "")
            batch.append(copy)
            if batch.count >= min(loopRecords, records) { break }
        }
        let (_, seconds) = try await timed { for r in batch { _ = try await target.create(r) } }
        return seconds
    }

    /// The embedded store's own floor for the same data: every MemoClass record of the export, with its id, ACL,
    /// `sourceObjectId`, `sourceCreatedAt` and `sourceUpdatedAt` (as the migration writes them), created through ``LocalBackend/batch(_:)``
    /// 1000 per call. Only the batch calls are timed (the export is read in between, untimed).
    func localInsert(_ source: NCMBExportBackend, into target: LocalBackend) async throws -> (Int, Double) {
        var batch: [BatchOperation] = []
        var seconds = 0.0, written = 0
        func flush() async throws {
            let ops = batch
            batch = []
            let (results, s) = try await timed { try await target.batch(ops) }
            for case .failure(let e) in results { throw e }
            seconds += s
            written += ops.count
        }
        // The embedded store sets its own timestamps: the source's are kept in fields, as the migration keeps them.
        let defaults = MigrationMapping()
        for try await r in source.records(matching: Query("MemoClass"), pageSize: 1000) {
            var copy = Record(className: "MemoClass", id: r.id, fields: r.fields)
            copy.fields["sourceObjectId"] = .string(r.id ?? "")
            copy.acl = r.acl
            if let c = r.createdAt { copy.fields[defaults.sourceCreatedAtField] = .date(c) }
            if let u = r.updatedAt { copy.fields[defaults.sourceUpdatedAtField] = .date(u) }
            batch.append(.create(copy))
            if batch.count == 1000 { try await flush() }
        }
        if !batch.isEmpty { try await flush() }
        return (written, seconds)
    }

    /// The fastest plain loader: reads the export's objects, and POSTs PocketBase `/api/batch` requests of 50
    /// creates, `loaderConcurrency` at a time, with a superuser token. Only plain fields (title, money, comment,
    /// sourceObjectId) are sent: it is the floor the migration's per-record work sits on.
    func directLoader(_ server: PocketBaseBenchSession, export: URL, collection: String) async throws -> (Int, Double) {
        var reader = try JSONArrayFileReader(url: export.appendingPathComponent("MemoClass.json"), member: "results")
        defer { reader.close() }
        return try await timed {
            try await post(server, collection: collection) {
                while let element = try reader.next() {
                    guard let o = element.value.objectValue else { continue }
                    return JSON.object(["title": o["title"] ?? .null, "money": o["money"] ?? .null, "comment": o["comment"] ?? .null,
                                        "sourceObjectId": o["objectId"] ?? .null])
                }
                return nil
            }
        }
    }

    /// Creates `n` users (as many as the export has) of PocketBase's `users` collection, one POST each (a batch of
    /// users outlasts PocketBase's batch timeout, since every password is hashed), `loaderConcurrency` in flight,
    /// each with an e-mail of this run's own and a random password, as the migration's `reset` gives them.
    func directUsers(_ server: PocketBaseBenchSession, count n: Int, run: String) async throws -> (Int, Double) {
        try await timed {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<n {
                    if i >= loaderConcurrency { try await group.next() }
                    group.addTask {
                        let secret = (UUID().uuidString + UUID().uuidString).filter { $0 != "-" }   // 64 of the 71 PocketBase takes
                        _ = try await server.send("POST", "/api/collections/users/records", .object([
                            "email": .string("direct-\(run)-\(i)@bench.invalid"), "password": .string(secret), "passwordConfirm": .string(secret),
                        ]))
                    }
                }
                try await group.waitForAll()
            }
            return n
        }
    }

    /// POSTs bodies as `/api/batch` requests of 50 creates, `loaderConcurrency` in flight, until `next` gives none;
    /// returns how many.
    func post(_ server: PocketBaseBenchSession, collection: String, next: () throws -> JSON?) async throws -> Int {
        let path = "/api/collections/\(collection)/records"
        var written = 0
        var pending: [JSON] = []
        try await withThrowingTaskGroup(of: Int.self) { group in
            var inFlight = 0
            func flush() async throws {
                let requests = pending.map { JSON.object(["method": "POST", "url": .string(path), "body": $0]) }
                pending = []
                if inFlight >= loaderConcurrency { written += try await group.next() ?? 0; inFlight -= 1 }
                group.addTask { _ = try await server.send("POST", "/api/batch", .object(["requests": .array(requests)])); return requests.count }
                inFlight += 1
            }
            while let body = try next() {
                pending.append(body)
                if pending.count == 50 { try await flush() }
            }
            if !pending.isEmpty { try await flush() }
            while let n = try await group.next() { written += n }
        }
        return written
    }
}

/// When a benchmark migration's phases start and end, from its events.
struct PhaseClock {
    static let recordsPhase = "  records phase"
    private final class Marks: @unchecked Sendable {
        let lock = NSLock()
        var times: [String: UInt64] = [:]
        func mark(_ key: String) {
            lock.lock()
            if times[key] == nil { times[key] = DispatchTime.now().uptimeNanoseconds }
            lock.unlock()
        }
        func seconds(_ from: String, _ to: String) -> Double? {
            lock.lock()
            defer { lock.unlock() }
            guard let a = times[from], let b = times[to], b >= a else { return nil }
            return Double(b - a) / 1e9
        }
    }
    private let marks = Marks()

    var observer: @Sendable (MigrationEvent) -> Void {
        let marks = self.marks
        return { event in
            switch event {
            case .phase(let name): marks.mark("phase:\(name)")
            case .classStarted(let source, _, _) where source == "MemoClass": marks.mark("start")
            case .classFinished(let c) where c.source == "MemoClass": marks.mark("end")
            default: break
            }
        }
    }

    /// Rows for the users and roles phase (its rate is users imported per second) and the MemoClass records phase.
    func rows(target: String, report: MigrationReport) -> [BenchMigrate.Row] {
        var rows: [BenchMigrate.Row] = []
        if let s = marks.seconds("phase:users", "phase:records") {
            rows.append(.init(target: target, method: "  users and roles phase (user imports)", records: report.users.written, seconds: s))
        }
        if let s = marks.seconds("start", "end"), let memo = report.classes.first(where: { $0.source == "MemoClass" }) {
            rows.append(.init(target: target, method: Self.recordsPhase + " (MemoClass, class start to end)", records: memo.written, seconds: s))
        }
        return rows
    }
}

/// A PocketBase superuser session for the benchmark's plain loaders (URLSession, JSON, nothing of the adapter).
struct PocketBaseBenchSession: Sendable {
    let base: String
    private(set) var token: String
    let session: URLSession

    init(url: BackendURL) async throws {
        guard let host = url.host, let email = url.user, let password = url.secret else {
            throw MBaaSError(.invalidRequest, "the direct loader needs a superuser URL with credentials")
        }
        base = "\(url.isSecure ? "https" : "http")://\(host)\(url.port.map { ":\($0)" } ?? "")"
        session = URLSession(configuration: .ephemeral)
        token = ""
        let auth = try await send("POST", "/api/collections/_superusers/auth-with-password",
                                  .object(["identity": .string(email), "password": .string(password)]))
        guard let token = auth["token"]?.stringValue else { throw MBaaSError(.decoding, "no superuser token") }
        self.token = token
    }

    func send(_ method: String, _ path: String, _ body: JSON? = nil) async throws -> JSON {
        var request = URLRequest(url: URL(string: base + path)!)
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if !token.isEmpty { request.setValue(token, forHTTPHeaderField: "Authorization") }
        request.httpBody = body?.data()
        let (data, response) = try await session.data(for: request)
        guard (response as? HTTPURLResponse)?.statusCode == 200 else {
            throw MBaaSError(.unavailable, "\(path): HTTP \((response as? HTTPURLResponse)?.statusCode ?? 0): \(String(decoding: data.prefix(300), as: UTF8.self))")
        }
        return try JSON.parse(data)
    }

    /// Every record of a collection as stored, without the keys PocketBase sets itself (id, times, collection).
    func storedBodies(collection: String) async throws -> [JSON] {
        var bodies: [JSON] = []
        var page = 1
        while true {
            let items = try await send("GET", "/api/collections/\(collection)/records?perPage=500&page=\(page)&skipTotal=1&sort=id")["items"]?.arrayValue ?? []
            guard !items.isEmpty else { return bodies }
            for case .object(var o) in items {
                for key in ["id", "created", "updated", "collectionId", "collectionName", "expand"] { o.removeValue(forKey: key) }
                bodies.append(.object(o))
            }
            page += 1
        }
    }

    /// A new collection with another's definition (fields, id field, indexes renamed, rules).
    func copyDefinition(of collection: String, as name: String) async throws {
        guard case .object(let like) = try await send("GET", "/api/collections/\(collection)") else {
            throw MBaaSError(.decoding, "PocketBase sent no collection \(collection)")
        }
        var copy = JSONObject()
        for key in ["type", "listRule", "viewRule", "createRule", "updateRule", "deleteRule"] { copy[key] = like[key] ?? .null }
        copy["indexes"] = .array((like["indexes"]?.arrayValue ?? []).compactMap { $0.stringValue.map { .string($0.replacingOccurrences(of: collection, with: name)) } })
        copy["fields"] = .array((like["fields"]?.arrayValue ?? []).compactMap { field -> JSON? in
            guard case .object(var f) = field else { return nil }
            f.removeValue(forKey: "id")
            return .object(f)
        })
        copy["name"] = .string(name)
        _ = try await send("POST", "/api/collections", .object(copy))
    }
}
