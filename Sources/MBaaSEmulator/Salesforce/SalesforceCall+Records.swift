import Foundation
import MBaaSCore
import MBaaSSalesforceWire

/// sObject rows: create, get, update, delete, and ContentVersion's `VersionData`.
extension SalesforceCall {
    /// The blob field of ContentVersion: kept as base64 text, shown in records as the URL that serves the bytes [capture].
    static let blobFields: [String: String] = ["ContentVersion": "VersionData"]

    /// The type name as the org knows it: an identifier, else 404 NOT_FOUND (an unknown sObject [capture]).
    func checkType(_ type: String) throws {
        guard SalesforceWire.isIdentifier(type) else {
            throw MBaaSError(.notFound, "The requested resource does not exist", vendorCode: "NOT_FOUND")
        }
    }

    /// The fields of a create or update body (the Wire module's reading: `Id` and names that are not identifiers are
    /// INVALID_FIELD [doc]); a blob must be base64.
    func bodyFields(_ type: String, body: JSONObject? = nil) throws -> [String: Value] {
        let fields = try SalesforceRecordCodec.fields(ofBody: try body ?? jsonObject())
        if let blob = Self.blobFields[type], let value = fields[blob] {
            guard let text = value.stringValue, Data(base64Encoded: text) != nil else {
                throw MBaaSError(.invalidRequest, "\(blob): value not of required type: base64", vendorCode: "INVALID_FIELD")
            }
        }
        return fields
    }

    /// 201 `{"id","success":true,"errors":[]}` with a relative `Location` [capture].
    func create(_ type: String) async throws -> TransportResponse {
        try checkType(type)
        let record = try await owner.create(Record(className: type, fields: try bodyFields(type)))
        let id = record.id ?? ""
        await dialect.state.remember(id, type: type)
        return Self.json(201, SalesforceSaveResult(id: id, success: true).json(),
                         headers: HTTPFields([("Location", SalesforceRoute.sobject(type, id: id).path(version: version))]))
    }

    /// A missing record is 404 NOT_FOUND, a deleted one ENTITY_IS_DELETED [capture].
    func existing(_ type: String, _ id: String) async throws -> Record {
        do { return try await owner.get(className: type, id: id) } catch let e as MBaaSError where e.kind == .notFound {
            if await dialect.state.wasDeleted(type + "/" + id) {
                throw MBaaSError(.notFound, "entity is deleted", vendorCode: "ENTITY_IS_DELETED")
            }
            throw MBaaSError(.notFound, "The requested resource does not exist", vendorCode: "NOT_FOUND")
        }
    }

    /// The record as the org returns it: `attributes`, `Id`, the fields, the system dates; a blob field as its URL.
    func render(_ record: Record, selecting fields: [String]? = nil) -> JSONObject {
        var o = SalesforceRecordCodec.json(record, version: version)
        if let blob = Self.blobFields[record.className], o[blob] != nil, let id = record.id {
            o[blob] = .string(SalesforceRoute.blob(record.className, id: id, field: blob).path(version: version))
        }
        guard let fields else { return o }
        var selected: JSONObject = ["attributes": o["attributes"] ?? .null]
        let byLower = Dictionary(o.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
        for f in fields { selected[f] = byLower[f.lowercased()] ?? .null }
        return selected
    }

    /// `GET /sobjects/{T}/{id}[?fields=a,b]` [capture].
    func get(_ type: String, _ id: String) async throws -> TransportResponse {
        try checkType(type)
        let record = try await existing(type, id)
        var selection: [String]?
        if let list = queryItems["fields"] {
            let names = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            if let bad = names.first(where: { !SalesforceWire.isIdentifier($0) }) {
                throw MBaaSError(.invalidRequest, "No such column '\(bad)' on sobject of type \(type)", vendorCode: "INVALID_FIELD")
            }
            selection = ["Id"] + names.filter { $0.lowercased() != "id" }
        }
        return Self.json(200, .object(render(record, selecting: selection)))
    }

    /// `PATCH`: 204 with no body [capture]; with `If-Unmodified-Since`, 412 when the record changed after that
    /// date, untouched [sdk test]; a header that is not an HTTP date is 400 [doc].
    func update(_ type: String, _ id: String) async throws -> TransportResponse {
        try checkType(type)
        let fields = try bodyFields(type)
        var expected: String?
        if let header = request.headers[HTTPField.Name("If-Unmodified-Since")!] {
            guard let since = SalesforceDateTime.parseHTTPDate(header) else {
                throw MBaaSError(.invalidRequest, "If-Unmodified-Since: not an HTTP date: \(header)", vendorCode: "INVALID_HEADER_VALUE")
            }
            let current = try await existing(type, id)
            let modified = (current.updatedAt ?? current.createdAt ?? .distantPast).timeIntervalSince1970.rounded(.down)
            if modified > since.timeIntervalSince1970 { return TransportResponse(status: .init(code: 412), headers: [:], body: Data()) }
            expected = current.version
        } else {
            _ = try await existing(type, id)
        }
        do {
            _ = try await owner.update(className: type, id: id, .set(fields, expectedVersion: expected))
        } catch let e as MBaaSError where e.kind == .conflict {
            return TransportResponse(status: .init(code: 412), headers: [:], body: Data())
        }
        return Self.noContent()
    }

    /// `DELETE`: 204 with no body; again: 404 ENTITY_IS_DELETED [capture].
    func delete(_ type: String, _ id: String) async throws -> TransportResponse {
        try checkType(type)
        _ = try await existing(type, id)
        try await owner.delete(className: type, id: id, expectedVersion: nil)
        await dialect.state.markDeleted(type + "/" + id)
        return Self.noContent()
    }

    /// `GET /sobjects/ContentVersion/{id}/VersionData`: the raw bytes [capture].
    func blob(_ type: String, _ id: String, _ field: String) async throws -> TransportResponse {
        try checkType(type)
        guard Self.blobFields[type] == field else {
            throw MBaaSError(.notFound, "The requested resource does not exist", vendorCode: "NOT_FOUND")
        }
        let record = try await existing(type, id)
        guard let text = record.fields[field]?.stringValue, let bytes = Data(base64Encoded: text) else {
            throw MBaaSError(.notFound, "The requested resource does not exist", vendorCode: "NOT_FOUND")
        }
        var response = TransportResponse(status: .init(code: 200), headers: [:], body: bytes)
        response.headers[.contentType] = "application/octetstream"
        return response
    }
}

/// Describe and collection retrieve, which the Salesforce client calls.
extension SalesforceCall {
    /// `GET /sobjects/{T}/describe`: the type's fields [doc]. The store is schemaless, so the fields are the system
    /// fields and those the type's first 200 rows hold, typed from their values [inferred].
    func describe(_ type: String) async throws -> TransportResponse {
        try checkType(type)
        var q = Query(type)
        q.limit = 200
        var seen: [String: String] = [:]
        for record in try await owner.queryPage(q).records {
            for (key, value) in record.fields where seen[key] == nil { seen[key] = Self.fieldType(value) }
        }
        var fields: [SalesforceDescribe.FieldInfo] = [
            .init(name: "Id", type: "id", updateable: false, createable: false),
            .init(name: "CreatedDate", type: "datetime", updateable: false, createable: false),
            .init(name: "LastModifiedDate", type: "datetime", updateable: false, createable: false),
        ]
        fields += seen.keys.sorted().map { .init(name: $0, type: seen[$0]!) }
        return Self.json(200, SalesforceDescribe(name: type, fields: fields).json)
    }

    static func fieldType(_ value: Value) -> String {
        switch value {
        case .bool: return "boolean"
        case .int: return "int"
        case .double: return "double"
        case .date: return "datetime"
        default: return "string"
        }
    }

    /// `POST /composite/sobjects/{T}` `{ids, fields}`: the records in the order asked, `null` for a missing one [sdk].
    func retrieve(_ type: String) async throws -> TransportResponse {
        try checkType(type)
        let body = try jsonObject()
        guard let ids = body["ids"]?.arrayValue?.compactMap(\.stringValue), ids.count <= SalesforceWire.maxQueryPageSize else {
            throw MBaaSError(.invalidRequest, "ids must be an array of at most 2000 ids", vendorCode: "JSON_PARSER_ERROR")
        }
        let fields = body["fields"]?.arrayValue?.compactMap(\.stringValue)
        var out: [JSON] = []
        for id in ids {
            if let record = try? await owner.get(className: type, id: id) {
                out.append(.object(render(record, selecting: fields.map { ["Id"] + $0.filter { $0.lowercased() != "id" } })))
            } else {
                out.append(.null)
            }
        }
        return Self.json(200, .array(out))
    }
}
