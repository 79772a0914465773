import Foundation
public import MBaaSCore

/// An AppPot error answer as a server writes it (the reading side is ``AppPotEnvelope/check(_:)``):
/// `{"status":"error","errCode":N,"description":"..."}` (reference A4) with its HTTP status.
///
/// AppPot does not document HTTP statuses per error (A4); the SDKs read the body's `errCode` whatever the status.
/// Most errors come at HTTP 200 [sdk: the JS tests see wrong passwords (111) and unknown tokens (121) as
/// `AppPot.Error` from a 200 answer]; a missing record, an empty query and a missing file come at 404 [sdk: JS
/// commit 09f4d0d maps a 404 query to an empty result; inferred for the others].
public struct AppPotErrorBody: Sendable, Hashable {
    public var code: Int
    public var description: String
    public var httpStatus: Int

    public init(code: Int, description: String? = nil, httpStatus: Int = 200) {
        self.code = code
        self.description = description ?? AppPotErrorCode.meaning(of: code) ?? "AppPot error"
        self.httpStatus = httpStatus
    }

    /// The answer for a core error: its vendor code when it is an AppPot code, else the code of its kind
    /// [inferred]: `unauthorized` 121, `notFound` and `conflict` 130, `forbidden` 107, `duplicate` 211,
    /// `unsupported` 199, `invalidRequest`/`decoding` 109, anything else 131 ("Process error"). The HTTP status
    /// is the error's when it carries one.
    public init(_ error: MBaaSError) {
        let code: Int
        if let c = error.numericVendorCode {
            code = c
        } else {
            switch error.kind {
            case .unauthorized: code = AppPotErrorCode.tokenMissing
            case .notFound, .conflict: code = AppPotErrorCode.recordConflict
            case .forbidden: code = 107
            case .duplicate: code = AppPotErrorCode.duplicateTransaction
            case .unsupported: code = 199
            case .invalidRequest, .decoding: code = 109
            default: code = 131
            }
        }
        self.init(code: code, description: error.vendorCode != nil ? error.message : (AppPotErrorCode.meaning(of: code).map { "\($0): \(error.message)" } ?? error.message),
                  httpStatus: error.httpStatus ?? 200)
    }

    public var json: JSON { AppPotEnvelope.error(code: code, description: description) }

    /// The HTTP answer, `application/json;charset=UTF-8` as AppPot's Java server labels JSON [sdk fixtures].
    public func response() -> TransportResponse {
        TransportResponse(status: .init(code: httpStatus), headers: [.contentType: AppPotWire.jsonContentType], body: json.data())
    }
}

extension AppPotWire {
    /// The content type of AppPot's JSON answers.
    public static let jsonContentType = "application/json;charset=UTF-8"
}
