public import Foundation

/// One stored object: its class, identity, server-managed metadata, ACL and dynamic fields.
///
/// Neutral JSON (used by the CLI, bundles and reports):
/// `{"class":"Memo","id":"...","createdAt":"<ISO-8601 ms Z>","updatedAt":"...","version":"...","acl":{...},"fields":{...}}`.
/// Members that are `nil` are left out. `fields` never contains the reserved names `id`, `createdAt`,
/// `updatedAt`, `version` or `acl`: adapters move the vendor's equivalents (`objectId`, `_created`,
/// `serverUpdateTime`, ...) into the metadata.
public struct Record: Sendable, Hashable {
    public var className: String
    public var id: String?
    public var createdAt: Date?
    public var updatedAt: Date?
    /// An opaque version token for optimistic locking (an ETag, a counter, an update time). Pass it back as
    /// `expectedVersion` to make an update or delete fail with ``MBaaSError/Kind/conflict`` if the record changed.
    public var version: String?
    public var acl: ACL?
    public var fields: [String: Value]

    public init(
        className: String, id: String? = nil, createdAt: Date? = nil, updatedAt: Date? = nil,
        version: String? = nil, acl: ACL? = nil, fields: [String: Value] = [:]
    ) {
        self.className = className
        self.id = id
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.version = version
        self.acl = acl
        self.fields = fields
    }

    public subscript(field: String) -> Value? {
        get { fields[field] }
        set { fields[field] = newValue }
    }

    /// Names that cannot be used as field names because the neutral record uses them for metadata.
    public static let reservedFieldNames: Set<String> = ["id", "createdAt", "updatedAt", "version", "acl", "class"]

    /// A pointer to this record (requires an id).
    public var pointer: Pointer? { id.map { Pointer(className: className, objectId: $0) } }
}

extension Record {
    /// The neutral JSON form.
    public var json: JSON {
        var o: JSONObject = ["class": .string(className)]
        if let id { o["id"] = .string(id) }
        if let createdAt { o["createdAt"] = .string(ISO8601.format(createdAt)) }
        if let updatedAt { o["updatedAt"] = .string(ISO8601.format(updatedAt)) }
        if let version { o["version"] = .string(version) }
        if let acl { o["acl"] = acl.json }
        o["fields"] = .object(JSONObject(sorting: fields.mapValues(\.json)))
        return .object(o)
    }

    /// Reads the neutral JSON form; errors name the member that is wrong.
    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue else { throw MBaaSError(.invalidRequest, "a record must be a JSON object") }
        guard let className = o["class"]?.stringValue, !className.isEmpty else {
            throw MBaaSError(.invalidRequest, "record.class must be a non-empty string")
        }
        func date(_ key: String) throws(MBaaSError) -> Date? {
            guard let v = o[key], !v.isNull else { return nil }
            guard let s = v.stringValue, let d = ISO8601.parse(s) else {
                throw MBaaSError(.invalidRequest, "record.\(key) must be an ISO-8601 string")
            }
            return d
        }
        var fields: [String: Value] = [:]
        if let f = o["fields"], !f.isNull {
            guard let fo = f.objectValue else { throw MBaaSError(.invalidRequest, "record.fields must be an object") }
            for (k, v) in fo { fields[k] = try Value(json: v, path: "fields.\(k)") }
        }
        self.init(
            className: className, id: o["id"]?.stringValue, createdAt: try date("createdAt"),
            updatedAt: try date("updatedAt"), version: o["version"]?.stringValue,
            acl: try o["acl"].flatMap { a throws(MBaaSError) in a.isNull ? nil : try ACL(json: a) },
            fields: fields)
    }

    /// Parses a JSON object text of neutral field values (`{"title":"a","money":5}`), as the CLI takes it for a
    /// new record. Refused (`invalidRequest` naming the field): a decimal a double cannot keep as written
    /// (``JSON/parse(_:exactNumbers:)``), an update operation (`{"__op":…}` anywhere: a new record takes values),
    /// and what ``checkInput(_:path:)`` refuses.
    public static func fields(fromJSONText text: String) throws(MBaaSError) -> [String: Value] {
        let json: JSON
        do { json = try JSON.parse(text, exactNumbers: true) } catch { throw MBaaSError(.invalidRequest, "fields: \(error)") }
        guard let o = json.objectValue else { throw MBaaSError(.invalidRequest, "fields must be a JSON object") }
        var fields: [String: Value] = [:]
        for (k, v) in o {
            if reservedFieldNames.contains(k) {
                throw MBaaSError(.invalidRequest, "fields: '\(k)' is reserved for record metadata")
            }
            try refuseOperations(v, path: k)
            let value = try Value(json: v, path: k)
            try checkInput(value, path: k)
            fields[k] = value
        }
        return fields
    }

    private static func refuseOperations(_ json: JSON, path: String) throws(MBaaSError) {
        switch json {
        case .object(let o):
            if let op = o["__op"] {
                throw MBaaSError(.invalidRequest, "fields: \(path): {\"__op\":\(op.printed())} is an update operation; a new record takes values (change it afterwards with an update)")
            }
            for (k, v) in o { try refuseOperations(v, path: "\(path).\(k)") }
        case .array(let items):
            for (i, v) in items.enumerated() { try refuseOperations(v, path: "\(path)[\(i)]") }
        default:
            break
        }
    }

    /// Refuses, in values given as input, what names nothing: a Pointer whose class name is empty, holds `/` or
    /// `..`, or is `.` (a class name is never a path). `invalidRequest` naming `path`.
    public static func checkInput(_ value: Value, path: String) throws(MBaaSError) {
        switch value {
        case .pointer(let p):
            if p.className.isEmpty || p.className.contains("/") || p.className.contains("..") || p.className == "." {
                throw MBaaSError(.invalidRequest, "fields: \(path): Pointer className '\(p.className)' is not a class name (no '/' or '..')")
            }
        case .array(let items):
            for (i, v) in items.enumerated() { try checkInput(v, path: "\(path)[\(i)]") }
        case .object(let o):
            for (k, v) in o { try checkInput(v, path: "\(path).\(k)") }
        default:
            break
        }
    }
}
