public import Foundation
public import MBaaSCore

/// sObject records both ways: a REST record (`{"attributes":{"type","url"},"Id",…}`) ↔ the neutral ``Record``.
///
/// System fields [capture: salesforce.md "sObject CRUD", "Query"]: `Id` → ``Record/id``, `CreatedDate` →
/// ``Record/createdAt``, `LastModifiedDate` (else `SystemModstamp`) → ``Record/updatedAt`` and, as written on the
/// wire, ``Record/version`` (the client turns it into `If-Unmodified-Since`). The fields in ``systemFields`` are not
/// fields of the neutral record: the read-only audit fields (a target org refuses them on insert) and `OwnerId`,
/// the org's sharing owner (an org-specific user id, not data; it may still be written to transfer a record).
///
/// Values: JSON scalars are kept; a string of exactly the REST datetime shape (`2024-01-02T03:04:05.000+0000`) is a
/// ``Value/date(_:)`` [inferred: REST JSON has no type tag; a Text field holding exactly that shape reads back as a
/// Date]. Writing: dates as that shape, bytes as base64 (ContentVersion.VersionData); arrays, objects, pointers,
/// files and geo-points have no Salesforce field form here and are refused (``MBaaSError/Kind/unsupported``).
public enum SalesforceRecordCodec {
    /// Audit fields the server maintains; never sent, not kept as neutral fields.
    public static let readOnlyFields: Set<String> = [
        "Id", "CreatedDate", "LastModifiedDate", "SystemModstamp", "CreatedById", "LastModifiedById", "IsDeleted",
        "LastViewedDate", "LastReferencedDate",
    ]

    /// ``readOnlyFields`` and `OwnerId`: read from the wire, never kept as neutral fields.
    public static let systemFields: Set<String> = readOnlyFields.union(["OwnerId"])

    /// The Salesforce field of a neutral key (`id` → `Id`, `createdAt` → `CreatedDate`, `updatedAt` →
    /// `LastModifiedDate`); other keys as they are.
    public static func field(forKey key: String) -> String {
        switch key {
        case "id": "Id"
        case "createdAt": "CreatedDate"
        case "updatedAt": "LastModifiedDate"
        default: key
        }
    }

    /// The neutral key of a Salesforce field (case-insensitive for the system fields, as SOQL is).
    public static func key(forField field: String) -> String {
        switch field.lowercased() {
        case "id": "id"
        case "createddate": "createdAt"
        case "lastmodifieddate", "systemmodstamp": "updatedAt"
        default: field
        }
    }

    /// A wire value as a neutral value.
    public static func value(_ json: JSON) -> Value {
        switch json {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(i)
        case .double(let d): return .double(d)
        case .string(let s):
            if SalesforceDateTime.isDateTimeString(s), let d = SalesforceDateTime.parse(s) { return .date(d) }
            return .string(s)
        case .array(let a): return .array(a.map(value))
        case .object(let o):
            var out: [String: Value] = [:]
            for (k, v) in o where k != "attributes" { out[k] = value(v) }
            return .object(out)
        }
    }

    /// A neutral value as a wire value; `unsupported` for the types Salesforce fields do not hold here, naming the
    /// field; `invalidRequest` for a NaN or infinite double.
    public static func json(_ value: Value, field: String) throws(MBaaSError) -> JSON {
        switch value {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(i)
        case .double(let d):
            guard d.isFinite else { throw MBaaSError(.invalidRequest, "field '\(field)': \(d) is not a number Salesforce stores") }
            return .double(d)
        case .string(let s): return .string(s)
        case .date(let d): return .string(SalesforceDateTime.format(d))
        case .array, .object, .pointer, .file, .geoPoint, .bytes:
            throw .unsupported("\(value.typeName) values (field '\(field)')", by: "salesforce",
                               reason: "an sObject field holds a scalar (text, number, checkbox, date/time); store an id or JSON text instead (bytes: a base64 field reads back as a URL to its blob, not the bytes, so it is refused rather than approximated)")
        }
    }

    /// The body of a create or update: the fields, each name checked as a SOQL identifier (``SalesforceWire/checkIdentifier(_:)``),
    /// none of ``readOnlyFields``.
    public static func body(_ fields: [String: Value], type: String? = nil) throws(MBaaSError) -> JSONObject {
        var o = JSONObject(minimumCapacity: fields.count + 1)
        if let type { o["attributes"] = .object(["type": .string(type)]) }
        for k in fields.keys.sorted() {
            try SalesforceWire.checkIdentifier(k)
            if readOnlyFields.contains(k) {
                throw MBaaSError(.invalidRequest, "field '\(k)' is maintained by Salesforce and cannot be written",
                                 vendorCode: "INVALID_FIELD_FOR_INSERT_UPDATE").refusing(k)
            }
            o[k] = try json(fields[k]!, field: k)
        }
        return o
    }

    /// A REST record as a neutral record; the class is `attributes.type`, else `className`.
    public static func record(_ o: JSONObject, className: String? = nil) throws(MBaaSError) -> Record {
        let attrType = o["attributes"]?.objectValue?["type"]?.stringValue
        guard let type = attrType ?? className else { throw MBaaSError(.decoding, "a record without attributes.type") }
        var r = Record(className: type)
        r.id = o["Id"]?.stringValue
        r.createdAt = o["CreatedDate"]?.stringValue.flatMap(SalesforceDateTime.parse)
        let modified = o["LastModifiedDate"]?.stringValue ?? o["SystemModstamp"]?.stringValue
        r.updatedAt = modified.flatMap(SalesforceDateTime.parse)
        r.version = modified
        var fields: [String: Value] = [:]
        fields.reserveCapacity(o.count)
        for (k, v) in o where k != "attributes" && !systemFields.contains(k) { fields[k] = value(v) }
        r.fields = fields
        return r
    }

    /// The server direction: a neutral record as a REST record, `attributes` first, then `Id`, the fields, and the
    /// system dates (`CreatedDate`, `LastModifiedDate`, `SystemModstamp`) as the org returns them.
    public static func json(_ r: Record, version: String) -> JSONObject {
        var o = JSONObject(minimumCapacity: r.fields.count + 5)
        var attributes: JSONObject = ["type": .string(r.className)]
        if let id = r.id { attributes["url"] = .string(SalesforceRoute.sobject(r.className, id: id).path(version: version)) }
        o["attributes"] = .object(attributes)
        if let id = r.id { o["Id"] = .string(id) }
        for k in r.fields.keys.sorted() {
            o[k] = (try? json(r.fields[k]!, field: k)) ?? r.fields[k]!.json
        }
        if let c = r.createdAt { o["CreatedDate"] = .string(SalesforceDateTime.format(c)) }
        if let u = r.updatedAt {
            o["LastModifiedDate"] = .string(SalesforceDateTime.format(u))
            o["SystemModstamp"] = .string(SalesforceDateTime.format(u))
        }
        return o
    }

    /// The server direction: the fields of a create or update body. `attributes` is dropped; `Id` answers 400
    /// INVALID_FIELD "The Id field should not be specified in the sobject data." [doc]; a name that is not an
    /// identifier answers INVALID_FIELD.
    public static func fields(ofBody o: JSONObject) throws(MBaaSError) -> [String: Value] {
        var out: [String: Value] = [:]
        for (k, v) in o where k != "attributes" {
            if k.lowercased() == "id" {
                throw MBaaSError(.invalidRequest, "The Id field should not be specified in the sobject data.",
                                 vendorCode: "INVALID_FIELD")
            }
            do { try SalesforceWire.checkIdentifier(k) } catch {
                throw MBaaSError(.invalidRequest, "No such column '\(k)' on sobject", vendorCode: "INVALID_FIELD")
            }
            out[k] = value(v)
        }
        return out
    }
}
