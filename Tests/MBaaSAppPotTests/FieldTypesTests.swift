import Foundation
import MBaaSCore
import Testing

@testable import MBaaSAppPot

/// Column types by the core's type names (`FieldTypeDeclaring`, the URL option `schemas=FILE`).
@Suite("AppPot field types by name")
struct FieldTypesTests {
    @Test("the names of the columns a first write defines read back as the same columns; bad names are refused")
    func names() throws {
        let derived = AppPotClassSchema.derive(name: "Memo", from: [
            "title": "a", "body": .string(String(repeating: "x", count: 300)), "n": 3, "ratio": 2.5, "done": true,
            "due": .date(Date(timeIntervalSince1970: 0)), "tags": ["a"],
        ])
        let named = AppPotFieldTypes.names(of: derived)
        #expect(named == ["title": "string", "body": "string(4000)", "n": "int", "ratio": "double", "done": "bool",
                          "due": "Date", "tags": "json"])
        #expect(try AppPotFieldTypes.schemas(["Memo": named]) == [derived])
        for type in ["array", "object", "Pointer", "File", "GeoPoint", "Bytes"] {
            #expect(AppPotFieldTypes.column(named: type) == .json(4000))
        }
        #expect(AppPotFieldTypes.column(named: "string(16383)") == .varchar(16383))
        for bad in ["integer", "String", "string(0)", "string(+5)", "string(16384)", "string()", "json(x)", ""] {
            #expect(AppPotFieldTypes.column(named: bad) == nil, "\(bad)")
        }
        let e = try #require(throws: MBaaSError.self) { try AppPotFieldTypes.schemas(["Memo": ["n": "integer"]]) }
        #expect(e.kind == .invalidRequest && e.message.hasPrefix("Memo.n has the type 'integer'"))
        let system = try #require(throws: MBaaSError.self) { try AppPotFieldTypes.schemas(["Memo": ["createTime": "int"]]) }
        #expect(system.kind == .invalidRequest && system.message.contains("Memo.createTime"))
        let className = try #require(throws: MBaaSError.self) { try AppPotFieldTypes.schemas(["a/b": ["n": "int"]]) }
        #expect(className.kind == .invalidRequest && className.message.contains("'a/b'"))
    }

    @Test("a URL's schemas=FILE declares its classes when opened: reads typed, writes accepted; the defined classes are reported by name")
    func schemasFile() async throws {
        let sim = AppPotSimulator()
        let (writer, _) = try await aliceBackend(sim)
        let r = try await writer.create(Record(className: "Memo", fields: ["title": "a", "n": 5, "done": true]))
        #expect(writer.definedFieldTypes == ["Memo": ["title": "string", "n": "int", "done": "bool"]])
        #expect(writer.fieldTypesScope == "http://apppot.test:8080/apppot/api/24/jp.co.example.App/1.0")

        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("apppot-field-types-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("schemas.json")
        try Data(#"{"Memo":{"title":"string","n":"int","done":"bool"}}"#.utf8).write(to: file)
        let (reader, _) = try await makeBackend(sim, url: simulatorURL + "&schemas=" + file.path)
        _ = try await reader.logIn(username: "alice", password: "alice-pass")
        #expect(try await reader.get(className: "Memo", id: r.id!).fields == ["title": "a", "n": 5, "done": true])
        _ = try await reader.create(Record(className: "Memo", fields: ["title": "b", "n": 6, "done": false]))
        #expect(reader.definedFieldTypes.isEmpty)
        // Declared types do not replace a class the client knows.
        try reader.declareFieldTypes(["Memo": ["title": "string"]])
        #expect(reader.schema(for: "Memo")?.columns.count == 3)

        try Data(#"{"Memo":["title"]}"#.utf8).write(to: file)
        let shape = await #expect(throws: MBaaSError.self) { try await makeBackend(sim, url: simulatorURL + "&schemas=" + file.path) }
        #expect(shape?.kind == .invalidRequest && shape?.message.contains(file.path) == true)
        let missing = await #expect(throws: MBaaSError.self) {
            try await makeBackend(sim, url: simulatorURL + "&schemas=" + dir.appendingPathComponent("none.json").path)
        }
        #expect(missing?.kind == .localIO)
        let empty = await #expect(throws: MBaaSError.self) { try await makeBackend(sim, url: simulatorURL + "&schemas=") }
        #expect(empty?.kind == .invalidRequest && empty?.message.contains("schemas=FILE") == true)
    }

    @Test("a type that is not a string names the type names AppPot takes; a document of another shape does not")
    func typesNameTheAcceptedNames() throws {
        let notName = try #require(throws: MBaaSError.self) { try AppPotFieldTypes.types(.object(["Memo": .object(["n": 5])]), in: "schemas") }
        #expect(notName.kind == .invalidRequest && notName.refusedField == "Memo.n")
        #expect(notName.message == "schemas: Memo.n is 5, not a type name (\(AppPotFieldTypes.accepted))")
        let notObject = try #require(throws: MBaaSError.self) { try AppPotFieldTypes.types(.object(["Memo": 5]), in: "schemas") }
        #expect(notObject.kind == .invalidRequest && !notObject.message.contains(AppPotFieldTypes.accepted))
    }
}
