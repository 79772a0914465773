import Foundation
public import MBaaSCore

/// The Parse Server REST wire format, shared by the client (`MBaaSParse`) and a future emulator dialect: routes
/// (``ParseRoute``), values and records (``ParseCodec``), updates (``ParseFieldChange``), queries (``ParseQuery``,
/// ``ParseQueryTranslator``), batches (``ParseBatchRequest``, ``ParseBatchResponse``) and errors
/// (``ParseErrorBody``).
///
/// Everything here is pure: no I/O, no session, no clock, and each type works in both directions.
public enum ParseWire {
    /// `/parse`, the mount point the Parse docs use.
    public static let defaultMount = "/parse"
    /// parse-server's default `limit` when a find gives none.
    public static let defaultLimit = 100
    /// The page size this client asks for at most (parse-server has no cap by default; `maxLimit` clamps silently).
    public static let maxLimit = 1000
    /// The SDKs' batch chunk size (`REQUEST_BATCH_SIZE` in the JS SDK; the REST guide's "default batch size is 20").
    public static let defaultBatchChunk = 20
    /// The largest chunk this client sends in one `/batch` request (Parse-Swift batches 50; the pre-2023 docs said
    /// "up to 50 objects in one call").
    public static let maxBatchChunk = 50

    public static let userClass = "_User"
    public static let roleClass = "_Role"
    public static let sessionClass = "_Session"

    /// `/parse`, `parse/` and `/parse/` are `/parse`; `/` and the empty string are the root (``defaultMount`` is
    /// the caller's to choose before).
    public static func normalizeMount(_ mount: String) -> String {
        var m = mount
        while m.hasSuffix("/") { m.removeLast() }
        if m.isEmpty { return "" }
        return m.hasPrefix("/") ? m : "/" + m
    }

    /// Splits a list into chunks of at most `size` (1...``maxBatchChunk``; default ``defaultBatchChunk``).
    public static func chunks<T>(_ items: [T], size: Int = defaultBatchChunk) throws(MBaaSError) -> [[T]] {
        guard (1...maxBatchChunk).contains(size) else {
            throw MBaaSError(.invalidRequest, "a Parse batch chunk holds 1 to \(maxBatchChunk) requests, got \(size)")
        }
        return stride(from: 0, to: items.count, by: size).map { Array(items[$0..<min($0 + size, items.count)]) }
    }

    /// What Parse Server's REST API can do, with the reason for each thing it cannot.
    public static let capabilities = Capabilities(
        features: [
            .objects, .skip, .count, .multiKeySort, .selectKeys, .batch, .acl, .aclReadOnly, .fieldOperations,
            .nestedKeys, .files, .fileAttachment, .auth, .signUp, .anonymousAuth, .serverLogout, .roles,
            .valueType("Date"), .valueType("Pointer"), .valueType("GeoPoint"), .valueType("Bytes"),
            .valueType("File"), .valueType("array"), .valueType("object"), .queryValue("Date"),
            .queryValue("Pointer"),
        ],
        operators: Set(QueryOperator.allCases),
        maxPageSize: maxLimit, defaultPageSize: defaultLimit, maxBatchSize: 1000,
        notes: [
            .fileACL: "Parse files have no ACL; protect the object that refers to the file",
            .files: "upload (POST /files/{name}) and download by url; deleting a file needs the master key (URL option masterKey), else unsupported",
            .fileDelete: "Parse Server deletes files for the master key only (URL option masterKey)",
            .completeReads: "without the master key (URL option masterKey) a caller reads what ACLs and class-level permissions grant it; with it, every object",
            .batch: "POST /batch, sent in chunks of 20 (URL option batchSize, at most 50); results are per operation",
            .atomicBatch: "a Parse batch is not atomic unless 'transaction' is set, which needs a MongoDB replica set or Postgres; this client does not send it",
            .optimisticLocking: "Parse objects carry no version and PUT has no precondition",
            .fileList: "Parse's REST API cannot list files",
            .mixedFieldTypes: "a Parse class's schema fixes a field's type when it is first written; another type is refused (111 'schema mismatch')",
            .fileNames: "Parse Server stores an upload as '<32 hex>_<name>': keep the returned name",
            .unicodeFileNames: unicodeFileNamesNote,
            .valueType("int"): "integers within ±2^53 only: Parse numbers are JavaScript doubles; larger integers are refused (unsupported)",
            .valueType("null"): "writing a null is refused (unsupported): not verified that every Parse Server storage adapter reads a stored null back as null rather than absent; use the Delete operator to remove a field",
            .queryValue("GeoPoint"): "geo queries ($nearSphere, $within, $geoWithin) have no neutral form",
            .listUsers: "listing users needs the master key (URL option masterKey)",
            .listClasses: "listing classes needs the master key (URL option masterKey; GET /schemas)",
            .importUsers: "importing users needs the master key (URL option masterKey); password hashes never move",
            .clientIds: "parse-server refuses a client-supplied objectId unless allowCustomObjectId is set (105 'objectId is an invalid field name.')",
            .clientTimestamps: "createdAt and updatedAt are set by the server",
        ])

    /// Why non-ASCII file names are refused.
    public static let unicodeFileNamesNote = "Parse Server accepts file names matching ^[_a-zA-Z0-9][a-zA-Z0-9@. ~_-]*$ only (at most 128 characters); other names are refused (unsupported) before sending"

    /// Whether Parse Server accepts a file name (parse.md, Files).
    public static func isValidFileName(_ name: String) -> Bool {
        guard !name.isEmpty, name.count <= 128 else { return false }
        for (i, u) in name.unicodeScalars.enumerated() {
            let c = Character(u)
            let alnum = u.isASCII && (c.isLetter || c.isNumber)
            if i == 0 { guard alnum || c == "_" else { return false } }
            else { guard alnum || "@. ~_-".contains(c) else { return false } }
        }
        return true
    }
}
