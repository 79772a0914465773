import Foundation
public import MBaaSCore

/// The Salesforce REST wire format, shared by the client (`MBaaSSalesforce`) and the emulator's Salesforce dialect:
/// routes (``SalesforceRoute``), OAuth messages (``SalesforceTokenRequest``, ``SalesforceTokenResponse``,
/// ``SalesforceUserInfo``), records (``SalesforceRecordCodec``), save results, query pages and collections
/// (``SalesforceSaveResult``, ``SalesforceQueryPage``, ``SalesforceCollectionRequest``), errors
/// (``SalesforceErrorItem``, ``SalesforceOAuthError``, ``SalesforceErrorCodec``), datetimes
/// (``SalesforceDateTime``) and SOQL (``SOQLQuery``: printer and parser; ``SOQLTranslator``: the neutral query
/// both ways).
///
/// Everything here is pure: no I/O, no session, no clock. Facts are marked with their evidence (doc, sdk, capture,
/// inferred) as in `shared/reference/salesforce.md`.
public enum SalesforceWire {
    /// The REST API version the client uses unless told (`?version=` in the backend URL).
    public static let defaultAPIVersion = "62.0"
    /// Records per sObject Collections call [doc; sdk: jsforce MAX_DML_COUNT, MobileSync batches].
    public static let maxCollectionSize = 200
    /// The most subrequests one Composite call takes [doc: REST API Developer Guide, "Composite": 25].
    public static let maxCompositeSubrequests = 25
    /// Rows per query page [capture: 2000-row pages; `Sforce-Query-Options: batchSize` 200–2000].
    public static let maxQueryPageSize = 2000
    /// The largest SOQL OFFSET [doc: SOQL reference, "OFFSET"].
    public static let maxOffset = 2000

    /// What Salesforce can and cannot do through the client, with the reasons.
    public static let capabilities: Capabilities = {
        let valueTypes = ["null", "bool", "int", "double", "string", "Date"].map(Capabilities.Feature.valueType)
        let features: Set<Capabilities.Feature> = Set(valueTypes).union([
            .objects, .count, .skip, .multiKeySort, .selectKeys, .batch, .atomicBatch, .files,
            .auth, .serverLogout, .queryValue("Date"),
            // ContentVersion Title and PathOnClient are text fields: a name outside ASCII is kept [inferred: string fields are UTF-8].
            .unicodeFileNames,
            // SOQL compares text without regard to case (= and LIKE) [doc: SOQL reference, "Comparison Operators"].
            .textCaseInsensitive,
            // Every field of an sObject exists: one never set, or set to null, reads back null [doc: REST API
            // Developer Guide, "Get Field Values from a Standard Object Record"; capture: salesforce.md sObject rows].
            .unsetReadsNull,
        ])
        let notes: [Capabilities.Feature: String] = [
            .optimisticLocking: "If-Unmodified-Since, Salesforce's only conditional update, compares at one-second "
                + "precision: two writes within the same second are not told apart, so an expected version is sent "
                + "when given (412 is a conflict) but the capability is not declared [doc: REST API Developer Guide, "
                + "\"Conditional Requests\"]",
            .acl: "Salesforce has no per-record ACL on the REST wire: record access is the org's sharing model "
                + "(org-wide defaults, roles, sharing rules), managed in the org, not per request",
            .aclRead: "record access is the org's sharing model; the REST record carries no ACL",
            .signUp: "Salesforce has no self sign-up through the REST API; users are provisioned in the org",
            .anonymousAuth: "every Salesforce REST call needs an OAuth access token",
            .roles: "Salesforce roles are org metadata (UserRole), not an API of this adapter",
            .fieldOperations: "Salesforce has no atomic increment or array operators",
            .nestedKeys: "sObject fields are scalars; relationship paths (Owner.Name) are not object keys",
            .mixedFieldTypes: "each sObject field has one type, declared in the org's schema",
            .skip: "SOQL OFFSET is at most 2000; further pages follow nextRecordsUrl (the cursor)",
            .fileDelete: "a ContentVersion is not deleted alone (its ContentDocument is); not offered",
            .fileList: "listing files would be a query of ContentVersion; not offered",
            .fileAttachment: "a ContentDocumentLink ties a file to a record but is not deleted with it, as a neutral "
                + "attachment is; uploads with an attachment are refused",
            .operator(.prefix): "SOQL LIKE compares without regard to case, so a case-sensitive prefix cannot be "
                + "expressed; it is refused rather than approximated",
            .operator(.regex): "SOQL has no regular expressions",
            .operator(.containsAll): "sObject fields are scalars (INCLUDES applies to multi-select picklists only)",
            .valueType("Bytes"): "binary data is stored as files (ContentVersion), not in record fields",
            .valueType("array"): "sObject fields are scalars",
            .valueType("object"): "sObject fields are scalars",
            .valueType("Pointer"): "a lookup field holds the bare Id; a pointer's class is not kept",
            .valueType("File"): "files are ContentVersion records",
            .valueType("GeoPoint"): "compound Location fields are not mapped",
            .valueType("int"): "Salesforce numbers are decimals of at most 18 digits; integers beyond ±2^53 are not kept exactly",
        ]
        return Capabilities(
            features: features,
            operators: [.eq, .ne, .lt, .lte, .gt, .gte, .in, .nin, .exists, .and, .or, .not],
            maxPageSize: maxQueryPageSize, defaultPageSize: 200, maxBatchSize: maxCollectionSize, notes: notes)
    }()

    /// Whether a name is a SOQL identifier: an ASCII letter, then letters, digits and single underscores, not
    /// ending in `_` except the `__c`-style suffixes, at most 80 characters [doc: "Object and field names"; the
    /// suffix rule inferred]. Checked before a name is sent, so that no field name carries SOQL.
    public static func isIdentifier(_ name: String) -> Bool {
        let u = Array(name.utf8)
        guard (1...80).contains(u.count) else { return false }
        func letter(_ c: UInt8) -> Bool { (65...90).contains(c) || (97...122).contains(c) }
        guard letter(u[0]) else { return false }
        return u.allSatisfy { letter($0) || (48...57).contains($0) || $0 == 95 }
    }

    /// Throws ``MBaaSError/Kind/invalidRequest`` naming a field name that is not an identifier.
    public static func checkIdentifier(_ name: String) throws(MBaaSError) {
        guard isIdentifier(name) else {
            throw MBaaSError(.invalidRequest, "'\(name)' is not a Salesforce field or object name (a letter, then letters, digits or '_'; at most 80)",
                             vendorCode: "INVALID_FIELD").refusing(name)
        }
    }

    /// Whether a string is a record Id: 15 or 18 ASCII letters and digits [capture: "IDs are 15 or 18 characters"].
    public static func isRecordId(_ id: String) -> Bool {
        (id.utf8.count == 15 || id.utf8.count == 18)
            && id.utf8.allSatisfy { (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) }
    }

    /// The 18-character form of a 15-character Id: three checksum characters, each encoding which of five
    /// characters are upper case [doc: the case-safe Id]. An 18-character Id is returned as is.
    public static func caseSafeId(_ id15: String) -> String {
        guard id15.utf8.count == 15 else { return id15 }
        let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ012345")
        let chars = Array(id15.utf8)
        var suffix = ""
        for chunk in 0..<3 {
            var bits = 0
            for i in 0..<5 where (65...90).contains(chars[chunk * 5 + i]) { bits |= 1 << i }
            suffix.append(table[bits])
        }
        return id15 + suffix
    }
}

extension WireProfile {
    /// Salesforce's wire as record/replay tools see it: the generic profile (the Bearer token is `Authorization`)
    /// plus `Sforce-Limit-Info` (volatile: API usage counts), the token
    /// response's `signature`, and the `Sforce-` headers kept when recording.
    public static let salesforce = WireProfile.generic.merging(WireProfile(
        volatileHeaders: ["Sforce-Limit-Info"], tokenFields: ["signature"], capturedHeaderPrefixes: ["sforce-"]))
}
