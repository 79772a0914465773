import Foundation
public import MBaaSCore

/// The server's deadline for one request (``EmulatorServer/requestTimeout``).
///
/// # Contract
/// - The dialect's work and a timer run as two child tasks; the first to end decides.
/// - Work that ends first is the answer, and the timer is cancelled.
/// - When the timer ends first the work is cancelled (GRDB interrupts its SQLite statement, postgres-nio its query)
///   and awaited: a success it still reaches (a write committed before it noticed) is the answer, so that no client is
///   told a write failed when it was made; any other outcome is replaced by the dialect's timeout-style error for an
///   ``MBaaSCore/MBaaSError/Kind/unavailable`` error with a ``MBaaSCore/QueryTimeLimitExceeded`` of scope `request`.
/// - Without a deadline the dialect answers directly.
public enum RequestDeadline {
    /// Answers `request` with `dialect`, within `deadline` (see the type's contract).
    public static func answer(_ request: TransportRequest, by dialect: any EmulatorDialect,
                              within deadline: Duration?) async -> TransportResponse {
        guard let deadline else { return await dialect.respond(to: request) }
        return await withTaskGroup(of: TransportResponse?.self) { group in
            group.addTask { await dialect.respond(to: request) }
            group.addTask {
                // nil: the deadline passed (or the work ended first and this timer was cancelled).
                try? await Task.sleep(for: deadline)
                return nil
            }
            var timedOut = false
            while let next = await group.next() {
                guard let answer = next else {
                    if timedOut { continue }
                    timedOut = true
                    group.cancelAll()
                    continue
                }
                group.cancelAll()
                if !timedOut || (200..<300).contains(answer.status.code) { return answer }
                break
            }
            let seconds = Double(deadline.components.seconds) + Double(deadline.components.attoseconds) / 1e18
            let shown = seconds >= 1 ? "\(Int(seconds)) s" : "\(Int((seconds * 1000).rounded())) ms"
            return dialect.answer(MBaaSError(
                .unavailable,
                "the request did not finish within the server's deadline of \(shown) (mbaas serve --request-timeout) and was stopped; narrow the query or try again",
                underlying: QueryTimeLimitExceeded(limit: seconds, scope: .request)), to: request)
        }
    }
}
