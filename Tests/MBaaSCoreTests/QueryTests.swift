import Foundation
import Testing
@testable import MBaaSCore

@Suite("Query AST and neutral JSON")
struct QueryTests {
    static let date = ISO8601.parse("2024-01-01T00:00:00.000Z")!

    /// Predicates built with the fluent API, each of which must survive print → parse unchanged.
    static let predicates: [QueryPredicate] = [
        Field("title") == "rent",
        Field("title") != "rent",
        Field("money") < 10, Field("money") <= 10.5, Field("money") > 0, Field("money") >= 50,
        Field("due") < .date(date),
        Field("tag").isIn(["a", "b"]), Field("tag").notIn([1, 2]),
        Field("note").exists(), Field("note").exists(false),
        Field("title").hasPrefix("re"), Field("title").matches("^r.*t$", options: "i"), Field("title").matches("x"),
        Field("tags").containsAll(["a", "b"]),
        Field("money") >= 10 && Field("money") < 50,
        Field("a") == 1 && Field("b") == 2,
        Field("a") == 1 || Field("b") == 2,
        !(Field("a") == 1),
        (Field("a") == 1 || Field("b") == 2) && (Field("c") == 3 || Field("d") == 4),
        .and([Field("a") == 1, Field("a") == 2]),
        .and([Field("a") == 1]),
        .and([.and([Field("a") == 1, Field("b") == 2]), Field("c") == 3]),
        Field("obj") == .object(["k": 1]),
        Field("meta.level") >= 3 && !(Field("x").isIn([1])) && (Field("y") == nil || Field("z").exists()),
        .and([Field("t").matches("a"), Field("t").hasPrefix("b")]),
    ]

    @Test(arguments: predicates)
    func printThenParseGivesTheSameAST(predicate: QueryPredicate) throws {
        let text = predicate.json.printed()
        let back = try QueryPredicate(json: JSON.parse(text))
        #expect(back == predicate, "round trip changed the AST via \(text)")
    }

    @Test func parsesTheDocumentedSyntax() throws {
        let p = try QueryPredicate(json: JSON.parse(#"""
        {"money":{"$gte":50,"$lt":100},"title":"rent",
         "$or":[{"tag":{"$in":["a","b"]}},{"note":{"$exists":false}}],
         "due":{"$lt":{"__type":"Date","iso":"2024-01-01T00:00:00.000Z"}},
         "name":{"$regex":"^a","$options":"i"},"tags":{"$all":["x"]},"code":{"$prefix":"AB"},
         "$not":{"gone":true}}
        """#))
        #expect(p == .and([
            Field("money") >= 50, Field("money") < 100, Field("title") == "rent",
            Field("tag").isIn(["a", "b"]) || Field("note").exists(false),
            Field("due") < .date(Self.date),
            Field("name").matches("^a", options: "i"), Field("tags").containsAll(["x"]), Field("code").hasPrefix("AB"),
            !(Field("gone") == true),
        ]))
        #expect(p.operators.isSuperset(of: [.gte, .lt, .eq, .or, .in, .exists, .regex, .containsAll, .prefix, .not, .and]))
        #expect(p.keys == ["money", "title", "tag", "note", "due", "name", "tags", "code", "gone"])
    }

    @Test func printsReadableMergedObjects() {
        #expect((Field("money") >= 10 && Field("money") < 50).json.printed() == #"{"money":{"$gte":10,"$lt":50}}"#)
        #expect((Field("a") == 1 && Field("b") == "x").json.printed() == #"{"a":1,"b":"x"}"#)
        #expect((Field("a") == 1 && Field("a") == 2).json.printed() == #"{"$and":[{"a":1},{"a":2}]}"#)
    }

    @Test(arguments: [
        ("[]", "where: a query must be a JSON object"),
        ("{}", "where: empty query object"),
        (#"{"money":{"$gtx":1}}"#, "where.money.$gtx: unknown operator '$gtx'"),
        (#"{"$nor":[]}"#, "where.$nor: unknown top-level operator '$nor'"),
        (#"{"$or":[]}"#, "where.$or: '$or' takes a non-empty array"),
        (#"{"$and":{"a":1}}"#, "where.$and: '$and' takes a non-empty array"),
        (#"{"$or":[{"a":1},3]}"#, "where.$or[1]: a query must be a JSON object"),
        (#"{"tag":{"$in":"a"}}"#, "where.tag.$in: '$in' takes an array"),
        (#"{"tag":{"$nin":1}}"#, "where.tag.$nin: '$nin' takes an array"),
        (#"{"tag":{"$all":{}}}"#, "where.tag.$all: '$all' takes an array"),
        (#"{"note":{"$exists":"yes"}}"#, "where.note.$exists: '$exists' takes true or false"),
        (#"{"t":{"$regex":1}}"#, "where.t.$regex: '$regex' takes a string"),
        (#"{"t":{"$regex":"a","$options":"q"}}"#, "where.t.$options: takes a string of i, m, s, x"),
        (#"{"t":{"$options":"i"}}"#, "where.t.$options: '$options' without '$regex'"),
        (#"{"t":{"$prefix":3}}"#, "where.t.$prefix: '$prefix' takes a string"),
        (#"{"m":{"$gt":[1]}}"#, "where.m.$gt: '$gt' cannot compare with an array"),
        (#"{"m":{"$gt":1,"x":2}}"#, "where.m: 'x' mixed with operators"),
        (#"{"d":{"$lt":{"__type":"Date"}}}"#, "where.d.$lt: Date needs a string 'iso'"),
        (#"{"":1}"#, "where: empty field name"),
        (#"{"$not":[1]}"#, "where.$not: a query must be a JSON object"),
    ])
    func malformedQueriesNameTheOperatorAndPath(text: String, message: String) throws {
        let json = try JSON.parse(text)
        #expect {
            try QueryPredicate(json: json)
        } throws: { error in
            guard let e = error as? MBaaSError else { return false }
            return e.kind == .invalidRequest && e.message.contains(message)
        }
    }

    @Test func whereTextThatIsNotJSONIsAnInvalidRequest() {
        #expect { try Query.parse(className: "Memo", whereJSON: "{money:1}") } throws: {
            ($0 as? MBaaSError)?.message.hasPrefix("where: invalid JSON") == true
        }
    }

    @Test func builderAndSortKeys() {
        let q = Query("Memo").filter(Field("money") >= 50).filter(Field("title").hasPrefix("a"))
            .sorted("-money", "title").limit(10).skip(5).select(["title"])
        #expect(q.predicate == .and([Field("money") >= 50, Field("title").hasPrefix("a")]))
        #expect(q.sort == [SortKey("money", ascending: false), SortKey("title")])
        #expect(SortKey.list("-money, title,,+x").map(\.description) == ["-money", "title", "x"])
        #expect(q.limit == 10 && q.skip == 5 && q.keys == ["title"])
    }

    @Test func validationNamesTheMissingCapability() {
        let caps = Capabilities(features: [.objects], operators: [.eq, .and], notes: [.skip: "pages by key only"])
        #expect {
            try Query("M", predicate: Field("a").matches("x")).validate(against: caps, backend: "kii")
        } throws: { ($0 as? MBaaSError)?.message == "kii does not support the query operator 'regex'" }
        #expect {
            try Query("M", skip: 3).validate(against: caps, backend: "kii")
        } throws: { ($0 as? MBaaSError)?.message == "kii does not support skip: pages by key only" }
        #expect(throws: MBaaSError.self) { try Query("M").sorted("a", "b").validate(against: caps, backend: "x") }
        #expect(throws: MBaaSError.self) { try Query("M", limit: -1).validate(against: caps, backend: "x") }
        #expect(throws: Never.self) { try Query("M", predicate: Field("a") == 1).validate(against: caps, backend: "x") }
        #expect(caps.missing([.objects, .skip]) == "missing capability 'skip': pages by key only")
        #expect(caps.missing([.objects]) == nil)
        #expect(caps.has(.operator(.eq)) && !caps.has(.operator(.regex)))
    }
}

@Suite("Paging as AsyncSequence")
struct RecordSequenceTests {
    actor Log { var requests: [Query] = []; func add(_ q: Query) { requests.append(q) } }

    /// A fake store of `n` records paged by an offset cursor.
    static func fetcher(total: Int, log: Log) -> RecordSequence.Fetch {
        { query in
            await log.add(query)
            let start = query.cursor.flatMap(Int.init) ?? query.skip ?? 0
            let size = query.limit ?? 100
            let end = min(total, start + size)
            let records = (start..<max(start, end)).map { Record(className: "M", id: String($0)) }
            return RecordPage(records: records, nextCursor: end < total ? String(end) : nil)
        }
    }

    @Test func fetchesLazilyPageByPage() async throws {
        let log = Log()
        let seq = RecordSequence(query: Query("M"), pageSize: 3, fetch: Self.fetcher(total: 8, log: log))
        var iterator = seq.makeAsyncIterator()
        #expect(await log.requests.isEmpty, "nothing is fetched before iteration")
        _ = try await iterator.next()
        #expect(await log.requests.count == 1)
        var ids = ["0"]
        while let r = try await iterator.next() { ids.append(r.id!) }
        #expect(ids == (0..<8).map(String.init))
        #expect(await log.requests.map(\.cursor) == [nil, "3", "6"])
        #expect(await log.requests.allSatisfy { $0.limit == 3 })
    }

    @Test func limitCapsTheTotalAndTrimsTheLastRequest() async throws {
        let log = Log()
        let seq = RecordSequence(query: Query("M", limit: 5), pageSize: 3, fetch: Self.fetcher(total: 100, log: log))
        let all = try await seq.collect()
        #expect(all.count == 5)
        #expect(await log.requests.map(\.limit) == [3, 2])
    }

    @Test func stopsWhenCancelled() async throws {
        let log = Log()
        let seq = RecordSequence(query: Query("M"), pageSize: 2, fetch: Self.fetcher(total: 100, log: log))
        let task = Task {
            var n = 0
            for try await _ in seq {
                n += 1
                if n == 2 { withUnsafeCurrentTask { $0?.cancel() } }
            }
            return n
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(await log.requests.count == 1)
    }

    @Test("reading ahead requests the next page while the current one is handled; same records, requests and limits")
    func readingAhead() async throws {
        let log = Log()
        let seq = RecordSequence(query: Query("M"), pageSize: 3, fetch: Self.fetcher(total: 8, log: log)).readingAhead()
        #expect(seq.readsAhead)
        var iterator = seq.makeAsyncIterator()
        #expect(await log.requests.isEmpty, "nothing is fetched before iteration")
        #expect(try await iterator.next()?.id == "0")
        // Page 2 is requested without the caller asking for a record of it.
        var waited = 0
        while await log.requests.count < 2, waited < 500 {
            try await Task.sleep(for: .milliseconds(10))
            waited += 1
        }
        #expect(await log.requests.map(\.cursor) == [nil, "3"])
        var ids = ["0"]
        while let r = try await iterator.next() { ids.append(r.id!) }
        #expect(ids == (0..<8).map(String.init))
        #expect(await log.requests.map(\.cursor) == [nil, "3", "6"], "no request past the last page")
        let limited = try await RecordSequence(query: Query("M", limit: 5), pageSize: 3, fetch: Self.fetcher(total: 100, log: Log())).readingAhead().collect()
        #expect(limited.map(\.id!) == ["0", "1", "2", "3", "4"])
    }

    @Test("a page read ahead that fails fails the iteration when it is reached, after every record before it")
    func readingAheadFailsInOrder() async throws {
        let inner = Self.fetcher(total: 100, log: Log())
        let seq = RecordSequence(query: Query("M"), pageSize: 4) { query in
            if query.cursor == "8" { throw MBaaSError(.unavailable, "page 3 failed") }
            return try await inner(query)
        }.readingAhead()
        var seen: [String] = []
        let error = await #expect(throws: MBaaSError.self) { for try await r in seq { seen.append(r.id!) } }
        #expect(error?.message == "page 3 failed")
        #expect(seen == (0..<8).map(String.init))
    }
}
