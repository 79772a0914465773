import Foundation
import MBaaSCore
import MBaaSLocal
import Testing

@Suite("Local records: CRUD, validation, versions, batches")
struct ObjectTests {
    @Test func createGetUpdateDelete() async throws {
        let b = try memoryBackend()
        let created = try await b.create(Record(className: "Memo", fields: ["title": "rent", "money": 50]))
        let id = try #require(created.id)
        #expect(id.count == 16 && id.allSatisfy { $0.isLetter || $0.isNumber })
        #expect(created.version == "1")
        #expect(created.createdAt != nil && created.createdAt == created.updatedAt)

        let got = try await b.get(className: "Memo", id: id)
        #expect(got == created)

        let updated = try await b.update(className: "Memo", id: id, RecordUpdate(changes: [
            "money": .increment(5), "title": .delete, "tags": .add(["a", "b"]),
        ]))
        #expect(updated.fields == ["money": 55, "tags": ["a", "b"]])
        #expect(updated.version == "2")
        #expect(try await b.get(className: "Memo", id: id) == updated)

        try await b.delete(className: "Memo", id: id)
        await expectError(.notFound) { try await b.get(className: "Memo", id: id) }
        await expectError(.notFound) { try await b.delete(className: "Memo", id: id) }
        await expectError(.notFound) { try await b.update(className: "Memo", id: id, .set(["a": 1])) }
    }
}

extension ObjectTests {
    @Test func invalidInputIsRejectedAndNothingIsWritten() async throws {
        let b = try memoryBackend()
        await expectError(.invalidRequest) { try await b.create(Record(className: "1Memo")) }
        await expectError(.invalidRequest) { try await b.create(Record(className: "Memo-x")) }
        await expectError(.invalidRequest) { try await b.create(Record(className: String(repeating: "a", count: 65))) }
        let reserved = await expectError(.invalidRequest) { try await b.create(Record(className: "Memo", fields: ["createdAt": 1])) }
        #expect(reserved?.message.contains("reserved") == true)
        await expectError(.invalidRequest) { try await b.create(Record(className: "Memo", fields: ["a.b": 1])) }
        await expectError(.invalidRequest) { try await b.create(Record(className: "Memo", fields: ["x": .double(.nan)])) }
        await expectError(.invalidRequest) { try await b.create(Record(className: "Memo", fields: ["x": ["__type": "Date"]])) }
        await expectError(.invalidRequest) { try await b.create(Record(className: "Memo", id: "bad id")) }
        #expect(try await b.count(Query("Memo")) == 0)

        let kept = try await b.create(Record(className: "Memo", id: "my-id_1", fields: ["title": "x"]))
        #expect(kept.id == "my-id_1")
        await expectError(.duplicate) { try await b.create(Record(className: "Memo", id: "my-id_1")) }
        await expectError(.invalidRequest) { try await b.update(className: "Memo", id: "my-id_1", .set(["version": 3])) }
        await expectError(.invalidRequest) {
            try await b.update(className: "Memo", id: "my-id_1", RecordUpdate(changes: ["title": .increment(1)]))
        }
        #expect(try await b.get(className: "Memo", id: "my-id_1") == kept)
    }

    @Test func fieldOperations() async throws {
        let b = try memoryBackend()
        let r = try await b.create(Record(className: "Memo", fields: ["n": 1, "x": 1.5, "tags": ["a", "b", "a"]]))
        let u = try await b.update(className: "Memo", id: r.id!, RecordUpdate(changes: [
            "n": .increment(2), "x": .increment(1), "fresh": .increment(-3),
            "tags": .remove(["a"]), "u": .addUnique([1, 2]), "more": .add(["z"]),
        ]))
        #expect(u.fields == ["n": 3, "x": 2.5, "fresh": -3, "tags": ["b"], "u": [1, 2], "more": ["z"]])
        let v = try await b.update(className: "Memo", id: r.id!, RecordUpdate(changes: ["u": .addUnique([2.0, 3]), "tags": .add(["b"])]))
        #expect(v["u"] == [1, 2, 3] && v["tags"] == ["b", "b"])
    }

    @Test func concurrentIncrementsAreAtomic() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("n.db").path
        let a = try fileBackend(path), c = try fileBackend(path)
        let r = try await a.create(Record(className: "Counter", fields: ["n": 0]))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<40 {
                let backend = i % 2 == 0 ? a : c
                group.addTask { _ = try await backend.update(className: "Counter", id: r.id!, RecordUpdate(changes: ["n": .increment(1)])) }
            }
            try await group.waitForAll()
        }
        let final = try await c.get(className: "Counter", id: r.id!)
        #expect(final["n"] == 40 && final.version == "41")
    }

    @Test func optimisticLocking() async throws {
        let b = try memoryBackend()
        let r = try await b.create(Record(className: "Memo", fields: ["money": 1]))
        let u = try await b.update(className: "Memo", id: r.id!, .set(["money": 2], expectedVersion: "1"))
        #expect(u.version == "2")
        let stale = await expectError(.conflict) {
            try await b.update(className: "Memo", id: r.id!, .set(["money": 3], expectedVersion: "1"))
        }
        #expect(stale?.message.contains("version is 2") == true)
        await expectError(.conflict) { try await b.delete(className: "Memo", id: r.id!, expectedVersion: "1") }
        #expect(try await b.get(className: "Memo", id: r.id!) == u)
        try await b.delete(className: "Memo", id: r.id!, expectedVersion: "2")
        #expect(try await b.count(Query("Memo")) == 0)
    }

    @Test func batchIsAtomic() async throws {
        let b = try memoryBackend()
        let existing = try await b.create(Record(className: "Memo", fields: ["n": 1]))
        let bad: [BatchOperation] = [
            .create(Record(className: "Memo", id: "b1", fields: ["n": 2])),
            .update(className: "Memo", id: existing.id!, RecordUpdate(changes: ["n": .increment(10)])),
            .create(Record(className: "Memo", fields: ["id": "reserved"])),
            .create(Record(className: "Memo", id: "b3")),
        ]
        let results = try await b.batch(bad)
        #expect(results.count == 4)
        for result in results {
            guard case .failure(let e) = result else { Issue.record("expected failure, got \(result)"); continue }
            #expect(e.kind == .invalidRequest && e.message.contains("operation 3 of 4"))
        }
        #expect(try await b.count(Query("Memo")) == 1)
        #expect(try await b.get(className: "Memo", id: existing.id!) == existing)
        // New records are checked before the transaction, but a problem is still reported at its position: an
        // earlier failing operation is the one named.
        let earlier = try await b.batch([
            .create(Record(className: "Memo", id: "c1")),
            .update(className: "Memo", id: "missing", RecordUpdate(changes: ["n": .set(1)])),
            .create(Record(className: "Memo", fields: ["id": "reserved"])),
        ])
        for result in earlier {
            guard case .failure(let e) = result else { Issue.record("expected failure, got \(result)"); continue }
            #expect(e.kind == .notFound && e.message.contains("operation 2 of 3"), "\(e)")
        }
        #expect(try await b.count(Query("Memo")) == 1)

        let good = try await b.batch([
            .create(Record(className: "Memo", id: "b1", fields: ["n": 2])),
            .update(className: "Memo", id: "b1", RecordUpdate(changes: ["n": .increment(1)])),
            .delete(className: "Memo", id: existing.id!),
        ])
        guard case .success(let updated) = good[1], case .success(let deleted) = good[2] else {
            Issue.record("batch failed: \(good)"); return
        }
        #expect(updated["n"] == 3 && updated.version == "2")
        #expect(deleted.id == existing.id)
        #expect(try await b.queryPage(Query("Memo")).records.map(\.id) == ["b1"])
        await expectError(.invalidRequest) {
            try await b.batch(Array(repeating: .create(Record(className: "Memo")), count: 1001))
        }
    }

    struct Trip: Model, Equatable {
        static let className = "Trip"
        var id: String?
        var title: String
        var due: Date
        var blob: Data
        var owner: Pointer
        var place: GeoPoint
        var count: Int
        var ratio: Double
        var tags: [String]
        var note: String?
        var createdAt: Date?
        var version: String?
    }

    @Test func typedModelsRoundTrip() async throws {
        let b = try memoryBackend()
        let trip = Trip(title: "Kyoto", due: date("2025-04-01T09:30:15.123Z"), blob: Data([0, 1, 2, 255]),
                        owner: Pointer(className: "User", objectId: "u1"), place: GeoPoint(latitude: 35.0116, longitude: 135.7681),
                        count: 3, ratio: 0.25, tags: ["a"])
        let saved = try await b.save(trip)
        let id = try #require(saved.id)
        #expect(saved.createdAt != nil && saved.version == "1")
        let raw = try await b.get(className: "Trip", id: id)
        #expect(raw["due"] == .date(trip.due) && raw["blob"] == .bytes(trip.blob) && raw["owner"] == .pointer(trip.owner))
        #expect(raw["place"] == .geoPoint(trip.place) && raw["count"] == 3 && raw["ratio"] == 0.25 && raw["note"] == nil)
        let loaded = try await b.get(Trip.self, id: id)
        #expect(loaded == saved)
        var changed = loaded
        changed.count = 4
        let resaved = try await b.save(changed)
        #expect(resaved.count == 4 && resaved.version == "2")
        let all = try await b.models(Trip.self, matching: Query("Trip").filter(Field("due") > .date(date("2025-01-01T00:00:00Z")))).reduce(into: []) { $0.append($1) }
        #expect(all == [resaved])
    }
}
