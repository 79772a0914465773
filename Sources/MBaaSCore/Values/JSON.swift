public import Foundation
public import OrderedCollections

/// A JSON document that keeps what Foundation's `JSONSerialization` loses.
///
/// `JSON` is the wire currency of MBaaSKit: neutral record JSON, query JSON, cassettes and every vendor codec
/// are built from it. Unlike `JSONSerialization` it
/// - keeps the order of object keys (so printed cassettes and reports are stable and diffable),
/// - keeps integers and doubles apart (`5` is ``int(_:)``, `5.0` and `5e0` are ``double(_:)``), and
/// - prints deterministically, optionally with sorted keys.
///
/// Equality of two objects ignores key order: `{"a":1,"b":2} == {"b":2,"a":1}`. An integer and a double that
/// denote the same number are **not** equal (`1 != 1.0`); use ``semanticallyEquals(_:)`` when a wire format may
/// print a whole double as an integer.
public enum JSON: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object(JSONObject)
}

/// An ordered JSON object. Keys are unique; setting an existing key replaces its value in place.
///
/// Stored as one `OrderedDictionary` (swift-collections): each key is kept once, lookups are hashed, and removing a
/// key finds it by hash (the elements after it shift down, with no key comparisons). Equality and hashing ignore
/// key order.
public struct JSONObject: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    @usableFromInline var storage: OrderedDictionary<String, JSON>

    @inlinable public init() { storage = [:] }

    /// An empty object with room for `minimumCapacity` members.
    @inlinable public init(minimumCapacity: Int) { storage = OrderedDictionary(minimumCapacity: minimumCapacity) }

    /// Members in the given order; a repeated key keeps its first position and its last value.
    public init(_ pairs: [(String, JSON)]) {
        storage = OrderedDictionary(minimumCapacity: pairs.count)
        for (key, value) in pairs { storage[key] = value }
    }

    public init(dictionaryLiteral elements: (String, JSON)...) {
        self.init(elements)
    }

    /// Builds an object from a dictionary; keys are sorted so the result is deterministic.
    public init(sorting dictionary: [String: JSON]) {
        var storage = OrderedDictionary<String, JSON>(minimumCapacity: dictionary.count)
        for key in dictionary.keys.sorted() { storage[key] = dictionary[key] }
        self.storage = storage
    }

    @inlinable public subscript(key: String) -> JSON? {
        get { storage[key] }
        set { storage[key] = newValue }
    }

    /// Removes a member and returns its value.
    @discardableResult
    @inlinable public mutating func removeValue(forKey key: String) -> JSON? { storage.removeValue(forKey: key) }

    /// Room for `minimumCapacity` members without reallocating.
    @inlinable public mutating func reserveCapacity(_ minimumCapacity: Int) { storage.reserveCapacity(minimumCapacity) }

    /// The keys in order.
    @inlinable public var keys: [String] { storage.keys.elements }
    /// The values in key order.
    @inlinable public var values: [JSON] { storage.values.elements }
    @inlinable public var count: Int { storage.count }
    @inlinable public var isEmpty: Bool { storage.isEmpty }
    /// The members as an (unordered) dictionary.
    public var dictionary: [String: JSON] {
        var out: [String: JSON] = Dictionary(minimumCapacity: storage.count)
        for (key, value) in storage { out[key] = value }
        return out
    }

    /// Iterates `(key, value)` pairs in key order.
    public struct Iterator: IteratorProtocol {
        @usableFromInline var base: OrderedDictionary<String, JSON>.Iterator
        @inlinable init(base: OrderedDictionary<String, JSON>.Iterator) { self.base = base }
        @inlinable public mutating func next() -> (key: String, value: JSON)? { base.next() }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(base: storage.makeIterator()) }
    @inlinable public var underestimatedCount: Int { storage.count }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.storage.count == rhs.storage.count else { return false }
        for (key, value) in lhs.storage {
            guard let other = rhs.storage[key], other == value else { return false }
        }
        return true
    }

    /// Order-independent, like `Dictionary`'s: the per-member hashes are combined commutatively.
    public func hash(into hasher: inout Hasher) {
        var combined = 0
        for (key, value) in storage {
            var h = Hasher()
            h.combine(key)
            h.combine(value)
            combined ^= h.finalize()
        }
        hasher.combine(storage.count)
        hasher.combine(combined)
    }
}

// MARK: - Accessors

extension JSON {
    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    public var boolValue: Bool? { if case .bool(let b) = self { b } else { nil } }
    public var objectValue: JSONObject? { if case .object(let o) = self { o } else { nil } }
    public var arrayValue: [JSON]? { if case .array(let a) = self { a } else { nil } }
    public var isNull: Bool { if case .null = self { true } else { false } }

    /// The number as a double, for `int` and `double`.
    public var doubleValue: Double? {
        switch self {
        case .int(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }

    /// The number as an integer, for `int` and for a `double` that is whole.
    public var intValue: Int64? {
        switch self {
        case .int(let i): i
        case .double(let d) where d.rounded() == d && abs(d) < 9.2e18: Int64(d)
        default: nil
        }
    }

    /// Member of an object, or `nil`.
    public subscript(key: String) -> JSON? {
        if case .object(let o) = self { o[key] } else { nil }
    }

    /// Equality that treats `1` and `1.0` as equal at every depth, and ignores object key order.
    public func semanticallyEquals(_ other: JSON) -> Bool {
        switch (self, other) {
        case (.int, .double), (.double, .int), (.double, .double):
            return doubleValue == other.doubleValue
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.semanticallyEquals($1) }
        case (.object(let a), .object(let b)):
            guard a.count == b.count else { return false }
            return a.allSatisfy { key, value in b[key].map { value.semanticallyEquals($0) } ?? false }
        default:
            return self == other
        }
    }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(nilLiteral: ()) { self = .null }
}

// MARK: - Parsing

/// A JSON text that could not be parsed, or a number or string that cannot be kept exactly.
///
/// `offset` is the byte offset of the problem and `path` the member it is in (`$`, `$.a[3].b`), so a message
/// says where to look in a large document.
public struct JSONParseError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var offset: Int
    /// Where in the document the problem is: `$` for the top level, `$.items[2].price` inside.
    public var path: String

    public init(message: String, offset: Int, path: String = "$") {
        self.message = message
        self.offset = offset
        self.path = path
    }

    public var description: String {
        path == "$" ? "invalid JSON at byte \(offset): \(message)" : "invalid JSON at byte \(offset) (\(path)): \(message)"
    }
}

extension JSON {
    /// Parses a complete JSON text. Trailing non-space characters are an error.
    ///
    /// Nothing is changed silently: an integer that does not fit in 64 bits, a number too large or (non-zero and)
    /// too small for a double, a number with a leading zero (`01`), a string that is not valid UTF-8 and a member
    /// name given twice in one object are errors naming the path, not approximations or a guess at which was meant.
    public static func parse(_ text: String) throws(JSONParseError) -> JSON {
        var text = text
        let result = text.withUTF8 { bytes in Result { () throws(JSONParseError) in try parse(bytes: bytes) } }
        return try result.get()
    }

    /// Parses a complete JSON text as ``parse(_:)-(String)`` does, and with `exactNumbers` also refuses a decimal
    /// that a double cannot keep: `123456789.123456789` would become `123456789.12345679` (more than about 17
    /// significant digits), so it is an error naming the path and what it would become (send it as a string).
    /// For input typed by a person (the CLI's fields); `0.1` and `1e-7` are kept as written and accepted.
    public static func parse(_ text: String, exactNumbers: Bool) throws(JSONParseError) -> JSON {
        var text = text
        let result = text.withUTF8 { bytes in
            Result { () throws(JSONParseError) in
                var parser = JSONParser(bytes: bytes)
                parser.exactNumbers = exactNumbers
                let value = try parser.parseValue(depth: 0)
                parser.skipWhitespace()
                guard parser.index == parser.end else { throw parser.error("unexpected trailing characters") }
                return value
            }
        }
        return try result.get()
    }

    /// Parses a complete JSON text from UTF-8 bytes.
    public static func parse(_ data: Data) throws(JSONParseError) -> JSON {
        let result = data.withUnsafeBytes { raw in
            Result { () throws(JSONParseError) in try parse(bytes: raw.bindMemory(to: UInt8.self)) }
        }
        return try result.get()
    }

    /// Parses a complete JSON text from a buffer of UTF-8 bytes.
    public static func parse(bytes: UnsafeBufferPointer<UInt8>) throws(JSONParseError) -> JSON {
        var parser = JSONParser(bytes: bytes)
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.index == parser.end else { throw parser.error("unexpected trailing characters") }
        return value
    }
}

struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    let end: Int
    var index = 0
    /// Refuse decimals a double cannot keep as written (``JSON/parse(_:exactNumbers:)``).
    var exactNumbers = false

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        self.end = bytes.count
    }

    func error(_ message: String) -> JSONParseError { JSONParseError(message: message, offset: index) }

    @inline(__always) mutating func skipWhitespace() {
        while index < end {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    mutating func parseValue(depth: Int) throws(JSONParseError) -> JSON {
        guard depth < 512 else { throw error("nesting deeper than 512 levels") }
        skipWhitespace()
        guard index < end else { throw error("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default:
            let b = bytes[index]
            throw error(b < 0x80 ? "unexpected character '\(Character(UnicodeScalar(b)))'" : "unexpected byte 0x\(String(b, radix: 16))")
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= end, memcmp(bytes.baseAddress! + index, literal.utf8Start, count) == 0 else {
            throw error("expected '\(literal)'")
        }
        index += count
    }

    mutating func parseObject(depth: Int) throws(JSONParseError) -> JSON {
        index += 1
        var object = JSONObject()
        skipWhitespace()
        if index < end, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(object) }
        while true {
            skipWhitespace()
            guard index < end, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a key string") }
            let keyOffset = index
            let key = try parseString()
            skipWhitespace()
            guard index < end, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            do throws(JSONParseError) {
                // A repeated member would replace the first in silence; which one the sender meant is unknown.
                if object.storage.updateValue(try parseValue(depth: depth + 1), forKey: key) != nil {
                    let earlier = object.storage.keys[object.storage.index(forKey: key)!]
                    throw JSONParseError(message: Self.repeatedName(earlier, key), offset: keyOffset)
                }
            } catch {
                throw Self.prefix(error, JSONPathSegment.key(key))
            }
            skipWhitespace()
            guard index < end else { throw error("unterminated object") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(object) }
            throw error("expected ',' or '}'")
        }
    }

    mutating func parseArray(depth: Int) throws(JSONParseError) -> JSON {
        index += 1
        var array: [JSON] = []
        skipWhitespace()
        if index < end, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(array) }
        while true {
            do {
                array.append(try parseValue(depth: depth + 1))
            } catch {
                throw Self.prefix(error, JSONPathSegment.index(array.count))
            }
            skipWhitespace()
            guard index < end else { throw error("unterminated array") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(array) }
            throw error("expected ',' or ']'")
        }
    }

    /// The error of a member name an object already has: written alike, or (Swift strings compare canonically)
    /// with other code points that read the same, which a reader of the message would not see otherwise.
    static func repeatedName(_ earlier: String, _ key: String) -> String {
        earlier.unicodeScalars.elementsEqual(key.unicodeScalars)
            ? "the member name is repeated in this object"
            : "the member name is canonically equivalent to an earlier one in this object (the same text in other Unicode code points)"
    }

    /// Adds the member or element an error happened in to the front of its path.
    static func prefix(_ error: JSONParseError, _ segment: JSONPathSegment) -> JSONParseError {
        var e = error
        e.path = "$" + segment.text + e.path.dropFirst()
        return e
    }

    /// Parses a string literal (at its opening quote). Runs of plain ASCII become the string directly; other
    /// bytes are validated as UTF-8 (invalid UTF-8 is an error, never replaced).
    mutating func parseString() throws(JSONParseError) -> String {
        index += 1
        let start = index
        var ascii = true
        while index < end {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let run = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                if !ascii, !isValidUTF8(run) {
                    index = start
                    throw error("invalid UTF-8 in string")
                }
                return String(decoding: run, as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error("control character in string") }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        guard index < end else { throw error("unterminated string") }
        // Escapes: collect the UTF-8 of the whole string, then validate it once.
        var buffer: [UInt8] = []
        buffer.reserveCapacity(index - start + 16)
        buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < end {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                if !ascii, !buffer.withUnsafeBufferPointer(isValidUTF8) {
                    index = start
                    throw error("invalid UTF-8 in string")
                }
                return String(decoding: buffer, as: UTF8.self)
            }
            if byte < 0x20 { throw error("control character in string") }
            if byte != UInt8(ascii: "\\") {
                if byte >= 0x80 { ascii = false }
                buffer.append(byte)
                index += 1
                continue
            }
            index += 1
            guard index < end else { break }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""): buffer.append(UInt8(ascii: "\""))
            case UInt8(ascii: "\\"): buffer.append(UInt8(ascii: "\\"))
            case UInt8(ascii: "/"): buffer.append(UInt8(ascii: "/"))
            case UInt8(ascii: "b"): buffer.append(0x08)
            case UInt8(ascii: "f"): buffer.append(0x0C)
            case UInt8(ascii: "n"): buffer.append(0x0A)
            case UInt8(ascii: "r"): buffer.append(0x0D)
            case UInt8(ascii: "t"): buffer.append(0x09)
            case UInt8(ascii: "u"):
                var code = try parseHex4()
                if (0xD800...0xDBFF).contains(code) {
                    guard index + 1 < end, bytes[index] == UInt8(ascii: "\\"),
                          bytes[index + 1] == UInt8(ascii: "u") else { throw error("unpaired surrogate") }
                    index += 2
                    let low = try parseHex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw error("invalid low surrogate") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let scalar = Unicode.Scalar(code) else { throw error("invalid unicode escape") }
                if code >= 0x80 { ascii = false }
                buffer.append(contentsOf: UTF8.encode(scalar)!)
            default: throw error("invalid escape")
            }
        }
        throw error("unterminated string")
    }

    mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= end else { throw error("short unicode escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            let digit: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw error("invalid hex digit")
            }
            value = value * 16 + digit
            index += 1
        }
        return value
    }

    /// Parses a number. Integers are accumulated directly (no text); an integer beyond 64 bits, a double that
    /// overflows or underflows to zero, and a leading zero are errors.
    mutating func parseNumber() throws(JSONParseError) -> JSON {
        let start = index
        var negative = false
        if bytes[index] == UInt8(ascii: "-") { negative = true; index += 1 }
        guard index < end, bytes[index] &- UInt8(ascii: "0") < 10 else { throw error("invalid number") }
        var magnitude: UInt64 = 0
        var overflow = false
        var nonZero = false
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < end, bytes[index] &- UInt8(ascii: "0") < 10 {
                index = start
                throw error("invalid number: leading zeros are not allowed")
            }
        } else {
            nonZero = true
            while index < end {
                let digit = bytes[index] &- UInt8(ascii: "0")
                guard digit < 10 else { break }
                let (m, o1) = magnitude.multipliedReportingOverflow(by: 10)
                let (a, o2) = m.addingReportingOverflow(UInt64(digit))
                magnitude = a
                overflow = overflow || o1 || o2
                index += 1
            }
        }
        var isDouble = false
        if index < end, bytes[index] == UInt8(ascii: ".") {
            isDouble = true
            index += 1
            let digitsStart = index
            while index < end, bytes[index] &- UInt8(ascii: "0") < 10 {
                if bytes[index] != UInt8(ascii: "0") { nonZero = true }
                index += 1
            }
            guard index > digitsStart else { throw error("invalid number: digits expected after '.'") }
        }
        if index < end, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isDouble = true
            index += 1
            if index < end, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            let digitsStart = index
            while index < end, bytes[index] &- UInt8(ascii: "0") < 10 { index += 1 }
            guard index > digitsStart else { throw error("invalid number: exponent digits expected") }
        }
        if !isDouble && !overflow {
            if !negative, magnitude <= UInt64(Int64.max) { return .int(Int64(magnitude)) }
            if negative, magnitude <= UInt64(Int64.max) + 1 { return .int(Int64(bitPattern: 0 &- magnitude)) }
        }
        // Short decimals (up to 15 significant digits, most 16-digit ones, a power of ten within ±22) are read exactly
        // without building their text; 17 digits never are. `exactNumbers` compares the text: the general path.
        if isDouble, !exactNumbers, let double = Self.exactDouble(UnsafeBufferPointer(rebasing: bytes[start..<index])) {
            return .double(double)
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        if !isDouble {
            let at = index
            index = start
            defer { index = at }
            throw error("the integer \(text) does not fit in 64 bits (send it as a string, or as a double such as \(text).0)")
        }
        guard let double = Double(text) else { throw error("invalid number '\(text)'") }
        guard double.isFinite else {
            index = start
            throw error("the number \(text) is too large for a double")
        }
        if double == 0, nonZero {
            index = start
            throw error("the number \(text) is too small for a double (it would become 0)")
        }
        if exactNumbers, !Self.sameDecimal(text, double.description) {
            index = start
            throw error("the number \(text) cannot be kept exactly (a double would make it \(double.description)); send it as a string")
        }
        return .double(double)
    }

    /// Powers of ten that a double holds exactly.
    private static let exactPowersOfTen: [Double] = (0...22).map { exponent in
        (0..<exponent).reduce(1.0) { product, _ in product * 10 }
    }

    /// A well-formed JSON number with a fraction or an exponent (checked by the caller), read without text when that
    /// is exact: its significant digits (trailing zeros left out) make an integer of at most 2^53 and its power of
    /// ten is within ±22. Both are then doubles exactly, and one IEEE multiplication or division of two exact doubles
    /// is correctly rounded, so the result is the one `Double(String)` gives (Clinger's fast path). `nil` when the
    /// number is outside it.
    static func exactDouble(_ number: UnsafeBufferPointer<UInt8>) -> Double? {
        var i = 0
        let n = number.count
        let negative = n > 0 && number[0] == UInt8(ascii: "-")
        if negative { i = 1 }
        var mantissa: UInt64 = 0
        var digits = 0
        var scale = 0
        // Zeros after the first significant digit wait here: trailing ones (`1500.0`) only move the scale.
        var zeros = 0
        var fraction = false
        while i < n {
            let byte = number[i]
            let digit = byte &- UInt8(ascii: "0")
            if digit < 10 {
                if fraction { scale -= 1 }
                if digit == 0 {
                    if mantissa != 0 { zeros += 1; scale += 1 }
                } else {
                    guard digits + zeros < 18 else { return nil }
                    while zeros > 0 { mantissa *= 10; zeros -= 1; scale -= 1; digits += 1 }
                    mantissa = mantissa * 10 + UInt64(digit)
                    digits += 1
                }
            } else if byte == UInt8(ascii: ".") {
                fraction = true
            } else {
                break  // the exponent
            }
            i += 1
        }
        if i < n {
            i += 1  // e or E
            var negativeExponent = false
            if i < n, number[i] == UInt8(ascii: "+") || number[i] == UInt8(ascii: "-") {
                negativeExponent = number[i] == UInt8(ascii: "-")
                i += 1
            }
            var exponent = 0
            while i < n {
                exponent = exponent * 10 + Int(number[i] &- UInt8(ascii: "0"))
                guard exponent < 1000 else { return nil }
                i += 1
            }
            scale += negativeExponent ? -exponent : exponent
        }
        if mantissa == 0 { return negative ? -0.0 : 0.0 }
        guard mantissa <= 1 << 53, scale >= -22, scale <= 22 else { return nil }
        var value = Double(mantissa)
        if scale > 0 { value *= exactPowersOfTen[scale] } else if scale < 0 { value /= exactPowersOfTen[-scale] }
        return negative ? -value : value
    }

    /// Whether two decimal texts (`-1.50e3`, `1500.0`) are the same number, digit for digit.
    static func sameDecimal(_ a: String, _ b: String) -> Bool {
        func normalized(_ text: String) -> (negative: Bool, digits: [UInt8], exponent: Int) {
            var negative = false, digits: [UInt8] = [], exponent = 0, pointSeen = false, integerDigits = 0
            var bytes = Array(text.utf8)[...]
            if bytes.first == UInt8(ascii: "-") { negative = true; bytes = bytes.dropFirst() }
            while let c = bytes.first, c != UInt8(ascii: "e"), c != UInt8(ascii: "E") {
                bytes = bytes.dropFirst()
                if c == UInt8(ascii: ".") { pointSeen = true; continue }
                digits.append(c)
                if !pointSeen { integerDigits += 1 }
            }
            if !bytes.isEmpty { exponent = Int(String(decoding: bytes.dropFirst(), as: UTF8.self).replacingOccurrences(of: "+", with: "")) ?? 0 }
            // value = 0.digits × 10^(integerDigits + exponent); leading zeros move the point, trailing ones do not count.
            var point = integerDigits + exponent
            while digits.first == UInt8(ascii: "0") { digits.removeFirst(); point -= 1 }
            while digits.last == UInt8(ascii: "0") { digits.removeLast() }
            if digits.isEmpty { return (false, [], 0) }
            return (negative, digits, point)
        }
        let x = normalized(a), y = normalized(b)
        return x.negative == y.negative && x.digits == y.digits && x.exponent == y.exponent
    }
}

/// Whether `bytes` is well-formed UTF-8 (no overlong forms, surrogates, or scalars beyond U+10FFFF).
func isValidUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    var i = 0
    let n = bytes.count
    while i < n {
        let b0 = bytes[i]
        if b0 < 0x80 { i += 1; continue }
        func cont(_ k: Int) -> Bool { i + k < n && bytes[i + k] & 0xC0 == 0x80 }
        switch b0 {
        case 0xC2...0xDF:
            guard cont(1) else { return false }
            i += 2
        case 0xE0...0xEF:
            guard cont(1), cont(2) else { return false }
            let b1 = bytes[i + 1]
            if b0 == 0xE0, b1 < 0xA0 { return false }   // overlong
            if b0 == 0xED, b1 > 0x9F { return false }   // surrogate
            i += 3
        case 0xF0...0xF4:
            guard cont(1), cont(2), cont(3) else { return false }
            let b1 = bytes[i + 1]
            if b0 == 0xF0, b1 < 0x90 { return false }   // overlong
            if b0 == 0xF4, b1 > 0x8F { return false }   // beyond U+10FFFF
            i += 4
        default:
            return false
        }
    }
    return true
}

/// One step of a path in an error message: `.key` (or `["odd key"]`) or `[3]`.
enum JSONPathSegment {
    case key(String)
    case index(Int)

    var text: String {
        switch self {
        case .index(let i): return "[\(i)]"
        case .key(let k):
            let plain = !k.isEmpty && k.utf8.allSatisfy { b in
                (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z"))
                    || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || b == UInt8(ascii: "_") || b == UInt8(ascii: "-")
            }
            return plain ? ".\(k)" : "[\(JSON.string(k).printed())]"
        }
    }
}

// MARK: - Printing

extension JSON {
    /// Printing options.
    public struct PrintOptions: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Indent with two spaces, one member per line.
        public static let pretty = PrintOptions(rawValue: 1)
        /// Print object keys sorted (otherwise in insertion order).
        public static let sortedKeys = PrintOptions(rawValue: 2)
        /// Whole doubles Swift prints with an exponent (`1e+16`) in fixed notation with `.0`, their exact value: for
        /// stores that print `1e+16` back as an integer but keep a number's scale (PostgreSQL's `jsonb`).
        public static let fixedWholeDoubles = PrintOptions(rawValue: 4)
    }

    /// The JSON text of this value. Non-finite doubles (not representable in JSON) print as `null`.
    public func printed(_ options: PrintOptions = []) -> String {
        var out = JSONWriter(options: options)
        out.write(self, indent: 0)
        return String(decoding: out.bytes, as: UTF8.self)
    }

    /// The UTF-8 bytes of ``printed(_:)``.
    public func data(_ options: PrintOptions = []) -> Data {
        var out = JSONWriter(options: options)
        out.write(self, indent: 0)
        return Data(out.bytes)
    }

    static func format(double d: Double) -> String {
        guard d.isFinite else { return "null" }
        // Swift's description is the shortest representation that round-trips, and keeps ".0" on whole values.
        return d.description
    }

    static func writeString(_ s: String, to out: inout String) {
        var writer = JSONWriter(options: [])
        writer.writeString(s)
        out += String(decoding: writer.bytes, as: UTF8.self)
    }
}

/// Prints JSON into a byte buffer (one growing array, no intermediate strings).
struct JSONWriter {
    var bytes: [UInt8] = []
    let pretty: Bool
    let sortedKeys: Bool
    let fixedWholeDoubles: Bool

    init(options: JSON.PrintOptions, capacity: Int = 256) {
        pretty = options.contains(.pretty)
        sortedKeys = options.contains(.sortedKeys)
        fixedWholeDoubles = options.contains(.fixedWholeDoubles)
        bytes.reserveCapacity(capacity)
    }

    @inline(__always) mutating func append(_ s: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    mutating func newline(_ indent: Int) {
        bytes.append(0x0A)
        for _ in 0..<indent { bytes.append(0x20); bytes.append(0x20) }
    }

    mutating func write(int i: Int64) {
        if i >= 0 && i < 10 { bytes.append(UInt8(ascii: "0") + UInt8(i)); return }
        var v = i.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { tmp in
            var n = 20
            while v > 0 {
                n -= 1
                tmp[n] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
            }
            if i < 0 { bytes.append(UInt8(ascii: "-")) }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: tmp[n..<20]))
        }
    }

    mutating func write(double d: Double) {
        guard d.isFinite else { append("null"); return }
        var text = d.description
        if fixedWholeDoubles, d.rounded() == d, text.utf8.contains(UInt8(ascii: "e")) { text = String(format: "%.1f", d) }
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    mutating func write(_ value: JSON, indent: Int) {
        switch value {
        case .null: append("null")
        case .bool(let b): if b { append("true") } else { append("false") }
        case .int(let i): write(int: i)
        case .double(let d): write(double: d)
        case .string(let s): writeString(s)
        case .array(let items):
            if items.isEmpty { append("[]"); return }
            bytes.append(UInt8(ascii: "["))
            var first = true
            for item in items {
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                if pretty { newline(indent + 1) }
                write(item, indent: indent + 1)
            }
            if pretty { newline(indent) }
            bytes.append(UInt8(ascii: "]"))
        case .object(let object):
            if object.isEmpty { append("{}"); return }
            bytes.append(UInt8(ascii: "{"))
            if sortedKeys {
                for (i, key) in object.storage.keys.sorted().enumerated() {
                    member(key, object.storage[key]!, first: i == 0, indent: indent)
                }
            } else {
                var first = true
                for (key, item) in object.storage {
                    member(key, item, first: first, indent: indent)
                    first = false
                }
            }
            if pretty { newline(indent) }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    mutating func member(_ key: String, _ value: JSON, first: Bool, indent: Int) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        if pretty { newline(indent + 1) }
        writeString(key)
        if pretty { append(": ") } else { bytes.append(UInt8(ascii: ":")) }
        write(value, indent: indent + 1)
    }

    /// A string literal: runs that need no escaping are copied in one go.
    mutating func writeString(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { utf8 in
            var runStart = 0
            for i in 0..<utf8.count {
                let b = utf8[i]
                guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
                if i > runStart { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<i])) }
                runStart = i + 1
                switch b {
                case UInt8(ascii: "\""): append("\\\"")
                case UInt8(ascii: "\\"): append("\\\\")
                case 0x0A: append("\\n")
                case 0x0D: append("\\r")
                case 0x09: append("\\t")
                case 0x08: append("\\b")
                case 0x0C: append("\\f")
                default:
                    let hex: StaticString = "0123456789abcdef"
                    append("\\u00")
                    bytes.append(hex.utf8Start[Int(b >> 4)])
                    bytes.append(hex.utf8Start[Int(b & 0xF)])
                }
            }
            if utf8.count > runStart { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<utf8.count])) }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

extension JSON: CustomStringConvertible {
    public var description: String { printed() }
}

// MARK: - Codable bridge

extension JSON: Codable {
    public init(from decoder: any Decoder) throws {
        // The core's own decoder has the value at hand: no trying of decoders in turn.
        if let decoder = decoder as? ValueDecoder { self = decoder.value.json; return }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null; return }
        if let b = try? container.decode(Bool.self) { self = .bool(b); return }
        if let i = try? container.decode(Int64.self) { self = .int(i); return }
        if let d = try? container.decode(Double.self) { self = .double(d); return }
        if let s = try? container.decode(String.self) { self = .string(s); return }
        if let a = try? container.decode([JSON].self) { self = .array(a); return }
        let dict = try container.decode([String: JSON].self)
        self = .object(JSONObject(sorting: dict))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let b): try container.encode(b)
        case .int(let i): try container.encode(i)
        case .double(let d): try container.encode(d)
        case .string(let s): try container.encode(s)
        case .array(let a): try container.encode(a)
        case .object(let o): try container.encode(o.dictionary)
        }
    }
}
