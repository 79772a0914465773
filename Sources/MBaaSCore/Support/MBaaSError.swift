public import Foundation
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
    ///
    /// Extensible like ``Capabilities/Feature``: a `RawRepresentable` string with the core's kinds as static
    /// members (``allCases``); adapters may define their own, as a static member made with ``init(rawValue:)``
    /// (GRDB's `ResultCode` is built the same way). Not `ExpressibleByStringLiteral`: a misspelt kind
    /// (`"notFund"`) does not compile; write `.notFound`. It encodes as its raw value, a JSON string
    /// (`"notFound"`), and decodes any string, so kinds an adapter adds round-trip too. Code that maps kinds
    /// (exit statuses, retry policies) must handle unknown kinds with a default.
    public struct Kind: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The record, file, class or user does not exist.
        public static let notFound = Kind(rawValue: "notFound")
        /// No valid session or credentials (wrong password, expired token).
        public static let unauthorized = Kind(rawValue: "unauthorized")
        /// Authenticated, but not allowed (ACL, access rule, scope).
        public static let forbidden = Kind(rawValue: "forbidden")
        /// A version check failed: the record changed since it was read.
        public static let conflict = Kind(rawValue: "conflict")
        /// A unique value (user name, e-mail, id) is already taken.
        public static let duplicate = Kind(rawValue: "duplicate")
        /// The request is malformed: bad field, bad query, bad class name, bad value, or beyond a documented
        /// limit (query complexity, sizes).
        public static let invalidRequest = Kind(rawValue: "invalidRequest")
        /// Too many requests; ``MBaaSError/retryAfter`` says when to come back, if the server said.
        public static let rateLimited = Kind(rawValue: "rateLimited")
        /// The server is down or overloaded (5xx), or the database is busy: retrying later may work.
        public static let unavailable = Kind(rawValue: "unavailable")
        /// The backend cannot do this; a declared capability is missing.
        public static let unsupported = Kind(rawValue: "unsupported")
        /// The request did not complete: connection refused or reset, timeout, cancelled.
        public static let transport = Kind(rawValue: "transport")
        /// The response could not be understood.
        public static let decoding = Kind(rawValue: "decoding")
        /// A local file could not be read or written (a full disk, a missing directory, permissions, stdout):
        /// neither the caller's request nor the backend is at fault, and retrying alone will not help.
        public static let localIO = Kind(rawValue: "localIO")
        /// A failure that is not the caller's: an unexpected error inside MBaaSKit or a library it uses.
        public static let `internal` = Kind(rawValue: "internal")

        /// The kinds the core defines, in documentation order.
        public static let allCases: [Kind] = [
            .notFound, .unauthorized, .forbidden, .conflict, .duplicate, .invalidRequest, .rateLimited, .unavailable,
            .unsupported, .transport, .decoding, .localIO, .internal,
        ]
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
    /// The field or metadata key the request was refused for, where the adapter knows it: ``recordIdKey`` when a
    /// record id given by the client is refused (not valid for the backend, or ids are not taken at all);
    /// ``usernameKey`` or ``emailKey`` when a sign-up is a ``Kind/duplicate`` for that value; `Class.field` for an
    /// entry of a field-type document that is not a type name (``fieldTypes(fromJSON:context:)``). Set by the
    /// adapter that raises the error, never read from ``message``: callers decide on it (the migration writes a
    /// record again without its id only for this; the emulator's dialects answer the vendor's code for a taken user
    /// name or e-mail), not on the wording.
    public var refusedField: String?

    /// The version the record has now, on a ``Kind/conflict`` raised by a version check (an update or delete with
    /// an expected version that is no longer the record's), where the backend said it. Set by the adapter that
    /// raises the error; callers that retry or report read it here, never from ``message``.
    public var currentVersion: String?

    /// The ``refusedField`` of a refused client-supplied record id.
    public static let recordIdKey = "id"
    /// The ``refusedField`` of a ``Kind/duplicate`` sign-up whose user name is taken.
    public static let usernameKey = "username"
    /// The ``refusedField`` of a ``Kind/duplicate`` sign-up (or profile change) whose e-mail address is taken.
    public static let emailKey = "email"

    /// Whether the backend refused the record id the client gave (``refusedField`` is ``recordIdKey``).
    public var refusesRecordId: Bool { refusedField == Self.recordIdKey }

    /// This error with ``refusedField`` set.
    public func refusing(_ field: String) -> MBaaSError {
        var e = self
        e.refusedField = field
        return e
    }

    /// This error with ``currentVersion`` set (`nil` leaves it unset).
    public func conflicting(currentVersion version: String?) -> MBaaSError {
        var e = self
        e.currentVersion = version
        return e
    }

    /// ``vendorCode`` as a number, for vendors whose codes are numbers (AppPot's `130`, Parse's `209`);
    /// `nil` when there is no code or it is not a decimal integer (`"E404001"`, `"OBJECT_NOT_FOUND"`).
    public var numericVendorCode: Int? { vendorCode.flatMap { Int($0) } }

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
    /// `decoding` for a JSON parse error, `localIO` for file-system errors (Cocoa file errors, POSIX errors),
    /// else ``Kind/internal`` (a failure that is not the caller's). Messages say what happened
    /// (``describe(_:)``), never a raw `NSError` dump.
    public static func wrap(_ error: any Error) -> MBaaSError {
        switch error {
        case let e as MBaaSError: return e
        case is CancellationError: return MBaaSError(.transport, "cancelled", underlying: CancellationError())
        case let e as URLError: return MBaaSError(.transport, describe(e), underlying: e)
        case let e as JSONParseError: return MBaaSError(.decoding, e.description, underlying: e)
        case let e as CocoaError: return MBaaSError(e.code.rawValue < 1024 ? .localIO : .internal, describe(e), underlying: e)
        case let e as POSIXError: return MBaaSError(.localIO, describe(e), underlying: e)
        default:
            let ns = error as NSError
            if (ns.domain == NSCocoaErrorDomain && ns.code < 1024) || ns.domain == NSPOSIXErrorDomain {
                return MBaaSError(.localIO, describe(error))
            }
            return MBaaSError(.internal, describe(error))
        }
    }

    /// A short human description of any error: the message of an ``MBaaSError``; the system's reason for a
    /// file-system error (`No such file or directory`, `Permission denied`, `No space left on device`, from the
    /// underlying POSIX error when there is one); what happened for a URL error (`timed out`, `connection
    /// refused`...). Never `The operation could not be completed. (NSCocoaErrorDomain error 512.)`.
    public static func describe(_ error: any Error) -> String {
        if let e = error as? MBaaSError { return e.message }
        if let e = error as? URLError { return describeURLError(e.code) }
        let ns = error as NSError
        if ns.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(ns.code))) }
        if ns.domain == NSCocoaErrorDomain {
            if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
                return String(cString: strerror(Int32(underlying.code)))
            }
            switch ns.code {
            case CocoaError.fileNoSuchFile.rawValue, CocoaError.fileReadNoSuchFile.rawValue: return "No such file or directory"
            case CocoaError.fileReadNoPermission.rawValue, CocoaError.fileWriteNoPermission.rawValue: return "Permission denied"
            case CocoaError.fileWriteOutOfSpace.rawValue: return "No space left on device"
            case CocoaError.fileWriteFileExists.rawValue: return "File exists"
            case CocoaError.fileWriteVolumeReadOnly.rawValue: return "Read-only file system"
            case CocoaError.fileReadTooLarge.rawValue: return "File too large"
            case CocoaError.fileReadCorruptFile.rawValue: return "the file is corrupt or in an unexpected format"
            case CocoaError.fileReadInapplicableStringEncoding.rawValue: return "the file is not valid text in the expected encoding"
            case 512..<1024: return "the file could not be written"
            case 1..<512: return "the file could not be read"
            default: return "the value is not valid (\(ns.domain) \(ns.code))"
            }
        }
        if ns.domain == NSURLErrorDomain, let code = URLError.Code(rawValue: ns.code) { return describeURLError(code) }
        return "\(error)"
    }

    private static func describeURLError(_ code: URLError.Code) -> String {
        switch code {
        case .cancelled: return "cancelled"
        case .timedOut: return "timed out"
        case .cannotConnectToHost: return "connection refused"
        case .cannotFindHost, .dnsLookupFailed: return "the host name could not be resolved"
        case .networkConnectionLost: return "the connection was lost"
        case .notConnectedToInternet: return "not connected to a network"
        case .badURL, .unsupportedURL: return "the URL is not valid for HTTP"
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
             .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot:
            return "the TLS connection failed (certificate or handshake)"
        case .badServerResponse: return "the server's response was malformed"
        default: return "the request failed (URL error \(code.rawValue))"
        }
    }
}
