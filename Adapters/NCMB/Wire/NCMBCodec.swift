public import Foundation
public import MBaaSCore

/// The NCMB wire codec for values, ACLs, records and field changes: pure functions, both directions, so a client
/// and a server (the future emulator) share one definition of the format.
///
/// Value mapping (NCMB JSON ↔ ``Value``):
///
/// | NCMB JSON | ``Value`` |
/// |---|---|
/// | `null`, booleans, numbers, strings, arrays, objects | the same (`5` is `int`, `5.0` is `double`) |
/// | `{"__type":"Date","iso":"…"}` | ``Value/date(_:)`` |
/// | `{"__type":"Pointer","className":"user","objectId":"…"}` | ``Value/pointer(_:)`` (class name made neutral: `_User`) |
/// | `{"__type":"GeoPoint","latitude":…,"longitude":…}` | ``Value/geoPoint(_:)`` |
/// | `{"__type":"Relation","className":"X"}` (read only) | `.object(["__type":"Relation","className":"X"])`: a marker; members are found with `$relatedTo` |
/// | `{"__type":"Object","className":"X","objectId":…,…}` (an `include`d pointer) | `.object` of its decoded members with `__type` and `className` kept; written back, it becomes a Pointer again |
///
/// NCMB has no binary and no file type: encoding ``Value/bytes(_:)`` or ``Value/file(_:)`` throws
/// ``MBaaSError/Kind/unsupported`` (store files in the file store; a record refers to one by name in a string
/// field, see ``NCMBBackend/upload(_:)``).
public enum NCMBCodec {
    /// Field names NCMB keeps for metadata; they never appear in ``Record/fields``.
    public static let metadataKeys: Set<String> = ["objectId", "createDate", "updateDate", "acl"]
    /// User fields NCMB keeps for itself (ncmb.md §1.6): never in ``User/fields``, refused in sign-up fields.
    public static let userSystemFields: Set<String> = ["mailAddressConfirm", "temporaryPassword"]

    // MARK: Values

    /// The NCMB JSON of a value (request side).
    public static func encode(_ value: Value, path: String = "$") throws(MBaaSError) -> JSON {
        switch value {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i):
            // NCMB is not known to keep integers beyond ±2^53 exactly (its SDKs' JSON numbers are doubles).
            guard i.magnitude <= 9_007_199_254_740_992 else {
                throw MBaaSError.unsupported("integers beyond ±2^53 (\(path): \(i))", by: "ncmb",
                                             reason: NCMBWire.capabilities.note(for: .valueType("int")))
            }
            return .int(i)
        case .double(let d):
            guard d.isFinite else { throw MBaaSError(.invalidRequest, "\(path): \(d) cannot be stored (JSON has no NaN or infinity)") }
            return .double(d)
        case .string(let s): return .string(s)
        case .date(let d): return dateJSON(d)
        case .bytes:
            throw MBaaSError.unsupported("binary values (\(path))", by: "ncmb",
                                         reason: "NCMB has no binary type; upload the bytes to the file store and keep the file name")
        case .file(let f):
            throw MBaaSError.unsupported("File values (\(path))", by: "ncmb",
                                         reason: "NCMB has no File type; store the file name '\(f.name)' as a string, or upload with FileUpload.attachment")
        case .pointer(let p): return pointerJSON(p)
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
                    // An included object written back: NCMB stores a pointer.
                    guard let cls = members["className"]?.stringValue, let id = members["objectId"]?.stringValue else {
                        throw MBaaSError(.invalidRequest, "\(path): an included Object needs className and objectId")
                    }
                    return pointerJSON(Pointer(className: cls, objectId: id))
                case .string("Relation"):
                    throw MBaaSError(.invalidRequest, "\(path): a Relation cannot be set as a value; use NCMBBackend.addRelation/removeRelation")
                default:
                    throw MBaaSError(.invalidRequest, "\(path): '__type' is reserved by NCMB in object values")
                }
            }
            var out: [(String, JSON)] = []
            for key in members.keys.sorted() {
                if key.hasPrefix("__") { throw MBaaSError(.invalidRequest, "\(path).\(key): keys starting with '__' are reserved by NCMB") }
                out.append((key, try encode(members[key]!, path: "\(path).\(key)")))
            }
            return .object(JSONObject(out))
        }
    }

    /// The value of NCMB JSON (response side). Malformed typed forms are ``MBaaSError/Kind/decoding`` errors;
    /// an unknown `__type` is kept as a plain object so nothing is lost.
    public static func decode(_ json: JSON, path: String = "$") throws(MBaaSError) -> Value {
        do {
            return try Value.walk(json, typed: typed)
        } catch {
            throw MBaaSError(.decoding, path + error.path + ": " + error.message)
        }
    }

    /// NCMB's typed objects for ``MBaaSCore/Value/walk(_:typed:)``; `nil` (an unknown type) keeps a plain object.
    static func typed(_ type: JSON?, _ o: JSONObject, _ member: Value.MemberDecoder) throws(Value.ConversionError) -> Value? {
        guard let type else { return nil }
        func string(_ key: String) throws(Value.ConversionError) -> String {
            guard let s = o[key]?.stringValue else {
                throw Value.ConversionError(message: "\(type.stringValue ?? "?") without a string '\(key)'")
            }
            return s
        }
        switch type.stringValue {
        case "Date":
            let iso = try string("iso")
            guard let date = ISO8601.parse(iso) else { throw Value.ConversionError(message: "'\(iso)' is not an ISO-8601 date") }
            return .date(date)
        case "Pointer":
            return .pointer(Pointer(className: NCMBClassName.neutral(fromWire: try string("className")),
                                    objectId: try string("objectId")))
        case "GeoPoint":
            guard let lat = o["latitude"]?.doubleValue, let lon = o["longitude"]?.doubleValue else {
                throw Value.ConversionError(message: "GeoPoint without numeric latitude and longitude")
            }
            return .geoPoint(GeoPoint(latitude: lat, longitude: lon))
        case "Relation":
            return .object(["__type": "Relation", "className": .string(NCMBClassName.neutral(fromWire: try string("className")))])
        case "Object":
            var members: [String: Value] = [:]
            for (k, v) in o {
                switch k {
                case "__type": members[k] = "Object"
                case "className": members[k] = .string(NCMBClassName.neutral(fromWire: try string("className")))
                case "createDate", "updateDate":
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

    /// `{"__type":"Pointer","className":<wire name>,"objectId":…}`
    public static func pointerJSON(_ p: Pointer) -> JSON {
        .object(["__type": "Pointer", "className": .string(NCMBClassName.wire(fromNeutral: p.className)),
                 "objectId": .string(p.objectId)])
    }

    // MARK: ACL

    /// The NCMB ACL (`{"*":{"read":true},"<userId>":{…},"role:<name>":{…}}`). Group principals do not exist in
    /// NCMB and are ``MBaaSError/Kind/unsupported``.
    public static func encode(_ acl: ACL) throws(MBaaSError) -> JSON {
        if let group = acl.entries.keys.first(where: { if case .group = $0 { true } else { false } }) {
            throw MBaaSError.unsupported("group principals in ACLs ('\(group.key)')", by: "ncmb",
                                         reason: "NCMB ACLs name users and roles only")
        }
        return acl.json
    }

    /// Reads an NCMB ACL; `false` grants are dropped, anything else malformed is a decoding error.
    public static func decodeACL(_ json: JSON) throws(MBaaSError) -> ACL {
        do { return try ACL(json: json) } catch { throw MBaaSError(.decoding, "acl: \(error.message)") }
    }

    // MARK: Records

    /// The JSON body that creates a record: its fields, plus `acl` when set.
    /// Reserved names (the neutral metadata names and NCMB's `objectId`, `createDate`, `updateDate`, `acl`) are
    /// ``MBaaSError/Kind/invalidRequest``.
    public static func createBody(_ record: Record) throws(MBaaSError) -> JSONObject {
        var body = JSONObject()
        for key in record.fields.keys.sorted() {
            try checkFieldName(key)
            if record.fields[key] == .null { throw nullUnsupported(key) }
            body[key] = try encode(record.fields[key]!, path: key)
        }
        if let acl = record.acl { body["acl"] = try encode(acl) }
        return body
    }

    /// Throws ``MBaaSError/Kind/invalidRequest`` for a name NCMB or the neutral record reserves.
    public static func checkFieldName(_ key: String) throws(MBaaSError) {
        if key.isEmpty { throw MBaaSError(.invalidRequest, "empty field name") }
        if Record.reservedFieldNames.contains(key) || metadataKeys.contains(key) {
            throw MBaaSError(.invalidRequest, "'\(key)' is reserved for record metadata")
        }
        if key == "_id" {
            // [doc] user-registration page (ncmb.md §1.6): "フィールド名に「_id」は指定不可とします".
            throw MBaaSError(.invalidRequest, "field name '_id' is reserved by NCMB")
        }
        if key.hasPrefix("__") || key.hasPrefix("$") {
            throw MBaaSError(.invalidRequest, "field name '\(key)' is reserved by NCMB (starts with '__' or '$')")
        }
    }

    /// A record from an NCMB object (a get, a query result or an update's re-read): `objectId`, `createDate`,
    /// `updateDate` (plain ISO strings) and `acl` become metadata; `sessionToken` and `password` are dropped;
    /// top-level `null`s are cleared fields and are left out; everything else becomes a field.
    public static func decodeRecord(className: String, _ object: JSONObject) throws(MBaaSError) -> Record {
        var record = Record(className: className)
        for (key, value) in object {
            switch key {
            case "objectId":
                guard let id = value.stringValue else { throw MBaaSError(.decoding, "objectId is not a string") }
                record.id = id
            case "createDate": record.createdAt = try date(value, key)
            case "updateDate": record.updatedAt = try date(value, key)
            case "acl": record.acl = value.isNull ? nil : try decodeACL(value)
            case "sessionToken", "password": continue
            default:
                // NCMB clears a field by setting it to null; the neutral record then lacks it.
                if value.isNull { continue }
                record.fields[key] = try decode(value, path: key)
            }
        }
        return record
    }

    /// The object a server stores for a record: the inverse of ``decodeRecord(className:_:)``.
    public static func encodeRecord(_ record: Record) throws(MBaaSError) -> JSONObject {
        var o = JSONObject()
        if let id = record.id { o["objectId"] = .string(id) }
        if let c = record.createdAt { o["createDate"] = .string(ISO8601.format(c)) }
        if let u = record.updatedAt { o["updateDate"] = .string(ISO8601.format(u)) }
        for key in record.fields.keys.sorted() { o[key] = try encode(record.fields[key]!, path: key) }
        if let acl = record.acl { o["acl"] = try encode(acl) }
        return o
    }

    /// `createDate`/`updateDate`: a plain ISO string (NCMB's form), or a Date object (tolerated).
    static func date(_ json: JSON, _ key: String) throws(MBaaSError) -> Date? {
        if json.isNull { return nil }
        if let s = json.stringValue, let d = ISO8601.parse(s) { return d }
        if case .date(let d) = try decode(json, path: key) { return d }
        throw MBaaSError(.decoding, "\(key) is not an ISO-8601 date: \(json.printed())")
    }

    // MARK: Updates

    /// The JSON body of a partial update (`PUT`): each change as an NCMB value or `__op`, plus `acl` when set.
    public static func updateBody(_ update: RecordUpdate) throws(MBaaSError) -> JSONObject {
        var body = JSONObject()
        for key in update.changes.keys.sorted() {
            try checkFieldName(key)
            if update.changes[key] == .set(.null) { throw nullUnsupported(key) }
            body[key] = try NCMBFieldChange(update.changes[key]!, path: key).json
        }
        if let acl = update.acl { body["acl"] = try encode(acl) }
        return body
    }

    /// A null field cannot be kept apart from a cleared one in NCMB: storing one is refused, not approximated.
    static func nullUnsupported(_ key: String) -> MBaaSError {
        MBaaSError.unsupported("null values (\(key))", by: "ncmb", reason: NCMBWire.capabilities.note(for: .valueType("null")))
    }
}

/// One field of an NCMB update body: a plain value (set; `null` clears the field) or an `__op` operator.
public enum NCMBFieldChange: Sendable, Hashable {
    /// Set the field (NCMB JSON value; `null` clears it, NCMB has no `Delete` op).
    case set(JSON)
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

    /// The NCMB change for a core field operation.
    public init(_ op: FieldOperation, path: String = "$") throws(MBaaSError) {
        func list(_ values: [Value]) throws(MBaaSError) -> [JSON] {
            var out: [JSON] = []
            for (i, v) in values.enumerated() { out.append(try NCMBCodec.encode(v, path: "\(path)[\(i)]")) }
            return out
        }
        switch op {
        case .set(let v): self = .set(try NCMBCodec.encode(v, path: path))
        case .delete: self = .set(.null)
        case .increment(let v):
            guard v.doubleValue != nil else {
                throw MBaaSError(.invalidRequest, "\(path): increment takes a number, got \(v.typeName)")
            }
            self = .increment(try NCMBCodec.encode(v, path: path))
        case .add(let vs): self = .add(try list(vs))
        case .addUnique(let vs): self = .addUnique(try list(vs))
        case .remove(let vs): self = .remove(try list(vs))
        }
    }

    public var json: JSON {
        func op(_ name: String, _ objects: [JSON]) -> JSON { .object(["__op": .string(name), "objects": .array(objects)]) }
        switch self {
        case .set(let v): return v
        case .increment(let n): return .object(["__op": "Increment", "amount": n])
        case .add(let vs): return op("Add", vs)
        case .addUnique(let vs): return op("AddUnique", vs)
        case .remove(let vs): return op("Remove", vs)
        case .addRelation(let ps): return op("AddRelation", ps.map(NCMBCodec.pointerJSON))
        case .removeRelation(let ps): return op("RemoveRelation", ps.map(NCMBCodec.pointerJSON))
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
                guard case .pointer(let p) = try NCMBCodec.decode(item, path: path) else {
                    throw MBaaSError(.invalidRequest, "\(path): relation operators take Pointers")
                }
                out.append(p)
            }
            return out
        }
        switch name.stringValue {
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
