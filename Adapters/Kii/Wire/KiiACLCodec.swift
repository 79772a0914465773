public import MBaaSCore

/// Whom a Kii ACL entry grants (kii.md §6.1).
public enum KiiACLSubject: Sendable, Hashable, Comparable {
    case user(String)
    case group(String)
    case thing(String)
    /// `UserID:ANY_AUTHENTICATED_USER`: every logged-in user.
    case anyAuthenticatedUser
    /// `UserID:ANONYMOUS_USER`: callers without a user token.
    case anonymousUser

    /// The path segment of grant and revoke URLs: `UserID:{id}`, `GroupID:{id}`, `ThingID:{id}`.
    public var pathComponent: String {
        switch self {
        case .user(let id): "UserID:\(id)"
        case .group(let id): "GroupID:\(id)"
        case .thing(let id): "ThingID:\(id)"
        case .anyAuthenticatedUser: "UserID:ANY_AUTHENTICATED_USER"
        case .anonymousUser: "UserID:ANONYMOUS_USER"
        }
    }

    public init?(pathComponent: String) {
        guard let colon = pathComponent.firstIndex(of: ":") else { return nil }
        let kind = pathComponent[..<colon], id = String(pathComponent[pathComponent.index(after: colon)...])
        guard !id.isEmpty else { return nil }
        switch kind {
        case "UserID": self = id == "ANY_AUTHENTICATED_USER" ? .anyAuthenticatedUser : id == "ANONYMOUS_USER" ? .anonymousUser : .user(id)
        case "GroupID": self = .group(id)
        case "ThingID": self = .thing(id)
        default: return nil
        }
    }

    /// The list form: `{"userID":..}`, `{"groupID":..}`, `{"thingID":..}`.
    public var json: JSON {
        switch self {
        case .user(let id): .object(["userID": .string(id)])
        case .group(let id): .object(["groupID": .string(id)])
        case .thing(let id): .object(["thingID": .string(id)])
        case .anyAuthenticatedUser: .object(["userID": "ANY_AUTHENTICATED_USER"])
        case .anonymousUser: .object(["userID": "ANONYMOUS_USER"])
        }
    }

    public init?(json: JSON) {
        if let id = json["userID"]?.stringValue { self.init(pathComponent: "UserID:\(id)") }
        else if let id = json["groupID"]?.stringValue { self.init(pathComponent: "GroupID:\(id)") }
        else if let id = json["thingID"]?.stringValue { self.init(pathComponent: "ThingID:\(id)") }
        else { return nil }
    }

    public static func < (a: KiiACLSubject, b: KiiACLSubject) -> Bool { a.pathComponent < b.pathComponent }
}

/// Kii's ACL actions (kii.md §6.2).
public enum KiiACLVerb: String, Sendable, Hashable, CaseIterable, Comparable {
    // Object
    case readExistingObject = "READ_EXISTING_OBJECT"
    case writeExistingObject = "WRITE_EXISTING_OBJECT"
    // Bucket
    case createObjectsInBucket = "CREATE_OBJECTS_IN_BUCKET"
    case queryObjectsInBucket = "QUERY_OBJECTS_IN_BUCKET"
    case readObjectsInBucket = "READ_OBJECTS_IN_BUCKET"
    case dropBucketWithAllContent = "DROP_BUCKET_WITH_ALL_CONTENT"
    // Scope
    case createNewBucket = "CREATE_NEW_BUCKET"
    case createNewTopic = "CREATE_NEW_TOPIC"

    public static let objectVerbs: [KiiACLVerb] = [.readExistingObject, .writeExistingObject]
    public static let bucketVerbs: [KiiACLVerb] = [.createObjectsInBucket, .queryObjectsInBucket, .readObjectsInBucket, .dropBucketWithAllContent]

    public static func < (a: KiiACLVerb, b: KiiACLVerb) -> Bool { a.rawValue < b.rawValue }
}

/// One ACL entry: a verb granted to a subject.
public struct KiiACLEntry: Sendable, Hashable, Comparable {
    public var verb: KiiACLVerb
    public var subject: KiiACLSubject
    public init(_ verb: KiiACLVerb, _ subject: KiiACLSubject) {
        self.verb = verb
        self.subject = subject
    }

    /// `acl/{VERB}/{SUBJECT}`, appended to a resource path for grant (`PUT`) and revoke (`DELETE`).
    public var pathSuffix: String { "/acl/\(verb.rawValue)/" + percentEncodeSegment(subject.pathComponent) }

    public static func < (a: KiiACLEntry, b: KiiACLEntry) -> Bool {
        a.verb == b.verb ? a.subject < b.subject : a.verb < b.verb
    }
}

/// An ACL list (`application/vnd.kii.ACLRetrievalResponse+json`, kii.md §6.1):
/// `{"READ_EXISTING_OBJECT":[{"userID":"u1"}],"WRITE_EXISTING_OBJECT":[{"groupID":"g1"}]}`.
public struct KiiACLList: Sendable, Hashable {
    public var entries: Set<KiiACLEntry>

    public static let contentType = "application/vnd.kii.ACLRetrievalResponse+json"

    public init(_ entries: Set<KiiACLEntry> = []) { self.entries = entries }

    public var json: JSON {
        var o = JSONObject()
        for verb in KiiACLVerb.allCases {
            let subjects = entries.filter { $0.verb == verb }.map(\.subject).sorted()
            if !subjects.isEmpty { o[verb.rawValue] = .array(subjects.map(\.json)) }
        }
        return .object(o)
    }

    /// Reads a list; unknown verbs and subjects are ignored, as the SDKs do (kii.md §6.1).
    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue else { throw MBaaSError(.decoding, "Kii ACL list is not an object") }
        var entries: Set<KiiACLEntry> = []
        for (verbName, subjects) in o {
            guard let verb = KiiACLVerb(rawValue: verbName), let list = subjects.arrayValue else { continue }
            for s in list { if let subject = KiiACLSubject(json: s) { entries.insert(KiiACLEntry(verb, subject)) } }
        }
        self.init(entries)
    }
}

/// Maps the neutral ``ACL`` to Kii ACL entries and back. Pure.
///
/// **Objects** (the record ACL): `read` ↔ `READ_EXISTING_OBJECT`, `write` ↔ `WRITE_EXISTING_OBJECT`;
/// `*` (everyone) ↔ `UserID:ANONYMOUS_USER`, which Kii applies to every caller, with or without a token
/// (docs.kii.com "ACL Entries", Subject); a user ↔ `UserID:{id}`; `group:{id}` ↔ `GroupID:{id}`. Kii subjects
/// with no neutral principal keep their Kii name as a user principal, so reading and writing back is lossless:
/// `UserID:ANY_AUTHENTICATED_USER` ↔ user `ANY_AUTHENTICATED_USER`, `ThingID:{id}` ↔ user `ThingID:{id}`.
/// Roles have no Kii equivalent (``MBaaSError/Kind/unsupported``).
///
/// **Buckets** (``KiiBackend/classACL(className:)``): `read` ↔ `QUERY_OBJECTS_IN_BUCKET` + `READ_OBJECTS_IN_BUCKET`,
/// `write` ↔ `CREATE_OBJECTS_IN_BUCKET`. `DROP_BUCKET_WITH_ALL_CONTENT` and a lone query or read grant have no
/// neutral form and are left as they are.
public enum KiiACLMapping {
    static func subjects(for principal: ACL.Principal) throws(MBaaSError) -> [KiiACLSubject] {
        switch principal {
        case .everyone: return [.anonymousUser]
        case .user(let id):
            if id == "ANONYMOUS_USER" { return [.anonymousUser] }
            if id == "ANY_AUTHENTICATED_USER" { return [.anyAuthenticatedUser] }
            if id.hasPrefix("ThingID:") { return [.thing(String(id.dropFirst(8)))] }
            return [.user(id)]
        case .group(let id): return [.group(id)]
        case .role(let name):
            throw .unsupported("the ACL role '\(name)'", by: "kii", reason: "Kii ACLs name users, groups and things, not roles")
        }
    }

    static func principals(_ subjects: Set<KiiACLSubject>) -> [ACL.Principal] {
        var out: [ACL.Principal] = []
        for s in subjects.sorted() {
            switch s {
            case .user(let id): out.append(.user(id))
            case .group(let id): out.append(.group(id))
            case .thing(let id): out.append(.user("ThingID:\(id)"))
            case .anyAuthenticatedUser: out.append(.user("ANY_AUTHENTICATED_USER"))
            case .anonymousUser: out.append(.everyone)
            }
        }
        return out
    }

    /// The object ACL entries for a neutral ACL.
    public static func objectEntries(for acl: ACL) throws(MBaaSError) -> Set<KiiACLEntry> {
        var out: Set<KiiACLEntry> = []
        for (principal, access) in acl.entries {
            for subject in try subjects(for: principal) {
                if access.read { out.insert(KiiACLEntry(.readExistingObject, subject)) }
                if access.write { out.insert(KiiACLEntry(.writeExistingObject, subject)) }
            }
        }
        return out
    }

    /// The neutral ACL of an object's Kii ACL list (other verbs ignored).
    public static func acl(fromObjectACL list: KiiACLList) -> ACL {
        var acl = ACL()
        for p in principals(Set(list.entries.filter { $0.verb == .readExistingObject }.map(\.subject))) { acl[p].read = true }
        for p in principals(Set(list.entries.filter { $0.verb == .writeExistingObject }.map(\.subject))) { acl[p].write = true }
        return acl
    }

    /// The access an object grants as Kii enforces it: its own entries, and read for every subject its bucket grants
    /// `READ_OBJECTS_IN_BUCKET`, which reads every object of the bucket whatever the object's own ACL says [doc: kii.md
    /// §6.2]. What a copy of the object on another store must carry to grant the same.
    public static func effectiveACL(object: KiiACLList, bucket: KiiACLList) -> ACL {
        var acl = acl(fromObjectACL: object)
        for p in principals(Set(bucket.entries.filter { $0.verb == .readObjectsInBucket }.map(\.subject))) { acl[p].read = true }
        return acl
    }

    /// The bucket ACL entries for a neutral class-level ACL.
    public static func bucketEntries(for acl: ACL) throws(MBaaSError) -> Set<KiiACLEntry> {
        var out: Set<KiiACLEntry> = []
        for (principal, access) in acl.entries {
            for subject in try subjects(for: principal) {
                if access.read {
                    out.insert(KiiACLEntry(.queryObjectsInBucket, subject))
                    out.insert(KiiACLEntry(.readObjectsInBucket, subject))
                }
                if access.write { out.insert(KiiACLEntry(.createObjectsInBucket, subject)) }
            }
        }
        return out
    }

    /// The neutral class-level ACL of a bucket's Kii ACL list.
    public static func acl(fromBucketACL list: KiiACLList) -> ACL {
        func subjects(_ verb: KiiACLVerb) -> Set<KiiACLSubject> {
            Set(list.entries.filter { $0.verb == verb }.map(\.subject))
        }
        var acl = ACL()
        for p in principals(subjects(.queryObjectsInBucket).intersection(subjects(.readObjectsInBucket))) { acl[p].read = true }
        for p in principals(subjects(.createObjectsInBucket)) { acl[p].write = true }
        return acl
    }

    /// Grants and revokes turning `current` into `desired`, restricted to `verbs`, in a stable order.
    public static func changes(from current: Set<KiiACLEntry>, to desired: Set<KiiACLEntry>, verbs: [KiiACLVerb])
        -> (grants: [KiiACLEntry], revokes: [KiiACLEntry])
    {
        let managed = Set(verbs)
        let cur = current.filter { managed.contains($0.verb) }, want = desired.filter { managed.contains($0.verb) }
        return (want.subtracting(cur).sorted(), cur.subtracting(want).sorted())
    }
}
