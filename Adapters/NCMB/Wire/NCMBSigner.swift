import Crypto
public import Foundation
public import MBaaSCore

/// NCMB request and response signatures (SignatureVersion 2, HmacSHA256), as a pure value usable by a client
/// and by a server (an emulator verifying requests).
///
/// The string to sign is four lines joined by `\n`:
/// ```
/// GET
/// mbaas.api.nifcloud.com
/// /2013-09-01/classes/TestClass
/// SignatureMethod=HmacSHA256&SignatureVersion=2&X-NCMB-Application-Key=…&X-NCMB-Timestamp=…&where=%7B…%7D
/// ```
/// - the method in upper case; the host without scheme or port; the path **exactly as percent-encoded on the
///   wire** (non-ASCII file names included);
/// - the parameters `SignatureMethod`, `SignatureVersion`, `X-NCMB-Application-Key`, `X-NCMB-Timestamp` and, for
///   **GET only**, every query parameter **exactly as percent-encoded on the wire**, sorted by name (then value)
///   in byte order; a parameter without a value appears bare (`s`, no `=`);
/// - the timestamp exactly as sent in `X-NCMB-Timestamp` (the server signs the header string verbatim).
///
/// The signature is `Base64(HMAC-SHA256(key: clientKey, message: stringToSign))`, sent as `X-NCMB-Signature`.
/// A response signature (`X-NCMB-Response-Signature`) is the HMAC of the request's string to sign plus `\n` and
/// the response body, or of the string to sign alone when the body is empty. The body enters as the vendor SDKs
/// hash it (see ``responseSignatureCandidates(stringToSign:body:contentType:)``): a non-JSON body (a file download)
/// as the lowercase hex string of its bytes, a JSON body as received or with its `\uXXXX` escapes decoded.
public struct NCMBSigner: Sendable, Hashable {
    public static let signatureMethod = "HmacSHA256"
    public static let signatureVersion = "2"

    /// Header names of the NCMB protocol.
    public enum Header {
        public static let applicationKey = "X-NCMB-Application-Key"
        public static let timestamp = "X-NCMB-Timestamp"
        public static let signature = "X-NCMB-Signature"
        public static let sessionToken = "X-NCMB-Apps-Session-Token"
        public static let responseSignature = "X-NCMB-Response-Signature"
    }

    /// The ``Header`` names as swift-http-types field names, made once (a `String` lookup in `HTTPFields` validates
    /// and lowercases the name on every call; the server checks these on every request).
    public enum Field {
        public static let applicationKey = HTTPField.Name(Header.applicationKey)!
        public static let timestamp = HTTPField.Name(Header.timestamp)!
        public static let signature = HTTPField.Name(Header.signature)!
        public static let sessionToken = HTTPField.Name(Header.sessionToken)!
        public static let responseSignature = HTTPField.Name(Header.responseSignature)!
    }

    public var applicationKey: String
    public var clientKey: String {
        didSet { keyed = NCMBSigner.keyed(clientKey) }
    }
    /// An HMAC already keyed with the client key: copied for each message, so the key's padding is hashed once per
    /// signer rather than once per request.
    private var keyed: HMAC<SHA256>

    public init(applicationKey: String, clientKey: String) {
        self.applicationKey = applicationKey
        self.clientKey = clientKey
        self.keyed = NCMBSigner.keyed(clientKey)
    }

    private static func keyed(_ clientKey: String) -> HMAC<SHA256> {
        HMAC<SHA256>(key: SymmetricKey(data: Data(clientKey.utf8)))
    }

    public static func == (a: NCMBSigner, b: NCMBSigner) -> Bool {
        a.applicationKey == b.applicationKey && a.clientKey == b.clientKey
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(applicationKey)
        hasher.combine(clientKey)
    }

    /// `Base64(HMAC-SHA256(clientKey, message))`.
    private func mac(_ message: some DataProtocol) -> String {
        var hmac = keyed
        hmac.update(data: message)
        return Data(hmac.finalize()).base64EncodedString()
    }

    /// The string to sign for a request.
    /// - Parameters:
    ///   - method: the HTTP method (upper-cased here).
    ///   - host: the FQDN without scheme or port.
    ///   - path: the percent-encoded path as sent (`/2013-09-01/files/%E7%94%BB%E5%83%8F.png`).
    ///   - query: the percent-encoded query as sent, without `?` (ignored unless the method is GET).
    ///   - timestamp: the `X-NCMB-Timestamp` header value, verbatim.
    public func stringToSign(method: String, host: String, path: String, query: String?, timestamp: String) -> String {
        var params: [(String, String?)] = [
            ("SignatureMethod", NCMBSigner.signatureMethod),
            ("SignatureVersion", NCMBSigner.signatureVersion),
            (Header.applicationKey, applicationKey),
            (Header.timestamp, timestamp),
        ]
        let upper = method.uppercased()
        if upper == "GET", let query, !query.isEmpty {
            for item in query.split(separator: "&", omittingEmptySubsequences: true) {
                if let eq = item.firstIndex(of: "=") {
                    params.append((String(item[..<eq]), String(item[item.index(after: eq)...])))
                } else {
                    params.append((String(item), nil))
                }
            }
        }
        // By UTF-8 bytes, names first, then values (compared in place, without copying them into arrays).
        params.sort { a, b in
            if !a.0.utf8.elementsEqual(b.0.utf8) { return a.0.utf8.lexicographicallyPrecedes(b.0.utf8) }
            return (a.1 ?? "").utf8.lexicographicallyPrecedes((b.1 ?? "").utf8)
        }
        let joined = params.map { name, value in value.map { "\(name)=\($0)" } ?? name }.joined(separator: "&")
        return [upper, host, path, joined].joined(separator: "\n")
    }

    /// The string to sign for a request URL (host, percent-encoded path and query are read from it verbatim).
    public func stringToSign(method: String, url: URL, timestamp: String) throws(MBaaSError) -> String {
        guard let parts = NCMBSigner.wireParts(of: url) else {
            throw MBaaSError(.invalidRequest, "cannot sign \(url.absoluteString): no host")
        }
        return stringToSign(method: method, host: parts.host, path: parts.path, query: parts.query, timestamp: timestamp)
    }

    /// `Base64(HMAC-SHA256(clientKey, text))`.
    public func signature(of text: String) -> String {
        mac(Array(text.utf8))
    }

    /// The `X-NCMB-Signature` of a request.
    public func signature(method: String, url: URL, timestamp: String) throws(MBaaSError) -> String {
        signature(of: try stringToSign(method: method, url: url, timestamp: timestamp))
    }

    /// The `X-NCMB-Response-Signature` a server sends for a JSON (or empty) response to the request whose string to
    /// sign is given, over the body as sent.
    public func responseSignature(stringToSign: String, body: Data) -> String {
        var message = Data(stringToSign.utf8)
        if !body.isEmpty {
            message.append(0x0A)
            message.append(body)
        }
        return mac(message)
    }

    /// The messages a response signature may cover, as the vendor SDKs build them (the server's exact canonical
    /// form of a JSON body is undocumented, so both SDK forms are accepted):
    /// - an empty body: the string to sign alone;
    /// - a body whose Content-Type is not JSON (a file download): the string to sign, `\n`, and the **lowercase hex**
    ///   of the bytes — [sdk] ncmb_android `NCMBConnection.java` (`asHex(res.responseByte)`), ncmb_ios
    ///   `NCMBURLSession.m` (`%02.2hhx` for a non-`application/json` body), ncmb_unity `NCMBConnection.cs`
    ///   (`AsHex (responseByte)`) agree;
    /// - a JSON body: the body as received, and, when it holds `\uXXXX` escapes, the body with those escapes
    ///   decoded to UTF-8 — [sdk] ncmb_unity `NCMBConnection.cs` unescapes Unicode before hashing
    ///   (`NCMBUtility.unicodeUnescape`); ncmb_android hashes org.json's re-serialisation;
    /// - a body without a Content-Type: every form above.
    public func responseSignatureCandidates(stringToSign: String, body: Data, contentType: String?) -> [Data] {
        var base = Data(stringToSign.utf8)
        guard !body.isEmpty else { return [base] }
        base.append(0x0A)
        let media = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        let isJSON = media.map { $0 == "application/json" || $0.hasSuffix("+json") }
        let digits = Array("0123456789abcdef".utf8)
        var hex = [UInt8]()
        if isJSON != true {
            hex.reserveCapacity(body.count * 2)
            for byte in body {
                hex.append(digits[Int(byte >> 4)])
                hex.append(digits[Int(byte & 0x0F)])
            }
        }
        if isJSON == false {
            return [base + Data(hex)]
        }
        var out = [base + body]
        if let unescaped = NCMBSigner.unescapingUnicode(body), unescaped != body { out.append(base + unescaped) }
        // Without a Content-Type the body may be either: both forms are tried.
        if isJSON == nil { out.append(base + Data(hex)) }
        return out
    }

    /// The JSON text with every `\uXXXX` escape (surrogate pairs joined) replaced by the character's UTF-8 bytes;
    /// other escapes are kept. `nil` when the text holds no `\u` escape or is not UTF-8.
    public static func unescapingUnicode(_ body: Data) -> Data? {
        guard let text = String(data: body, encoding: .utf8), text.contains("\\u") else { return nil }
        let units = Array(text.utf16)
        var out: [UInt16] = []
        out.reserveCapacity(units.count)
        var i = 0
        func hex4(_ at: Int) -> UInt16? {
            guard at + 4 <= units.count else { return nil }
            var v: UInt16 = 0
            for u in units[at..<at + 4] {
                guard u < 0x80, let d = UInt8(exactly: u).flatMap({ Character(UnicodeScalar($0)).hexDigitValue }) else { return nil }
                v = v << 4 | UInt16(d)
            }
            return v
        }
        while i < units.count {
            if units[i] == 0x5C, i + 1 < units.count {
                if units[i + 1] == 0x75, let v = hex4(i + 2) {  // \uXXXX
                    out.append(v)
                    i += 6
                    continue
                }
                // Any other escape (\\, \", \n …) is kept as it is, both characters.
                out.append(units[i]); out.append(units[i + 1])
                i += 2
                continue
            }
            out.append(units[i])
            i += 1
        }
        return Data(String(decoding: out, as: UTF16.self).utf8)
    }

    /// Adds `X-NCMB-Application-Key`, `X-NCMB-Timestamp` and `X-NCMB-Signature` to a request, signing its URL as
    /// it will go on the wire. Returns the string that was signed (needed to check the response signature).
    @discardableResult
    public func sign(_ request: inout TransportRequest, timestamp: String) throws(MBaaSError) -> String {
        let text = try stringToSign(method: request.method.rawValue, url: request.url, timestamp: timestamp)
        request.headers[Field.applicationKey] = applicationKey
        request.headers[Field.timestamp] = timestamp
        request.headers[Field.signature] = signature(of: text)
        return text
    }

    /// Whether a received request carries this application's key and a valid signature (for a server).
    ///
    /// The host in the string to sign may be the request's host without its port (what the Swift and JS SDKs sign
    /// with, and ``sign(_:timestamp:)``) or its host and port as the `Host` header carried them: the Python SDK (PyPI
    /// `NCMB` 1.3.1) signs with its one host setting, `NCMB.fqdn`, which a client pointed at `127.0.0.1:8080` sets to
    /// exactly that [sdk]. Either form is accepted; nothing else.
    public func verify(_ request: TransportRequest) -> Bool {
        guard request.headers.value(Field.applicationKey) == applicationKey,
              let timestamp = request.headers.value(Field.timestamp),
              let sent = request.headers.value(Field.signature),
              let parts = NCMBSigner.wireParts(of: request.url)
        else { return false }
        func matches(_ host: String) -> Bool {
            constantTimeEquals(sent, signature(of: stringToSign(method: request.method.rawValue, host: host, path: parts.path,
                                                                query: parts.query, timestamp: timestamp)))
        }
        // The host as signed without its port (what the SDKs send), else with it.
        if matches(parts.host) { return true }
        return request.url.port.map { matches("\(parts.host):\($0)") } ?? false
    }

    /// Checks a response's `X-NCMB-Response-Signature` against the request's string to sign, as the vendor SDKs
    /// do: a response **without** the header is not checked (NCMB sends none with E404002, E404005, E405002 and
    /// E415001, and a proxy's answer has none) — [sdk] ncmb_android `NCMBConnection.java`, ncmb_ios
    /// `NCMBURLSession.m`, ncmb_unity `NCMBConnection.cs` skip the check when the header is absent. A signature
    /// that matches none of ``responseSignatureCandidates(stringToSign:body:contentType:)`` is
    /// ``MBaaSError/Kind/decoding`` with vendor code `E100001`, as the official SDKs report it. Callers check
    /// successful responses only (ncmb_unity and ncmb_js do).
    public func verifyResponse(_ response: TransportResponse, stringToSign: String) throws(MBaaSError) {
        guard let sent = response.headers[Field.responseSignature] else { return }
        let candidates = responseSignatureCandidates(stringToSign: stringToSign, body: response.body,
                                                     contentType: response.headers[.contentType])
        for message in candidates {
            let expected = mac(message)
            if constantTimeEquals(sent, expected) { return }
        }
        throw MBaaSError(
            .decoding, "Authentication error by response signature incorrect.", vendorCode: "E100001",
            httpStatus: response.status.code)
    }

    /// Host, percent-encoded path and percent-encoded query of a URL, as they go on the wire: read from the URL's
    /// text (`scheme://[user@]host[:port]/path?query#fragment`), so nothing is re-encoded; a bracketed IPv6 host
    /// keeps its brackets. `nil` without a host.
    public static func wireParts(of url: URL) -> (host: String, path: String, query: String?)? {
        // Byte offsets over the URL's UTF-8 text: every delimiter is ASCII, so no Character walking is needed.
        let text = url.absoluteString
        return Array(text.utf8).withUnsafeBufferPointer { b -> (String, String, String?)? in
            func find(_ c: UInt8, in range: Range<Int>) -> Int? { range.first { b[$0] == c } }
            func findLast(_ c: UInt8, in range: Range<Int>) -> Int? { range.last { b[$0] == c } }
            func string(_ r: Range<Int>) -> String { String(decoding: UnsafeBufferPointer(rebasing: b[r]), as: UTF8.self) }
            let colon = UInt8(ascii: ":"), slash = UInt8(ascii: "/"), question = UInt8(ascii: "?")
            guard let schemeColon = find(colon, in: 0..<b.count), schemeColon + 2 < b.count,
                  b[schemeColon + 1] == slash, b[schemeColon + 2] == slash else { return nil }
            let start = schemeColon + 3
            let end = find(UInt8(ascii: "#"), in: start..<b.count) ?? b.count
            let authorityEnd = (start..<end).first { b[$0] == slash || b[$0] == question } ?? end
            var hostStart = start
            if let at = findLast(UInt8(ascii: "@"), in: start..<authorityEnd) { hostStart = at + 1 }
            var hostEnd = authorityEnd
            if hostStart < authorityEnd, b[hostStart] == UInt8(ascii: "[") {
                guard let close = find(UInt8(ascii: "]"), in: hostStart..<authorityEnd) else { return nil }
                hostEnd = close + 1
            } else if let port = findLast(colon, in: hostStart..<authorityEnd) {
                hostEnd = port
            }
            guard hostStart < hostEnd else { return nil }
            let q = find(question, in: authorityEnd..<end)
            let pathEnd = q ?? end
            let path = authorityEnd < pathEnd ? string(authorityEnd..<pathEnd) : "/"
            return (string(hostStart..<hostEnd), path, q.map { string(($0 + 1)..<end) })
        }
    }

    private func constantTimeEquals(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var diff: UInt8 = 0
        for i in x.indices { diff |= x[i] ^ y[i] }
        return diff == 0
    }
}
