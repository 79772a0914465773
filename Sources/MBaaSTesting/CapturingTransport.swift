public import MBaaSCore

/// An ``MBaaSCore/HTTPTransport`` for tests that passes every request on to another transport (a simulator, a
/// ``StubTransport``, the network) and keeps it, to check what a backend sent.
///
/// ```swift
/// let capture = CapturingTransport(simulator)
/// let backend = MyBackend(context: BackendContext(transport: capture))
/// _ = try await backend.create(record)
/// #expect(capture.requests.map(\.method) == [.post])
/// ```
///
/// # Contract
/// - Requests are kept in the order they were sent, before `base` answers (a request `base` fails is kept too).
/// - What `base` answers or throws is passed on unchanged.
/// - Safe to use from concurrent tasks.
public final class CapturingTransport: HTTPTransport, Sendable {
    public let base: any HTTPTransport
    private let sent = Locked<[TransportRequest]>([])

    public init(_ base: any HTTPTransport) { self.base = base }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        sent.withLock { $0.append(request) }
        return try await base.send(request)
    }

    /// Every request sent so far.
    public var requests: [TransportRequest] { sent.value }
}
