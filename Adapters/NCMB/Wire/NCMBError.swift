public import Foundation
public import MBaaSCore

/// NCMB error codes (`{"code":"E404001","error":"No data available."}`) and how they map to ``MBaaSError``.
///
/// The HTTP status is digits 2–4 of the code (E404001 → 404), except E100001, which the client raises itself when
/// a response signature does not match. The vendor code, message and HTTP status are kept in the error.
public struct NCMBErrorBody: Sendable, Hashable {
    public var code: String
    public var error: String

    public init(code: String, error: String) {
        self.code = code
        self.error = error
    }

    /// An error body with the documented message of a code.
    public init(code: String) {
        self.init(code: code, error: NCMBErrorBody.table[code]?.message ?? "Error.")
    }

    public var json: JSON { .object(["code": .string(code), "error": .string(error)]) }

    /// Reads `{"code":"E…","error":"…"}`; `nil` when the body is not that shape.
    public init?(json: JSON) {
        guard let code = json["code"]?.stringValue, code.hasPrefix("E") else { return nil }
        self.init(code: code, error: json["error"]?.stringValue ?? "")
    }

    /// The HTTP status a code implies (E404001 → 404); `nil` for E100001 and malformed codes.
    public static func httpStatus(forCode code: String) -> Int? {
        guard code.count == 7, code.hasPrefix("E"), let n = Int(code.dropFirst().prefix(3)), n >= 400 else { return nil }
        return n
    }

    /// The response a server sends for this error.
    public func response(headers: HTTPFields = [.contentType: "application/json"]) -> TransportResponse {
        TransportResponse(status: .init(code: NCMBErrorBody.httpStatus(forCode: code) ?? 400), headers: headers, body: json.data())
    }

    /// The error body a server answers for an ``MBaaSError`` (server direction): its vendor code when it is an
    /// NCMB code (`E404001`), else the code of its kind: not found E404001, unauthorized E401001, forbidden
    /// E403001, duplicate and conflict E409001, rate limited E429002, unavailable E503001, unsupported E405001,
    /// too large E413002, anything else E400000 (a bad request) or E500001 (a server fault). The message is the
    /// error's own.
    public init(_ error: MBaaSError) {
        if let code = error.vendorCode, NCMBErrorBody.httpStatus(forCode: code) != nil {
            self.init(code: code, error: error.message)
            return
        }
        let code: String = switch error.kind {
        case .notFound: "E404001"
        case .unauthorized: "E401001"
        case .forbidden: "E403001"
        case .duplicate, .conflict: "E409001"
        case .rateLimited: "E429002"
        case .unavailable: "E503001"
        case .unsupported: "E405001"
        case .invalidRequest: "E400000"
        default: "E500001"
        }
        self.init(code: code, error: error.message)
    }

    /// The neutral kind of a code; unknown codes fall back to the HTTP status.
    public static func kind(forCode code: String, httpStatus: Int?) -> MBaaSError.Kind {
        if let entry = table[code] { return entry.kind }
        if let status = httpStatus ?? NCMBErrorBody.httpStatus(forCode: code) { return MBaaSError.kind(forHTTPStatus: status) }
        return .invalidRequest
    }

    /// The error as an ``MBaaSError`` keeping the vendor code, message and status.
    public func mbaasError(httpStatus: Int?, context: String? = nil) -> MBaaSError {
        let message = (context.map { "\($0): " } ?? "") + (error.isEmpty ? (NCMBErrorBody.table[code]?.message ?? code) : error)
        return MBaaSError(NCMBErrorBody.kind(forCode: code, httpStatus: httpStatus), message, vendorCode: code,
                          httpStatus: httpStatus)
    }

    /// Every documented code: its neutral kind and message (ncmb.md §1.11).
    public static let table: [String: (kind: MBaaSError.Kind, message: String)] = [
        "E100001": (.decoding, "Authentication error by response signature incorrect."),
        "E400000": (.invalidRequest, "Bad Request."),
        "E400001": (.invalidRequest, "JSON is invalid format."),
        "E400002": (.invalidRequest, "Type is invalid."),
        "E400003": (.invalidRequest, "Required field is empty."),
        "E400004": (.invalidRequest, "Invalid format."),
        "E400005": (.invalidRequest, "Not a valid value."),
        "E400006": (.invalidRequest, "Does not exist."),
        "E400007": (.invalidRequest, "Invalid format in import."),
        "E400008": (.invalidRequest, "Correlated fields are invalid."),
        "E400009": (.invalidRequest, "Size out of range."),
        "E401000": (.unauthorized, "Unauthorized."),
        "E401001": (.unauthorized, "Authentication error by header incorrect."),
        "E401002": (.unauthorized, "Authentication error with ID/PASS incorrect."),
        "E401003": (.unauthorized, "OAuth authentication error."),
        "E401004": (.forbidden, "No settlement for a free plan."),
        "E403000": (.forbidden, "Forbidden."),
        "E403001": (.forbidden, "No access with ACL."),
        "E403002": (.forbidden, "Unauthorized operation."),
        "E403003": (.forbidden, "Operation that are prohibited."),
        "E403004": (.forbidden, "One-time token expired."),
        "E403005": (.forbidden, "Setting is disabled."),
        "E403006": (.invalidRequest, "Invalid GeoPoint value."),
        "E404001": (.notFound, "No data available."),
        "E404002": (.notFound, "None service."),
        "E404003": (.notFound, "No such field."),
        "E404004": (.notFound, "No such device token."),
        "E404005": (.notFound, "No such application."),
        "E404006": (.notFound, "No such user."),
        "E405001": (.invalidRequest, "Method or URI not allowed."),
        "E405002": (.invalidRequest, "Method or URI not allowed."),
        "E409001": (.duplicate, "Duplication."),
        "E413001": (.invalidRequest, "File size limit exceeded."),
        "E413002": (.invalidRequest, "Document size limit exceeded."),
        "E413003": (.invalidRequest, "Bulk operation limit exceeded."),
        "E414000": (.invalidRequest, "Request URI too long."),
        "E415001": (.invalidRequest, "Unsupported Content-Type."),
        "E429001": (.rateLimited, "Usage limit exceeded."),
        "E429002": (.rateLimited, "Too many requests."),
        "E500001": (.unavailable, "System error"),
        "E502001": (.unavailable, "Storage error."),
        "E502002": (.unavailable, "Mail failure."),
        "E503001": (.unavailable, "Service unavailable."),
    ]
}

extension NCMBErrorBody {
    /// Maps a non-2xx response to an ``MBaaSError``: the NCMB error body when there is one, else the status.
    public static func error(from response: TransportResponse, now: Date, context: String? = nil) -> MBaaSError {
        let prefix = context.map { "\($0): " } ?? ""
        var error: MBaaSError
        if let json = try? JSON.parse(response.body), let body = NCMBErrorBody(json: json) {
            error = body.mbaasError(httpStatus: response.status.code, context: context)
        } else {
            let snippet = String(decoding: response.body.prefix(200), as: UTF8.self)
            error = MBaaSError(MBaaSError.kind(forHTTPStatus: response.status.code),
                               prefix + "HTTP \(response.status.code)" + (snippet.isEmpty ? "" : ": \(snippet)"),
                               httpStatus: response.status.code)
        }
        error.retryAfter = response.retryAfter(now: now)
        return error
    }
}
