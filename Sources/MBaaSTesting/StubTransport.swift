import Foundation
public import MBaaSCore

/// An ``MBaaSCore/HTTPTransport`` for tests: answers each request with a handler, or from a queue, and keeps every
/// request it was sent.
///
/// ```swift
/// let stub = StubTransport { request in .json(200, .object(["objectId": "a1"])) }
/// let backend = MyBackend(context: BackendContext(transport: stub))
/// _ = try await backend.create(record)
/// #expect(stub.requests.first?.method == .post)
/// ```
///
/// # Contract
/// - Requests are kept in the order they arrived, before the handler runs (a throwing handler's request is kept).
/// - With a queue, each request takes the next response; an empty queue is a `transport` error naming the URL.
/// - Safe to use from concurrent tasks.
public final class StubTransport: HTTPTransport, Sendable {
    private let exchange: Locked<(sent: [TransportRequest], queue: [TransportResponse])>
    private let handler: (@Sendable (TransportRequest) throws -> TransportResponse)?

    /// Answers with `handler`.
    public init(_ handler: @escaping @Sendable (TransportRequest) throws -> TransportResponse) {
        self.handler = handler
        self.exchange = Locked(([], []))
    }

    /// Answers with `responses`, one per request, in order.
    public init(responses: [TransportResponse]) {
        self.handler = nil
        self.exchange = Locked(([], responses))
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        let queued: TransportResponse? = exchange.withLock {
            $0.sent.append(request)
            return handler == nil && !$0.queue.isEmpty ? $0.queue.removeFirst() : nil
        }
        if let handler { return try handler(request) }
        guard let queued else { throw MBaaSError(.transport, "stub: no response queued for \(request.method) \(request.url)") }
        return queued
    }

    /// Every request sent so far.
    public var requests: [TransportRequest] { exchange.withLock { $0.sent } }
    /// How many requests were sent.
    public var callCount: Int { requests.count }
}

extension TransportResponse {
    /// A JSON response (`Content-Type: application/json`), for stubs.
    public static func json(_ status: Int, _ body: JSON, headers: [(String, String)] = []) -> TransportResponse {
        TransportResponse(status: .init(code: status), headers: HTTPFields([("Content-Type", "application/json")] + headers), body: body.data())
    }
}

extension TransportResponse {
    /// A response whose body is `text` as it stands (`Content-Type: application/json`), for stubs that answer with
    /// JSON exactly as a server prints it, or with malformed JSON.
    public static func jsonText(_ status: Int, _ text: String, headers: [(String, String)] = []) -> TransportResponse {
        var fields = HTTPFields([("Content-Type", "application/json")])
        for (name, value) in headers { fields.add(name, value) }
        return TransportResponse(status: .init(code: status), headers: fields, body: Data(text.utf8))
    }
}
