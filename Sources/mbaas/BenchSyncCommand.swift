import ArgumentParser
import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSMigration
import MBaaSSync
#if canImport(Glibc)
import Glibc
#endif
// `struct rusage` may be owned by CDispatch once libdispatch's headers are loaded (as `struct stat`: see OutputFile.swift).
#if canImport(CDispatch)
import CDispatch
#endif

/// `mbaas bench sync`: an offline replica's sync down and sync up, each next to the rate issue 34 holds it to, in one
/// run: sync down of `--records` records from a Local remote next to the Local batch insert of `bench local`; sync up
/// of `--up-records` queued creates into PocketBase next to `mbaas migrate` of as many records into the same server;
/// the process's peak resident memory (`getrusage`, as `/usr/bin/time -v` reports it). Not a test.
struct BenchSync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Replica sync down (from a Local remote) and sync up (into PocketBase), next to the Local insert and the migration.",
        discussion: """
            Build with -c release: swift build -c release --product mbaas && .build/release/mbaas bench sync --records 100000 --up-records 10000. \
            The sync-up part runs only with --pocketbase URL (a superuser URL) or MBAAS_POCKETBASE_URL. Goals (issue 34): \
            sync down >= 0.5x the Local insert, sync up >= 0.8x the migration into the same PocketBase, peak memory of a \
            1M-record sync down <= 150 MB. Not a test.
            """)
    @Option(help: "Records synced down from a Local remote") var records = 100_000
    @Option(name: .customLong("up-records"), help: "Queued creates synced up into PocketBase") var upRecords = 10_000
    @Option(name: .customLong("page-size"), help: "Records per sync-down page") var pageSize = 1000
    @Option(help: "A PocketBase superuser URL (default: $MBAAS_POCKETBASE_URL; no sync-up part without one)") var pocketbase: String?
    @Option(help: "Output format: json or table") var format: OutputFormat?

    func validate() throws {
        if records < 1 || upRecords < 1 || pageSize < 1 { throw ValidationError("--records, --up-records and --page-size must be >= 1") }
    }

    static func fields(_ i: Int) -> [String: Value] {
        ["title": .string("memo \(i)"), "money": .int(Int64(i % 1000)), "comment": .string("synthetic record \(i) for bench sync")]
    }

    func timed<T>(_ body: () async throws -> T) async throws -> (T, Double) {
        let start = DispatchTime.now().uptimeNanoseconds
        let value = try await body()
        return (value, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
    }

    /// `count` records of `className` in batches of 500, as `bench local` inserts.
    func insert(_ count: Int, className: String, into store: LocalBackend) async throws {
        for start in stride(from: 0, to: count, by: 500) {
            let ops = (start..<min(start + 500, count)).map { BatchOperation.create(Record(className: className, fields: Self.fields($0))) }
            for case .failure(let e) in try await store.batch(ops) { throw e }
        }
    }

    /// The peak resident set of this process so far, in kB (Linux `ru_maxrss`).
    static func peakMemoryKB() -> Int {
        var usage = rusage()
        guard getrusage(0 /* RUSAGE_SELF */, &usage) == 0 else { return 0 }
        return Int(usage.ru_maxrss)
    }

    func run() async throws {
        try await runReportingErrors {
            let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("mbaas-bench-sync-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: scratch) }
            let admin = BackendContext(administrative: true)
            var rows: [BenchMigrate.Row] = []

            printNote("inserting \(records) records into the Local remote")
            let remote = try LocalBackend(path: scratch.appendingPathComponent("remote.db").path, context: admin)
            let (_, insertSeconds) = try await timed { try await insert(records, className: "Memo", into: remote) }
            rows.append(.init(target: "sqlite", method: "Local batch insert (bench local's insert, 500 per call)", records: records, seconds: insertSeconds))
            let downReplica = try await ReplicaBackend.open(path: scratch.appendingPathComponent("down.replica").path, remote: remote,
                                                            configuration: ReplicaConfiguration(classes: ["Memo": ReplicaPolicy()]))
            let (down, downSeconds) = try await timed { try await downReplica.sync(SyncOptions(direction: .down, pageSize: pageSize)) }
            guard down.outcome == .complete, down.classes["Memo"]?.down == records else {
                throw MBaaSError(.internal, "sync down moved \(down.classes["Memo"]?.down ?? 0) of \(records) records (\(down.outcome))")
            }
            rows.append(.init(target: "sqlite", method: "replica sync down (first run, into an empty replica)", records: records, seconds: downSeconds))
            await downReplica.close()
            let peakAfterDown = Self.peakMemoryKB()

            if let url = pocketbase ?? ProcessInfo.processInfo.environment["MBAAS_POCKETBASE_URL"], !url.isEmpty {
                let run = String(UUID().uuidString.lowercased().filter(\.isLetter).prefix(6))
                let pb = try await BuiltinAdapters.registry().open(url, context: admin)
                let source = try LocalBackend(path: scratch.appendingPathComponent("source.db").path, context: admin)
                try await insert(upRecords, className: "Memo", into: source)
                var mapping = MigrationMapping()
                mapping.classes["Memo"] = .init(rename: "SyncMig\(run)")
                var options = MigrationOptions(classes: ["Memo"], concurrency: 4, verify: false, users: false, files: false)
                options.mapping = mapping
                options.batchSize = pb.capabilities.maxBatchSize
                let (migrated, migrateSeconds) = try await timed {
                    try await Migration(source: source, target: pb, options: options,
                                        state: MigrationState(directory: scratch.appendingPathComponent("state"))).run()
                }
                let written = migrated.classes.map(\.written).reduce(0, +)
                guard migrated.classes.allSatisfy({ $0.failed == 0 }), written == upRecords else {
                    throw MBaaSError(.unavailable, "the benchmark migration wrote \(written) of \(upRecords) records")
                }
                rows.append(.init(target: "pocketbase", method: "mbaas migrate (the same number of records)", records: written, seconds: migrateSeconds))
                await source.close()

                let className = "SyncUp\(run)"
                let upReplica = try await ReplicaBackend.open(path: scratch.appendingPathComponent("up.replica").path, remote: pb,
                                                              configuration: ReplicaConfiguration(classes: [className: ReplicaPolicy()]))
                printNote("queueing \(upRecords) offline creates")
                for i in 0..<upRecords { _ = try await upReplica.create(Record(className: className, fields: Self.fields(i))) }
                let (up, upSeconds) = try await timed { try await upReplica.sync(SyncOptions(direction: .up)) }
                guard up.outcome == .complete, up.classes[className]?.up == upRecords else {
                    throw MBaaSError(.unavailable, "sync up sent \(up.classes[className]?.up ?? 0) of \(upRecords) creates (\(up.outcome))")
                }
                rows.append(.init(target: "pocketbase", method: "replica sync up (queued creates)", records: upRecords, seconds: upSeconds))
                await upReplica.close()
            }

            let json = JSON.object([
                "records": .int(Int64(records)), "upRecords": .int(Int64(upRecords)),
                "peakMemoryKB": .int(Int64(Self.peakMemoryKB())), "peakMemoryKBAfterSyncDown": .int(Int64(peakAfterDown)),
                "results": .array(rows.map {
                    .object(["target": .string($0.target), "method": .string($0.method), "records": .int(Int64($0.records)),
                             "seconds": .double(($0.seconds * 1000).rounded() / 1000), "recordsPerSecond": .double(BenchMigrate.reported($0.rate))])
                }),
            ])
            var table = "target      method                                                      records   seconds     rec/s\n"
            for r in rows {
                table += r.target.padding(toLength: 12, withPad: " ", startingAt: 0) + r.method.padding(toLength: 58, withPad: " ", startingAt: 0)
                    + String(format: r.rate >= 100 ? "%9d %9.2f %9.0f\n" : "%9d %9.2f %9.3g\n", r.records, r.seconds, r.rate)
            }
            func rate(_ prefix: String) -> Double? { rows.first { $0.method.hasPrefix(prefix) }?.rate }
            if let d = rate("replica sync down"), let i = rate("Local batch insert"), i > 0 {
                table += String(format: "sync down / Local insert = %.2fx (goal >= 0.5x)\n", d / i)
            }
            if let u = rate("replica sync up"), let m = rate("mbaas migrate"), m > 0 {
                table += String(format: "sync up / migrate into the same PocketBase = %.2fx (goal >= 0.8x)\n", u / m)
            }
            table += "peak memory: \(Self.peakMemoryKB()) kB (after sync down: \(peakAfterDown) kB)\n"
            emit(json, table: table, format: format ?? defaultFormat())
        }
    }
}
