public import Foundation
import Logging
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Sends one HTTP request and returns the response: the seam every adapter talks through.
///
/// # Contract
/// - Any status is a response, not an error: mapping 4xx/5xx is the adapter's job.
/// - A failure to get a response (refused, reset, timeout, truncated) throws ``MBaaSError`` of kind
///   ``MBaaSError/Kind/transport``; cancelling the calling task cancels the request and throws `transport`.
/// - A transport must be safe to call from many tasks at once.
///
/// Implementations: ``URLSessionTransport`` (live), ``RetryingTransport`` (wraps another), and in
/// `MBaaSReplay` the replaying, recording and fault-injecting transports.
public protocol HTTPTransport: Sendable {
    func send(_ request: TransportRequest) async throws -> TransportResponse
}

/// A transport over `URLSession`. The session is injected (tests pass one with stub protocol classes); bodies
/// go in `httpBody` with `data(for:)`, which works the same on Linux and Apple platforms.
public struct URLSessionTransport: HTTPTransport {
    public let session: URLSession
    public let defaultTimeout: TimeInterval
    public let logger: Logger?
    /// Header names whose values are never logged.
    public let secretHeaders: Set<String>

    public init(
        session: URLSession = URLSession(configuration: .ephemeral), defaultTimeout: TimeInterval = 60,
        logger: Logger? = nil, secretHeaders: Set<String> = HTTPLogging.defaultSecretHeaders
    ) {
        self.session = session
        self.defaultTimeout = defaultTimeout
        self.logger = logger
        self.secretHeaders = secretHeaders
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method.rawValue
        urlRequest.timeoutInterval = request.timeout ?? defaultTimeout
        for field in request.headers { urlRequest.addValue(field.value, forHTTPHeaderField: field.name.rawName) }
        urlRequest.httpBody = request.body
        logger?.debug("http request", metadata: HTTPLogging.metadata(request, secretHeaders: secretHeaders))
        let started = Date()
        do {
            try Task.checkCancellation()
            let (data, response) = try await session.data(for: urlRequest)
            guard let http = response as? HTTPURLResponse else {
                throw MBaaSError(.transport, "not an HTTP response from \(HTTPLogging.redactedURL(request.url))")
            }
            var headers = HTTPFields()
            for (k, v) in http.allHeaderFields {
                if let k = k as? String, let name = HTTPField.Name(k), let v = v as? String {
                    headers.append(HTTPField(name: name, value: v))
                }
            }
            logger?.debug("http response", metadata: [
                "status": "\(http.statusCode)", "bytes": "\(data.count)",
                "ms": "\(Int(Date().timeIntervalSince(started) * 1000))",
            ])
            return TransportResponse(status: .init(code: http.statusCode), headers: headers, body: data)
        } catch let error as MBaaSError {
            throw error
        } catch {
            let wrapped = MBaaSError.wrap(error)
            var reason = wrapped.message
            if let e = error as? URLError, e.code == .timedOut {
                reason = "timed out after \(HTTPLogging.seconds(urlRequest.timeoutInterval))"
            }
            throw MBaaSError(.transport, "\(request.method) \(HTTPLogging.redactedURL(request.url)): \(reason)",
                             underlying: wrapped.underlying ?? wrapped)
        }
    }
}

/// Logging helpers that never print secrets.
public enum HTTPLogging {
    /// Standard credential headers. Any other header whose name contains one of ``secretHeaderWords`` is treated
    /// as secret too (see ``isSecretHeader(_:extra:)``), so vendor headers (`X-…-Key`, `…-Signature`,
    /// `…-Session-Token`) are covered without the core naming any vendor.
    public static let defaultSecretHeaders: Set<String> = ["Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie"]

    /// Words that make a header name secret, compared case-insensitively.
    public static let secretHeaderWords = ["key", "token", "secret", "signature", "session", "password", "auth"]

    /// Whether a header's value must never be logged: it is listed in `extra` (case-insensitively) or its name
    /// contains one of ``secretHeaderWords``.
    public static func isSecretHeader(_ name: String, extra: Set<String> = defaultSecretHeaders) -> Bool {
        let lower = name.lowercased()
        return extra.contains { $0.lowercased() == lower } || secretHeaderWords.contains { lower.contains($0) }
    }

    /// `60 s`, `2.5 s`.
    public static func seconds(_ t: TimeInterval) -> String {
        t == t.rounded() && abs(t) < 1e15 ? "\(Int(t)) s" : "\(t) s"
    }

    /// Query parameter names whose values are redacted in logged URLs.
    public static let secretQueryNames: Set<String> = ["token", "apikey", "appkey", "usertoken", "password", "key", "secret"]

    /// The URL with credentials and secret-looking query values replaced by `***`.
    public static func redactedURL(_ url: URL) -> String {
        guard var c = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return "<url>" }
        if c.password != nil { c.password = "***" }
        c.queryItems = c.queryItems?.map {
            secretQueryNames.contains($0.name.lowercased()) ? URLQueryItem(name: $0.name, value: "***") : $0
        }
        return c.string ?? "<url>"
    }

    public static func metadata(_ request: TransportRequest, secretHeaders: Set<String>) -> Logger.Metadata {
        [
            "method": "\(request.method)", "url": "\(redactedURL(request.url))",
            "headers": "\(request.headers.map { "\($0.name.rawName): \(isSecretHeader($0.name.rawName, extra: secretHeaders) ? "***" : $0.value)" })",
            "bytes": "\(request.body?.count ?? 0)",
        ]
    }
}
