public import Foundation
public import MBaaSCore

/// The Parse family's value codec, one for every vendor of the family, parameterised by the vendor's
/// ``ParseFamilyRules`` (as GRDB's one record decoder takes a column decoding strategy). Pure functions, both
/// directions: a client and a server (the emulator's dialects) share one definition of the format.
///
/// | JSON | ``Value`` |
/// |---|---|
/// | `null`, booleans, numbers, strings, arrays, objects | the same (`5` is `int`, `5.0` is `double`) |
/// | `{"__type":"Date","iso":"…"}` | ``Value/date(_:)`` |
/// | `{"__type":"Pointer","className","objectId"}` | ``Value/pointer(_:)`` (class name made neutral by the rules) |
/// | `{"__type":"GeoPoint","latitude","longitude"}` | ``Value/geoPoint(_:)`` |
/// | `{"__type":"Relation","className"}` (read only) | `.object(["__type":"Relation","className":…])`, a marker |
/// | `{"__type":"Object","className","objectId",…}` (an `include`d pointer) | `.object` of its members; written back as a Pointer |
/// | `{"__type":"Bytes","base64"}` (``ParseFamilyRules/TypedForm/bytes``) | ``Value/bytes(_:)`` |
/// | `{"__type":"File","name","url"}` (``ParseFamilyRules/TypedForm/file``) | ``Value/file(_:)`` |
/// | `{"__type":"Polygon","coordinates"}` (``ParseFamilyRules/TypedForm/polygon``) | `.object` with `__type` and `coordinates` kept |
///
/// A form the vendor lacks is refused when written (``MBaaSError/Kind/unsupported`` with the rules' reason) and
/// read back as a plain object; an unknown `__type` is kept as a plain object so nothing is lost.
public enum ParseFamilyCodec<Vendor: ParseFamilyVendor>: Sendable {
    /// Field names the vendor keeps for metadata; they never appear in ``Record/fields``.
    public static var metadataKeys: Set<String> { Vendor.rules.metadataKeys }

    // MARK: Values

    /// The vendor JSON of a value (request side).
    public static func encode(_ value: Value, path: String = "$") throws(MBaaSError) -> JSON {
        let rules = Vendor.rules
        switch value {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i):
            guard i.magnitude <= rules.maxSafeInteger else {
                throw MBaaSError.unsupported("integers beyond ±2^53 (\(path): \(i))", by: rules.adapter, reason: rules.intLimitReason)
            }
            return .int(i)
        case .double(let d):
            guard d.isFinite else { throw MBaaSError(.invalidRequest, "\(path): \(d) cannot be stored (JSON has no NaN or infinity)") }
            return .double(d)
        case .string(let s): return .string(s)
        case .date(let d): return dateJSON(d)
        case .bytes(let data):
            guard rules.typedForms.contains(.bytes) else {
                throw MBaaSError.unsupported("binary values (\(path))", by: rules.adapter, reason: rules.unsupportedBytes)
            }
            return .object(["__type": "Bytes", "base64": .string(data.base64EncodedString())])
        case .pointer(let p): return pointerJSON(p)
        case .file(let f):
            guard rules.typedForms.contains(.file) else {
                throw MBaaSError.unsupported("File values (\(path))", by: rules.adapter, reason: rules.unsupportedFile(f.name))
            }
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
            if let type = members["__type"] { return try encodeTyped(type, members, path: path, rules) }
            var out: [(String, JSON)] = []
            for key in members.keys.sorted() {
                if rules.reservedKeyPrefixes.contains(where: key.hasPrefix) {
                    throw MBaaSError(.invalidRequest, "\(path).\(key): keys starting with \(rules.reservedPrefixList) are reserved by \(rules.displayName)")
                }
                out.append((key, try encode(members[key]!, path: "\(path).\(key)")))
            }
            return .object(JSONObject(out))
        }
    }

    /// An object value with `__type` written back: an included Object is a Pointer again, a Polygon stays one.
    static func encodeTyped(_ type: Value, _ members: [String: Value], path: String, _ rules: ParseFamilyRules) throws(MBaaSError) -> JSON {
        switch type {
        case .string("Object"):
            guard let cls = members["className"]?.stringValue, let id = members["objectId"]?.stringValue else {
                throw MBaaSError(.invalidRequest, "\(path): an included Object needs className and objectId")
            }
            return pointerJSON(Pointer(className: cls, objectId: id))
        case .string("Polygon") where rules.typedForms.contains(.polygon):
            guard let coords = members["coordinates"] else {
                throw MBaaSError(.invalidRequest, "\(path): a Polygon needs coordinates")
            }
            return .object(["__type": "Polygon", "coordinates": try encode(coords, path: "\(path).coordinates")])
        case .string("Relation"):
            throw MBaaSError(.invalidRequest, "\(path): a Relation cannot be set as a value; use \(rules.relationAPI)")
        default:
            throw MBaaSError(.invalidRequest, "\(path): '__type' is reserved by \(rules.displayName) in object values")
        }
    }

    /// The value of vendor JSON (response side). Malformed typed forms are ``MBaaSError/Kind/decoding`` errors;
    /// an unknown `__type` is kept as a plain object so nothing is lost.
    public static func decode(_ json: JSON, path: String = "$") throws(MBaaSError) -> Value {
        do {
            return try Value.walk(json, typed: typed)
        } catch {
            throw MBaaSError(.decoding, path + error.path + ": " + error.message)
        }
    }

    /// The family's typed objects for ``MBaaSCore/Value/walk(_:typed:)``; `nil` (an unknown type, or a form the
    /// vendor lacks) keeps a plain object.
    static func typed(_ type: JSON?, _ o: JSONObject, _ member: Value.MemberDecoder) throws(Value.ConversionError) -> Value? {
        guard let type else { return nil }
        let rules = Vendor.rules
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
        case "Pointer":
            return .pointer(Pointer(className: rules.neutralClassName(try string("className")), objectId: try string("objectId")))
        case "GeoPoint":
            guard let lat = o["latitude"]?.doubleValue, let lon = o["longitude"]?.doubleValue else {
                throw fail("GeoPoint without numeric latitude and longitude")
            }
            return .geoPoint(GeoPoint(latitude: lat, longitude: lon))
        case "Relation":
            return .object(["__type": "Relation", "className": .string(rules.neutralClassName(try string("className")))])
        case "Object":
            var members: [String: Value] = [:]
            for (k, v) in o {
                switch k {
                case "__type": members[k] = "Object"
                case "className": members[k] = .string(rules.neutralClassName(try string("className")))
                case rules.createdAtKey, rules.updatedAtKey:
                    if let s = v.stringValue, let d = ISO8601.parse(s) { members[k] = .date(d) }
                    else { members[k] = try member(k, v) }
                default: members[k] = try member(k, v)
                }
            }
            return .object(members)
        case "Bytes" where rules.typedForms.contains(.bytes):
            let text = try string("base64")
            guard let data = Data(base64Encoded: text) else { throw fail("Bytes with invalid base64") }
            return .bytes(data)
        case "File" where rules.typedForms.contains(.file):
            return .file(FileReference(name: try string("name"), url: o["url"]?.stringValue))
        case "Polygon" where rules.typedForms.contains(.polygon):
            guard let coords = o["coordinates"] else { throw fail("Polygon without coordinates") }
            return .object(["__type": "Polygon", "coordinates": try member("coordinates", coords)])
        default:
            return nil
        }
    }

    /// `{"__type":"Date","iso":"yyyy-MM-ddTHH:mm:ss.SSSZ"}`
    public static func dateJSON(_ date: Date) -> JSON { .object(["__type": "Date", "iso": .string(ISO8601.format(date))]) }

    /// `{"__type":"Pointer","className":<wire name>,"objectId":…}`
    public static func pointerJSON(_ p: Pointer) -> JSON {
        .object(["__type": "Pointer", "className": .string(Vendor.rules.wireClassName(p.className)), "objectId": .string(p.objectId)])
    }

    // MARK: ACL

    /// The ACL (`{"*":{"read":true},"<userId>":{…},"role:<name>":{…}}`): the neutral form, group principals excepted
    /// (the family has none: ``MBaaSError/Kind/unsupported``).
    public static func encode(_ acl: ACL) throws(MBaaSError) -> JSON {
        if let group = acl.entries.keys.first(where: { if case .group = $0 { true } else { false } }) {
            throw MBaaSError.unsupported("group principals in ACLs ('\(group.key)')", by: Vendor.rules.adapter,
                                         reason: Vendor.rules.groupACLReason)
        }
        return acl.json
    }

    /// Reads an ACL; `false` grants are dropped, anything else malformed is a decoding error.
    public static func decodeACL(_ json: JSON) throws(MBaaSError) -> ACL {
        do { return try ACL(json: json) } catch { throw MBaaSError(.decoding, "\(Vendor.rules.aclKey): \(error.message)") }
    }
}
