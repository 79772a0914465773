import Foundation
import MBaaSCore

// Retries, shared by every stage: which failures are tried again, and how long to wait.

/// Whether an error may go away by trying again (the outcome of the write is unknown).
func isTransient(_ error: MBaaSError) -> Bool {
    [.rateLimited, .unavailable, .transport].contains(error.kind)
}

extension Migration {
    /// Waits after `attempt` failed attempts (1 after the first): the server's `Retry-After` when it gave one, else
    /// the policy's exponential backoff with jitter (``MigrationOptions/retry``).
    func backoff(attempt: Int, error: MBaaSError?) async throws {
        try await Task.sleep(nanoseconds: UInt64(retryDelay(attempt: attempt, error: error) * 1_000_000_000))
    }

    func retryDelay(attempt: Int, error: MBaaSError?) -> TimeInterval {
        max(0, options.retry.delay(afterAttempt: max(0, attempt - 1), retryAfter: error?.retryAfter))
    }

    /// Runs an idempotent call, retrying transient failures with backoff.
    func withRetry<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            do { return try await body() } catch {
                let e = MBaaSError.wrap(error)
                attempt += 1
                guard isTransient(e), attempt < options.maxAttempts else { throw e }
                try await backoff(attempt: attempt, error: e)
            }
        }
    }
}
