public import Foundation
import OrderedCollections

extension Value {
    /// The neutral JSON form of this value (see ``Value`` for the table). Object keys are printed sorted.
    public var json: JSON {
        switch self {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(i)
        case .double(let d): return .double(d)
        case .string(let s): return .string(s)
        case .date(let d): return .object(["__type": "Date", "iso": .string(ISO8601.format(d))])
        case .bytes(let b): return .object(["__type": "Bytes", "base64": .string(b.base64EncodedString())])
        case .array(let a): return .array(a.map(\.json))
        case .object(let o):
            var object = JSONObject(minimumCapacity: o.count)
            for key in o.keys.sorted() { object.storage[key] = o[key]!.json }
            return .object(object)
        case .pointer(let p):
            return .object(["__type": "Pointer", "className": .string(p.className), "objectId": .string(p.objectId)])
        case .geoPoint(let g):
            return .object(["__type": "GeoPoint", "latitude": .double(g.latitude), "longitude": .double(g.longitude)])
        case .file(let f):
            var o: JSONObject = ["__type": "File", "name": .string(f.name)]
            if let url = f.url { o["url"] = .string(url) }
            if let ct = f.contentType { o["contentType"] = .string(ct) }
            if let size = f.size { o["size"] = .int(size) }
            if let a = f.attachment {
                o["attachment"] = .object([
                    "className": .string(a.className), "objectId": .string(a.objectId), "field": .string(a.field),
                ])
            }
            return .object(o)
        }
    }

    /// The compact JSON text of ``json`` (the same bytes as `json.printed()`), printed directly without building
    /// the intermediate ``JSON`` tree.
    public var jsonText: String { jsonText([]) }

    /// ``jsonText`` with print options (``JSON/PrintOptions/fixedWholeDoubles`` for a store that normalises numbers).
    public func jsonText(_ options: JSON.PrintOptions) -> String {
        var writer = JSONWriter(options: options)
        writer.write(self)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// Reads a value from its neutral JSON form.
    ///
    /// An object with a `__type` member must be one of the typed forms; an unknown `__type`, or a typed form with
    /// a missing or mistyped member, is an ``MBaaSError`` of kind ``MBaaSError/Kind/invalidRequest`` whose message
    /// names the path (`path` is prefixed to it).
    public init(json: JSON, path: String = "$") throws(MBaaSError) {
        do {
            self = try Value.convert(json)
        } catch {
            throw MBaaSError(.invalidRequest, path + error.path + ": " + error.message)
        }
    }

    /// Parses neutral JSON text straight into values (no intermediate ``JSON`` tree): the fields of a stored
    /// record, say. Errors name the path; malformed text is a ``JSONParseError``, a bad typed form an
    /// ``MBaaSError`` (`invalidRequest`).
    public static func parse(jsonText text: String, path: String = "$") throws -> Value {
        var text = text
        return try text.withUTF8 { try parse(jsonBytes: $0, path: path) }
    }

    /// ``parse(jsonText:path:)`` from UTF-8 bytes (a database column read without copying it into a `String`).
    public static func parse(jsonData data: Data, path: String = "$") throws -> Value {
        try data.withUnsafeBytes { raw in try parse(jsonBytes: raw.bindMemory(to: UInt8.self), path: path) }
    }

    /// ``parse(jsonText:path:)`` from a buffer of UTF-8 bytes.
    public static func parse(jsonBytes bytes: UnsafeBufferPointer<UInt8>, path: String = "$") throws -> Value {
        var parser = JSONParser(bytes: bytes)
        let result: Result<Value, ValueParseFailure>
        do throws(ValueParseFailure) {
            let value = try parser.parseNeutralValue(depth: 0)
            parser.skipWhitespace()
            if parser.index == parser.end {
                result = .success(value)
            } else {
                result = .failure(.json(parser.error("unexpected trailing characters")))
            }
        } catch {
            result = .failure(error)
        }
        switch result {
        case .success(let v): return v
        case .failure(.json(var e)):
            if path != "$" { e.path = path + e.path.dropFirst() }
            throw e
        case .failure(.typed(let e)): throw MBaaSError(.invalidRequest, path + e.path + ": " + e.message)
        }
    }

    /// A problem found while walking JSON into values: `path` is relative to where the walk started (`.a[2]`),
    /// so the caller prefixes its own (`$`, `$.fields`) and chooses the error kind.
    public struct ConversionError: Error, Sendable {
        public var path: String
        public var message: String

        public init(path: String = "", message: String) {
            self.path = path
            self.message = message
        }
    }

    /// Decodes the member of a typed object: `member(key, json)` walks `json` with the same hook and, on failure,
    /// adds `.key` to the path.
    public typealias MemberDecoder = (_ key: String, _ json: JSON) throws(ConversionError) -> Value

    /// The one walk from JSON to values, shared by the neutral form and every vendor dialect of it (NCMB's and
    /// Parse's `__type` objects, Kii's points): arrays and objects are walked here, and errors carry the path of the
    /// value that failed. Every object goes to `typed` first, with its `__type` member (`nil` without one; a string
    /// in every typed form) and a ``MemberDecoder`` for its members; `typed` returns `nil` to have it walked as a
    /// plain object (a vendor keeping an unknown type), or throws (the neutral form refusing one).
    public static func walk(
        _ json: JSON,
        typed: @escaping (_ type: JSON?, _ object: JSONObject, _ member: MemberDecoder) throws(ConversionError) -> Value?
    ) throws(ConversionError) -> Value {
        func go(_ json: JSON) throws(ConversionError) -> Value {
            switch json {
            case .null: return .null
            case .bool(let b): return .bool(b)
            case .int(let i): return .int(i)
            case .double(let d): return .double(d)
            case .string(let s): return .string(s)
            case .array(let a):
                var out: [Value] = []
                out.reserveCapacity(a.count)
                for item in a {
                    do { out.append(try go(item)) } catch {
                        throw ConversionError(path: "[\(out.count)]" + error.path, message: error.message)
                    }
                }
                return .array(out)
            case .object(let o):
                func member(_ key: String, _ json: JSON) throws(ConversionError) -> Value {
                    do { return try go(json) } catch {
                        throw ConversionError(path: "." + key + error.path, message: error.message)
                    }
                }
                if let value = try typed(o["__type"], o, member) { return value }
                var out: [String: Value] = Dictionary(minimumCapacity: o.count)
                for (k, v) in o {
                    do { out[k] = try go(v) } catch {
                        throw ConversionError(path: "." + k + error.path, message: error.message)
                    }
                }
                return .object(out)
            }
        }
        return try go(json)
    }

    static func convert(_ json: JSON) throws(ConversionError) -> Value {
        try walk(json) { type, o, _ throws(ConversionError) in
            guard let type else { return nil }
            if let value = try typed(type, o) { return value }
            throw ConversionError(message: "unknown __type \(type.printed())")
        }
    }

    /// The neutral typed forms (`nil` for a type that is not one of them).
    static func typed(_ type: JSON, _ o: JSONObject) throws(ConversionError) -> Value? {
        func fail(_ message: String) -> ConversionError { ConversionError(path: "", message: message) }
        func string(_ key: String) throws(ConversionError) -> String {
            guard let s = o[key]?.stringValue else {
                throw fail("\(type.stringValue ?? "?") needs a string '\(key)'")
            }
            return s
        }
        func number(_ key: String) throws(ConversionError) -> Double {
            guard let d = o[key]?.doubleValue else {
                throw fail("\(type.stringValue ?? "?") needs a number '\(key)'")
            }
            return d
        }
        switch type.stringValue {
        case "Date":
            // Nothing is dropped in silence: a member other than `iso` is an error, not ignored.
            if let extra = o.keys.first(where: { $0 != "__type" && $0 != "iso" }) {
                throw fail("a Date has only 'iso'; '\(extra)' would be lost")
            }
            let iso = try string("iso")
            guard let date = ISO8601.parse(iso) else {
                throw fail("'\(iso)' is not an ISO-8601 date")
            }
            return .date(date)
        case "Bytes":
            let b64 = try string("base64")
            guard let data = Data(base64Encoded: b64) else {
                throw fail("Bytes.base64 is not valid base64")
            }
            return .bytes(data)
        case "Pointer":
            return .pointer(Pointer(className: try string("className"), objectId: try string("objectId")))
        case "GeoPoint":
            let lat = try number("latitude"), lon = try number("longitude")
            guard (-90...90).contains(lat), (-180...180).contains(lon) else {
                throw fail("GeoPoint out of range (\(lat), \(lon))")
            }
            return .geoPoint(GeoPoint(latitude: lat, longitude: lon))
        case "File":
            var attachment: FileAttachment?
            if let a = o["attachment"]?.objectValue {
                guard let c = a["className"]?.stringValue, let id = a["objectId"]?.stringValue,
                      let f = a["field"]?.stringValue
                else { throw fail("File.attachment needs className, objectId, field") }
                attachment = FileAttachment(className: c, objectId: id, field: f)
            }
            return .file(
                FileReference(
                    name: try string("name"), url: o["url"]?.stringValue, contentType: o["contentType"]?.stringValue,
                    size: o["size"]?.intValue, attachment: attachment))
        default:
            return nil
        }
    }
}

extension Value: Codable {
    /// Decodes from the neutral JSON form.
    public init(from decoder: any Decoder) throws {
        self = try Value(json: JSON(from: decoder))
    }

    /// Encodes to the neutral JSON form.
    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }
}

/// Fixed-format ISO-8601 timestamps: `yyyy-MM-ddTHH:mm:ss.SSSZ` (UTC, milliseconds), the form every vendor here
/// accepts and every neutral document uses.
public enum ISO8601 {
    /// Formats a date as `2024-03-31T23:59:59.123Z`, truncated (not rounded) to the millisecond.
    public static func format(_ date: Date) -> String {
        let ms = millis(date)
        var seconds = ms >= 0 ? ms / 1000 : (ms - 999) / 1000
        let milli = Int(ms - seconds * 1000)
        let days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400
        seconds -= days * 86400
        let (y, m, d) = civil(fromDays: days)
        let h = Int(seconds / 3600), mi = Int(seconds % 3600 / 60), s = Int(seconds % 60)
        guard (0...9999).contains(y) else {
            return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", y, m, d, h, mi, s, milli)
        }
        return String(unsafeUninitializedCapacity: 24) { buffer in
            func put(_ value: Int, _ width: Int, at offset: Int) {
                var v = value
                for i in stride(from: offset + width - 1, through: offset, by: -1) {
                    buffer[i] = UInt8(48 + v % 10)
                    v /= 10
                }
            }
            put(y, 4, at: 0); buffer[4] = 45
            put(m, 2, at: 5); buffer[7] = 45
            put(d, 2, at: 8); buffer[10] = 84
            put(h, 2, at: 11); buffer[13] = 58
            put(mi, 2, at: 14); buffer[16] = 58
            put(s, 2, at: 17); buffer[19] = 46
            put(milli, 3, at: 20); buffer[23] = 90
            return 24
        }
    }

    /// Milliseconds since 1970, truncated toward negative infinity.
    public static func millis(_ date: Date) -> Int64 {
        let value = date.timeIntervalSince1970 * 1000
        let nearest = value.rounded()
        // Values a hair below a whole millisecond are floating-point noise from parsing, not a real truncation.
        return abs(value - nearest) < 1e-3 ? Int64(nearest) : Int64(value.rounded(.down))
    }

    /// Parses `yyyy-MM-ddTHH:mm:ss[.fraction](Z|±hh:mm)`; a space may replace the `T`.
    ///
    /// Returns `nil` for anything that is not a real instant: a day the month does not have (`2024-02-30`,
    /// `2023-02-29`), hour 24, minute or second 60 (leap seconds cannot be kept by `Date`), an offset beyond
    /// ±23:59. Nothing is rolled over into the next day or month.
    public static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { parse(utf8: $0) }
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    static func parse(utf8 chars: UnsafeBufferPointer<UInt8>) -> Date? {
        func num(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= chars.count else { return nil }
            var v = 0
            for c in chars[from..<from + count] {
                guard (48...57).contains(c) else { return nil }
                v = v * 10 + Int(c - 48)
            }
            return v
        }
        guard chars.count >= 19, let y = num(0, 4), chars[4] == 45, let mo = num(5, 2), chars[7] == 45,
              let d = num(8, 2), chars[10] == 84 || chars[10] == 32 || chars[10] == 116, let h = num(11, 2),
              chars[13] == 58, let mi = num(14, 2), chars[16] == 58, let s = num(17, 2),
              (1...12).contains(mo), d >= 1, d <= daysIn(month: mo, year: y), h < 24, mi < 60, s < 60
        else { return nil }
        var i = 19
        var fraction = 0.0
        if i < chars.count, chars[i] == 46 {
            i += 1
            var scale = 0.1
            let start = i
            while i < chars.count, (48...57).contains(chars[i]) {
                fraction += Double(chars[i] - 48) * scale
                scale /= 10
                i += 1
            }
            if i == start { return nil }
        }
        var offset = 0
        if i < chars.count {
            switch chars[i] {
            case 90, 122: i += 1
            case 43, 45:
                let sign = chars[i] == 43 ? 1 : -1
                guard let oh = num(i + 1, 2), oh < 24 else { return nil }
                var om = 0
                if i + 3 < chars.count, chars[i + 3] == 58, let m = num(i + 4, 2) { om = m; i += 6 }
                else if let m = num(i + 3, 2) { om = m; i += 5 }
                else { i += 3 }
                guard om < 60 else { return nil }
                offset = sign * (oh * 3600 + om * 60)
            default: return nil
            }
        } else {
            return nil
        }
        guard i == chars.count else { return nil }
        let days = daysFromCivil(y, mo, d)
        let secs = Double(days * 86400 + h * 3600 + mi * 60 + s - offset)
        // Round the fraction to whole milliseconds so formatting the result gives back what was parsed.
        return Date(timeIntervalSince1970: secs + (fraction * 1000).rounded() / 1000)
    }

    static func daysFromCivil(_ y0: Int, _ m: Int, _ d: Int) -> Int {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    static func civil(fromDays z0: Int64) -> (Int, Int, Int) {
        let z = Int(z0) + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp + (mp < 10 ? 3 : -9)
        return (m <= 2 ? y + 1 : y, m, d)
    }
}

// MARK: - Direct text <-> Value

/// Why ``Value/parse(jsonText:path:)`` failed: the text, or a typed form in it.
enum ValueParseFailure: Error {
    case json(JSONParseError)
    case typed(Value.ConversionError)
}

extension JSONWriter {
    /// Prints a value's neutral JSON form directly (the same bytes as `value.json` printed compactly).
    mutating func write(_ value: Value) {
        switch value {
        case .null: append("null")
        case .bool(let b): if b { append("true") } else { append("false") }
        case .int(let i): write(int: i)
        case .double(let d): write(double: d)
        case .string(let s): writeString(s)
        case .date(let d):
            append(#"{"__type":"Date","iso":""#)
            var iso = ISO8601.format(d)
            iso.withUTF8 { bytes.append(contentsOf: $0) }
            append(#""}"#)
        case .array(let items):
            bytes.append(UInt8(ascii: "["))
            var first = true
            for item in items {
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                write(item)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let o):
            bytes.append(UInt8(ascii: "{"))
            var first = true
            // Members sorted with their values (no second lookup of each key).
            for (key, item) in o.sorted(by: { $0.key < $1.key }) {
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                writeString(key)
                bytes.append(UInt8(ascii: ":"))
                write(item)
            }
            bytes.append(UInt8(ascii: "}"))
        case .bytes, .pointer, .geoPoint, .file:
            write(value.json, indent: 0)
        }
    }
}

extension JSONParser {
    /// Parses neutral JSON straight into a ``Value``: objects become `[String: Value]` as they are read; an object
    /// with a `__type` member is checked as a typed form.
    mutating func parseNeutralValue(depth: Int) throws(ValueParseFailure) -> Value {
        guard depth < 512 else { throw .json(error("nesting deeper than 512 levels")) }
        skipWhitespace()
        guard index < end else { throw .json(error("unexpected end of input")) }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            index += 1
            skipWhitespace()
            if index < end, bytes[index] == UInt8(ascii: "}") { index += 1; return .object([:]) }
            if let date = storedDate() { return .date(date) }
            // Plain objects go straight into one dictionary. Typed forms print `__type` first, so an object whose
            // first key is `__type` collects its (few) members in order to be checked as a typed form; a `__type`
            // met later is handled the same way from the dictionary.
            var object: [String: Value] = [:]
            var typed: [(key: String, value: Value)]?
            var first = true
            var sawType = false
            while true {
                skipWhitespace()
                guard index < end, bytes[index] == UInt8(ascii: "\"") else { throw .json(error("expected a key string")) }
                let keyOffset = index
                let key: String
                do { key = try parseString() } catch { throw .json(error) }
                skipWhitespace()
                guard index < end, bytes[index] == UInt8(ascii: ":") else { throw .json(error("expected ':'")) }
                index += 1
                let value: Value
                do { value = try parseNeutralValue(depth: depth + 1) } catch { throw Self.prefix(error, .key(key)) }
                // Most keys are not six bytes long, so most skip the comparison with `__type`.
                let isType = key.utf8.count == 6 && key == "__type"
                if first {
                    first = false
                    // `init(minimumCapacity:)` is specialized here; `reserveCapacity` was a generic call into the
                    // runtime, with a metadata lookup per object (`perf record` on `mbaas bench local`).
                    if isType { typed = [] } else { object = [String: Value](minimumCapacity: 8) }
                } else if isType {
                    sawType = true
                }
                let earlier: String?
                if typed != nil {
                    // Typed forms have a few members; more than that is no typed form, so the scan stays short.
                    guard typed!.count < 32 else {
                        throw Self.prefix(.json(JSONParseError(message: "too many members for a typed value", offset: keyOffset)), .key(key))
                    }
                    earlier = typed!.first(where: { $0.key == key })?.key
                    typed!.append((key, value))
                } else {
                    earlier = object.updateValue(value, forKey: key) != nil ? object[object.index(forKey: key)!].key : nil
                }
                if let earlier {
                    let e = JSONParseError(message: Self.repeatedName(earlier, key), offset: keyOffset)
                    throw Self.prefix(.json(e), .key(key))
                }
                skipWhitespace()
                guard index < end else { throw .json(error("unterminated object")) }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "}") { index += 1; break }
                throw .json(error("expected ',' or '}'"))
            }
            let members: [(key: String, value: Value)]
            if let typed {
                members = typed
            } else if sawType {
                members = object.map { ($0.key, $0.value) }
            } else {
                return .object(object)
            }
            let type = members.last(where: { $0.key == "__type" })!.value
            // The common typed form, a date, without building an object first.
            if members.count == 2, case .string("Date") = type,
               let iso = members.first(where: { $0.key == "iso" })?.value.stringValue, let date = ISO8601.parse(iso) {
                return .date(date)
            }
            // Any typed form: check it as `Value(json:)` does, from the (scalar) members already read.
            var typedObject = JSONObject(minimumCapacity: members.count)
            for (k, v) in members { typedObject.storage[k] = v.json }
            let value: Value?
            do { value = try Value.typed(type.json, typedObject) } catch { throw .typed(error) }
            guard let value else { throw .typed(Value.ConversionError(message: "unknown __type \(type.json.printed())")) }
            return value
        case UInt8(ascii: "["):
            index += 1
            var array: [Value] = []
            skipWhitespace()
            if index < end, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(array) }
            array.reserveCapacity(4)
            while true {
                do {
                    array.append(try parseNeutralValue(depth: depth + 1))
                } catch {
                    throw Self.prefix(error, .index(array.count))
                }
                skipWhitespace()
                guard index < end else { throw .json(error("unterminated array")) }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(array) }
                throw .json(error("expected ',' or ']'"))
            }
        case UInt8(ascii: "\""):
            do { return .string(try parseString()) } catch { throw .json(error) }
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            // Numbers and literals directly, not through a `JSON` value.
            do {
                switch try parseNumber() {
                case .int(let i): return .int(i)
                case .double(let d): return .double(d)
                default: return .null  // unreachable: parseNumber returns numbers
                }
            } catch { throw .json(error) }
        case UInt8(ascii: "t"):
            do { try expectLiteral("true") } catch { throw .json(error) }
            return .bool(true)
        case UInt8(ascii: "f"):
            do { try expectLiteral("false") } catch { throw .json(error) }
            return .bool(false)
        case UInt8(ascii: "n"):
            do { try expectLiteral("null") } catch { throw .json(error) }
            return .null
        default:
            // Anything else is an error; `parseValue` words it as for any JSON.
            do { _ = try parseValue(depth: depth) } catch { throw .json(error) }
            throw .json(error("unexpected value"))  // unreachable: parseValue throws here
        }
    }

    /// The members of a date exactly as ``JSONWriter`` prints it, after the `{`: `"__type":"Date","iso":"`.
    private static let storedDatePrefix = Array(#""__type":"Date","iso":""#.utf8)

    /// A date in the form the store prints (`{"__type":"Date","iso":"2024-03-31T23:59:59.123Z"}`, no spaces, no
    /// escapes), read in place without building its members: the index is just past `{` and moves past the `}`.
    /// `nil`, the index unchanged, for anything else (spaces, other members, an invalid date), which the general path
    /// reads and, where it is wrong, reports.
    mutating func storedDate() -> Date? {
        let prefix = Self.storedDatePrefix
        guard end - index > prefix.count + 2, bytes[index] == prefix[0] else { return nil }
        for i in 1..<prefix.count where bytes[index + i] != prefix[i] { return nil }
        let start = index + prefix.count
        var close = start
        while close < end, bytes[close] != UInt8(ascii: "\""), bytes[close] >= 0x20, bytes[close] < 0x7F, bytes[close] != UInt8(ascii: "\\") {
            close += 1
        }
        guard close + 1 < end, bytes[close] == UInt8(ascii: "\""), bytes[close + 1] == UInt8(ascii: "}"),
              let date = ISO8601.parse(utf8: UnsafeBufferPointer(rebasing: bytes[start..<close]))
        else { return nil }
        index = close + 2
        return date
    }

    static func prefix(_ failure: ValueParseFailure, _ segment: JSONPathSegment) -> ValueParseFailure {
        switch failure {
        case .json(let e): return .json(prefix(e, segment))
        case .typed(var e):
            if case .key(let k) = segment { e.path = "." + k + e.path } else { e.path = segment.text + e.path }
            return .typed(e)
        }
    }
}
