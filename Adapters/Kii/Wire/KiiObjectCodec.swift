public import Foundation
public import MBaaSCore

/// Maps neutral records and values to Kii objects and back (kii.md §3). Pure.
///
/// # Type mapping
/// Kii stores any JSON and has no typed values except its GeoPoint shape, so:
///
/// | neutral ``Value`` | Kii object body |
/// |---|---|
/// | null, bool, int, double, string, array, object | the same JSON (ints and doubles kept apart) |
/// | `GeoPoint` | Kii's point `{"_type":"point","lat":..,"lon":..}`, so Kii's geo clauses can use it |
/// | `Date`, `Bytes`, `Pointer`, `File` | the neutral JSON object (`{"__type":"Date","iso":..}`...), kept verbatim |
///
/// Reading reverses this exactly, so every value round-trips. Typed values other than GeoPoint are opaque to Kii's
/// queries (see ``KiiClauseTranslator``).
///
/// # Record mapping
/// `_id` ↔ ``Record/id``; `_created`, `_modified` (epoch ms) ↔ ``Record/createdAt``, ``Record/updatedAt``;
/// `_version` (or the `ETag`) ↔ ``Record/version``. `_owner`, `_dataType`, `_calculated` and any other key that
/// starts with `_` are Kii metadata and never appear in ``Record/fields``; application fields may not start with
/// `_` (Kii reserves them, kii.md §3.4).
public enum KiiObjectCodec {
    /// Kii's reserved object keys (kii.md §3.4).
    public static let reservedKeys: Set<String> = ["_id", "_created", "_modified", "_owner", "_dataType", "_version", "_calculated"]

    /// The create Content-Type: `application/vnd.{appID}.{dataType}+json` (kii.md §3.2).
    public static func contentType(appID: String, dataType: String) -> String {
        "application/vnd.\(appID).\(dataType)+json"
    }

    // MARK: Values

    /// The Kii JSON of a neutral value.
    public static func kiiJSON(_ value: Value) -> JSON {
        switch value {
        case .geoPoint(let g): return KiiGeoPoint(lat: g.latitude, lon: g.longitude).json
        case .array(let items): return .array(items.map(kiiJSON))
        case .object(let o): return .object(JSONObject(sorting: o.mapValues(kiiJSON)))
        default: return value.json
        }
    }

    /// The neutral value of Kii JSON: Kii points become GeoPoints, neutral typed objects their types, the rest stays.
    /// Read through the core's one walk (``MBaaSCore/Value/walk(_:typed:)``); nothing here throws: a neutral typed
    /// form that does not parse stays a plain object.
    public static func value(_ json: JSON) -> Value {
        let walked = try? Value.walk(json) { type, o, _ in
            if let p = KiiGeoPoint(json: .object(o)) { return .geoPoint(GeoPoint(latitude: p.lat, longitude: p.lon)) }
            if type != nil, let typed = try? Value(json: .object(o)) { return typed }
            return nil
        }
        return walked ?? .null
    }

    // MARK: Records

    /// The object body for neutral fields. A field name that is empty, starts with `_` (Kii's reserved prefix) or is
    /// one of ``Record/reservedFieldNames`` is ``MBaaSError/Kind/invalidRequest``.
    public static func body(fields: [String: Value]) throws(MBaaSError) -> JSONObject {
        for key in fields.keys { try validateFieldName(key) }
        return JSONObject(sorting: fields.mapValues(kiiJSON))
    }

    public static func validateFieldName(_ key: String) throws(MBaaSError) {
        if key.isEmpty { throw MBaaSError(.invalidRequest, "Kii objects cannot have an empty field name") }
        if key.hasPrefix("_") {
            throw MBaaSError(.invalidRequest, "field '\(key)': Kii reserves field names that start with '_'")
        }
        if Record.reservedFieldNames.contains(key) {
            throw MBaaSError(.invalidRequest, "field '\(key)' is reserved for record metadata")
        }
    }

    /// A record from a Kii object (a GET body or a query result). `etag` wins over `_version` when given.
    public static func record(className: String, object: JSONObject, etag: String? = nil) -> Record {
        var fields: [String: Value] = [:]
        for (k, v) in object where !k.hasPrefix("_") { fields[k] = value(v) }
        return Record(
            className: className, id: object["_id"]?.stringValue, createdAt: date(object["_created"]),
            updatedAt: date(object["_modified"]), version: etag ?? version(object["_version"]), fields: fields)
    }

    /// The Kii object (with reserved keys) for a record, as a server would return it.
    public static func object(for record: Record, owner: String? = nil, dataType: String? = nil) -> JSONObject {
        var o = JSONObject(sorting: record.fields.mapValues(kiiJSON))
        if let id = record.id { o["_id"] = .string(id) }
        if let c = record.createdAt { o["_created"] = .int(ISO8601.millis(c)) }
        if let m = record.updatedAt { o["_modified"] = .int(ISO8601.millis(m)) }
        if let owner { o["_owner"] = .string(owner) }
        if let dataType { o["_dataType"] = .string(dataType) }
        if let v = record.version { o["_version"] = .string(v) }
        return o
    }

    /// `_version` is a string in the docs and a number in SDK fixtures (kii.md §3.4): both become a string.
    public static func version(_ json: JSON?) -> String? {
        switch json {
        case .string(let s)?: s
        case .int(let i)?: String(i)
        case .double(let d)? where d.rounded() == d: String(Int64(d))
        default: nil
        }
    }

    /// A date from epoch milliseconds.
    public static func date(_ json: JSON?) -> Date? {
        guard let ms = json?.doubleValue else { return nil }
        return Date(timeIntervalSince1970: ms / 1000)
    }

    public static func millis(_ date: Date) -> JSON { .int(ISO8601.millis(date)) }
}

/// `ETag` values: Kii sends them quoted (`"3"`) and takes `If-Match` unquoted (`2`) (kii.md §10).
public enum KiiETag {
    public static func unquote(_ etag: String?) -> String? {
        guard var s = etag?.trimmingCharacters(in: .whitespaces), !s.isEmpty else { return nil }
        if s.hasPrefix("W/") { s.removeFirst(2) }
        if s.count >= 2, s.hasPrefix("\""), s.hasSuffix("\"") { s = String(s.dropFirst().dropLast()) }
        return s
    }

    public static func quote(_ version: String) -> String { "\"\(version)\"" }
}

/// `ObjectCreationResponse` (kii.md §3.2): `{"objectID":..,"createdAt":ms,"dataType":..}`.
public struct KiiObjectCreationResponse: Sendable, Hashable {
    public var objectID: String
    public var createdAt: Int64
    public var dataType: String?

    public static let contentType = "application/vnd.kii.ObjectCreationResponse+json"

    public init(objectID: String, createdAt: Int64, dataType: String? = nil) {
        self.objectID = objectID
        self.createdAt = createdAt
        self.dataType = dataType
    }

    public var json: JSON {
        var o: JSONObject = ["objectID": .string(objectID), "createdAt": .int(createdAt)]
        if let dataType { o["dataType"] = .string(dataType) }
        return .object(o)
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let id = json["objectID"]?.stringValue, let created = json["createdAt"]?.intValue else {
            throw MBaaSError(.decoding, "Kii create response lacks objectID or createdAt: \(json.printed().prefix(200))")
        }
        self.init(objectID: id, createdAt: created, dataType: json["dataType"]?.stringValue)
    }
}

/// `ObjectUpdateResponse` of a PUT or a body upload (kii.md §3.3, §3.5, §5.1): `{"createdAt"?:ms,"modifiedAt":ms}`.
public struct KiiObjectUpdateResponse: Sendable, Hashable {
    public var createdAt: Int64?
    public var modifiedAt: Int64

    public static let contentType = "application/vnd.kii.ObjectUpdateResponse+json"

    public init(createdAt: Int64? = nil, modifiedAt: Int64) {
        self.createdAt = createdAt
        self.modifiedAt = modifiedAt
    }

    public var json: JSON {
        var o = JSONObject()
        if let createdAt { o["createdAt"] = .int(createdAt) }
        o["modifiedAt"] = .int(modifiedAt)
        return .object(o)
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let m = json["modifiedAt"]?.intValue else {
            throw MBaaSError(.decoding, "Kii update response lacks modifiedAt: \(json.printed().prefix(200))")
        }
        self.init(createdAt: json["createdAt"]?.intValue, modifiedAt: m)
    }
}
