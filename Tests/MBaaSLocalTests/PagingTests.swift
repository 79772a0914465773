import Foundation
import MBaaSCore
import MBaaSTesting
import MBaaSLocal
import Testing

@Suite("Local sort, paging, count, selected keys")
struct PagingTests {
    /// 23 records: n = 0..<23, money = n % 5 (ties), title = "t<n>"; every third has no money.
    private func numbered(_ count: Int = 23) async throws -> LocalBackend {
        let b = try memoryBackend()
        var ops: [BatchOperation] = []
        for n in 0..<count {
            var fields: [String: Value] = ["n": .int(Int64(n)), "title": .string("t\(String(format: "%02d", n))")]
            if n % 3 != 0 { fields["money"] = .int(Int64(n % 5)) }
            ops.append(.create(Record(className: "Row", fields: fields)))
        }
        for start in stride(from: 0, to: ops.count, by: 500) {
            for r in try await b.batch(Array(ops[start..<min(start + 500, ops.count)])) { if case .failure(let e) = r { throw e } }
        }
        return b
    }

    @Test("a large page comes back whole and in order, keys selected; of two stored records that cannot be read, the first is named")
    func largePagesInOrder() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("rows.db").path
        let b = try fileBackend(path)
        let ids = (0..<1000).map { String(format: "r%04d", $0) }
        for start in stride(from: 0, to: ids.count, by: 500) {
            let ops = ids[start..<start + 500].enumerated().map { i, id in
                BatchOperation.create(Record(className: "Row", id: id, fields: ["n": .int(Int64(start + i)), "title": .string("t\(start + i)")]))
            }
            for r in try await b.batch(ops) { if case .failure(let e) = r { throw e } }
        }
        let page = try await b.queryPage(Query("Row", limit: 1000))
        #expect(page.records.map(\.id) == ids.map(Optional.some) && page.nextCursor == nil)
        #expect(page.records.map { $0["n"]?.intValue } == (0..<1000).map { Int64($0) })
        let selected = try await b.queryPage(Query("Row", limit: 900, keys: ["n"]))
        #expect(selected.records.count == 900 && selected.records.allSatisfy { $0.fields.keys.sorted() == ["n"] } && selected.nextCursor != nil)
        await b.close()

        try await executeBehindItsBack(path: path, """
            UPDATE records SET fields = '[1]' WHERE id = 'r0700';
            UPDATE records SET fields = '{"n":' WHERE id = 'r0300';
            """)
        let damaged = try fileBackend(path)
        let e = await expectError(.decoding) { try await damaged.queryPage(Query("Row", limit: 1000)) }
        #expect(e?.message.contains("Row/r0300 cannot be read") == true, "\(String(describing: e))")
        try await executeBehindItsBack(path: path, #"UPDATE records SET fields = '{"n":300}' WHERE id = 'r0300'"#)
        let second = await expectError(.decoding) { try await damaged.queryPage(Query("Row", limit: 1000)) }
        #expect(second?.message.contains("Row/r0700 cannot be read") == true && second?.message.contains("not a JSON object") == true,
                "\(String(describing: second))")
        await damaged.close()
    }

    @Test func multiKeySort() async throws {
        let b = try await numbered()
        let page = try await b.queryPage(Query("Row", sort: [SortKey("money", ascending: false), SortKey("title", ascending: false)], limit: 100))
        let rows = page.records.map { ($0["money"]?.intValue, $0["title"]!.stringValue!) }
        // Expected: money descending (missing last), then title descending.
        let expected = rows.sorted { a, b in
            switch (a.0, b.0) {
            case let (x?, y?) where x != y: return x > y
            case (nil, _?): return false
            case (_?, nil): return true
            default: return a.1 > b.1
            }
        }
        #expect(rows.map(\.1) == expected.map(\.1))
        #expect(rows.first?.0 == 4 && rows.last?.0 == nil)
        #expect(page.nextCursor == nil)

        let ascending = try await b.queryPage(Query("Row").sorted("money", "-n").limit(3))
        #expect(ascending.records.map { $0["n"]!.intValue! } == [21, 18, 15])   // missing money first, then n descending
    }

    @Test(arguments: [(23, 7, 4), (21, 7, 3), (5, 100, 1)])
    func sequenceFollowsCursorsOverPages(count: Int, pageSize: Int, pages: Int) async throws {
        let b = try await numbered(count)
        let query = Query("Row").sorted("-money", "title")
        let all = try await b.queryPage(query.limit(1000)).records
        #expect(all.count == count)

        let fetches = Collector<Int>()
        let sequence = RecordSequence(query: query, pageSize: pageSize) { q in
            let page = try await b.queryPage(q)
            fetches.append(page.records.count)
            return page
        }
        let streamed = try await sequence.collect()
        #expect(fetches.all.count == pages, "page sizes: \(fetches.all)")
        #expect(streamed.map(\.id) == all.map(\.id))
        #expect(Set(streamed.map(\.id)).count == count)
    }

    @Test func limitCapsTheSequenceAndSkipOffsetsTheFirstPage() async throws {
        let b = try await numbered()
        let ordered = try await b.queryPage(Query("Row").sorted("n").limit(1000)).records
        let limited = try await b.records(matching: Query("Row").sorted("n").limit(10), pageSize: 4).collect()
        #expect(limited.map(\.id) == ordered.prefix(10).map(\.id))
        let skipped = try await b.queryPage(Query("Row").sorted("n").skip(3).limit(5))
        #expect(skipped.records.map(\.id) == ordered[3..<8].map(\.id))
        let rest = try await b.queryPage(Query("Row", sort: [SortKey("n")], limit: 100, skip: 999, cursor: skipped.nextCursor))
        #expect(rest.records.map(\.id) == ordered[8...].map(\.id))                    // the cursor wins over skip
        #expect(try await b.queryPage(Query("Row", limit: 0)).records.isEmpty)
    }

    @Test func cursorsSurviveWritesBetweenPages() async throws {
        let b = try await numbered(10)
        let first = try await b.queryPage(Query("Row").sorted("n").limit(4))
        // Delete one already seen and insert one that sorts before the cursor: nothing repeats or goes missing.
        try await b.delete(className: "Row", id: first.records[0].id!)
        _ = try await b.create(Record(className: "Row", fields: ["n": -1]))
        let rest = try await b.records(matching: Query("Row", sort: [SortKey("n")], cursor: first.nextCursor), pageSize: 3).collect()
        #expect(rest.map { $0["n"]!.intValue! } == Array(4..<10))
    }

    @Test func cursorOfAnotherSortIsRejected() async throws {
        let b = try await numbered()
        let page = try await b.queryPage(Query("Row").sorted("n").limit(2))
        let cursor = try #require(page.nextCursor)
        await expectError(.invalidRequest) { try await b.queryPage(Query("Row", sort: [SortKey("title")], cursor: cursor)) }
        await expectError(.invalidRequest) { try await b.queryPage(Query("Row", cursor: "garbage")) }
    }

    @Test func countIgnoresPagingAndPageSizeIsCapped() async throws {
        let b = try await numbered()
        #expect(try await b.count(Query("Row")) == 23)
        #expect(try await b.count(Query("Row", predicate: Field("money") >= 3, limit: 1, skip: 2)) == 5)
        #expect(try await b.count(Query("Nothing")) == 0)
        let big = try await numbered(1005)
        let page = try await big.queryPage(Query("Row", limit: 5000))
        #expect(page.records.count == big.capabilities.maxPageSize)
        #expect(page.nextCursor != nil)
        #expect(try await big.records(matching: Query("Row", limit: 5000)).collect().count == 1005)
    }

    @Test func selectedKeysKeepMetadata() async throws {
        let b = try await numbered(3)
        let page = try await b.queryPage(Query("Row", sort: [SortKey("n")], keys: ["title"]))
        #expect(page.records.map(\.fields) == [["title": "t00"], ["title": "t01"], ["title": "t02"]])
        #expect(page.records.allSatisfy { $0.id != nil && $0.createdAt != nil && $0.version == "1" })
        let none = try await b.queryPage(Query("Row", keys: []))
        #expect(none.records.allSatisfy { $0.fields.isEmpty } && none.records.count == 3)
    }

    @Test func indexedKeysGiveTheSameAnswers() async throws {
        let b = try await numbered()
        let q = Query("Row", predicate: Field("money") >= 2, sort: [SortKey("money", ascending: false), SortKey("n")])
        let before = try await b.records(matching: q, pageSize: 4).collect()
        try await b.createIndex(className: "Row", key: "money")
        try await b.createIndex(className: "Row", key: "money")
        let after = try await b.records(matching: q, pageSize: 4).collect()
        #expect(after.map(\.id) == before.map(\.id))
        #expect(before.count == 9)
    }

    // MARK: Keyset pages bounded by the first sort key (with and without an index, NULLs included)

    /// The full order a query's pages must reproduce: `money` in `direction` (missing values first ascending, last
    /// descending, as SQLite orders NULLs), then insertion order.
    private func expectedOrder(_ records: [Record], descending: Bool) -> [String] {
        records.enumerated().sorted { a, b in
            let x = a.element["money"]?.intValue, y = b.element["money"]?.intValue
            switch (x, y) {
            case let (x?, y?) where x != y: return descending ? x > y : x < y
            case (nil, _?): return !descending
            case (_?, nil): return descending
            default: return a.offset < b.offset
            }
        }.map { $0.element["title"]!.stringValue! }
    }

    @Test(arguments: [(false, false), (false, true), (true, false), (true, true)])
    func pagesFollowTheSortAcrossNullsWithAndWithoutAnIndex(descending: Bool, indexed: Bool) async throws {
        let b = try await numbered(47)
        if indexed { try await b.createIndex(className: "Row", key: "money") }
        let all = try await b.records(matching: Query("Row"), pageSize: 100).collect()
        for pageSize in [1, 2, 3, 7, 50] {
            let query = Query("Row").sorted(descending ? "-money" : "money")
            var titles: [String] = []
            var pages = 0
            for try await r in b.records(matching: query, pageSize: pageSize) { titles.append(r["title"]!.stringValue!) }
            var iterator = b.records(matching: query, pageSize: pageSize).makeAsyncIterator()
            while try await iterator.next() != nil {}
            pages = iterator.pagesFetched
            #expect(titles == expectedOrder(all, descending: descending), "page size \(pageSize)")
            #expect(pages >= (47 + pageSize - 1) / pageSize && pages <= 47 / pageSize + 1, "page size \(pageSize): \(pages) pages")
        }
        await b.close()
    }

    @Test func aFilterThatExcludesMissingValuesPagesDescendingInOneRange() async throws {
        let b = try await numbered(47)
        try await b.createIndex(className: "Row", key: "money")
        let all = try await b.records(matching: Query("Row"), pageSize: 100).collect()
        let query = Query("Row", predicate: Field("money") >= 1, sort: [SortKey("money", ascending: false), SortKey("title")])
        let titles = try await b.records(matching: query, pageSize: 4).collect().map { $0["title"]!.stringValue! }
        let expected = all.filter { ($0["money"]?.intValue ?? -1) >= 1 }
            .sorted { a, c in
                let x = a["money"]!.intValue!, y = c["money"]!.intValue!
                return x != y ? x > y : a["title"]!.stringValue! < c["title"]!.stringValue!
            }
            .map { $0["title"]!.stringValue! }
        #expect(titles == expected)
        #expect(!titles.isEmpty)
        await b.close()
    }

    @Test func pointReadsSeeEveryCommittedWrite() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("points.db").path
        let a = try fileBackend(path), other = try fileBackend(path)
        let created = try await a.create(Record(className: "Memo", fields: ["n": 1]))
        let id = try #require(created.id)
        #expect(try await a.get(className: "Memo", id: id)["n"] == 1)
        // Written through another instance (another connection) after the first read: the next read sees it.
        _ = try await other.update(className: "Memo", id: id, RecordUpdate(changes: ["n": .set(2)]))
        #expect(try await a.get(className: "Memo", id: id)["n"] == 2)
        try await other.delete(className: "Memo", id: id, expectedVersion: nil)
        await expectError(.notFound) { try await a.get(className: "Memo", id: id) }
        await a.close()
        await other.close()
    }

    @Test("concurrent point reads on a file each get their own record while writes go on; none after close")
    func concurrentPointReads() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let b = try fileBackend(dir.appendingPathComponent("points.db").path)
        var ids: [String] = []
        for i in 0..<20 { ids.append(try #require(try await b.create(Record(className: "Memo", fields: ["i": .int(Int64(i)), "n": 0])).id)) }
        let known = ids
        let wrong = try await withThrowingTaskGroup(of: Int.self) { group in
            group.addTask {
                for n in 1...20 { _ = try await b.update(className: "Memo", id: known[n % 20], RecordUpdate(changes: ["n": .set(.int(Int64(n)))])) }
                return 0
            }
            for k in 0..<400 {
                group.addTask {
                    let record = try await b.get(className: "Memo", id: known[k % 20])
                    return record["i"] == .int(Int64(k % 20)) ? 0 : 1
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(wrong == 0)
        for i in 0..<20 {
            #expect(try await b.get(className: "Memo", id: known[i])["n"] == .int(i == 0 ? 20 : Int64(i)))
        }
        await b.close()
        do {
            _ = try await b.get(className: "Memo", id: known[0])
            Issue.record("a point read succeeded after close")
        } catch {}
    }
}
