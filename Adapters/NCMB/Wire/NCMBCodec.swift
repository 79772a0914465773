public import MBaaSCore
@_exported public import MBaaSParseFamilyWire

/// The NCMB wire codec for values, ACLs, records and field changes: the Parse family's codec
/// (``MBaaSParseFamilyWire/ParseFamilyCodec``) with NCMB's rules (``NCMBWire/rules``).
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
/// field). Records keep `objectId`, `createDate`, `updateDate` and `acl` as metadata; a top-level `null` is a
/// cleared field.
public typealias NCMBCodec = ParseFamilyCodec<NCMBWire>

/// One field of an NCMB update body: a plain value (set; `null` clears the field) or an `__op` operator. NCMB has
/// no `Delete` operator: a deletion is written as `null`, and `{"__op":"Delete"}` is refused when read.
public typealias NCMBFieldChange = ParseFamilyFieldChange<NCMBWire>

extension NCMBWire: ParseFamilyVendor {
    /// NCMB's member of the Parse family: `createDate`/`updateDate`/`acl`, class names through ``NCMBClassName``
    /// (`user` ↔ `_User`), no Bytes, File or Polygon, no `Delete` operator, `null` a cleared field.
    public static let rules: ParseFamilyRules = {
        var rules = ParseFamilyRules(adapter: "ncmb", displayName: "NCMB", createdAtKey: "createDate", updatedAtKey: "updateDate",
                                     aclKey: "acl")
        rules.neutralClassName = { NCMBClassName.neutral(fromWire: $0) }
        rules.wireClassName = { NCMBClassName.wire(fromNeutral: $0) }
        rules.unsupportedBytes = "NCMB has no binary type; upload the bytes to the file store and keep the file name"
        rules.unsupportedFile = { "NCMB has no File type; store the file name '\($0)' as a string, or upload with FileUpload.attachment" }
        // [doc] user-registration page (ncmb.md §1.6): "フィールド名に「_id」は指定不可とします".
        rules.reservedFieldNames = ["_id": "field name '_id' is reserved by NCMB"]
        // NCMB is not known to keep integers beyond ±2^53 exactly (its SDKs' JSON numbers are doubles).
        rules.intLimitReason = capabilities.note(for: .valueType("int"))
        rules.nullReason = capabilities.note(for: .valueType("null"))
        rules.deleteOperator = false
        rules.keepsNullFields = false
        rules.droppedRecordKeys = ["sessionToken", "password"]
        rules.metadataFirst = true
        rules.relationAPI = "NCMBBackend.addRelation/removeRelation"
        rules.usernameKey = "userName"
        rules.emailKey = "mailAddress"
        // mailAddressConfirm and temporaryPassword are system fields: [doc] ncmb.md §1.6 user field names;
        // [sdk] ncmb_js test fixture 2013-09-01_user_login_namepw_success.json, ncmb_android
        // valid_get_login_response.json (every login answer carries mailAddressConfirm).
        rules.userHiddenKeys = ["sessionToken", "password", "authData", "mailAddressConfirm", "temporaryPassword"]
        // [doc] ncmb.md §1.7 (roles): class `role`, `roleName`, relations `belongUser` and `belongRole`.
        rules.roles = ParseFamilyRoleForm(roleClass: "role", userClass: "user", nameKey: "roleName",
                                          usersKey: "belongUser", rolesKey: "belongRole")
        return rules
    }()
}

extension ParseFamilyCodec where Vendor == NCMBWire {
    /// User fields NCMB keeps for itself (ncmb.md §1.6): never in ``User/fields``, refused in sign-up fields.
    public static var userSystemFields: Set<String> { ["mailAddressConfirm", "temporaryPassword"] }
}
