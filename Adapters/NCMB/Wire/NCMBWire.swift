import Foundation
public import MBaaSCore

/// The NCMB wire format, shared by the client (`MBaaSNCMB`) and the emulator's NCMB dialect: routes
/// (``NCMBRoute``), values (``NCMBCodec``), queries (``NCMBQuery``, ``NCMBQueryTranslator``), updates
/// (``NCMBFieldChange``), errors (``NCMBErrorBody``) and request signing (``NCMBSigner``).
///
/// Everything here is pure: no I/O, no session, no clock. Each type works in both directions (a client encodes
/// what a server decodes, and the reverse), so one description of the format serves both ends.
public enum NCMBWire {
    /// `2013-09-01`
    public static let apiVersion = "2013-09-01"

    /// What the NCMB REST API can do, with the reason for each thing it cannot. The client (`NCMBBackend`)
    /// declares these, and the emulator's NCMB dialect answers what is outside them as NCMB does.
    public static let capabilities = Capabilities(
        features: [
            .objects, .skip, .count, .multiKeySort, .acl, .fieldOperations, .nestedKeys, .files, .fileDelete, .fileList,
            .fileAttachment, .attachmentACL, .fileACLListing, .auth, .signUp, .anonymousAuth, .serverLogout, .roles, .fileACL,
            .valueType("Date"), .valueType("Pointer"), .valueType("GeoPoint"), .valueType("array"),
            .valueType("object"), .queryValue("Date"), .queryValue("Pointer"), .fileNames, .aclReadOnly, .listUsers,
        ],
        operators: [.eq, .ne, .lt, .lte, .gt, .gte, .in, .nin, .exists, .prefix, .regex, .containsAll, .and, .or],
        maxPageSize: NCMBQuery.maxLimit, defaultPageSize: NCMBQuery.defaultLimit, maxBatchSize: 50,
        notes: [
            .batch: "NCMB has no batch endpoint; batch(_:) throws unsupported (apply the operations one by one yourself)",
            .atomicBatch: "NCMB has no batch endpoint, so nothing is atomic across records",
            .selectKeys: "NCMB queries have no 'keys' projection",
            .mixedFieldTypes: "not known whether NCMB refuses a value whose type differs from the field's earlier values (no document, SDK test or capture found): treated as typed",
            .optimisticLocking: "NCMB records have no version and no conditional update",
            .operator(.not): "NCMB has no $not or $nor",
            .operator(.and): "NCMB has no $and: conditions on distinct keys and one $or group are merged into one where object; an and of two or groups is refused",
            .operator(.regex): "NCMB's $regex has no $options",
            .valueType("Bytes"): "NCMB has no binary type",
            .valueType("File"): "NCMB has no File type: records keep a file's name as a string",
            .queryValue("Pointer"): "a Pointer operand is sent as NCMB's Pointer JSON for equality ([inferred]: the SDKs build where clauses from pointer objects the same way)",
            .valueType("int"): "integers within ±2^53 only: NCMB is not known to keep larger ones exactly (its SDKs' JSON numbers are doubles); larger integers are refused (unsupported)",
            .valueType("null"): "writing a null is refused (unsupported): NCMB clears a field by setting it to null and has no Delete operator (ncmb.md §1.3), so a null field cannot be told from a cleared one: it reads back absent",
            .unicodeFileNames: unicodeFileNamesNote,
            .listUsers: "the users the caller may read (their ACLs decide; NCMB has no administrative listing in its REST API)",
            .listClasses: "NCMB's REST API cannot list classes",
            .importUsers: "NCMB users sign up themselves; there is no administrative import",
            .completeReads: "NCMB's REST API has no administrative identity: a caller reads only what ACLs grant it; the app's console export (read as ncmb-export:DIR) holds every record",
        ])

    /// Why non-ASCII file names are refused.
    public static let unicodeFileNamesNote = "NCMB refuses full-width (non-ASCII) file names (E403002, UserCommunity #1304; the NCMB answer: use ASCII or Base64 names); upload(_:) throws unsupported before sending"

}
