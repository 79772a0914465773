import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The one error type every MBaaSKit API throws.
///
/// Adapters map each vendor error to a ``Kind`` and keep the vendor's own ``vendorCode`` (`E404001`,
/// `OBJECT_NOT_FOUND`, `errCode 130`...), message and HTTP status, so a user sees both the neutral meaning and
/// what the server actually said.
public struct MBaaSError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, independent of the vendor.
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        /// The record, file, class or user does not exist.
        case notFound
        /// No valid session or credentials (wrong password, expired token).
        case unauthorized
        /// Authenticated, but not allowed (ACL, access rule, scope).
        case forbidden
        /// A version check failed: the record changed since it was read.
        case conflict
        /// A unique value (user name, e-mail, id) is already taken.
        case duplicate
        /// The request is malformed: bad field, bad query, bad class name, bad value.
        case invalidRequest
        /// Too many requests; ``MBaaSError/retryAfter`` says when to come back, if the server said.
        case rateLimited
        /// The server is down or overloaded (5xx).
        case unavailable
        /// The backend cannot do this; a declared capability is missing.
        case unsupported
        /// The request did not complete: connection refused or reset, timeout, cancelled.
        case transport
        /// The response could not be understood.
        case decoding
    }

    public var kind: Kind
    public var message: String
    /// The vendor's own error code, verbatim (`"E404001"`, `"OBJECT_NOT_FOUND"`, `"130"`).
    public var vendorCode: String?
    /// The HTTP status of the response that carried the error.
    public var httpStatus: Int?
    /// Seconds to wait before retrying, from `Retry-After` or the vendor's body.
    public var retryAfter: TimeInterval?
    /// The error that caused this one, if any.
    public var underlying: (any Error & Sendable)?

    public init(
        _ kind: Kind, _ message: String, vendorCode: String? = nil, httpStatus: Int? = nil,
        retryAfter: TimeInterval? = nil, underlying: (any Error & Sendable)? = nil
    ) {
        self.kind = kind
        self.message = message
        self.vendorCode = vendorCode
        self.httpStatus = httpStatus
        self.retryAfter = retryAfter
        self.underlying = underlying
    }

    /// `kind: message [vendor code X, HTTP N]`, the form the CLI prints.
    public var description: String {
        var extras: [String] = []
        if let vendorCode { extras.append("vendor code \(vendorCode)") }
        if let httpStatus { extras.append("HTTP \(httpStatus)") }
        if let retryAfter { extras.append("retry after \(retryAfter)s") }
        return "\(kind.rawValue): \(message)" + (extras.isEmpty ? "" : " [\(extras.joined(separator: ", "))]")
    }

    /// A missing capability, named, for a backend.
    public static func unsupported(_ feature: String, by backend: String, reason: String? = nil) -> MBaaSError {
        MBaaSError(.unsupported, "\(backend) does not support \(feature)" + (reason.map { ": \($0)" } ?? ""))
    }

    /// The kind a bare HTTP status implies, for vendors whose body says nothing better.
    public static func kind(forHTTPStatus status: Int) -> Kind {
        switch status {
        case 400, 422: .invalidRequest
        case 401: .unauthorized
        case 403: .forbidden
        case 404: .notFound
        case 409: .duplicate
        case 412: .conflict
        case 429: .rateLimited
        case 500...599: .unavailable
        default: .invalidRequest
        }
    }
}

extension MBaaSError {
    /// The error as an `MBaaSError`: itself if it is one, `transport` for `CancellationError` and `URLError`,
    /// else `invalidRequest` carrying the description.
    public static func wrap(_ error: any Error) -> MBaaSError {
        switch error {
        case let e as MBaaSError: return e
        case is CancellationError: return MBaaSError(.transport, "cancelled", underlying: CancellationError())
        case let e as URLError:
            return MBaaSError(.transport, "\(e.code == .cancelled ? "cancelled" : e.localizedDescription) (URLError \(e.code.rawValue))", underlying: e)
        case let e as JSONParseError: return MBaaSError(.decoding, e.description, underlying: e)
        default: return MBaaSError(.invalidRequest, "\(error)")
        }
    }
}
