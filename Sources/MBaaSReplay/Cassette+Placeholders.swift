import Foundation
import MBaaSCore

/// Where a string sits in a cassette; scrubbing and substitution encode values to suit it.
enum StringSite: Sendable, Equatable {
    /// The percent-encoded request path.
    case path
    /// A decoded query parameter value (or name).
    case query
    /// A header value; the lowercased header name.
    case header(String)
    /// A string (value or key) inside a JSON body.
    case json
    /// A text body with this content type (lowercased media type, "" when unknown).
    case text(String)
    /// The backend URL.
    case backendURL
    /// A cassette variable.
    case variable
}

extension Cassette {
    /// Placeholders are written `<NAME>`: an upper-case letter, then upper-case letters, digits and `_`.
    public static let placeholderPattern = "<[A-Z][A-Z0-9_]*>"

    /// The value a placeholder gets on replay when no substitution names it: `<APPLICATION_KEY>` ->
    /// `replay-application-key`, `<TOKEN_1>` -> `replay-token-1`. Deterministic and URL-safe.
    public static func dummyValue(forPlaceholder placeholder: String) -> String {
        let name = placeholder.trimmingCharacters(in: CharacterSet(charactersIn: "<>"))
        return "replay-" + name.lowercased().replacingOccurrences(of: "_", with: "-")
    }

    /// `NAME` or `<NAME>` -> `<NAME>`.
    public static func normalizedPlaceholder(_ name: String) -> String {
        name.hasPrefix("<") && name.hasSuffix(">") ? name : "<\(name)>"
    }

    /// Every placeholder that occurs in the cassette, sorted.
    public var placeholders: [String] {
        var found = Set<String>()
        _ = mapStrings { text, site in
            found.formUnion(Cassette.findPlaceholders(in: text))
            if case .header("authorization") = site, let basic = BasicCredentials(header: text) {
                found.formUnion(Cassette.findPlaceholders(in: basic.decoded))
            }
            return text
        }
        return found.sorted()
    }

    static func findPlaceholders(in text: String) -> [String] {
        guard text.contains("<") else { return [] }
        var out: [String] = []
        var search = text.startIndex..<text.endIndex
        while let r = text.range(of: placeholderPattern, options: .regularExpression, range: search) {
            out.append(String(text[r]))
            search = r.upperBound..<text.endIndex
        }
        return out
    }

    /// The cassette with each placeholder replaced: by `substitutions[placeholder]` (keys may be given as `NAME` or
    /// `<NAME>`), else by ``dummyValue(forPlaceholder:)``. Values are encoded to suit where they land:
    /// percent-encoded in the path and backend URL, form-encoded in `application/x-www-form-urlencoded` bodies,
    /// JSON-escaped in text bodies that are JSON documents, raw elsewhere; inside `Authorization: Basic` the
    /// credentials are decoded, substituted and re-encoded.
    public func substituting(_ substitutions: [String: String] = [:]) -> Cassette {
        var table: [String: String] = [:]
        for p in placeholders { table[p] = Cassette.dummyValue(forPlaceholder: p) }
        for (k, v) in substitutions { table[Cassette.normalizedPlaceholder(k)] = v }
        guard !table.isEmpty else { return self }
        return mapStrings { text, site in Cassette.substitute(text, site: site, table: table) }
    }

    static func substitute(_ text: String, site: StringSite, table: [String: String]) -> String {
        if case .header(let name) = site, name == "authorization", let basic = BasicCredentials(header: text),
           basic.decoded.contains("<") {
            return BasicCredentials.header(for: substitute(basic.decoded, site: .query, table: table))
        }
        guard text.contains("<") else { return text }
        // In a text body that is a JSON document, placeholders sit inside JSON string literals.
        var isJSONText = false
        if case .text = site, RequestMatcher.structuredJSON(text) != nil { isJSONText = true }
        var out = text
        for (placeholder, value) in table.sorted(by: { $0.key.count > $1.key.count }) where out.contains(placeholder) {
            let encoded: String
            switch site {
            case .path, .backendURL: encoded = percentEncode(value)
            case .text(let media) where media == "application/x-www-form-urlencoded": encoded = formEncode(value)
            case .text where isJSONText: encoded = String(JSON.string(value).printed().dropFirst().dropLast())
            default: encoded = value
            }
            out = out.replacingOccurrences(of: placeholder, with: encoded)
        }
        return out
    }

    /// The cassette with `transform` applied to every string that may carry a secret or a placeholder: paths,
    /// query names and values, header values, JSON strings and keys, text bodies and text parts, the backend URL and
    /// variable values. Base64 bodies are left alone.
    func mapStrings(_ transform: (String, StringSite) -> String) -> Cassette {
        var copy = self
        copy.backendURL = backendURL.map { transform($0, .backendURL) }
        copy.variables = variables.mapValues { transform($0, .variable) }
        copy.interactions = interactions.map { interaction in
            var i = interaction
            i.request = i.request.mapStrings(transform)
            i.response = i.response.mapStrings(transform)
            return i
        }
        return copy
    }
}

extension RecordedRequest {
    func mapStrings(_ transform: (String, StringSite) -> String) -> RecordedRequest {
        var r = self
        r.path = transform(path, .path)
        r.query = query.map { (transform($0.name, .query), transform($0.value, .query)) }
        r.headers = headers.mapValues(transform)
        r.body = body.mapStrings(contentType: headers["Content-Type"], transform)
        return r
    }
}

extension RecordedResponse {
    func mapStrings(_ transform: (String, StringSite) -> String) -> RecordedResponse {
        var r = self
        r.headers = headers.mapValues(transform)
        r.body = body.mapStrings(contentType: headers["Content-Type"], transform)
        return r
    }
}

extension HTTPFields {
    func mapValues(_ transform: (String, StringSite) -> String) -> HTTPFields {
        HTTPFields(map { HTTPField(name: $0.name, value: transform($0.value, .header($0.name.canonicalName))) })
    }
}

extension RecordedBody {
    func mapStrings(contentType: String?, _ transform: (String, StringSite) -> String) -> RecordedBody {
        switch self {
        case .none, .base64, .repeated: return self
        case .json(let json): return .json(json.mapStrings { transform($0, .json) })
        case .text(let text): return .text(transform(text, .text(contentType.map(RecordedBody.mediaType) ?? "")))
        case .multipart(let parts):
            return .multipart(parts.map { part in
                var p = part
                p.filename = part.filename.map { transform($0, .query) }
                p.body = part.body.mapStrings(contentType: part.contentType, transform)
                return p
            })
        }
    }
}

extension JSON {
    /// The document with `transform` applied to every string value and object key.
    func mapStrings(_ transform: (String) -> String) -> JSON {
        switch self {
        case .string(let s): return .string(transform(s))
        case .array(let items): return .array(items.map { $0.mapStrings(transform) })
        case .object(let o): return .object(JSONObject(o.map { (transform($0.key), $0.value.mapStrings(transform)) }))
        default: return self
        }
    }
}

/// `application/x-www-form-urlencoded` encoding of one value: unreserved characters kept, space as `+`.
func formEncode(_ s: String) -> String {
    percentEncode(s).replacingOccurrences(of: "%20", with: "+")
}

/// The `user:password` inside an `Authorization: Basic …` value.
struct BasicCredentials {
    var decoded: String

    init?(header: String) {
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "basic",
              let data = Data(base64Encoded: String(parts[1]).trimmingCharacters(in: .whitespaces)),
              let text = String(data: data, encoding: .utf8) else { return nil }
        decoded = text
    }

    static func header(for credentials: String) -> String { "Basic " + Data(credentials.utf8).base64EncodedString() }
}
