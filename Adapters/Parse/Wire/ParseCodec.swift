public import Foundation
public import MBaaSCore

/// The Parse wire codec for values, ACLs, records and updates: pure functions, both directions.
///
/// | Parse JSON | ``Value`` |
/// |---|---|
/// | booleans, numbers, strings, arrays, objects | the same (`5` is `int`, `5.0` is `double`) |
/// | `{"__type":"Date","iso":"…"}` | ``Value/date(_:)`` |
/// | `{"__type":"Bytes","base64":"…"}` | ``Value/bytes(_:)`` |
/// | `{"__type":"Pointer","className","objectId"}` | ``Value/pointer(_:)`` (class names as Parse spells them: `_User`) |
/// | `{"__type":"File","name","url"}` | ``Value/file(_:)`` (name and url) |
/// | `{"__type":"GeoPoint","latitude","longitude"}` | ``Value/geoPoint(_:)`` |
/// | `{"__type":"Relation","className"}` (read only) | `.object(["__type":"Relation","className":…])`, a marker |
/// | `{"__type":"Polygon","coordinates":[[lat,lng]…]}` | `.object` with `__type` and `coordinates` kept; written back as a Polygon |
/// | `{"__type":"Object","className","objectId",…}` (an `include`d pointer) | `.object` of its members; written back as a Pointer |
///
/// `createdAt` and `updatedAt` are plain ISO-8601 strings on the wire (every other date is a Date hash).
public enum ParseCodec {
    /// Field names Parse keeps for metadata; they never appear in ``Record/fields``.
    public static let metadataKeys: Set<String> = ["objectId", "createdAt", "updatedAt", "ACL"]
    /// User members that are secrets or session state, never fields.
    public static let userSecretKeys: Set<String> = ["sessionToken", "password", "authData", "_hashed_password"]
    static let maxSafeInteger: UInt64 = 9_007_199_254_740_992

    // MARK: Values

    /// The Parse JSON of a value (request side).
    public static func encode(_ value: Value, path: String = "$") throws(MBaaSError) -> JSON {
        switch value {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i):
            guard i.magnitude <= maxSafeInteger else {
                throw MBaaSError.unsupported("integers beyond ±2^53 (\(path): \(i))", by: "parse",
                                             reason: ParseWire.capabilities.note(for: .valueType("int")))
            }
            return .int(i)
        case .double(let d):
            guard d.isFinite else { throw MBaaSError(.invalidRequest, "\(path): \(d) cannot be stored (JSON has no NaN or infinity)") }
            return .double(d)
        case .string(let s): return .string(s)
        case .date(let d): return dateJSON(d)
        case .bytes(let data): return .object(["__type": "Bytes", "base64": .string(data.base64EncodedString())])
        case .pointer(let p): return pointerJSON(p)
        case .file(let f):
            var o: JSONObject = ["__type": "File", "name": .string(f.name)]
            if let url = f.url { o["url"] = .string(url) }
            return .object(o)
        case .geoPoint(let g):
            guard (-90...90).contains(g.latitude), (-180...180).contains(g.longitude) else {
                throw MBaaSError(.invalidRequest, "\(path): GeoPoint out of range (\(g.latitude), \(g.longitude))")
            }
            return .object(["__type": "GeoPoint", "latitude": .double(g.latitude), "longitude": .double(g.longitude)])
        case .array(let items):
            var out: [JSON] = []
            out.reserveCapacity(items.count)
            for (i, item) in items.enumerated() { out.append(try encode(item, path: "\(path)[\(i)]")) }
            return .array(out)
        case .object(let members):
            if let type = members["__type"] {
                switch type {
                case .string("Object"):
                    guard let cls = members["className"]?.stringValue, let id = members["objectId"]?.stringValue else {
                        throw MBaaSError(.invalidRequest, "\(path): an included Object needs className and objectId")
                    }
                    return pointerJSON(Pointer(className: cls, objectId: id))
                case .string("Polygon"):
                    guard let coords = members["coordinates"] else {
                        throw MBaaSError(.invalidRequest, "\(path): a Polygon needs coordinates")
                    }
                    return .object(["__type": "Polygon", "coordinates": try encode(coords, path: "\(path).coordinates")])
                case .string("Relation"):
                    throw MBaaSError(.invalidRequest, "\(path): a Relation cannot be set as a value; use ParseBackend.addRelation/removeRelation")
                default:
                    throw MBaaSError(.invalidRequest, "\(path): '__type' is reserved by Parse in object values")
                }
            }
            var out: [(String, JSON)] = []
            for key in members.keys.sorted() {
                if key.hasPrefix("__") || key.hasPrefix("$") {
                    throw MBaaSError(.invalidRequest, "\(path).\(key): keys starting with '__' or '$' are reserved by Parse")
                }
                out.append((key, try encode(members[key]!, path: "\(path).\(key)")))
            }
            return .object(JSONObject(out))
        }
    }

    /// The value of Parse JSON (response side). Malformed typed forms are ``MBaaSError/Kind/decoding`` errors; an
    /// unknown `__type` is kept as a plain object.
    public static func decode(_ json: JSON, path: String = "$") throws(MBaaSError) -> Value {
        do {
            return try Value.walk(json, typed: typed)
        } catch {
            throw MBaaSError(.decoding, path + error.path + ": " + error.message)
        }
    }

    /// Parse's typed objects for ``MBaaSCore/Value/walk(_:typed:)``; `nil` (an unknown type) keeps a plain object.
    static func typed(_ type: JSON?, _ o: JSONObject, _ member: Value.MemberDecoder) throws(Value.ConversionError) -> Value? {
        guard let type else { return nil }
        func fail(_ message: String) -> Value.ConversionError { Value.ConversionError(message: message) }
        func string(_ key: String) throws(Value.ConversionError) -> String {
            guard let s = o[key]?.stringValue else { throw fail("\(type.stringValue ?? "?") without a string '\(key)'") }
            return s
        }
        switch type.stringValue {
        case "Date":
            let iso = try string("iso")
            guard let date = ISO8601.parse(iso) else { throw fail("'\(iso)' is not an ISO-8601 date") }
            return .date(date)
        case "Bytes":
            let text = try string("base64")
            guard let data = Data(base64Encoded: text) else { throw fail("Bytes with invalid base64") }
            return .bytes(data)
        case "Pointer":
            return .pointer(Pointer(className: try string("className"), objectId: try string("objectId")))
        case "File":
            return .file(FileReference(name: try string("name"), url: o["url"]?.stringValue))
        case "GeoPoint":
            guard let lat = o["latitude"]?.doubleValue, let lon = o["longitude"]?.doubleValue else {
                throw fail("GeoPoint without numeric latitude and longitude")
            }
            return .geoPoint(GeoPoint(latitude: lat, longitude: lon))
        case "Relation":
            return .object(["__type": "Relation", "className": .string(try string("className"))])
        case "Polygon":
            guard let coords = o["coordinates"] else { throw fail("Polygon without coordinates") }
            return .object(["__type": "Polygon", "coordinates": try member("coordinates", coords)])
        case "Object":
            var members: [String: Value] = [:]
            for (k, v) in o {
                switch k {
                case "__type": members[k] = "Object"
                case "createdAt", "updatedAt":
                    if let s = v.stringValue, let d = ISO8601.parse(s) { members[k] = .date(d) }
                    else { members[k] = try member(k, v) }
                default: members[k] = try member(k, v)
                }
            }
            return .object(members)
        default:
            return nil
        }
    }

    /// `{"__type":"Date","iso":"yyyy-MM-ddTHH:mm:ss.SSSZ"}`
    public static func dateJSON(_ date: Date) -> JSON { .object(["__type": "Date", "iso": .string(ISO8601.format(date))]) }

    /// `{"__type":"Pointer","className":…,"objectId":…}`
    public static func pointerJSON(_ p: Pointer) -> JSON {
        .object(["__type": "Pointer", "className": .string(p.className), "objectId": .string(p.objectId)])
    }

    // MARK: ACL

    /// The Parse ACL (`{"*":{"read":true},"<userId>":{…},"role:<name>":{…}}`): the neutral form, group principals
    /// excepted (Parse has none: ``MBaaSError/Kind/unsupported``).
    public static func encode(_ acl: ACL) throws(MBaaSError) -> JSON {
        if let group = acl.entries.keys.first(where: { if case .group = $0 { true } else { false } }) {
            throw MBaaSError.unsupported("group principals in ACLs ('\(group.key)')", by: "parse",
                                         reason: "Parse ACLs name users, roles ('role:Name') and '*' only")
        }
        return acl.json
    }

    public static func decodeACL(_ json: JSON) throws(MBaaSError) -> ACL {
        do { return try ACL(json: json) } catch { throw MBaaSError(.decoding, "ACL: \(error.message)") }
    }

    // MARK: Records

    /// Throws ``MBaaSError/Kind/invalidRequest`` for a name Parse or the neutral record reserves.
    public static func checkFieldName(_ key: String) throws(MBaaSError) {
        if key.isEmpty { throw MBaaSError(.invalidRequest, "empty field name") }
        if Record.reservedFieldNames.contains(key) || metadataKeys.contains(key) {
            throw MBaaSError(.invalidRequest, "'\(key)' is reserved for record metadata")
        }
        if key.hasPrefix("__") || key.hasPrefix("$") {
            throw MBaaSError(.invalidRequest, "field name '\(key)' is reserved by Parse (starts with '__' or '$')")
        }
    }

    /// The JSON body that creates a record: its fields, plus `ACL` when set.
    public static func createBody(_ record: Record) throws(MBaaSError) -> JSONObject {
        var body = JSONObject()
        for key in record.fields.keys.sorted() {
            try checkFieldName(key)
            if record.fields[key] == .null { throw nullUnsupported(key) }
            body[key] = try encode(record.fields[key]!, path: key)
        }
        if let acl = record.acl { body["ACL"] = try encode(acl) }
        return body
    }

    /// A record from a Parse object: `objectId`, `createdAt`, `updatedAt` and `ACL` become metadata; user secrets
    /// (`sessionToken`, `password`, `authData`) are dropped; everything else becomes a field (nulls included).
    public static func decodeRecord(className: String, _ object: JSONObject) throws(MBaaSError) -> Record {
        var record = Record(className: className)
        for (key, value) in object {
            switch key {
            case "objectId":
                guard let id = value.stringValue else { throw MBaaSError(.decoding, "objectId is not a string") }
                record.id = id
            case "createdAt": record.createdAt = try date(value, key)
            case "updatedAt": record.updatedAt = try date(value, key)
            case "ACL": record.acl = value.isNull ? nil : try decodeACL(value)
            case "className" where object["__type"] != nil: continue
            case "__type": continue
            default:
                if userSecretKeys.contains(key) { continue }
                record.fields[key] = try decode(value, path: key)
            }
        }
        return record
    }

    /// The object a server returns for a record: the inverse of ``decodeRecord(className:_:)``.
    public static func encodeRecord(_ record: Record) throws(MBaaSError) -> JSONObject {
        var o = JSONObject()
        for key in record.fields.keys.sorted() { o[key] = try encode(record.fields[key]!, path: key) }
        if let acl = record.acl { o["ACL"] = try encode(acl) }
        if let c = record.createdAt { o["createdAt"] = .string(ISO8601.format(c)) }
        if let u = record.updatedAt { o["updatedAt"] = .string(ISO8601.format(u)) }
        if let id = record.id { o["objectId"] = .string(id) }
        return o
    }

    /// `createdAt`/`updatedAt`: a plain ISO string (Parse's form), or a Date hash (tolerated).
    public static func date(_ json: JSON, _ key: String) throws(MBaaSError) -> Date? {
        if json.isNull { return nil }
        if let s = json.stringValue, let d = ISO8601.parse(s) { return d }
        if case .date(let d) = try decode(json, path: key) { return d }
        throw MBaaSError(.decoding, "\(key) is not an ISO-8601 date: \(json.printed())")
    }

    // MARK: Updates

    /// The JSON body of a partial update (`PUT`): each change as a value or an `__op`, plus `ACL` when set.
    public static func updateBody(_ update: RecordUpdate) throws(MBaaSError) -> JSONObject {
        var body = JSONObject()
        for key in update.changes.keys.sorted() {
            try checkFieldName(key)
            if update.changes[key] == .set(.null) { throw nullUnsupported(key) }
            body[key] = try ParseFieldChange(update.changes[key]!, path: key).json
        }
        if let acl = update.acl { body["ACL"] = try encode(acl) }
        return body
    }

    public static func nullUnsupported(_ key: String) -> MBaaSError {
        MBaaSError.unsupported("null values (\(key))", by: "parse", reason: ParseWire.capabilities.note(for: .valueType("null")))
    }
}

/// One member of a Parse update body: a plain value or an `__op` operator.
public enum ParseFieldChange: Sendable, Hashable {
    /// Set the field (Parse JSON value).
    case set(JSON)
    /// `{"__op":"Delete"}`
    case delete
    /// `{"__op":"Increment","amount":n}`
    case increment(JSON)
    /// `{"__op":"Add","objects":[…]}`
    case add([JSON])
    /// `{"__op":"AddUnique","objects":[…]}`
    case addUnique([JSON])
    /// `{"__op":"Remove","objects":[…]}`
    case remove([JSON])
    /// `{"__op":"AddRelation","objects":[Pointer…]}`
    case addRelation([Pointer])
    /// `{"__op":"RemoveRelation","objects":[Pointer…]}`
    case removeRelation([Pointer])

    /// The Parse change for a core field operation.
    public init(_ op: FieldOperation, path: String = "$") throws(MBaaSError) {
        func list(_ values: [Value]) throws(MBaaSError) -> [JSON] {
            var out: [JSON] = []
            for (i, v) in values.enumerated() { out.append(try ParseCodec.encode(v, path: "\(path)[\(i)]")) }
            return out
        }
        switch op {
        case .set(let v): self = .set(try ParseCodec.encode(v, path: path))
        case .delete: self = .delete
        case .increment(let v):
            guard v.doubleValue != nil else {
                throw MBaaSError(.invalidRequest, "\(path): increment takes a number, got \(v.typeName)")
            }
            self = .increment(try ParseCodec.encode(v, path: path))
        case .add(let vs): self = .add(try list(vs))
        case .addUnique(let vs): self = .addUnique(try list(vs))
        case .remove(let vs): self = .remove(try list(vs))
        }
    }

    /// The core field operation of a change (server direction); relation changes have none (`nil`).
    public func fieldOperation(path: String = "$") throws(MBaaSError) -> FieldOperation? {
        func list(_ items: [JSON]) throws(MBaaSError) -> [Value] {
            var out: [Value] = []
            for (i, item) in items.enumerated() { out.append(try ParseCodec.decode(item, path: "\(path)[\(i)]")) }
            return out
        }
        switch self {
        case .set(let v): return .set(try ParseCodec.decode(v, path: path))
        case .delete: return .delete
        case .increment(let n): return .increment(try ParseCodec.decode(n, path: path))
        case .add(let vs): return .add(try list(vs))
        case .addUnique(let vs): return .addUnique(try list(vs))
        case .remove(let vs): return .remove(try list(vs))
        case .addRelation, .removeRelation: return nil
        }
    }

    public var json: JSON {
        func op(_ name: String, _ objects: [JSON]) -> JSON { .object(["__op": .string(name), "objects": .array(objects)]) }
        switch self {
        case .set(let v): return v
        case .delete: return .object(["__op": "Delete"])
        case .increment(let n): return .object(["__op": "Increment", "amount": n])
        case .add(let vs): return op("Add", vs)
        case .addUnique(let vs): return op("AddUnique", vs)
        case .remove(let vs): return op("Remove", vs)
        case .addRelation(let ps): return op("AddRelation", ps.map(ParseCodec.pointerJSON))
        case .removeRelation(let ps): return op("RemoveRelation", ps.map(ParseCodec.pointerJSON))
        }
    }

    /// Reads one member of an update body (server side). Malformed operators are ``MBaaSError/Kind/invalidRequest``.
    public init(json: JSON, path: String = "$") throws(MBaaSError) {
        guard let o = json.objectValue, let name = o["__op"] else { self = .set(json); return }
        func objects() throws(MBaaSError) -> [JSON] {
            guard let a = o["objects"]?.arrayValue else { throw MBaaSError(.invalidRequest, "\(path): \(name.printed()) needs an 'objects' array") }
            return a
        }
        func pointers() throws(MBaaSError) -> [Pointer] {
            var out: [Pointer] = []
            for item in try objects() {
                guard case .pointer(let p) = try ParseCodec.decode(item, path: path) else {
                    throw MBaaSError(.invalidRequest, "\(path): relation operators take Pointers")
                }
                out.append(p)
            }
            return out
        }
        switch name.stringValue {
        case "Delete": self = .delete
        case "Increment":
            guard let amount = o["amount"], amount.doubleValue != nil else {
                throw MBaaSError(.invalidRequest, "\(path): Increment needs a numeric 'amount'")
            }
            self = .increment(amount)
        case "Add": self = .add(try objects())
        case "AddUnique": self = .addUnique(try objects())
        case "Remove": self = .remove(try objects())
        case "AddRelation": self = .addRelation(try pointers())
        case "RemoveRelation": self = .removeRelation(try pointers())
        default: throw MBaaSError(.invalidRequest, "\(path): unknown __op \(name.printed())")
        }
    }
}
