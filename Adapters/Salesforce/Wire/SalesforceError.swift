public import Foundation
public import MBaaSCore

/// One item of Salesforce's REST error array, `[{"message","errorCode","fields"?}]`, or of a collection result's
/// `errors`, where the code is named `statusCode` [capture: salesforce.md "REST error shape"; sdk: Mobile SDK and
/// jsforce live tests for `statusCode` in collections].
///
/// `fields` is absent for INVALID_FIELD and MALFORMED_QUERY and present (possibly empty) for ENTITY_IS_DELETED,
/// REQUIRED_FIELD_MISSING, MALFORMED_ID and DUPLICATE_VALUE [capture]: `nil` here prints no `fields` member.
public struct SalesforceErrorItem: Sendable, Hashable {
    public var message: String
    public var errorCode: String
    public var fields: [String]?

    public init(message: String, errorCode: String, fields: [String]? = nil) {
        self.message = message
        self.errorCode = errorCode
        self.fields = fields
    }

    /// The REST form (`errorCode`), or the collection form (`statusCode`) when `inCollection`.
    public func json(inCollection: Bool = false) -> JSON {
        var o: JSONObject = ["message": .string(message)]
        o[inCollection ? "statusCode" : "errorCode"] = .string(errorCode)
        if let fields { o["fields"] = .array(fields.map(JSON.string)) }
        return .object(o)
    }

    /// Reads either form; `nil` when the object has neither `errorCode` nor `statusCode`.
    public init?(json: JSON) {
        guard let o = json.objectValue,
              let code = o["errorCode"]?.stringValue ?? o["statusCode"]?.stringValue else { return nil }
        self.init(message: o["message"]?.stringValue ?? "", errorCode: code,
                  fields: o["fields"]?.arrayValue.map { $0.compactMap(\.stringValue) })
    }

    /// The REST error body: a JSON array of items.
    public static func body(_ items: [SalesforceErrorItem]) -> JSON { .array(items.map { $0.json() }) }
}

/// The OAuth error of the token, revoke and userinfo endpoints, `{"error","error_description"}`, which is not the
/// REST array [capture: salesforce.md "Authentication"].
public struct SalesforceOAuthError: Error, Sendable, Hashable {
    public var error: String
    public var errorDescription: String

    public init(error: String, errorDescription: String) {
        self.error = error
        self.errorDescription = errorDescription
    }

    public var json: JSON { .object(["error": .string(error), "error_description": .string(errorDescription)]) }

    public init?(json: JSON) {
        guard let o = json.objectValue, let e = o["error"]?.stringValue else { return nil }
        self.init(error: e, errorDescription: o["error_description"]?.stringValue ?? "")
    }
}

/// Maps Salesforce errors onto ``MBaaSError`` and back, keeping the vendor code. Pure.
///
/// | code | kind | HTTP (server direction) | evidence |
/// |---|---|---|---|
/// | INVALID_SESSION_ID | unauthorized | 401 | capture |
/// | NOT_FOUND, ENTITY_IS_DELETED | notFound | 404 | capture |
/// | INVALID_FIELD, MALFORMED_QUERY, MALFORMED_ID, REQUIRED_FIELD_MISSING, JSON_PARSER_ERROR, INVALID_TYPE, INVALID_QUERY_LOCATOR, STRING_TOO_LONG, INVALID_FIELD_FOR_INSERT_UPDATE | invalidRequest | 400 | capture (first four), doc |
/// | DUPLICATE_VALUE | duplicate | 400 | capture |
/// | REQUEST_LIMIT_EXCEEDED | rateLimited | 403 | capture |
/// | INSUFFICIENT_ACCESS_OR_READONLY, INSUFFICIENT_ACCESS_ON_CROSS_REFERENCE_ENTITY, API_DISABLED_FOR_ORG | forbidden | 403 | doc |
/// | ENTITY_IS_LOCKED, PRECONDITION_FAILED (412 without a body) | conflict | 412 | doc / inferred |
/// | ALL_OR_NONE_OPERATION_ROLLED_BACK | invalidRequest (the batch reports the item that failed) | 400 | sdk |
/// | PROCESSING_HALTED (a Composite subrequest rolled back by another's failure), INVALID_API_INPUT | invalidRequest (the batch reports the subrequest that failed) | 400 | doc |
/// | UNKNOWN_EXCEPTION | unavailable | 500 | doc |
/// | OAuth `invalid_grant`, `invalid_client_id`, `invalid_client`, `unauthorized_client` | unauthorized | 400 | capture |
/// | OAuth `unsupported_grant_type`, `invalid_request` | invalidRequest | 400 | doc |
/// | OAuth `inactive_user`, `inactive_org` | forbidden | 400 | doc |
public enum SalesforceErrorCodec {
    public static let kinds: [String: MBaaSError.Kind] = {
        var k: [String: MBaaSError.Kind] = [:]
        k["INVALID_SESSION_ID"] = .unauthorized
        for c in ["NOT_FOUND", "ENTITY_IS_DELETED"] { k[c] = .notFound }
        for c in ["INVALID_FIELD", "MALFORMED_QUERY", "MALFORMED_ID", "REQUIRED_FIELD_MISSING", "JSON_PARSER_ERROR",
                  "INVALID_TYPE", "INVALID_QUERY_LOCATOR", "STRING_TOO_LONG", "INVALID_FIELD_FOR_INSERT_UPDATE",
                  "ALL_OR_NONE_OPERATION_ROLLED_BACK", "INVALID_CROSS_REFERENCE_KEY", "EXCEEDED_ID_LIMIT",
                  "PROCESSING_HALTED", "INVALID_API_INPUT"] {
            k[c] = .invalidRequest
        }
        k["DUPLICATE_VALUE"] = .duplicate
        k["REQUEST_LIMIT_EXCEEDED"] = .rateLimited
        for c in ["INSUFFICIENT_ACCESS_OR_READONLY", "INSUFFICIENT_ACCESS_ON_CROSS_REFERENCE_ENTITY",
                  "API_DISABLED_FOR_ORG"] { k[c] = .forbidden }
        for c in ["ENTITY_IS_LOCKED", "PRECONDITION_FAILED"] { k[c] = .conflict }
        for c in ["UNKNOWN_EXCEPTION", "QUERY_TIMEOUT", "REQUEST_RUNNING_TOO_LONG"] { k[c] = .unavailable }
        k["FEATURE_NOT_ENABLED"] = .unsupported
        for c in ["invalid_grant", "invalid_client_id", "invalid_client", "unauthorized_client"] { k[c] = .unauthorized }
        for c in ["unsupported_grant_type", "invalid_request"] { k[c] = .invalidRequest }
        for c in ["inactive_user", "inactive_org"] { k[c] = .forbidden }
        return k
    }()

    /// The HTTP status a server answers a REST error code with.
    public static let statuses: [String: Int] = [
        "INVALID_SESSION_ID": 401, "NOT_FOUND": 404, "ENTITY_IS_DELETED": 404, "REQUEST_LIMIT_EXCEEDED": 403,
        "INSUFFICIENT_ACCESS_OR_READONLY": 403, "INSUFFICIENT_ACCESS_ON_CROSS_REFERENCE_ENTITY": 403,
        "API_DISABLED_FOR_ORG": 403, "ENTITY_IS_LOCKED": 412, "PRECONDITION_FAILED": 412, "UNKNOWN_EXCEPTION": 500,
    ]

    /// The error of one item (REST array or collection result).
    public static func error(for item: SalesforceErrorItem, httpStatus: Int?) -> MBaaSError {
        let kind = kinds[item.errorCode] ?? httpStatus.map(MBaaSError.kind(forHTTPStatus:)) ?? .invalidRequest
        var e = MBaaSError(kind, item.message.isEmpty ? item.errorCode : item.message, vendorCode: item.errorCode,
                           httpStatus: httpStatus)
        if item.errorCode == "DUPLICATE_VALUE" || item.errorCode == "INVALID_FIELD" || item.errorCode == "REQUIRED_FIELD_MISSING",
           let field = item.fields?.first {
            e = e.refusing(field)
        }
        if item.errorCode == "MALFORMED_ID" { e = e.refusing(MBaaSError.recordIdKey) }
        return e
    }

    /// The error for a non-2xx response: the REST array's first item (the others are named in the message), the
    /// OAuth form, or the bare status (`412` is a ``MBaaSError/Kind/conflict`` with the code `PRECONDITION_FAILED`;
    /// an HTML or empty body is `ERROR_HTTP_<status>`, as jsforce names it [sdk: salesforce.md "jsforce"]).
    public static func error(for response: TransportResponse, now: Date = Date()) -> MBaaSError {
        let status = response.status.code
        let json = try? JSON.parse(response.body)
        var e: MBaaSError
        if let items = json?.arrayValue?.compactMap(SalesforceErrorItem.init(json:)), let first = items.first {
            e = error(for: first, httpStatus: status)
            if items.count > 1 {
                e.message += " (and " + items.dropFirst().map { "\($0.errorCode): \($0.message)" }.joined(separator: "; ") + ")"
            }
        } else if let json, let oauth = SalesforceOAuthError(json: json) {
            let kind = kinds[oauth.error] ?? MBaaSError.kind(forHTTPStatus: status)
            e = MBaaSError(kind, oauth.errorDescription.isEmpty ? oauth.error : oauth.errorDescription,
                           vendorCode: oauth.error, httpStatus: status)
        } else if status == 412 {
            e = MBaaSError(.conflict, "the record changed since the version given (HTTP 412 Precondition Failed)",
                           vendorCode: "PRECONDITION_FAILED", httpStatus: 412)
        } else if status == 403, String(decoding: response.body.prefix(64), as: UTF8.self)
                    .trimmingCharacters(in: .whitespacesAndNewlines) == "Bad_OAuth_Token" {
            // userinfo's answer to a token that is expired, revoked or unknown: a session problem, not a permission
            // one (the Mobile SDK refreshes on it) [doc/sdk: salesforce.md "Authentication"].
            e = MBaaSError(.unauthorized, "the access token is expired, revoked or unknown (userinfo: 403 Bad_OAuth_Token)",
                           vendorCode: "Bad_OAuth_Token", httpStatus: 403)
        } else {
            let text = String(decoding: response.body.prefix(200), as: UTF8.self)
            e = MBaaSError(MBaaSError.kind(forHTTPStatus: status),
                           text.isEmpty ? "HTTP \(status) without an error body" : text,
                           vendorCode: "ERROR_HTTP_\(status)", httpStatus: status)
        }
        if e.kind == .rateLimited || e.kind == .unavailable { e.retryAfter = response.retryAfter(now: now) }
        return e
    }

    /// The server direction: the status and REST error item that answer an error. A vendor code the codec knows is
    /// kept; otherwise the kind decides (`invalidRequest` → 400 INVALID_FIELD, `duplicate` → 400 DUPLICATE_VALUE,
    /// `conflict` → 412 PRECONDITION_FAILED, `unsupported` → 400 FEATURE_NOT_ENABLED, `unavailable`/`internal` →
    /// 500 UNKNOWN_EXCEPTION [inferred: the codes are Salesforce's, the choice per kind is ours]).
    ///
    /// Work stopped for time (``MBaaSCore/QueryTimeLimitExceeded``) answers 400 `QUERY_TIMEOUT` for a query's
    /// budget and 400 `REQUEST_RUNNING_TOO_LONG` for the server's request deadline [sdk: restforce's `ErrorCode`
    /// names both; doc: the Bulk API guide names `QUERY_TIMEOUT` for a query past its time limit; the status is
    /// inferred].
    public static func restError(for error: MBaaSError) -> (status: Int, item: SalesforceErrorItem) {
        if let limit = QueryTimeLimitExceeded.of(error) {
            let code = limit.scope == .request ? "REQUEST_RUNNING_TOO_LONG" : "QUERY_TIMEOUT"
            return (400, SalesforceErrorItem(message: error.message, errorCode: code))
        }
        if let code = error.vendorCode, let kind = kinds[code], kind == error.kind, code == code.uppercased() {
            let fields = error.refusedField.map { [$0] }
            return (statuses[code] ?? 400, SalesforceErrorItem(message: error.message, errorCode: code, fields: fields))
        }
        let (status, code): (Int, String) = switch error.kind {
        case .notFound: (404, "NOT_FOUND")
        case .unauthorized: (401, "INVALID_SESSION_ID")
        case .forbidden: (403, "INSUFFICIENT_ACCESS_OR_READONLY")
        case .conflict: (412, "PRECONDITION_FAILED")
        case .duplicate: (400, "DUPLICATE_VALUE")
        case .rateLimited: (403, "REQUEST_LIMIT_EXCEEDED")
        case .unsupported: (400, "FEATURE_NOT_ENABLED")
        case .invalidRequest: (400, "INVALID_FIELD")
        default: (500, "UNKNOWN_EXCEPTION")
        }
        let fields: [String]? = ["DUPLICATE_VALUE"].contains(code) ? (error.refusedField.map { [$0] } ?? []) : nil
        return (status, SalesforceErrorItem(message: error.message, errorCode: code, fields: fields))
    }

    /// The server direction for the token endpoint: 400 `invalid_grant` "authentication failure" for a bad user
    /// or password, `invalid_client_id` for an unknown client, `invalid_client` for a wrong secret
    /// [capture: salesforce.md "Errors"; doc for `invalid_client`].
    public static func oauthError(for error: MBaaSError) -> (status: Int, body: SalesforceOAuthError) {
        if let code = error.vendorCode, kinds[code] != nil, code == code.lowercased() {
            return (400, SalesforceOAuthError(error: code, errorDescription: error.message))
        }
        switch error.kind {
        case .unauthorized: return (400, SalesforceOAuthError(error: "invalid_grant", errorDescription: "authentication failure"))
        case .forbidden: return (400, SalesforceOAuthError(error: "inactive_user", errorDescription: error.message))
        default: return (400, SalesforceOAuthError(error: "invalid_request", errorDescription: error.message))
        }
    }
}
