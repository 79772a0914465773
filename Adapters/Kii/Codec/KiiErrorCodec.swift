import Foundation
import MBaaSCore

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
    public static func error(for response: HTTPResponse, authenticated: Bool, now: Date = Date()) -> MBaaSError {
        let body = (try? JSON.parse(response.body)).flatMap(KiiErrorBody.init(json:))
        let code = body?.errorCode ?? exceptionCode(contentType: response.headers["Content-Type"])
            ?? (response.status == 401 ? "UNAUTHORIZED" : response.status == 429 ? "TOO_MANY_REQUESTS" : nil)
        var kind = code.flatMap { kinds[$0] } ?? MBaaSError.kind(forHTTPStatus: response.status)
        if code == "UNAUTHORIZED", authenticated { kind = .forbidden }
        if response.status == 429 { kind = .rateLimited }
        var message = body?.message ?? ""
        if message.isEmpty {
            message = code.map { "Kii error \($0)" } ?? "Kii answered HTTP \(response.status)"
            let snippet = String(decoding: response.body.prefix(200), as: UTF8.self)
            if body == nil, !snippet.isEmpty { message += ": \(snippet)" }
        }
        return MBaaSError(kind, message, vendorCode: code, httpStatus: response.status,
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
