import ArgumentParser
import Foundation
import Logging
import MBaaSCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How results are printed.
enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
    case json, table
}

/// Options every subcommand takes.
struct GlobalOptions: ParsableArguments {
    @Option(help: "Output format: json or table (default: table on a terminal, json otherwise).")
    var format: OutputFormat?

    @Option(name: .customLong("session-file"),
            help: "Where sessions are kept between runs (default: $XDG_CONFIG_HOME/mbaas/sessions.json or ~/.config/mbaas/sessions.json).")
    var sessionFile: String?

    @Flag(help: "Log debug information to stderr (never secrets).")
    var verbose = false

    var resolvedFormat: OutputFormat { format ?? defaultFormat() }

    var logger: Logger {
        var logger = verbose
            ? Logger(label: "mbaas", factory: { StreamLogHandler.standardError(label: $0) })
            : Logger(label: "mbaas", factory: { _ in SwiftLogNoOpLogHandler() })
        logger.logLevel = verbose ? .debug : .critical
        return logger
    }

    var sessions: SessionFile {
        SessionFile(url: sessionFile.map { URL(fileURLWithPath: $0) } ?? SessionFile.defaultURL())
    }
}

/// Table on a terminal, JSON otherwise.
func defaultFormat() -> OutputFormat { isatty(STDOUT_FILENO) != 0 ? .table : .json }

/// A backend opened for one command, with the session saved for its URL restored.
struct OpenedBackend {
    let backend: any Backend
    let key: String
    let sessions: SessionFile
    let restored: Session?

    /// Opens a URL through the built-in registry and restores its saved session.
    static func open(_ text: String, _ options: GlobalOptions) async throws -> OpenedBackend {
        let url = try BackendURL(parsing: text)
        let logger = options.logger
        logger.debug("opening backend", metadata: ["url": "\(url)"])
        // Live HTTP with the core retry policy: idempotent requests (and keyed writes) are retried on 429, 5xx
        // gateways and dropped connections, honouring Retry-After. Requests are logged (never secrets) with --verbose.
        let transport = RetryingTransport(URLSessionTransport(logger: logger))
        let backend = try await BuiltinAdapters.registry().open(url, context: BackendContext(transport: transport, logger: logger))
        let sessions = options.sessions
        let key = SessionFile.key(for: url)
        let saved = try sessions.session(for: key)
        await backend.restore(saved)
        return OpenedBackend(backend: backend, key: key, sessions: sessions, restored: saved)
    }

    /// Saves the session if it changed (a log-in, a log-out, an expiry) and closes the backend.
    func finish() async throws {
        let now = await backend.session
        if now != restored { try sessions.set(now, for: key) }
        await backend.close()
    }

    /// Runs `body` with the backend, then `finish()`es it, also when `body` throws.
    static func with<T>(_ text: String, _ options: GlobalOptions, _ body: (any Backend) async throws -> T) async throws -> T {
        let opened = try await open(text, options)
        do {
            let result = try await body(opened.backend)
            try await opened.finish()
            return result
        } catch {
            try? await opened.finish()
            throw error
        }
    }
}

/// Runs a command body: an ``MBaaSError`` is printed to stderr (`mbaas: error: kind: message [vendor code …]`)
/// and becomes the exit status documented in `mbaas --help`.
func runReportingErrors(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as MBaaSError {
        printError(error.description)
        throw ExitCode(exitStatus(for: error.kind))
    }
}

func exitStatus(for kind: MBaaSError.Kind) -> Int32 {
    switch kind {
    case .invalidRequest, .unsupported: 2
    case .notFound: 3
    case .unauthorized, .forbidden: 4
    case .conflict, .duplicate: 5
    case .unavailable, .transport, .rateLimited: 6
    case .decoding: 1
    }
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data("mbaas: error: \(message)\n".utf8))
}

/// Writes text to stdout (with a newline).
func output(_ text: String) {
    FileHandle.standardOutput.write(Data((text.hasSuffix("\n") ? text : text + "\n").utf8))
}

/// Prints a JSON document (pretty, keys sorted) or a table, as the format asks.
func emit(_ json: JSON, table: @autoclosure () -> String, format: OutputFormat) {
    switch format {
    case .json: output(json.printed([.pretty, .sortedKeys]))
    case .table: output(table())
    }
}

/// Parses a JSON argument, naming the option in the error.
func parseJSONArgument(_ text: String, name: String) throws(MBaaSError) -> JSON {
    do { return try JSON.parse(text) } catch { throw MBaaSError(.invalidRequest, "\(name): \(error)") }
}

/// Parses an ACL argument in the neutral form (`{"*":{"read":true},"<userId>":{"read":true,"write":true}}`).
func parseACLArgument(_ text: String?) throws(MBaaSError) -> ACL? {
    guard let text else { return nil }
    return try ACL(json: parseJSONArgument(text, name: "--acl"))
}
