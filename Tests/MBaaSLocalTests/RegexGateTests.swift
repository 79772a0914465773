import Foundation
import MBaaSCore
import Testing
@testable import MBaaSLocal

/// Queries with a `regex` are admitted a few at a time, before they take a connection (#33.9: eight of them held an
/// in-memory store's one connection for 8 s in front of every other request).
@Suite("Local regex gate")
struct RegexGateTests {
    /// Counts the bodies running at once.
    final class Meter: @unchecked Sendable {
        private let lock = NSLock()
        private var now = 0
        private(set) var most = 0
        func enter() { lock.withLock { now += 1; most = max(most, now) } }
        func leave() { lock.withLock { now -= 1 } }
    }

    @Test("at most the limit run at once; every one runs, in turn, also when one fails")
    func admitsUpToTheLimit() async throws {
        for limit in [1, 2] {
            let gate = LocalRegexGate()
            let meter = Meter()
            let done = try await withThrowingTaskGroup(of: Int.self) { group in
                for i in 0..<6 {
                    group.addTask {
                        do {
                            return try await gate.run(limit: limit) { () async throws -> Int in
                                meter.enter()
                                defer { meter.leave() }
                                try await Task.sleep(for: .milliseconds(30))
                                if i == 2 { throw MBaaSError(.invalidRequest, "budget spent") }
                                return 1
                            }
                        } catch { return 0 }
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(done == 5)
            #expect(meter.most == limit, "limit \(limit): \(meter.most) at once")
        }
    }

    @Test("a query cancelled while it waits leaves at once with CancellationError and takes no slot")
    func cancelledWhileWaiting() async throws {
        let gate = LocalRegexGate()
        let (holding, hold) = AsyncStream<Void>.makeStream()
        let (entered, enter) = AsyncStream<Void>.makeStream()
        let first = Task {
            try await gate.run(limit: 1) { () async throws -> Int in
                enter.yield()
                for await _ in holding { break }   // holds the slot until the test lets go
                return 1
            }
        }
        for await _ in entered { break }
        let second = Task { try await gate.run(limit: 1) { () async throws -> Int in 2 } }
        try await Task.sleep(for: .milliseconds(50))   // let it queue (if it has not yet, it is turned away on entry)
        second.cancel()
        let outcome = await second.result
        #expect(throws: CancellationError.self) { try outcome.get() }
        hold.yield()
        #expect(try await first.value == 1)
        // The slot came back: the next query runs.
        #expect(try await gate.run(limit: 1) { () async throws -> Int in 3 } == 3)
    }

    @Test("a query without a regex does not wait behind regex queries on an in-memory store")
    func plainQueriesPass() async throws {
        let b = try LocalBackend.inMemory()
        _ = try await b.create(Record(className: "T", fields: ["s": .string(String(repeating: "a", count: 26))]))
        // Four regex queries spending their budget; the plain one starts after them and must not queue behind all
        // four: it ends before the last of them (ordering only, no wall-clock bound).
        let order = OrderLog()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    _ = try? await b.queryPage(Query("T", predicate: .regex("s", "(a|a)+c|!", options: "")))
                    order.append("regex")
                }
            }
            try await Task.sleep(for: .milliseconds(100))
            group.addTask {
                _ = try await b.queryPage(Query("T", limit: 1))
                order.append("plain")
            }
            try await group.waitForAll()
        }
        #expect(order.items.count == 5)
        #expect(order.items.last == "regex", "the plain query waited behind every regex query: \(order.items)")
    }

    final class OrderLog: @unchecked Sendable {
        private let lock = NSLock()
        private var list: [String] = []
        func append(_ s: String) { lock.withLock { list.append(s) } }
        var items: [String] { lock.withLock { list } }
    }
}
