public import Foundation
public import MBaaSCore

/// An HTTP body as a cassette stores it: readable where it can be, exact where it must be.
///
/// # Contract
/// - ``from(data:contentType:)`` chooses the form: no bytes are ``none``; a JSON media type (`application/json`,
///   `*/*+json`) whose bytes parse is ``json(_:)`` (key order and int/double kept by the core ``JSON``);
///   `multipart/*` that decodes is ``multipart(_:)`` (one ``RecordedPart`` per part, boundary dropped); bytes that
///   are valid UTF-8 and round-trip exactly are ``text(_:)``; anything else is ``base64(_:)``. A body (or part) of
///   64 KiB or more that is one short unit (at most 256 bytes) repeated is ``repeated(_:times:)``, so a
///   megabyte upload stays a line in the cassette.
/// - ``data(boundary:)`` produces the wire bytes again. Text and base64 are byte-exact; JSON is re-printed compactly
///   (semantically equal, whitespace may differ); multipart is re-encoded with the given boundary.
public enum RecordedBody: Sendable, Hashable {
    case none
    case json(JSON)
    case text(String)
    case base64(Data)
    case multipart([RecordedPart])
    /// `unit` repeated `times` times (large, regular payloads).
    case repeated(Data, times: Int)

    /// Bodies at least this long are checked for a repeated unit.
    static let repetitionThreshold = 65_536

    /// The stored form of `data` sent or received with `contentType` (see the type's contract).
    public static func from(data: Data?, contentType: String?) -> RecordedBody {
        guard let data, !data.isEmpty else { return .none }
        let media = contentType.map(mediaType) ?? ""
        if isJSONMediaType(media), let json = try? JSON.parse(data) { return .json(json) }
        if media.hasPrefix("multipart/"), let contentType,
           let form = try? MultipartForm.decode(data, contentType: contentType) {
            return .multipart(form.parts.map(RecordedPart.init(part:)))
        }
        if let (unit, times) = repetition(data) { return .repeated(unit, times: times) }
        if let text = losslessText(data) { return .text(text) }
        return .base64(data)
    }

    /// The shortest unit (at most 256 bytes) that `data` repeats exactly, for bodies of 64 KiB or more.
    static func repetition(_ data: Data) -> (Data, Int)? {
        guard data.count >= repetitionThreshold else { return nil }
        let bytes = [UInt8](data)
        for period in 1...256 where bytes.count % period == 0 {
            var i = period
            while i < bytes.count, bytes[i] == bytes[i - period] { i += 1 }
            if i == bytes.count { return (Data(bytes[0..<period]), bytes.count / period) }
        }
        return nil
    }

    /// The wire bytes of the body; `boundary` is used for ``multipart(_:)`` only.
    public func data(boundary: String = "mbaas-replay-boundary") -> Data {
        switch self {
        case .none: return Data()
        case .json(let json): return json.data()
        case .text(let text): return Data(text.utf8)
        case .base64(let data): return data
        case .multipart(let parts):
            return MultipartForm(parts: parts.map(\.formPart), boundary: boundary).encoded()
        case .repeated(let unit, let times):
            var out = Data(capacity: unit.count * times)
            for _ in 0..<times { out.append(unit) }
            return out
        }
    }

    public var isNone: Bool { if case .none = self { true } else { false } }

    /// The JSON form used inside a cassette: `null`, `{"json": …}`, `{"text": "…"}`, `{"base64": "…"}`,
    /// `{"multipart": [part, …]}` or `{"repeated": {"text"|"base64": unit, "times": n}}`.
    public var json: JSON {
        switch self {
        case .none: return .null
        case .json(let json): return .object(["json": json])
        case .text(let text): return .object(["text": .string(text)])
        case .base64(let data): return .object(["base64": .string(data.base64EncodedString())])
        case .multipart(let parts): return .object(["multipart": .array(parts.map(\.json))])
        case .repeated(let unit, let times):
            let text = RecordedBody.losslessText(unit)
            let form: JSON = .string(text ?? unit.base64EncodedString())
            let key = text == nil ? "base64" : "text"
            return .object(["repeated": .object([key: form, "times": .int(Int64(times))])])
        }
    }

    /// Reads the cassette form written by ``json``.
    public init(json: JSON, at path: String = "body") throws(MBaaSError) {
        if json.isNull { self = .none; return }
        guard let object = json.objectValue, object.count == 1, let key = object.keys.first, let value = object[key]
        else { throw CassetteFormatError.at(path, "expected null or an object with one of json, text, base64, multipart, repeated") }
        switch key {
        case "json": self = .json(value)
        case "text":
            guard let text = value.stringValue else { throw CassetteFormatError.at(path + ".text", "expected a string") }
            self = .text(text)
        case "base64":
            guard let text = value.stringValue, let data = Data(base64Encoded: text) else {
                throw CassetteFormatError.at(path + ".base64", "expected a base64 string")
            }
            self = .base64(data)
        case "multipart":
            guard let items = value.arrayValue else { throw CassetteFormatError.at(path + ".multipart", "expected an array") }
            var parts: [RecordedPart] = []
            for (i, item) in items.enumerated() { parts.append(try RecordedPart(json: item, at: "\(path).multipart[\(i)]")) }
            self = .multipart(parts)
        case "repeated":
            guard let o = value.objectValue, let times = o["times"]?.intValue, times > 0 else {
                throw CassetteFormatError.at(path + ".repeated", "expected {\"text\" or \"base64\": unit, \"times\": n > 0}")
            }
            if let text = o["text"]?.stringValue, !text.isEmpty {
                self = .repeated(Data(text.utf8), times: Int(times))
            } else if let b = o["base64"]?.stringValue, let unit = Data(base64Encoded: b), !unit.isEmpty {
                self = .repeated(unit, times: Int(times))
            } else {
                throw CassetteFormatError.at(path + ".repeated", "expected a non-empty text or base64 unit")
            }
        default:
            throw CassetteFormatError.at(path, "unknown body form '\(key)' (expected json, text, base64, multipart or repeated)")
        }
    }

    // MARK: Helpers

    /// `application/json; charset=utf-8` -> `application/json`.
    static func mediaType(_ contentType: String) -> String {
        contentType.split(separator: ";", maxSplits: 1).first.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        } ?? ""
    }

    static func isJSONMediaType(_ media: String) -> Bool {
        media == "application/json" || media.hasSuffix("+json") || media == "text/json"
    }

    /// The UTF-8 text of `data` if decoding and re-encoding gives the same bytes.
    static func losslessText(_ data: Data) -> String? {
        guard let text = String(data: data, encoding: .utf8), Data(text.utf8) == data else { return nil }
        return text
    }
}

/// One part of a recorded `multipart/form-data` body.
public struct RecordedPart: Sendable, Hashable {
    public var name: String
    public var filename: String?
    public var contentType: String?
    /// The part's content: ``RecordedBody/json(_:)``, ``RecordedBody/text(_:)`` or ``RecordedBody/base64(_:)``.
    public var body: RecordedBody

    public init(name: String, filename: String? = nil, contentType: String? = nil, body: RecordedBody) {
        self.name = name
        self.filename = filename
        self.contentType = contentType
        self.body = body
    }

    /// A part decoded by ``MultipartForm``. Parts without a content type and with UTF-8 content are text.
    public init(part: MultipartForm.Part) {
        var body = RecordedBody.from(data: part.data, contentType: part.contentType)
        if case .multipart = body, let text = RecordedBody.losslessText(part.data) { body = .text(text) }
        if part.data.isEmpty { body = .text("") }
        self.init(name: part.name, filename: part.filename, contentType: part.contentType, body: body)
    }

    public var formPart: MultipartForm.Part {
        MultipartForm.Part(name: name, filename: filename, contentType: contentType, data: body.data())
    }

    public var json: JSON {
        var o: JSONObject = ["name": .string(name)]
        if let filename { o["filename"] = .string(filename) }
        if let contentType { o["contentType"] = .string(contentType) }
        o["body"] = body.json
        return .object(o)
    }

    public init(json: JSON, at path: String) throws(MBaaSError) {
        guard let o = json.objectValue else { throw CassetteFormatError.at(path, "expected an object") }
        guard let name = o["name"]?.stringValue else { throw CassetteFormatError.at(path + ".name", "expected a string") }
        self.init(name: name, filename: o["filename"]?.stringValue, contentType: o["contentType"]?.stringValue,
                  body: try RecordedBody(json: o["body"] ?? .null, at: path + ".body"))
    }
}

/// Builds the errors thrown for malformed cassettes.
enum CassetteFormatError {
    static func at(_ path: String, _ message: String) -> MBaaSError {
        MBaaSError(.decoding, "cassette \(path): \(message)")
    }
}
