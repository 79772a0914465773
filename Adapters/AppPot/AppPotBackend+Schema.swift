import Foundation
public import MBaaSCore

/// Classes (tables) of the app: `POST schemas` (reference A6).
extension AppPotBackend {
    /// Creates a class on the server with explicit column types (for dynamic records).
    ///
    /// `resetDatabase: true` sends `isResetDatabase:true`, which drops the app's tables and creates the given
    /// ones again: every row of the app is lost. Use ``defineClasses(_:resetDatabase:)`` to reset and define
    /// several classes at once. Without it, a class that already exists on the server keeps its table and rows.
    public func defineClass(_ name: String, columns: [String: AppPotColumnType], resetDatabase: Bool = false) async throws {
        try await defineClasses([AppPotClassSchema(name: name, columns: columns)], resetDatabase: resetDatabase)
    }

    /// Creates a class from a typed model's properties (see ``AppPotModelColumns``).
    public func defineClass<M: Model>(_ type: M.Type, resetDatabase: Bool = false) async throws {
        try await defineClass(M.className, columns: try AppPotModelColumns.columns(of: type), resetDatabase: resetDatabase)
    }

    /// Creates several classes in one `POST schemas`.
    public func defineClasses(_ schemas: [AppPotClassSchema], resetDatabase: Bool = false) async throws {
        guard !schemas.isEmpty else { throw MBaaSError(.invalidRequest, "no classes to define") }
        if state.value.detectPending { _ = try await anonymousToken() }  // generation=auto: find out first
        let generation = generation
        for schema in schemas {
            try AppPotIdentifier.check(schema.name, what: "class name")
            for column in schema.columns.keys { try AppPotRowCodec.checkFieldName(column) }
            try schema.checkFits(generation)
        }
        let body = AppPotSchemaRequest(appId: configuration.appId, appVersion: configuration.appVersion,
                                       companyId: configuration.companyId, isResetDatabase: resetDatabase,
                                       tables: schemas, generation: generation)
        try await call(.post, AppPotRoute.schemas.segments, body: .json(body.json), token: .userOrAnonymous)
        state.withLock { s in
            if resetDatabase { s.schemas = [:]; s.definedClasses = [] }
            for schema in schemas {
                s.schemas[schema.name] = schema
                s.definedClasses.insert(schema.name)
            }
        }
    }

    /// Declares a class that already exists on the server, so its values are converted with these column types.
    /// No request is sent.
    public func registerClass(_ schema: AppPotClassSchema) {
        state.withLock { $0.schemas[schema.name] = schema }
    }

    /// The class's columns as this client knows them.
    public func schema(for className: String) -> AppPotClassSchema? { state.value.schemas[className] }

    /// The schema to read rows of a class with: the known one; `nil` (strings as answered) with
    /// `untypedReads=true`; else ``MBaaSError/Kind/invalidRequest`` naming the columns the server answered.
    func readSchema(_ className: String, rows: [JSONObject]) throws -> AppPotClassSchema? {
        if let known = schema(for: className) { return known }
        guard !rows.isEmpty, !configuration.untypedReads else { return nil }
        let columns = Set(rows.flatMap(\.keys)).subtracting(AppPotClassSchema.systemColumns).sorted()
        throw MBaaSError(.invalidRequest, "the column types of the AppPot class \(className) (columns \(columns.joined(separator: ", "))) are unknown to this client and the server answers every value as a string: declare them with the URL option schemas=FILE (a JSON file {\"\(className)\":{\"FIELD\":\"string|int|double|bool|Date|…\"}}; in Swift registerClass(_:)), or open with untypedReads=true to read the strings")
    }

    /// The schema of a class for a write: the known one (checking that every non-null field is a column), or one
    /// derived from the fields and created on the server (`derived` true). A class that already holds rows on
    /// the server is refused instead: its column types cannot be read, and deriving them from this record could
    /// be wrong. Writes that start at once on a class not known yet define it once: the others wait for that
    /// definition and are checked against it (their fields must be its columns).
    func ensureSchema(_ className: String, fields: [String: Value]) async throws -> (schema: AppPotClassSchema, derived: Bool) {
        if let known = schema(for: className) {
            try checkColumns(fields, of: known)
            return (known, false)
        }
        // Decided under the lock: a definition that ended between the look above and this one left its schema.
        let (definition, mine, known) = state.withLock { s -> (Task<AppPotClassSchema, any Error>?, Bool, AppPotClassSchema?) in
            if let known = s.schemas[className] { return (nil, false, known) }
            if let running = s.definingClasses[className] { return (running, false, nil) }
            let task = Task { try await self.defineFromFirstWrite(className, fields: fields) }
            s.definingClasses[className] = task
            return (task, true, nil)
        }
        if let known {
            try checkColumns(fields, of: known)
            return (known, false)
        }
        guard let definition else { throw MBaaSError(.internal, "AppPot class \(className): no schema and no definition") }
        let result: Result<AppPotClassSchema, any Error>
        do { result = .success(try await definition.value) } catch { result = .failure(error) }
        if mine { state.withLock { if $0.definingClasses[className] == definition { $0.definingClasses[className] = nil } } }
        let schema = try result.get()
        if !mine { try checkColumns(fields, of: schema) }
        return (schema, mine)
    }

    /// Defines a class from the fields of its first write (see ``ensureSchema(_:fields:)``).
    private func defineFromFirstWrite(_ className: String, fields: [String: Value]) async throws -> AppPotClassSchema {
        let probe = AppPotQueryBody(phyName: className, limit: 1, offset: generation.rangeOffset(skip: 0))
        if let json = try await postQuery(AppPotRoute.query(className: className).segments, body: probe),
           let row = try AppPotDataResponse.rows(json, keys: [className])?.first {
            let columns = row.keys.filter { !AppPotClassSchema.systemColumns.contains($0) }.sorted()
            throw MBaaSError(.invalidRequest, "the AppPot class \(className) already exists on the server (columns \(columns.joined(separator: ", "))) and AppPot does not tell its column types: declare them before writing, so values are not written with guessed types (the URL option schemas=FILE, a JSON file {\"\(className)\":{\"FIELD\":\"string|int|double|bool|Date|…\"}}; in Swift registerClass(_:))")
        }
        let derived = try await derivedSchema(className, fields: fields)
        logger.debug("apppot defining class from its first record", metadata: ["class": "\(className)"])
        try await defineClasses([derived])
        return derived
    }

    /// The table a first write with these fields defines: their columns (not the system ones), typed for the server's
    /// generation (detected first with `generation=auto`).
    private func derivedSchema(_ className: String, fields: [String: Value]) async throws -> AppPotClassSchema {
        if state.value.detectPending { _ = try await anonymousToken() }
        var derived = AppPotClassSchema.derive(name: className, from: fields, generation: generation)
        derived.columns = derived.columns.filter { !AppPotClassSchema.systemColumns.contains($0.key) }
        return derived
    }

    /// What the class's columns allow, checked without writing (``MBaaSCore/ObjectStore/preflight(className:records:)``):
    /// with a schema this client knows, that every field of the records is one of its columns; else that the table
    /// ``create(_:)`` would define from these records' fields (as a batch of them would) has valid names and fits the
    /// server generation (MySQL's row limit, the generation's types: ``AppPotClassSchema/checkFits(_:)``). Sends
    /// nothing but, with `generation=auto`, the anonymous-token request that tells the generation: a class that
    /// already exists on the server without being known here is found only by the write.
    public func preflight(className: String, records: [Record]) async throws {
        guard !records.isEmpty else { return }
        if let known = schema(for: className) {
            for r in records { try checkColumns(r.fields, of: known) }
            return
        }
        var merged: [String: Value] = [:]
        for r in records { for (k, v) in r.fields where merged[k] == nil || merged[k]!.isNull { merged[k] = v } }
        try AppPotIdentifier.check(className, what: "class name")
        let derived = try await derivedSchema(className, fields: merged)   // the limits are the generation's
        for column in derived.columns.keys { try AppPotRowCodec.checkFieldName(column) }
        try derived.checkFits(generation)
    }

    /// Forgets a schema derived from a first record whose write failed (it may not be the table's), unless a write
    /// with it went through since (a concurrent first write that waited for the definition): rows then hold it.
    func forgetDerived(_ schema: AppPotClassSchema) {
        state.withLock { if $0.schemas[schema.name] == schema, !$0.confirmedClasses.contains(schema.name) { $0.schemas[schema.name] = nil } }
    }

    /// Notes that rows were written with the class's schema: it is the table's, and is never forgotten.
    func confirmSchema(_ className: String) {
        state.withLock { _ = $0.confirmedClasses.insert(className) }
    }

    func checkColumns(_ fields: [String: Value], of schema: AppPotClassSchema) throws {
        let unknown = fields.filter { !$0.value.isNull && schema.columns[$0.key] == nil }.keys.sorted()
        guard unknown.isEmpty else {
            throw MBaaSError(.invalidRequest,
                             "\(unknown.map { "'\($0)'" }.joined(separator: ", ")) \(unknown.count == 1 ? "is not a column" : "are not columns") of the AppPot class \(schema.name) (columns: \(schema.columns.keys.sorted().joined(separator: ", "))); AppPot tables have fixed columns: define them with defineClass")
        }
    }
}

/// Column types of a typed ``Model``, read from its `Decodable` conformance.
///
/// The model is decoded once from a probing decoder that records the type asked for each key: `String`
/// `varchar(255)`, `Bool` `bool`, `Int`/`Int64`/`UInt32`... `long` (`Int32`, `Int16`, `Int8`, `UInt16`, `UInt8`
/// `integer`), `Double`/`Float` `double`, `Date` `dateTime`, `URL` `varchar(4000)`; `Data`, arrays, dictionaries,
/// nested types, ``Pointer``, ``GeoPoint``, ``FileReference`` and ``Value`` `json(4000)`. The metadata properties
/// (`id`, `createdAt`, `updatedAt`, `version`, `acl`) are not columns. A model whose decoding rejects placeholder
/// values (an enum with raw values, a validating `init(from:)`) cannot be probed: the error says so; give its
/// columns explicitly.
public enum AppPotModelColumns {
    public static func columns<M: Model>(of type: M.Type) throws -> [String: AppPotColumnType] {
        let recorder = ColumnRecorder()
        do {
            _ = try M(from: ProbeDecoder(recorder: recorder, recording: true, codingPath: []))
        } catch {
            throw MBaaSError(.invalidRequest, "cannot derive AppPot columns from \(M.self) (\(error)); pass the columns to defineClass(_:columns:) explicitly")
        }
        var columns = recorder.columns
        for key in Record.reservedFieldNames { columns[key] = nil }
        return columns
    }

    static func columnType(for type: Any.Type) -> AppPotColumnType {
        switch type {
        case is String.Type, is Substring.Type, is Character.Type: .varchar(AppPotColumnType.defaultStringLength)
        case is Bool.Type: .bool
        case is Int32.Type, is Int16.Type, is Int8.Type, is UInt16.Type, is UInt8.Type: .integer
        case is Int.Type, is Int64.Type, is UInt.Type, is UInt32.Type, is UInt64.Type: .long
        case is Double.Type, is Float.Type, is Decimal.Type: .double
        case is Date.Type: .dateTime
        case is URL.Type: .varchar(AppPotColumnType.longStringLength)
        default: .json(AppPotColumnType.longStringLength)
        }
    }
}

private final class ColumnRecorder: @unchecked Sendable {
    var columns: [String: AppPotColumnType] = [:]
}

/// Decodes any `Decodable` from placeholder values, recording the top-level keys' types.
private struct ProbeDecoder: Decoder {
    let recorder: ColumnRecorder
    let recording: Bool
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(ProbeKeyed<Key>(recorder: recorder, recording: recording, codingPath: codingPath))
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { ProbeUnkeyed(codingPath: codingPath) }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { ProbeSingle(recorder: recorder, codingPath: codingPath) }

    /// A placeholder of a type, built without decoding where decoding placeholders would fail.
    static func placeholder<T: Decodable>(_ type: T.Type, recorder: ColumnRecorder, codingPath: [any CodingKey]) throws -> T {
        switch type {
        case is String.Type: return "" as! T
        case is Bool.Type: return false as! T
        case is Int.Type: return 0 as! T
        case is Int8.Type: return Int8(0) as! T
        case is Int16.Type: return Int16(0) as! T
        case is Int32.Type: return Int32(0) as! T
        case is Int64.Type: return Int64(0) as! T
        case is UInt.Type: return UInt(0) as! T
        case is UInt8.Type: return UInt8(0) as! T
        case is UInt16.Type: return UInt16(0) as! T
        case is UInt32.Type: return UInt32(0) as! T
        case is UInt64.Type: return UInt64(0) as! T
        case is Double.Type: return 0.0 as! T
        case is Float.Type: return Float(0) as! T
        case is Decimal.Type: return Decimal(0) as! T
        case is Date.Type: return Date(timeIntervalSince1970: 0) as! T
        case is Data.Type: return Data() as! T
        case is URL.Type: return URL(string: "about:blank")! as! T
        case is Value.Type: return Value.null as! T
        case is JSON.Type: return JSON.null as! T
        case is Pointer.Type: return Pointer(className: "", objectId: "") as! T
        case is GeoPoint.Type: return GeoPoint(latitude: 0, longitude: 0) as! T
        case is FileReference.Type: return FileReference(name: "") as! T
        case is ACL.Type: return ACL() as! T
        default: return try T(from: ProbeDecoder(recorder: recorder, recording: false, codingPath: codingPath))
        }
    }
}

private struct ProbeKeyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let recorder: ColumnRecorder
    let recording: Bool
    var codingPath: [any CodingKey]
    var allKeys: [Key] { [] }

    func contains(_ key: Key) -> Bool { true }
    func decodeNil(forKey key: Key) throws -> Bool { false }

    private func record(_ type: Any.Type, _ key: Key) {
        if recording { recorder.columns[key.stringValue] = AppPotModelColumns.columnType(for: type) }
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        record(type, key)
        return try ProbeDecoder.placeholder(type, recorder: recorder, codingPath: codingPath + [key])
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        record(type, key)
        return nil
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        if recording { recorder.columns[key.stringValue] = .json(AppPotColumnType.longStringLength) }
        return KeyedDecodingContainer(ProbeKeyed<NestedKey>(recorder: recorder, recording: false, codingPath: codingPath + [key]))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        if recording { recorder.columns[key.stringValue] = .json(AppPotColumnType.longStringLength) }
        return ProbeUnkeyed(codingPath: codingPath + [key])
    }

    func superDecoder() throws -> any Decoder { ProbeDecoder(recorder: recorder, recording: false, codingPath: codingPath) }
    func superDecoder(forKey key: Key) throws -> any Decoder {
        ProbeDecoder(recorder: recorder, recording: false, codingPath: codingPath + [key])
    }
}

/// An empty array.
private struct ProbeUnkeyed: UnkeyedDecodingContainer {
    var codingPath: [any CodingKey]
    var count: Int? { 0 }
    var isAtEnd: Bool { true }
    var currentIndex: Int { 0 }

    private func end() -> DecodingError {
        DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "probe arrays are empty"))
    }
    mutating func decodeNil() throws -> Bool { true }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { throw end() }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> { throw end() }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { throw end() }
    mutating func superDecoder() throws -> any Decoder { throw end() }
}

/// A single placeholder value.
private struct ProbeSingle: SingleValueDecodingContainer {
    let recorder: ColumnRecorder
    var codingPath: [any CodingKey]
    func decodeNil() -> Bool { false }
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try ProbeDecoder.placeholder(type, recorder: recorder, codingPath: codingPath)
    }
}
