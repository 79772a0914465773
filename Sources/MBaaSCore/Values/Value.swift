public import Foundation

/// A field value of a record, independent of any vendor.
///
/// Every adapter maps its wire types to and from `Value`; the neutral JSON form (see ``json`` and
/// ``init(json:)``) is the lossless interchange used by the CLI, bundles, cassettes and reports:
///
/// | case | neutral JSON |
/// |---|---|
/// | ``null`` | `null` |
/// | ``bool(_:)`` / ``int(_:)`` / ``double(_:)`` / ``string(_:)`` | JSON scalars (`5` is an int, `5.0` a double) |
/// | ``date(_:)`` | `{"__type":"Date","iso":"2024-03-31T00:00:00.000Z"}` (millisecond precision, UTC) |
/// | ``bytes(_:)`` | `{"__type":"Bytes","base64":"..."}` |
/// | ``pointer(_:)`` | `{"__type":"Pointer","className":"Memo","objectId":"..."}` |
/// | ``file(_:)`` | `{"__type":"File","name":"a.png","url":...,"contentType":...,"size":...}` |
/// | ``geoPoint(_:)`` | `{"__type":"GeoPoint","latitude":35.6,"longitude":139.7}` |
/// | ``array(_:)`` / ``object(_:)`` | JSON arrays and objects of neutral values |
public enum Value: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case date(Date)
    case bytes(Data)
    case array([Value])
    case object([String: Value])
    case pointer(Pointer)
    /// Boxed: a file reference is five members (~110 bytes inline), which would make every `Value` that large;
    /// boxed, a `Value` is 33 bytes and records, arrays and dictionaries of values copy a third as much.
    indirect case file(FileReference)
    case geoPoint(GeoPoint)
}

/// A reference to another record, by class name and id.
public struct Pointer: Sendable, Hashable {
    public var className: String
    public var objectId: String
    public init(className: String, objectId: String) {
        self.className = className
        self.objectId = objectId
    }
}

/// A point on Earth in degrees (WGS 84).
public struct GeoPoint: Sendable, Hashable {
    public var latitude: Double
    public var longitude: Double
    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }
}

/// A reference to a stored file, as it appears in a record's field or is returned by a ``FileStore``.
///
/// `name` is the name the backend knows the file by (which may differ from the name asked for: a backend may
/// prefix a UUID or add a suffix). `attachment` is set when the backend keeps the file *on* a record (an object's
/// body, a file field) rather than in a separate store.
public struct FileReference: Sendable, Hashable {
    public var name: String
    public var url: String?
    public var contentType: String?
    public var size: Int64?
    public var attachment: FileAttachment?

    public init(
        name: String, url: String? = nil, contentType: String? = nil, size: Int64? = nil,
        attachment: FileAttachment? = nil
    ) {
        self.name = name
        self.url = url
        self.contentType = contentType
        self.size = size
        self.attachment = attachment
    }
}

/// Where a file lives when it is attached to a record: the record's class and id, and the field that holds it.
public struct FileAttachment: Sendable, Hashable {
    public var className: String
    public var objectId: String
    public var field: String
    public init(className: String, objectId: String, field: String) {
        self.className = className
        self.objectId = objectId
        self.field = field
    }
}

// MARK: - Literals and accessors

extension Value: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: Value...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, Value)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(nilLiteral: ()) { self = .null }
}

extension Value {
    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    public var boolValue: Bool? { if case .bool(let b) = self { b } else { nil } }
    public var dateValue: Date? { if case .date(let d) = self { d } else { nil } }
    public var arrayValue: [Value]? { if case .array(let a) = self { a } else { nil } }
    public var objectValue: [String: Value]? { if case .object(let o) = self { o } else { nil } }
    public var fileValue: FileReference? { if case .file(let f) = self { f } else { nil } }
    public var isNull: Bool { if case .null = self { true } else { false } }

    /// The value as a double for `int` and `double`.
    public var doubleValue: Double? {
        switch self {
        case .int(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }

    /// The value as an integer for `int` and whole `double`s.
    public var intValue: Int64? {
        switch self {
        case .int(let i): i
        case .double(let d) where d.rounded() == d && abs(d) < 9.2e18: Int64(d)
        default: nil
        }
    }

    /// A short name of the type, as used in error messages and schemas: `string`, `int`, `Date`, `Pointer`...
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .int: "int"
        case .double: "double"
        case .string: "string"
        case .date: "Date"
        case .bytes: "Bytes"
        case .array: "array"
        case .object: "object"
        case .pointer: "Pointer"
        case .file: "File"
        case .geoPoint: "GeoPoint"
        }
    }

    /// Whether two values are equal as a user would compare them: ints and doubles by numeric value,
    /// dates to the millisecond.
    public func looselyEquals(_ other: Value) -> Bool {
        switch (self, other) {
        case (.int, .double), (.double, .int), (.double, .double), (.int, .int):
            return doubleValue == other.doubleValue
        case (.date(let a), .date(let b)):
            return ISO8601.millis(a) == ISO8601.millis(b)
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.looselyEquals($1) }
        case (.object(let a), .object(let b)):
            return a.count == b.count && a.allSatisfy { k, v in b[k].map { v.looselyEquals($0) } ?? false }
        default:
            return self == other
        }
    }
}

// MARK: - Codable through the neutral form

/// `Pointer`, `GeoPoint` and `FileReference` encode to their neutral JSON form (with `__type`), so typed
/// ``Model`` properties of these types become the matching ``Value`` cases.
private protocol NeutralCodable: Codable {
    var neutralValue: Value { get }
    init?(neutralValue: Value)
}

extension NeutralCodable {
    public init(from decoder: any Decoder) throws {
        let value = try Value(json: JSON(from: decoder))
        guard let typed = Self(neutralValue: value) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                    debugDescription: "expected \(Self.self), got \(value.typeName)"))
        }
        self = typed
    }

    public func encode(to encoder: any Encoder) throws { try neutralValue.json.encode(to: encoder) }
}

extension Pointer: NeutralCodable {
    var neutralValue: Value { .pointer(self) }
    init?(neutralValue: Value) { if case .pointer(let p) = neutralValue { self = p } else { return nil } }
}

extension GeoPoint: NeutralCodable {
    var neutralValue: Value { .geoPoint(self) }
    init?(neutralValue: Value) { if case .geoPoint(let g) = neutralValue { self = g } else { return nil } }
}

extension FileReference: NeutralCodable {
    var neutralValue: Value { .file(self) }
    init?(neutralValue: Value) { if case .file(let f) = neutralValue { self = f } else { return nil } }
}
