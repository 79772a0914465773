public import Foundation
public import MBaaSCore

/// Parse error bodies (`{"code":101,"error":"Object not found."}`) and how they map to ``MBaaSError``.
///
/// The vendor code is kept as the decimal string of the number (`"101"`), with the message and the HTTP status.
/// Key failures are `403 {"error":"unauthorized"}` without a code: ``code`` is `nil` then and the status decides.
///
/// | code | kind |
/// |---|---|
/// | 101 OBJECT_NOT_FOUND | `notFound`; on `/login` (bad user name or password) `unauthorized` |
/// | 137 DUPLICATE_VALUE, 202 USERNAME_TAKEN, 203 EMAIL_TAKEN, 208 ACCOUNT_ALREADY_LINKED | `duplicate` |
/// | 209 INVALID_SESSION_TOKEN, 206 SESSION_MISSING, 251 INVALID_LINKED_SESSION | `unauthorized` |
/// | 119 OPERATION_FORBIDDEN | `forbidden` |
/// | 155 REQUEST_LIMIT_EXCEEDED (and 100 on a 429) | `rateLimited` |
/// | 159 DUPLICATE_REQUEST | `conflict` |
/// | 1 INTERNAL_SERVER_ERROR, 100 CONNECTION_FAILED, 124 TIMEOUT | `unavailable` |
/// | 141 SCRIPT_FAILED, 142 VALIDATION_ERROR, 102 INVALID_QUERY, 111 INCORRECT_TYPE, 105, 107, 122, 130, 200, 201 … | `invalidRequest` |
public struct ParseErrorBody: Sendable, Hashable {
    public var code: Int?
    public var error: String

    public init(code: Int?, error: String) {
        self.code = code
        self.error = error
    }

    public var json: JSON {
        var o = JSONObject()
        if let code { o["code"] = .int(Int64(code)) }
        o["error"] = .string(error)
        return .object(o)
    }

    /// Reads `{"code":N,"error":"…"}` (or `{"error":"…"}`, or the uncaught `{"code":1,"message":"…"}`); `nil` for
    /// other shapes.
    public init?(json: JSON) {
        guard let o = json.objectValue else { return nil }
        let code = o["code"]?.intValue.map(Int.init)
        if let text = o["error"]?.stringValue {
            self.init(code: code, error: text)
        } else if let code, let text = o["message"]?.stringValue {
            self.init(code: code, error: text)
        } else {
            return nil
        }
    }

    /// The HTTP status parse-server answers a code with: 101 → 404, 1 → 500, 155 → 429, any other → 400; a body
    /// without a code is a 403 (key failures).
    public static func httpStatus(forCode code: Int?) -> Int {
        switch code {
        case nil: 403
        case 101: 404
        case 1: 500
        case 155: 429
        default: 400
        }
    }

    /// The response a server sends for this error.
    public func response(headers: HTTPFields = [.contentType: "application/json"]) -> TransportResponse {
        TransportResponse(status: .init(code: ParseErrorBody.httpStatus(forCode: code)), headers: headers, body: json.data())
    }

    /// The error body a server answers for an ``MBaaSError`` (server direction): its vendor code when it is a
    /// number, 124 (TIMEOUT) for a query stopped for time (``QueryTimeLimitExceeded``), else the code of its kind (not found 101, unauthorized 209, forbidden 119, duplicate 137, conflict
    /// 159, rate limited 155, invalid request 107, unsupported -1 OTHER_CAUSE, anything else 1).
    public init(_ error: MBaaSError) {
        if let v = error.vendorCode, let n = Int(v) {
            self.init(code: n, error: error.message)
            return
        }
        if QueryTimeLimitExceeded.isTimeLimit(error) {
            // 124 TIMEOUT, "the request timed out on the server; typically the request is too expensive to run"
            // [sdk] Parse-SDK-JS src/ParseError.js; answered with status 400, as every code not in
            // ``httpStatus(forCode:)``'s table [inferred].
            self.init(code: 124, error: error.message)
            return
        }
        let code: Int = switch error.kind {
        case .notFound: 101
        case .unauthorized: 209
        case .forbidden: 119
        case .duplicate: 137
        case .conflict: 159
        case .rateLimited: 155
        case .invalidRequest: 107
        case .unsupported: -1
        default: 1
        }
        self.init(code: code, error: error.message)
    }

    /// The neutral kind of a code. `onLogin`: the request was a log-in, where 101 means bad credentials.
    public static func kind(forCode code: Int?, httpStatus: Int?, onLogin: Bool = false) -> MBaaSError.Kind {
        guard let code else { return httpStatus.map(MBaaSError.kind(forHTTPStatus:)) ?? .invalidRequest }
        switch code {
        case 101: return onLogin ? .unauthorized : .notFound
        case 137, 202, 203, 208: return .duplicate
        case 209, 206, 251: return .unauthorized
        case 119: return .forbidden
        case 155: return .rateLimited
        case 100 where httpStatus == 429: return .rateLimited
        case 159: return .conflict
        case 1, 100, 124: return .unavailable
        default:
            if let httpStatus, httpStatus >= 500 { return .unavailable }
            return .invalidRequest
        }
    }

    /// The error as an ``MBaaSError`` keeping the vendor code (the number as a string), message and status.
    public func mbaasError(httpStatus: Int?, onLogin: Bool = false, context: String? = nil) -> MBaaSError {
        let message = (context.map { "\($0): " } ?? "") + (error.isEmpty ? "Parse error \(code.map(String.init) ?? "")" : error)
        return MBaaSError(ParseErrorBody.kind(forCode: code, httpStatus: httpStatus, onLogin: onLogin), message,
                          vendorCode: code.map(String.init), httpStatus: httpStatus)
    }

    /// Maps a non-2xx response to an ``MBaaSError``: the Parse error body when there is one, else the status.
    public static func error(from response: TransportResponse, now: Date, onLogin: Bool = false, context: String? = nil) -> MBaaSError {
        var error: MBaaSError
        if let json = try? JSON.parse(response.body), let body = ParseErrorBody(json: json) {
            error = body.mbaasError(httpStatus: response.status.code, onLogin: onLogin, context: context)
        } else {
            let snippet = String(decoding: response.body.prefix(200), as: UTF8.self)
            error = MBaaSError(MBaaSError.kind(forHTTPStatus: response.status.code),
                               (context.map { "\($0): " } ?? "") + "HTTP \(response.status.code)" + (snippet.isEmpty ? "" : ": \(snippet)"),
                               httpStatus: response.status.code)
        }
        error.retryAfter = response.retryAfter(now: now)
        return error
    }
}
