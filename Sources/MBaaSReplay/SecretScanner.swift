public import Foundation
public import MBaaSCore

/// Finds secret-looking strings in cassettes: the last line of defence before a secret is committed.
///
/// # Contract
/// A string is reported when it contains
/// - a **JWT** (`eyJ…` header, `.`, payload);
/// - **`Bearer <token>`** where the token is not a placeholder;
/// - a **password** value that is not a placeholder: the value of a JSON key or query/form parameter whose name
///   contains `password` or is `client_secret`/`secret`, or `password":"…` / `password=…` inside text;
/// - a **long key**: a run of 32+ hex characters, or of 32+ base64 characters mixing upper case, lower case and
///   digits, outside values under `base64` (binary bodies) and validator keys (`etag`, `md5`, `sha1`, `sha256`,
///   `hash`, `checksum`, `digest`), outside `Basic` credentials that decode to placeholders, and outside request
///   headers the interaction pins (``RecordedRequest/pinnedHeaders``: a signature derived from a dummy key, kept
///   on purpose so replay compares it; JWTs, bearer tokens and passwords are still reported there).
/// Placeholders (`<NAME>`) are never reported. Findings show only a prefix of the match.
public enum SecretScanner {
    public struct Finding: Sendable, Hashable, CustomStringConvertible {
        /// The file, relative to the scanned directory (nil for in-memory scans).
        public var file: String?
        /// Where in the document: a JSON path such as `$.interactions[0].request.headers.Authorization`.
        public var location: String
        /// What was found: `JWT`, `bearer token`, `password`, `long key`.
        public var kind: String
        /// A prefix of the match, never the whole secret.
        public var excerpt: String

        public var description: String {
            "\(file.map { $0 + ": " } ?? "")\(location): \(kind) \(excerpt)"
        }
    }

    /// Keys whose values are checksums, encodings or media types (a multipart `boundary=` is random, not secret).
    static let validatorKeys: Set<String> = [
        "etag", "md5", "sha1", "sha256", "hash", "checksum", "digest", "base64", "content-type",
    ]

    /// Scans every `*.json` file under `directory` (recursively). A missing directory has no findings.
    public static func scanCassettes(under directory: URL) throws -> [Finding] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue
        else { return [] }
        var findings: [Finding] = []
        for file in cassetteFiles(under: directory) {
            let data = try Data(contentsOf: file)
            let relative = String(file.resolvingSymlinksInPath().path.dropFirst(directory.resolvingSymlinksInPath().path.count))
                .trimmingCharacters(in: CharacterSet(charactersIn: "/"))
            findings += scan(data: data).map { var f = $0; f.file = relative; return f }
        }
        return findings
    }

    /// The `*.json` files under a directory, sorted.
    public static func cassetteFiles(under directory: URL) -> [URL] {
        guard let e = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil) else { return [] }
        return e.compactMap { $0 as? URL }.filter { $0.pathExtension == "json" }.sorted { $0.path < $1.path }
    }

    /// Scans a file's bytes: as JSON when it parses (with key context), else as text line by line.
    public static func scan(data: Data) -> [Finding] {
        if let json = try? JSON.parse(data) { return scan(json: json) }
        let text = String(decoding: data, as: UTF8.self)
        return text.components(separatedBy: "\n").enumerated().flatMap { i, line in
            scan(string: line, key: nil, location: "line \(i + 1)")
        }
    }

    /// Scans a JSON document, checking every key and string value.
    public static func scan(json: JSON, location: String = "$") -> [Finding] {
        var out: [Finding] = []
        walk(json, key: nil, path: location, into: &out)
        return out
    }

    private static func walk(_ json: JSON, key: String?, path: String, into out: inout [Finding]) {
        switch json {
        case .string(let s): out += scan(string: s, key: key, location: path)
        case .array(let items):
            for (i, item) in items.enumerated() { walk(item, key: key, path: "\(path)[\(i)]", into: &out) }
        case .object(let o):
            // A query item {"name": "password", "value": "..."} names its value.
            let itemName = o["name"]?.stringValue
            let pinned = Set((o["pinnedHeaders"]?.arrayValue ?? []).compactMap { $0.stringValue?.lowercased() })
            for (k, v) in o {
                if k == "headers", !pinned.isEmpty, let headers = v.objectValue {
                    let p = RequestMatcher.jsonPath(path, k)
                    for (name, value) in headers {
                        let hp = RequestMatcher.jsonPath(p, name)
                        out += scan(string: name, key: nil, location: hp + " (key)")
                        // A pinned value is deliberately kept: skip only the long-key heuristic.
                        walk(value, key: pinned.contains(name.lowercased()) ? "digest" : name, path: hp, into: &out)
                    }
                    continue
                }
                let p = RequestMatcher.jsonPath(path, k)
                out += scan(string: k, key: nil, location: p + " (key)")
                // {"name": "password", "value": …} (query item) or {"name": "password", "body": {"text": …}} (part).
                var effectiveKey = k
                if let itemName, k == "value" || k == "body" || k == "json" { effectiveKey = itemName }
                else if let key, k == "text" || k == "json", o.count == 1 { effectiveKey = key }
                walk(v, key: effectiveKey, path: p, into: &out)
            }
        default: break
        }
    }

    /// Scans one string; `key` is the JSON key or parameter name it is the value of, if any.
    public static func scan(string s: String, key: String?, location: String) -> [Finding] {
        var out: [Finding] = []
        func report(_ kind: String, _ match: String) {
            out.append(Finding(file: nil, location: location, kind: kind, excerpt: redact(match)))
        }
        let lowerKey = key?.lowercased() ?? ""
        // A request path is scanned segment by segment: `/2013-09-01/classes/Memo/<id>` is not one long key. So is a
        // relative URL where a URL is expected (a `Location` header, Salesforce's `nextRecordsUrl`).
        if ["path", "location", "nextrecordsurl", "url"].contains(lowerKey), s.hasPrefix("/"), !s.hasPrefix("//") {
            return s.split(separator: "/").flatMap { scan(string: String($0), key: nil, location: location) }
        }
        // So is a URL (a `Location` header, a file's `url`): its path segments are ids, not one long key; its query
        // is scanned parameter by parameter, so `?token=…` is still reported.
        if s.hasPrefix("http://") || s.hasPrefix("https://"), let c = URLComponents(string: s) {
            var found = (c.percentEncodedPath).split(separator: "/").flatMap { scan(string: String($0), key: nil, location: location) }
            for item in c.queryItems ?? [] { found += scan(string: item.value ?? "", key: item.name, location: location) }
            return found
        }
        if isSecretKey(lowerKey, value: s), !isPlaceholderValue(s) { report("password", s) }
        for m in matches(#"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"#, in: s) { report("JWT", m) }
        for m in matches(#"(?i)bearer[ \t]+[^\s"'<,;][^\s"',;]{5,}"#, in: s) { report("bearer token", m) }
        for m in matches(#"(?i)(password|passwd|client_secret)\\?"?\s*(\\?"\s*:\s*\\?"|=)\s*[^\s"\\&<,}]+"#, in: s) {
            report("password", m)
        }
        if !validatorKeys.contains(lowerKey), !isPlaceholderBasic(s) {
            for m in matches(#"[A-Za-z0-9+/=_-]{32,}"#, in: s) where isKeyLike(m) { report("long key", m) }
        }
        return out
    }

    /// Whether the value of `key` is a credential. Any non-empty `password`/`client_secret` value is; a bare
    /// `secret` key is common as an ordinary record field name, so its value counts only when it is long enough
    /// (8+ characters) to be a credential rather than a word like `"mine"`.
    static func isSecretKey(_ key: String, value: String) -> Bool {
        guard !value.isEmpty else { return false }
        if key.contains("password") || key == "client_secret" || key == "clientsecret" { return true }
        return key == "secret" && value.count >= 8
    }

    static func isPlaceholderValue(_ s: String) -> Bool {
        s.range(of: "^(\(Cassette.placeholderPattern))+$", options: .regularExpression) != nil
    }

    static func isPlaceholderBasic(_ s: String) -> Bool {
        guard let basic = BasicCredentials(header: s) else { return false }
        return basic.decoded.replacingOccurrences(of: Cassette.placeholderPattern, with: "", options: .regularExpression)
            .trimmingCharacters(in: CharacterSet(charactersIn: ":")).isEmpty
    }

    /// A run looks like a key when one of its `-`/`_`/`.`-separated segments is 32+ characters and is hex, or mixes
    /// upper case, lower case and digits (random base64). Slugs, UUIDs and ISO dates have short segments.
    static func isKeyLike(_ run: String) -> Bool {
        for segment in run.split(whereSeparator: { $0 == "-" || $0 == "_" || $0 == "." }) where segment.count >= 32 {
            let body = segment.trimmingCharacters(in: CharacterSet(charactersIn: "="))
            if body.allSatisfy(\.isHexDigit) { return true }
            if body.contains(where: \.isUppercase), body.contains(where: \.isLowercase), body.contains(where: \.isNumber) {
                return true
            }
        }
        return false
    }

    static func matches(_ pattern: String, in s: String) -> [String] {
        var out: [String] = []
        var range = s.startIndex..<s.endIndex
        while let r = s.range(of: pattern, options: .regularExpression, range: range) {
            out.append(String(s[r]))
            if r.isEmpty { break }
            range = r.upperBound..<s.endIndex
        }
        return out
    }

    static func redact(_ s: String) -> String {
        s.count <= 8 ? "\"\(s.prefix(2))…\" (\(s.count) chars)" : "\"\(s.prefix(8))…\" (\(s.count) chars)"
    }
}
