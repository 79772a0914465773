import Foundation
public import MBaaSCore

/// The AppPot response envelope (reference A4), in both directions.
///
/// Success: `{"status":"OK","errCode":0,"description":null,"results":...}`; some responses carry their payload
/// under other members (`authInfor`, `user`, the class name for data). Error:
/// `{"status":"error","errCode":161,"description":"..."}`. HTTP statuses are not documented per error, so the
/// body's `errCode` decides the kind; the HTTP status is used only for codes whose meaning is undocumented.
public struct AppPotEnvelope: Sendable, Hashable {
    /// `OK` or `error` (compared case-insensitively when decoding).
    public var status: String
    public var errCode: Int
    public var description: String?
    /// Every member of the body, in order (including `status`, `errCode`, `description`).
    public var body: JSONObject

    public var isError: Bool { status.lowercased() == "error" || errCode != 0 }

    /// `results`, if present and not null.
    public var results: JSON? { body["results"].flatMap { $0.isNull ? nil : $0 } }

    /// Reads an envelope; `nil` when the JSON is not an object or has neither `status` nor `errCode`.
    public init?(json: JSON) {
        guard let object = json.objectValue else { return nil }
        let status = object["status"]?.stringValue
        let code = object["errCode"].flatMap { j -> Int? in
            if let i = j.intValue { return Int(i) }
            return j.stringValue.flatMap { Int($0) }
        }
        guard status != nil || code != nil else { return nil }
        self.status = status ?? ((code ?? 0) == 0 ? "OK" : "error")
        self.errCode = code ?? 0
        self.description = object["description"]?.stringValue
        self.body = object
    }

    /// A success envelope: `status`, `errCode`, `description`, then `results` (when given) and the extra members.
    public static func success(results: JSON? = nil, extra: [(String, JSON)] = []) -> JSON {
        var o: JSONObject = ["status": "OK", "errCode": 0, "description": .null]
        if let results { o["results"] = results }
        for (k, v) in extra { o[k] = v }
        return .object(o)
    }

    /// An error envelope.
    public static func error(code: Int, description: String) -> JSON {
        .object(["status": "error", "errCode": .int(Int64(code)), "description": .string(description)])
    }

    /// The envelope's error as an ``MBaaSError`` (vendor code, description and HTTP status kept), or `nil` when it
    /// is a success.
    public func error(httpStatus: Int?) -> MBaaSError? {
        guard isError else { return nil }
        let meaning = AppPotErrorCode.meaning(of: errCode)
        var message = description ?? meaning ?? "AppPot error"
        if let meaning, description != nil, description != meaning { message += " (\(meaning))" }
        return MBaaSError(AppPotErrorCode.kind(of: errCode, httpStatus: httpStatus), message,
                          vendorCode: String(errCode), httpStatus: httpStatus)
    }
}

/// The documented AppPot error codes (reference A4: the v1 table plus the v2 per-endpoint lists) and the core
/// error kind each maps to.
public enum AppPotErrorCode {
    /// Token expired: the session is over; log in again (no refresh token exists).
    public static let tokenExpired = 120
    /// Token does not exist (after logout, or never issued): the session is over.
    public static let tokenMissing = 121
    /// Record does not exist, or data blocking: a stale `serverUpdateTime` on update or delete.
    public static let recordConflict = 130
    /// The device is already registered for this device and app (continue with that UDID).
    public static let deviceAlreadyRegistered = 161
    /// The `transactionId` was already used: a duplicate submit.
    public static let duplicateTransaction = 211

    /// Every code the reference documents, with its meaning as the reference gives it.
    public static let meanings: [Int: String] = [
        101: "App with id does not exist",
        102: "App database not defined",
        103: "Cannot create app database",
        104: "appId/appVersion/token mismatch",
        105: "App does not exist",
        106: "App id or version not correct",
        107: "App not assigned to user's groups",
        108: "AppID and UserID do not match",
        109: "Input data not valid",
        110: "User does not exist",
        111: "User name or password not correct",
        112: "User info and token do not match",
        120: "Token expired",
        121: "Token does not exist",
        122: "File API error 122 (meaning undocumented)",
        130: "Record does not exist or data blocking",
        131: "Process error",
        160: "deviceUDID does not match token",
        161: "Device already registered for this device and app",
        163: "Register the device before login",
        198: "Input parameters are required",
        199: "Request not found",
        201: "Problem saving user session",
        210: "Problem saving transaction",
        211: "Transaction id already used (duplicate submit)",
        212: "Problem getting record",
        220: "Cannot execute query",
        600: "File API error 600 (meaning undocumented)",
        601: "File API error 601 (meaning undocumented)",
        603: "File API error 603 (meaning undocumented)",
        605: "File API error 605 (meaning undocumented)",
        993: "Table empty or does not exist",
        995: "Table empty or does not exist",
    ]

    public static func meaning(of code: Int) -> String? { meanings[code] }

    /// Codes whose meaning the reference does not give: their kind comes from the HTTP status.
    public static let undocumented: Set<Int> = [122, 600, 601, 603, 605]

    /// The core kind of a code. `130` is ``MBaaSError/Kind/conflict`` here; operations that can tell a missing
    /// record from a stale version (the adapter reads the record again) refine it to `notFound`.
    public static func kind(of code: Int, httpStatus: Int?) -> MBaaSError.Kind {
        switch code {
        case 101, 104, 105, 106: return .invalidRequest
        case 102: return .notFound
        case 103: return .unavailable
        case 107, 108: return .forbidden
        case 109: return .invalidRequest
        case 110, 111, 112, 120, 121, 160: return .unauthorized
        case 130: return .conflict
        case 131: return .unavailable
        case 161: return .duplicate
        case 163, 198: return .invalidRequest
        case 199: return .notFound
        case 201, 210, 212: return .unavailable
        case 211: return .duplicate
        case 220: return .invalidRequest
        case 993, 995: return .notFound
        default:
            if let httpStatus, !(200..<300).contains(httpStatus) { return MBaaSError.kind(forHTTPStatus: httpStatus) }
            return .invalidRequest
        }
    }

    /// Whether the code ends the user session (expired or unknown token).
    public static func endsSession(_ code: Int) -> Bool { code == tokenExpired || code == tokenMissing }
}

extension AppPotEnvelope {
    /// Classifies an HTTP response of the AppPot API: the parsed JSON body (when it is JSON) or the error it
    /// carries. A body with `status:"error"` is an error whatever the HTTP status; a non-2xx response without an
    /// envelope is an error of the HTTP status's kind.
    public static func check(_ response: TransportResponse) -> Result<JSON?, MBaaSError> {
        let json = try? JSON.parse(response.body)
        if let json, let envelope = AppPotEnvelope(json: json), let error = envelope.error(httpStatus: response.status.code) {
            return .failure(error)
        }
        guard response.isSuccess else {
            let snippet = String(decoding: response.body.prefix(200), as: UTF8.self)
            return .failure(MBaaSError(MBaaSError.kind(forHTTPStatus: response.status.code),
                                       "HTTP \(response.status.code)" + (snippet.isEmpty ? "" : ": \(snippet)"),
                                       httpStatus: response.status.code))
        }
        return .success(json)
    }
}
