public import Foundation
public import MBaaSCore

extension ParseFamilyCodec {
    // MARK: Records

    /// Throws ``MBaaSError/Kind/invalidRequest`` for a name the vendor or the neutral record reserves: the metadata
    /// keys, the rules' reserved names, and names starting with `__` or `$`.
    public static func checkFieldName(_ key: String) throws(MBaaSError) {
        let rules = Vendor.rules
        if key.isEmpty { throw MBaaSError(.invalidRequest, "empty field name") }
        if Record.reservedFieldNames.contains(key) || rules.metadataKeys.contains(key) {
            throw MBaaSError(.invalidRequest, "'\(key)' is reserved for record metadata")
        }
        if let reason = rules.reservedFieldNames[key] { throw MBaaSError(.invalidRequest, reason) }
        if key.hasPrefix("__") || key.hasPrefix("$") {
            throw MBaaSError(.invalidRequest, "field name '\(key)' is reserved by \(rules.displayName) (starts with '__' or '$')")
        }
    }

    /// The JSON body that creates a record: its fields, plus the ACL when set. Reserved names are
    /// ``MBaaSError/Kind/invalidRequest``; a `null` value is refused (``nullUnsupported(_:)``).
    public static func createBody(_ record: Record) throws(MBaaSError) -> JSONObject {
        var body = JSONObject()
        for key in record.fields.keys.sorted() {
            try checkFieldName(key)
            if record.fields[key] == .null { throw nullUnsupported(key) }
            body[key] = try encode(record.fields[key]!, path: key)
        }
        if let acl = record.acl { body[Vendor.rules.aclKey] = try encode(acl) }
        return body
    }

    /// A record from a vendor object (a get, a query result or an update's re-read): `objectId`, the dates (plain
    /// ISO strings) and the ACL become metadata; the rules' dropped keys are left out; a top-level `null` is a
    /// field where the rules keep nulls, a cleared field (left out) where they do not; everything else is a field.
    public static func decodeRecord(className: String, _ object: JSONObject) throws(MBaaSError) -> Record {
        let rules = Vendor.rules
        let dropsObjectMarker = rules.droppedRecordKeys.contains("__type") && object["__type"] != nil
        var record = Record(className: className)
        for (key, value) in object {
            switch key {
            case "objectId":
                guard let id = value.stringValue else { throw MBaaSError(.decoding, "objectId is not a string") }
                record.id = id
            case rules.createdAtKey: record.createdAt = try date(value, key)
            case rules.updatedAtKey: record.updatedAt = try date(value, key)
            case rules.aclKey: record.acl = value.isNull ? nil : try decodeACL(value)
            case "className" where dropsObjectMarker: continue
            default:
                if rules.droppedRecordKeys.contains(key) { continue }
                if value.isNull && !rules.keepsNullFields { continue }
                record.fields[key] = try decode(value, path: key)
            }
        }
        return record
    }

    /// The object a server stores and answers for a record: the inverse of ``decodeRecord(className:_:)``, in the
    /// vendor's member order.
    public static func encodeRecord(_ record: Record) throws(MBaaSError) -> JSONObject {
        let rules = Vendor.rules
        var o = JSONObject()
        func metadata() {
            if let c = record.createdAt { o[rules.createdAtKey] = .string(ISO8601.format(c)) }
            if let u = record.updatedAt { o[rules.updatedAtKey] = .string(ISO8601.format(u)) }
        }
        if rules.metadataFirst {
            if let id = record.id { o["objectId"] = .string(id) }
            metadata()
        }
        for (key, value) in record.fields.sorted(by: { $0.key < $1.key }) { o[key] = try encode(value, path: key) }
        if let acl = record.acl { o[rules.aclKey] = try encode(acl) }
        if !rules.metadataFirst {
            metadata()
            if let id = record.id { o["objectId"] = .string(id) }
        }
        return o
    }

    /// A record date (`createdAt`/`createDate`, …): a plain ISO string (the family's form), or a Date object
    /// (tolerated); `null` is no date.
    public static func date(_ json: JSON, _ key: String) throws(MBaaSError) -> Date? {
        if json.isNull { return nil }
        if let s = json.stringValue, let d = ISO8601.parse(s) { return d }
        if case .date(let d) = try decode(json, path: key) { return d }
        throw MBaaSError(.decoding, "\(key) is not an ISO-8601 date: \(json.printed())")
    }

    // MARK: Updates

    /// The JSON body of a partial update (`PUT`): each change as a value or an `__op`, plus the ACL when set.
    public static func updateBody(_ update: RecordUpdate) throws(MBaaSError) -> JSONObject {
        var body = JSONObject()
        for key in update.changes.keys.sorted() {
            try checkFieldName(key)
            if update.changes[key] == .set(.null) { throw nullUnsupported(key) }
            body[key] = try ParseFamilyFieldChange<Vendor>(update.changes[key]!, path: key).json
        }
        if let acl = update.acl { body[Vendor.rules.aclKey] = try encode(acl) }
        return body
    }

    /// A stored `null` is not told apart from a cleared field everywhere in the family: writing one is refused, not
    /// approximated.
    public static func nullUnsupported(_ key: String) -> MBaaSError {
        MBaaSError.unsupported("null values (\(key))", by: Vendor.rules.adapter, reason: Vendor.rules.nullReason)
    }

    // MARK: Server side

    /// The fields, the relation fields and the ACL of a create body, as a server reads it: the ACL member apart, the
    /// keys in `ignoring` skipped (server-set keys a client echoes back), each other member checked by `checkName`
    /// and read as a value or an operator applied to nothing (`Increment` is its amount, `Add`/`AddUnique` the
    /// objects, `Remove` an empty array, `Delete` nothing; a relation operator makes an array of pointers and names
    /// the field in `relations`). `value` and `acl` read the JSON with the server's own errors.
    public static func createFields(
        _ body: JSONObject, ignoring: Set<String>, checkName: (String) throws -> Void,
        value: (JSON, String) throws -> Value, acl readACL: (JSON) throws -> ACL
    ) throws -> (fields: [String: Value], relations: [String], acl: ACL?) {
        var fields: [String: Value] = [:]
        var relations: [String] = []
        var acl: ACL?
        for (key, json) in body {
            if ignoring.contains(key) { continue }
            if key == Vendor.rules.aclKey { acl = json.isNull ? nil : try readACL(json); continue }
            try checkName(key)
            switch try ParseFamilyFieldChange<Vendor>(json: json, path: key) {
            case .set(let v): fields[key] = try value(v, key)
            case .delete: continue
            case .increment(let n): fields[key] = try value(n, key)
            case .add(let vs), .addUnique(let vs): fields[key] = .array(try vs.map { try value($0, key) })
            case .remove: fields[key] = .array([])
            case .addRelation(let ps):
                fields[key] = .array(ps.map(Value.pointer))
                relations.append(key)
            case .removeRelation:
                fields[key] = .array([])
                relations.append(key)
            }
        }
        return (fields, relations.sorted(), acl)
    }
}
