public import MBaaSCore

/// What the AppPot adapter can do, and why the rest is missing (kept for source compatibility: the list is
/// ``AppPotWire/capabilities``).
public enum AppPotCapabilities {
    /// The capabilities every AppPot client declares: ``AppPotWire/capabilities``.
    public static var standard: Capabilities { AppPotWire.capabilities }
}

/// The AppPot wire format, shared by the client (`MBaaSAppPot`) and the emulator's AppPot dialect: routes
/// (``AppPotRoute``), the envelope and error codes (``AppPotEnvelope``, ``AppPotErrorCode``), login and users
/// (``AppPotLoginRequest``, ``AppPotAuthInfo``, ``AppPotUserInfo``), schemas (``AppPotSchemaRequest``), data
/// writes and reads (``AppPotWriteRequest``, ``AppPotDataResponse``), queries (``AppPotQueryBody``,
/// ``AppPotQueryTranslator`` both ways) and files (``AppPotFileCodec``).
///
/// Everything here is pure: no I/O, no session, no clock.
public enum AppPotWire {
    static let regexNote = "AppPot query expressions have no regular-expression operator (reference A8)"
    static let containsAllNote = "AppPot columns are scalar (varchar, integer, long); there are no array fields to test"

    /// What the AppPot REST API can do, with the reason for each thing it cannot. The client declares these,
    /// and the emulator's AppPot dialect answers what is outside them as AppPot does.
    public static let capabilities = Capabilities(
        features: [
            .objects, .multiKeySort, .skip, .count, .batch, .optimisticLocking, .acl, .files, .fileDelete, .auth, .serverLogout,
            .roles, .listUsers, .importUsers, .aclNarrowing, .emptyStringsAbsent, .textCaseInsensitive, .unicodeFileNames, .queryValue("Date"),
            .valueType("string"), .valueType("int"), .valueType("double"), .valueType("bool"), .valueType("Date"),
            .valueType("array"), .valueType("object"), .valueType("Pointer"),
            .valueType("GeoPoint"), .valueType("Bytes"), .valueType("File"),
        ],
        operators: [.eq, .ne, .lt, .lte, .gt, .gte, .in, .nin, .exists, .prefix, .and, .or, .not],
        maxPageSize: 1000, defaultPageSize: 100, maxBatchSize: 100,
        notes: [
            .listUsers: "GET users?token= lists the company's users with their groups and roles (the server decides who may; roles are AppPot's fixed role names)",
            .importUsers: "POST users as a logged-in Super Admin or Admin (reference A10); roles are AppPot's fixed names held per group, so roles are not imported (their members get them through their groups)",
            .userEmail: "an AppPot user has an account name and no e-mail address (reference A10): a user imported by e-mail alone gets it as the account",
            .userFields: "an AppPot user holds its account, first and last name and group roles (reference A10): other fields, a migration's source id among them, are not kept",
            .signUp: "AppPot users are created by an administrator in the company's user directory (console or admin-only POST users); apps cannot sign users up",
            .anonymousAuth: "AppPot's anonymous token only serves login, device registration and schema creation; it is not a user session",
            .atomicBatch: "AppPot batch writes report each row (objectId -1 for a failed row); they are not all-or-nothing",
            .selectKeys: "the AppPot query body has no column selection; whole rows are returned",
            .mixedFieldTypes: "AppPot columns are typed by the class's schema (varchar, integer, long; reference A6)",
            .fieldOperations: "AppPot has no atomic field operations (increment, add, remove); only set and delete (null)",
            .nestedKeys: "AppPot columns are flat; there are no object fields to query into",
            .fileNames: "the AppPot server stores a file under a generated prefix plus the name given: keep the name the upload returns",
            .fileACL: "AppPot files have no access control of their own",
            .emptyStringsAbsent: "the server answers a NULL column as \"\", so the client reads \"\" as absent: an empty string written reads back absent",
            .textCaseInsensitive: "the server runs on MySQL, whose default collation compares text without regard to case: a prefix `ga` also matches `Gamma` (reference: apppot-salesforce.md, the server stack; inferred)",
            .aclNarrowing: "an ACL no AppPot scope expresses (read without write, grants to other users or to roles) is narrowed to user scope: the writer's own record",
            .aclReadOnly: "AppPot scopes grant read and write together (user, group or all): read-only grants are refused",
            .fileList: "the AppPot file API has no listing endpoint",
            .fileAttachment: "AppPot files are not linked to data rows; store the returned file name in a varchar column",
            .operator(.regex): regexNote,
            .operator(.containsAll): containsAllNote,
            .acl: "ACLs map to AppPot scopes: public = all (3), owner only = user (1), the owner's groups = group (2); no ACL = the URL's defaultScope (group unless set, the AppPot SDKs' default); per-user grants beyond the owner, role grants and read-only grants are unsupported",
            .valueType("array"): "arrays, objects, pointers, geo points, bytes and file references are stored as their neutral JSON text in a varchar column: they round-trip but are not compared in queries (unsupported)",
            .valueType("null"): "the AppPot server answers a NULL column as \"\" and cannot tell NULL from an unset or empty value: a null field (and an empty string) reads back as absent (as after a delete)",
            .operator(.prefix): "LIKE 'prefix%' on the server's MySQL database: case-insensitive under the default collations",
            .valueType("string"): "the AppPot server answers NULL and \"\" alike: an empty string is written as NULL and reads back as absent",
            .operator(.eq): "string equality runs in MySQL: case-insensitive under the default collations",
        ])
}
