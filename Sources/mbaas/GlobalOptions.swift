import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import MBaaSCore
import MBaaSEmulator
import MBaaSLocal
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How results are printed.
enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
    /// One pretty JSON document.
    case json
    /// A plain-text table (control characters escaped).
    case table
    /// One compact JSON document per line (for `objects query`: one record per line, printed as it arrives).
    case ndjson
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

    @Option(name: .customLong("url-file"),
            help: "Read the backend URL (with its secrets) from this file's first line instead of the command line; give '-' as the URL. The file must not be readable by others (chmod 600).")
    var urlFile: String?

    @Option(help: "Seconds an HTTP request may take, retries included, before it fails with 'timed out' (default: 60 per attempt, no total).")
    var timeout: Double?

    func validate() throws { try validateTimeout(timeout) }

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

/// What a command does with the backend; the embedded store opens accordingly (a read never creates or migrates
/// a database, and works on a database the process may only read).
enum BackendAccess {
    /// get, query, download, list, whoami: the Local database is opened read-only.
    case read
    /// update, delete, login, logout: an existing database, read-write.
    case write
    /// create, upload, signup: the Local database is created (0600) if missing.
    case create

    var localMode: LocalBackend.OpenMode {
        switch self {
        case .read: .readOnly
        case .write: .readWrite
        case .create: .create
        }
    }
}

/// The environment variable that gives the backend URL when the URL argument is `-`.
let backendURLVariable = "MBAAS_BACKEND_URL"

/// `--timeout`, where a command takes it: more than 0 and at most a day.
func validateTimeout(_ timeout: Double?) throws {
    if let timeout, !(timeout > 0 && timeout <= 86400) { throw ValidationError("--timeout must be between 0 and 86400 seconds") }
}

/// Writes `data` to `url` for an output option (`--report`), readable by its owner alone: a regular file (or none)
/// is replaced atomically by a temporary file created 0600 beside it (never readable by others, not even for a
/// moment), synced, then renamed; a device or FIFO is written through; a symbolic link is followed; a missing
/// folder is never created (``OutputFile``). A failure is `localIO` naming `what` and leaves `url` as it was.
func writePrivateFile(_ data: Data, to url: URL, what: String) throws(MBaaSError) {
    try OutputFile.write(data, to: url.path, what: what, mode: 0o600)
}

/// Resolves the URL argument. `-` means: the first line of `--url-file FILE` (which must not be readable or
/// writable by group or others), else `$MBAAS_BACKEND_URL`. So secrets need not appear in argv (visible in `ps`)
/// or in shell history. A URL argument together with `--url-file` is `invalidRequest`.
func resolveBackendURL(_ argument: String, _ options: GlobalOptions) throws(MBaaSError) -> String {
    try resolveURLArgument(argument, file: options.urlFile, fileOption: "--url-file", variable: backendURLVariable)
}

/// A URL argument, or for `-` the first line of `file` (given as `fileOption`; it must not be readable or writable
/// by group or others), else the environment `variable`. An argument other than `-` together with a file is
/// `invalidRequest`.
func resolveURLArgument(_ argument: String, file: String?, fileOption: String, variable: String) throws(MBaaSError) -> String {
    guard argument == "-" else {
        if file != nil {
            throw MBaaSError(.invalidRequest, "give the URL either as an argument or with \(fileOption) (then write '-' as the URL)")
        }
        return argument
    }
    if let file {
        guard let mode = fileMode(file) else {
            throw MBaaSError(.localIO, "\(fileOption) \(file): \(String(cString: strerror(errno)))")
        }
        guard mode & 0o077 == 0 else {
            throw MBaaSError(.invalidRequest, "\(fileOption) \(file) is readable or writable by others (mode \(String(mode & 0o777, radix: 8))); run chmod 600 \(file)")
        }
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: file)) } catch {
            throw MBaaSError(.localIO, "\(fileOption) \(file): \(MBaaSError.describe(error))")
        }
        let line = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first
            .map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard !line.isEmpty else { throw MBaaSError(.invalidRequest, "\(fileOption) \(file) is empty; put the backend URL on its first line") }
        return line
    }
    if let value = ProcessInfo.processInfo.environment[variable], !value.isEmpty { return value }
    throw MBaaSError(.invalidRequest, "the URL '-' means: read it from \(fileOption) FILE or $\(variable), and neither is set")
}

/// The live transport: with `--timeout T`, every request (whatever timeout its adapter asks for) and the session
/// time out after T seconds; otherwise adapters' own timeouts apply (default 60 s).
func timedTransport(_ timeout: Double?, logger: Logger) -> any HTTPTransport {
    guard let timeout else { return URLSessionTransport(logger: logger) }
    let configuration = URLSessionConfiguration.ephemeral
    configuration.timeoutIntervalForRequest = timeout
    let base = URLSessionTransport(session: URLSession(configuration: configuration), defaultTimeout: timeout, logger: logger)
    return TimeoutOverridingTransport(base: base, timeout: timeout)
}

/// The transport of a command: retries (the core policy) inside one `--timeout` bound. With `--timeout T` a call
/// (every attempt and the waits between retries together) fails with `transport` "timed out after T s" at T
/// seconds at most; each attempt is also bounded by T.
func boundedTransport(_ timeout: Double?, logger: Logger) -> any HTTPTransport {
    let retrying = RetryingTransport(timedTransport(timeout, logger: logger))
    guard let timeout else { return retrying }
    return DeadlineTransport(base: retrying, seconds: timeout)
}

/// Bounds a whole call, retries included (`--timeout`): when the time is up the call fails at once and its work
/// is cancelled (it is not waited for, so a request that ignores cancellation cannot stretch the bound).
struct DeadlineTransport: HTTPTransport {
    let base: any HTTPTransport
    let seconds: TimeInterval

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let base = self.base, seconds = self.seconds
        let work = Task { try await base.send(request) }
        let expired = MBaaSError(.transport, "\(request.method) \(HTTPLogging.redactedURL(request.url)): timed out after \(HTTPLogging.seconds(seconds)) (--timeout bounds the whole request, retries included)")
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<TransportResponse, any Error>) in
                let once = ResumeOnce(continuation)
                let timer = Task {
                    try? await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
                    guard !Task.isCancelled else { return }
                    once.resume(.failure(expired))
                    work.cancel()
                }
                Task {
                    let result: Result<TransportResponse, any Error>
                    do { result = .success(try await work.value) } catch { result = .failure(error) }
                    timer.cancel()
                    once.resume(result)
                }
            }
        } onCancel: {
            work.cancel()
        }
    }
}

/// Resumes a continuation once; later results are dropped.
final class ResumeOnce<T: Sendable>: @unchecked Sendable {
    private var continuation: CheckedContinuation<T, any Error>?
    private let lock = NSLock()
    init(_ continuation: CheckedContinuation<T, any Error>) { self.continuation = continuation }
    func resume(_ result: Result<T, any Error>) {
        let c: CheckedContinuation<T, any Error>? = lock.withLock {
            defer { continuation = nil }
            return continuation
        }
        c?.resume(with: result)
    }
}

/// Sets one timeout on every request (`--timeout`).
struct TimeoutOverridingTransport: HTTPTransport {
    let base: any HTTPTransport
    let timeout: TimeInterval

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        var request = request
        request.timeout = timeout
        return try await base.send(request)
    }
}

/// A backend opened for one command, with the session saved for its URL restored (and, on a backend that must be
/// told its classes' field types, those the CLI kept: ``FieldTypesFile``).
struct OpenedBackend {
    let backend: any Backend
    let key: String
    let sessions: SessionFile
    let restored: Session?
    /// `sqlite::memory:`: a session there dies with the process, so it is never saved.
    let isEphemeral: Bool

    /// Opens a URL (see ``resolveBackendURL(_:_:)``) through the built-in registry and restores its saved session.
    static func open(_ text: String, _ options: GlobalOptions, access: BackendAccess = .create) async throws -> OpenedBackend {
        let url = try BackendURL(parsing: try resolveBackendURL(text, options))
        let logger = options.logger
        logger.debug("opening backend", metadata: ["url": "\(url)"])
        // Live HTTP with the core retry policy: idempotent requests (and keyed writes) are retried on 429, 5xx
        // gateways and dropped connections, honouring Retry-After. Requests are logged (never secrets) with --verbose.
        let transport = boundedTransport(options.timeout, logger: logger)
        let registry = BuiltinAdapters.registry(localOpenMode: access.localMode)
        let backend = try await registry.open(url, context: BackendContext(transport: transport, logger: logger))
        let sessions = options.sessions
        try FieldTypesFile.declareKept(on: backend, sessions: sessions)
        let key = SessionFile.key(for: url)
        let isEphemeral = url.scheme == "sqlite" && url.path == ":memory:"
        let saved = isEphemeral ? nil : try loadSession(sessions, key)
        // Only a saved session is restored: restoring none would cancel the log-in a URL asks for (AppPot's user=).
        if let saved { await backend.restore(saved) }
        return OpenedBackend(backend: backend, key: key, sessions: sessions, restored: saved, isEphemeral: isEphemeral)
    }

    /// The saved session; an unreadable session file (permissions, a directory: `localIO`) must not block
    /// anonymous work, so it is a warning on stderr and no session.
    private static func loadSession(_ sessions: SessionFile, _ key: String) throws(MBaaSError) -> Session? {
        let result = Result<Session?, MBaaSError> { () throws(MBaaSError) -> Session? in try sessions.session(for: key) }
        switch result {
        case .success(let session): return session
        case .failure(let error):
            guard error.kind == .localIO else { throw error }
            Terminal.writeErr("mbaas: warning: \(escapingControlCharacters(error.message, keepNewlines: false)); continuing without a saved session\n")
            return nil
        }
    }

    /// Saves the session if it changed (a log-in, a log-out, an expiry) and the field types of classes the command
    /// defined (``FieldTypesFile``), and closes the backend.
    func finish() async throws {
        let now = await backend.session
        let keeping = Result<Void, MBaaSError> { () throws(MBaaSError) in try FieldTypesFile.keepDefined(by: backend, sessions: sessions) }
        if now != restored, !isEphemeral { try sessions.set(now, for: key) }
        await backend.close()
        try keeping.get()
    }

    /// Runs `body` with the backend, then `finish()`es it, also when `body` throws.
    static func with<T>(_ text: String, _ options: GlobalOptions, access: BackendAccess = .create,
                        _ body: (any Backend) async throws -> T) async throws -> T {
        let opened = try await open(text, options, access: access)
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

/// Runs a command body: an error is printed to stderr (`mbaas: error: kind: message [vendor code …]`, or with
/// `--format json|ndjson` one JSON line `{"error":{"kind":…,"message":…,"vendorCode":…,"httpStatus":…}}`) and
/// becomes the exit status documented in `mbaas --help`. Errors that are not ``MBaaSError`` are wrapped
/// (``MBaaSError/wrap(_:)``: file-system errors are `localIO`, anything unexpected `internal`).
func runReportingErrors(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as ExitCode {
        throw error
    } catch let error as CleanExit {
        throw error
    } catch let error as ValidationError {
        throw error
    } catch {
        let e = MBaaSError.wrap(error)
        reportError(e)
        throw ExitCode(exitStatus(for: e.kind))
    }
}

/// The exit status of an error kind, as documented in `mbaas --help` and the README. Unknown (adapter-defined)
/// kinds are 1.
func exitStatus(for kind: MBaaSError.Kind) -> Int32 {
    switch kind {
    case .invalidRequest, .unsupported: 2
    case .notFound: 3
    case .unauthorized, .forbidden: 4
    case .conflict, .duplicate: 5
    case .unavailable, .transport, .rateLimited: 6
    case .localIO: 7
    case .addressUnavailable: 9   // serve: the address cannot be listened on (a port in use; MBaaSEmulator's kind)
    default: 1   // decoding, internal, adapter-defined kinds
    }
}

/// Whether errors are printed as JSON: `--format json` or `--format ndjson` on the command line.
let errorsAsJSON: Bool = {
    let args = Array(CommandLine.arguments.dropFirst())
    for (i, a) in args.enumerated() {
        if a == "--" { break }
        if a == "--format=json" || a == "--format=ndjson" { return true }
        if a == "--format", i + 1 < args.count, args[i + 1] == "json" || args[i + 1] == "ndjson" { return true }
    }
    return false
}()

/// The machine-readable form of an error (one line on stderr with `--format json`).
func errorJSON(_ e: MBaaSError) -> JSON {
    var o: JSONObject = ["kind": .string(e.kind.rawValue), "message": .string(e.message)]
    o["vendorCode"] = e.vendorCode.map(JSON.string) ?? .null
    o["httpStatus"] = e.httpStatus.map { .int(Int64($0)) } ?? .null
    if let retry = e.retryAfter { o["retryAfter"] = .double(retry) }
    o["exitStatus"] = .int(Int64(exitStatus(for: e.kind)))
    return .object(["error": .object(o)])
}

/// Prints an error to stderr in the chosen form (control characters escaped in the text form).
func reportError(_ e: MBaaSError) {
    if errorsAsJSON {
        Terminal.writeErr(errorJSON(e).printed([.sortedKeys]) + "\n")
    } else {
        printError(e.description)
    }
}

func printError(_ message: String) {
    Terminal.writeErr("mbaas: error: \(escapingControlCharacters(message, keepNewlines: true))\n")
}

/// Writes text to stdout (with a newline).
func output(_ text: String) {
    Terminal.writeOut(Data((text.hasSuffix("\n") ? text : text + "\n").utf8))
}

/// Prints a JSON document (pretty, keys sorted) or a table, as the format asks.
func emit(_ json: JSON, table: @autoclosure () -> String, format: OutputFormat) {
    switch format {
    case .json: output(json.printed([.pretty, .sortedKeys]))
    case .ndjson: output(json.printed([.sortedKeys]))
    case .table: output(escapingControlCharacters(table(), keepNewlines: true))
    }
}

/// The text of a JSON argument: `@FILE` reads the file, `-` reads all of stdin, anything else is the text itself
/// (JSON never starts with `@` and is never `-`). So documents larger than the argv limit (128 KiB per argument
/// on Linux) can be given.
func readArgument(_ text: String, name: String) throws(MBaaSError) -> String {
    let data: Data
    if text == "-" {
        data = FileHandle.standardInput.readDataToEndOfFile()
    } else if text.hasPrefix("@") {
        let path = String(text.dropFirst())
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw MBaaSError(.localIO, "\(name): cannot read \(path): \(MBaaSError.describe(error))")
        }
    } else {
        return text
    }
    guard let string = String(data: data, encoding: .utf8) else {
        throw MBaaSError(.invalidRequest, "\(name): \(text == "-" ? "stdin" : String(text.dropFirst())) is not UTF-8 text")
    }
    return string
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
