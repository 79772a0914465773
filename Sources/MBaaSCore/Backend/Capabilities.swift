/// What a backend can do, declared by its adapter.
///
/// The conformance suite skips a scenario whose required features are missing, and reports the ``notes`` entry
/// as the reason; callers can check before they ask. An adapter must throw ``MBaaSError/Kind/unsupported`` for
/// anything it does not declare, never approximate it silently.
public struct Capabilities: Sendable, Hashable {
    /// A named feature. Extensible: adapters and scenarios may use their own names.
    public struct Feature: RawRepresentable, Sendable, Hashable, Codable, ExpressibleByStringLiteral,
        CustomStringConvertible
    {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(stringLiteral value: String) { self.rawValue = value }
        public var description: String { rawValue }

        /// Create, get, update, delete and query records.
        public static let objects: Feature = "objects"
        /// Sort by several keys at once.
        public static let multiKeySort: Feature = "multiKeySort"
        /// Skip N records (offset paging).
        public static let skip: Feature = "skip"
        /// Return only selected keys.
        public static let selectKeys: Feature = "selectKeys"
        /// Count matching records.
        public static let count: Feature = "count"
        /// Several writes in one request.
        public static let batch: Feature = "batch"
        /// A batch is all-or-nothing.
        public static let atomicBatch: Feature = "atomicBatch"
        /// `expectedVersion` on update and delete.
        public static let optimisticLocking: Feature = "optimisticLocking"
        /// Per-record ACLs are enforced.
        public static let acl: Feature = "acl"
        /// Records are read without their ACL, which the store keeps and enforces: ``ObjectStore/recordACLs(className:ids:)``
        /// reads the access they grant, a request of its own (a copy of the records carries it; see that method).
        public static let aclRead: Feature = "aclRead"
        /// An ACL may grant read without write (public read, owner write); without it read and write go together.
        public static let aclReadOnly: Feature = "aclReadOnly"
        /// Some ACLs cannot be stored as given (the backend's note says which): ``ObjectStore/narrowedACL(_:)`` tells
        /// the ACL a record written with one would get instead, so a caller can write that one, and say so.
        public static let aclNarrowing: Feature = "aclNarrowing"
        /// A limit, not a capability: an empty string is stored as no value, and reads back absent (a backend that
        /// answers NULL and `""` alike). Whoever compares what was written with what is read treats the two as one.
        public static let emptyStringsAbsent: Feature = "emptyStringsAbsent"
        /// A limit, not a capability: the store compares text without regard to case (a database collation that
        /// ignores case), so `eq`, `prefix` and ordering on strings treat `Gamma` and `gamma` alike. Scenarios that
        /// check case-sensitive matching report `lossy` under it, with the difference, never a pass.
        public static let textCaseInsensitive: Feature = "textCaseInsensitive"
        /// A limit, not a capability: a field that was unset, or never written, reads back as `null` rather than absent
        /// (a store with a schema, where every record of a class has every column: Salesforce's sObjects). `null`
        /// written and read is kept; only "absent" cannot be told from it. Scenarios that check a removed field is
        /// absent report `lossy` under it, with the difference, never a pass.
        public static let unsetReadsNull: Feature = "unsetReadsNull"
        /// A file of the store (not one attached to a record, which follows its record) keeps the ACL it is uploaded
        /// with (``FileUpload/acl``), and the store enforces it; with ``fileACLListing``,
        /// ``FileStore/listFiles(prefix:limit:)`` gives it back in ``FileInfo/acl``. Without it an upload carrying an
        /// ACL is `unsupported`: the store's files have no ACLs of their own.
        public static let fileACL: Feature = "fileACL"
        /// ``FileStore/listFiles(prefix:limit:)`` gives each file's ACL in ``FileInfo/acl`` (`nil`: the file has
        /// none). Without it a store may keep file ACLs it does not list (one that reads a file's ACL with a request
        /// of its own), so whoever copies or compares files cannot learn their ACLs from a listing.
        public static let fileACLListing: Feature = "fileACLListing"
        /// ``FileStore/fileACL(_:)`` reads one file's ACL, with a request of its own: how a store that keeps file ACLs
        /// without listing them (no ``fileACLListing``) hands them to whoever copies or compares its files.
        public static let fileACLRead: Feature = "fileACLRead"
        /// Reads see every record and file whatever their ACLs grant: the caller has an administrative identity (an
        /// embedded store's owner, a server's superuser or master key, an app admin) for calls made without a session.
        /// Without it, on a store that enforces ACLs (``acl``, ``aclRead``), a caller reads only what ACLs grant it, so
        /// whoever copies the store may miss what others keep private; the adapter's note says how to read it all.
        public static let completeReads: Feature = "completeReads"
        /// Field operations other than set and delete (increment, add, addUnique, remove).
        public static let fieldOperations: Feature = "fieldOperations"
        /// Dotted keys into object fields in queries.
        public static let nestedKeys: Feature = "nestedKeys"
        /// A separate file store (upload by name, list).
        public static let files: Feature = "files"
        /// Deleting a stored file as the caller; without it (a server reached without its administrative key, say) files stay
        /// until an administrator removes them.
        public static let fileDelete: Feature = "fileDelete"
        /// Listing the file store.
        public static let fileList: Feature = "fileList"
        /// Files attached to a record (a record's file field or body).
        public static let fileAttachment: Feature = "fileAttachment"
        /// A file attached to a record keeps an ACL of its own given with it (``FileUpload/acl`` with
        /// ``FileUpload/attachment``), enforced apart from its record's. Without it an attached file is reachable as
        /// its record is, and an upload giving both is refused.
        public static let attachmentACL: Feature = "attachmentACL"
        /// A stored file keeps the name it was uploaded with (the returned reference and listings show it);
        /// without it the backend renames files (e.g. adds a random suffix), so apps must keep the
        /// returned name.
        public static let fileNames: Feature = "fileNames"
        /// File names outside ASCII are accepted; without it uploading one is `unsupported`.
        public static let unicodeFileNames: Feature = "unicodeFileNames"
        /// Log in with a user name and password.
        public static let auth: Feature = "auth"
        /// Create users from the client.
        public static let signUp: Feature = "signUp"
        /// Log in anonymously.
        public static let anonymousAuth: Feature = "anonymousAuth"
        /// Log out with server confirmation.
        public static let serverLogout: Feature = "serverLogout"
        /// Roles or groups on users.
        public static let roles: Feature = "roles"
        /// A field may hold values of different types in different records of a class (a schemaless store). Without
        /// it, a field's type is fixed (by the class's schema, or by the first value written) and a record whose
        /// value has another type is refused; a migration's plan names the source fields this concerns.
        public static let mixedFieldTypes: Feature = "mixedFieldTypes"

        /// The feature of one query operator.
        public static func `operator`(_ op: QueryOperator) -> Feature { Feature(rawValue: "operator.\(op.rawValue)") }

        /// Every value of one type of ``Value`` round-trips exactly (`value.<typeName>` names one type: `value.Bytes`).
        ///
        /// For `value.int` that is every `Int64`. The suite checks it where a store of doubles first fails: with the
        /// feature, `values.int.big` writes ±(2^53 + 1) and reads them back exactly; without it, `probes.valueint`
        /// expects such an integer to be refused (`unsupported`), never rounded. Integers within ±2^53 are written by
        /// the ordinary value scenarios, which need no `value.int`: a backend without the feature keeps those.
        public static func valueType(_ name: String) -> Feature { Feature(rawValue: "value.\(name)") }

        /// Query conditions compare values of one type (`query.value.Date`: date ranges, `createdAt`/`updatedAt`
        /// since a time; `query.value.Pointer`: pointer equality). Storing a type (``valueType(_:)``) does not
        /// imply it can be compared: a backend that keeps it as opaque JSON declares the value type only.
        public static func queryValue(_ name: String) -> Feature { Feature(rawValue: "query.value.\(name)") }
    }

    public var features: Set<Feature>
    public var operators: Set<QueryOperator>
    /// The most records one page may hold.
    public var maxPageSize: Int
    /// The page size used when the caller gives none.
    public var defaultPageSize: Int
    /// The most operations one ``ObjectStore/batch(_:)`` may hold.
    public var maxBatchSize: Int
    /// Why a feature is missing or limited, keyed by feature: the skip reason reports show.
    public var notes: [Feature: String]

    public init(
        features: Set<Feature>, operators: Set<QueryOperator> = Set(QueryOperator.allCases), maxPageSize: Int = 1000,
        defaultPageSize: Int = 100, maxBatchSize: Int = 50, notes: [Feature: String] = [:]
    ) {
        self.features = features
        self.operators = operators
        self.maxPageSize = maxPageSize
        self.defaultPageSize = defaultPageSize
        self.maxBatchSize = maxBatchSize
        self.notes = notes
    }

    /// Whether a feature (or an `operator.X` feature) is supported.
    public func has(_ feature: Feature) -> Bool {
        if feature.rawValue.hasPrefix("operator."), let op = QueryOperator(rawValue: String(feature.rawValue.dropFirst(9))) {
            return operators.contains(op)
        }
        return features.contains(feature)
    }

    /// The adapter's note for a feature, if any.
    public func note(for feature: Feature) -> String? { notes[feature] }

    /// The reason a set of required features is not met, or `nil` when all are: `"missing capability 'skip':
    /// no offset paging"` (the adapter's note follows the colon).
    public func missing(_ required: [Feature]) -> String? {
        let absent = required.filter { !has($0) }
        guard !absent.isEmpty else { return nil }
        return absent.map { f in
            "missing capability '\(f.rawValue)'" + (notes[f].map { ": \($0)" } ?? "")
        }.joined(separator: "; ")
    }
}
