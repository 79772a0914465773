import Foundation
import MBaaSCore
import Testing
@testable import MBaaSPocketBase

extension LiveTests {
@Suite("PocketBase live: records and queries")
struct LiveObjectTests {
    @Test("create, get, update, delete keep every neutral value type")
    func crudRoundTrip() async throws {
        let backend = try await Live.backend()
        let cls = "Memo_\(Live.runId())"
        let due = Date(timeIntervalSince1970: 1_711_886_096.789)
        let fields: [String: Value] = [
            "title": "it's \"quoted\" \\ é 日本", "money": 50, "ratio": 2.0, "half": 0.5, "done": true,
            "due": .date(due), "nothing": .null,
            "tags": ["a", 1, 2.0, ["nested": 3.0, "when": .date(due)]],
            "meta": ["k": "v", "n": 1],
            "blob": .bytes(Data([0, 1, 2, 255])),
            "owner": .pointer(Pointer(className: "User", objectId: "u1")),
            "place": .geoPoint(GeoPoint(latitude: 35.0, longitude: 139.76)),
            "empty": "",
        ]
        let created = try await backend.create(Record(className: cls, fields: fields))
        let id = try #require(created.id)
        #expect(created.createdAt != nil)
        #expect(created.updatedAt != nil)
        #expect(created.version == nil)
        #expect(created.fields == fields)

        let fetched = try await backend.get(className: cls, id: id)
        #expect(fetched.fields == fields)
        #expect(fetched.acl == nil)

        let updated = try await backend.update(
            className: cls, id: id, RecordUpdate(changes: ["money": .set(60.5), "title": .delete, "extra": .set(7)]))
        #expect(updated.fields["money"] == .double(60.5))
        #expect(updated.fields["title"] == nil)
        #expect(updated.fields["extra"] == .int(7))
        #expect(updated.fields["done"] == .bool(true))

        try await backend.delete(className: cls, id: id)
        await #expect(throws: MBaaSError.self) { try await backend.get(className: cls, id: id) }
        do {
            _ = try await backend.get(className: cls, id: id)
        } catch let e as MBaaSError {
            #expect(e.kind == .notFound)
            #expect(e.httpStatus == 404)
        }
    }

    @Test("a record created with an id keeps it; a second create with that id is a duplicate")
    func explicitIds() async throws {
        let backend = try await Live.backend()
        let cls = "Ids_\(Live.runId())"
        let r = try await backend.create(Record(className: cls, id: "NCMB-Obj_01", fields: ["n": 1]))
        #expect(r.id == "NCMB-Obj_01")
        do {
            _ = try await backend.create(Record(className: cls, id: "NCMB-Obj_01", fields: ["n": 2]))
            Issue.record("expected a duplicate error")
        } catch let e as MBaaSError {
            #expect(e.kind == .duplicate)
            #expect(e.vendorCode == "validation_pk_invalid")
        }
    }

    @Test("two clients adding fields to one collection keep each other's: a field list is patched from a definition read just now")
    func concurrentSchemaChanges() async throws {
        let first = try await Live.backend()
        let second = try await Live.backend()
        let cls = "Fields_\(Live.runId())"
        _ = try await first.create(Record(className: cls, fields: ["a": 1]))
        _ = try await second.create(Record(className: cls, fields: ["a": 2]))   // the second caches the definition
        let withB = try await first.create(Record(className: cls, fields: ["a": 3, "b": "kept"]))
        // The second's cached definition has no 'b': a field list built on it would drop 'b' and its values.
        _ = try await second.create(Record(className: cls, fields: ["a": 4, "c": true]))
        let fields = try #require(try await first.definition(cls, refresh: true)).fields.map(\.name)
        #expect(fields.contains("b") && fields.contains("c"), "\(fields)")
        #expect(try await first.get(className: cls, id: withB.id!)["b"] == "kept")
        // The users collection, shared by every client: plain sign-ups still work after both clients prepared it.
        let run = Live.runId()
        _ = try await first.signUp(username: "f\(run)", password: "pw-12345678", email: nil, fields: [:])
        _ = try await second.signUp(username: "s\(run)", password: "pw-12345678", email: nil, fields: [:])
    }

    @Test("collections the adapter creates carry the case-insensitive id index; one made without it gains it on the next write")
    func idIndex() async throws {
        let backend = try await Live.backend()
        let cls = "IdIdx_\(Live.runId())"
        _ = try await backend.create(Record(className: cls, id: "MixedCase_1", fields: ["n": 1]))
        let created = try #require(try await backend.definition(cls, refresh: true))
        #expect(created.indexes == [PocketBaseCollection.idCaseInsensitiveIndex(collection: cls)])
        #expect(created.hasCaseInsensitiveIdIndex)
        // As an earlier version left it: no index. A new client's next write puts it back.
        _ = try await backend.sendJSON(.patch, "/api/collections/\(created.id)", json: .object(["indexes": .array([])]), as: .superuser)
        #expect(try await backend.definition(cls, refresh: true)?.hasCaseInsensitiveIdIndex == false)
        let again = try await Live.backend()
        _ = try await again.create(Record(className: cls, id: "MixedCase_2", fields: ["n": 2]))
        #expect(try await again.definition(cls, refresh: true)?.hasCaseInsensitiveIdIndex == true)
        // PocketBase still refuses an id that differs from an existing one only in case [sdk: core/field_text.go].
        do {
            _ = try await again.create(Record(className: cls, id: "mixedcase_1", fields: ["n": 3]))
            Issue.record("expected a duplicate error")
        } catch let e as MBaaSError {
            #expect(e.kind == .duplicate)
        }
        #expect(try await again.count(Query(cls)) == 2)
    }

    @Test("type conflicts, unsupported operations and reserved names are errors")
    func errors() async throws {
        let backend = try await Live.backend()
        let cls = "Err_\(Live.runId())"
        let r = try await backend.create(Record(className: cls, fields: ["money": 5]))
        await #expect(throws: MBaaSError.self) {
            _ = try await backend.create(Record(className: cls, fields: ["money": "five"]))
        }
        do {
            _ = try await backend.update(className: cls, id: r.id!, RecordUpdate(changes: ["money": .increment(1)]))
            Issue.record("increment should be unsupported")
        } catch let e as MBaaSError { #expect(e.kind == .unsupported) }
        do {
            _ = try await backend.update(className: cls, id: r.id!, RecordUpdate(changes: ["money": .set(1)], expectedVersion: "x"))
            Issue.record("expectedVersion should be unsupported")
        } catch let e as MBaaSError { #expect(e.kind == .unsupported) }
        do {
            _ = try await backend.create(Record(className: cls, fields: ["big": .int(Int64.max)]))
            Issue.record("an int beyond 2^53 should be refused")
        } catch let e as MBaaSError { #expect(e.kind == .unsupported) }
        do {
            _ = try await backend.create(Record(className: cls, fields: ["x__type": 1]))
            Issue.record("a reserved name should be rejected")
        } catch let e as MBaaSError { #expect(e.kind == .invalidRequest) }
    }

    @Test("queries: every supported operator, sort, paging, keys, count")
    func queries() async throws {
        let backend = try await Live.backend()
        let cls = "Q_\(Live.runId())"
        let base = Date(timeIntervalSince1970: 1_700_000_000)
        var created: [Record] = []
        for i in 0..<12 {
            var f: [String: Value] = ["n": .int(Int64(i)), "title": .string(i % 2 == 0 ? "even \(i)" : "Odd'\(i)"),
                                      "when": .date(base.addingTimeInterval(Double(i) * 60)),
                                      "meta": ["rank": .int(Int64(i % 3))]]
            if i % 4 == 0 { f["note"] = .string("n\\\(i)") }
            if i == 11 { f["n"] = 11.5 }
            created.append(try await backend.create(Record(className: cls, fields: f)))
        }
        func ids(_ q: Query) async throws -> [String] { try await backend.records(matching: q).collect().map { $0.id! } }
        func n(_ q: Query) async throws -> [Value] {
            try await backend.records(matching: q.sorted("n")).collect().map { $0.fields["n"] ?? .null }
        }
        let q = Query(cls)
        #expect(try await n(q.filter(Field("n") >= 10)) == [10, 11.5])
        #expect(try await n(q.filter(Field("n") < 2)) == [0, 1])
        #expect(try await n(q.filter(Field("n") == 11.5)) == [11.5])
        #expect(try await n(q.filter(Field("n") != 3)).count == 11)
        #expect(try await n(q.filter(Field("note").exists())) == [0, 4, 8])
        #expect(try await n(q.filter(Field("note").exists(false))).count == 9)
        #expect(try await n(q.filter(Field("note") == "n\\4")) == [4])
        #expect(try await n(q.filter(Field("note") != "n\\4")).count == 11)  // absent notes match ne
        #expect(try await n(q.filter(Field("title") == "Odd'3")) == [3])
        #expect(try await n(q.filter(Field("title").hasPrefix("Odd'1"))) == [1, 11.5])
        #expect(try await n(q.filter(Field("title").hasPrefix("odd"))).isEmpty)  // case-sensitive
        #expect(try await n(q.filter(Field("n").isIn([1, 2, 99]))) == [1, 2])
        #expect(try await n(q.filter(Field("n").notIn([1, 2])).filter(Field("n") < 5)) == [0, 3, 4])
        #expect(try await n(q.filter(Field("when") > .date(base.addingTimeInterval(600)))) == [11.5])
        #expect(try await n(q.filter(Field("meta.rank") == 2)) == [2, 5, 8, 11.5])
        #expect(try await n(q.filter(.or([Field("n") == 0, Field("n") == 7])))  == [0, 7])
        #expect(try await n(q.filter(.not(Field("n") >= 2))) == [0, 1])
        #expect(try await n(q.filter(Field("missingField") == 1)).isEmpty)
        #expect(try await n(q.filter(Field("missingField") != 1)).count == 12)
        #expect(try await n(q.filter(Field("n") == "5")).isEmpty)  // other types never match

        // sort by several keys, paging with a cursor, skip not aligned with the page size
        let sorted = try await backend.records(matching: q.sorted("meta.rank", "-n"), pageSize: 5).collect()
        #expect(sorted.count == 12)
        #expect(sorted.first?.fields["n"] == 9)
        let page = try await backend.queryPage(q.sorted("n").skip(3).limit(4))
        #expect(page.records.map { $0.fields["n"]! } == [3, 4, 5, 6])
        #expect(page.nextCursor == "7")
        let next = try await backend.queryPage(Query(cls, sort: [SortKey("n")], limit: 4, cursor: page.nextCursor))
        #expect(next.records.map { $0.fields["n"]! } == [7, 8, 9, 10])
        let unaligned = try await backend.queryPage(q.sorted("n").skip(999).limit(2))
        #expect(unaligned.records.isEmpty)

        // selected keys
        let selected = try await backend.queryPage(q.filter(Field("n") == 4).select(["title"]))
        #expect(selected.records.first?.fields == ["title": "even 4"])

        #expect(try await backend.count(q) == 12)
        #expect(try await backend.count(q.filter(Field("n") > 5).limit(1)) == 6)
        #expect(try await backend.count(Query("NoSuchClass_\(Live.runId())")) == 0)
        #expect(try await backend.queryPage(Query("NoSuchClass_\(Live.runId())")).records.isEmpty)
        #expect(created.count == 12)

        await #expect(throws: MBaaSError.self) { _ = try await backend.queryPage(q.filter(Field("title").matches("^O"))) }
    }

    @Test("batch: atomic, results in order")
    func batch() async throws {
        let backend = try await Live.backend()
        let cls = "B_\(Live.runId())"
        let a = try await backend.create(Record(className: cls, fields: ["n": 1]))
        let results = try await backend.batch([
            .create(Record(className: cls, fields: ["n": 2])),
            .update(className: cls, id: a.id!, RecordUpdate.set(["n": 10])),
            .delete(className: cls, id: a.id!),
        ])
        #expect(results.count == 3)
        guard case .success(let made) = results[0], case .success(let changed) = results[1] else {
            Issue.record("batch failed: \(results)")
            return
        }
        #expect(made.fields["n"] == 2)
        #expect(changed.fields["n"] == 10)
        #expect(try await backend.count(Query(cls)) == 1)

        let failed = try await backend.batch([
            .create(Record(className: cls, fields: ["n": 3])),
            .delete(className: cls, id: "doesnotexist123"),
        ])
        #expect(failed.count == 2)
        for r in failed {
            guard case .failure(let e) = r else { Issue.record("expected failures"); continue }
            #expect(e.kind == .notFound)
        }
        #expect(try await backend.count(Query(cls)) == 1)  // rolled back
    }
}
}
