import ArgumentParser
import Dispatch
import Foundation
import MBaaSBuiltins
import MBaaSConformance
import MBaaSCore
import MBaaSReplay

/// `mbaas bench adapters`: what each HTTP adapter costs per operation, without a network.
///
/// Each adapter is opened on the URL of its `objects.crud.basic` cassette with an ``InMemoryTransport`` that
/// answers every `METHOD /path` with that cassette's recorded response (the first successful one), so the
/// handshake (token, log-in, schema) runs once and each timed operation is exactly: build the request, encode the
/// body, sign it (NCMB), hand it to the transport, decode the response into a `Record`.
struct BenchAdapters: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "adapters",
        abstract: "Per-operation cost of each HTTP adapter (encode + sign + decode) through an in-memory transport.",
        discussion: "Build with -c release for meaningful numbers: swift run -c release mbaas bench adapters")

    @Option(help: "Output format: json or table (default: table on a terminal, json otherwise).")
    var format: OutputFormat?
    @Option(help: "Operations per adapter and kind") var operations = 20_000
    @Option(help: ArgumentHelp("The fixtures directory (default: ./Fixtures if it exists, else the package's own).", valueName: "DIR"))
    var fixtures: String?
    @Option(help: "Adapters to measure (default: every built-in HTTP adapter: \(Builtins.httpAdapterNames.joined(separator: ", ")))")
    var adapter: [String] = []

    func validate() throws {
        if operations < 1 { throw ValidationError("--operations must be >= 1") }
    }

    struct Row {
        var adapter: String
        var get: Double
        var create: Double
    }

    func run() async throws {
        try await runReportingErrors {
            let fixtures = ConformanceFixtures.locate(explicit: fixtures, fallback: ConformanceSuite.bundledFixtures)
            let names = adapter.isEmpty ? Builtins.httpAdapterNames : adapter
            var rows: [Row] = []
            for name in names {
                rows.append(try await measure(name, fixtures: fixtures))
            }
            #if DEBUG
            let build = "debug"
            #else
            let build = "release"
            #endif
            let goal = 50_000.0
            let json: JSON = .object([
                "operations": .int(Int64(operations)), "build": .string(build), "goal": .double(goal), "unit": "operations/s",
                "results": .array(rows.map { r in
                    .object(["adapter": .string(r.adapter), "get": .double(r.get.rounded()), "create": .double(r.create.rounded()),
                             "getMicroseconds": .double((1e7 / r.get).rounded() / 10),
                             "createMicroseconds": .double((1e7 / r.create).rounded() / 10)])
                }),
            ])
            var lines = ["HTTP adapters through an in-memory transport: \(operations) operations each, \(build) build (goal: >= 50,000 ops/s)", ""]
            let table = [["adapter", "get ops/s", "get µs", "create ops/s", "create µs"]] + rows.map { r in
                [r.adapter, String(Int(r.get.rounded())), String(format: "%.1f", 1e6 / r.get),
                 String(Int(r.create.rounded())), String(format: "%.1f", 1e6 / r.create)]
            }
            var widths = Array(repeating: 0, count: 5)
            for r in table { for (i, c) in r.enumerated() { widths[i] = max(widths[i], c.count) } }
            for r in table {
                lines.append(r.enumerated().map { i, c in
                    i == 0 ? c.padding(toLength: widths[i], withPad: " ", startingAt: 0) : String(repeating: " ", count: widths[i] - c.count) + c
                }.joined(separator: "  "))
            }
            emit(json, table: lines.joined(separator: "\n"), format: format ?? defaultFormat())
        }
    }

    /// Opens the adapter on its cassette's canned answers and times `get` and `create`.
    func measure(_ name: String, fixtures: ConformanceFixtures) async throws -> Row {
        let file = fixtures.cassettes(for: name).appendingPathComponent("objects.crud.basic.json")
        let cassette = try Cassette.load(from: file)
        var table: [String: TransportResponse] = [:]
        var successful: Set<String> = []
        for interaction in cassette.interactions {
            let key = InMemoryTransport.key(method: interaction.request.method,
                                            path: interaction.request.path.removingPercentEncoding ?? interaction.request.path)
            let response = interaction.response.httpResponse
            if table[key] == nil || (!successful.contains(key) && response.isSuccess) { table[key] = response }
            if response.isSuccess { successful.insert(key) }
        }
        guard let urlText = cassette.backendURL, let run = cassette.variables["run"] else {
            throw MBaaSError(.invalidRequest, "\(file.lastPathComponent) of \(name) has no backend URL or run variable")
        }
        let className = "Memo_\(run)"
        // The record the cassette reads back: the last path segment of its first successful GET under the class.
        guard let getPath = cassette.interactions.first(where: { i in
            i.request.method == "GET" && i.response.status == 200 && i.request.path.contains("/\(className)/")
        })?.request.path, let id = getPath.split(separator: "/").last.map(String.init) else {
            throw MBaaSError(.invalidRequest, "\(file.lastPathComponent) of \(name) reads no record back")
        }
        let url = try BackendURL(parsing: urlText)
        guard let factory = BuiltinAdapters.registry().factory(forScheme: url.scheme) else {
            throw MBaaSError(.invalidRequest, "no adapter opens '\(url.scheme):' URLs")
        }
        let transport = InMemoryTransport.canned(table)
        let backend = try await factory.open(url, context: BackendContext(transport: transport))
        let fields: [String: Value] = ["title": "rent", "money": 50]
        // The cassette logs its fixture user in before touching data (adapters such as AppPot's refuse data calls
        // without a session); the canned answer is the recorded one, whatever the credentials.
        if cassette.interactions.contains(where: { ["POST", "GET"].contains($0.request.method) && Self.isLogIn($0.request.path) }) {
            _ = try await backend.logIn(username: "bench", password: "bench")
        }
        // Warm-up: the handshake (token, log-in, schema) and caches.
        _ = try await backend.create(Record(className: className, fields: fields))
        _ = try await backend.get(className: className, id: id)

        let n = operations
        let getSeconds = try await time {
            for _ in 0..<n { _ = try await backend.get(className: className, id: id) }
        }
        let createSeconds = try await time {
            for _ in 0..<n { _ = try await backend.create(Record(className: className, fields: fields)) }
        }
        return Row(adapter: name, get: Double(n) / getSeconds, create: Double(n) / createSeconds)
    }

    /// Whether a recorded path is a log-in call (`…/login`, `…/auth/login`, `…/auth-with-password`, Kii's
    /// `/oauth2/token`).
    static func isLogIn(_ path: String) -> Bool {
        let last = path.split(separator: "/").last.map(String.init) ?? ""
        return ["login", "auth-with-password", "token"].contains(last)
    }

    private func time(_ body: () async throws -> Void) async throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try await body()
        return max(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9, 1e-9)
    }
}
