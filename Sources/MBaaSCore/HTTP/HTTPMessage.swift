public import Foundation

// Header fields, methods and statuses are swift-http-types' (`HTTPFields`, `HTTPRequest.Method`,
// `HTTPResponse.Status`), so adapters, wire modules and a server built on Hummingbird speak one vocabulary. The
// core's own message types carry what a transport needs besides them (the URL, the body, a timeout, an
// idempotency key) and are named so as not to clash with swift-http-types' `HTTPRequest`/`HTTPResponse`.
@_exported import HTTPTypes

/// String-keyed access to header fields, for names known to be valid tokens (vendor header names in adapters,
/// header names read from files after ``HTTPField/Name/init(_:)`` has checked them).
///
/// Names compare case-insensitively and repeated names are allowed, as ``HTTPFields`` does; the original
/// spelling of each name is kept (``HTTPField/Name/rawName``), so recorded exchanges print as they were sent.
extension HTTPFields {
    /// The value of a header (repeated values joined as ``HTTPFields`` joins them), or `nil`; a name that is not
    /// a valid field name is never present. Setting replaces every value of that name (`nil` removes them).
    ///
    /// - Precondition: when setting, `name` is a valid field name (an RFC 9110 token).
    public subscript(_ name: String) -> String? {
        get { HTTPField.Name(name).flatMap { self[$0] } }
        set { self[HTTPFields.validName(name)] = newValue }
    }

    /// The value of a header, as `self[name]` gives it (repeated values joined with `, `, or `; ` for `Cookie`), read
    /// without building a joined string when the name occurs once: the common case, on a server's path for every
    /// request.
    public func value(_ name: HTTPField.Name) -> String? {
        var first: String?
        var repeated = false
        for field in self where field.name == name {
            if first == nil { first = field.value } else { repeated = true; break }
        }
        return repeated ? self[name] : first
    }

    /// Appends a field. - Precondition: `name` is a valid field name.
    public mutating func add(_ name: String, _ value: String) {
        append(HTTPField(name: HTTPFields.validName(name), value: value))
    }

    /// Every value of a header, in order.
    public func values(_ name: String) -> [String] {
        HTTPField.Name(name).map { self[values: $0] } ?? []
    }

    /// The field names as sent, in order (repeated names repeated).
    public var names: [String] { map(\.name.rawName) }

    /// Fields from `(name, value)` pairs. - Precondition: every name is a valid field name.
    public init(_ pairs: [(String, String)]) {
        self.init()
        for (name, value) in pairs { add(name, value) }
    }

    /// A copy with the values of the named headers replaced by `***` (for logs).
    public func redacting(_ secretNames: Set<String>) -> HTTPFields {
        let lower = Set(secretNames.map { $0.lowercased() })
        var out = HTTPFields()
        for field in self {
            out.append(lower.contains(field.name.canonicalName) ? HTTPField(name: field.name, value: "***") : field)
        }
        return out
    }

    static func validName(_ name: String) -> HTTPField.Name {
        guard let valid = HTTPField.Name(name) else { preconditionFailure("not a valid HTTP field name: \(name)") }
        return valid
    }
}

extension HTTPTypes.HTTPRequest.Method {
    /// A method from its name, upper-cased; `nil` when it is not a token.
    public init?(name: String) { self.init(name.uppercased()) }
}

/// An HTTP request as adapters build it and transports send it.
public struct TransportRequest: Sendable, Hashable {
    public typealias Method = HTTPTypes.HTTPRequest.Method

    public var method: Method
    public var url: URL
    public var headers: HTTPFields
    public var body: Data?
    /// Seconds before the request fails with a `transport` error; the transport's default when `nil`.
    public var timeout: TimeInterval?
    /// A key that makes a non-idempotent request safe to retry (sent as the vendor's header by the adapter).
    public var idempotencyKey: String?

    public init(
        method: Method, url: URL, headers: HTTPFields = [:], body: Data? = nil, timeout: TimeInterval? = nil,
        idempotencyKey: String? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.idempotencyKey = idempotencyKey
    }

    /// GET, HEAD, PUT, DELETE, OPTIONS and TRACE may be repeated safely.
    public var isIdempotent: Bool {
        switch method {
        case .get, .head, .put, .delete, .options, .trace: true
        default: false
        }
    }
}

/// An HTTP response.
public struct TransportResponse: Sendable, Hashable {
    public typealias Status = HTTPTypes.HTTPResponse.Status

    public var status: Status
    public var headers: HTTPFields
    public var body: Data

    public init(status: Status, headers: HTTPFields = [:], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public var isSuccess: Bool { status.kind == .successful }

    /// The body parsed as JSON; a body that is not JSON is a ``MBaaSError/Kind/decoding`` error.
    public func json() throws -> JSON {
        do { return try JSON.parse(body) } catch {
            let snippet = String(decoding: body.prefix(200), as: UTF8.self)
            throw MBaaSError(.decoding, "response is not JSON (\(error.message)): \(snippet)", httpStatus: status.code)
        }
    }

    /// `Retry-After` in seconds (delta-seconds form, or an HTTP date relative to `now`).
    public func retryAfter(now: Date = Date()) -> TimeInterval? {
        guard let value = headers[.retryAfter]?.trimmingCharacters(in: .whitespaces) else { return nil }
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
    ///
    /// A path segment `.` or `..` is refused with ``MBaaSError/Kind/invalidRequest``: ``percentEncode(_:)`` keeps
    /// dots, so a class name, an id or a scope that is `..` would otherwise become a dot segment that URL
    /// normalisation (the client's, a proxy's or the server's) resolves against its neighbour, and the request would
    /// reach another resource than the one named (`users/../Secret` writing to `Secret`). A `/` inside a segment is
    /// already `%2F`. (A segment written `%2E%2E` on purpose is left to the server, which must refuse it: the
    /// emulator's dialects are tested so.)
    public static func build(base: String, path: String, query: [(String, String)] = []) throws -> URL {
        for segment in path.split(separator: "/") where segment == "." || segment == ".." {
            throw MBaaSError(.invalidRequest, "a name in the request path is '\(segment)', which would address another resource (path \(path)); '.' and '..' are not names")
        }
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
