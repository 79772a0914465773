import Foundation
public import MBaaSCore

/// Neutral records and values ↔ PocketBase record JSON, both directions (a client's request body and a server's
/// response are the same shape).
///
/// # Storage model
/// PocketBase fields are typed columns that always hold a value (`""`, `0`, `false`, `null` when unset), and its
/// number columns do not keep `5` and `5.0` apart. So every field `F` written by this adapter gets a text column
/// `F__type` beside it holding the neutral type name (``Value/typeName``: `string`, `int`, `double`, `bool`,
/// `Date`, `GeoPoint`, `Pointer`, `Bytes`, `File`, `array`, `object`, or `null`); `""` means the field is absent.
/// Values of JSON columns that contain whole doubles (which PocketBase prints as integers) carry the JSON
/// pointers of those doubles after the type name: `array ["/1","/2/x"]`.
///
/// | neutral value | column | stored as |
/// |---|---|---|
/// | string | `text` | the string |
/// | int, double | `number` | the number (ints within ±2^53, PocketBase numbers are 64-bit floats) |
/// | bool | `bool` | the bool |
/// | Date | `date` | `2024-03-31 12:34:56.789Z` |
/// | GeoPoint | `geoPoint` | `{"lon":..,"lat":..}` |
/// | Pointer, Bytes, array, object, File (a reference) | `json` | the neutral JSON form |
/// | File attached to the record | `file` | the stored file name (written by an upload) |
/// | null | none needed | only the type column |
///
/// A field of a column that has no type column (a collection made outside MBaaSKit) is read by the column's own
/// type and is always present. The per-record ACL lives in the `mbaas_*` columns (see ``aclColumns(_:)``).
public enum PocketBaseRecordCodec {
    /// The largest integer a PocketBase number (a 64-bit float) holds exactly.
    public static let maxSafeInteger: Int64 = 9_007_199_254_740_991

    /// A change to one field in a request body.
    public enum Change: Sendable, Hashable {
        case set(Value)
        case delete
    }

    /// A value as stored: the column's JSON (`nil` when no column is needed), the type tag, and the column kind
    /// it needs (`nil` for null).
    public struct Stored: Sendable, Hashable {
        public var column: JSON?
        public var tag: String
        public var kind: PocketBaseFieldKind?
    }

    // MARK: Values

    /// How a value is stored in a column of the given kind (`nil`: the column does not exist yet and will be
    /// created with ``Stored/kind``). A value the column cannot hold is `invalidRequest` naming the field.
    public static func store(_ value: Value, field: String, existing: PocketBaseFieldKind?) throws(MBaaSError) -> Stored {
        try checkRepresentable(value, path: field)
        func mismatch() -> MBaaSError {
            MBaaSError(.invalidRequest, "field '\(field)' is a PocketBase \(existing?.rawValue ?? "?") field and cannot hold a \(value.typeName) value")
        }
        if case .null = value {
            return Stored(column: existing.map(zeroValue(for:)), tag: "null", kind: nil)
        }
        switch existing {
        case nil:
            switch value {
            case .string(let s): return Stored(column: .string(s), tag: "string", kind: .text)
            case .int(let i): return Stored(column: .int(i), tag: "int", kind: .number)
            case .double(let d): return Stored(column: .double(d), tag: "double", kind: .number)
            case .bool(let b): return Stored(column: .bool(b), tag: "bool", kind: .bool)
            case .date(let d): return Stored(column: .string(PocketBaseWire.formatDate(d)), tag: "Date", kind: .date)
            case .geoPoint(let g): return Stored(column: geoJSON(g), tag: "GeoPoint", kind: .geoPoint)
            default: return storeJSON(value)
            }
        case .json?:
            return storeJSON(value)
        case .number?:
            switch value {
            case .int(let i): return Stored(column: .int(i), tag: "int", kind: .number)
            case .double(let d): return Stored(column: .double(d), tag: "double", kind: .number)
            default: throw mismatch()
            }
        case let kind? where kind.isTextual:
            guard case .string(let s) = value else { throw mismatch() }
            return Stored(column: .string(s), tag: "string", kind: kind)
        case .bool?:
            guard case .bool(let b) = value else { throw mismatch() }
            return Stored(column: .bool(b), tag: "bool", kind: .bool)
        case .date?:
            guard case .date(let d) = value else { throw mismatch() }
            return Stored(column: .string(PocketBaseWire.formatDate(d)), tag: "Date", kind: .date)
        case .geoPoint?:
            guard case .geoPoint(let g) = value else { throw mismatch() }
            return Stored(column: geoJSON(g), tag: "GeoPoint", kind: .geoPoint)
        case .file?:
            guard case .file(let f) = value else { throw mismatch() }
            return Stored(column: .string(f.name), tag: "File", kind: .file)
        case .relation?:
            guard case .pointer(let p) = value else { throw mismatch() }
            return Stored(column: .string(p.objectId), tag: "Pointer", kind: .relation)
        default:
            throw mismatch()
        }
    }

    private static func storeJSON(_ value: Value) -> Stored {
        let json = value.json
        let doubles = wholeDoublePaths(json, at: "")
        var tag = value.typeName
        if !doubles.isEmpty, value.typeName != "double" {
            tag += " " + JSON.array(doubles.map(JSON.string)).printed()
        }
        return Stored(column: json, tag: tag, kind: .json)
    }

    private static func geoJSON(_ g: GeoPoint) -> JSON { .object(["lon": .double(g.longitude), "lat": .double(g.latitude)]) }

    /// Rejects values PocketBase cannot store exactly: integers beyond ±2^53 and non-finite doubles.
    public static func checkRepresentable(_ value: Value, path: String) throws(MBaaSError) {
        switch value {
        case .int(let i) where i > maxSafeInteger || i < -maxSafeInteger:
            throw MBaaSError(.unsupported, "\(path): \(i) is outside ±2^53; PocketBase stores numbers as 64-bit floats and would change it")
        case .double(let d) where !d.isFinite:
            throw MBaaSError(.invalidRequest, "\(path): \(d) is not a finite number; PocketBase cannot store it")
        case .array(let a):
            for (i, v) in a.enumerated() { try checkRepresentable(v, path: "\(path)[\(i)]") }
        case .object(let o):
            for (k, v) in o { try checkRepresentable(v, path: "\(path).\(k)") }
        default: break
        }
    }

    /// The value PocketBase gives a column that was never set.
    public static func zeroValue(for kind: PocketBaseFieldKind) -> JSON {
        switch kind {
        case .number: .int(0)
        case .bool: false
        case .json: .null
        case .geoPoint: .object(["lon": 0, "lat": 0])
        default: ""
        }
    }

    /// Where a value was read from, for values that refer to their record (attached files, relations).
    public struct Location: Sendable, Hashable {
        public var baseURL: String
        public var collection: String
        public var recordId: String?
        public init(baseURL: String, collection: String, recordId: String?) {
            self.baseURL = baseURL
            self.collection = collection
            self.recordId = recordId
        }
    }

    /// Reads a field. `tag` is the type column's value (`nil` when the field has none); `nil` result = absent.
    public static func load(
        field: String, column: JSON?, tag: String?, kind: PocketBaseFieldKind?, relationTarget: String? = nil,
        location: Location
    ) throws(MBaaSError) -> Value? {
        guard let tag else { return try loadNatural(field: field, column: column, kind: kind, relationTarget: relationTarget, location: location) }
        if tag.isEmpty { return nil }
        let (type, doubles) = try parseTag(tag, field: field)
        if type == "null" { return .null }
        guard let column else { return nil }  // not selected
        func bad() -> MBaaSError {
            MBaaSError(.decoding, "PocketBase field '\(field)' is tagged '\(type)' but holds \(column.printed().prefix(80))")
        }
        switch (type, column) {
        case ("string", .string(let s)): return .string(s)
        case ("int", let n) where n.intValue != nil: return .int(n.intValue!)
        case ("double", let n) where n.doubleValue != nil: return .double(n.doubleValue!)
        case ("bool", .bool(let b)): return .bool(b)
        case ("Date", .string(let s)):
            guard let d = PocketBaseWire.parseDate(s) else { throw bad() }
            return .date(d)
        case ("GeoPoint", .object(let o)) where o["__type"] == nil:
            guard let lat = o["lat"]?.doubleValue, let lon = o["lon"]?.doubleValue else { throw bad() }
            return .geoPoint(GeoPoint(latitude: lat, longitude: lon))
        case ("File", .string(let name)):
            return name.isEmpty ? nil : .file(attachedFile(name, field: field, location: location))
        case ("Pointer", .string(let id)):
            return id.isEmpty ? nil : .pointer(Pointer(className: relationTarget ?? location.collection, objectId: id))
        default:
            let isObject = column.objectValue != nil
            guard (isObject && ["Date", "GeoPoint", "File", "Pointer", "Bytes", "object"].contains(type))
                    || (type == "array" && column.arrayValue != nil)
            else { throw bad() }
            let restored = restoreDoubles(column, paths: doubles)
            do { return try Value(json: restored, path: field) } catch { throw MBaaSError(.decoding, error.message) }
        }
    }

    private static func loadNatural(
        field: String, column: JSON?, kind: PocketBaseFieldKind?, relationTarget: String?, location: Location
    ) throws(MBaaSError) -> Value? {
        guard let column else { return nil }
        switch (kind, column) {
        case (_, .null): return nil
        case (.date?, .string(let s)), (.autodate?, .string(let s)):
            return PocketBaseWire.parseDate(s).map(Value.date)
        case (.file?, .string(let s)):
            return s.isEmpty ? nil : .file(attachedFile(s, field: field, location: location))
        case (.file?, .array(let names)):
            return .array(names.compactMap(\.stringValue).map { .file(attachedFile($0, field: field, location: location)) })
        case (.relation?, .string(let s)):
            return s.isEmpty ? nil : .pointer(Pointer(className: relationTarget ?? "", objectId: s))
        case (.relation?, .array(let ids)):
            return .array(ids.compactMap(\.stringValue).map { .pointer(Pointer(className: relationTarget ?? "", objectId: $0)) })
        case (.geoPoint?, .object(let o)):
            guard let lat = o["lat"]?.doubleValue, let lon = o["lon"]?.doubleValue else { return nil }
            return .geoPoint(GeoPoint(latitude: lat, longitude: lon))
        case (.password?, _): return nil
        case (_, .string(let s)): return .string(s)
        case (_, .bool(let b)): return .bool(b)
        case (_, .int(let i)): return .int(i)
        case (_, .double(let d)): return .double(d)
        case (_, .array), (_, .object):
            return (try? Value(json: column, path: field)) ?? plainValue(column)
        }
    }

    /// A JSON value as a neutral value without interpreting `__type` members.
    public static func plainValue(_ json: JSON) -> Value {
        switch json {
        case .null: .null
        case .bool(let b): .bool(b)
        case .int(let i): .int(i)
        case .double(let d): .double(d)
        case .string(let s): .string(s)
        case .array(let a): .array(a.map(plainValue))
        case .object(let o): .object(o.dictionary.mapValues(plainValue))
        }
    }

    private static func attachedFile(_ name: String, field: String, location: Location) -> FileReference {
        var url: String?
        var attachment: FileAttachment?
        if let id = location.recordId {
            url = location.baseURL + PocketBaseWire.filePath(collection: location.collection, recordId: id, filename: name)
            attachment = FileAttachment(className: location.collection, objectId: id, field: field)
        }
        return FileReference(name: name, url: url, attachment: attachment)
    }

    // MARK: Type tags

    /// Splits a tag into the type name and the JSON pointers of whole doubles.
    public static func parseTag(_ tag: String, field: String = "?") throws(MBaaSError) -> (type: String, doubles: [String]) {
        guard let space = tag.firstIndex(of: " ") else { return (tag, []) }
        let type = String(tag[..<space])
        guard let json = try? JSON.parse(String(tag[tag.index(after: space)...])), let items = json.arrayValue,
              items.allSatisfy({ $0.stringValue != nil })
        else { throw MBaaSError(.decoding, "PocketBase field '\(field)' has a malformed type tag '\(tag)'") }
        return (type, items.compactMap(\.stringValue))
    }

    /// JSON pointers (RFC 6901) of every double with no fractional part inside a JSON value.
    public static func wholeDoublePaths(_ json: JSON, at path: String) -> [String] {
        switch json {
        case .double(let d) where d.rounded() == d: return [path]
        case .array(let a): return a.enumerated().flatMap { wholeDoublePaths($1, at: path + "/" + String($0)) }
        case .object(let o): return o.flatMap { wholeDoublePaths($1, at: path + "/" + escapePointer($0)) }
        default: return []
        }
    }

    /// Turns the numbers at the given JSON pointers back into doubles.
    public static func restoreDoubles(_ json: JSON, paths: [String]) -> JSON {
        var result = json
        for path in paths {
            let tokens = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { unescapePointer(String($0)) }
            result = updating(result, tokens[...]) { v in v.doubleValue.map(JSON.double) ?? v }
        }
        return result
    }

    private static func updating(_ json: JSON, _ tokens: ArraySlice<String>, _ f: (JSON) -> JSON) -> JSON {
        guard let token = tokens.first else { return f(json) }
        switch json {
        case .array(var a):
            guard let i = Int(token), a.indices.contains(i) else { return json }
            a[i] = updating(a[i], tokens.dropFirst(), f)
            return .array(a)
        case .object(var o):
            guard let v = o[token] else { return json }
            o[token] = updating(v, tokens.dropFirst(), f)
            return .object(o)
        default: return json
        }
    }

    private static func escapePointer(_ s: String) -> String {
        s.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }

    private static func unescapePointer(_ s: String) -> String {
        s.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
    }

    // MARK: ACL

    /// The ACL columns of a record: `mbaas_acl` (the neutral ACL, `null` for none) and the columns the API rules
    /// read: `mbaas_public_read`, `mbaas_public_write`, `mbaas_readers`, `mbaas_writers` (user ids). No ACL means
    /// public read and write. Roles and groups do not exist in PocketBase: an ACL naming them is `unsupported`.
    public static func aclColumns(_ acl: ACL?) throws(MBaaSError) -> JSONObject {
        typealias C = PocketBaseCollection.ACLColumn
        guard let acl else {
            return [C.acl: .null, C.publicRead: true, C.publicWrite: true, C.readers: [], C.writers: []]
        }
        var readers: [String] = []
        var writers: [String] = []
        for (principal, access) in acl.entries.sorted(by: { $0.key < $1.key }) {
            switch principal {
            case .everyone: break
            case .user(let id):
                if access.read { readers.append(id) }
                if access.write { writers.append(id) }
            case .role, .group:
                throw MBaaSError.unsupported(
                    "ACL principal '\(principal.key)'", by: "pocketbase",
                    reason: "PocketBase has no roles or groups; ACLs may name everyone and user ids")
            }
        }
        return [
            C.acl: acl.json, C.publicRead: .bool(acl[.everyone].read), C.publicWrite: .bool(acl[.everyone].write),
            C.readers: .array(readers.map(JSON.string)), C.writers: .array(writers.map(JSON.string)),
        ]
    }

    /// The ACL of a record: the neutral form kept in `mbaas_acl`, else derived from the rule columns; `nil`
    /// when the record has none (or the collection has no ACL columns).
    public static func acl(from json: JSONObject) throws(MBaaSError) -> ACL? {
        typealias C = PocketBaseCollection.ACLColumn
        if let stored = json[C.acl], !stored.isNull {
            do { return try ACL(json: stored) } catch { throw MBaaSError(.decoding, "mbaas_acl: \(error.message)") }
        }
        let publicRead = json[C.publicRead]?.boolValue ?? true
        let publicWrite = json[C.publicWrite]?.boolValue ?? true
        let readers = json[C.readers]?.arrayValue?.compactMap(\.stringValue) ?? []
        let writers = json[C.writers]?.arrayValue?.compactMap(\.stringValue) ?? []
        if publicRead, publicWrite, readers.isEmpty, writers.isEmpty { return nil }
        var acl = ACL()
        acl[.everyone] = ACL.Access(read: publicRead, write: publicWrite)
        for id in readers { acl[.user(id)].read = true }
        for id in writers { acl[.user(id)].write = true }
        return acl
    }

    // MARK: Records

    /// The body of a create or update request: each changed column with its type column, in field-name order.
    /// `schema` says which columns exist (and their kinds); without one, every field is written with a type
    /// column. Reserved or unrepresentable names and values are `invalidRequest`.
    public static func body(changes: [String: Change], schema: PocketBaseSchema?) throws(MBaaSError) -> JSONObject {
        var body = JSONObject()
        for name in changes.keys.sorted() {
            try PocketBaseWire.validateFieldName(name, authCollection: schema?.isAuth ?? false)
            let column = schema?.column(name) ?? name
            let kind = schema?.kind(of: name)
            let tagged = schema.map { $0.isTagged(name) || !$0.hasColumn(name) } ?? true
            let tagColumn = schema?.column(PocketBaseWire.tagColumn(for: name)) ?? PocketBaseWire.tagColumn(for: name)
            switch changes[name]! {
            case .set(let value):
                let stored = try store(value, field: name, existing: kind)
                if let c = stored.column { body[column] = c }
                if tagged { body[tagColumn] = .string(stored.tag) }
            case .delete:
                if schema?.hasColumn(name) ?? true { body[column] = .null }
                if tagged { body[tagColumn] = "" }
            }
        }
        return body
    }

    /// A record from PocketBase JSON (a response item, or a request body on the server side). `schema` gives
    /// column kinds and relation targets where known. Auth collections' own fields are left out.
    public static func record(
        from json: JSONObject, className: String, schema: PocketBaseSchema?, baseURL: String, isAuth: Bool = false,
        onlyTagged: Bool = false
    ) throws(MBaaSError) -> Record {
        let id = json["id"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
        var record = Record(className: className, id: id)
        record.createdAt = json["created"]?.stringValue.flatMap(PocketBaseWire.parseDate)
        record.updatedAt = json["updated"]?.stringValue.flatMap(PocketBaseWire.parseDate)
        record.acl = try acl(from: json)
        let location = Location(baseURL: baseURL, collection: className, recordId: id)
        let isAuth = isAuth || (schema?.isAuth ?? false)
        for (key, value) in json {
            if PocketBaseWire.systemKeys.contains(key) || key.lowercased().hasPrefix(PocketBaseWire.reservedPrefix) { continue }
            if isAuth, PocketBaseWire.authKeys.contains(key) { continue }
            if key.hasSuffix(PocketBaseWire.tagSuffix) {
                // A null needs no column: the tag alone says so.
                let field = String(key.dropLast(PocketBaseWire.tagSuffix.count))
                if json[field] == nil, value.stringValue == "null" { record.fields[field] = .null }
                continue
            }
            let tag = json[PocketBaseWire.tagColumn(for: key)]?.stringValue
            if onlyTagged, tag == nil { continue }
            if let v = try load(field: key, column: value, tag: tag, kind: schema?.kind(of: key),
                                relationTarget: schema?.relationTargets[key], location: location) {
                record.fields[key] = v
            }
        }
        return record
    }

    /// The JSON PocketBase returns for a record (the server direction): metadata, ACL columns, and each field
    /// with its type column, in a stable order.
    public static func recordJSON(_ record: Record, collectionId: String, schema: PocketBaseSchema? = nil) throws(MBaaSError) -> JSONObject {
        var o: JSONObject = [
            "collectionId": .string(collectionId), "collectionName": .string(record.className),
            "id": .string(record.id ?? ""),
            "created": .string(record.createdAt.map(PocketBaseWire.formatDate) ?? ""),
            "updated": .string(record.updatedAt.map(PocketBaseWire.formatDate) ?? ""),
        ]
        for (k, v) in try aclColumns(record.acl) { o[k] = v }
        for (k, v) in try body(changes: record.fields.mapValues(Change.set), schema: schema) { o[k] = v }
        return o
    }
}
