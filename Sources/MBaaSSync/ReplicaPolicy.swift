public import Foundation
public import MBaaSCore

/// How one class of a replica keeps its records: where they live, how they are refreshed, how conflicts are settled.
///
/// The names follow AppPot's `APObject` (`persistentType`, `isAutoRefresh`/`autoRefreshInterval`,
/// `scopeTypeForAutoRefresh`, `lifeSpan`, `isUsingLockForUpdate`, `encryptedProperties`); see the
/// "Offline and sync" article for the whole mapping, Mobile Sync's included.
///
/// # Contract
/// - ``Persistence/serverOnly`` (the default for a class the configuration does not name): every call goes to the
///   remote; nothing is kept on the device.
/// - ``Persistence/localOnly``: the records live in the replica only and never leave the device (a `where` is refused:
///   nothing is mirrored).
/// - ``Persistence/localAndServer``: reads come from the replica; writes go to the replica and the outbox, and reach the
///   remote on sync up; sync down mirrors the records `where` selects.
public struct ReplicaPolicy: Sendable, Hashable {
    /// Where a class's records live (AppPot `persistentType`).
    public enum Persistence: String, Sendable, Hashable, CaseIterable {
        case serverOnly, localOnly, localAndServer
    }

    /// Whose records sync down mirrors (AppPot `scopeTypeForAutoRefresh`: 1 user, 2 group, 3 all), applied as a filter
    /// on the records the class's query (`where`, and the high-water mark) returns, by their ACLs:
    /// - `user`: records whose ACL grants the logged-in user write by name (the user's own; AppPot's `createUserId`);
    /// - `group`: those, and records whose ACL grants read or write to a role or group of that user
    ///   (``MBaaSCore/User/roles``, ``MBaaSCore/User/groups``; AppPot's `groupIds`);
    /// - `all`: every record the session may read (no filter).
    ///
    /// The neutral query has no ACL condition, so the filter runs on the device over the query's pages: `user` and
    /// `group` need a remote that keeps per-record ACLs (``MBaaSCore/Capabilities/Feature/acl``; the ACLs are read
    /// with the records, or with ``MBaaSCore/ObjectStore/recordACLs(className:ids:)`` where the remote declares
    /// ``MBaaSCore/Capabilities/Feature/aclRead``) and a logged-in user. A remote without ACLs is refused at
    /// `sync init` (``ReplicaBackend/check(_:against:)``), never ignored; a sync down without a user ends with
    /// ``SyncReport/Outcome/sessionRefused(_:)``. Records leaving the scope are removed by the ghost scan.
    public enum RefreshScope: String, Sendable, Hashable, CaseIterable {
        case user, group, all
    }

    /// What sync up does when the server changed a record the replica changed too (Mobile Sync's merge modes).
    public enum MergeMode: String, Sendable, Hashable, CaseIterable {
        /// The replica's change is written over the server's (`OVERWRITE`).
        case overwrite
        /// The server's record is left alone and the local one marked ``SyncStatus/conflicted`` (`LEAVE_IF_CHANGED`).
        case leaveIfChanged

        /// Parses `overwrite`, `leaveIfChanged` or the CLI's `leave-if-changed`; anything else is `invalidRequest`
        /// listing the modes.
        public init(parsing text: String) throws(MBaaSError) {
            switch text {
            case "overwrite": self = .overwrite
            case "leaveIfChanged", "leave-if-changed": self = .leaveIfChanged
            default:
                throw MBaaSError(.invalidRequest, "unknown merge mode '\(text)': use overwrite or leaveIfChanged (leave-if-changed)")
            }
        }
    }

    public var persistence: Persistence
    /// Seconds between automatic refreshes (AppPot `autoRefreshInterval`); `nil`: no automatic refresh.
    public var autoRefresh: TimeInterval?
    public var refreshScope: RefreshScope
    /// The records mirrored by sync down (a neutral predicate); `nil`: every record the session may read.
    public var `where`: QueryPredicate?
    /// Seconds a synced local copy is kept after its last sync; older ones are pruned from the replica (never from
    /// the server). Pending records are never pruned. `nil`: kept forever.
    public var lifeSpan: TimeInterval?
    /// Fields stored encrypted at rest (AES-GCM) under the key the app supplies.
    public var encryptedFields: Set<String>
    /// Sends the version the replica last saw with every update and delete (AppPot `isUsingLockForUpdate`): a record
    /// the server changed meanwhile is marked conflicted whatever ``merge`` says.
    public var lockForUpdate: Bool
    public var merge: MergeMode
    /// Declared field types (field → ``fieldTypes`` name: `string`, `int`, `Date`, ...): a type the remote cannot
    /// hold is refused at `sync init` (``ReplicaBackend/check(_:against:)``), and a write of another type to a
    /// declared field is refused on the device (`invalidRequest`) before it is queued.
    public var fields: [String: String]

    /// The type names ``fields`` takes (``MBaaSCore/Value/typeName``). `string`, `int`, `double` and `bool` are held by
    /// every remote; the others need the remote's ``MBaaSCore/Capabilities/Feature/valueType(_:)`` (as the
    /// conformance suite's scenarios do).
    public static let fieldTypes: [String] = ["string", "int", "double", "bool", "Date", "Bytes", "array", "object", "Pointer", "File", "GeoPoint"]

    public init(
        persistence: Persistence = .localAndServer, autoRefresh: TimeInterval? = nil, refreshScope: RefreshScope = .all,
        where predicate: QueryPredicate? = nil, lifeSpan: TimeInterval? = nil, encryptedFields: Set<String> = [],
        lockForUpdate: Bool = false, merge: MergeMode = .overwrite, fields: [String: String] = [:]
    ) {
        self.persistence = persistence
        self.autoRefresh = autoRefresh
        self.refreshScope = refreshScope
        self.where = predicate
        self.lifeSpan = lifeSpan
        self.encryptedFields = encryptedFields
        self.lockForUpdate = lockForUpdate
        self.merge = merge
        self.fields = fields
    }

    /// The default of a class the configuration does not name.
    public static let serverOnly = ReplicaPolicy(persistence: .serverOnly)

    /// Whether sync up checks that the server did not change the record first.
    var checksServerVersion: Bool { lockForUpdate || merge == .leaveIfChanged }

    /// Refuses a policy that contradicts itself, naming the class and the problem (`invalidRequest`).
    public func validate(className: String) throws(MBaaSError) {
        if persistence == .localOnly, self.where != nil {
            throw MBaaSError(.invalidRequest, "class '\(className)': a localOnly class has no 'where' (nothing of it is mirrored from the server)")
        }
        if persistence != .localAndServer, autoRefresh != nil {
            throw MBaaSError(.invalidRequest, "class '\(className)': 'autoRefresh' needs persistence localAndServer (it is \(persistence.rawValue))")
        }
        if let autoRefresh, !(autoRefresh > 0) || !autoRefresh.isFinite {
            throw MBaaSError(.invalidRequest, "class '\(className)': 'autoRefresh' must be a positive number of seconds, got \(autoRefresh)")
        }
        if let lifeSpan, !(lifeSpan > 0) || !lifeSpan.isFinite {
            throw MBaaSError(.invalidRequest, "class '\(className)': 'lifeSpan' must be a positive number of seconds, got \(lifeSpan)")
        }
        for field in encryptedFields where field.isEmpty || Record.reservedFieldNames.contains(field) {
            throw MBaaSError(.invalidRequest, "class '\(className)': '\(field)' cannot be an encrypted field (empty or record metadata)")
        }
        for (field, type) in fields.sorted(by: { $0.key < $1.key }) {
            if field.isEmpty || Record.reservedFieldNames.contains(field) {
                throw MBaaSError(.invalidRequest, "class '\(className)': 'fields' names '\(field)', which is not a field of its own (empty or record metadata)")
            }
            if !Self.fieldTypes.contains(type) {
                throw MBaaSError(.invalidRequest, "class '\(className)': field '\(field)' has the unknown type '\(type)' (\(Self.fieldTypes.joined(separator: ", ")))")
            }
        }
        if let predicate = self.where {
            let encryptedKeys = predicate.keys.filter { encryptedFields.contains($0) }
            if let key = encryptedKeys.sorted().first {
                throw MBaaSError(.invalidRequest, "class '\(className)': 'where' tests the encrypted field '\(key)' (encrypted fields cannot be queried)")
            }
        }
    }
}

/// The policies of a replica's classes: a Swift value, or the JSON file `mbaas sync init --config` takes.
///
/// ```json
/// {"classes": {
///    "Memo": {"persistence": "localAndServer", "autoRefresh": 60, "refreshScope": "user",
///             "where": {"archived": {"$ne": true}}, "lifeSpan": 604800, "encryptedFields": ["body"],
///             "lockForUpdate": false, "merge": "leaveIfChanged", "fields": {"title": "string", "due": "Date"}},
///    "Draft": {"persistence": "localOnly"}},
///  "default": {"persistence": "serverOnly"}}
/// ```
/// One file describes several classes (like Mobile Sync's `usersyncs.json`). Every member but `persistence` is
/// optional (defaults as ``ReplicaPolicy/init(persistence:autoRefresh:refreshScope:where:lifeSpan:encryptedFields:lockForUpdate:merge:fields:)``);
/// `where` is the neutral query syntax `mbaas objects query --where` takes. `default` applies to classes the file
/// does not name (``ReplicaPolicy/serverOnly`` when absent).
public struct ReplicaConfiguration: Sendable, Hashable {
    public var classes: [String: ReplicaPolicy]
    public var defaultPolicy: ReplicaPolicy

    public init(classes: [String: ReplicaPolicy] = [:], defaultPolicy: ReplicaPolicy = .serverOnly) {
        self.classes = classes
        self.defaultPolicy = defaultPolicy
    }

    /// The policy of a class.
    public func policy(for className: String) -> ReplicaPolicy { classes[className] ?? defaultPolicy }

    /// The classes mirrored by sync (``ReplicaPolicy/Persistence/localAndServer``), sorted.
    public var syncedClasses: [String] { classes.filter { $0.value.persistence == .localAndServer }.keys.sorted() }

    /// Refuses a configuration any of whose policies contradicts itself (see ``ReplicaPolicy/validate(className:)``)
    /// or that names an invalid class.
    public func validate() throws(MBaaSError) {
        for name in classes.keys.sorted() {
            if name.isEmpty || name.contains("/") || name.hasPrefix("_") {
                throw MBaaSError(.invalidRequest, "configuration: '\(name)' is not a class name")
            }
            try classes[name]!.validate(className: name)
        }
        try defaultPolicy.validate(className: "default")
        if defaultPolicy.where != nil {
            throw MBaaSError(.invalidRequest, "configuration: 'default' cannot have a 'where' (it applies to every class)")
        }
    }

    // MARK: JSON

    /// Reads the JSON form; every error names the class and member (`invalidRequest`), and the result is validated.
    public init(json: JSON) throws(MBaaSError) {
        guard let root = json.objectValue else { throw MBaaSError(.invalidRequest, "configuration: must be a JSON object with a 'classes' object") }
        for key in root.keys where key != "classes" && key != "default" {
            throw MBaaSError(.invalidRequest, "configuration: unknown member '\(key)' (classes, default)")
        }
        var classes: [String: ReplicaPolicy] = [:]
        if let c = root["classes"] {
            guard let object = c.objectValue else { throw MBaaSError(.invalidRequest, "configuration: 'classes' must be an object of class name → policy") }
            for (name, value) in object { classes[name] = try ReplicaPolicy(json: value, className: name) }
        }
        let defaultPolicy = try root["default"].map { j throws(MBaaSError) in try ReplicaPolicy(json: j, className: "default") } ?? .serverOnly
        self.init(classes: classes, defaultPolicy: defaultPolicy)
        try validate()
    }

    /// Reads and validates a configuration file.
    public init(contentsOf url: URL) throws(MBaaSError) {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw MBaaSError(.localIO, "cannot read the configuration '\(url.path)': \(MBaaSError.describe(error))")
        }
        let json: JSON
        do { json = try JSON.parse(data) } catch {
            throw MBaaSError(.invalidRequest, "configuration '\(url.path)': \(error)")
        }
        try self.init(json: json)
    }

    /// The JSON form (classes sorted), as ``init(json:)`` reads it.
    public var json: JSON {
        var classesObject = JSONObject()
        for name in classes.keys.sorted() { classesObject[name] = classes[name]!.json }
        return .object(["classes": .object(classesObject), "default": defaultPolicy.json])
    }
}

extension ReplicaPolicy {
    static let members: Set<String> = ["persistence", "autoRefresh", "refreshScope", "where", "lifeSpan", "encryptedFields", "lockForUpdate", "merge", "fields"]

    init(json: JSON, className: String) throws(MBaaSError) {
        let at = "configuration: class '\(className)'"
        guard let o = json.objectValue else { throw MBaaSError(.invalidRequest, "\(at): a policy must be a JSON object") }
        for key in o.keys where !Self.members.contains(key) {
            throw MBaaSError(.invalidRequest, "\(at): unknown member '\(key)' (\(Self.members.sorted().joined(separator: ", ")))")
        }
        func string(_ key: String) throws(MBaaSError) -> String? {
            guard let v = o[key], !v.isNull else { return nil }
            guard let s = v.stringValue else { throw MBaaSError(.invalidRequest, "\(at): '\(key)' must be a string") }
            return s
        }
        func seconds(_ key: String) throws(MBaaSError) -> TimeInterval? {
            guard let v = o[key], !v.isNull else { return nil }
            guard let d = v.doubleValue else { throw MBaaSError(.invalidRequest, "\(at): '\(key)' must be a number of seconds") }
            return d
        }
        var policy = ReplicaPolicy()
        if let p = try string("persistence") {
            guard let value = Persistence(rawValue: p) else {
                throw MBaaSError(.invalidRequest, "\(at): unknown persistence '\(p)' (serverOnly, localOnly, localAndServer)")
            }
            policy.persistence = value
        }
        policy.autoRefresh = try seconds("autoRefresh")
        if let s = try string("refreshScope") {
            guard let value = RefreshScope(rawValue: s) else {
                throw MBaaSError(.invalidRequest, "\(at): unknown refreshScope '\(s)' (user, group, all)")
            }
            policy.refreshScope = value
        }
        if let w = o["where"], !w.isNull { policy.where = try QueryPredicate(json: w, path: "\(className).where") }
        policy.lifeSpan = try seconds("lifeSpan")
        if let e = o["encryptedFields"], !e.isNull {
            guard let items = e.arrayValue, items.allSatisfy({ $0.stringValue != nil }) else {
                throw MBaaSError(.invalidRequest, "\(at): 'encryptedFields' must be an array of field names")
            }
            policy.encryptedFields = Set(items.compactMap(\.stringValue))
        }
        if let l = o["lockForUpdate"], !l.isNull {
            guard let b = l.boolValue else { throw MBaaSError(.invalidRequest, "\(at): 'lockForUpdate' must be true or false") }
            policy.lockForUpdate = b
        }
        if let f = o["fields"], !f.isNull {
            guard let object = f.objectValue, object.values.allSatisfy({ $0.stringValue != nil }) else {
                throw MBaaSError(.invalidRequest, "\(at): 'fields' must be an object of field name → type name (\(Self.fieldTypes.joined(separator: ", ")))")
            }
            policy.fields = object.dictionary.compactMapValues(\.stringValue)
        }
        if let m = try string("merge") {
            do { policy.merge = try MergeMode(parsing: m) } catch { throw MBaaSError(.invalidRequest, "\(at): \(error.message)") }
        }
        self = policy
    }

    var json: JSON {
        var o: JSONObject = ["persistence": .string(persistence.rawValue), "refreshScope": .string(refreshScope.rawValue),
                             "lockForUpdate": .bool(lockForUpdate), "merge": .string(merge.rawValue)]
        if let autoRefresh { o["autoRefresh"] = .double(autoRefresh) }
        if let predicate = self.where { o["where"] = predicate.json }
        if let lifeSpan { o["lifeSpan"] = .double(lifeSpan) }
        if !encryptedFields.isEmpty { o["encryptedFields"] = .array(encryptedFields.sorted().map(JSON.string)) }
        if !fields.isEmpty { o["fields"] = .object(JSONObject(sorting: fields.mapValues(JSON.string))) }
        return .object(o)
    }
}
