import Foundation
import MBaaSCore

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

    /// Length of a string column made for a dynamic field.
    public static let defaultStringLength = 255
    /// Length of a string column made for a long string or a `json` field.
    public static let longStringLength = 4000

    /// `varchar`, `integer` or `long`: the type the server is told.
    public var wireType: String {
        switch self {
        case .varchar, .bool, .double, .json: "varchar"
        case .integer: "integer"
        case .long, .dateTime: "long"
        }
    }

    /// The `fieldLength` of a varchar column.
    public var fieldLength: Int? {
        switch self {
        case .varchar(let n), .json(let n): n
        case .bool: 1
        case .double: 255
        case .integer, .long, .dateTime: nil
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
        }
    }

    /// The column type a dynamic value gets when its class is created from a first record: strings `varchar(255)`
    /// (`varchar(4000)` when longer), integers `long`, doubles `double`, booleans `bool`, dates `dateTime`, `null`
    /// `varchar(255)`, everything else `json(4000)`.
    public static func derived(from value: Value) -> AppPotColumnType {
        switch value {
        case .string(let s): s.count > defaultStringLength ? .varchar(longStringLength) : .varchar(defaultStringLength)
        case .int: .long
        case .double: .double
        case .bool: .bool
        case .date: .dateTime
        case .null: .varchar(defaultStringLength)
        case .bytes, .array, .object, .pointer, .file, .geoPoint: .json(longStringLength)
        }
    }

    /// The type of a column as the server describes it (`type`, `fieldLength`): only the three wire types.
    public init(wireType: String, fieldLength: Int?) throws(MBaaSError) {
        switch wireType.lowercased() {
        case "varchar": self = .varchar(fieldLength ?? AppPotColumnType.defaultStringLength)
        case "integer", "int": self = .integer
        case "long", "bigint": self = .long
        default: throw MBaaSError(.invalidRequest, "unknown AppPot column type '\(wireType)' (varchar, integer, long)")
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
    public var tableJSON: JSON {
        var cols: [JSON] = AppPotClassSchema.defaultColumns.map { AppPotClassSchema.columnJSON($0.0, $0.1, length: false) }
        for name in columns.keys.sorted() { cols.append(AppPotClassSchema.columnJSON(name, columns[name]!, length: true)) }
        return .object(["primary_key": "objectId", "name": .string(name), "columns": .array(cols)])
    }

    private static func columnJSON(_ name: String, _ type: AppPotColumnType, length: Bool) -> JSON {
        var o: JSONObject = ["colName": .string(name), "type": .string(type.wireType)]
        if length, let n = type.fieldLength { o["fieldLength"] = .int(Int64(n)) }
        return .object(o)
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
    public static func derive(name: String, from fields: [String: Value]) -> AppPotClassSchema {
        AppPotClassSchema(name: name, columns: fields.mapValues(AppPotColumnType.derived(from:)))
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

    public init(appId: String, appVersion: String, companyId: String, isResetDatabase: Bool, tables: [AppPotClassSchema]) {
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
            "tables": .array(tables.map(\.tableJSON)),
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
