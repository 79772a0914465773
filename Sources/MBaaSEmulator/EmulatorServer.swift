import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
public import Logging
public import MBaaSCore
import NIOCore
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Serves one ``EmulatorDialect`` over HTTP/1.1 with Hummingbird, or over HTTPS when given an ``EmulatorTLS``.
///
/// ```swift
/// let server = EmulatorServer(dialect: dialect, host: "127.0.0.1", port: 0)
/// let running = try await server.start()          // bound; running.port is the real port
/// // ... clients talk to running.baseURL ...
/// await running.stop()                            // graceful shutdown, waits for the server to end
/// ```
/// `mbaas serve` uses ``run(onRunning:)`` instead, which runs until cancelled.
///
/// # Contract
/// - With ``tls`` every connection is TLS (1.2 or later; HummingbirdTLS on swift-nio-ssl) and ``RunningEmulator/baseURL``
///   is `https://…`; a plain HTTP request to it fails its handshake and gets no answer.
/// - Each request is handed to the dialect with its URL rebuilt from the `Host` header and the raw request
///   target, so signatures computed over the client's URL verify.
/// - A body bigger than the dialect's limit is refused with ``EmulatorDialect/requestTooLarge(limit:)`` (by
///   `Content-Length` before reading, or as soon as the bytes read pass the limit).
/// - Every response names the emulator (so a recording of it can never pass for a vendor's server):
///   `Server: mbaas-emulator/<MBaaSKit version>` and ``emulatorHeader`` with the dialect's name
///   (`X-MBaaS-Emulator: ncmb`), replacing any the dialect set. `RecordingTransport` (MBaaSReplay) reads them and
///   labels such a recording `simulated`.
/// - Requests are logged at debug level (method, path, status), never with headers or bodies.
/// - A connection with no request under way (just opened and silent, half-open, or kept alive between requests) is
///   closed after ``idleTimeout`` (30 s by default), so idle sockets cannot pile up.
/// - A request still under way after ``requestTimeout`` (30 s by default) is cancelled and answered with the
///   dialect's timeout-style error once its work has stopped, unless that work still succeeded (``RequestDeadline``
///   says what stops on cancellation and what runs to its end). Other requests are served meanwhile.
@available(macOS 14, iOS 17, tvOS 17, *)
public struct EmulatorServer: Sendable {
    public let dialect: any EmulatorDialect
    public let host: String
    public let port: Int
    public let logger: Logger
    /// How long a connection may stay open with no request under way.
    public let idleTimeout: Duration
    /// The certificate and key served over HTTPS; `nil` for plain HTTP.
    public let tls: EmulatorTLS?
    /// How long one request may run before it is cancelled and answered with the dialect's timeout-style error;
    /// `nil`: no deadline.
    public let requestTimeout: Duration?

    /// The default ``requestTimeout``: 30 seconds.
    public static let defaultRequestTimeout: Duration = .seconds(30)

    /// The default ``idleTimeout``: 30 seconds.
    public static let defaultIdleTimeout: Duration = .seconds(30)

    /// The response header naming the dialect that answered (`X-MBaaS-Emulator: ncmb`).
    public static let emulatorHeader = "X-MBaaS-Emulator"
    /// The `Server` header of every response: `mbaas-emulator/<MBaaSKit version>`.
    public static let serverHeader = "mbaas-emulator/\(MBaaSKitVersion.current)"

    /// - Parameters:
    ///   - host: the address to bind (default loopback).
    ///   - port: the port; 0 picks a free one (read it from ``RunningEmulator/port``).
    ///   - idleTimeout: how long a connection may stay open with no request under way.
    ///   - tls: serve HTTPS with this certificate and key (`nil`: plain HTTP).
    ///   - requestTimeout: how long one request may run (`nil`: no deadline).
    public init(dialect: any EmulatorDialect, host: String = "127.0.0.1", port: Int = 0,
                idleTimeout: Duration = EmulatorServer.defaultIdleTimeout, tls: EmulatorTLS? = nil,
                requestTimeout: Duration? = EmulatorServer.defaultRequestTimeout,
                logger: Logger = Logger(label: "mbaas.emulator")) {
        self.dialect = dialect
        self.host = host
        self.port = port
        self.idleTimeout = idleTimeout
        self.tls = tls
        self.requestTimeout = requestTimeout
        self.logger = logger
    }

    /// Whether `host` is a loopback address (`127.0.0.0/8`, `::1`, `localhost`): what a server binds to when it should
    /// be reachable from this machine only.
    public static func isLoopback(_ host: String) -> Bool {
        let h = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if h == "localhost" || h == "::1" || h == "0:0:0:0:0:0:0:1" { return true }
        let octets = h.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }

    /// A running server: its port, and a way to stop it.
    public struct RunningEmulator: Sendable {
        public let port: Int
        public let host: String
        /// `https` when served over TLS, else `http`.
        public let scheme: String
        let group: ServiceGroup
        let task: Task<Void, any Error>

        /// `http://host:port` (`https://…` over TLS)
        public var baseURL: String { "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)" }

        /// Shuts the server down gracefully and waits until it has stopped.
        public func stop() async {
            await group.triggerGracefulShutdown()
            _ = await task.result
        }
    }

    /// Starts the server in the background and returns once it listens; throws the bind error (a port in use)
    /// instead of waiting forever.
    public func start() async throws -> RunningEmulator {
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let app = try application { port in continuation.yield(port); continuation.finish() }
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        // Ends the wait below if the server stops before it listens (a port in use): no bound port ever comes.
        let task = Task {
            defer { continuation.finish() }
            try await group.run()
        }
        var iterator = stream.makeAsyncIterator()
        guard let bound = await iterator.next() else {
            await group.triggerGracefulShutdown()
            if case .failure(let error) = await task.result { throw error }
            throw MBaaSError(.unavailable, "the emulator did not start on \(host):\(port)")
        }
        return RunningEmulator(port: bound, host: host, scheme: scheme, group: group, task: task)
    }

    /// Runs until the calling task is cancelled; `onRunning` gets the bound port once listening. (`mbaas serve`
    /// cancels it on SIGINT or SIGTERM.)
    ///
    /// An address it cannot listen on (a port in use, a privileged port, an address not of this machine) is an
    /// ``MBaaSCore/MBaaSError`` of kind ``MBaaSCore/MBaaSError/Kind/addressUnavailable`` naming the address and the
    /// system's reason (`mbaas serve` exits 9).
    public func run(onRunning: @escaping @Sendable (Int) async -> Void) async throws {
        do {
            try await application(onRunning: onRunning).runService(gracefulShutdownSignals: [])
        } catch let error as IOError where [EADDRINUSE, EADDRNOTAVAIL, EACCES].contains(error.errnoCode) {
            let shown = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            let hint = error.errnoCode == EADDRINUSE
                ? "another program listens there; choose another --port, or --port 0 for a free one"
                : error.errnoCode == EACCES ? "ports below 1024 need privileges; choose another --port"
                : "the address is not one of this machine's; check --host"
            throw MBaaSError(.addressUnavailable, "cannot listen on \(shown): \(String(cString: strerror(error.errnoCode))) (\(hint))")
        }
    }

    /// `https` when served over TLS, else `http`.
    public var scheme: String { tls == nil ? "http" : "https" }

    func application(onRunning: @escaping @Sendable (Int) async -> Void) throws -> some ApplicationProtocol {
        let responder = DialectResponder(dialect: dialect, scheme: scheme, deadline: requestTimeout.map(RequestDeadline.init),
                                         logger: logger)
        let nanoseconds = idleTimeout.components.seconds * 1_000_000_000 + idleTimeout.components.attoseconds / 1_000_000_000
        let http1 = HTTPServerBuilder.http1(configuration: .init(idleTimeout: .nanoseconds(max(1, nanoseconds))))
        let server = try tls.map { try HTTPServerBuilder.tls(http1, tlsConfiguration: $0.configuration) } ?? http1
        return Application(
            responder: responder,
            server: server,
            configuration: .init(address: .hostname(host, port: port), serverName: nil),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
            logger: logger)
    }
}

extension MBaaSError.Kind {
    /// The emulator cannot listen on the address it was given (a port in use). `mbaas serve` exits 9.
    public static let addressUnavailable = MBaaSError.Kind(rawValue: "addressUnavailable")
}

/// Hands Hummingbird requests to the dialect as the core's ``MBaaSCore/TransportRequest`` and its answers back.
/// Both sides use swift-http-types' fields, methods and statuses, so nothing is converted but the body.
@available(macOS 14, iOS 17, tvOS 17, *)
struct DialectResponder: HTTPResponder {
    typealias Context = BasicRequestContext
    let dialect: any EmulatorDialect
    /// `http` or `https`: the scheme of the URLs handed to the dialect.
    let scheme: String
    /// The request deadline (``EmulatorServer/requestTimeout``), one per server.
    let deadline: RequestDeadline?
    let logger: Logger

    func respond(to request: Request, context: BasicRequestContext) async throws -> Response {
        let limit = dialect.maxRequestBodySize
        let answer: TransportResponse
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit {
            answer = dialect.requestTooLarge(limit: limit)
        } else {
            var body = ByteBuffer()
            var tooLarge = false
            for try await chunk in request.body {
                if body.readableBytes + chunk.readableBytes > limit { tooLarge = true; break }
                var chunk = chunk
                body.writeBuffer(&chunk)
            }
            if tooLarge {
                answer = dialect.requestTooLarge(limit: limit)
            } else {
                let core = coreRequest(request, body: body)
                if let deadline { answer = await deadline.answer(core, by: dialect) } else { answer = await dialect.respond(to: core) }
            }
        }
        logger.debug("emulator", metadata: [
            "method": "\(request.method.rawValue)", "path": "\(request.uri.path)", "status": "\(answer.status.code)",
        ])
        var headers = answer.headers
        headers[.server] = EmulatorServer.serverHeader
        headers[HTTPField.Name(EmulatorServer.emulatorHeader)!] = dialect.name
        return Response(status: answer.status, headers: headers,
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
    }

    func coreRequest(_ request: Request, body: ByteBuffer) -> TransportRequest {
        let authority = request.head.authority ?? "localhost"
        let target = request.uri.string
        let url = URL(string: "\(scheme)://\(authority)\(target.hasPrefix("/") ? target : "/" + target)")
            ?? URL(string: "\(scheme)://\(authority)/")!
        return TransportRequest(method: request.method, url: url, headers: request.headers,
                                body: body.readableBytes == 0 ? nil : Data(body.readableBytesView))
    }
}
