import Foundation

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
        case .object(let o): return .object(JSONObject(sorting: o.mapValues(\.json)))
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

    /// Reads a value from its neutral JSON form.
    ///
    /// An object with a `__type` member must be one of the typed forms; an unknown `__type`, or a typed form with
    /// a missing or mistyped member, is an ``MBaaSError`` of kind ``MBaaSError/Kind/invalidRequest`` whose message
    /// names the path (`path` is prefixed to it).
    public init(json: JSON, path: String = "$") throws(MBaaSError) {
        switch json {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .int(let i): self = .int(i)
        case .double(let d): self = .double(d)
        case .string(let s): self = .string(s)
        case .array(let a):
            var out: [Value] = []
            out.reserveCapacity(a.count)
            for (i, item) in a.enumerated() { out.append(try Value(json: item, path: "\(path)[\(i)]")) }
            self = .array(out)
        case .object(let o):
            if let type = o["__type"] {
                self = try Value.typed(type, o, path: path)
            } else {
                var out: [String: Value] = [:]
                for (k, v) in o { out[k] = try Value(json: v, path: "\(path).\(k)") }
                self = .object(out)
            }
        }
    }

    private static func typed(_ type: JSON, _ o: JSONObject, path: String) throws(MBaaSError) -> Value {
        func string(_ key: String) throws(MBaaSError) -> String {
            guard let s = o[key]?.stringValue else {
                throw MBaaSError(.invalidRequest, "\(path): \(type.stringValue ?? "?") needs a string '\(key)'")
            }
            return s
        }
        func number(_ key: String) throws(MBaaSError) -> Double {
            guard let d = o[key]?.doubleValue else {
                throw MBaaSError(.invalidRequest, "\(path): \(type.stringValue ?? "?") needs a number '\(key)'")
            }
            return d
        }
        switch type.stringValue {
        case "Date":
            let iso = try string("iso")
            guard let date = ISO8601.parse(iso) else {
                throw MBaaSError(.invalidRequest, "\(path): '\(iso)' is not an ISO-8601 date")
            }
            return .date(date)
        case "Bytes":
            let b64 = try string("base64")
            guard let data = Data(base64Encoded: b64) else {
                throw MBaaSError(.invalidRequest, "\(path): Bytes.base64 is not valid base64")
            }
            return .bytes(data)
        case "Pointer":
            return .pointer(Pointer(className: try string("className"), objectId: try string("objectId")))
        case "GeoPoint":
            let lat = try number("latitude"), lon = try number("longitude")
            guard (-90...90).contains(lat), (-180...180).contains(lon) else {
                throw MBaaSError(.invalidRequest, "\(path): GeoPoint out of range (\(lat), \(lon))")
            }
            return .geoPoint(GeoPoint(latitude: lat, longitude: lon))
        case "File":
            var attachment: FileAttachment?
            if let a = o["attachment"]?.objectValue {
                guard let c = a["className"]?.stringValue, let id = a["objectId"]?.stringValue,
                      let f = a["field"]?.stringValue
                else { throw MBaaSError(.invalidRequest, "\(path): File.attachment needs className, objectId, field") }
                attachment = FileAttachment(className: c, objectId: id, field: f)
            }
            return .file(
                FileReference(
                    name: try string("name"), url: o["url"]?.stringValue, contentType: o["contentType"]?.stringValue,
                    size: o["size"]?.intValue, attachment: attachment))
        default:
            throw MBaaSError(.invalidRequest, "\(path): unknown __type \(type.printed())")
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
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", y, m, d, h, mi, s, milli)
    }

    /// Milliseconds since 1970, truncated toward negative infinity.
    public static func millis(_ date: Date) -> Int64 {
        let value = date.timeIntervalSince1970 * 1000
        let nearest = value.rounded()
        // Values a hair below a whole millisecond are floating-point noise from parsing, not a real truncation.
        return abs(value - nearest) < 1e-3 ? Int64(nearest) : Int64(value.rounded(.down))
    }

    /// Parses `yyyy-MM-ddTHH:mm:ss[.fraction](Z|±hh:mm)`; a space may replace the `T`.
    public static func parse(_ text: String) -> Date? {
        let chars = Array(text.utf8)
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
              (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, s < 61
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
                guard let oh = num(i + 1, 2) else { return nil }
                var om = 0
                if i + 3 < chars.count, chars[i + 3] == 58, let m = num(i + 4, 2) { om = m; i += 6 }
                else if let m = num(i + 3, 2) { om = m; i += 5 }
                else { i += 3 }
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
