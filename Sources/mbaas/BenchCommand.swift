import ArgumentParser
import Foundation
import MBaaSCore
import MBaaSLocal

/// `mbaas bench local`: throughput of the Local backend next to raw GRDB on the same machine and schema.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench", abstract: "Measure adapter throughput (not a test).", subcommands: [Local.self, BenchMigrate.self])

    struct Local: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Local backend vs raw GRDB prepared statements: inserts and filtered, sorted query pages.",
            discussion: "Build with -c release for meaningful numbers: swift run -c release mbaas bench local")
        @Option(help: "Output format: json or table (default: table on a terminal, json otherwise).")
        var format: OutputFormat?
        @Option(help: "How many records to insert and query") var records = 20_000
        @Option(name: .customLong("chunk-size"), help: "Records per batch call") var chunkSize = 500
        @Option(name: .customLong("page-size"), help: "Records per query page") var pageSize = 500

        func validate() throws {
            if records < 1 || chunkSize < 1 || pageSize < 1 { throw ValidationError("--records, --chunk-size and --page-size must be >= 1") }
        }

        func run() async throws {
            try await runReportingErrors {
                let result = try await LocalBenchmark(records: records, chunkSize: chunkSize, pageSize: pageSize).run()
                emit(result.json, table: result.table, format: format ?? defaultFormat())
            }
        }
    }
}
