import Foundation
public import MBaaSCore

/// The Kii wire format, shared by the client (`MBaaSKii`) and the emulator's Kii dialect: routes (``KiiRoute``),
/// bucket addresses (``KiiBucketAddress``), objects (``KiiObjectCodec``), queries (``KiiQueryRequest``,
/// ``KiiClause``, ``KiiClauseTranslator`` both ways), ACLs (``KiiACLList``), users and tokens
/// (``KiiTokenRequest``, ``KiiRegistrationRequest``), and errors (``KiiErrorBody``, ``KiiErrorCodec``).
///
/// Everything here is pure: no I/O, no session, no clock. Each type works in both directions (a client encodes
/// what a server decodes, and the reverse), so one description of the format serves both ends.
public enum KiiWire {
    /// What Kii can and cannot do through the client (`KiiBackend`), with the reasons. The emulator's Kii dialect
    /// answers what is outside them as Kii does.
    public static let capabilities: Capabilities = {
        let valueTypes = ["null", "bool", "int", "double", "string", "Date", "Bytes", "array", "object", "Pointer", "File",
                          "GeoPoint"].map(Capabilities.Feature.valueType)
        let features: Set<Capabilities.Feature> = Set(valueTypes).union([
            .objects, .count, .optimisticLocking, .files, .fileDelete, .fileList, .fileAttachment, .auth, .signUp,
            .fileNames, .unicodeFileNames,
            // A file of the files bucket is an object with an ACL of its own (attached bodies follow their object's).
            .fileACL,
            // Not listed with the files bucket's query: read per file, from the object's ACL and the bucket's (`GET {object}/acl`,
            // `GET {bucket}/acl` [sdk: kii.md §6.1]).
            .fileACLRead,
            // Records are read without their ACL (see the note on acl); recordACLs(className:ids:) reads what each
            // grants, its object ACL and its bucket's read-every-object grant [sdk: kii.md §6.1, doc: §6.2].
            .aclRead,
            // An object is a JSON body in a bucket that appears with its first object; nothing declares a key's type
            // [inferred: kii.md §3 names no schema or type call, only size and indexing limits].
            .mixedFieldTypes,
        ])
        var notes: [Capabilities.Feature: String] = [
            .multiKeySort: "Kii's orderBy takes a single field",
            .skip: "Kii has no offset; pages are followed with the opaque paginationKey (the cursor)",
            .selectKeys: "Kii always returns whole objects",
            .batch: "Kii has no batch endpoint for objects; batch() throws unsupported (apply the operations one by one yourself)",
            .atomicBatch: "Kii has no transactions",
            .fieldOperations: "Kii has no atomic increment or array operators; a partial update only sets keys",
            .nestedKeys: "Kii indexes and queries top-level fields only",
            .acl: "Kii stores object ACLs (READ_EXISTING_OBJECT, WRITE_EXISTING_OBJECT), but app-scope buckets grant "
                + "READ_OBJECTS_IN_BUCKET to every caller by default and only the app admin may change that, so a "
                + "record's read ACL is not enforced in app scope: a record or update carrying an ACL is refused "
                + "(unsupported); write Kii object ACL entries explicitly with KiiBackend.setACL(_:className:id:). "
                + "Records read back carry no ACL (see KiiBackend.acl(className:id:)). Role principals have no "
            + "Kii subject and are refused; bucket verbs beyond create/query/read (DROP_BUCKET_WITH_ALL_CONTENT) and "
            + "scope verbs are reachable only through KiiBackend.aclList(resource:)",
            .fileACLListing: "a Kii file's ACL is read apart from the files bucket's query, per file (fileACL(_:): its object's ACL and the bucket's), not in listings",
            .anonymousAuth: "Kii pseudo users are not exposed",
            .completeReads: "a user or anonymous caller reads what bucket and object ACLs grant it; admin mode (clientID and the client secret in the URL) reads every object",
            .serverLogout: "Kii has no token revocation call; logOut is local",
            .roles: "Kii has groups but no roles, and users/me does not list groups",
            .operator(.regex): "Kii has no regular-expression clause",
            .operator(.containsAll): "Kii has no array clause",
            .operator(.exists): "exists:true is sent as hasField, but exists:false would rest on not(hasField) "
                + "matching objects without the field, which no vendor evidence shows: " + KiiClauseTranslator.negationNote,
            .operator(.ne): KiiClauseTranslator.negationNote,
            .operator(.nin): KiiClauseTranslator.negationNote,
            .operator(.not): KiiClauseTranslator.negationNote,
        ]
        for op in [QueryOperator.eq, .lt, .lte, .gt, .gte, .in] where notes[.operator(op)] == nil {
            notes[.operator(op)] = "compares strings, numbers and booleans (and Dates on createdAt/updatedAt); "
                + "other values are stored as JSON objects Kii does not index, and are refused"
        }
        return Capabilities(
            features: features,
            operators: [.eq, .lt, .lte, .gt, .gte, .in, .prefix, .and, .or],
            maxPageSize: 200, defaultPageSize: 100, maxBatchSize: 50, notes: notes)
    }()


    /// Kii's object-id rule (kii.md §2.2 SDK validation): `^[a-zA-Z0-9-_.]{2,100}$`.
    public static func isValidObjectID(_ id: String) -> Bool {
        (2...100).contains(id.count) && id.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0)
        }
    }
}

extension WireProfile {
    /// Kii's wire protocol as record/replay tools see it (`KiiBackendFactory.wireProfile`): the generic profile
    /// plus Kii's application headers (`X-Kii-AppID`, `X-Kii-AppKey`: secret) and its SDK header (`X-Kii-SDK`:
    /// volatile). The access token (`access_token`) is a generic name already.
    public static let kii = WireProfile.generic.merging(WireProfile(
        secretHeaders: ["X-Kii-AppKey", "X-Kii-AppID"], volatileHeaders: ["X-Kii-SDK"]))
}
