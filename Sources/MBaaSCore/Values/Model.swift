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
/// Encoding and decoding map properties to ``Value``s directly (as the neutral JSON form would), so `Date`, `Data`, ``Pointer``, ``FileReference`` and
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
    ///
    /// Encoded straight into ``Value``s (no JSON text in between): `Date` (at millisecond precision), `Data`,
    /// ``Pointer``, ``FileReference`` and ``GeoPoint`` properties become the matching typed values.
    public func record() throws(MBaaSError) -> Record {
        let value: Value
        do { value = try ValueEncoder.encode(self) } catch {
            throw MBaaSError(.invalidRequest, "cannot encode \(Self.self): \(error)")
        }
        guard case .object(var object) = value else {
            throw MBaaSError(.invalidRequest, "\(Self.self) must encode as a keyed container")
        }
        var record = Record(className: Self.className)
        record.id = object["id"]?.stringValue
        record.createdAt = object["createdAt"]?.dateValue
        record.updatedAt = object["updatedAt"]?.dateValue
        record.version = object["version"]?.stringValue
        if let acl = object["acl"], !acl.isNull { record.acl = try ACL(json: acl.json) }
        for key in Record.reservedFieldNames { object[key] = nil }
        for (key, value) in object { record.fields[key] = value }
        return record
    }

    /// Decodes a model from a record (straight from its ``Value``s). Errors name the model and the field.
    public init(record: Record) throws(MBaaSError) {
        var object = record.fields
        if let id = record.id { object["id"] = .string(id) }
        if let c = record.createdAt { object["createdAt"] = .date(c) }
        if let u = record.updatedAt { object["updatedAt"] = .date(u) }
        if let v = record.version { object["version"] = .string(v) }
        if let acl = record.acl { object["acl"] = try Value(json: acl.json, path: "acl") }
        do {
            self = try ValueDecoder.decode(Self.self, from: .object(object))
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
