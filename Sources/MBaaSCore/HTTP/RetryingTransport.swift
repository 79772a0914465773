public import Foundation

/// When and how long to wait before retrying a request.
///
/// Retries 429, 502, 503, 504 and `transport` failures (not cancellation), only for idempotent methods or
/// requests with an ``TransportRequest/idempotencyKey``. The delay is exponential (`baseDelay * 2^attempt`, capped at
/// `maxDelay`) with full jitter, or the server's `Retry-After` when it gives one (capped at `maxRetryAfter`).
public struct RetryPolicy: Sendable {
    public var maxAttempts: Int
    public var baseDelay: TimeInterval
    public var maxDelay: TimeInterval
    public var maxRetryAfter: TimeInterval
    public var retryableStatuses: Set<Int>
    /// Random number source in `0..<1` for jitter (tests inject a fixed one).
    public var random: @Sendable () -> Double

    public init(
        maxAttempts: Int = 4, baseDelay: TimeInterval = 0.2, maxDelay: TimeInterval = 10,
        maxRetryAfter: TimeInterval = 60, retryableStatuses: Set<Int> = [429, 502, 503, 504],
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
        self.retryableStatuses = retryableStatuses
        self.random = random
    }

    public static let none = RetryPolicy(maxAttempts: 1)

    /// Whether this request may be sent again at all.
    public func mayRetry(_ request: TransportRequest) -> Bool { request.isIdempotent || request.idempotencyKey != nil }

    /// The delay before attempt `attempt + 1` (attempt counts from 0), honouring `Retry-After`.
    public func delay(afterAttempt attempt: Int, retryAfter: TimeInterval?) -> TimeInterval {
        if let retryAfter { return min(retryAfter, maxRetryAfter) }
        let exponential = min(maxDelay, baseDelay * pow(2, Double(attempt)))
        return exponential * random()
    }
}

/// Wraps a transport with a ``RetryPolicy``. Sleeps through an injectable function so tests run instantly.
public struct RetryingTransport: HTTPTransport {
    public let base: any HTTPTransport
    public let policy: RetryPolicy
    public let sleep: @Sendable (TimeInterval) async throws -> Void

    public init(
        _ base: any HTTPTransport, policy: RetryPolicy = RetryPolicy(),
        sleep: @escaping @Sendable (TimeInterval) async throws -> Void = { seconds in
            try await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1_000_000_000))
        }
    ) {
        self.base = base
        self.policy = policy
        self.sleep = sleep
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var attempt = 0
        while true {
            let canRetry = attempt + 1 < policy.maxAttempts && policy.mayRetry(request)
            do {
                let response = try await base.send(request)
                guard canRetry, policy.retryableStatuses.contains(response.status.code) else { return response }
                try await sleep(policy.delay(afterAttempt: attempt, retryAfter: response.retryAfter()))
            } catch {
                let e = MBaaSError.wrap(error)
                guard canRetry, e.kind == .transport, !(e.underlying is CancellationError), !Task.isCancelled else {
                    throw e
                }
                try await sleep(policy.delay(afterAttempt: attempt, retryAfter: nil))
            }
            attempt += 1
        }
    }
}
