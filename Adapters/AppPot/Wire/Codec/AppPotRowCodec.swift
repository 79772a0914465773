public import Foundation
public import MBaaSCore

/// AppPot's access scope of a record (`scopeType`, reference A7): who may see it. The wire values are the
/// documented ones, 1 user, 2 group, 3 all (not the enum positions Android assigns by mistake, A11).
public enum AppPotScope: Int, Sendable, Hashable, CaseIterable {
    /// Only the user who created the record.
    case user = 1
    /// The creator's groups (the record's `groupIds`).
    case group = 2
    /// Every user of the app.
    case all = 3

    /// Reads `user`, `group`, `all` (or `everyone`), or the wire numbers `1`, `2`, `3`.
    public init?(name: String) {
        switch name.lowercased().trimmingCharacters(in: .whitespaces) {
        case "user", "1": self = .user
        case "group", "2": self = .group
        case "all", "everyone", "3": self = .all
        default: return nil
        }
    }

    /// Reads `3` or `"3"`.
    public init?(wire: JSON?) {
        guard let wire else { return nil }
        let n = wire.intValue ?? wire.stringValue.flatMap { Int64(AppPotText.trimmingWhitespace($0)) }
        guard let n, let scope = AppPotScope(rawValue: Int(n)) else { return nil }
        self = scope
    }

    /// The scope that expresses an ACL exactly, for a record written by `userId` whose groups are `groupIds`.
    ///
    /// - `nil` (no ACL) is `defaultScope`: ``group`` unless the URL's `defaultScope` says otherwise, because
    ///   every AppPot SDK writes Group when the app names no scope (iOS `APObject.h`, the iOS guide's
    ///   "SDKのデフォルト値はAPScopeGroup", JS `model.ts` `defaultScope = ScopeType.Group`).
    /// - `{"*": read+write}` is ``all``.
    /// - Read and write for the owner only (`userId`) is ``user``.
    /// - Read and write for exactly the owner's groups (optionally also the owner) is ``group``.
    ///
    /// Anything else cannot be expressed and is ``MBaaSError/Kind/unsupported``, naming why: grants to other
    /// users or to roles, read without write (a scope grants both), a subset of the owner's groups (group scope
    /// always shares with all of them), or an empty ACL.
    public static func from(acl: ACL?, userId: String?, groupIds: [String],
                            default defaultScope: AppPotScope = .group) throws(MBaaSError) -> AppPotScope {
        guard let acl else { return defaultScope }
        func unsupported(_ why: String) -> MBaaSError {
            .unsupported("the ACL \(acl.json.printed())", by: "apppot",
                         reason: "\(why); AppPot scopes are user (owner only), group (the owner's groups) or all")
        }
        let everyone = acl[.everyone]
        if everyone.read || everyone.write {
            guard everyone.read && everyone.write else {
                throw unsupported("a scope grants read and write together, not one without the other")
            }
            return .all
        }
        guard !acl.entries.isEmpty else { throw unsupported("an ACL that grants nobody access") }
        var groups = Set<String>()
        for (principal, access) in acl.entries {
            guard access.read && access.write else {
                throw unsupported("a scope grants read and write together, not one without the other")
            }
            switch principal {
            case .everyone: break
            case .role(let r): throw unsupported("grants to roles (role:\(r)) cannot be expressed")
            case .user(let u):
                guard let userId else { throw unsupported("an owner-only ACL needs a logged-in user") }
                guard u == userId else {
                    throw unsupported("per-user grants beyond the owner (user \(u)) cannot be expressed")
                }
            case .group(let g): groups.insert(g)
            }
        }
        if groups.isEmpty { return .user }
        guard groups == Set(groupIds) else {
            throw unsupported("group scope shares with all of the writer's groups (\(groupIds.joined(separator: ", "))), not with \(groups.sorted().joined(separator: ", "))")
        }
        return .group
    }

    /// The groups of an ACL that grants read and write to a non-empty proper subset of the writer's groups (and
    /// optionally the writer), and nothing else: what a client-set `groupIds` expresses (docs 05.2's addData
    /// example sends `"groupIds":"1"`). `nil` for any other ACL.
    public static func groupSubset(acl: ACL?, userId: String?, groupIds: [String]) -> [String]? {
        guard let acl, !acl[.everyone].read, !acl[.everyone].write else { return nil }
        var groups: [String] = []
        for (principal, access) in acl.entries {
            guard access.read && access.write else { return nil }
            switch principal {
            case .group(let g): groups.append(g)
            case .user(let u) where u == userId: break
            default: return nil
            }
        }
        let mine = Set(groupIds)
        guard !groups.isEmpty, Set(groups).isSubset(of: mine), Set(groups) != mine else { return nil }
        return groups.sorted()
    }

    /// `groupIds` as a client sends it: `"1"`, `"1,2"` (the docs' addData example; the list form is inferred).
    public static func clientGroupIdsWire(_ ids: [String]) -> String { ids.joined(separator: ",") }

    /// The ACL this scope means: ``all`` is public read/write, ``user`` read/write for the creator, ``group``
    /// read/write for each of the record's groups.
    public func acl(createUserId: String?, groupIds: [String]) -> ACL {
        switch self {
        case .all: return .publicReadWrite
        case .user: return createUserId.map { ACL.privateTo($0) } ?? ACL()
        case .group: return ACL(Dictionary(groupIds.map { (ACL.Principal.group($0), ACL.Access.readWrite) },
                                           uniquingKeysWith: { a, _ in a }))
        }
    }

    /// Parses `groupIds` as the server writes them, `"{1,2}"` (the server's own list text in a MySQL `text`
    /// column), or a JSON array.
    public static func groupIds(fromWire json: JSON?) -> [String] {
        guard let json else { return [] }
        if let a = json.arrayValue { return a.compactMap { AppPotGroupRole.idString($0) } }
        guard let s = json.stringValue else { return json.intValue.map { [String($0)] } ?? [] }
        // ASCII delimiters only: trimmed on UTF-8 bytes (Foundation's CharacterSet trimming was a sixth of a
        // create's time in `mbaas bench adapters`).
        let inner = trimASCII(Substring(s), "{}[] ")
        return inner.split(separator: ",").map { String(trimASCII($0, " \"")) }.filter { !$0.isEmpty }
    }

    private static func trimASCII(_ s: Substring, _ characters: StaticString) -> Substring {
        let set = UnsafeBufferPointer(start: characters.utf8Start, count: characters.utf8CodeUnitCount)
        let bytes = s.utf8
        var start = bytes.startIndex, end = bytes.endIndex
        while start < end, set.contains(bytes[start]) { start = bytes.index(after: start) }
        while end > start, set.contains(bytes[bytes.index(before: end)]) { end = bytes.index(before: end) }
        return s[start..<end]
    }

    /// `"{1,2}"`.
    public static func groupIdsWire(_ ids: [String]) -> String { "{" + ids.joined(separator: ",") + "}" }
}

/// Conversions between core ``Value``s and AppPot's wire values, by column type (pure; shared by the adapter
/// and a future emulator).
public enum AppPotValueCodec {
    /// The text of a double as the JS SDK writes it (`columns[key] + ""`): `5`, `5.5`, `-0.25`. Other clients
    /// compare double columns as text, so `5.0` would never equal the `5` they wrote.
    public static func doubleText(_ d: Double) -> String { AppPotNumberText.js(d) }

    /// The wire form of a value for a column (or, without a known column, by the value's own type). `null` is JSON
    /// `null` for every column. A value the column cannot hold is ``MBaaSError/Kind/invalidRequest`` naming the
    /// field, the column type and the value's type; so is a string longer than the column's
    /// ``AppPotColumnType/characterLimit`` (naming the limit). Doubles are JS-style text on v2 (a varchar
    /// column) and JSON numbers on v3 and later (a `double` column), as the JS SDK of each generation writes them.
    public static func wire(_ value: Value, column: AppPotColumnType?, field: String,
                            generation: AppPotGeneration = .v2) throws(MBaaSError) -> JSON {
        var json = try wireUnchecked(value, column: column, field: field, generation: generation)
        // The server answers NULL and "" alike (""), so an empty string is stored as NULL: what is stored then
        // agrees with what is read back (absent) and with `IS NULL` in queries.
        if case .string(let s) = json, s.isEmpty { json = .null }
        if let column, let limit = column.characterLimit, case .string(let s) = json, s.count > limit {
            throw MBaaSError(.invalidRequest, "field '\(field)' is an AppPot \(column) column of at most \(limit) characters; the value has \(s.count)")
        }
        return json
    }

    private static func wireUnchecked(_ value: Value, column: AppPotColumnType?, field: String,
                                      generation: AppPotGeneration) throws(MBaaSError) -> JSON {
        if case .null = value { return .null }
        func number(_ d: Double) -> JSON {
            guard generation.hasTypedColumns else { return .string(doubleText(d)) }
            if d.rounded() == d, abs(d) < 9.0e15 { return .int(Int64(d)) }
            return .double(d)
        }
        func mismatch() -> MBaaSError {
            MBaaSError(.invalidRequest,
                       "field '\(field)' is an AppPot \(column.map(\.description) ?? "?") column; a \(value.typeName) value (\(value.json.printed())) does not fit")
        }
        guard let column else {
            switch value {
            case .bool(let b): return .int(b ? 1 : 0)
            case .int(let i): return .int(i)
            case .double(let d): return number(d)
            case .string(let s): return .string(s)
            case .date(let d): return .int(ISO8601.millis(d))
            default: return .string(value.json.printed([.sortedKeys]))
            }
        }
        switch column {
        case .varchar, .text:
            guard case .string(let s) = value else { throw mismatch() }
            return .string(s)
        case .decimal:
            switch value {
            case .int(let i): return .string(String(i))
            case .double(let d) where d.isFinite: return .string(doubleText(d))
            case .string(let s) where Double(s) != nil: return .string(s)
            default: throw mismatch()
            }
        case .integer:
            guard case let n? = value.intValueForColumn, n >= Int64(Int32.min), n <= Int64(Int32.max) else { throw mismatch() }
            return .int(n)
        case .long:
            guard let n = value.intValueForColumn else { throw mismatch() }
            return .int(n)
        case .bool:
            guard case .bool(let b) = value else { throw mismatch() }
            return .int(b ? 1 : 0)
        case .dateTime:
            guard case .date(let d) = value else { throw mismatch() }
            return .int(ISO8601.millis(d))
        case .double:
            guard let d = value.doubleValue, d.isFinite else { throw mismatch() }
            return number(d)
        case .json:
            return .string(value.json.printed([.sortedKeys]))
        }
    }

    /// A value read from the server (a string, as AppPot answers, or a JSON number) for a column. `null` and a
    /// missing column are `nil`. Without a known column the value is kept as the server sent it (strings stay
    /// strings). Text that does not fit the column is ``MBaaSError/Kind/decoding``.
    ///
    /// The server answers a NULL column as `""` (JS commit 5321b55; JS `parseColumns` turns `""` into `null` for
    /// int, long, bool, datetime and double; Android `setValueFromServer` skips blank values). So `""` is `nil`
    /// (absent) for every column type, including varchar and text: there the server cannot tell NULL from an
    /// empty string, and reading it as absent keeps "a field never written is absent" true for sparse rows. The
    /// price: AppPot holds no empty strings through this adapter. ``wire(_:column:field:generation:)`` writes
    /// `""` as NULL, so an empty string reads back as absent (as the Android SDK reads it) and an `eq ""` query
    /// is `IS NULL`.
    public static func value(fromWire json: JSON, column: AppPotColumnType?, field: String) throws(MBaaSError) -> Value? {
        if json.isNull { return nil }
        if case .string(let s) = json, s.isEmpty { return nil }
        func bad() -> MBaaSError {
            MBaaSError(.decoding, "AppPot column '\(field)' (\(column.map(\.description) ?? "?")): cannot read \(json.printed())")
        }
        guard let column else {
            switch json {
            case .string(let s): return .string(s)
            case .int(let i): return .int(i)
            case .double(let d): return .double(d)
            case .bool(let b): return .bool(b)
            default: return try? Value(json: json)
            }
        }
        switch column {
        case .varchar, .text, .decimal:
            switch json {
            case .string(let s): return .string(s)
            case .int(let i): return .string(String(i))
            case .double(let d): return .string(doubleText(d))
            default: throw bad()
            }
        case .integer, .long:
            guard let n = integer(json) else { throw bad() }
            return .int(n)
        case .bool:
            if let b = json.boolValue { return .bool(b) }
            if let s = json.stringValue?.lowercased() {
                if s == "true" { return .bool(true) }
                if s == "false" { return .bool(false) }
            }
            guard let d = json.doubleValue ?? json.stringValue.flatMap({ Double($0) }) else { throw bad() }
            return .bool(d != 0)
        case .dateTime:
            guard let ms = integer(json) else {
                if let s = json.stringValue, let d = ISO8601.parse(s) { return .date(d) }
                throw bad()
            }
            return .date(Date(timeIntervalSince1970: Double(ms) / 1000))
        case .double:
            guard let d = json.doubleValue ?? json.stringValue.flatMap({ Double(AppPotText.trimmingWhitespace($0)) })
            else { throw bad() }
            return .double(d)
        case .json:
            guard let s = json.stringValue else { throw bad() }
            do { return try Value(json: try JSON.parse(s), path: field) } catch { throw bad() }
        }
    }

    /// An integer from `42`, `42.0`, `"42"` or `"42.0"`.
    public static func integer(_ json: JSON) -> Int64? {
        if let i = json.intValue { return i }
        guard let s = json.stringValue.map(AppPotText.trimmingWhitespace) else { return nil }
        if let i = Int64(s) { return i }
        if let d = Double(s), d.rounded() == d, abs(d) < 9.2e18 { return Int64(d) }
        return nil
    }
}

extension Value {
    /// An integer for `int` and whole `double`s (what an integer column accepts).
    fileprivate var intValueForColumn: Int64? {
        switch self {
        case .int, .double: intValue
        default: nil
        }
    }
}

/// Rows of the data API (reference A7) to and from core ``Record``s.
public enum AppPotRowCodec {
    /// Server columns that never become record fields. `createTime`/`updateTime` are the client's own times and
    /// `serverRecordStatus` is server-internal; the record's metadata comes from `objectId`,
    /// `serverCreateTime`, `serverUpdateTime`, `scopeType`, `createUserId` and `groupIds`.
    public static let metadataColumns = AppPotClassSchema.systemColumns

    /// A row for `addData`/`updateData`: the fields converted by the schema, then `scopeType`, `objectId` (when
    /// known), `createTime`/`updateTime` (epoch ms, the client's clock) and `serverUpdateTime` (the version
    /// expected, for the optimistic lock). Reserved and invalid field names are ``MBaaSError/Kind/invalidRequest``.
    public static func encodeRow(
        fields: [String: Value], schema: AppPotClassSchema?, scope: AppPotScope, objectId: String?,
        createTime: Date?, updateTime: Date?, serverUpdateTime: String?, generation: AppPotGeneration = .v2
    ) throws(MBaaSError) -> JSONObject {
        var row = JSONObject()
        if let objectId { row["objectId"] = .string(objectId) }
        for key in fields.keys.sorted() {
            try checkFieldName(key)
            row[key] = try AppPotValueCodec.wire(fields[key]!, column: schema?.columns[key], field: key, generation: generation)
        }
        row["scopeType"] = .int(Int64(scope.rawValue))
        if let createTime { row["createTime"] = .int(ISO8601.millis(createTime)) }
        if let updateTime { row["updateTime"] = .int(ISO8601.millis(updateTime)) }
        if let serverUpdateTime { row["serverUpdateTime"] = .string(serverUpdateTime) }
        return row
    }

    /// Throws ``MBaaSError/Kind/invalidRequest`` for a field name that is reserved (by the core or by AppPot) or
    /// not a valid AppPot column name.
    public static func checkFieldName(_ key: String) throws(MBaaSError) {
        if Record.reservedFieldNames.contains(key) {
            throw MBaaSError(.invalidRequest, "field '\(key)' is reserved for record metadata")
        }
        if metadataColumns.contains(key) {
            throw MBaaSError(.invalidRequest, "field '\(key)' is an AppPot system column")
        }
        try AppPotIdentifier.check(key, what: "field name")
    }

    /// A record from a row as the server answers it (values as strings), converted by the schema. `null` columns
    /// are left out of `fields`. `version` is `serverUpdateTime` verbatim (an opaque token); `createdAt` and
    /// `updatedAt` are the server times; `acl` is the scope's meaning (see ``AppPotScope/acl(createUserId:groupIds:)``).
    public static func decodeRecord(_ row: JSONObject, className: String, schema: AppPotClassSchema?) throws(MBaaSError) -> Record {
        var record = Record(className: className)
        record.id = AppPotGroupRole.idString(row["objectId"])
        if let s = row["serverCreateTime"]?.stringValue { record.createdAt = ISO8601.parse(s) }
        if let s = row["serverUpdateTime"]?.stringValue {
            record.updatedAt = ISO8601.parse(s)
            record.version = s
        }
        if let scope = AppPotScope(wire: row["scopeType"]) {
            record.acl = scope.acl(createUserId: AppPotGroupRole.idString(row["createUserId"]),
                                   groupIds: AppPotScope.groupIds(fromWire: row["groupIds"]))
        }
        for (key, wire) in row where !metadataColumns.contains(key) {
            if let v = try AppPotValueCodec.value(fromWire: wire, column: schema?.columns[key], field: key) {
                record.fields[key] = v
            }
        }
        return record
    }

    /// A row as the server answers it: every value a string (numbers and booleans printed), `null` kept.
    public static func stringly(_ row: JSONObject) -> JSONObject {
        var out = JSONObject()
        for (k, v) in row {
            switch v {
            case .null, .string: out[k] = v
            case .int(let i): out[k] = .string(String(i))
            case .double(let d): out[k] = .string(AppPotValueCodec.doubleText(d))
            case .bool(let b): out[k] = .string(b ? "1" : "0")
            default: out[k] = .string(v.printed())
            }
        }
        return out
    }
}

/// Text helpers for values read off the wire.
enum AppPotText {
    /// `s.trimmingCharacters(in: .whitespaces)`, without Foundation's work when the text neither starts nor ends
    /// with a space (almost every number and id the server sends): the result is the same either way.
    static func trimmingWhitespace(_ s: String) -> String {
        guard let first = s.utf8.first, let last = s.utf8.last else { return s }
        func plain(_ b: UInt8) -> Bool { b > 0x20 && b < 0x7F }
        if plain(first) && plain(last) { return s }
        return s.trimmingCharacters(in: .whitespaces)
    }
}
