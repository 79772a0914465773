import Foundation

/// HTTP header fields: ordered, names compared case-insensitively, repeated names allowed.
public struct HTTPHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [(name: String, value: String)] = []

    public init() {}
    public init(_ fields: [(String, String)]) { for (n, v) in fields { add(n, v) } }
    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }

    /// The first value of a header, or `nil`. Setting replaces every value of that name (`nil` removes them).
    public subscript(name: String) -> String? {
        get { fields.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value }
        set {
            let index = fields.firstIndex { $0.name.caseInsensitiveCompare(name) == .orderedSame }
            fields.removeAll { $0.name.caseInsensitiveCompare(name) == .orderedSame }
            if let newValue { fields.insert((name, newValue), at: index ?? fields.count) }
        }
    }

    public mutating func add(_ name: String, _ value: String) { fields.append((name, value)) }
    public func values(_ name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }.map(\.value)
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
public func percentEncode(_ s: String) -> String {
    var allowed = CharacterSet()
    allowed.insert(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
    return s.addingPercentEncoding(withAllowedCharacters: allowed) ?? s
}
