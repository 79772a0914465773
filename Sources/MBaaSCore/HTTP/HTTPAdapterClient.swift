public import Foundation

/// A request body as an HTTP adapter builds it.
public enum HTTPRequestBody: Sendable {
    /// No body (the client's ``HTTPAdapterClient/contentTypeWithoutBody`` is still sent when it has one).
    case none
    /// A JSON object, sent as `application/json`.
    case json(JSONObject)
    /// A `multipart/form-data` body with its boundary.
    case multipart(MultipartForm)
    /// Bytes with their content type.
    case raw(Data, contentType: String)
}

/// The I/O half of an HTTP adapter, written once: building a request on the core's ``TransportRequest`` (the
/// URL with ``Foundation/URL/build(base:path:query:)``, the body and its `Content-Type`, the timeout), sending it
/// through the context's ``HTTPTransport``, and turning what comes back into a response or an ``MBaaSError``.
///
/// What stays the adapter's: the vendor's headers and signature (between ``request(_:_:query:body:base:timeout:)``
/// and ``send(_:path:context:decodeError:)``, so a signer sees the final request), its session state, and the
/// vendor error decoder (``decodeError``, a parameter, so the core names no vendor).
///
/// # Contract
/// - ``request(_:_:query:body:base:timeout:)`` refuses a path with a `.` or `..` segment
///   (``MBaaSError/Kind/invalidRequest``, from ``Foundation/URL/build(base:path:query:)``).
/// - ``send(_:path:context:decodeError:)`` returns a 2xx response as it came. Any other status is the decoder's
///   ``MBaaSError``. A failure to get a response is ``MBaaSError/Kind/transport`` named `METHOD path: reason` (an
///   ``MBaaSError`` the transport threw passes unchanged); a cancelled task is `transport` before anything is sent.
/// - Retries are the transport's: wrap it in ``RetryingTransport`` (``RetryPolicy`` retries idempotent methods and
///   requests with an ``TransportRequest/idempotencyKey``), as ``BackendContext`` callers do; the client never
///   sends a request twice itself.
/// - ``json(_:)`` parses a body as JSON or throws ``MBaaSError/Kind/decoding`` naming ``displayName`` and the status.
public struct HTTPAdapterClient: Sendable {
    /// Decodes a non-2xx response into the vendor's error: the response, the context's time (for `Retry-After`
    /// dates) and what was being done (`"create Memo"`), for the message.
    public typealias ErrorDecoder = @Sendable (_ response: TransportResponse, _ now: Date, _ what: String?) -> MBaaSError

    /// The adapter's name, used in log messages (`ncmb request`).
    public var name: String
    /// The vendor's name in decoding errors (`NCMB response is not JSON`).
    public var displayName: String
    /// `https://host[:port]` plus any fixed prefix (a mount point); paths are appended to it.
    public var baseURL: String
    /// Seconds before a request fails, unless a request gives its own.
    public var timeout: TimeInterval
    /// The transport, clock and logger.
    public var context: BackendContext
    /// A `Content-Type` sent on requests without a body (a vendor whose SDKs always send one), or `nil`.
    public var contentTypeWithoutBody: String?
    /// The vendor's error decoder for non-2xx responses.
    public var decodeError: ErrorDecoder

    public init(
        name: String, displayName: String, baseURL: String, timeout: TimeInterval, context: BackendContext,
        contentTypeWithoutBody: String? = nil, decodeError: @escaping ErrorDecoder
    ) {
        self.name = name
        self.displayName = displayName
        self.baseURL = baseURL
        self.timeout = timeout
        self.context = context
        self.contentTypeWithoutBody = contentTypeWithoutBody
        self.decodeError = decodeError
    }

    /// A request to `base + path` (``baseURL`` unless given) with the query, the body and its `Content-Type`, and
    /// the timeout (``timeout`` unless given). Add the vendor's headers and sign it, then ``send(_:path:context:decodeError:)``.
    /// - Parameter path: percent-encoded segments (`/classes/Memo/abc`).
    public func request(
        _ method: TransportRequest.Method, _ path: String, query: [(String, String)] = [], body: HTTPRequestBody = .none,
        base: String? = nil, timeout: TimeInterval? = nil
    ) throws(MBaaSError) -> TransportRequest {
        let url: URL
        do { url = try URL.build(base: base ?? baseURL, path: path, query: query) } catch { throw MBaaSError.wrap(error) }
        var request = TransportRequest(method: method, url: url, timeout: timeout ?? self.timeout)
        switch body {
        case .none:
            if let contentTypeWithoutBody { request.headers["Content-Type"] = contentTypeWithoutBody }
        case .json(let object):
            request.headers["Content-Type"] = "application/json"
            request.body = JSON.object(object).data()
        case .multipart(let form):
            request.headers["Content-Type"] = form.contentType
            request.body = form.encoded()
        case .raw(let data, let contentType):
            request.headers["Content-Type"] = contentType
            request.body = data
        }
        return request
    }

    /// Sends a request and returns its 2xx response, or throws the decoded vendor error (``decodeError`` unless
    /// one is given for this call) or a `transport` error.
    /// - Parameters:
    ///   - path: how the request is named in logs and transport errors.
    ///   - what: what is being done, for the vendor error's message.
    public func send(
        _ request: TransportRequest, path: String, context what: String? = nil, decodeError: ErrorDecoder? = nil
    ) async throws(MBaaSError) -> TransportResponse {
        context.logger.debug("\(name) request", metadata: ["method": "\(request.method)", "path": "\(path)"])
        let response: TransportResponse
        do {
            try Task.checkCancellation()
            response = try await context.transport.send(request)
        } catch let error as MBaaSError {
            throw error
        } catch {
            let e = MBaaSError.wrap(error)
            throw MBaaSError(.transport, "\(request.method) \(path): \(e.message)", underlying: e.underlying ?? e)
        }
        guard response.isSuccess else { throw (decodeError ?? self.decodeError)(response, context.now, what) }
        return response
    }

    /// The response body as JSON, or a ``MBaaSError/Kind/decoding`` error with the status.
    public func json(_ response: TransportResponse) throws(MBaaSError) -> JSON {
        do { return try JSON.parse(response.body) } catch {
            throw MBaaSError(.decoding, "\(displayName) response is not JSON (\(error.message))", httpStatus: response.status.code)
        }
    }
}
