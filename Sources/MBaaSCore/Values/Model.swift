import Foundation

/// A typed record: a `Codable` struct that knows its class name.
///
/// ```swift
/// struct Memo: Model {
///     static let className = "Memo"
///     var id: String?
///     var title: String
///     var money: Int
///     var due: Date?
/// }
/// let saved = try await backend.save(Memo(title: "rent", money: 50))
/// ```
///
/// Encoding goes through the neutral JSON form, so `Date`, `Data`, ``Pointer``, ``FileReference`` and
/// ``GeoPoint`` properties become the matching typed ``Value``s. The properties `id`, `createdAt`, `updatedAt`,
/// `version` and `acl`, when the model declares them, are filled from the record's metadata and never stored as
/// fields. Optional properties that are `nil` are not written.
public protocol Model: Codable, Sendable {
    /// The class (table, bucket, collection) the model is stored in.
    static var className: String { get }
    /// The record id; `nil` before the first save.
    var id: String? { get set }
}

extension Model {
    /// This model as a record.
    public func record() throws(MBaaSError) -> Record {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            try Value.date(date).json.encode(to: encoder)
        }
        encoder.dataEncodingStrategy = .custom { data, encoder in
            try Value.bytes(data).json.encode(to: encoder)
        }
        let json: JSON
        do { json = try JSON.parse(encoder.encode(self)) } catch {
            throw MBaaSError(.invalidRequest, "cannot encode \(Self.self): \(error)")
        }
        guard var object = json.objectValue else {
            throw MBaaSError(.invalidRequest, "\(Self.self) must encode as a keyed container")
        }
        var record = Record(className: Self.className)
        record.id = object["id"]?.stringValue
        record.createdAt = object["createdAt"].flatMap { try? Value(json: $0).dateValue }
        record.updatedAt = object["updatedAt"].flatMap { try? Value(json: $0).dateValue }
        record.version = object["version"]?.stringValue
        if let acl = object["acl"], !acl.isNull { record.acl = try ACL(json: acl) }
        for key in Record.reservedFieldNames { object[key] = nil }
        for (key, value) in object { record.fields[key] = try Value(json: value, path: key) }
        return record
    }

    /// Decodes a model from a record. Errors name the model and the field.
    public init(record: Record) throws(MBaaSError) {
        var object = JSONObject(sorting: record.fields.mapValues(\.json))
        if let id = record.id { object["id"] = .string(id) }
        if let c = record.createdAt { object["createdAt"] = Value.date(c).json }
        if let u = record.updatedAt { object["updatedAt"] = Value.date(u).json }
        if let v = record.version { object["version"] = .string(v) }
        if let acl = record.acl { object["acl"] = acl.json }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let json = try JSON(from: decoder)
            if case .date(let d) = try Value(json: json) { return d }
            if let s = json.stringValue, let d = ISO8601.parse(s) { return d }
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a Date"))
        }
        decoder.dataDecodingStrategy = .custom { decoder in
            if case .bytes(let b) = try Value(json: JSON(from: decoder)) { return b }
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not Bytes"))
        }
        do {
            self = try decoder.decode(Self.self, from: JSON.object(object).data())
        } catch let error as DecodingError {
            throw MBaaSError(.decoding, "cannot decode \(Self.self) from \(record.className): \(describe(error))")
        } catch {
            throw MBaaSError(.decoding, "cannot decode \(Self.self): \(error)")
        }
    }
}

private func describe(_ error: DecodingError) -> String {
    func path(_ c: DecodingError.Context) -> String {
        c.codingPath.map(\.stringValue).joined(separator: ".")
    }
    switch error {
    case .keyNotFound(let key, let c): return "missing field '\((c.codingPath + [key]).map(\.stringValue).joined(separator: "."))'"
    case .typeMismatch(let type, let c): return "field '\(path(c))' is not \(type)"
    case .valueNotFound(let type, let c): return "field '\(path(c))' is null, expected \(type)"
    case .dataCorrupted(let c): return "field '\(path(c))': \(c.debugDescription)"
    @unknown default: return "\(error)"
    }
}
