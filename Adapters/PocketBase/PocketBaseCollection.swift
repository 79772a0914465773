import Foundation
public import MBaaSCore

/// The type of a PocketBase field (column).
public enum PocketBaseFieldKind: String, Sendable, Hashable, CaseIterable {
    case text, number, bool, date, autodate, json, geoPoint, file, relation, select, email, url, editor, password
    /// A type this adapter does not know.
    case other

    public init(type: String) { self = PocketBaseFieldKind(rawValue: type) ?? .other }

    /// Whether the column holds text (and compares as text).
    public var isTextual: Bool { [.text, .email, .url, .editor, .select].contains(self) }
}

/// One field of a collection, kept with every member PocketBase sent so that a schema update sends it back
/// unchanged.
public struct PocketBaseField: Sendable, Hashable {
    public var raw: JSONObject

    public init(raw: JSONObject) { self.raw = raw }

    public var name: String { raw["name"]?.stringValue ?? "" }
    public var type: String { raw["type"]?.stringValue ?? "" }
    public var kind: PocketBaseFieldKind { PocketBaseFieldKind(type: type) }
    public var isHidden: Bool { raw["hidden"]?.boolValue ?? false }
    public var isMultiple: Bool { (raw["maxSelect"]?.intValue ?? 1) > 1 }
    /// The target collection id of a relation field.
    public var collectionId: String? { raw["collectionId"]?.stringValue }

    // MARK: Definitions the adapter creates

    public static func text(_ name: String, max: Int = 10_000_000) -> PocketBaseField {
        PocketBaseField(raw: ["name": .string(name), "type": "text", "max": .int(Int64(max))])
    }
    public static func number(_ name: String) -> PocketBaseField { PocketBaseField(raw: ["name": .string(name), "type": "number"]) }
    public static func bool(_ name: String) -> PocketBaseField { PocketBaseField(raw: ["name": .string(name), "type": "bool"]) }
    public static func date(_ name: String) -> PocketBaseField { PocketBaseField(raw: ["name": .string(name), "type": "date"]) }
    public static func geoPoint(_ name: String) -> PocketBaseField { PocketBaseField(raw: ["name": .string(name), "type": "geoPoint"]) }
    public static func json(_ name: String, maxSize: Int = 16 << 20) -> PocketBaseField {
        PocketBaseField(raw: ["name": .string(name), "type": "json", "maxSize": .int(Int64(maxSize))])
    }
    /// A single, protected file field (downloads need a file token unless the record is public).
    public static func file(_ name: String, maxSize: Int = 100 << 20) -> PocketBaseField {
        PocketBaseField(raw: [
            "name": .string(name), "type": "file", "maxSelect": 1, "maxSize": .int(Int64(maxSize)), "protected": true,
        ])
    }
    public static func relation(_ name: String, collectionId: String, maxSelect: Int) -> PocketBaseField {
        PocketBaseField(raw: [
            "name": .string(name), "type": "relation", "collectionId": .string(collectionId),
            "maxSelect": .int(Int64(maxSelect)), "cascadeDelete": false,
        ])
    }
    public static func autodate(_ name: String, onUpdate: Bool) -> PocketBaseField {
        PocketBaseField(raw: ["name": .string(name), "type": "autodate", "onCreate": true, "onUpdate": .bool(onUpdate)])
    }
    /// The primary key of collections the adapter creates: any id of letters, digits, `_` and `-` up to 64
    /// characters (so records migrated from other backends keep their ids); generated ids stay PocketBase's.
    public static var managedId: PocketBaseField {
        PocketBaseField(raw: [
            "name": "id", "type": "text", "primaryKey": true, "system": true, "required": true, "min": 1, "max": 64,
            "pattern": "^[A-Za-z0-9_-]+$", "autogeneratePattern": "[a-z0-9]{15}",
        ])
    }

    /// The field a neutral value needs.
    public static func field(_ name: String, kind: PocketBaseFieldKind) -> PocketBaseField {
        switch kind {
        case .number: .number(name)
        case .bool: .bool(name)
        case .date: .date(name)
        case .geoPoint: .geoPoint(name)
        case .json: .json(name)
        case .file: .file(name)
        default: .text(name)
        }
    }
}

/// A collection as `/api/collections` describes it. Members the adapter does not model stay in ``raw``.
public struct PocketBaseCollection: Sendable, Hashable {
    public var raw: JSONObject

    public init(raw: JSONObject) { self.raw = raw }

    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue, o["name"]?.stringValue != nil, o["fields"]?.arrayValue != nil else {
            throw MBaaSError(.decoding, "PocketBase collection has no name or fields")
        }
        self.init(raw: o)
    }

    public var json: JSON { .object(raw) }

    public var id: String { raw["id"]?.stringValue ?? "" }
    public var name: String { raw["name"]?.stringValue ?? "" }
    /// `base`, `auth` or `view`.
    public var type: String { raw["type"]?.stringValue ?? "base" }
    public var isAuth: Bool { type == "auth" }

    public var fields: [PocketBaseField] {
        get { (raw["fields"]?.arrayValue ?? []).compactMap { $0.objectValue.map(PocketBaseField.init(raw:)) } }
        set { raw["fields"] = .array(newValue.map { .object($0.raw) }) }
    }

    /// The field of that name, compared case-insensitively as SQLite compares column names.
    public func field(named name: String) -> PocketBaseField? {
        fields.first { $0.name.equalsIgnoringCase(name) }
    }

    public var indexes: [String] {
        get { (raw["indexes"]?.arrayValue ?? []).compactMap(\.stringValue) }
        set { raw["indexes"] = .array(newValue.map(JSON.string)) }
    }

    /// A rule (`listRule`, `viewRule`, ...): `nil` = superusers only, `""` = everyone.
    public func rule(_ name: String) -> String? { raw[name]?.stringValue }

    // MARK: Collections the adapter creates

    /// Column names of the adapter's ACL.
    public enum ACLColumn {
        public static let acl = "mbaas_acl"
        public static let publicRead = "mbaas_public_read"
        public static let publicWrite = "mbaas_public_write"
        public static let readers = "mbaas_readers"
        public static let writers = "mbaas_writers"
        public static let all: [String] = [acl, publicRead, publicWrite, readers, writers]
    }

    /// The API rules that enforce the per-record ACL columns: read for list/view, write for update/delete.
    public static let readRule = "mbaas_public_read = true || mbaas_readers:each ?= @request.auth.id"
    public static let writeRule = "mbaas_public_write = true || mbaas_writers:each ?= @request.auth.id"

    /// A new base collection managed by the adapter: id, `created`, `updated`, the ACL columns and rules (anyone
    /// may create; reading and writing follow each record's ACL), the given data fields, and
    /// ``idCaseInsensitiveIndex(collection:)``.
    public static func managed(name: String, usersCollectionId: String, fields: [PocketBaseField]) -> PocketBaseCollection {
        var c = PocketBaseCollection(raw: [
            "name": .string(name), "type": "base",
            "listRule": .string(readRule), "viewRule": .string(readRule), "createRule": "",
            "updateRule": .string(writeRule), "deleteRule": .string(writeRule),
            "indexes": [.string(idCaseInsensitiveIndex(collection: name))],
        ])
        c.fields = [
            .managedId, .autodate("created", onUpdate: false), .autodate("updated", onUpdate: true),
            .json(ACLColumn.acl, maxSize: 1 << 20), .bool(ACLColumn.publicRead), .bool(ACLColumn.publicWrite),
            .relation(ACLColumn.readers, collectionId: usersCollectionId, maxSelect: 1000),
            .relation(ACLColumn.writers, collectionId: usersCollectionId, maxSelect: 1000),
        ] + fields
        return c
    }

    /// The index that keeps creating a record with a client id constant-time.
    ///
    /// A primary key whose pattern is not PocketBase's default lowercase one (as ``managedId``'s, which keeps other
    /// backends' mixed-case ids) makes PocketBase look every new id up with `id = ? COLLATE NOCASE` before inserting
    /// it [sdk: `core/field_text.go`, 0.40]. The primary-key index is binary, so without this index each create
    /// scans the whole table (measured on PocketBase 0.40.6: a batch of 50 creates went from 46 ms into an empty
    /// collection to 174 ms at 20,000 rows; with the index, 31–35 ms at 24,000).
    public static func idCaseInsensitiveIndex(collection name: String) -> String {
        "CREATE INDEX `idx_\(name)_id_nocase` ON `\(name)` (`id` COLLATE NOCASE)"
    }

    /// Whether the collection has ``idCaseInsensitiveIndex(collection:)`` (under any name).
    public var hasCaseInsensitiveIdIndex: Bool {
        indexes.contains { $0.contains("(`id` COLLATE NOCASE)") || $0.lowercased().contains("(id collate nocase)") }
    }

    /// Whether the adapter created this collection (it has the ACL columns).
    public var isManaged: Bool { field(named: ACLColumn.acl) != nil && field(named: ACLColumn.readers) != nil }
}

/// What the adapter knows of a collection's columns: the full definition (superuser), or the keys of a sample
/// record (other clients, who may not read collection definitions).
public struct PocketBaseSchema: Sendable, Hashable {
    public var name: String
    public var isAuth: Bool
    public var isManaged: Bool
    /// Column name (as stored) → kind; `nil` kind when learned from a sample value that does not say.
    public var columns: [String: PocketBaseFieldKind?]
    /// Relation target collection names, by column, where known.
    public var relationTargets: [String: String]
    /// `true` when read from the collection definition (every column is known).
    public var isComplete: Bool

    public init(
        name: String, isAuth: Bool = false, isManaged: Bool, columns: [String: PocketBaseFieldKind?],
        relationTargets: [String: String] = [:], isComplete: Bool
    ) {
        self.name = name
        self.isAuth = isAuth
        self.isManaged = isManaged
        self.columns = columns
        self.relationTargets = relationTargets
        self.isComplete = isComplete
    }

    /// From a collection definition; `collectionNames` maps collection ids to names (for relations).
    public init(collection: PocketBaseCollection, collectionNames: [String: String] = [:]) {
        var columns: [String: PocketBaseFieldKind?] = [:]
        var targets: [String: String] = [:]
        for f in collection.fields {
            columns[f.name] = f.kind
            if f.kind == .relation, let id = f.collectionId { targets[f.name] = collectionNames[id] ?? id }
        }
        self.init(name: collection.name, isAuth: collection.isAuth, isManaged: collection.isManaged, columns: columns,
                  relationTargets: targets, isComplete: true)
    }

    /// From one record of the collection (its keys are the visible columns; kinds guessed from the values).
    public init(name: String, sample: JSONObject) {
        var columns: [String: PocketBaseFieldKind?] = [:]
        for (key, value) in sample where !["collectionId", "collectionName", "expand"].contains(key) {
            switch value {
            case .null: columns[key] = .json
            case .bool: columns[key] = .bool
            case .int, .double: columns[key] = .number
            case .string: columns[key] = key.hasSuffix(PocketBaseWire.tagSuffix) ? .text : nil
            case .object(let o) where o.keys.sorted() == ["lat", "lon"]: columns[key] = .geoPoint
            case .array, .object: columns[key] = .json
            }
        }
        let managed = columns[PocketBaseCollection.ACLColumn.acl] != nil
        self.init(name: name, isManaged: managed, columns: columns, isComplete: false)
    }

    /// The stored name of a column, matched case-insensitively.
    public func column(_ name: String) -> String? {
        if columns[name] != nil { return name }
        return columns.keys.first { $0.equalsIgnoringCase(name) }
    }

    public func kind(of name: String) -> PocketBaseFieldKind? {
        column(name).flatMap { columns[$0] ?? nil }
    }

    public func hasColumn(_ name: String) -> Bool { column(name) != nil }

    /// Whether a field has a type column (it was written by this adapter).
    public func isTagged(_ field: String) -> Bool { hasColumn(PocketBaseWire.tagColumn(for: field)) }
}
