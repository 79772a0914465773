import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSTesting
import Testing

/// The Local store's errors carry what callers decide on as values: the taken field of a duplicate sign-up, the
/// version a record has now on a version conflict.
@Suite("Local errors carry structure")
struct StructuredErrorTests {
    @Test("a duplicate sign-up names the taken field: username, or email")
    func duplicateSignUpNamesTheField() async throws {
        let b = try memoryBackend()
        _ = try await b.signUp(username: "mailroom", password: "pw", email: "a@example.com", fields: [:])
        let name = await expectError(.duplicate) {
            try await b.signUp(username: "mailroom", password: "pw", email: "b@example.com", fields: [:])
        }
        #expect(name?.refusedField == "username")
        #expect(name?.refusedField == MBaaSError.usernameKey)
        let mail = await expectError(.duplicate) {
            try await b.signUp(username: "other", password: "pw", email: "a@example.com", fields: [:])
        }
        #expect(mail?.refusedField == "email")
        #expect(mail?.refusesRecordId == false)
    }

    @Test("a version conflict carries the record's current version")
    func conflictCarriesTheCurrentVersion() async throws {
        let b = try memoryBackend()
        let r = try await b.create(Record(className: "Memo", fields: ["money": 1]))
        _ = try await b.update(className: "Memo", id: r.id!, .set(["money": 2], expectedVersion: "1"))
        _ = try await b.update(className: "Memo", id: r.id!, .set(["money": 3], expectedVersion: "2"))
        let stale = await expectError(.conflict) {
            try await b.update(className: "Memo", id: r.id!, .set(["money": 4], expectedVersion: "1"))
        }
        #expect(stale?.currentVersion == "3")
        let delete = await expectError(.conflict) { try await b.delete(className: "Memo", id: r.id!, expectedVersion: "2") }
        #expect(delete?.currentVersion == "3")
    }
}
