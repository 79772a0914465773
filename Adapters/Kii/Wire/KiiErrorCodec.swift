public import Foundation
public import MBaaSCore

/// A Kii error body (kii.md §7.1): `{"errorCode":"OBJECT_NOT_FOUND","message":..,...extras}`, or the OAuth form
/// `{"errorCode":"invalid_grant","error_description":..}`.
public struct KiiErrorBody: Sendable, Hashable {
    public var errorCode: String
    public var message: String?
    /// Type-specific members (`objectScope`, `bucketID`, `objectID`, `authenticatedPrincipalID`...).
    public var extras: JSONObject

    public init(errorCode: String, message: String? = nil, extras: JSONObject = [:]) {
        self.errorCode = errorCode
        self.message = message
        self.extras = extras
    }

    public var json: JSON {
        var o: JSONObject = ["errorCode": .string(errorCode)]
        if let message {
            o[errorCode == errorCode.lowercased() ? "error_description" : "message"] = .string(message)
        }
        for (k, v) in extras where o[k] == nil { o[k] = v }
        return .object(o)
    }

    public init?(json: JSON) {
        guard let o = json.objectValue, let code = o["errorCode"]?.stringValue ?? o["error"]?.stringValue else { return nil }
        var extras = o
        for k in ["errorCode", "error", "message", "error_description"] { extras[k] = nil }
        self.init(errorCode: code, message: o["message"]?.stringValue ?? o["error_description"]?.stringValue, extras: extras)
    }

    /// The error Content-Type: `application/vnd.kii.{Exception}+json` (kii.md §7.1), e.g. `ObjectNotFoundException`
    /// for `OBJECT_NOT_FOUND`.
    public var contentType: String {
        if errorCode == errorCode.lowercased() { return "application/json" }
        if let name = KiiErrorCodec.exceptionCodes.first(where: { $0.value == errorCode })?.key {
            return "application/vnd.kii.\(name)Exception+json"
        }
        let words = errorCode.split(separator: "_").map { $0 == "ACL" ? "ACL" : $0.prefix(1) + $0.dropFirst().lowercased() }
        return "application/vnd.kii.\(words.joined())Exception+json"
    }
}

/// Maps Kii error responses to ``MBaaSError`` (kii.md §7). Pure.
///
/// The code is taken from the body's `errorCode` first, then from the Content-Type's exception name
/// (`application/vnd.kii.ObjectBodyNotFoundException+json` → `OBJECT_BODY_NOT_FOUND`), then from the HTTP status;
/// the vendor code, message and status are kept in the error.
public enum KiiErrorCodec {
    /// The neutral kind of each documented `errorCode` (kii.md §7.2, §2.1).
    public static let kinds: [String: MBaaSError.Kind] = {
        var k: [String: MBaaSError.Kind] = [:]
        for c in ["OBJECT_NOT_FOUND", "BUCKET_NOT_FOUND", "OBJECT_BODY_NOT_FOUND", "USER_NOT_FOUND", "APP_NOT_FOUND",
                  "GROUP_NOT_FOUND", "ACL_NOT_FOUND", "USER_ADDRESS_NOT_FOUND", "PUBLICATION_NOT_FOUND",
                  "OBJECT_BODY_UPLOAD_NOT_FOUND", "TOPIC_NOT_FOUND", "FILTER_NOT_FOUND", "PUSH_SUBSCRIPTION_NOT_FOUND",
                  "PUBLICATION_EXPIRED", "PIN_CODE_EXPIRED"] { k[c] = .notFound }
        for c in ["UNAUTHORIZED", "AUTHENTICATION_FAILED", "WRONG_PASSWORD", "USER_DISABLED", "WRONG_TOKEN",
                  "WRONG_REFRESH_TOKEN", "invalid_grant", "invalid_client", "unauthorized_client"] { k[c] = .unauthorized }
        for c in ["APP_DISABLED", "OPERATION_NOT_SUPPORTED", "INVALID_VERIFICATION_CODE"] { k[c] = .forbidden }
        for c in ["OBJECT_ALREADY_EXISTS", "USER_ALREADY_EXISTS", "BUCKET_ALREADY_EXISTS", "ACL_ALREADY_EXISTS",
                  "GROUP_ALREADY_EXISTS", "UNIQUE_CONSTRAINT_VIOLATED", "OBJECT_BODY_UPLOAD_ALREADY_EXISTS"] { k[c] = .duplicate }
        for c in ["OBJECT_VERSION_IS_STALE", "OBJECT_CONFLICT", "OBJECT_BODY_INTEGRITY_NOT_ASSURED"] { k[c] = .conflict }
        for c in ["INVALID_OBJECT_ID", "VERSIONED_UPDATES_NOT_SUPPORTED", "OBJECT_BODY_RANGE_NOT_SATISFIABLE",
                  "INVALID_ACCOUNT_STATUS", "ACCOUNT_TYPE_NOT_SUPPORTED", "OAUTH2_ERROR", "INVALID_INPUT_DATA",
                  "INVALID_JSON", "INVALID_JSON_SCHEMA", "INVALID_DATA_TYPE", "MISSING_DATA", "INVALID_BUCKET",
                  "BUCKET_TYPE_NOT_SUPPORTED", "PASSWORD_TOO_SHORT", "OPERATION_NOT_ALLOWED", "INVALID_STATUS",
                  "invalid_request", "unsupported_grant_type"] { k[c] = .invalidRequest }
        for c in ["QUERY_NOT_SUPPORTED", "OPERATION_NOT_IMPLEMENTED"] { k[c] = .unsupported }
        for c in ["QUERY_TIMEOUT", "LOCK_FAILED", "RESOURCE_TEMPORARILY_UNAVAILABLE", "TEMPORARY_UNAVAILABLE_ERROR",
                  "UNDEFINED_ERROR", "INDEX_FAILED"] { k[c] = .unavailable }
        k["TOO_MANY_REQUESTS"] = .rateLimited
        return k
    }()

    /// Codes that mean the session's token is no longer valid (the client then drops its session).
    public static let sessionEndingCodes: Set<String> = ["WRONG_TOKEN"]

    /// The error for a non-2xx response.
    ///
    /// - Parameter authenticated: whether the request carried a user token. Kii answers an ACL refusal with
    ///   `UNAUTHORIZED` (401, `UnauthorizedAccessException` naming the authenticated principal, kii.md §7.1): with a
    ///   token that is ``MBaaSError/Kind/forbidden`` (the user is known but not allowed), without one it is
    ///   ``MBaaSError/Kind/unauthorized``.
    public static func error(for response: TransportResponse, authenticated: Bool, now: Date = Date()) -> MBaaSError {
        let body = (try? JSON.parse(response.body)).flatMap(KiiErrorBody.init(json:))
        let code = body?.errorCode ?? exceptionCode(contentType: response.headers["Content-Type"])
            ?? (response.status == 401 ? "UNAUTHORIZED" : response.status == 429 ? "TOO_MANY_REQUESTS" : nil)
        var kind = code.flatMap { kinds[$0] } ?? MBaaSError.kind(forHTTPStatus: response.status.code)
        if code == "UNAUTHORIZED", authenticated { kind = .forbidden }
        if response.status == 429 { kind = .rateLimited }
        var message = body?.message ?? ""
        if message.isEmpty {
            message = code.map { "Kii error \($0)" } ?? "Kii answered HTTP \(response.status.code)"
            let snippet = String(decoding: response.body.prefix(200), as: UTF8.self)
            if body == nil, !snippet.isEmpty { message += ": \(snippet)" }
        }
        return MBaaSError(kind, message, vendorCode: code, httpStatus: response.status.code,
                          retryAfter: kind == .rateLimited ? response.retryAfter(now: now) : nil)
    }

    /// Exception names whose errorCode is not the name spelled in upper snake case, as the REST reference names
    /// them ([doc] kii.md §7.1, documentation.kii.com/rest: `UnauthorizedAccessException` carries errorCode
    /// `UNAUTHORIZED`).
    public static let exceptionCodes: [String: String] = ["UnauthorizedAccess": "UNAUTHORIZED"]

    /// The errorCode a body-less error's Content-Type names: the REST reference's code when it lists the exception
    /// (``exceptionCodes``), else the exception name in upper snake case with acronyms kept whole:
    /// `application/vnd.kii.ObjectBodyNotFoundException+json` → `OBJECT_BODY_NOT_FOUND`,
    /// `ACLAlreadyExistsException` → `ACL_ALREADY_EXISTS`, `UnauthorizedAccessException` → `UNAUTHORIZED`.
    public static func exceptionCode(contentType: String?) -> String? {
        guard let ct = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces),
              ct.hasPrefix("application/vnd.kii."), ct.hasSuffix("Exception+json")
        else { return nil }
        let name = String(ct.dropFirst("application/vnd.kii.".count).dropLast("Exception+json".count))
        guard !name.isEmpty else { return nil }
        if let known = exceptionCodes[name] { return known }
        let chars = Array(name)
        var out = ""
        for (i, ch) in chars.enumerated() {
            if i > 0, ch.isUppercase {
                let previous = chars[i - 1]
                let nextIsLower = i + 1 < chars.count && chars[i + 1].isLowercase
                // A word starts at an upper-case letter after a lower-case one or a digit, or at the last capital
                // of an acronym that a lower-case letter follows (ACLAlready → ACL_ALREADY).
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && nextIsLower) { out += "_" }
            }
            out += ch.uppercased()
        }
        return out
    }
}

// MARK: Server direction

extension KiiErrorBody {
    /// The HTTP status of each errorCode (kii.md §7.2, the JS SDK's `SERVER_ERROR_CODES`; `invalid_grant` 400,
    /// kii.md §2.1 [inferred]); codes not listed are answered with the status of their kind.
    public static let statuses: [String: Int] = [
        "UNAUTHORIZED": 401, "WRONG_TOKEN": 403, "WRONG_REFRESH_TOKEN": 403, "AUTHENTICATION_FAILED": 401,
        "WRONG_PASSWORD": 401, "USER_DISABLED": 401, "APP_NOT_FOUND": 404, "APP_DISABLED": 403, "USER_NOT_FOUND": 404,
        "USER_ALREADY_EXISTS": 409, "USER_ADDRESS_NOT_FOUND": 404, "INVALID_ACCOUNT_STATUS": 400,
        "ACCOUNT_TYPE_NOT_SUPPORTED": 400, "OAUTH2_ERROR": 400, "INVALID_INPUT_DATA": 400, "INVALID_JSON": 400,
        "INVALID_JSON_SCHEMA": 400, "INVALID_DATA_TYPE": 400, "MISSING_DATA": 400, "OPERATION_NOT_ALLOWED": 409,
        "OPERATION_NOT_SUPPORTED": 403, "UNIQUE_CONSTRAINT_VIOLATED": 409, "INVALID_STATUS": 409, "LOCK_FAILED": 503,
        "TEMPORARY_UNAVAILABLE_ERROR": 503, "OPERATION_NOT_IMPLEMENTED": 501, "PIN_CODE_EXPIRED": 410,
        "OBJECT_NOT_FOUND": 404, "OBJECT_ALREADY_EXISTS": 409, "OBJECT_VERSION_IS_STALE": 409, "OBJECT_CONFLICT": 409,
        "INVALID_OBJECT_ID": 400, "VERSIONED_UPDATES_NOT_SUPPORTED": 400, "OBJECT_BODY_NOT_FOUND": 404,
        "OBJECT_BODY_RANGE_NOT_SATISFIABLE": 416, "OBJECT_BODY_INTEGRITY_NOT_ASSURED": 412,
        "OBJECT_BODY_UPLOAD_NOT_FOUND": 404, "OBJECT_BODY_UPLOAD_ALREADY_EXISTS": 409, "PUBLICATION_NOT_FOUND": 404,
        "PUBLICATION_EXPIRED": 410, "BUCKET_NOT_FOUND": 404, "BUCKET_ALREADY_EXISTS": 409, "INVALID_BUCKET": 400,
        "BUCKET_TYPE_NOT_SUPPORTED": 400, "QUERY_NOT_SUPPORTED": 400, "QUERY_TIMEOUT": 503, "ACL_NOT_FOUND": 404,
        "ACL_ALREADY_EXISTS": 409, "GROUP_NOT_FOUND": 404, "GROUP_ALREADY_EXISTS": 409,
        "RESOURCE_TEMPORARILY_UNAVAILABLE": 503, "UNDEFINED_ERROR": 500, "INDEX_FAILED": 500,
        "INVALID_VERIFICATION_CODE": 403, "PASSWORD_TOO_SHORT": 400, "TOO_MANY_REQUESTS": 429,
        "invalid_grant": 400, "invalid_request": 400, "unsupported_grant_type": 400, "invalid_client": 400,
        // [inferred] Kii documents no code for an over-long request; the emulator names it so.
        "REQUEST_ENTITY_TOO_LARGE": 413,
    ]

    /// The status a server answers this error with.
    public var status: Int {
        KiiErrorBody.statuses[errorCode] ?? KiiErrorCodec.kinds[errorCode].map(KiiErrorBody.status(forKind:)) ?? 400
    }

    /// The errorCode and status of a neutral kind: not found `OBJECT_NOT_FOUND` 404, unauthorized `UNAUTHORIZED` 401,
    /// forbidden `UNAUTHORIZED` 401 (Kii answers ACL refusals with `UnauthorizedAccessException`, kii.md §7.1),
    /// duplicate `OBJECT_ALREADY_EXISTS` 409, conflict `OBJECT_VERSION_IS_STALE` 409, unsupported
    /// `OPERATION_NOT_SUPPORTED` 403, rate limited `TOO_MANY_REQUESTS` 429, unavailable
    /// `TEMPORARY_UNAVAILABLE_ERROR` 503, invalid request `INVALID_INPUT_DATA` 400, anything else
    /// `UNDEFINED_ERROR` 500.
    public static func code(forKind kind: MBaaSError.Kind) -> String {
        switch kind {
        case .notFound: "OBJECT_NOT_FOUND"
        case .unauthorized, .forbidden: "UNAUTHORIZED"
        case .duplicate: "OBJECT_ALREADY_EXISTS"
        case .conflict: "OBJECT_VERSION_IS_STALE"
        case .unsupported: "OPERATION_NOT_SUPPORTED"
        case .rateLimited: "TOO_MANY_REQUESTS"
        case .unavailable: "TEMPORARY_UNAVAILABLE_ERROR"
        case .invalidRequest, .decoding: "INVALID_INPUT_DATA"
        default: "UNDEFINED_ERROR"
        }
    }

    static func status(forKind kind: MBaaSError.Kind) -> Int {
        statuses[code(forKind: kind)] ?? 400
    }

    /// The error body a server answers for an ``MBaaSError`` (server direction): `QUERY_TIMEOUT` (503) for work
    /// stopped for time (``MBaaSCore/QueryTimeLimitExceeded``: a query's matching budget [doc: kii.md §4.3, the query
    /// reference's errors] or the server's request deadline, any request [inferred: Kii documents no other timeout
    /// code]), else its vendor code when it is a Kii code (one of
    /// ``statuses``), else the code of its kind (``code(forKind:)``). The message is the error's own.
    public init(_ error: MBaaSError, extras: JSONObject = [:]) {
        if QueryTimeLimitExceeded.isTimeLimit(error) {
            self.init(errorCode: "QUERY_TIMEOUT", message: error.message, extras: extras)
        } else if let code = error.vendorCode, KiiErrorBody.statuses[code] != nil {
            self.init(errorCode: code, message: error.message, extras: extras)
        } else {
            self.init(errorCode: KiiErrorBody.code(forKind: error.kind), message: error.message, extras: extras)
        }
    }

    /// The response a server sends: the status of the code, the exception Content-Type (``contentType``), and the
    /// JSON body.
    public func response(status: Int? = nil) -> TransportResponse {
        TransportResponse(status: .init(code: status ?? self.status), headers: [.contentType: contentType], body: json.data())
    }
}
