public import Foundation
public import MBaaSCore

/// A dialect that answers every request with a closure: puts a replaying or recording transport, or a test
/// simulator, behind a real socket through ``EmulatorServer`` (Hummingbird), so that a client process (the `mbaas`
/// CLI in tests) or `URLSession` can reach it over `http://127.0.0.1:PORT`.
///
/// ```swift
/// try await HandlerDialect.serving({ request in await simulator.respond(request) }) { port in
///     // clients talk to http://127.0.0.1:\(port)
/// }
/// ```
///
/// # Contract
/// - Every request within ``maxRequestBodySize`` goes to the handler as ``EmulatorServer`` rebuilds it (the URL as
///   the client addressed it); a larger one is `413` with an empty body.
/// - ``serving(_:host:maxRequestBodySize:_:)`` binds loopback on a free port, runs the body, and stops the server
///   (waiting for it) whether the body returns or throws.
public struct HandlerDialect: EmulatorDialect {
    public typealias Handler = @Sendable (TransportRequest) async -> TransportResponse

    public let name: String
    public let maxRequestBodySize: Int
    let handler: Handler

    /// - Parameter maxRequestBodySize: the largest body passed on (default 64 MiB).
    public init(name: String = "handler", maxRequestBodySize: Int = 64 << 20, _ handler: @escaping Handler) {
        self.name = name
        self.maxRequestBodySize = maxRequestBodySize
        self.handler = handler
    }

    public func respond(to request: TransportRequest) async -> TransportResponse { await handler(request) }

    public func requestTooLarge(limit: Int) -> TransportResponse { TransportResponse(status: 413) }

    /// `http://host:port` (the handler decides what any path means).
    public func backendURL(host: String, port: Int) -> String { "http://\(host):\(port)" }

    /// Serves `handler` on `host` (loopback) at a free port while `body` runs with that port, then stops.
    @available(macOS 14, iOS 17, tvOS 17, *)
    public static func serving<T: Sendable>(
        _ handler: @escaping Handler, host: String = "127.0.0.1", maxRequestBodySize: Int = 64 << 20,
        _ body: (Int) async throws -> T
    ) async throws -> T {
        let running = try await EmulatorServer(dialect: HandlerDialect(maxRequestBodySize: maxRequestBodySize, handler),
                                               host: host).start()
        do {
            let result = try await body(running.port)
            await running.stop()
            return result
        } catch {
            await running.stop()
            throw error
        }
    }
}
