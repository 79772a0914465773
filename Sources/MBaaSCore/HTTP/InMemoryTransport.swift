import Foundation

/// A transport that answers from memory: no socket, no event loop, no copy through the kernel. For measuring what
/// an adapter itself costs per operation (building and signing the request, decoding the response), and for tests
/// that need canned answers without a server.
///
/// ```swift
/// let transport = InMemoryTransport.canned([
///     "GET /classes/Memo/m1": TransportResponse(status: 200, body: Data(#"{"objectId":"m1"}"#.utf8)),
/// ])
/// let backend = SomeBackend(configuration: ..., context: BackendContext(transport: transport))
/// ```
///
/// # Contract
/// - `respond` runs on the calling task, synchronously; whatever it throws is thrown by ``send(_:)``.
/// - Safe to call from many tasks at once when `respond` is (the closure is `@Sendable`).
public struct InMemoryTransport: HTTPTransport {
    public typealias Responder = @Sendable (TransportRequest) throws -> TransportResponse

    private let respond: Responder

    public init(_ respond: @escaping Responder) {
        self.respond = respond
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        try respond(request)
    }

    /// Answers by `"METHOD /path"` (the URL's path, without its query); a request with no entry gets `fallback`,
    /// or a 404 with an empty JSON object.
    public static func canned(_ responses: [String: TransportResponse], fallback: TransportResponse? = nil) -> InMemoryTransport {
        let notFound = fallback ?? TransportResponse(status: 404, headers: [.contentType: "application/json"], body: Data("{}".utf8))
        return InMemoryTransport { request in
            responses[key(method: request.method.rawValue, path: request.url.path)] ?? notFound
        }
    }

    /// The key ``canned(_:fallback:)`` looks responses up by.
    public static func key(method: String, path: String) -> String { method.uppercased() + " " + path }
}
