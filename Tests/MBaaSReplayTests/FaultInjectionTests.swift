import Foundation
import MBaaSCore
import Testing
@testable import MBaaSReplay

@Suite struct FaultInjectionTests {
    static func ok() -> StubTransport { StubTransport { _ in TransportResponse.json(200, .object(["ok": true])) } }

    /// Sends `n` GETs and returns a trace: status code, or the error kind.
    static func trace(_ t: any HTTPTransport, _ n: Int) async -> [String] {
        var out: [String] = []
        for i in 0..<n {
            do { out.append("\(try await t.send(request("GET", "https://x/item/\(i)")).status.code)") }
            catch { out.append("error:\(MBaaSError.wrap(error).message.contains("injected") ? "injected" : "other")") }
        }
        return out
    }

    @Test func sameSeedSameFaultSequence() async {
        let a = FaultInjectingTransport(wrapping: Self.ok(), seed: 42, rate: 0.5)
        let b = FaultInjectingTransport(wrapping: Self.ok(), seed: 42, rate: 0.5)
        let ta = await Self.trace(a, 60), tb = await Self.trace(b, 60)
        #expect(ta == tb)
        #expect(a.injected.map(\.call) == b.injected.map(\.call))
        #expect(a.injected.map(\.fault) == b.injected.map(\.fault))
        // The plan predicts the run exactly.
        let plan = FaultInjectingTransport.plan(seed: 42, rate: 0.5, count: 60)
        #expect(plan.enumerated().compactMap { $0.element == nil ? nil : $0.offset } == a.injected.map(\.call))
        // Roughly half injected, and every kind appears over 60 calls at this seed.
        #expect((15...45).contains(a.injected.count))
        #expect(Set(a.injected.map { "\($0.fault)" }).count == Fault.all.count)
        let c = FaultInjectingTransport(wrapping: Self.ok(), seed: 43, rate: 0.5)
        #expect(await Self.trace(c, 60) != ta)
    }

    @Test func rateZeroInjectsNothingAndRateOneEverything() async {
        let none = FaultInjectingTransport(wrapping: Self.ok(), seed: 7, rate: 0)
        #expect(await Self.trace(none, 50) == Array(repeating: "200", count: 50))
        #expect(none.injected.isEmpty && none.callCount == 50)
        let all = FaultInjectingTransport(wrapping: Self.ok(), seed: 7, rate: 1, faults: [.serverError(status: 502)])
        #expect(await Self.trace(all, 10) == Array(repeating: "502", count: 10))
        let empty = FaultInjectingTransport(wrapping: Self.ok(), seed: 7, rate: 1, faults: [])
        #expect(await Self.trace(empty, 5) == Array(repeating: "200", count: 5))
    }

    @Test func eachFaultLooksLikeTheRealThing() async throws {
        let live = Self.ok()
        let limited = FaultInjectingTransport(wrapping: live, seed: 1, rate: 1, faults: [.rateLimited(retryAfter: 2.5)])
        let r = try await limited.send(request("GET", "https://x/a"))
        #expect(r.status == 429 && r.retryAfter() == 3)
        for fault in [Fault.connectionReset, .timeout] {
            let t = FaultInjectingTransport(wrapping: live, seed: 1, rate: 1, faults: [fault])
            let e = await thrownError { _ = try await t.send(request("GET", "https://x/b")) }
            #expect(e?.kind == .transport)
            #expect(e?.message.contains("(injected fault)") == true)
        }
        #expect(live.callCount == 0)  // none of these reached the server
        let truncated = FaultInjectingTransport(wrapping: live, seed: 1, rate: 1, faults: [.truncatedBody])
        let e = await thrownError { _ = try await truncated.send(request("POST", "https://x/c")) }
        #expect(e?.kind == .transport && e?.message.contains("truncated") == true)
        #expect(live.callCount == 1)  // the server did process it
    }

    @Test func splitMix64KnownValues() {
        // Reference outputs of SplitMix64 seeded with 0 (from the published algorithm).
        var g = SplitMix64(seed: 0)
        #expect(g.next() == 0xE220_A839_7B1D_CDAF)
        #expect(g.next() == 0x6E78_9E6A_A1B9_65F4)
        var u = SplitMix64(seed: 99)
        for _ in 0..<1000 { let d = u.nextUnit(); #expect(d >= 0 && d < 1) }
    }
}

@Suite struct RetryPolicyWithInjectedFaultsTests {
    /// Sleeps recorded, never slept.
    final class SleepLog: @unchecked Sendable {
        let delays = Locked<[TimeInterval]>([])
        var sleep: @Sendable (TimeInterval) async throws -> Void { { [delays] d in delays.withLock { $0.append(d) } } }
        var values: [TimeInterval] { delays.withLock { $0 } }
    }

    static func policy() -> RetryPolicy { RetryPolicy(maxAttempts: 4, baseDelay: 0.1, random: { 0.5 }) }

    /// A transport whose first `failures` calls fail with `fault`, then succeed (a seeded plan at rate 1 then 0 is
    /// awkward, so the fault transport is placed behind a counter).
    final class FailFirst: HTTPTransport, @unchecked Sendable {
        let faulty: FaultInjectingTransport
        let live: StubTransport
        let calls = Locked(0)
        let failures: Int
        init(_ fault: Fault, failures: Int) {
            live = StubTransport { _ in TransportResponse.json(200, .object(["ok": true])) }
            faulty = FaultInjectingTransport(wrapping: live, seed: 5, rate: 1, faults: [fault])
            self.failures = failures
        }
        func send(_ request: TransportRequest) async throws -> TransportResponse {
            let n = calls.withLock { c in c += 1; return c }
            return n <= failures ? try await faulty.send(request) : try await live.send(request)
        }
        var attempts: Int { calls.withLock { $0 } }
    }

    @Test func recoversFrom429HonouringRetryAfter() async throws {
        let base = FailFirst(.rateLimited(retryAfter: 2), failures: 2)
        let log = SleepLog()
        let r = try await RetryingTransport(base, policy: Self.policy(), sleep: log.sleep).send(request("GET", "https://x/a"))
        #expect(r.status == 200)
        #expect(base.attempts == 3)
        #expect(log.values == [2, 2])
    }

    @Test func recoversFrom5xxAndResetWithBackoff() async throws {
        for fault in [Fault.serverError(status: 503), .connectionReset, .timeout] {
            let base = FailFirst(fault, failures: 3)
            let log = SleepLog()
            let r = try await RetryingTransport(base, policy: Self.policy(), sleep: log.sleep).send(request("DELETE", "https://x/a"))
            #expect(r.status == 200)
            #expect(base.attempts == 4)
            #expect(log.values == [0.05, 0.1, 0.2])  // baseDelay * 2^attempt * random(0.5)
        }
    }

    @Test func givesUpAfterMaxAttempts() async throws {
        let base = FailFirst(.serverError(status: 503), failures: 10)
        let r = try await RetryingTransport(base, policy: Self.policy(), sleep: SleepLog().sleep).send(request("GET", "https://x/a"))
        #expect(r.status == 503)
        #expect(base.attempts == 4)
        let reset = FailFirst(.connectionReset, failures: 10)
        let e = await thrownError { _ = try await RetryingTransport(reset, policy: Self.policy(), sleep: SleepLog().sleep).send(request("GET", "https://x/a")) }
        #expect(e?.kind == .transport)
        #expect(reset.attempts == 4)
    }

    @Test func postWithoutIdempotencyKeyIsNotRetried() async throws {
        let base = FailFirst(.rateLimited(retryAfter: 1), failures: 1)
        let log = SleepLog()
        let r = try await RetryingTransport(base, policy: Self.policy(), sleep: log.sleep)
            .send(request("POST", "https://x/classes/Memo", json: .object(["a": 1])))
        #expect(r.status == 429)
        #expect(base.attempts == 1)
        #expect(log.values.isEmpty)
        let truncated = FailFirst(.truncatedBody, failures: 1)
        let e = await thrownError {
            _ = try await RetryingTransport(truncated, policy: Self.policy(), sleep: SleepLog().sleep)
                .send(request("POST", "https://x/classes/Memo", json: .object(["a": 1])))
        }
        #expect(e?.kind == .transport)
        #expect(truncated.attempts == 1 && truncated.live.callCount == 1)  // created once, not twice
    }

    @Test func postWithIdempotencyKeyIsRetried() async throws {
        let base = FailFirst(.serverError(status: 502), failures: 1)
        let r = try await RetryingTransport(base, policy: Self.policy(), sleep: SleepLog().sleep)
            .send(request("POST", "https://x/classes/Memo", json: .object(["a": 1]), idempotencyKey: "k-1"))
        #expect(r.status == 200)
        #expect(base.attempts == 2)
    }

    @Test func seededFaultsThroughRetryAreDeterministic() async throws {
        // A whole run of GETs through retry over a seeded 30% fault rate: same seed, same number of attempts.
        func run(seed: UInt64) async throws -> (Int, [Int]) {
            let live = StubTransport { _ in TransportResponse.json(200, .object(["ok": true])) }
            let faulty = FaultInjectingTransport(wrapping: live, seed: seed, rate: 0.3,
                                                 faults: [.rateLimited(retryAfter: 0), .serverError(status: 503), .connectionReset])
            let retrying = RetryingTransport(faulty, policy: RetryPolicy(maxAttempts: 10, random: { 0 }), sleep: { _ in })
            var statuses: [Int] = []
            for i in 0..<30 { statuses.append(try await retrying.send(request("GET", "https://x/i/\(i)")).status.code) }
            return (faulty.callCount, statuses)
        }
        let a = try await run(seed: 2024), b = try await run(seed: 2024)
        #expect(a.0 == b.0 && a.0 > 30)
        #expect(a.1 == Array(repeating: 200, count: 30))
    }
}
