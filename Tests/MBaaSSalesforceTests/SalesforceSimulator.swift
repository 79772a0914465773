import Foundation
import MBaaSCore

/// A documented-behaviour simulator of a Salesforce org's REST API, as an ``HTTPTransport`` over an in-memory store.
///
/// Written independently of the Wire module (it uses no `Salesforce*` or `SOQL*` type): it parses requests, its own
/// small SOQL subset and form bodies itself and prints the responses recorded in shared/reference/salesforce.md,
/// so the adapter and the simulator cross-check each other.
///
/// Modelled: the token endpoint (password and refresh_token grants; `invalid_grant` "authentication failure",
/// `invalid_client_id`, `invalid_client`), revoke, userinfo; sObject create (201 `{id,success,errors}` with a
/// relative Location), retrieve (`attributes`, `?fields=`), PATCH and DELETE (204), a second delete (404
/// ENTITY_IS_DELETED), malformed ids (400 MALFORMED_ID), `If-Unmodified-Since` (412); describe (the fields seen);
/// `/query?q=` with `SELECT f, … | COUNT() FROM T [WHERE a op v AND …] [ORDER BY f [ASC|DESC]] [LIMIT n] [OFFSET n]`,
/// pages of `batchSize` (`Sforce-Query-Options`, default 2000) with `nextRecordsUrl` locators and `totalSize` on
/// every page; sObject Collections (create, update, delete, retrieve; ≤ 200; allOrNone with
/// ALL_OR_NONE_OPERATION_ROLLED_BACK); ContentVersion (`VersionData` base64 in, raw bytes out) and
/// ContentDocumentLink. Every REST call without a valid Bearer token is 401 `[INVALID_SESSION_ID]`.
/// Datetimes advance one second per write (Salesforce keeps them to the second).
actor SalesforceSimulator: HTTPTransport {
    let clientId = "3MVGsimclient"
    let clientSecret = "simsecret"
    let instance = "https://sim.my.salesforce.com"
    var users: [String: (password: String, id: String)] = [
        "ada@example.com": ("pw", "005SIM000000001AAA"), "alice@example.com": ("alice-Pa55word!", "005SIM000000002AAA"),
    ]
    var accessTokens: [String: String] = [:]   // token → user id
    var refreshTokens: [String: String] = [:]
    var records: [String: [String: JSONObject]] = [:]   // type → id → fields (with system fields)
    var deleted: Set<String> = []
    var order: [String: [String]] = [:]
    var blobs: [String: Data] = [:]
    var locators: [String: [JSONObject]] = [:]
    var totals: [String: Int] = [:]
    var clock = Date(timeIntervalSince1970: 1_704_164_645)   // 2024-01-02T03:04:05Z
    var sequence = 0
    /// Every request, as `METHOD path` (the query string left out).
    var log: [String] = []
    var tokenLog: [String] = []

    func expireAccessTokens() { accessTokens = [:] }
    func count(_ prefix: String) -> Int { log.filter { $0.hasPrefix(prefix) }.count }
    func seed(_ type: String, count n: Int, fields: (Int) -> JSONObject) {
        for i in 0..<n { _ = insert(type, fields(i)) }
    }

    // MARK: Responses

    func reply(_ status: Int, _ json: JSON? = nil, headers: [(String, String)] = []) -> TransportResponse {
        var h = HTTPFields()
        h["Sforce-Limit-Info"] = "api-usage=1/15000"
        if json != nil { h["Content-Type"] = "application/json;charset=UTF-8" }
        for (k, v) in headers { h[k] = v }
        return TransportResponse(status: .init(code: status), headers: h, body: json.map { $0.data() } ?? Data())
    }

    func restError(_ status: Int, _ code: String, _ message: String, fields: [String]? = nil) -> TransportResponse {
        var o: JSONObject = ["message": .string(message), "errorCode": .string(code)]
        if let fields { o["fields"] = .array(fields.map(JSON.string)) }
        return reply(status, .array([.object(o)]))
    }

    func stamp(_ d: Date) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd'T'HH:mm:ss.SSSZ"
        return f.string(from: d)
    }

    func tick() -> String {
        clock = clock.addingTimeInterval(1)
        return stamp(clock)
    }

    func newId(_ type: String) -> String {
        sequence += 1
        let prefix = type == "ContentVersion" ? "068" : type == "ContentDocument" ? "069" : "a0S"
        return prefix + "SIM" + String(format: "%09d", sequence) + "AAA"
    }

    func insert(_ type: String, _ fields: JSONObject) -> String {
        let id = newId(type)
        var o = fields
        let now = tick()
        o["Id"] = .string(id)
        o["CreatedDate"] = .string(now)
        o["LastModifiedDate"] = .string(now)
        o["SystemModstamp"] = .string(now)
        o["OwnerId"] = .string("005SIM000000001AAA")
        records[type, default: [:]][id] = o
        order[type, default: []].append(id)
        return id
    }

    func wire(_ type: String, _ o: JSONObject, only: [String]? = nil) -> JSON {
        var out: JSONObject = ["attributes": .object(["type": .string(type), "url": .string("/services/data/v62.0/sobjects/\(type)/\(o["Id"]?.stringValue ?? "")")])]
        for (k, v) in o where only.map({ $0.contains(k) }) ?? true { out[k] = v }
        if let only { for k in only where out[k] == nil { out[k] = .null } }
        return .object(out)
    }

    // MARK: Transport

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let path = request.url.path
        log.append("\(request.method.rawValue) \(path)")
        var query: [String: String] = [:]
        for item in URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems ?? [] { query[item.name] = item.value ?? "" }
        if path == "/services/oauth2/token" { return token(request) }
        if path == "/services/oauth2/revoke" {
            let form = Self.form(request.body ?? Data())
            if let t = form["token"] { accessTokens[t] = nil; refreshTokens[t] = nil }
            return reply(200)
        }
        guard let auth = request.headers["Authorization"], auth.hasPrefix("Bearer "),
              let userId = accessTokens[String(auth.dropFirst(7))] else {
            return restError(401, "INVALID_SESSION_ID", "Session expired or invalid")
        }
        if path == "/services/oauth2/userinfo" {
            let name = users.first { $0.value.id == userId }?.key ?? ""
            return reply(200, .object(["user_id": .string(userId), "organization_id": "00DSIM000000001AAA",
                                       "preferred_username": .string(name), "name": "Ada", "email": .string(name), "active": true]))
        }
        let parts = path.split(separator: "/").map(String.init)
        guard parts.count >= 4, parts[0] == "services", parts[1] == "data", parts[2].hasPrefix("v") else {
            return restError(404, "NOT_FOUND", "The requested resource does not exist")
        }
        let rest = Array(parts[3...])
        let body = request.body.flatMap { try? JSON.parse($0) }
        switch (rest[0], rest.count, request.method) {
        case ("sobjects", 2, .post): return create(rest[1], body)
        case ("sobjects", 3, _) where rest[2] == "describe": return describe(rest[1])
        case ("sobjects", 3, .get): return retrieve(rest[1], rest[2], fields: query["fields"])
        case ("sobjects", 3, .patch): return patch(rest[1], rest[2], body, ifUnmodifiedSince: request.headers["If-Unmodified-Since"])
        case ("sobjects", 3, .delete): return remove(rest[1], rest[2])
        case ("sobjects", 4, .get) where rest[1] == "ContentVersion" && rest[3] == "VersionData":
            guard let data = blobs[rest[2]] else { return restError(404, "NOT_FOUND", "The requested resource does not exist") }
            var h = HTTPFields()
            h["Content-Type"] = "application/octetstream"
            return TransportResponse(status: .ok, headers: h, body: data)
        case ("query", 1, .get):
            let size = request.headers["Sforce-Query-Options"].flatMap { Int($0.replacingOccurrences(of: "batchSize=", with: "")) } ?? 2000
            return soqlQuery(query["q"] ?? "", batch: min(max(size, 200), 2000))
        case ("query", 2, .get): return more(rest[1])
        case ("composite", 2, _) where rest[1] == "sobjects": return collection(request.method, body, query: query)
        case ("composite", 3, .post) where rest[1] == "sobjects": return collectionRetrieve(rest[2], body)
        default: return restError(404, "NOT_FOUND", "The requested resource does not exist")
        }
    }

    static func form(_ data: Data) -> [String: String] {
        var out: [String: String] = [:]
        for pair in String(decoding: data, as: UTF8.self).split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1).map { String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "" }
            out[kv[0]] = kv.count > 1 ? kv[1] : ""
        }
        return out
    }

    func token(_ request: TransportRequest) -> TransportResponse {
        let form = Self.form(request.body ?? Data())
        tokenLog.append(form["grant_type"] ?? "")
        func oauth(_ e: String, _ d: String) -> TransportResponse { reply(400, .object(["error": .string(e), "error_description": .string(d)])) }
        guard form["client_id"] == clientId else { return oauth("invalid_client_id", "client identifier invalid") }
        guard form["client_secret"] == nil || form["client_secret"] == clientSecret else { return oauth("invalid_client", "invalid client credentials") }
        let userId: String
        var refresh: String?
        switch form["grant_type"] {
        case "password":
            guard let u = users[form["username"] ?? ""], u.password == form["password"] else { return oauth("invalid_grant", "authentication failure") }
            userId = u.id
            refresh = "5Aep\(UUID().uuidString)"
            refreshTokens[refresh!] = userId
        case "refresh_token":
            guard let u = refreshTokens[form["refresh_token"] ?? ""] else { return oauth("invalid_grant", "expired access/refresh token") }
            userId = u
        default: return oauth("unsupported_grant_type", "grant type not supported")
        }
        let access = "00DSIM!\(UUID().uuidString)"
        accessTokens[access] = userId
        var o: JSONObject = ["access_token": .string(access)]
        if let refresh { o["refresh_token"] = .string(refresh) }
        o["instance_url"] = .string(instance)
        o["id"] = .string("https://login.salesforce.com/id/00DSIM000000001AAA/\(userId)")
        o["token_type"] = "Bearer"
        o["issued_at"] = .string(String(Int64(clock.timeIntervalSince1970 * 1000)))
        o["signature"] = "c2ln"
        return reply(200, .object(o))
    }

    // MARK: Records

    func wellFormed(_ id: String) -> Bool {
        (id.count == 15 || id.count == 18) && id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
    }

    func create(_ type: String, _ body: JSON?) -> TransportResponse {
        guard var o = body?.objectValue else { return restError(400, "JSON_PARSER_ERROR", "Unexpected end of input") }
        if o["Id"] != nil { return restError(400, "INVALID_FIELD", "The Id field should not be specified in the sobject data.") }
        o["attributes"] = nil
        if type == "ContentVersion", let b64 = o["VersionData"]?.stringValue {
            guard let data = Data(base64Encoded: b64) else { return restError(400, "INVALID_FIELD", "VersionData is not base64") }
            let doc = insert("ContentDocument", ["Title": o["Title"] ?? .null])
            o["VersionData"] = nil
            o["ContentDocumentId"] = .string(doc)
            let id = insert(type, o)
            blobs[id] = data
            return reply(201, .object(["id": .string(id), "success": true, "errors": []]),
                         headers: [("Location", "/services/data/v62.0/sobjects/\(type)/\(id)")])
        }
        let id = insert(type, o)
        return reply(201, .object(["id": .string(id), "success": true, "errors": []]),
                     headers: [("Location", "/services/data/v62.0/sobjects/\(type)/\(id)")])
    }

    func missing(_ type: String, _ id: String) -> TransportResponse {
        if !wellFormed(id) {
            return restError(400, "MALFORMED_ID", "Record ID: id value of incorrect type: \(id)", fields: ["Id"])
        }
        if deleted.contains(id) { return restError(404, "ENTITY_IS_DELETED", "entity is deleted", fields: []) }
        return restError(404, "NOT_FOUND", "The requested resource does not exist")
    }

    func retrieve(_ type: String, _ id: String, fields: String?) -> TransportResponse {
        guard let o = records[type]?[id] else { return missing(type, id) }
        return reply(200, wire(type, o, only: fields.map { $0.split(separator: ",").map(String.init) }))
    }

    func patch(_ type: String, _ id: String, _ body: JSON?, ifUnmodifiedSince: String?) -> TransportResponse {
        guard var o = records[type]?[id] else { return missing(type, id) }
        guard let changes = body?.objectValue else { return restError(400, "JSON_PARSER_ERROR", "Unexpected end of input") }
        if let since = ifUnmodifiedSince {
            let f = DateFormatter()
            f.locale = Locale(identifier: "en_US_POSIX")
            f.timeZone = TimeZone(identifier: "GMT")
            f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
            guard let limit = f.date(from: since) else { return restError(400, "INVALID_HEADER_TYPE", "If-Unmodified-Since: bad date") }
            let modified = o["LastModifiedDate"]?.stringValue ?? ""
            if stamp(limit) < modified { return reply(412) }
        }
        for (k, v) in changes where k != "attributes" { o[k] = v }
        let now = tick()
        o["LastModifiedDate"] = .string(now)
        o["SystemModstamp"] = .string(now)
        records[type]![id] = o
        return reply(204)
    }

    func remove(_ type: String, _ id: String) -> TransportResponse {
        guard records[type]?[id] != nil else { return missing(type, id) }
        records[type]![id] = nil
        order[type]?.removeAll { $0 == id }
        deleted.insert(id)
        return reply(204)
    }

    func describe(_ type: String) -> TransportResponse {
        var names: [String] = ["Id", "OwnerId", "CreatedDate", "LastModifiedDate", "SystemModstamp"]
        for o in (records[type] ?? [:]).values { for k in o.keys where !names.contains(k) { names.append(k) } }
        return reply(200, .object(["name": .string(type), "fields": .array(names.map { .object(["name": .string($0), "type": "string"]) })]))
    }
}
