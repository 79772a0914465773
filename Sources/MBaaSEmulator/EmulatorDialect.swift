import Foundation
public import MBaaSCore

/// One vendor's wire dialect, answered from a server store (``MBaaSCore/ServerStore``).
///
/// # Contract
/// - ``respond(to:)`` answers every request with the vendor's own response: a success in the vendor's shape, or the
///   vendor's error status and body. It never throws and never crashes on bad input: an unknown path, a malformed
///   body or a failed store call all become the vendor's error.
/// - A dialect is independent of the network: the ``EmulatorServer`` feeds it requests from Hummingbird, and
///   ``EmulatorTransport`` feeds it requests in-process (tests, parity checks), with the same answers.
/// - Requests bigger than ``maxRequestBodySize`` never reach ``respond(to:)``: the server answers
///   ``requestTooLarge(limit:)`` without reading the rest.
/// - A dialect is built on its vendor's Wire module (routes, messages, queries, updates, errors, signing), the
///   same code the vendor's client uses; it does not reuse any test simulator.
public protocol EmulatorDialect: Sendable {
    /// The dialect's name, as `mbaas serve --dialect` takes it (`ncmb`).
    var name: String { get }
    /// The largest request body accepted, in bytes.
    var maxRequestBodySize: Int { get }
    /// Answers one request. `request.url` holds the URL as the client addressed it (`http://host:port/path?query`,
    /// percent-encoding as sent).
    func respond(to request: TransportRequest) async -> TransportResponse
    /// The vendor's answer to a body over ``maxRequestBodySize``.
    func requestTooLarge(limit: Int) -> TransportResponse
    /// The vendor's error answer to `request` for an error raised outside ``respond(to:)``: the server's request
    /// deadline (``EmulatorServer/requestTimeout``, an ``MBaaSCore/MBaaSError/Kind/unavailable`` error with a
    /// ``MBaaSCore/QueryTimeLimitExceeded`` of scope `request` underneath) answers the vendor's timeout-style error.
    /// The default answers 503 with `{"error": message}`: a dialect names its vendor's form.
    func answer(_ error: MBaaSError, to request: TransportRequest) -> TransportResponse
    /// Whether an answer of ``respond(to:)`` is a success. The default is a 2xx status; a vendor that answers
    /// errors with 200 (AppPot) reads its body.
    func isSuccess(_ response: TransportResponse) -> Bool
    /// The backend URL a client uses to reach this dialect at `host:port` (`ncmb+http://KEY:SECRET@127.0.0.1:8080`).
    func backendURL(host: String, port: Int) -> String
    /// Whether `request` is a point read: a `GET` of one record by id, answered by the store's point read (and the
    /// session check), on a store that says its point reads run to their end
    /// (``MBaaSCore/ServerStore/pointReadsRunToTheirEnd``: the Local store reads synchronously; PostgreSQL does not
    /// cancel a statement it sent). Nothing in such a request waits for anything a cancellation would stop, so the
    /// request deadline (``RequestDeadline``) runs it in the request's own task and judges it by its end. The
    /// default is `false`: every request gets a task the deadline can cancel.
    func isPointRead(_ request: TransportRequest) -> Bool
}

extension EmulatorDialect {
    public func answer(_ error: MBaaSError, to request: TransportRequest) -> TransportResponse {
        TransportResponse(status: .init(code: 503), headers: [.contentType: "application/json"],
                          body: JSON.object(["error": .string(error.message)]).data())
    }

    public func isSuccess(_ response: TransportResponse) -> Bool { (200..<300).contains(response.status.code) }

    public func isPointRead(_ request: TransportRequest) -> Bool { false }
}

/// An ``HTTPTransport`` that hands each request to a dialect in-process: no socket, same answers as the server.
/// For tests and for parity checks of recorded exchanges; bodies over the dialect's limit get
/// ``EmulatorDialect/requestTooLarge(limit:)`` as they would from the server.
public struct EmulatorTransport: HTTPTransport {
    public let dialect: any EmulatorDialect

    public init(_ dialect: any EmulatorDialect) { self.dialect = dialect }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        if let body = request.body, body.count > dialect.maxRequestBodySize {
            return dialect.requestTooLarge(limit: dialect.maxRequestBodySize)
        }
        return await dialect.respond(to: request)
    }
}
