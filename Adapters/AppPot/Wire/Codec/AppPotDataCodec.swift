public import Foundation
public import MBaaSCore

/// The body of `POST data/batch/addData` and `data/batch/updateData` (reference A7):
/// `{"objectName":"Task","transactionId":"...","data":[{...flat columns...}]}`.
public struct AppPotWriteRequest: Sendable, Hashable {
    public var objectName: String
    /// Duplicate-submit guard: a second request with the same id is refused with errCode 211.
    public var transactionId: String?
    public var rows: [JSONObject]

    public init(objectName: String, transactionId: String? = nil, rows: [JSONObject]) {
        self.objectName = objectName
        self.transactionId = transactionId
        self.rows = rows
    }

    public var json: JSON {
        var o: JSONObject = ["objectName": .string(objectName)]
        if let transactionId { o["transactionId"] = .string(transactionId) }
        o["data"] = .array(rows.map(JSON.object))
        return .object(o)
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let name = json["objectName"]?.stringValue else {
            throw MBaaSError(.invalidRequest, "write body needs 'objectName'", vendorCode: "198")
        }
        guard let data = json["data"]?.arrayValue else {
            throw MBaaSError(.invalidRequest, "write body needs a 'data' array", vendorCode: "198")
        }
        var rows: [JSONObject] = []
        for d in data {
            guard let o = d.objectValue else { throw MBaaSError(.invalidRequest, "write body: each row must be an object", vendorCode: "109") }
            rows.append(o)
        }
        self.init(objectName: name, transactionId: json["transactionId"]?.stringValue, rows: rows)
    }
}

/// The body of `POST data/batch/deleteData` (reference A7):
/// `{"objectName","transactionId"?,"objectIds":[{"objectId","serverUpdateTime"}]}`.
public struct AppPotDeleteRequest: Sendable, Hashable {
    public struct Target: Sendable, Hashable {
        public var objectId: String
        /// The version expected (optimistic lock); `nil` leaves it out.
        public var serverUpdateTime: String?
        public init(objectId: String, serverUpdateTime: String?) {
            self.objectId = objectId
            self.serverUpdateTime = serverUpdateTime
        }
    }

    public var objectName: String
    public var transactionId: String?
    public var targets: [Target]

    public init(objectName: String, transactionId: String? = nil, targets: [Target]) {
        self.objectName = objectName
        self.transactionId = transactionId
        self.targets = targets
    }

    public var json: JSON {
        var o: JSONObject = ["objectName": .string(objectName)]
        if let transactionId { o["transactionId"] = .string(transactionId) }
        o["objectIds"] = .array(targets.map { t in
            var e: JSONObject = ["objectId": .string(t.objectId)]
            if let s = t.serverUpdateTime { e["serverUpdateTime"] = .string(s) }
            return .object(e)
        })
        return .object(o)
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let name = json["objectName"]?.stringValue, let ids = json["objectIds"]?.arrayValue else {
            throw MBaaSError(.invalidRequest, "delete body needs 'objectName' and 'objectIds'", vendorCode: "198")
        }
        var targets: [Target] = []
        for e in ids {
            guard let id = AppPotGroupRole.idString(e["objectId"]) else {
                throw MBaaSError(.invalidRequest, "delete body: each entry needs an 'objectId'", vendorCode: "198")
            }
            targets.append(Target(objectId: id, serverUpdateTime: e["serverUpdateTime"]?.stringValue))
        }
        self.init(objectName: name, transactionId: json["transactionId"]?.stringValue, targets: targets)
    }
}

/// One row's result of a batch write (reference A7), in request order:
/// `{"objectId":"Task_1390463076564","serverCreateTime":"...","serverUpdateTime":"..."}`. A failed row has the
/// object id `-1` (docs 05.2).
public struct AppPotWriteResult: Sendable, Hashable {
    public static let failedObjectId = "-1"

    public var objectId: String
    public var serverCreateTime: String?
    public var serverUpdateTime: String?
    /// A per-row code and description, when the server gives them (not documented; read when present).
    public var errCode: Int?
    public var description: String?

    public init(objectId: String, serverCreateTime: String? = nil, serverUpdateTime: String? = nil,
                errCode: Int? = nil, description: String? = nil) {
        self.objectId = objectId
        self.serverCreateTime = serverCreateTime
        self.serverUpdateTime = serverUpdateTime
        self.errCode = errCode
        self.description = description
    }

    public var isFailure: Bool { objectId == AppPotWriteResult.failedObjectId || (errCode ?? 0) != 0 }

    public init(json: JSON) throws(MBaaSError) {
        guard let id = AppPotGroupRole.idString(json["objectId"]) else {
            throw MBaaSError(.decoding, "AppPot write result has no objectId: \(json.printed())")
        }
        self.init(objectId: id, serverCreateTime: json["serverCreateTime"]?.stringValue,
                  serverUpdateTime: json["serverUpdateTime"]?.stringValue,
                  errCode: json["errCode"]?.intValue.map { Int($0) }, description: json["description"]?.stringValue)
    }

    public var json: JSON {
        var o: JSONObject = ["objectId": .string(objectId)]
        if let serverCreateTime { o["serverCreateTime"] = .string(serverCreateTime) }
        if let serverUpdateTime { o["serverUpdateTime"] = .string(serverUpdateTime) }
        if let errCode { o["errCode"] = .int(Int64(errCode)) }
        if let description { o["description"] = .string(description) }
        return .object(o)
    }

    /// The error of a failed row (its own code when given, else `invalidRequest` naming the row).
    public func error(row: Int, className: String) -> MBaaSError {
        if let errCode, errCode != 0 {
            var e = AppPotEnvelope.error(code: errCode, description: description ?? "")
            if description == nil { e = AppPotEnvelope.error(code: errCode, description: AppPotErrorCode.meaning(of: errCode) ?? "row failed") }
            if let err = AppPotEnvelope(json: e)?.error(httpStatus: nil) {
                return MBaaSError(err.kind, "\(className) row \(row): \(err.message)", vendorCode: err.vendorCode)
            }
        }
        return MBaaSError(.invalidRequest, "AppPot did not write \(className) row \(row) (objectId -1)"
                          + (description.map { ": \($0)" } ?? ""), vendorCode: AppPotWriteResult.failedObjectId)
    }

    /// The results of a write response (`results` array).
    public static func decodeResponse(_ json: JSON?) throws(MBaaSError) -> [AppPotWriteResult] {
        guard let items = json?["results"]?.arrayValue else {
            throw MBaaSError(.decoding, "AppPot write response has no 'results' array")
        }
        var out: [AppPotWriteResult] = []
        for i in items { out.append(try AppPotWriteResult(json: i)) }
        return out
    }

    /// A write response as the server sends it.
    public static func response(_ results: [AppPotWriteResult]) -> JSON {
        AppPotEnvelope.success(results: .array(results.map(\.json)))
    }
}

/// Data read responses: `GET data/{Class}/{id}` answers `{"Task":[{...}]}`, `POST data/query/{Class}` answers the
/// rows under the query's alias (falling back to the class name), one array per entity (reference A7, A8).
public enum AppPotDataResponse {
    /// The rows under the first of `keys` present; `nil` when none is.
    public static func rows(_ json: JSON?, keys: [String]) throws(MBaaSError) -> [JSONObject]? {
        guard let json else { return nil }
        for key in keys {
            guard let member = json[key], !member.isNull else { continue }
            guard let items = member.arrayValue else {
                throw MBaaSError(.decoding, "AppPot response member '\(key)' is not an array")
            }
            var rows: [JSONObject] = []
            for i in items {
                guard let o = i.objectValue else { throw MBaaSError(.decoding, "AppPot row is not an object: \(i.printed())") }
                rows.append(o)
            }
            return rows
        }
        return nil
    }

    /// A data response: the envelope's members, then the rows under `key`.
    public static func response(key: String, rows: [JSONObject]) -> JSON {
        AppPotEnvelope.success(extra: [(key, .array(rows.map(JSON.object)))])
    }

    /// The count of `POST data/query/{Class}/count`: a top-level `count` (JS v2.3 `spec/model.test.ts` asserts
    /// `count()` resolves to an object whose `count` is 20). Also accepted: `results` as a number or numeric
    /// string, `results.count`, or Android's count alias `__APPPOT_COUNT__`.
    public static func count(_ json: JSON?) throws(MBaaSError) -> Int {
        func number(_ j: JSON?) -> Int? {
            guard let j else { return nil }
            if let i = j.intValue { return Int(i) }
            if let s = j.stringValue, let i = Int(s) { return i }
            return nil
        }
        let candidates: [JSON?] = [json?["count"], json?["results"], json?["results"]?["count"],
                                   json?["__APPPOT_COUNT__"], json?["results"]?["__APPPOT_COUNT__"]]
        for c in candidates { if let n = number(c) { return n } }
        throw MBaaSError(.decoding, "AppPot count response has no count: \(json?.printed() ?? "empty body")")
    }

    /// A count response as the server sends it: `{"status":"OK",...,"count":N}`.
    public static func countResponse(_ n: Int) -> JSON { AppPotEnvelope.success(extra: [("count", .int(Int64(n)))]) }
}

/// Files (reference A9): the `entity` part of an upload and the upload result.
public enum AppPotFileCodec {
    /// The `entity` part's JSON: `{"name":"photo.png"}`.
    public static func entity(name: String) -> JSON { .object(["name": .string(name)]) }

    /// The multipart body of `POST files` and `PUT files/{name}`: `entity` then `file`. The `entity` part has no
    /// `Content-Type` of its own [capture: the reference's `07.FileAPI` request; sdk: apppot-sdk-js `file.ts` sends it
    /// as a plain form field].
    public static func uploadForm(name: String, data: Data, contentType: String, boundary: String) -> MultipartForm {
        MultipartForm(parts: [
            MultipartForm.Part(name: "entity", data: entity(name: name).data()),
            MultipartForm.Part(name: "file", filename: name, contentType: contentType, data: data),
        ], boundary: boundary)
    }

    /// The stored name and URL of an upload response `{"results":{"name":"<uuid>_a.txt","url":"..."}}`.
    public static func uploadResult(_ json: JSON?) throws(MBaaSError) -> (name: String, url: String?) {
        guard let r = json?["results"], let name = r["name"]?.stringValue, !name.isEmpty else {
            throw MBaaSError(.decoding, "AppPot file response has no results.name")
        }
        return (name, r["url"]?.stringValue)
    }

    public static func uploadResponse(name: String, url: String?) -> JSON {
        var r: JSONObject = ["name": .string(name)]
        if let url { r["url"] = .string(url) }
        return AppPotEnvelope.success(results: .object(r))
    }
}

/// Logs (reference A10): `POST logs {"message","logLevel"}`.
public enum AppPotLogLevel: String, Sendable, Hashable, CaseIterable {
    /// Monitoring (the JS SDK's default level; the SDKs' `logMonitor`).
    case monitor = "MONITOR"
    /// Errors (the SDKs' `logError`).
    case error = "ERROR"

    public func body(message: String) -> JSON { .object(["message": .string(message), "logLevel": .string(rawValue)]) }
}

/// The level the server wants logs at (`GET logLevel`; seed 000: None, Error, Monitor; Android `GET_LOG_LEVEL`).
/// The answer's shape is not documented: the level is read from `results` (the envelope's usual member) or
/// `logLevel`, case-insensitively [inferred].
public enum AppPotServerLogLevel: String, Sendable, Hashable, CaseIterable {
    case none = "NONE"
    case error = "ERROR"
    case monitor = "MONITOR"

    public init(response json: JSON?) throws(MBaaSError) {
        let text = (json?["results"]?.stringValue ?? json?["logLevel"]?.stringValue ?? "").uppercased()
        guard let level = AppPotServerLogLevel(rawValue: text) else {
            throw MBaaSError(.decoding, "AppPot logLevel answer without a level (None, Error, Monitor): \(json?.printed() ?? "empty")")
        }
        self = level
    }

    /// Whether a line of `level` is sent: None sends nothing, Error only errors, Monitor everything.
    public func accepts(_ level: AppPotLogLevel) -> Bool {
        switch self {
        case .none: false
        case .error: level == .error
        case .monitor: true
        }
    }

    /// `{"status":"OK","errCode":0,"description":null,"results":"MONITOR"}` (server side).
    public var response: JSON { AppPotEnvelope.success(results: .string(rawValue.capitalized)) }
}

/// Device registration (reference A5): `POST devices {"deviceToken","deviceUDID","deviceName","osType"}`.
public struct AppPotDeviceRegistration: Sendable, Hashable {
    public var deviceToken: String
    public var deviceUDID: String
    public var deviceName: String
    public var osType: String

    public init(deviceToken: String, deviceUDID: String, deviceName: String, osType: String) {
        self.deviceToken = deviceToken
        self.deviceUDID = deviceUDID
        self.deviceName = deviceName
        self.osType = osType
    }

    public var json: JSON {
        .object(["deviceToken": .string(deviceToken), "deviceUDID": .string(deviceUDID),
                 "deviceName": .string(deviceName), "osType": .string(osType)])
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let udid = json["deviceUDID"]?.stringValue else {
            throw MBaaSError(.invalidRequest, "device body needs 'deviceUDID'", vendorCode: "198")
        }
        self.init(deviceToken: json["deviceToken"]?.stringValue ?? "", deviceUDID: udid,
                  deviceName: json["deviceName"]?.stringValue ?? "", osType: json["osType"]?.stringValue ?? "")
    }
}
