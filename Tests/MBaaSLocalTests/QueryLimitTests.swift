import Foundation
import MBaaSCore
import MBaaSLocal
import Testing

/// Query-complexity limits and bounded regular expressions (issue 11): clear `invalidRequest` errors before
/// SQLite's own limits, and queries right at the limits still run.
@Suite("Local query limits")
struct QueryLimitTests {
    func backend() async throws -> LocalBackend {
        let b = try memoryBackend()
        for i in 0..<5 { _ = try await b.create(Record(className: "T", fields: ["k": .int(Int64(i)), "s": "x"])) }
        return b
    }

    func ors(_ n: Int) -> QueryPredicate { .or((0..<n).map { .compare("k", .eq, .int(Int64($0))) }) }

    @Test func tooManyOrClausesAreInvalidRequests() async throws {
        let b = try await backend()
        #expect(try await b.count(Query("T", predicate: ors(500))) == 5)             // at the limit: runs
        let e = await expectError(.invalidRequest) { try await b.queryPage(Query("T", predicate: self.ors(990))) }
        #expect(e?.message.contains("990 clauses; at most 500") == true)
    }

    @Test func deepNestingIsAnInvalidRequest() async throws {
        let b = try await backend()
        func nested(_ depth: Int) -> QueryPredicate {
            var p = QueryPredicate.compare("k", .eq, 1)
            for i in 0..<depth { p = i % 2 == 0 ? .or([p, .compare("k", .eq, 2)]) : .and([p, .exists("s", true)]) }
            return p
        }
        #expect(try await b.count(Query("T", predicate: nested(16))) == 2)           // at the limit: runs
        func notted(_ n: Int) -> QueryPredicate {
            var p = QueryPredicate.compare("k", .eq, 1)
            for _ in 0..<n { p = .not(p) }
            return p
        }
        #expect(try await b.count(Query("T", predicate: notted(8))) == 1)            // 8 × 2 levels: runs
        await expectError(.invalidRequest) { try await b.count(Query("T", predicate: notted(9))) }
        // Nested to the right (the parser's worst case) at the limit.
        var right = QueryPredicate.compare("k", .eq, 1)
        for i in 0..<16 { right = i % 2 == 0 ? .or([.compare("k", .eq, 2), right]) : .and([.exists("s", true), right]) }
        #expect(try await b.count(Query("T", predicate: right)) == 2)
        let e = await expectError(.invalidRequest) { try await b.queryPage(Query("T", predicate: nested(200))) }
        #expect(e?.message.contains("nested more than 16") == true)
        // The widest tree the depth estimate allows still compiles in SQLite.
        let wide = QueryPredicate.or([ors(290), .and((0..<290).map { _ in .exists("s", true) })])
        #expect(try await b.count(Query("T", predicate: wide)) == 5)
    }

    @Test func tooManySortKeysAreAnInvalidRequest() async throws {
        let b = try await backend()
        let ok = Query("T", sort: (0..<32).map { SortKey("k\($0)") })
        #expect(try await b.queryPage(ok).records.count == 5)
        let e = await expectError(.invalidRequest) {
            try await b.queryPage(Query("T", sort: (0..<2000).map { SortKey("k\($0)") }))
        }
        #expect(e?.message.contains("2000 sort keys; at most 32") == true)
    }

    @Test func catastrophicRegexIsStopped() async throws {
        let b = try memoryBackend()
        _ = try await b.create(Record(className: "T", fields: ["s": .string(String(repeating: "a", count: 46))]))
        let e = await expectError(.invalidRequest) {
            try await b.queryPage(Query("T", predicate: .regex("s", "(a|a)+c|!", options: "")))
        }
        // The match budget stopped it (an unbounded match takes 34 s of CPU and ends without this error). No wall-clock
        // bound: CI's full parallel run on two cores once took 34 s to get here.
        #expect(e?.message.contains("took more than 250 ms") == true, "\(String(describing: e))")
        // Ordinary patterns still match.
        #expect(try await b.count(Query("T", predicate: .regex("s", "^a+$", options: ""))) == 1)
    }

    @Test func oneQueryHasOneRegexBudgetForAllItsValues() async throws {
        let b = try memoryBackend()
        // 1000 values of 17 'a's: each stays far under the per-value bound (about 16 ms), together they take about
        // 16 s of CPU unbounded. The query's budget stops them, whatever the machine's speed (no wall-clock assertion).
        for _ in 0..<10 {
            _ = try await b.batch((0..<100).map { _ in .create(Record(className: "T", fields: ["s": .string(String(repeating: "a", count: 17))])) })
        }
        let runs: [@Sendable () async throws -> Void] = [
            { _ = try await b.queryPage(Query("T", predicate: .regex("s", "(a|a)+c|!", options: ""))) },
            { _ = try await b.count(Query("T", predicate: .regex("s", "(a|a)+c|!", options: ""))) },
        ]
        for run in runs {
            let e = await expectError(.invalidRequest) { try await run() }
            #expect(e?.message.contains("used up this query's matching budget of 1000 ms") == true, "\(String(describing: e))")
        }
        // The budget is the query's: the next query starts with a whole one.
        #expect(try await b.count(Query("T", predicate: .regex("s", "^a+$", options: ""))) == 1000)
    }
}
