import Foundation

/// HTTP header fields: ordered, names compared case-insensitively, repeated names allowed.
public struct HTTPHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [(name: String, value: String)] = []

    public init() {}
    public init(_ fields: [(String, String)]) { for (n, v) in fields { add(n, v) } }
    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }

    /// The first value of a header, or `nil`. Setting replaces every value of that name (`nil` removes them).
    public subscript(name: String) -> String? {
        get { fields.first { headerNamesEqual($0.name, name) }?.value }
        set {
            let index = fields.firstIndex { headerNamesEqual($0.name, name) }
            fields.removeAll { headerNamesEqual($0.name, name) }
            if let newValue { fields.insert((name, newValue), at: index ?? fields.count) }
        }
    }

    public mutating func add(_ name: String, _ value: String) { fields.append((name, value)) }
    public func values(_ name: String) -> [String] {
        fields.filter { headerNamesEqual($0.name, name) }.map(\.value)
    }
    public var names: [String] { fields.map(\.name) }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    public static func == (a: HTTPHeaders, b: HTTPHeaders) -> Bool {
        a.fields.map { "\($0.name.lowercased()):\($0.value)" } == b.fields.map { "\($0.name.lowercased()):\($0.value)" }
    }
    public func hash(into hasher: inout Hasher) {
        for f in fields { hasher.combine(f.name.lowercased()); hasher.combine(f.value) }
    }

    /// A copy with the values of the named headers replaced by `***` (for logs).
    public func redacting(_ secretNames: Set<String>) -> HTTPHeaders {
        let lower = Set(secretNames.map { $0.lowercased() })
        return HTTPHeaders(fields.map { (lower.contains($0.name.lowercased()) ? ($0.name, "***") : ($0.name, $0.value)) })
    }
}

/// An HTTP request as adapters build it and transports send it.
public struct HTTPRequest: Sendable, Hashable {
    public var method: String
    public var url: URL
    public var headers: HTTPHeaders
    public var body: Data?
    /// Seconds before the request fails with a `transport` error; the transport's default when `nil`.
    public var timeout: TimeInterval?
    /// A key that makes a non-idempotent request safe to retry (sent as the vendor's header by the adapter).
    public var idempotencyKey: String?

    public init(
        method: String, url: URL, headers: HTTPHeaders = [:], body: Data? = nil, timeout: TimeInterval? = nil,
        idempotencyKey: String? = nil
    ) {
        self.method = method.uppercased()
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.idempotencyKey = idempotencyKey
    }

    /// GET, HEAD, PUT, DELETE, OPTIONS and TRACE may be repeated safely.
    public var isIdempotent: Bool { ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"].contains(method) }
}

/// An HTTP response.
public struct HTTPResponse: Sendable, Hashable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: Data

    public init(status: Int, headers: HTTPHeaders = [:], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public var isSuccess: Bool { (200..<300).contains(status) }

    /// The body parsed as JSON; a body that is not JSON is a ``MBaaSError/Kind/decoding`` error.
    public func json() throws -> JSON {
        do { return try JSON.parse(body) } catch {
            let snippet = String(decoding: body.prefix(200), as: UTF8.self)
            throw MBaaSError(.decoding, "response is not JSON (\(error.message)): \(snippet)", httpStatus: status)
        }
    }

    /// `Retry-After` in seconds (delta-seconds form, or an HTTP date relative to `now`).
    public func retryAfter(now: Date = Date()) -> TimeInterval? {
        guard let value = headers["Retry-After"]?.trimmingCharacters(in: .whitespaces) else { return nil }
        if let seconds = TimeInterval(value) { return max(0, seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: value).map { max(0, $0.timeIntervalSince(now)) }
    }
}

extension URL {
    /// Builds a URL from a base (`https://host:port`), a path whose segments are already percent-encoded, and
    /// query items encoded strictly (RFC 3986 unreserved characters only: `+` is `%2B`, space `%20`, `'` `%27`).
    public static func build(base: String, path: String, query: [(String, String)] = []) throws -> URL {
        var text = base + path
        if !query.isEmpty {
            text += "?" + query.map { "\(percentEncode($0.0))=\(percentEncode($0.1))" }.joined(separator: "&")
        }
        guard let url = URL(string: text) else { throw MBaaSError(.invalidRequest, "cannot build a URL from \(text)") }
        return url
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters (`A-Z a-z 0-9 - . _ ~`).
///
/// Works on the UTF-8 bytes directly (upper-case hex, as Foundation's `addingPercentEncoding` prints it); a string
/// that needs no encoding is returned as is.
public func percentEncode(_ s: String) -> String {
    @inline(__always) func unreserved(_ b: UInt8) -> Bool {
        (b >= 0x61 && b <= 0x7A) || (b >= 0x41 && b <= 0x5A) || (b >= 0x30 && b <= 0x39)
            || b == 0x2D || b == 0x2E || b == 0x5F || b == 0x7E
    }
    var s = s
    return s.withUTF8 { utf8 in
        guard utf8.contains(where: { !unreserved($0) }) else { return String(decoding: utf8, as: UTF8.self) }
        let hex: StaticString = "0123456789ABCDEF"
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count * 3)
        for b in utf8 {
            if unreserved(b) {
                out.append(b)
            } else {
                out.append(0x25)
                out.append(hex.utf8Start[Int(b >> 4)])
                out.append(hex.utf8Start[Int(b & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Decodes `%XX` escapes (UTF-8); `nil` when an escape is malformed or the bytes are not UTF-8. `+` stays `+`.
/// A string without `%` is returned as is, without copying.
public func percentDecode(_ s: String) -> String? {
    guard s.utf8.contains(0x25) else { return s }
    func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x30...0x39: b - 0x30
        case 0x41...0x46: b - 0x41 + 10
        case 0x61...0x66: b - 0x61 + 10
        default: nil
        }
    }
    var out: [UInt8] = []
    out.reserveCapacity(s.utf8.count)
    var it = s.utf8.makeIterator()
    while let b = it.next() {
        if b == 0x25 {
            guard let h = it.next().flatMap(hex), let l = it.next().flatMap(hex) else { return nil }
            out.append(h << 4 | l)
        } else {
            out.append(b)
        }
    }
    return String(validating: out, as: UTF8.self)
}

extension String {
    /// Case-insensitive equality: ASCII strings (HTTP field names, SQL identifiers) are compared byte by byte with
    /// ASCII case folding, without Foundation's locale-aware machinery; anything else falls back to
    /// `caseInsensitiveCompare(_:) == .orderedSame`, so the result is the same as that comparison's.
    public func equalsIgnoringCase(_ other: String) -> Bool { headerNamesEqual(self, other) }
}

/// See ``Swift/String/equalsIgnoringCase(_:)``.
func headerNamesEqual(_ a: String, _ b: String) -> Bool {
    var a = a, b = b
    let result: Bool? = a.withUTF8 { x in
        b.withUTF8 { y -> Bool? in
            guard x.count == y.count else { return x.allSatisfy { $0 < 0x80 } && y.allSatisfy { $0 < 0x80 } ? false : nil }
            for i in 0..<x.count {
                let c = x[i], d = y[i]
                if c >= 0x80 || d >= 0x80 { return nil }
                if c == d { continue }
                let lc = c >= 0x41 && c <= 0x5A ? c | 0x20 : c
                let ld = d >= 0x41 && d <= 0x5A ? d | 0x20 : d
                if lc != ld { return false }
            }
            return true
        }
    }
    return result ?? (a.caseInsensitiveCompare(b) == .orderedSame)
}
