import Foundation
public import MBaaSCore

/// The type of a column of an AppPot class, as the adapter stores and reads it.
///
/// The server knows three column types, `varchar`, `integer` and `long` (reference A6), and answers every value
/// as a string (A7). The other cases are the logical types the AppPot SDKs layer on top, with the same wire
/// encodings the JS SDK uses, so data stays readable by apps that still run the AppPot SDK:
///
/// | case | server column | written as | read from |
/// |---|---|---|---|
/// | `varchar(n)` | `varchar` (fieldLength n) | string | string |
/// | `integer`, `long` | `integer`, `long` | number | `"42"` |
/// | `bool` | `varchar` (1) | `1` / `0` | `"1"`, `"0"`, `"1.0"`, `"true"` |
/// | `dateTime` | `long` | epoch milliseconds | `"1390085336544"` |
/// | `double` | `varchar` (255) | decimal string `"5.5"` | `"5.5"` |
/// | `json(n)` | `varchar` (n) | the neutral JSON text of the value | the same text |
///
/// `json` is MBaaSKit's own: arrays, objects, pointers, geo points, bytes and file references are kept as their
/// neutral JSON text (see ``MBaaSCore/Value``), which round-trips losslessly but cannot be queried except by
/// equality of the whole text.
public enum AppPotColumnType: Sendable, Hashable, CustomStringConvertible {
    case varchar(Int)
    case integer
    case long
    case bool
    case dateTime
    case double
    case json(Int)
    /// A server `text` column (v3 and later): a string without a declared length.
    case text
    /// A server `decimal` column (v3 and later): read and written as its exact decimal text.
    case decimal

    /// Length of a string column made for a dynamic field.
    public static let defaultStringLength = 255
    /// Length of a string column made for a long string or a `json` field.
    public static let longStringLength = 4000

    /// `varchar`, `integer` or `long`: the type a v2 server is told.
    public var wireType: String { wireType(for: .v2) }

    /// The type the server of a generation is told. v2 knows `varchar`, `integer` and `long`; v3 and later also
    /// `datetime`, `double`, `text` and `decimal` (JS v3 `database.ts`), and there a varchar longer than
    /// ``defaultStringLength`` and a `json` column become `text`: MySQL counts a `text` column as 12 bytes of
    /// its 65,535-byte row limit instead of up to 4 bytes per character.
    public func wireType(for generation: AppPotGeneration) -> String {
        if generation.hasTypedColumns {
            switch self {
            case .varchar(let n) where n > AppPotColumnType.defaultStringLength: return "text"
            case .json, .text: return "text"
            case .dateTime: return "datetime"
            case .double: return "double"
            case .decimal: return "decimal"
            default: break
            }
        }
        switch self {
        case .varchar, .bool, .double, .json, .text, .decimal: return "varchar"
        case .integer: return "integer"
        case .long, .dateTime: return "long"
        }
    }

    /// The `fieldLength` of a varchar column (v2 wire types).
    public var fieldLength: Int? { fieldLength(for: .v2) }

    /// The `fieldLength` sent to a server of a generation (`nil` for types without one).
    public func fieldLength(for generation: AppPotGeneration) -> Int? {
        guard wireType(for: generation) == "varchar" else { return nil }
        switch self {
        case .varchar(let n), .json(let n): return n
        case .bool: return 1
        case .double, .decimal: return 255
        case .text: return AppPotColumnType.longStringLength
        case .integer, .long, .dateTime: return nil
        }
    }

    /// The most characters a value of this column may have before it is written (`nil`: no limit the client
    /// checks). Checked so a too-long value is a clear ``MBaaSError/Kind/invalidRequest`` rather than MySQL's
    /// error (strict mode) or a silent truncation (non-strict mode).
    public var characterLimit: Int? {
        switch self {
        case .varchar(let n), .json(let n): n
        case .text: 65_535 / 4
        default: nil
        }
    }

    /// Bytes this column takes of MySQL's 65,535-byte row limit on a server of a generation, assuming the
    /// `utf8` character set (3 bytes a character, plus 2 length bytes). Inferred from MySQL's documented row
    /// limit; the server's DDL mapping is not published.
    public func rowBytes(for generation: AppPotGeneration) -> Int {
        switch wireType(for: generation) {
        case "varchar": (fieldLength(for: generation) ?? AppPotColumnType.defaultStringLength) * 3 + 2
        case "integer", "float": 4
        case "long", "double", "datetime": 8
        case "decimal": 16
        default: 12  // text
        }
    }

    public var description: String {
        switch self {
        case .varchar(let n): "varchar(\(n))"
        case .integer: "integer"
        case .long: "long"
        case .bool: "bool"
        case .dateTime: "dateTime"
        case .double: "double"
        case .json(let n): "json(\(n))"
        case .text: "text"
        case .decimal: "decimal"
        }
    }

    /// The column type a dynamic value gets when its class is created from a first record: strings `varchar(255)`
    /// (`varchar(4000)` when longer), integers `long`, doubles `double`, booleans `bool`, dates `dateTime`, `null`
    /// `varchar(255)`, everything else `json(4000)`.
    public static func derived(from value: Value) -> AppPotColumnType {
        derived(from: value, generation: .v2)
    }

    /// The derived type for a generation: the same logical types; on v2 a string longer than 255 characters gets
    /// `varchar(4000)`, on v3 and later `text` (no row-size cost).
    public static func derived(from value: Value, generation: AppPotGeneration) -> AppPotColumnType {
        switch value {
        case .string(let s):
            s.count > defaultStringLength ? (generation.hasTypedColumns ? .text : .varchar(longStringLength)) : .varchar(defaultStringLength)
        case .int: .long
        case .double: .double
        case .bool: .bool
        case .date: .dateTime
        case .null: .varchar(defaultStringLength)
        case .bytes, .array, .object, .pointer, .file, .geoPoint: .json(longStringLength)
        }
    }

    /// The type of a column as the server describes it (`type`, `fieldLength`): the v2 wire types and the v3
    /// ones (`datetime` is epoch ms, `double` and `float` are doubles, `text` a string, `decimal` exact text).
    public init(wireType: String, fieldLength: Int?) throws(MBaaSError) {
        switch wireType.lowercased() {
        case "varchar": self = .varchar(fieldLength ?? AppPotColumnType.defaultStringLength)
        case "integer", "int": self = .integer
        case "long", "bigint": self = .long
        case "datetime": self = .dateTime
        case "double", "float": self = .double
        case "text": self = .text
        case "decimal": self = .decimal
        default:
            throw MBaaSError(.invalidRequest, "unknown AppPot column type '\(wireType)' (varchar, integer, long, datetime, double, text, float, decimal)")
        }
    }
}

/// A class (table) of an AppPot app: its name and user columns with their logical types.
///
/// Every table also has the default columns `objectId` (the primary key), `scopeType`, `createTime` and
/// `updateTime`, and the server adds `serverCreateTime`, `serverUpdateTime`, `createUserId`, `groupIds` and
/// `serverRecordStatus` (reference A6, A7). None of these may be used as a field name.
public struct AppPotClassSchema: Sendable, Hashable {
    public var name: String
    public var columns: [String: AppPotColumnType]

    public init(name: String, columns: [String: AppPotColumnType]) {
        self.name = name
        self.columns = columns
    }

    /// Columns every table has, in the order the JS SDK declares them.
    public static let defaultColumns: [(String, AppPotColumnType)] = [
        ("objectId", .varchar(AppPotColumnType.defaultStringLength)), ("scopeType", .varchar(1)),
        ("createTime", .long), ("updateTime", .long),
    ]

    /// Names reserved by AppPot: the default columns and the server's columns.
    public static let systemColumns: Set<String> = [
        "objectId", "scopeType", "createTime", "updateTime", "serverCreateTime", "serverUpdateTime", "createUserId",
        "groupIds", "serverRecordStatus",
    ]

    /// The table definition of `POST schemas`: `{"primary_key":"objectId","name":..,"columns":[...]}`, default
    /// columns first, then the user columns sorted by name.
    public var tableJSON: JSON { tableJSON(for: .v2) }

    /// The table definition for a server of a generation (see ``AppPotColumnType/wireType(for:)``).
    public func tableJSON(for generation: AppPotGeneration) -> JSON {
        var cols: [JSON] = AppPotClassSchema.defaultColumns.map {
            AppPotClassSchema.columnJSON($0.0, $0.1, length: false, generation: generation)
        }
        for name in columns.keys.sorted() {
            cols.append(AppPotClassSchema.columnJSON(name, columns[name]!, length: true, generation: generation))
        }
        return .object(["primary_key": "objectId", "name": .string(name), "columns": .array(cols)])
    }

    private static func columnJSON(_ name: String, _ type: AppPotColumnType, length: Bool, generation: AppPotGeneration) -> JSON {
        var o: JSONObject = ["colName": .string(name), "type": .string(type.wireType(for: generation))]
        if length, let n = type.fieldLength(for: generation) { o["fieldLength"] = .int(Int64(n)) }
        return .object(o)
    }

    /// Bytes the server columns take of a row (inferred: `objectId`, `scopeType`, `serverCreateTime`,
    /// `serverUpdateTime`, `createUserId` and `serverRecordStatus` as varchar(255), `createTime` and `updateTime`
    /// long, `groupIds` text; `Troubleshoot.md`'s `desc` shows objectId varchar(255), serverUpdateTime
    /// varchar(255) and groupIds text).
    public static let systemRowBytes = 6 * (255 * 3 + 2) + 2 * 8 + 12

    /// MySQL's row size limit.
    public static let mysqlRowLimit = 65_535

    /// Throws ``MBaaSError/Kind/invalidRequest`` when the table would exceed MySQL's 65,535-byte row limit on a
    /// server of a generation (the server would refuse it with errCode 103), or uses a type the generation lacks.
    public func checkFits(_ generation: AppPotGeneration) throws(MBaaSError) {
        if !generation.hasTypedColumns {
            if let bad = columns.keys.sorted().first(where: { [.text, .decimal].contains(columns[$0]!) }) {
                throw MBaaSError(.invalidRequest, "AppPot class \(name): column '\(bad)' is \(columns[bad]!), which a v2 server does not have (open with generation=v3 or later, or use varchar)")
            }
        }
        let bytes = AppPotClassSchema.systemRowBytes + columns.values.reduce(0) { $0 + $1.rowBytes(for: generation) }
        guard bytes <= AppPotClassSchema.mysqlRowLimit else {
            let wide = columns.filter { $0.value.rowBytes(for: generation) > 1000 }.keys.sorted()
            throw MBaaSError(.invalidRequest, "AppPot class \(name) needs about \(bytes) bytes a row; MySQL (the AppPot server's database) allows \(AppPotClassSchema.mysqlRowLimit). Shorten the wide columns (\(wide.joined(separator: ", ")))\(generation.hasTypedColumns ? "" : " or open with generation=v3 or later, where long strings are text columns")")
        }
    }

    /// Reads a table definition. Only the wire types are known (a `bool` column reads as `varchar(1)`); the
    /// default columns are left out of ``columns``.
    public init(tableJSON json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue, let name = o["name"]?.stringValue else {
            throw MBaaSError(.invalidRequest, "AppPot table definition needs a 'name'")
        }
        var columns: [String: AppPotColumnType] = [:]
        for c in o["columns"]?.arrayValue ?? [] {
            guard let col = c["colName"]?.stringValue, let type = c["type"]?.stringValue else {
                throw MBaaSError(.invalidRequest, "AppPot table \(name): a column needs 'colName' and 'type'")
            }
            if AppPotClassSchema.systemColumns.contains(col) { continue }
            columns[col] = try AppPotColumnType(wireType: type, fieldLength: c["fieldLength"]?.intValue.map { Int($0) })
        }
        self.init(name: name, columns: columns)
    }

    /// The columns a first record's fields imply (see ``AppPotColumnType/derived(from:)``).
    public static func derive(name: String, from fields: [String: Value], generation: AppPotGeneration = .v2) -> AppPotClassSchema {
        AppPotClassSchema(name: name, columns: fields.mapValues { AppPotColumnType.derived(from: $0, generation: generation) })
    }
}

/// The body of `POST schemas` (reference A6).
public struct AppPotSchemaRequest: Sendable, Hashable {
    public var appId: String
    public var appVersion: String
    public var companyId: String
    /// `true` drops the app's tables and creates them again (all data is lost).
    public var isResetDatabase: Bool
    public var tables: [AppPotClassSchema]
    public var generation: AppPotGeneration = .v2

    public init(appId: String, appVersion: String, companyId: String, isResetDatabase: Bool, tables: [AppPotClassSchema],
                generation: AppPotGeneration = .v2) {
        self.generation = generation
        self.appId = appId
        self.appVersion = appVersion
        self.companyId = companyId
        self.isResetDatabase = isResetDatabase
        self.tables = tables
    }

    public var json: JSON {
        .object([
            "appId": .string(appId), "appVersion": .string(appVersion),
            "companyId": AppPotLoginRequest.companyJSON(companyId), "isResetDatabase": .bool(isResetDatabase),
            "tables": .array(tables.map { $0.tableJSON(for: generation) }),
        ])
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue else { throw MBaaSError(.invalidRequest, "schemas body must be an object") }
        var tables: [AppPotClassSchema] = []
        for t in o["tables"]?.arrayValue ?? [] { tables.append(try AppPotClassSchema(tableJSON: t)) }
        self.init(
            appId: o["appId"]?.stringValue ?? "", appVersion: o["appVersion"]?.stringValue ?? "",
            companyId: o["companyId"].flatMap { $0.stringValue ?? $0.intValue.map { String($0) } } ?? "",
            isResetDatabase: o["isResetDatabase"]?.boolValue ?? false, tables: tables)
    }
}

/// Class and column names the adapter accepts: `[A-Za-z_][A-Za-z0-9_]*`. They go into SQL-like query expressions
/// (`#Memo.title`), so nothing else may pass.
public enum AppPotIdentifier {
    public static func isValid(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, name.unicodeScalars.count <= 64 else { return false }
        func letter(_ c: Unicode.Scalar) -> Bool { ("a"..."z").contains(c) || ("A"..."Z").contains(c) || c == "_" }
        return letter(first) && name.unicodeScalars.allSatisfy { letter($0) || ("0"..."9").contains($0) }
    }

    public static func check(_ name: String, what: String) throws(MBaaSError) {
        guard isValid(name) else {
            throw MBaaSError(.invalidRequest, "AppPot \(what) '\(name)' is not valid: use letters, digits and _, starting with a letter or _ (at most 64)")
        }
    }
}
