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
///
/// A mapping never overwrites data. What it says alone is checked when it is read (``validate()``): a field both
/// dropped and renamed, two fields of a class renamed onto one name, a rename onto record metadata (`id`, `createdAt`,
/// `updatedAt`, `version`, `acl`, `class`) or onto a lineage field (``sourceIdField``, and with
/// ``keepSourceTimestamps`` ``sourceCreatedAtField`` / ``sourceUpdatedAtField``), lineage fields that are metadata or
/// the same field, two classes renamed onto one. What needs the source is checked by ``Migration/plan()`` against the
/// classes the source lists and the fields of the records it samples (``validate(against:)``). Each is an
/// `invalidRequest` naming the entry, before anything is written.
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

    /// The lineage fields' default names: a source's field of one of these names, holding what the migration writes
    /// there (a string id, a date), is lineage an earlier migration wrote, and is kept (``Migration/plan()``).
    public static let defaultSourceIdField = "sourceObjectId"
    public static let defaultSourceCreatedAtField = "sourceCreatedAt"
    public static let defaultSourceUpdatedAtField = "sourceUpdatedAt"

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
        try validate()
    }

    // MARK: Checks

    /// The rules a mapping must keep whatever the source (see the type's overview); the error names the entry by its
    /// path in the mapping file (`$.classes.MemoClass.fields.money.rename`).
    public func validate() throws(MBaaSError) {
        func refuse(_ path: String, _ why: String) -> MBaaSError { MBaaSError(.invalidRequest, "\(path): \(why)") }
        let metadata = Record.reservedFieldNames
        let metadataList = metadata.sorted().joined(separator: ", ")
        // Lineage fields: what the migration writes into every record.
        var lineage: [(name: String, path: String)] = []
        if let f = sourceIdField { lineage.append((f, "$.sourceIdField")) }
        if keepSourceTimestamps {
            lineage.append((sourceCreatedAtField, "$.sourceCreatedAtField"))
            lineage.append((sourceUpdatedAtField, "$.sourceUpdatedAtField"))
        }
        for (i, l) in lineage.enumerated() {
            if metadata.contains(l.name) {
                throw refuse(l.path, "'\(l.name)' is record metadata (\(metadataList)), not a field the source id or timestamps can go to")
            }
            if let other = lineage[..<i].first(where: { $0.name == l.name }) {
                throw refuse(l.path, "'\(l.name)' is also \(other.path): the source id and timestamps each need a field of their own")
            }
        }
        var targets: [String: String] = [:]   // target class → the entry that maps onto it
        for cls in classes.keys.sorted() {
            let rule = classes[cls]!
            let path = "$.classes.\(cls)"
            if !rule.skip {
                let target = rule.rename ?? cls
                if let other = targets[target] {
                    throw refuse(path, "'\(cls)' and '\(other)' would both be written into the class '\(target)', one over the other; map them onto different classes")
                }
                targets[target] = cls
            }
            var renamed: [String: String] = [:]   // target field → the source field renamed onto it
            for field in rule.fields.keys.sorted() {
                let f = rule.fields[field]!
                let fpath = "\(path).fields.\(field)"
                if metadata.contains(field) {
                    throw refuse(fpath, "'\(field)' is record metadata (\(metadataList)), not a field of the source's records")
                }
                guard let name = f.rename else { continue }
                if f.drop {
                    throw refuse(fpath, "\"drop\" and \"rename\" together: a dropped field is not written under any name; keep one of them")
                }
                if metadata.contains(name) {
                    throw refuse("\(fpath).rename", "'\(name)' is record metadata (\(metadataList)); a field cannot be renamed onto it")
                }
                if let l = lineage.first(where: { $0.name == name }) {
                    throw refuse("\(fpath).rename", "'\(name)' is the field the migration writes the source's \(l.path == "$.sourceIdField" ? "id" : "timestamp") into (\(l.path)), which would overwrite the renamed values; rename onto another name or change \(l.path)")
                }
                if let other = renamed[name] {
                    throw refuse("\(fpath).rename", "'\(field)' and '\(other)' are both renamed onto '\(name)', one over the other")
                }
                renamed[name] = field
            }
        }
    }

    /// What a mapping must keep against a source (see the type's overview): `classes` are the source's class names
    /// (`nil`: it cannot list them, and class entries are not checked), `fields` the fields seen in the sampled records
    /// of each class to be moved (a class with no sampled record is not checked), `carried` the lineage fields a class's
    /// records already hold from an earlier migration (kept as they are, never a conflict). Refused, naming the
    /// entry: a class entry the source does not have; a class renamed onto another class that is moved under its own
    /// name; a field entry no sampled record has; a rename onto a field the records have and keep; a lineage field
    /// that is a field the records have (unless carried).
    func validate(against classes: [String]?, fields: [String: Set<String>], carried: [String: Set<String>],
                  lineage: [(name: String, path: String)]) throws(MBaaSError) {
        func refuse(_ path: String, _ why: String) -> MBaaSError { MBaaSError(.invalidRequest, "mapping \(path): \(why)") }
        if let classes {
            let known = Set(classes)
            for cls in self.classes.keys.sorted() where !known.contains(cls) {
                throw refuse("$.classes.\(cls)", "the source has no class '\(cls)' (it has \(classes.sorted().joined(separator: ", ")))")
            }
            for cls in self.classes.keys.sorted() {
                guard let rule = self.classes[cls], !rule.skip, let target = rule.rename, target != cls, known.contains(target),
                      !isSkipped(target), targetClass(target) == target else { continue }
                throw refuse("$.classes.\(cls).rename", "'\(target)' is a class of the source, moved under its own name: both would be written into it; rename or skip one")
            }
        }
        for (cls, seen) in fields.sorted(by: { $0.key < $1.key }) where !seen.isEmpty && !isSkipped(cls) {
            let rules = self.classes[cls]?.fields ?? [:]
            let kept = seen.filter { rules[$0]?.drop != true && rules[$0]?.rename == nil }
            for field in rules.keys.sorted() {
                let fpath = "$.classes.\(cls).fields.\(field)"
                if !seen.contains(field) {
                    throw refuse(fpath, "no sampled record of \(cls) has the field '\(field)' (it has \(seen.sorted().joined(separator: ", ")))")
                }
                if let name = rules[field]?.rename, name != field, kept.contains(name) {
                    throw refuse("\(fpath).rename", "'\(name)' is a field of \(cls) that is kept: renaming '\(field)' onto it would overwrite its values; drop or rename '\(name)' too, or choose another name")
                }
            }
            for l in lineage where kept.contains(l.name) && !(carried[cls]?.contains(l.name) ?? false) {
                throw refuse(l.path, "'\(l.name)' is a field of \(cls)'s records, which the source \(l.path == "$.sourceIdField" ? "id" : "timestamp") would overwrite; choose another name (or drop or rename '\(l.name)' in $.classes.\(cls).fields)")
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
