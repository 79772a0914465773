import Foundation
public import MBaaSCore

/// Replaces secrets in a recording by placeholders before anything is written.
///
/// Which headers and fields hold secrets is the adapter's knowledge: build the scrubber from its
/// ``WireProfile`` (`Scrubber(profile: factory.wireProfile, secrets: …)`). The plain initializer's defaults are
/// ``WireProfile/generic`` (standard HTTP names only).
///
/// # Contract
/// - **Known secrets** (`secrets`: application keys, client keys, passwords the caller knows) are replaced by
///   their placeholder.
/// - **Learned secrets**: string values under ``tokenKeys`` (session and access tokens, typically in login
///   responses) become `<TOKEN_1>`, `<TOKEN_2>`…; values under ``secretKeys`` become `<PASSWORD_n>` (keys
///   containing "password") or `<SECRET_n>`, wherever they appear: JSON bodies (requests and responses), query
///   parameters and form fields. The token of `Authorization: Bearer X` becomes a `<TOKEN_n>`; in
///   `Authorization: Basic` an unknown user becomes `<BASIC_USER>` and an unknown password a `<PASSWORD_n>` (list
///   constant, non-secret parts in `secrets` if the replaying client must send them verbatim); any other value of a header in
///   ``secretHeaders`` becomes a placeholder named after the header (`X-Vendor-App-Key` ->
///   `<X_VENDOR_APP_KEY>`). The password of a `user:secret@` backend URL becomes `<BACKEND_SECRET>`.
///   Learning follows the order of the interactions, so numbering is deterministic.
/// - Every secret is then replaced **everywhere** (paths, query names and values, header values, JSON strings and
///   keys, text bodies, multipart text parts, the backend URL, variables) in each of its forms: raw,
///   percent-encoded (`%20` and `+` for spaces, upper- and lower-case hex, strict and lenient character sets),
///   JSON-escaped (`\"`, `\/`, `\uXXXX`) and base64; inside `Authorization: Basic` the credentials are decoded,
///   scrubbed and re-encoded.
/// - Values shorter than ``minimumLength`` are never learned (a one-letter "token" would rewrite half the file).
/// - Base64 (binary) bodies are not inspected.
/// - Placeholders are restored on replay by ``Cassette/substituting(_:)``.
public struct Scrubber: Sendable {
    /// Header names (any case) whose values are credentials: those of ``WireProfile/generic``. An adapter's own
    /// come from its profile (``init(profile:secrets:minimumLength:)``).
    public static let defaultSecretHeaders: Set<String> = WireProfile.generic.secretHeaders

    /// JSON keys, query and form parameter names whose string values are session or access tokens: those of
    /// ``WireProfile/generic``.
    public static let defaultTokenKeys: Set<String> = WireProfile.generic.tokenFields

    /// JSON keys, query and form parameter names whose string values are passwords or other secrets: those of
    /// ``WireProfile/generic`` (a bare `secret` is not among them; see ``WireProfile/secretFields``).
    public static let defaultSecretKeys: Set<String> = WireProfile.generic.secretFields

    public var secrets: [(placeholder: String, value: String)]
    public var secretHeaders: Set<String>
    public var tokenKeys: Set<String>
    public var secretKeys: Set<String>
    public var minimumLength: Int

    /// - Parameter secrets: pairs of placeholder (`<APPLICATION_KEY>` or `APPLICATION_KEY`) and secret value.
    public init(
        secrets: [(placeholder: String, value: String)] = [], secretHeaders: Set<String> = Scrubber.defaultSecretHeaders,
        tokenKeys: Set<String> = Scrubber.defaultTokenKeys, secretKeys: Set<String> = Scrubber.defaultSecretKeys,
        minimumLength: Int = 4
    ) {
        self.secrets = secrets.filter { !$0.value.isEmpty }.map { (Cassette.normalizedPlaceholder($0.placeholder), $0.value) }
        self.secretHeaders = secretHeaders
        self.tokenKeys = tokenKeys
        self.secretKeys = secretKeys
        self.minimumLength = minimumLength
    }

    /// A scrubber for an adapter's traffic: the profile's ``WireProfile/secretHeaders``,
    /// ``WireProfile/tokenFields`` and ``WireProfile/secretFields`` (usually `factory.wireProfile`).
    /// - Parameter secrets: pairs of placeholder (`<APPLICATION_KEY>` or `APPLICATION_KEY`) and secret value.
    public init(profile: WireProfile, secrets: [(placeholder: String, value: String)] = [], minimumLength: Int = 4) {
        self.init(secrets: secrets, secretHeaders: profile.secretHeaders, tokenKeys: profile.tokenFields,
                  secretKeys: profile.secretFields, minimumLength: minimumLength)
    }

    /// The cassette with every known and learned secret replaced by its placeholder (see the type's contract).
    public func scrub(_ cassette: Cassette) -> Cassette {
        let table = learn(cassette)
        let replacements = Scrubber.replacements(for: table)
        var scrubbed = cassette.mapStrings { text, site in
            Scrubber.apply(replacements, to: text, site: site)
        }
        // A secret header whose value learning could not name (empty, too short) is still never written.
        let secretNames = Set(secretHeaders.map { $0.lowercased() })
        scrubbed = scrubbed.mapStrings { text, site in
            guard case .header(let name) = site, secretNames.contains(name), !text.isEmpty,
                  !Scrubber.isPlaceholderOnly(text, header: name) else { return text }
            return "<REDACTED>"
        }
        return scrubbed
    }

    /// The secrets this scrubber would replace in `cassette`: known ones first, then learned ones in order.
    public func secretTable(for cassette: Cassette) -> [(placeholder: String, value: String)] { learn(cassette) }

    // MARK: Learning

    private func learn(_ cassette: Cassette) -> [(placeholder: String, value: String)] {
        var table = secrets
        var counters: [String: Int] = [:]
        let tokenKeys = Set(self.tokenKeys.map { $0.lowercased() })
        let secretKeys = Set(self.secretKeys.map { $0.lowercased() })
        let secretHeaders = Set(self.secretHeaders.map { $0.lowercased() })

        func known(_ value: String) -> Bool { table.contains { $0.value == value } }
        func add(_ value: String, family: String, numbered: Bool = true) {
            guard value.count >= minimumLength, !known(value), !isPlaceholder(value) else { return }
            counters[family, default: 0] += 1
            let n = counters[family]!
            var name = numbered ? "<\(family)_\(n)>" : (n == 1 ? "<\(family)>" : "<\(family)_\(n)>")
            while table.contains(where: { $0.placeholder == name }) {
                counters[family, default: 0] += 1
                name = "<\(family)_\(counters[family]!)>"
            }
            table.append((name, value))
        }
        func keyed(_ key: String, _ value: String) {
            let k = key.lowercased()
            if tokenKeys.contains(k) { add(value, family: "TOKEN") }
            else if secretKeys.contains(k) { add(value, family: k.contains("password") ? "PASSWORD" : "SECRET") }
        }
        func walk(_ json: JSON) {
            switch json {
            case .object(let o):
                for (k, v) in o {
                    if let s = v.stringValue { keyed(k, s) } else { walk(v) }
                }
            case .array(let items): items.forEach(walk)
            default: break
            }
        }
        func scanBody(_ body: RecordedBody, contentType: String?) {
            switch body {
            case .json(let j): walk(j)
            case .text(let t):
                if RecordedBody.mediaType(contentType ?? "") == "application/x-www-form-urlencoded" {
                    for f in RequestMatcher.parseForm(t) { keyed(f.name, f.value) }
                } else if let j = RequestMatcher.structuredJSON(t) { walk(j) }
            case .multipart(let parts):
                for p in parts {
                    if case .text(let t) = p.body, p.filename == nil { keyed(p.name, t) }
                    scanBody(p.body, contentType: p.contentType)
                }
            case .none, .base64, .repeated: break
            }
        }
        func headers(_ h: HTTPFields) {
            for field in h where secretHeaders.contains(field.name.canonicalName) {
                let name = field.name.rawName, value = field.value
                let scrubbedSoFar = Scrubber.apply(Scrubber.replacements(for: table), to: value, site: .header(name.lowercased()))
                if name.lowercased() == "authorization" || name.lowercased() == "proxy-authorization" {
                    let parts = scrubbedSoFar.split(separator: " ", maxSplits: 1).map(String.init)
                    if parts.count == 2, parts[0].lowercased() == "bearer" { add(parts[1], family: "TOKEN"); continue }
                    if let basic = BasicCredentials(header: value) {
                        let pieces = basic.decoded.split(separator: ":", maxSplits: 1).map(String.init)
                        if pieces.count == 2 {
                            let scrubbedUser = Scrubber.apply(Scrubber.replacements(for: table), to: pieces[0], site: .query)
                            if !isPlaceholder(scrubbedUser) { add(pieces[0], family: "BASIC_USER", numbered: false) }
                            if !known(pieces[1]) { add(pieces[1], family: "PASSWORD") }
                        }
                        continue
                    }
                    if parts.count == 2 { add(parts[1], family: "TOKEN"); continue }
                }
                if isPlaceholder(scrubbedSoFar) { continue }
                let lower = name.lowercased()
                if lower.contains("token") || lower.contains("session") || lower == "cookie" || lower == "set-cookie" {
                    add(value, family: "TOKEN")
                } else {
                    let family = name.uppercased().map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined()
                    add(value, family: family, numbered: false)
                }
            }
        }

        for interaction in cassette.interactions {
            let r = interaction.request
            for q in r.query { keyed(q.name, q.value) }
            headers(r.headers)
            scanBody(r.body, contentType: r.headers["Content-Type"])
            headers(interaction.response.headers)
            scanBody(interaction.response.body, contentType: interaction.response.headers["Content-Type"])
        }
        if let text = cassette.backendURL, let url = try? BackendURL(parsing: text), let secret = url.secret,
           !known(secret) {
            add(secret, family: "BACKEND_SECRET", numbered: false)
        }
        return table
    }

    private func isPlaceholder(_ s: String) -> Bool {
        s.range(of: "^\(Cassette.placeholderPattern)$", options: .regularExpression) != nil
    }

    /// Whether a header value holds nothing but placeholders (and an auth scheme word).
    static func isPlaceholderOnly(_ value: String, header: String) -> Bool {
        var v = value
        if header == "authorization" || header == "proxy-authorization" {
            if let basic = BasicCredentials(header: value) { v = basic.decoded }
            else if let space = value.firstIndex(of: " ") { v = String(value[value.index(after: space)...]) }
        }
        let stripped = v.replacingOccurrences(of: Cassette.placeholderPattern, with: "", options: .regularExpression)
        return stripped.trimmingCharacters(in: CharacterSet(charactersIn: " :,;")).isEmpty && v.contains("<")
    }

    // MARK: Replacing

    /// Every encoded form of every secret, longest first, so a secret that contains another is replaced whole.
    static func replacements(for table: [(placeholder: String, value: String)]) -> [(form: String, placeholder: String)] {
        var out: [(String, String)] = []
        var seen = Set<String>()
        for (placeholder, value) in table {
            for form in forms(of: value) where seen.insert(form).inserted {
                out.append((form, placeholder))
            }
        }
        return out.sorted { $0.0.count != $1.0.count ? $0.0.count > $1.0.count : $0.0 < $1.0 }
    }

    /// The raw value and the ways it may have been escaped on the wire.
    static func forms(of value: String) -> [String] {
        var forms: [String] = [value]
        let sets: [CharacterSet] = [.urlQueryAllowed, .urlPathAllowed, .urlUserAllowed, .urlPasswordAllowed,
                                    .urlFragmentAllowed, .alphanumerics]
        var encoded = [percentEncode(value)]
        for set in sets {
            if let e = value.addingPercentEncoding(withAllowedCharacters: set) { encoded.append(e) }
        }
        // Lenient encoders leave '+' and '&' alone; form encoders turn spaces into '+'.
        for e in encoded {
            forms.append(e)
            forms.append(e.replacingOccurrences(of: "%20", with: "+"))
            forms.append(lowercasedPercentHex(e))
        }
        let json = JSON.string(value).printed().dropFirst().dropLast()
        forms.append(String(json))
        forms.append(String(json).replacingOccurrences(of: "/", with: "\\/"))
        forms.append(asciiJSONEscaped(value))
        // A JSON string embedded in another JSON string.
        let twice = JSON.string(String(json)).printed().dropFirst().dropLast()
        forms.append(String(twice))
        if value.utf8.count >= 6 { forms.append(Data(value.utf8).base64EncodedString()) }
        var unique: [String] = []
        for f in forms where !f.isEmpty && !unique.contains(f) { unique.append(f) }
        return unique
    }

    private static func lowercasedPercentHex(_ s: String) -> String {
        var out = ""
        var chars = s.makeIterator()
        while let c = chars.next() {
            out.append(c)
            if c == "%" {
                if let a = chars.next() { out.append(Character(a.lowercased())) }
                if let b = chars.next() { out.append(Character(b.lowercased())) }
            }
        }
        return out
    }

    private static func asciiJSONEscaped(_ s: String) -> String {
        var out = ""
        for unit in s.utf16 {
            if unit < 0x80, let scalar = Unicode.Scalar(unit), unit >= 0x20, scalar != "\"", scalar != "\\" {
                out.unicodeScalars.append(scalar)
            } else {
                out += String(format: "\\u%04x", unit)
            }
        }
        return out
    }

    static func apply(_ replacements: [(form: String, placeholder: String)], to text: String, site: StringSite) -> String {
        if case .header(let name) = site, name == "authorization" || name == "proxy-authorization",
           let basic = BasicCredentials(header: text) {
            return BasicCredentials.header(for: apply(replacements, to: basic.decoded, site: .query))
        }
        var out = text
        for (form, placeholder) in replacements where out.contains(form) {
            out = out.replacingOccurrences(of: form, with: placeholder)
        }
        return out
    }
}
