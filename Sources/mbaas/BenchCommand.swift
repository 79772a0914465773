import ArgumentParser
import Foundation
import MBaaSCore
import MBaaSLocal

/// `mbaas bench local`: throughput of the Local backend next to raw GRDB and a plain Python script on the same
/// machine and schema; `mbaas bench adapters`: per-operation cost of the HTTP adapters (see ``BenchAdapters``).
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench", abstract: "Measure adapter throughput (not a test).",
        subcommands: [Local.self, BenchAdapters.self, BenchMigrate.self, BenchSync.self])

    struct Local: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Local backend vs raw GRDB vs a plain Python script: inserts, filtered sorted query pages, point reads.",
            discussion: """
                Build with -c release for meaningful numbers: swift run -c release mbaas bench local
                The script column runs Benchmarks/local_baseline.py (stdlib sqlite3 + json) with python3 in the same \
                invocation; it is found in the current directory or the source tree, or given with --script.
                """)
        @Option(help: "Output format: json or table (default: table on a terminal, json otherwise).")
        var format: OutputFormat?
        @Option(help: "How many records to insert and query") var records = 20_000
        @Option(name: .customLong("chunk-size"), help: "Records per batch call") var chunkSize = 500
        @Option(name: .customLong("page-size"), help: "Records per query page") var pageSize = 500
        @Option(help: "The baseline script (default: Benchmarks/local_baseline.py here or in the source tree)")
        var script: String?
        @Option(help: "The Python interpreter that runs the script") var python = "python3"
        @Flag(name: .customLong("no-script"), help: "Leave the Python script column out") var noScript = false
        @Option(help: "Run the whole benchmark this many times and report each figure's median (default 1)") var runs = 1
        @Option(help: "Point reads per side (default: 20000; ids repeat above --records)")
        var gets: Int?

        func validate() throws {
            if records < 1 || chunkSize < 1 || pageSize < 1 { throw ValidationError("--records, --chunk-size and --page-size must be >= 1") }
            guard (1...25).contains(runs) else { throw ValidationError("--runs must be between 1 and 25") }
            if let gets, gets < 1 { throw ValidationError("--gets must be >= 1") }
        }

        func run() async throws {
            try await runReportingErrors {
                let baseline = noScript ? nil : script.map { URL(fileURLWithPath: $0) } ?? LocalBenchmark.defaultBaselineScript()
                let benchmark = LocalBenchmark(records: records, chunkSize: chunkSize, pageSize: pageSize,
                                               baselineScript: baseline, python: python, gets: gets)
                var results: [LocalBenchmark.Result] = []
                for run in 1...runs {
                    if runs > 1 { Terminal.writeErr("bench local: run \(run) of \(runs)\n") }
                    results.append(try await benchmark.run())
                }
                let result = LocalBenchmark.median(of: results)!
                emit(result.json, table: result.table, format: format ?? defaultFormat())
            }
        }
    }
}
