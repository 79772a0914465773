public import Foundation
public import MBaaSCore

/// The PocketBase wire format (0.40): names, dates, error bodies and the JSON messages of the REST API, as pure
/// functions and value types usable from both sides (this client, or a server that emulates PocketBase).
///
/// Records and values are in ``PocketBaseRecordCodec``, filters in ``PocketBaseFilter``, collections in
/// ``PocketBaseCollection``.
public enum PocketBaseWire {
    // MARK: Names

    /// Suffix of the text column that records the neutral type of a field (`money__type` = `int`).
    public static let tagSuffix = "__type"
    /// Prefix of the adapter's own columns (ACL).
    public static let reservedPrefix = "mbaas_"

    /// Record keys PocketBase itself uses in every record.
    public static let systemKeys: Set<String> = ["id", "collectionId", "collectionName", "created", "updated", "expand"]
    /// Fields of auth collections that are never neutral fields.
    public static let authKeys: Set<String> = [
        "email", "emailVisibility", "verified", "username", "password", "passwordConfirm", "oldPassword", "tokenKey",
    ]

    /// The tag column of a field.
    public static func tagColumn(for field: String) -> String { field + tagSuffix }

    /// PocketBase collection names: ASCII letters, digits and `_`, not starting with `_` (system), 1-255 long.
    public static func isValidCollectionName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 255 && !name.hasPrefix("_") && name.unicodeScalars.allSatisfy(isWordScalar)
    }

    static func isWordScalar(_ s: Unicode.Scalar) -> Bool {
        (s >= "a" && s <= "z") || (s >= "A" && s <= "Z") || (s >= "0" && s <= "9") || s == "_"
    }

    /// Checks that a neutral field name can be a PocketBase column (`[A-Za-z_][A-Za-z0-9_]*`, at most 94
    /// characters so that its tag column fits PocketBase's 100) and is not reserved.
    public static func validateFieldName(_ name: String, authCollection: Bool = false) throws(MBaaSError) {
        guard let first = name.unicodeScalars.first, !(first >= "0" && first <= "9"),
              name.unicodeScalars.allSatisfy(isWordScalar)
        else {
            throw MBaaSError(.invalidRequest, "field name '\(name)' is not valid for PocketBase (use ASCII letters, digits and _, not starting with a digit)")
        }
        guard name.count <= 100 - tagSuffix.count else {
            throw MBaaSError(.invalidRequest, "field name '\(name)' is longer than \(100 - tagSuffix.count) characters (PocketBase allows 100 including the '\(tagSuffix)' type column)")
        }
        if Record.reservedFieldNames.contains(name) || systemKeys.contains(name) {
            throw MBaaSError(.invalidRequest, "field name '\(name)' is reserved for record metadata")
        }
        if name.lowercased().hasPrefix(reservedPrefix) || name.lowercased().hasSuffix(tagSuffix) {
            throw MBaaSError(.invalidRequest, "field name '\(name)' is reserved by the PocketBase adapter (prefix '\(reservedPrefix)', suffix '\(tagSuffix)')")
        }
        if authCollection, authKeys.contains(name) {
            throw MBaaSError(.invalidRequest, "field name '\(name)' is reserved in PocketBase auth collections")
        }
    }

    // MARK: Dates

    /// PocketBase's date form: `2024-03-31 12:34:56.789Z` (UTC, milliseconds, a space instead of `T`).
    public static func formatDate(_ date: Date) -> String {
        var s = ISO8601.format(date)
        if let t = s.firstIndex(of: "T") { s.replaceSubrange(t...t, with: " ") }
        return s
    }

    /// Parses a PocketBase date (`2024-03-31 12:34:56.789Z`, or ISO-8601 with `T`); `nil` for `""` or garbage.
    public static func parseDate(_ text: String) -> Date? {
        text.isEmpty ? nil : ISO8601.parse(text)
    }

    // MARK: Paths

    /// `/api/collections/{collection}/records[/{id}]`.
    public static func recordsPath(_ collection: String, id: String? = nil) -> String {
        "/api/collections/\(percentEncode(collection))/records" + (id.map { "/" + percentEncode($0) } ?? "")
    }

    /// `/api/files/{collection}/{record}/{filename}`.
    public static func filePath(collection: String, recordId: String, filename: String) -> String {
        "/api/files/\(percentEncode(collection))/\(percentEncode(recordId))/\(percentEncode(filename))"
    }

    /// Reads `(collection, recordId, filename)` back from a file URL or path built by ``filePath(collection:recordId:filename:)``.
    public static func parseFilePath(_ urlOrPath: String) -> (collection: String, recordId: String, filename: String)? {
        guard let range = urlOrPath.range(of: "/api/files/") else { return nil }
        var rest = String(urlOrPath[range.upperBound...])
        if let q = rest.firstIndex(of: "?") { rest = String(rest[..<q]) }
        let parts = rest.split(separator: "/", omittingEmptySubsequences: false).map { String($0).removingPercentEncoding ?? String($0) }
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }) else { return nil }
        return (parts[0], parts[1], parts[2])
    }
}

// MARK: - Errors

/// PocketBase's error body: `{"status":400,"message":"Failed to create record.","data":{"title":{"code":"validation_required","message":"Missing required value."}}}`.
public struct PocketBaseErrorBody: Sendable, Hashable {
    public var status: Int
    public var message: String
    /// Field errors (`{field: {code, message}}`), or for batch failures `{"requests": {"<index>": {...}}}`.
    public var data: JSONObject

    public init(status: Int, message: String, data: JSONObject = [:]) {
        self.status = status
        self.message = message
        self.data = data
    }

    public var json: JSON {
        .object(["data": .object(data), "message": .string(message), "status": .int(Int64(status))])
    }

    public init?(json: JSON) {
        guard let o = json.objectValue, let message = o["message"]?.stringValue else { return nil }
        self.init(status: o["status"]?.intValue.map(Int.init) ?? 0, message: message, data: o["data"]?.objectValue ?? [:])
    }

    /// The field errors as `(field, code, message)`, in the body's order.
    public var fieldErrors: [(field: String, code: String, message: String)] {
        data.compactMap { key, value in
            guard let o = value.objectValue, let code = o["code"]?.stringValue else { return nil }
            return (key, code, o["message"]?.stringValue ?? "")
        }
    }

    /// For a failed batch: the index of the failing request and its own error body.
    public var batchFailure: (index: Int, response: PocketBaseErrorBody)? {
        guard let requests = data["requests"]?.objectValue else { return nil }
        for (key, value) in requests {
            guard let index = Int(key), let response = value["response"], let body = PocketBaseErrorBody(json: response) else { continue }
            return (index, body)
        }
        return nil
    }
}

extension PocketBaseWire {
    /// What the request was, where it changes the meaning of a status (a 400 from `auth-with-password` is a
    /// wrong password, not a malformed request).
    public enum Operation: Sendable {
        case general
        case authWithPassword
        case create
        case batch
    }

    /// Field error codes that mean "this value is taken".
    public static let duplicateCodes: Set<String> = ["validation_not_unique", "validation_pk_invalid", "validation_invalid_username"]

    /// Maps an error response to an ``MBaaSError``, keeping PocketBase's message, status and field error codes
    /// (the first one as `vendorCode`).
    public static func error(
        status: Int, body: Data, headers: HTTPFields = [:], operation: Operation = .general, now: Date = Date()
    ) -> MBaaSError {
        let parsed = (try? JSON.parse(body)).flatMap(PocketBaseErrorBody.init(json:))
        guard let parsed else {
            let text = String(decoding: body.prefix(200), as: UTF8.self)
            var e = MBaaSError(MBaaSError.kind(forHTTPStatus: status), "PocketBase HTTP \(status)" + (text.isEmpty ? "" : ": \(text)"), httpStatus: status)
            if status == 409 { e.kind = .conflict }
            e.retryAfter = TransportResponse(status: .init(code: status), headers: headers).retryAfter(now: now)
            return e
        }
        return error(parsed, httpStatus: status, headers: headers, operation: operation, now: now)
    }

    /// Maps a parsed error body.
    public static func error(
        _ body: PocketBaseErrorBody, httpStatus: Int, headers: HTTPFields = [:], operation: Operation = .general,
        now: Date = Date()
    ) -> MBaaSError {
        if let (index, inner) = body.batchFailure {
            var e = error(inner, httpStatus: inner.status, operation: .general, now: now)
            e.message = "batch request \(index) failed, batch rolled back: \(e.message)"
            return e
        }
        let fieldErrors = body.fieldErrors
        var message = body.message
        if !fieldErrors.isEmpty {
            message += " (" + fieldErrors.map { "\($0.field): \($0.message) [\($0.code)]" }.joined(separator: "; ") + ")"
        }
        var kind: MBaaSError.Kind
        switch httpStatus {
        case 400 where operation == .authWithPassword: kind = .unauthorized
        case 400, 422: kind = fieldErrors.contains { duplicateCodes.contains($0.code) } ? .duplicate : .invalidRequest
        case 401: kind = .unauthorized
        case 403: kind = .forbidden
        case 404: kind = .notFound
        case 409: kind = .conflict
        case 413: kind = .invalidRequest
        case 429: kind = .rateLimited
        case 500...599: kind = .unavailable
        default: kind = MBaaSError.kind(forHTTPStatus: httpStatus)
        }
        if kind == .invalidRequest, fieldErrors.isEmpty,
           body.message.hasPrefix("Something went wrong while processing your request")
        {
            message += " (PocketBase gives no detail; a filter or sort naming an unknown field, or a malformed filter, ends here)"
        }
        return MBaaSError(
            kind, message, vendorCode: fieldErrors.first?.code, httpStatus: httpStatus,
            retryAfter: TransportResponse(status: .init(code: httpStatus), headers: headers).retryAfter(now: now))
    }
}

// MARK: - Messages

/// A page of records: `{"page":1,"perPage":30,"totalItems":-1,"totalPages":-1,"items":[...]}` (`-1` with
/// `skipTotal`).
public struct PocketBaseList: Sendable, Hashable {
    public var page: Int
    public var perPage: Int
    public var totalItems: Int
    public var totalPages: Int
    public var items: [JSONObject]

    public init(page: Int, perPage: Int, totalItems: Int, totalPages: Int, items: [JSONObject]) {
        self.page = page
        self.perPage = perPage
        self.totalItems = totalItems
        self.totalPages = totalPages
        self.items = items
    }

    public var json: JSON {
        .object([
            "items": .array(items.map(JSON.object)), "page": .int(Int64(page)), "perPage": .int(Int64(perPage)),
            "totalItems": .int(Int64(totalItems)), "totalPages": .int(Int64(totalPages)),
        ])
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue, let items = o["items"]?.arrayValue else {
            throw MBaaSError(.decoding, "PocketBase list response has no items array: \(json.printed().prefix(200))")
        }
        var objects: [JSONObject] = []
        for item in items {
            guard let object = item.objectValue else { throw MBaaSError(.decoding, "PocketBase list item is not an object") }
            objects.append(object)
        }
        self.init(
            page: o["page"]?.intValue.map(Int.init) ?? 1, perPage: o["perPage"]?.intValue.map(Int.init) ?? objects.count,
            totalItems: o["totalItems"]?.intValue.map(Int.init) ?? -1,
            totalPages: o["totalPages"]?.intValue.map(Int.init) ?? -1, items: objects)
    }
}

/// The answer of `auth-with-password` and `auth-refresh`: `{"token":"...","record":{...}}`.
public struct PocketBaseAuthResponse: Sendable, Hashable {
    public var token: String
    public var record: JSONObject

    public init(token: String, record: JSONObject) {
        self.token = token
        self.record = record
    }

    public var json: JSON { .object(["record": .object(record), "token": .string(token)]) }

    public init(json: JSON) throws(MBaaSError) {
        guard let token = json["token"]?.stringValue, !token.isEmpty, let record = json["record"]?.objectValue else {
            throw MBaaSError(.decoding, "PocketBase auth response has no token and record")
        }
        self.init(token: token, record: record)
    }
}

/// The claims of a PocketBase token (a JWT), read without verifying the signature: the client only needs the
/// expiry and the record it belongs to.
public struct PocketBaseTokenClaims: Sendable, Hashable {
    public var recordId: String?
    public var collectionId: String?
    /// `auth` or `file`.
    public var type: String?
    public var expiresAt: Date?
    public var refreshable: Bool

    public init(recordId: String?, collectionId: String?, type: String?, expiresAt: Date?, refreshable: Bool) {
        self.recordId = recordId
        self.collectionId = collectionId
        self.type = type
        self.expiresAt = expiresAt
        self.refreshable = refreshable
    }

    /// The claims of a token, or `nil` when it is not a JWT.
    public init?(token: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var b64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while b64.count % 4 != 0 { b64 += "=" }
        guard let data = Data(base64Encoded: b64), let json = try? JSON.parse(data), json.objectValue != nil else { return nil }
        self.init(
            recordId: json["id"]?.stringValue, collectionId: json["collectionId"]?.stringValue,
            type: json["type"]?.stringValue, expiresAt: json["exp"]?.doubleValue.map { Date(timeIntervalSince1970: $0) },
            refreshable: json["refreshable"]?.boolValue ?? false)
    }
}

/// `POST /api/batch`: `{"requests":[{"method":"POST","url":"/api/collections/x/records","body":{...}}]}`.
public struct PocketBaseBatchRequest: Sendable, Hashable {
    public struct Item: Sendable, Hashable {
        public var method: String
        public var url: String
        public var body: JSONObject?
        public init(method: String, url: String, body: JSONObject? = nil) {
            self.method = method
            self.url = url
            self.body = body
        }
    }

    public var requests: [Item]
    public init(requests: [Item]) { self.requests = requests }

    public var json: JSON {
        .object(["requests": .array(requests.map { item in
            var o: JSONObject = ["method": .string(item.method), "url": .string(item.url)]
            if let body = item.body { o["body"] = .object(body) }
            return .object(o)
        })])
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let items = json["requests"]?.arrayValue else { throw MBaaSError(.invalidRequest, "batch body needs a requests array") }
        var requests: [Item] = []
        for (i, item) in items.enumerated() {
            guard let method = item["method"]?.stringValue, let url = item["url"]?.stringValue else {
                throw MBaaSError(.invalidRequest, "batch request \(i) needs a method and a url")
            }
            requests.append(Item(method: method, url: url, body: item["body"]?.objectValue))
        }
        self.init(requests: requests)
    }
}

/// The answer of a successful batch: `[{"status":200,"body":{...}},{"status":204,"body":null}]`.
public struct PocketBaseBatchResponse: Sendable, Hashable {
    public struct Result: Sendable, Hashable {
        public var status: Int
        public var body: JSON
        public init(status: Int, body: JSON) {
            self.status = status
            self.body = body
        }
    }

    public var results: [Result]
    public init(results: [Result]) { self.results = results }

    public var json: JSON {
        .array(results.map { .object(["body": $0.body, "status": .int(Int64($0.status))]) })
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let items = json.arrayValue else { throw MBaaSError(.decoding, "PocketBase batch response is not an array") }
        var results: [Result] = []
        for item in items {
            guard let status = item["status"]?.intValue else { throw MBaaSError(.decoding, "PocketBase batch result has no status") }
            results.append(Result(status: Int(status), body: item["body"] ?? .null))
        }
        self.init(results: results)
    }
}
