public import MBaaSCore

/// A vendor of the Parse family: its Wire module's namespace declares the ``ParseFamilyRules`` its JSON follows, and
/// the family's generic codec (``ParseFamilyCodec``) and update form (``ParseFamilyFieldChange``) read them.
///
/// ```swift
/// extension NCMBWire: ParseFamilyVendor { public static let rules: ParseFamilyRules = { var r = ParseFamilyRules(…); …; return r }() }
/// public typealias NCMBCodec = ParseFamilyCodec<NCMBWire>
/// ```
public protocol ParseFamilyVendor {
    /// What this vendor's JSON does differently from the family's common form.
    static var rules: ParseFamilyRules { get }
}

/// What one vendor of the Parse family writes differently: metadata keys, class-name mapping, typed forms,
/// reserved prefixes, the integer limit, the `Delete` operator, and the words its errors use. Everything else
/// (`__type` values, `__op`, pointers, relations, ACL JSON, dates) is the family's and written once.
public struct ParseFamilyRules: Sendable {
    /// The typed forms beyond the family's common `Date`, `Pointer`, `GeoPoint`, `Relation` and `Object`.
    public enum TypedForm: Sendable, Hashable {
        /// `{"__type":"Bytes","base64":…}` ↔ ``Value/bytes(_:)``
        case bytes
        /// `{"__type":"File","name","url"}` ↔ ``Value/file(_:)``
        case file
        /// `{"__type":"Polygon","coordinates":…}` ↔ an object with `__type` and `coordinates`
        case polygon
    }

    /// The adapter name errors carry (`MBaaSError.unsupported(…, by:)`): `ncmb`, `parse`.
    public var adapter: String
    /// The vendor's name in messages (`NCMB`, `Parse`).
    public var displayName: String
    /// The record metadata keys: creation date, update date, ACL (`createDate`/`updateDate`/`acl` or
    /// `createdAt`/`updatedAt`/`ACL`); `objectId` is the family's.
    public var createdAtKey: String
    public var updatedAtKey: String
    public var aclKey: String
    /// Wire class name → neutral class name (NCMB's `user` is `_User`), and back; the identity where the vendor
    /// spells classes as the neutral form does.
    public var neutralClassName: @Sendable (String) -> String = { $0 }
    public var wireClassName: @Sendable (String) -> String = { $0 }
    /// The typed forms beyond the common ones; a value of a form not listed is refused when written
    /// (``unsupportedBytes``, ``unsupportedFile``) and read back as a plain object.
    public var typedForms: Set<TypedForm> = []
    /// Why ``Value/bytes(_:)`` cannot be written (when ``typedForms`` lacks `.bytes`).
    public var unsupportedBytes = ""
    /// Why ``Value/file(_:)`` cannot be written (when ``typedForms`` lacks `.file`), given the file's name.
    public var unsupportedFile: @Sendable (String) -> String = { _ in "" }
    /// Key prefixes reserved inside object values (`__`; Parse also `$`).
    public var reservedKeyPrefixes = ["__"]
    /// Field names the vendor reserves beyond the metadata and the `__`/`$` prefixes (NCMB's `_id`), with the reason.
    public var reservedFieldNames: [String: String] = [:]
    /// The largest integer magnitude written (2^53: the vendors' JSON numbers are doubles), and why.
    public var maxSafeInteger: UInt64 = 9_007_199_254_740_992
    public var intLimitReason: String?
    /// Why a `null` value is refused when written.
    public var nullReason: String?
    /// Whether the vendor has the `Delete` operator; without it a deletion is written as `null` and `Delete` is an
    /// unknown operator.
    public var deleteOperator = true
    /// Whether a top-level `null` in a record is kept as a field (`false`: it is a cleared field, left out).
    public var keepsNullFields = true
    /// Members of a record object that are never fields (secrets, session state; `__type` drops an included
    /// object's marker and its `className` too).
    public var droppedRecordKeys: Set<String> = []
    /// Whether a stored record object lists its metadata before its fields (`objectId`, dates, fields, ACL) or
    /// after them (fields, ACL, dates, `objectId`).
    public var metadataFirst = false
    /// The client API that changes relations, named when a Relation is written as a value.
    public var relationAPI: String
    /// Why group principals cannot be written in an ACL.
    public var groupACLReason: String
    /// The user object's name and e-mail keys (`username`/`email`; NCMB `userName`/`mailAddress`).
    public var usernameKey = "username"
    public var emailKey = "email"
    /// User members that are never ``MBaaSCore/User/fields``: secrets, session state, the vendor's system fields.
    public var userHiddenKeys: Set<String> = ["sessionToken", "password", "authData"]
    /// How roles are named (Parse's `_Role`/`name`/`users`/`roles` unless the vendor says otherwise).
    public var roles = ParseFamilyRoleForm()

    /// The rules of a vendor with these names and metadata keys; everything else starts as the family's common
    /// form (no extra typed forms, `__` reserved in object values, integers to 2^53, the `Delete` operator, nulls
    /// kept, metadata after the fields) for the vendor to change what differs.
    public init(adapter: String, displayName: String, createdAtKey: String, updatedAtKey: String, aclKey: String) {
        self.adapter = adapter
        self.displayName = displayName
        self.createdAtKey = createdAtKey
        self.updatedAtKey = updatedAtKey
        self.aclKey = aclKey
        relationAPI = "addRelation/removeRelation"
        groupACLReason = "\(displayName) ACLs name users and roles only"
    }

    /// The keys a record object keeps for metadata: `objectId` and the three of ``createdAtKey``, ``updatedAtKey``,
    /// ``aclKey``.
    public var metadataKeys: Set<String> { ["objectId", createdAtKey, updatedAtKey, aclKey] }

    /// `'__' or '$'`, as messages name the reserved prefixes.
    var reservedPrefixList: String { reservedKeyPrefixes.map { "'\($0)'" }.joined(separator: " or ") }
}
