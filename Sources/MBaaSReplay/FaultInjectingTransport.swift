public import Foundation
public import MBaaSCore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A failure ``FaultInjectingTransport`` can inject.
public enum Fault: Sendable, Hashable, CustomStringConvertible {
    /// Answers `429 Too Many Requests` with `Retry-After: <seconds>` (no header when `nil`); the request never
    /// reaches the wrapped transport.
    case rateLimited(retryAfter: TimeInterval? = 1)
    /// Answers with this 5xx status; the request never reaches the wrapped transport.
    case serverError(status: Int = 503)
    /// Throws a `transport` error before sending (connection reset by peer).
    case connectionReset
    /// Throws a `transport` error before sending (request timed out).
    case timeout
    /// Sends the request (the server **does** process it), then throws a `transport` error as if the connection
    /// dropped while the body was arriving. This is the case that makes non-idempotent retries dangerous.
    case truncatedBody

    /// One of each kind, with typical parameters.
    public static let all: [Fault] = [
        .rateLimited(retryAfter: 1), .serverError(status: 503), .connectionReset, .timeout, .truncatedBody,
    ]

    public var description: String {
        switch self {
        case .rateLimited(let after): "rateLimited(retryAfter: \(after.map { "\($0)" } ?? "nil"))"
        case .serverError(let status): "serverError(\(status))"
        case .connectionReset: "connectionReset"
        case .timeout: "timeout"
        case .truncatedBody: "truncatedBody"
        }
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny, fast, seedable generator. Same seed, same sequence, on every
/// platform; no global state.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public private(set) var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A double in `0..<1` from the top 53 bits.
    public mutating func nextUnit() -> Double { Double(next() >> 11) * 0x1.0p-53 }
}

/// Wraps a transport and makes a seeded fraction of calls fail, for retry, migration and adapter tests.
///
/// # Contract
/// - Call *n* (counting from 0 in the order calls reach this transport) draws two numbers from a ``SplitMix64``
///   seeded with `seed`: a unit double *u* and a choice *c*. If *u* < `rate`, fault `faults[c % faults.count]` is
///   injected, else the call goes through unchanged. The sequence of decisions therefore depends only on the seed,
///   the rate and the fault list: the same seed gives the same faults (see ``plan(seed:rate:faults:count:)``).
/// - `rate` 0 never injects; `rate` 1 always does. An empty `faults` list never injects.
/// - Injected failures look like real ones: statuses as responses, connection problems as ``MBaaSError`` of kind
///   ``MBaaSError/Kind/transport`` whose message says `(injected fault)`.
/// - Safe to call from many tasks at once; with concurrent callers the call order, not the fault sequence, varies.
public final class FaultInjectingTransport: HTTPTransport, @unchecked Sendable {
    public let base: any HTTPTransport
    public let seed: UInt64
    public let rate: Double
    public let faults: [Fault]

    private struct State {
        var rng: SplitMix64
        var calls = 0
        var injected: [(call: Int, fault: Fault)] = []
    }

    private let state: Locked<State>

    public init(wrapping base: any HTTPTransport, seed: UInt64, rate: Double, faults: [Fault] = Fault.all) {
        self.base = base
        self.seed = seed
        self.rate = min(1, max(0, rate))
        self.faults = faults
        self.state = Locked(State(rng: SplitMix64(seed: seed)))
    }

    /// The decisions for the first `count` calls: `nil` where the call goes through.
    public static func plan(seed: UInt64, rate: Double, faults: [Fault] = Fault.all, count: Int) -> [Fault?] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { _ in decide(&rng, rate: rate, faults: faults) }
    }

    private static func decide(_ rng: inout SplitMix64, rate: Double, faults: [Fault]) -> Fault? {
        let u = rng.nextUnit()
        let c = rng.next()
        guard !faults.isEmpty, u < rate else { return nil }
        return faults[Int(c % UInt64(faults.count))]
    }

    /// The faults injected so far, with the index of the call each hit.
    public var injected: [(call: Int, fault: Fault)] { state.withLock { $0.injected } }

    /// How many calls have reached this transport.
    public var callCount: Int { state.withLock { $0.calls } }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        let (rate, faults) = (self.rate, self.faults)
        let fault: Fault? = state.withLock { s in
            let call = s.calls
            s.calls += 1
            let f = FaultInjectingTransport.decide(&s.rng, rate: rate, faults: faults)
            if let f { s.injected.append((call, f)) }
            return f
        }
        guard let fault else { return try await base.send(request) }
        let target = "\(request.method) \(request.url.path)"
        switch fault {
        case .rateLimited(let after):
            var headers: HTTPFields = [.contentType: "application/json"]
            if let after { headers["Retry-After"] = String(Int(after.rounded(.up))) }
            return TransportResponse(status: 429, headers: headers,
                                body: JSON.object(["error": "rate limited (injected fault)"]).data())
        case .serverError(let status):
            return TransportResponse(status: .init(code: status), headers: [.contentType: "application/json"],
                                body: JSON.object(["error": .string("server error \(status) (injected fault)")]).data())
        case .connectionReset:
            throw MBaaSError(.transport, "\(target): connection reset by peer (injected fault)",
                             underlying: URLError(.networkConnectionLost))
        case .timeout:
            throw MBaaSError(.transport, "\(target): request timed out (injected fault)", underlying: URLError(.timedOut))
        case .truncatedBody:
            let response = try await base.send(request)
            throw MBaaSError(.transport,
                "\(target): response body truncated after \(response.body.count / 2) of \(response.body.count) bytes (injected fault)",
                httpStatus: response.status.code, underlying: URLError(.networkConnectionLost))
        }
    }
}
