public import Foundation
public import MBaaSCore

/// How a migration renames, drops and converts, read from the mapping file (JSON). Every key is optional:
///
/// ```json
/// {"classes":{"MemoClass":{"rename":"Memo","skip":false,
///                          "fields":{"filename":{"rename":"image","fileLink":true},"comment":{"drop":true}}}},
///  "sourceIdField":"sourceObjectId","keepSourceTimestamps":true,"users":{"passwords":"reset"}}
/// ```
///
/// - `classes.<Source>.rename`: the class name on the target; `skip`: leave the class out; `aclLoss`: `"allow"` or
///   `"fail"` for this class's records and the files they link, where the target cannot hold their ACLs (overrides
///   ``MigrationOptions/aclLoss``, `--acl-loss`).
/// - `fields.<field>.rename` / `drop`: rename or leave out a field; `fileLink`: the field holds the name of a file in the
///   source's file store (NCMB's style), which is copied and linked in the target's own way. Without it, a string field
///   whose values name files of the source's store is detected as a file link (the plan says so); `false` turns that off.
/// - `sourceIdField`: the target field that keeps the source id (default `sourceObjectId`; `null` switches it off).
/// - `keepSourceTimestamps`: where the target sets its own timestamps, keep the source's in `sourceCreatedAt` /
///   `sourceUpdatedAt` (default `true`); `sourceCreatedAtField` / `sourceUpdatedAtField` rename them (extensions).
/// - `users.passwords`: `reset` (default; no usable password) or `temporary` (a generated password per user, written
///   only to a 0600 file in the state folder).
///
/// Unknown keys are errors naming their path, so a typo never passes silently.
public struct MigrationMapping: Sendable, Hashable {
    public struct FieldRule: Sendable, Hashable {
        public var rename: String?
        public var drop: Bool
        /// `true`: a file link; `false`: never one (turns detection off); `nil`: detected (see ``Migration/plan()``).
        public var fileLink: Bool?
        public init(rename: String? = nil, drop: Bool = false, fileLink: Bool? = nil) {
            self.rename = rename
            self.drop = drop
            self.fileLink = fileLink
        }
    }

    public struct ClassRule: Sendable, Hashable {
        public var rename: String?
        public var skip: Bool
        public var fields: [String: FieldRule]
        /// What happens to this class's records (and the files they link) whose ACL the target cannot hold; `nil`:
        /// ``MigrationOptions/aclLoss``.
        public var aclLoss: ACLLossPolicy?
        public init(rename: String? = nil, skip: Bool = false, fields: [String: FieldRule] = [:], aclLoss: ACLLossPolicy? = nil) {
            self.rename = rename
            self.skip = skip
            self.fields = fields
            self.aclLoss = aclLoss
        }
    }

    /// What a migration does with a record or file whose ACL the target cannot hold (a target without per-record
    /// ACLs, files or attachments without ACLs of their own, an ACL the target would store wider): `fail` (the
    /// default) leaves it out, failed and named, so that nothing private becomes readable by more people; `allow`
    /// writes it without (or with the wider one) and lists it as a warning.
    public enum ACLLossPolicy: String, Sendable, Hashable, CaseIterable {
        case fail
        case allow
    }

    public enum PasswordPolicy: String, Sendable, Hashable, CaseIterable {
        /// No usable password: users reset it.
        case reset
        /// A generated temporary password per user.
        case temporary
    }

    public var classes: [String: ClassRule]
    /// `nil`: do not keep the source id in a field.
    public var sourceIdField: String?
    public var keepSourceTimestamps: Bool
    public var sourceCreatedAtField: String
    public var sourceUpdatedAtField: String
    public var passwords: PasswordPolicy

    public init(
        classes: [String: ClassRule] = [:], sourceIdField: String? = "sourceObjectId", keepSourceTimestamps: Bool = true,
        sourceCreatedAtField: String = "sourceCreatedAt", sourceUpdatedAtField: String = "sourceUpdatedAt",
        passwords: PasswordPolicy = .reset
    ) {
        self.classes = classes
        self.sourceIdField = sourceIdField
        self.keepSourceTimestamps = keepSourceTimestamps
        self.sourceCreatedAtField = sourceCreatedAtField
        self.sourceUpdatedAtField = sourceUpdatedAtField
        self.passwords = passwords
    }

    /// A faithful copy: no source-id field and no source timestamps (for exports into bundles, which keep both).
    public static let verbatim = MigrationMapping(sourceIdField: nil, keepSourceTimestamps: false)

    /// Reads a mapping file.
    public init(contentsOf url: URL) throws(MBaaSError) {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw MBaaSError(.localIO, "cannot read the mapping file \(url.path): \(MBaaSError.describe(error))")
        }
        do { try self.init(json: try JSON.parse(data)) } catch let e as MBaaSError {
            throw MBaaSError(.invalidRequest, "mapping file \(url.lastPathComponent): \(e.message)")
        } catch {
            throw MBaaSError(.invalidRequest, "mapping file \(url.lastPathComponent): \(error)")
        }
    }

    /// Reads the mapping JSON; errors name the path of the wrong key.
    public init(json: JSON) throws(MBaaSError) {
        self.init()
        guard let root = json.objectValue else { throw MBaaSError(.invalidRequest, "the mapping must be a JSON object") }
        try Self.known(root, ["classes", "sourceIdField", "keepSourceTimestamps", "sourceCreatedAtField", "sourceUpdatedAtField", "users"], at: "$")
        if let c = root["classes"] {
            guard let classes = c.objectValue else { throw MBaaSError(.invalidRequest, "$.classes must be an object") }
            for (name, ruleJSON) in classes {
                let path = "$.classes.\(name)"
                guard let rule = ruleJSON.objectValue else { throw MBaaSError(.invalidRequest, "\(path) must be an object") }
                try Self.known(rule, ["rename", "skip", "fields", "aclLoss"], at: path)
                var classRule = ClassRule(rename: try Self.name(rule["rename"], at: "\(path).rename"),
                                          skip: try Self.bool(rule["skip"], at: "\(path).skip") ?? false)
                if let a = rule["aclLoss"], !a.isNull {
                    guard let text = a.stringValue, let policy = ACLLossPolicy(rawValue: text) else {
                        throw MBaaSError(.invalidRequest, "\(path).aclLoss must be \"fail\" or \"allow\"")
                    }
                    classRule.aclLoss = policy
                }
                if let f = rule["fields"] {
                    guard let fields = f.objectValue else { throw MBaaSError(.invalidRequest, "\(path).fields must be an object") }
                    for (field, fr) in fields {
                        let fpath = "\(path).fields.\(field)"
                        guard let fo = fr.objectValue else { throw MBaaSError(.invalidRequest, "\(fpath) must be an object") }
                        try Self.known(fo, ["rename", "drop", "fileLink"], at: fpath)
                        classRule.fields[field] = FieldRule(
                            rename: try Self.name(fo["rename"], at: "\(fpath).rename"), drop: try Self.bool(fo["drop"], at: "\(fpath).drop") ?? false,
                            fileLink: try Self.bool(fo["fileLink"], at: "\(fpath).fileLink"))
                    }
                }
                self.classes[name] = classRule
            }
        }
        if let s = root["sourceIdField"] {
            sourceIdField = s.isNull ? nil : try Self.name(s, at: "$.sourceIdField")
        }
        if let k = try Self.bool(root["keepSourceTimestamps"], at: "$.keepSourceTimestamps") { keepSourceTimestamps = k }
        if let n = try Self.name(root["sourceCreatedAtField"], at: "$.sourceCreatedAtField") { sourceCreatedAtField = n }
        if let n = try Self.name(root["sourceUpdatedAtField"], at: "$.sourceUpdatedAtField") { sourceUpdatedAtField = n }
        if let u = root["users"] {
            guard let users = u.objectValue else { throw MBaaSError(.invalidRequest, "$.users must be an object") }
            try Self.known(users, ["passwords"], at: "$.users")
            if let p = users["passwords"] {
                guard let text = p.stringValue, let policy = PasswordPolicy(rawValue: text) else {
                    throw MBaaSError(.invalidRequest, "$.users.passwords must be \"reset\" or \"temporary\"")
                }
                passwords = policy
            }
        }
    }

    private static func known(_ object: JSONObject, _ keys: Set<String>, at path: String) throws(MBaaSError) {
        for (key, _) in object where !keys.contains(key) {
            throw MBaaSError(.invalidRequest, "unknown key '\(key)' at \(path) (known: \(keys.sorted().joined(separator: ", ")))")
        }
    }

    private static func bool(_ json: JSON?, at path: String) throws(MBaaSError) -> Bool? {
        guard let json, !json.isNull else { return nil }
        guard let b = json.boolValue else { throw MBaaSError(.invalidRequest, "\(path) must be true or false") }
        return b
    }

    private static func name(_ json: JSON?, at path: String) throws(MBaaSError) -> String? {
        guard let json, !json.isNull else { return nil }
        guard let s = json.stringValue, !s.isEmpty else { throw MBaaSError(.invalidRequest, "\(path) must be a non-empty string") }
        return s
    }

    // MARK: Applying

    /// The target class of a source class.
    public func targetClass(_ source: String) -> String { classes[source]?.rename ?? source }

    public func isSkipped(_ source: String) -> Bool { classes[source]?.skip ?? false }

    /// The class's own ``ClassRule/aclLoss``, else `fallback`.
    public func aclLoss(_ source: String, default fallback: ACLLossPolicy) -> ACLLossPolicy { classes[source]?.aclLoss ?? fallback }

    /// The rule of a source field, if any.
    public func rule(className: String, field: String) -> FieldRule? { classes[className]?.fields[field] }

    /// The fields of a source class that the mapping marks as file links.
    public func fileLinkFields(_ className: String) -> Set<String> {
        Set(classes[className]?.fields.filter { $0.value.fileLink == true }.map(\.key) ?? [])
    }

    /// The fields of a source class that the mapping says are never file links.
    public func notFileLinkFields(_ className: String) -> Set<String> {
        Set(classes[className]?.fields.filter { $0.value.fileLink == false }.map(\.key) ?? [])
    }
}
