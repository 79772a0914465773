import Foundation

// A direct `Encoder`/`Decoder` pair between `Codable` types and `Value` trees, as GRDB's record encoding does for
// rows: ``Model/record()`` and ``Model/init(record:)`` use it instead of JSON text. The mapping is the one the
// neutral JSON form gives (and the one the JSON path used to give): `Date` becomes ``Value/date(_:)`` (at
// millisecond precision), `Data` ``Value/bytes(_:)``, ``Pointer``/``GeoPoint``/``FileReference`` their cases,
// integers ``Value/int(_:)``, floating point ``Value/double(_:)``, `URL` its string, keyed containers objects.

// MARK: - Encoding

/// Where an encoder writes: a value, or a keyed or unkeyed container still being filled.
final class ValueEncodingSlot {
    enum Content {
        case empty
        case value(Value)
        case object([String: ValueEncodingSlot])
        case array([ValueEncodingSlot])
    }

    var content: Content = .empty

    init() {}

    var value: Value {
        switch content {
        case .empty: return .object([:])
        case .value(let v): return v
        case .object(let members):
            var out: [String: Value] = Dictionary(minimumCapacity: members.count)
            for (k, slot) in members { out[k] = slot.value }
            return .object(out)
        case .array(let items): return .array(items.map(\.value))
        }
    }
}

struct ValueEncoder: Encoder {
    let slot: ValueEncodingSlot
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(slot: ValueEncodingSlot = ValueEncodingSlot(), codingPath: [any CodingKey] = []) {
        self.slot = slot
        self.codingPath = codingPath
    }

    /// Encodes a value into a `Value` tree.
    static func encode<T: Encodable>(_ value: T) throws -> Value {
        let encoder = ValueEncoder()
        try encoder.encodeValue(value)
        return encoder.slot.value
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .object = slot.content {} else { slot.content = .object([:]) }
        return KeyedEncodingContainer(Keyed<Key>(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array = slot.content {} else { slot.content = .array([]) }
        return Unkeyed(encoder: self)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { Single(encoder: self) }

    /// The `Value` of a leaf, or `nil` when `value` must encode itself through containers.
    static func leaf<T: Encodable>(_ value: T, codingPath: [any CodingKey]) throws -> Value? {
        switch value {
        case let v as Value: return v
        case let v as JSON:
            do { return try Value(json: v) } catch {
                throw EncodingError.invalidValue(v, .init(codingPath: codingPath, debugDescription: error.message))
            }
        case let d as Date:
            // The millisecond precision the neutral form keeps, exactly as printing and parsing it gives.
            return .date(ISO8601.parse(ISO8601.format(d)) ?? d)
        case let d as Data: return .bytes(d)
        case let p as Pointer: return .pointer(p)
        case let g as GeoPoint: return .geoPoint(g)
        case let f as FileReference: return .file(f)
        case let u as URL: return .string(u.absoluteString)
        case let d as Decimal:
            let text = "\(d)"
            if let i = Int64(text) { return .int(i) }
            return .double(Double(text) ?? NSDecimalNumber(decimal: d).doubleValue)
        default: return nil
        }
    }

    func encodeValue<T: Encodable>(_ value: T) throws {
        if let leaf = try Self.leaf(value, codingPath: codingPath) {
            slot.content = .value(leaf)
        } else {
            try value.encode(to: self)
        }
    }

    static func integer<T: BinaryInteger>(_ value: T, codingPath: [any CodingKey]) throws -> Value {
        guard let i = Int64(exactly: value) else {
            throw EncodingError.invalidValue(value, .init(codingPath: codingPath, debugDescription: "\(value) does not fit in a 64-bit integer"))
        }
        return .int(i)
    }

    static func double(_ value: Double, codingPath: [any CodingKey]) throws -> Value {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, .init(codingPath: codingPath, debugDescription: "\(value) is not representable in JSON"))
        }
        return .double(value)
    }

    struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let encoder: ValueEncoder
        var codingPath: [any CodingKey] { encoder.codingPath }

        func set(_ value: Value, _ key: Key) {
            let child = ValueEncodingSlot()
            child.content = .value(value)
            set(child, key)
        }

        func set(_ child: ValueEncodingSlot, _ key: Key) {
            guard case .object(var members) = encoder.slot.content else { return }
            encoder.slot.content = .empty   // keep `members` uniquely referenced while it is changed
            members[key.stringValue] = child
            encoder.slot.content = .object(members)
        }

        func encodeNil(forKey key: Key) throws { set(.null, key) }
        func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
        func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
        func encode(_ value: Double, forKey key: Key) throws { set(try ValueEncoder.double(value, codingPath: codingPath + [key]), key) }
        func encode(_ value: Float, forKey key: Key) throws {
            set(try ValueEncoder.double(Double(value.description) ?? Double(value), codingPath: codingPath + [key]), key)
        }
        func encode(_ value: Int, forKey key: Key) throws { set(.int(Int64(value)), key) }
        func encode(_ value: Int8, forKey key: Key) throws { set(.int(Int64(value)), key) }
        func encode(_ value: Int16, forKey key: Key) throws { set(.int(Int64(value)), key) }
        func encode(_ value: Int32, forKey key: Key) throws { set(.int(Int64(value)), key) }
        func encode(_ value: Int64, forKey key: Key) throws { set(.int(value), key) }
        func encode(_ value: UInt, forKey key: Key) throws { set(try ValueEncoder.integer(value, codingPath: codingPath + [key]), key) }
        func encode(_ value: UInt8, forKey key: Key) throws { set(.int(Int64(value)), key) }
        func encode(_ value: UInt16, forKey key: Key) throws { set(.int(Int64(value)), key) }
        func encode(_ value: UInt32, forKey key: Key) throws { set(.int(Int64(value)), key) }
        func encode(_ value: UInt64, forKey key: Key) throws { set(try ValueEncoder.integer(value, codingPath: codingPath + [key]), key) }
        func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            let child = ValueEncodingSlot()
            try ValueEncoder(slot: child, codingPath: codingPath + [key]).encodeValue(value)
            set(child, key)
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
            -> KeyedEncodingContainer<NestedKey>
        {
            let child = ValueEncodingSlot()
            set(child, key)
            return ValueEncoder(slot: child, codingPath: codingPath + [key]).container(keyedBy: keyType)
        }

        func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            let child = ValueEncodingSlot()
            set(child, key)
            return ValueEncoder(slot: child, codingPath: codingPath + [key]).unkeyedContainer()
        }

        func superEncoder() -> any Encoder { superEncoder(forKey: Key(stringValue: "super")!) }

        func superEncoder(forKey key: Key) -> any Encoder {
            let child = ValueEncodingSlot()
            set(child, key)
            return ValueEncoder(slot: child, codingPath: codingPath + [key])
        }
    }

    struct Unkeyed: UnkeyedEncodingContainer {
        let encoder: ValueEncoder
        var codingPath: [any CodingKey] { encoder.codingPath }
        var count: Int {
            if case .array(let items) = encoder.slot.content { return items.count }
            return 0
        }

        func append(_ child: ValueEncodingSlot) {
            guard case .array(var items) = encoder.slot.content else { return }
            encoder.slot.content = .empty
            items.append(child)
            encoder.slot.content = .array(items)
        }

        func append(_ value: Value) {
            let child = ValueEncodingSlot()
            child.content = .value(value)
            append(child)
        }

        var indexKey: any CodingKey { IndexKey(intValue: count) }

        mutating func encodeNil() throws { append(.null) }
        mutating func encode(_ value: Bool) throws { append(.bool(value)) }
        mutating func encode(_ value: String) throws { append(.string(value)) }
        mutating func encode(_ value: Double) throws { append(try ValueEncoder.double(value, codingPath: codingPath + [indexKey])) }
        mutating func encode(_ value: Float) throws {
            append(try ValueEncoder.double(Double(value.description) ?? Double(value), codingPath: codingPath + [indexKey]))
        }
        mutating func encode(_ value: Int) throws { append(.int(Int64(value))) }
        mutating func encode(_ value: Int8) throws { append(.int(Int64(value))) }
        mutating func encode(_ value: Int16) throws { append(.int(Int64(value))) }
        mutating func encode(_ value: Int32) throws { append(.int(Int64(value))) }
        mutating func encode(_ value: Int64) throws { append(.int(value)) }
        mutating func encode(_ value: UInt) throws { append(try ValueEncoder.integer(value, codingPath: codingPath + [indexKey])) }
        mutating func encode(_ value: UInt8) throws { append(.int(Int64(value))) }
        mutating func encode(_ value: UInt16) throws { append(.int(Int64(value))) }
        mutating func encode(_ value: UInt32) throws { append(.int(Int64(value))) }
        mutating func encode(_ value: UInt64) throws { append(try ValueEncoder.integer(value, codingPath: codingPath + [indexKey])) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            let child = ValueEncodingSlot()
            try ValueEncoder(slot: child, codingPath: codingPath + [indexKey]).encodeValue(value)
            append(child)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            let child = ValueEncodingSlot()
            let path = codingPath + [indexKey]
            append(child)
            return ValueEncoder(slot: child, codingPath: path).container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let child = ValueEncodingSlot()
            let path = codingPath + [indexKey]
            append(child)
            return ValueEncoder(slot: child, codingPath: path).unkeyedContainer()
        }

        mutating func superEncoder() -> any Encoder {
            let child = ValueEncodingSlot()
            let path = codingPath + [indexKey]
            append(child)
            return ValueEncoder(slot: child, codingPath: path)
        }
    }

    struct Single: SingleValueEncodingContainer {
        let encoder: ValueEncoder
        var codingPath: [any CodingKey] { encoder.codingPath }

        func set(_ value: Value) { encoder.slot.content = .value(value) }

        mutating func encodeNil() throws { set(.null) }
        mutating func encode(_ value: Bool) throws { set(.bool(value)) }
        mutating func encode(_ value: String) throws { set(.string(value)) }
        mutating func encode(_ value: Double) throws { set(try ValueEncoder.double(value, codingPath: codingPath)) }
        mutating func encode(_ value: Float) throws {
            set(try ValueEncoder.double(Double(value.description) ?? Double(value), codingPath: codingPath))
        }
        mutating func encode(_ value: Int) throws { set(.int(Int64(value))) }
        mutating func encode(_ value: Int8) throws { set(.int(Int64(value))) }
        mutating func encode(_ value: Int16) throws { set(.int(Int64(value))) }
        mutating func encode(_ value: Int32) throws { set(.int(Int64(value))) }
        mutating func encode(_ value: Int64) throws { set(.int(value)) }
        mutating func encode(_ value: UInt) throws { set(try ValueEncoder.integer(value, codingPath: codingPath)) }
        mutating func encode(_ value: UInt8) throws { set(.int(Int64(value))) }
        mutating func encode(_ value: UInt16) throws { set(.int(Int64(value))) }
        mutating func encode(_ value: UInt32) throws { set(.int(Int64(value))) }
        mutating func encode(_ value: UInt64) throws { set(try ValueEncoder.integer(value, codingPath: codingPath)) }
        mutating func encode<T: Encodable>(_ value: T) throws { try encoder.encodeValue(value) }
    }
}

/// An array position in a coding path.
struct IndexKey: CodingKey {
    var intValue: Int?
    var stringValue: String { "\(intValue ?? 0)" }
    init(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { return nil }
}

// MARK: - Decoding

struct ValueDecoder: Decoder {
    let value: Value
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(value: Value, codingPath: [any CodingKey] = []) {
        self.value = value
        self.codingPath = codingPath
    }

    static func decode<T: Decodable>(_ type: T.Type, from value: Value) throws -> T {
        try ValueDecoder(value: value).decodeValue(type)
    }

    func mismatch(_ type: Any.Type, _ what: String? = nil) -> DecodingError {
        .typeMismatch(type, .init(codingPath: codingPath, debugDescription: what ?? "expected \(type), found \(value.typeName)"))
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else {
            if case .null = value {
                throw DecodingError.valueNotFound([String: Value].self, .init(codingPath: codingPath, debugDescription: "null"))
            }
            throw mismatch([String: Value].self)
        }
        return KeyedDecodingContainer(Keyed<Key>(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = value else {
            if case .null = value {
                throw DecodingError.valueNotFound([Value].self, .init(codingPath: codingPath, debugDescription: "null"))
            }
            throw mismatch([Value].self)
        }
        return Unkeyed(items: items, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(decoder: self) }

    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        switch type {
        case is Value.Type: return value as! T
        case is JSON.Type: return value.json as! T
        case is Date.Type:
            if case .date(let d) = value { return d as! T }
            if case .string(let s) = value, let d = ISO8601.parse(s) { return d as! T }
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "not a Date"))
        case is Data.Type:
            if case .bytes(let b) = value { return b as! T }
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "not Bytes"))
        case is Pointer.Type:
            if case .pointer(let p) = value { return p as! T }
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "expected Pointer, got \(value.typeName)"))
        case is GeoPoint.Type:
            if case .geoPoint(let g) = value { return g as! T }
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "expected GeoPoint, got \(value.typeName)"))
        case is FileReference.Type:
            if case .file(let f) = value { return f as! T }
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "expected FileReference, got \(value.typeName)"))
        case is URL.Type:
            guard case .string(let s) = value else { throw mismatch(URL.self) }
            guard let url = URL(string: s) else {
                throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "invalid URL string"))
            }
            return url as! T
        case is Decimal.Type:
            switch value {
            case .int(let i): return Decimal(i) as! T
            case .double(let d): return (Decimal(string: "\(d)") ?? Decimal(d)) as! T
            default: throw mismatch(Decimal.self)
            }
        default:
            return try T(from: self)
        }
    }

    // Scalars, with the conversions JSONDecoder allows (whole doubles as integers, integers as doubles).
    func null(_ type: Any.Type) -> DecodingError {
        .valueNotFound(type, .init(codingPath: codingPath, debugDescription: "null"))
    }

    func bool() throws -> Bool {
        if case .bool(let b) = value { return b }
        if case .null = value { throw null(Bool.self) }
        throw mismatch(Bool.self)
    }

    func string() throws -> String {
        if case .string(let s) = value { return s }
        if case .null = value { throw null(String.self) }
        throw mismatch(String.self)
    }

    func double() throws -> Double {
        switch value {
        case .double(let d): return d
        case .int(let i): return Double(i)
        case .null: throw null(Double.self)
        default: throw mismatch(Double.self)
        }
    }

    func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        let wide: Int64
        switch value {
        case .int(let i): wide = i
        case .double(let d) where d.rounded() == d && abs(d) < 9.2e18: wide = Int64(d)
        case .null: throw null(type)
        case .double: throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "\(value) is not a whole number for \(type)"))
        default: throw mismatch(type)
        }
        guard let v = T(exactly: wide) else {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "\(wide) does not fit in \(type)"))
        }
        return v
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let members: [String: Value]
        let codingPath: [any CodingKey]

        var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }
        func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

        func child(_ key: Key) throws -> ValueDecoder {
            guard let v = members[key.stringValue] else {
                throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no value for \(key.stringValue)"))
            }
            return ValueDecoder(value: v, codingPath: codingPath + [key])
        }

        func decodeNil(forKey key: Key) throws -> Bool { (members[key.stringValue] ?? .null).isNull }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try child(key).bool() }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try child(key).string() }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try child(key).double() }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { Float(try child(key).double()) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try child(key).integer(type) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try child(key).integer(type) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try child(key).integer(type) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try child(key).integer(type) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try child(key).integer(type) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try child(key).integer(type) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try child(key).integer(type) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try child(key).integer(type) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try child(key).integer(type) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try child(key).integer(type) }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try child(key).decodeValue(type) }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            try child(key).container(keyedBy: type)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try child(key).unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder {
            ValueDecoder(value: members["super"] ?? .null, codingPath: codingPath)
        }

        func superDecoder(forKey key: Key) throws -> any Decoder {
            ValueDecoder(value: members[key.stringValue] ?? .null, codingPath: codingPath + [key])
        }
    }

    struct Unkeyed: UnkeyedDecodingContainer {
        let items: [Value]
        let codingPath: [any CodingKey]
        var currentIndex = 0

        init(items: [Value], codingPath: [any CodingKey]) {
            self.items = items
            self.codingPath = codingPath
        }

        var count: Int? { items.count }
        var isAtEnd: Bool { currentIndex >= items.count }

        mutating func next() throws -> ValueDecoder {
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(Value.self, .init(codingPath: codingPath + [IndexKey(intValue: currentIndex)],
                                                                     debugDescription: "unkeyed container is at end"))
            }
            defer { currentIndex += 1 }
            return ValueDecoder(value: items[currentIndex], codingPath: codingPath + [IndexKey(intValue: currentIndex)])
        }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd, items[currentIndex].isNull else { return false }
            currentIndex += 1
            return true
        }
        mutating func decode(_ type: Bool.Type) throws -> Bool { try next().bool() }
        mutating func decode(_ type: String.Type) throws -> String { try next().string() }
        mutating func decode(_ type: Double.Type) throws -> Double { try next().double() }
        mutating func decode(_ type: Float.Type) throws -> Float { Float(try next().double()) }
        mutating func decode(_ type: Int.Type) throws -> Int { try next().integer(type) }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { try next().integer(type) }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { try next().integer(type) }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { try next().integer(type) }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { try next().integer(type) }
        mutating func decode(_ type: UInt.Type) throws -> UInt { try next().integer(type) }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next().integer(type) }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next().integer(type) }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next().integer(type) }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next().integer(type) }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decodeValue(type) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            try next().container(keyedBy: type)
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
        mutating func superDecoder() throws -> any Decoder { try next() }
    }

    struct Single: SingleValueDecodingContainer {
        let decoder: ValueDecoder
        var codingPath: [any CodingKey] { decoder.codingPath }

        func decodeNil() -> Bool { decoder.value.isNull }
        func decode(_ type: Bool.Type) throws -> Bool { try decoder.bool() }
        func decode(_ type: String.Type) throws -> String { try decoder.string() }
        func decode(_ type: Double.Type) throws -> Double { try decoder.double() }
        func decode(_ type: Float.Type) throws -> Float { Float(try decoder.double()) }
        func decode(_ type: Int.Type) throws -> Int { try decoder.integer(type) }
        func decode(_ type: Int8.Type) throws -> Int8 { try decoder.integer(type) }
        func decode(_ type: Int16.Type) throws -> Int16 { try decoder.integer(type) }
        func decode(_ type: Int32.Type) throws -> Int32 { try decoder.integer(type) }
        func decode(_ type: Int64.Type) throws -> Int64 { try decoder.integer(type) }
        func decode(_ type: UInt.Type) throws -> UInt { try decoder.integer(type) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.integer(type) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.integer(type) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.integer(type) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.integer(type) }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decodeValue(type) }
    }
}
