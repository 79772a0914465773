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
