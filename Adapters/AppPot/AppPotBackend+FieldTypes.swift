import Foundation
public import MBaaSCore

/// Classes' column types by name (``MBaaSCore/FieldTypeDeclaring``): the server never tells them, so a client
/// that runs again (the `mbaas` CLI) keeps the types of the classes it defined, and the URL option
/// `schemas=FILE` declares the others.
extension AppPotBackend: FieldTypeDeclaring {
    /// The app on its server: `{serverBase}{apiPath}` (no key, no secret, no user).
    public var fieldTypesScope: String { configuration.serverBase + configuration.apiPath }

    /// The classes this client defined (``defineClass(_:columns:resetDatabase:)``, or a first write into a class
    /// it did not know), with their columns named as ``AppPotFieldTypes`` names them. A schema derived for a first
    /// write that failed is forgotten, and is not here.
    public var definedFieldTypes: [String: [String: String]] {
        let s = state.value
        var types: [String: [String: String]] = [:]
        for name in s.definedClasses { if let schema = s.schemas[name] { types[name] = AppPotFieldTypes.names(of: schema) } }
        return types
    }

    /// Registers the classes (as ``registerClass(_:)`` does) that this client does not know yet; the names are
    /// ``AppPotFieldTypes``'. Sends nothing. A bad class, field or type name is `invalidRequest` naming it, and
    /// nothing is registered.
    public func declareFieldTypes(_ types: [String: [String: String]]) throws(MBaaSError) {
        let schemas = try AppPotFieldTypes.schemas(types)
        state.withLock { s in
            for schema in schemas where s.schemas[schema.name] == nil { s.schemas[schema.name] = schema }
        }
    }

    /// Declares the classes of the configuration's `schemas=FILE` (``AppPotConfiguration/schemasFile``), if any.
    func declareSchemasFile() throws(MBaaSError) {
        guard let file = configuration.schemasFile else { return }
        try declareFieldTypes(AppPotFieldTypes.read(file: file, what: "AppPot URL option schemas"))
    }
}

/// The names of AppPot column types as ``MBaaSCore/FieldTypeDeclaring`` and `schemas=FILE` use them: the core's
/// type names (``MBaaSCore/Value/typeName``) for the column each is stored in.
///
/// | name | column (``AppPotColumnType``) |
/// |---|---|
/// | `string` | `varchar(255)` |
/// | `string(N)` | `varchar(N)`, N from 1 to 16383 (a `text` column on v3 and later when N > 255) |
/// | `int` | `long` |
/// | `double` | `double` |
/// | `bool` | `bool` |
/// | `Date` | `dateTime` |
/// | `array`, `object`, `Pointer`, `File`, `GeoPoint`, `Bytes`, `json` | `json(4000)`: the value's neutral JSON text (one kind of column for all of them) |
/// | `json(N)` | `json(N)` |
/// | `decimal` | `decimal` (v3 and later; exact decimal text) |
///
/// A file is one JSON object, class → field → name: `{"Memo":{"title":"string","n":"int","done":"bool"}}`.
/// The system columns (`objectId`, `createTime`...) are not listed. The names written for a known class
/// (``names(of:)``) are read back as the same columns, except that `integer` becomes `long` (`int`) and `text`
/// `varchar(16383)` (the same limit).
public enum AppPotFieldTypes {
    /// The names ``column(named:)`` accepts, for error messages.
    public static let accepted = "string, string(N), int, double, bool, Date, array, object, Pointer, File, GeoPoint, Bytes, json, json(N), decimal"

    /// The longest `string(N)`: what a `text` column holds.
    public static let maximumLength = 16383

    /// The column a type name stands for; `nil` for a name not in the table.
    public static func column(named name: String) -> AppPotColumnType? {
        switch name {
        case "string": return .varchar(AppPotColumnType.defaultStringLength)
        case "int": return .long
        case "double": return .double
        case "bool": return .bool
        case "Date": return .dateTime
        case "array", "object", "Pointer", "File", "GeoPoint", "Bytes", "json": return .json(AppPotColumnType.longStringLength)
        case "decimal": return .decimal
        default:
            let sized: [(String, (Int) -> AppPotColumnType)] = [("string(", { .varchar($0) }), ("json(", { .json($0) })]
            for (prefix, make) in sized where name.hasPrefix(prefix) && name.hasSuffix(")") {
                let digits = name.dropFirst(prefix.count).dropLast()
                guard !digits.isEmpty, digits.allSatisfy({ ("0"..."9").contains($0) }), let n = Int(digits), n >= 1, n <= maximumLength else { return nil }
                return make(n)
            }
            return nil
        }
    }

    /// The name of a column type (see the table).
    public static func name(of column: AppPotColumnType) -> String {
        switch column {
        case .varchar(let n): n == AppPotColumnType.defaultStringLength ? "string" : "string(\(n))"
        case .text: "string(\(maximumLength))"
        case .integer, .long: "int"
        case .double: "double"
        case .bool: "bool"
        case .dateTime: "Date"
        case .json(let n): n == AppPotColumnType.longStringLength ? "json" : "json(\(n))"
        case .decimal: "decimal"
        }
    }

    /// A class's columns by name.
    public static func names(of schema: AppPotClassSchema) -> [String: String] { schema.columns.mapValues(name(of:)) }

    /// The schemas of classes given by name (class → field → type name), sorted by class name. A class or field
    /// name AppPot does not take (or a system column) and a type name not in the table are `invalidRequest`
    /// naming them.
    public static func schemas(_ types: [String: [String: String]]) throws(MBaaSError) -> [AppPotClassSchema] {
        var schemas: [AppPotClassSchema] = []
        for className in types.keys.sorted() {
            try AppPotIdentifier.check(className, what: "class name")
            var columns: [String: AppPotColumnType] = [:]
            for (field, type) in types[className]!.sorted(by: { $0.key < $1.key }) {
                do throws(MBaaSError) { try AppPotRowCodec.checkFieldName(field) } catch {
                    throw MBaaSError(.invalidRequest, "\(className).\(field): \(error.message)")
                }
                guard let column = column(named: type) else {
                    throw MBaaSError(.invalidRequest, "\(className).\(field) has the type '\(type)', which is none of \(accepted)")
                }
                columns[field] = column
            }
            schemas.append(AppPotClassSchema(name: className, columns: columns))
        }
        return schemas
    }

    /// Reads a file of type names (`{"Class":{"field":"type"}}`); `what` names where the file was given, for errors.
    /// An unreadable file is `localIO`; one that is not of this shape is `invalidRequest` naming the file and
    /// the entry. The names are checked by ``schemas(_:)``.
    public static func read(file path: String, what: String) throws(MBaaSError) -> [String: [String: String]] {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw MBaaSError(.localIO, "\(what): cannot read \(path): \(MBaaSError.describe(error))")
        }
        let json: JSON
        do { json = try JSON.parse(data) } catch {
            throw MBaaSError(.invalidRequest, "\(what): \(path) is not valid JSON (\(error))")
        }
        return try types(json, in: "\(what): \(path)")
    }

    /// The class → field → type name map of a JSON document; `context` starts the error messages (the core's
    /// ``MBaaSCore/fieldTypes(fromJSON:context:)``, with the type names AppPot takes named in its errors).
    public static func types(_ json: JSON, in context: String) throws(MBaaSError) -> [String: [String: String]] {
        do { return try fieldTypes(fromJSON: json, context: context) } catch {
            guard error.refusedField != nil else { throw error }
            var named = error
            named.message += " (\(accepted))"
            throw named
        }
    }
}
