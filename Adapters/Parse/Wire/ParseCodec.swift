public import MBaaSCore
@_exported public import MBaaSParseFamilyWire

/// The Parse wire codec for values, ACLs, records and updates: the Parse family's codec
/// (``MBaaSParseFamilyWire/ParseFamilyCodec``) with Parse's rules (``ParseWire/rules``).
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
public typealias ParseCodec = ParseFamilyCodec<ParseWire>

/// One member of a Parse update body: a plain value or an `__op` operator (`Delete` included).
public typealias ParseFieldChange = ParseFamilyFieldChange<ParseWire>

extension ParseWire: ParseFamilyVendor {
    /// Parse's member of the Parse family: `createdAt`/`updatedAt`/`ACL`, class names as Parse spells them, Bytes,
    /// File and Polygon, the `Delete` operator, `null` kept as a field.
    public static let rules: ParseFamilyRules = {
        var rules = ParseFamilyRules(adapter: "parse", displayName: "Parse", createdAtKey: "createdAt", updatedAtKey: "updatedAt",
                                     aclKey: "ACL")
        rules.typedForms = [.bytes, .file, .polygon]
        rules.reservedKeyPrefixes = ["__", "$"]
        rules.intLimitReason = capabilities.note(for: .valueType("int"))
        rules.nullReason = capabilities.note(for: .valueType("null"))
        rules.droppedRecordKeys = ParseCodec.userSecretKeys.union(["__type"])
        rules.relationAPI = "ParseBackend.addRelation/removeRelation"
        rules.userHiddenKeys = ParseCodec.userSecretKeys
        rules.groupACLReason = "Parse ACLs name users, roles ('role:Name') and '*' only"
        return rules
    }()
}

extension ParseFamilyCodec where Vendor == ParseWire {
    /// User members that are secrets or session state, never fields.
    public static var userSecretKeys: Set<String> { ["sessionToken", "password", "authData", "_hashed_password"] }
}
