import Crypto
import Foundation
import MBaaSCore

// NOTE: this file deliberately imports neither MBaaSNCMB nor its codec: it re-implements the NCMB server from the
// documented facts (ncmb.md) so that running the adapter against it cross-checks the adapter's codec, signer and
// query translation. It exists to author cassettes from documented facts.

/// An in-memory NCMB server, as an ``HTTPTransport``, that behaves as ncmb.md documents:
///
/// - every request must carry `X-NCMB-Application-Key`, `X-NCMB-Timestamp` and a valid `X-NCMB-Signature`
///   (checked with this file's own HMAC code, §2.1–2.3), else `401 E401001`;
/// - a session token that is unknown or logged out is `401 E401001` (§1.6);
/// - objects on `/classes/{class}`, `/installations`, `/push`: create `201 {createDate, objectId}`, get `200`,
///   update `200 {updateDate}`, delete `200` with an empty body, `404 E404001` for an unknown id (§1.2); `null`
///   clears a field (kept as null); `__op` operators (§1.3); ACLs (§1.8) enforced with `403 E403001`;
/// - queries with `where` (every operator of §1.4, evaluated with MongoDB-like semantics), `order` (default
///   `-createDate`), `limit` 0…1000 (default 100), `skip`, `count=1`, `include` (§1.4);
/// - users, `/login`, `/logout`, anonymous users (§1.6); roles with `belongUser`/`belongRole` relations (§1.7);
/// - the file store: multipart upload with the `acl` part before the `file` part, download, ACL update as
///   `{"acl":…}`, delete, list (§1.9);
/// - optional response signatures (§2.6).
///
/// Every answer names the fact it follows in the `X-MBaaS-Fact` response header (`[doc]` ncmb.md or an NCMB page,
/// `[sdk]` a vendor SDK's code or test, `[inferred]` where the reference is silent), which a recording moves into
/// the cassette. Inferred: `$exists` treats a null value as absent; equality of a relation field with a Pointer
/// tests membership (Parse semantics); a second upload under a taken file name is `409 E409001`; an anonymous id
/// already registered logs that user in again.
///
/// Time: each write advances the server clock by `tick` from `start`, so `createDate` orders records as a live
/// server would. Ids and tokens come from a seeded generator, so runs are reproducible.
final class NCMBSimulator: HTTPTransport, @unchecked Sendable {
    let applicationKey: String
    let clientKey: String
    let apiVersion: String
    let signResponses: Bool
    private let lock = NSLock()
    private var state: State

    init(applicationKey: String, clientKey: String, start: Date, tick: TimeInterval = 0.001, seed: UInt64 = 0x4E434D42,
         apiVersion: String = "2013-09-01", signResponses: Bool = false) {
        self.applicationKey = applicationKey
        self.clientKey = clientKey
        self.apiVersion = apiVersion
        self.signResponses = signResponses
        self.state = State(now: start, tick: tick, rng: seed)
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse { respond(request) }

    /// Handles one request synchronously, under the lock.
    func respond(_ request: TransportRequest) -> TransportResponse {
        lock.lock()
        defer { lock.unlock() }
        var response = handle(request)
        if signResponses, let base = stringToSign(request), !Self.unsignedCodes.contains(errorCode(response) ?? "") {
            var message = Data(base.utf8)
            if !response.body.isEmpty {
                message.append(0x0A)
                // [sdk] ncmb_android NCMBConnection.java, ncmb_ios NCMBURLSession.m, ncmb_unity NCMBConnection.cs: a
                // non-JSON body (a file) enters the response signature as the lowercase hex of its bytes.
                if response.headers["Content-Type"]?.lowercased().hasPrefix("application/json") == true {
                    message.append(response.body)
                } else {
                    message.append(Data(response.body.map { String(format: "%02x", $0) }.joined().utf8))
                }
            }
            response.headers["X-NCMB-Response-Signature"] = hmac(message)
        }
        return response
    }

    /// Number of stored records of a class (for tests).
    func count(of collection: String) -> Int {
        lock.lock()
        defer { lock.unlock() }
        return state.collections[collection]?.count ?? 0
    }

    /// Whether a file is stored (for tests).
    func hasFile(_ name: String) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return state.files.contains { $0.name == name }
    }

    // MARK: State

    struct StoredFile {
        var name: String
        var data: Data
        var mimeType: String
        var acl: JSON
        var createDate: String
        var updateDate: String
    }

    struct State {
        var now: Date
        var tick: TimeInterval
        var rng: UInt64
        /// "classes/Memo", "users", "roles", "installations", "push" → objects in insertion order.
        var collections: [String: [JSONObject]] = [:]
        /// "collection/objectId/field" → member pointers (className, objectId).
        var relations: [String: [(String, String)]] = [:]
        var passwords: [String: String] = [:]
        var sessions: [String: String] = [:]
        var files: [StoredFile] = []

        mutating func nextRandom() -> UInt64 {
            rng &+= 0x9E3779B97F4A7C15
            var z = rng
            z = (z ^ (z >> 30)) &* 0xBF58476D1CE4E5B9
            z = (z ^ (z >> 27)) &* 0x94D049BB133111EB
            return z ^ (z >> 31)
        }

        mutating func randomString(_ length: Int) -> String {
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
            return String((0..<length).map { _ in alphabet[Int(nextRandom() % UInt64(alphabet.count))] })
        }

        mutating func timestamp() -> String {
            now = now.addingTimeInterval(tick)
            return ISO8601.format(now)
        }
    }

    struct Caller {
        var userId: String?
        var roles: [String]
    }

    // MARK: Dispatch

    static let unsignedCodes: Set<String> = ["E404002", "E404005", "E405002", "E415001"]

    private func handle(_ request: TransportRequest) -> TransportResponse {
        guard request.headers["X-NCMB-Application-Key"] == applicationKey,
              request.headers["X-NCMB-Timestamp"] != nil,
              let sent = request.headers["X-NCMB-Signature"], let base = stringToSign(request),
              sent == hmac(Data(base.utf8))
        else { return error("E401001", "Authentication error by header incorrect.", fact: "[doc] ncmb.md §2.1-2.3, §1.11 a missing or wrong X-NCMB-Signature is 401 E401001") }

        var caller = Caller(userId: nil, roles: [])
        if let token = request.headers["X-NCMB-Apps-Session-Token"] {
            guard let userId = state.sessions[token] else {
                return error("E401001", "Authentication error by header incorrect.", fact: "[doc] ncmb.md §1.6 an unknown or logged-out session token is 401 E401001")
            }
            caller = Caller(userId: userId, roles: roleNames(of: userId))
        }

        let components = URLComponents(url: request.url, resolvingAgainstBaseURL: false)
        let segments = (components?.percentEncodedPath ?? "").split(separator: "/").map {
            String($0).removingPercentEncoding ?? String($0)
        }
        let query = parseQuery(components?.percentEncodedQuery)
        guard segments.first == apiVersion else {
            if segments.count == 3, segments[1] == "script" { return error("E404001", "No data available.") }
            return error("E404002", "None service.")
        }
        let route = Array(segments.dropFirst())
        let method = request.method.rawValue
        switch (method, route.count, route.first) {
        case ("POST", 2, "classes"): return create(collection: "classes/\(route[1])", request, caller)
        case ("GET", 2, "classes"): return find(collection: "classes/\(route[1])", query, caller)
        case (_, 3, "classes"): return objectRoute(method, collection: "classes/\(route[1])", id: route[2], request, caller)
        case ("POST", 1, "installations"), ("POST", 1, "push"): return create(collection: route[0], request, caller)
        case ("GET", 1, "installations"), ("GET", 1, "push"), ("GET", 1, "roles"):
            return find(collection: route[0], query, caller)
        case (_, 2, "installations"), (_, 2, "push"), (_, 2, "roles"):
            return objectRoute(method, collection: route[0], id: route[1], request, caller)
        case ("POST", 1, "roles"): return createRole(request, caller)
        case ("POST", 1, "users"): return signUp(request)
        case ("GET", 1, "users"): return find(collection: "users", query, caller)
        case (_, 2, "users"): return objectRoute(method, collection: "users", id: route[1], request, caller)
        case ("POST", 1, "login"): return logIn(body: json(request.body))
        case ("GET", 1, "login"):
            // Legacy form (UserCommunity #724).
            var o = JSONObject()
            for (k, v) in query { o[k] = .string(v) }
            return logIn(body: .object(o))
        case ("GET", 1, "logout"): return logOut(request)
        case ("GET", 1, "files"): return listFiles(query, caller)
        case ("POST", 2, "files"): return uploadFile(name: route[1], request, caller)
        case ("GET", 2, "files"): return downloadFile(name: route[1], caller)
        case ("PUT", 2, "files"): return updateFile(name: route[1], request, caller)
        case ("DELETE", 2, "files"): return deleteFile(name: route[1], caller)
        default: return error("E405001", "Method or URI not allowed.")
        }
    }

    private func objectRoute(_ method: String, collection: String, id: String, _ request: TransportRequest, _ caller: Caller) -> TransportResponse {
        switch method {
        case "GET": return get(collection: collection, id: id, caller)
        case "PUT": return update(collection: collection, id: id, request, caller)
        case "DELETE": return delete(collection: collection, id: id, caller)
        default: return error("E405001", "Method or URI not allowed.")
        }
    }

    // MARK: Objects

    private func create(collection: String, _ request: TransportRequest, _ caller: Caller) -> TransportResponse {
        guard let body = json(request.body)?.objectValue else { return error("E400001", "JSON is invalid format.") }
        let date = state.timestamp()
        let id = state.randomString(16)
        var object: JSONObject = ["objectId": .string(id), "createDate": .string(date), "updateDate": .string(date)]
        object["acl"] = body["acl"] ?? .object(["*": .object(["read": true, "write": true])])
        if let failure = apply(body, to: &object, collection: collection, id: id) { return failure }
        state.collections[collection, default: []].append(object)
        return ok(201, ["createDate": .string(date), "objectId": .string(id)],
                  fact: "[doc] ncmb.md §1.2 create answers 201 {createDate, objectId}")
    }

    private func get(collection: String, id: String, _ caller: Caller) -> TransportResponse {
        guard let object = state.collections[collection]?.first(where: { $0["objectId"]?.stringValue == id }) else {
            return error("E404001", "No data available.")
        }
        guard allowed(object["acl"], caller, write: false) else { return error("E403001", "No access with ACL.") }
        return ok(200, publicView(object), fact: collection == "users"
                  ? "[doc] ncmb.md §1.6 GET /users/{id} answers 200 the user (no password or sessionToken)"
                  : "[doc] ncmb.md §1.2 get answers 200 the object with objectId, createDate, updateDate, acl")
    }

    private func update(collection: String, id: String, _ request: TransportRequest, _ caller: Caller) -> TransportResponse {
        guard let index = state.collections[collection]?.firstIndex(where: { $0["objectId"]?.stringValue == id }) else {
            return error("E404001", "No data available.")
        }
        var object = state.collections[collection]![index]
        guard allowed(object["acl"], caller, write: true) else { return error("E403001", "No access with ACL.") }
        guard let body = json(request.body)?.objectValue else { return error("E400001", "JSON is invalid format.") }
        if collection == "users", let name = body["userName"]?.stringValue,
           state.collections["users", default: []].contains(where: { $0["userName"]?.stringValue == name && $0["objectId"]?.stringValue != id }) {
            return error("E409001", "userName is duplication.")
        }
        var changes = body
        if let acl = changes["acl"] { object["acl"] = acl; changes["acl"] = nil }
        if collection == "users", let password = changes["password"]?.stringValue {
            state.passwords[id] = password
            changes["password"] = nil
        }
        if let failure = apply(changes, to: &object, collection: collection, id: id) { return failure }
        let date = state.timestamp()
        object["updateDate"] = .string(date)
        state.collections[collection]![index] = object
        return ok(200, ["updateDate": .string(date)],
                  fact: "[doc] ncmb.md §1.2, §1.3 update (changed fields, null clears, __op operators) answers 200 {updateDate}")
    }

    private func delete(collection: String, id: String, _ caller: Caller) -> TransportResponse {
        guard let index = state.collections[collection]?.firstIndex(where: { $0["objectId"]?.stringValue == id }) else {
            return error("E404001", "No data available.")
        }
        guard allowed(state.collections[collection]![index]["acl"], caller, write: true) else {
            return error("E403001", "No access with ACL.")
        }
        state.collections[collection]!.remove(at: index)
        state.relations = state.relations.filter { !$0.key.hasPrefix("\(collection)/\(id)/") }
        if collection == "users" { state.sessions = state.sessions.filter { $0.value != id } }
        return empty(fact: "[doc] ncmb.md §1.2 delete answers 200 with an empty body")
    }

    /// Applies body members (values, `null`, `__op`s) to an object; returns an error response on bad input.
    private func apply(_ body: JSONObject, to object: inout JSONObject, collection: String, id: String) -> TransportResponse? {
        for (key, value) in body where key != "acl" {
            if ["objectId", "createDate", "updateDate"].contains(key) { return error("E400002", "\(key) is invalid.") }
            if key.hasPrefix("$") { return error("E400004", "\(key) is invalid format.") }
            if let bad = invalidValue(value) { return bad }
            guard let op = value["__op"]?.stringValue else { object[key] = value; continue }
            let current = object[key]
            switch op {
            case "Increment":
                guard let amount = value["amount"], amount.doubleValue != nil else { return error("E400002", "amount is invalid.") }
                switch (current ?? .int(0), amount) {
                case (.null, _): object[key] = amount
                case (.int(let a), .int(let b)): object[key] = .int(a + b)
                case (let a, let b):
                    guard let x = a.doubleValue, let y = b.doubleValue else { return error("E400002", "\(key) is invalid.") }
                    object[key] = .double(x + y)
                }
            case "Add", "AddUnique", "Remove":
                guard let items = value["objects"]?.arrayValue else { return error("E400002", "objects is invalid.") }
                var array: [JSON]
                switch current {
                case nil, .null?: array = []
                case .array(let a)?: array = a
                default: return error("E400002", "\(key) is invalid.")
                }
                switch op {
                case "Add": array += items
                case "AddUnique": for item in items where !array.contains(where: { jsonEqual($0, item) }) { array.append(item) }
                default: array.removeAll { element in items.contains { jsonEqual($0, element) } }
                }
                object[key] = .array(array)
            case "AddRelation", "RemoveRelation":
                guard let items = value["objects"]?.arrayValue, !items.isEmpty else { return error("E400002", "objects is invalid.") }
                var members = state.relations["\(collection)/\(id)/\(key)"] ?? []
                for item in items {
                    guard item["__type"]?.stringValue == "Pointer", let c = item["className"]?.stringValue,
                          let o = item["objectId"]?.stringValue else { return error("E400002", "objects is invalid.") }
                    if op == "AddRelation" {
                        if !members.contains(where: { $0 == (c, o) }) { members.append((c, o)) }
                    } else {
                        members.removeAll { $0 == (c, o) }
                    }
                }
                state.relations["\(collection)/\(id)/\(key)"] = members
                let cls = items.first?["className"]?.stringValue ?? ""
                object[key] = .object(["__type": "Relation", "className": .string(cls)])
            default:
                return error("E400002", "__op is invalid.")
            }
        }
        return nil
    }

    private func invalidValue(_ value: JSON) -> TransportResponse? {
        switch value {
        case .object(let o):
            if o["__type"]?.stringValue == "GeoPoint" {
                guard let lat = o["latitude"]?.doubleValue, let lon = o["longitude"]?.doubleValue,
                      (-90...90).contains(lat), (-180...180).contains(lon) else { return error("E403006", "GeoPoint is invalid.") }
            }
            if o["__type"]?.stringValue == "Date" {
                guard let iso = o["iso"]?.stringValue, ISO8601.parse(iso) != nil else { return error("E400004", "iso is invalid format.") }
            }
            for (_, v) in o { if let bad = invalidValue(v) { return bad } }
        case .array(let a):
            for v in a { if let bad = invalidValue(v) { return bad } }
        default: break
        }
        return nil
    }

    private func publicView(_ object: JSONObject) -> JSONObject {
        var o = object
        o["password"] = nil
        o["sessionToken"] = nil
        return o
    }

    // MARK: Queries

    private func find(collection: String, _ query: [(String, String)], _ caller: Caller) -> TransportResponse {
        let objects = (state.collections[collection] ?? []).filter { allowed($0["acl"], caller, write: false) }
        let fact: String
        switch collection {
        case "roles": fact = "[doc] ncmb.md §1.7 GET /roles answers {results} listing roleName, belongUser, belongRole"
        case "users" where query.contains(where: { $0.0 == "where" && $0.1.contains("$relatedTo") }):
            fact = "[doc] ncmb.md §1.7 members of a role: GET /users?where={\"$relatedTo\":{role Pointer, \"key\":\"belongUser\"}} answers {results}"
        default: fact = "[doc] ncmb.md §1.4 query (where, order, limit 1..1000, skip, count=1) answers 200 {results[, count]}"
        }
        return runQuery(objects, collection: collection, query, caller, fact: fact)
    }

    private func runQuery(_ objects: [JSONObject], collection: String, _ query: [(String, String)], _ caller: Caller,
                          fact: String) -> TransportResponse {
        var whereObject = JSONObject()
        var order = ["-createDate"]
        var limit = 100
        var skip = 0
        var count = false
        var include: [String] = []
        for (name, value) in query {
            switch name {
            case "where":
                guard let w = try? JSON.parse(value), let o = w.objectValue else { return error("E400002", "where is invalid.") }
                whereObject = o
            case "order": order = value.split(separator: ",").map(String.init)
            case "limit":
                guard let n = Int(value), (0...1000).contains(n) else { return error("E400002", "limit is invalid.") }
                limit = n
            case "skip":
                guard let n = Int(value), n >= 0 else { return error("E400002", "skip is invalid.") }
                skip = n
            case "count": count = value == "1"
            case "include": include = value.split(separator: ",").map(String.init)
            default: return error("E400002", "\(name) is invalid.")
            }
        }
        var matched: [(Int, JSONObject)] = []
        for (i, object) in objects.enumerated() {
            switch matches(object, whereObject, collection: collection, caller) {
            case .failure(let box): return box.response
            case .success(true): matched.append((i, object))
            case .success(false): break
            }
        }
        if let near = nearSphereKey(whereObject) {
            matched.sort { a, b in
                let da = distance(a.1, near), db = distance(b.1, near)
                return da != db ? da < db : a.0 < b.0
            }
        } else {
            matched.sort { a, b in
                for key in order where !key.isEmpty {
                    let descending = key.hasPrefix("-")
                    let k = descending ? String(key.dropFirst()) : key
                    let c = compare(lookup(a.1, k), lookup(b.1, k))
                    if c != 0 { return descending ? c > 0 : c < 0 }
                }
                return a.0 < b.0
            }
        }
        let page = matched.dropFirst(skip).prefix(limit).map { entry -> JSON in
            var o = publicView(entry.1)
            for key in include { if let v = o[key] { o[key] = expand(v) } }
            return .object(o)
        }
        var out: JSONObject = ["results": .array(Array(page))]
        if count { out["count"] = .int(Int64(matched.count)) }
        return ok(200, out, fact: fact)
    }

    private func expand(_ value: JSON) -> JSON {
        guard value["__type"]?.stringValue == "Pointer", let cls = value["className"]?.stringValue,
              let id = value["objectId"]?.stringValue else { return value }
        let collection = collectionName(forClass: cls)
        guard let target = state.collections[collection]?.first(where: { $0["objectId"]?.stringValue == id }) else { return value }
        var o: JSONObject = ["__type": "Object", "className": .string(cls)]
        for (k, v) in publicView(target) { o[k] = v }
        return .object(o)
    }

    private func collectionName(forClass cls: String) -> String {
        switch cls {
        case "user": "users"
        case "role": "roles"
        case "installation": "installations"
        case "push": "push"
        default: "classes/\(cls)"
        }
    }

    private func matches(_ object: JSONObject, _ conditions: JSONObject, collection: String, _ caller: Caller) -> Result<Bool, HTTPResponseBox> {
        for (key, condition) in conditions {
            switch key {
            case "$or":
                guard let items = condition.arrayValue, !items.isEmpty else { return .failure(box(error("E400002", "where is invalid."))) }
                var any = false
                for item in items {
                    guard let sub = item.objectValue else { return .failure(box(error("E400002", "where is invalid."))) }
                    switch matches(object, sub, collection: collection, caller) {
                    case .failure(let r): return .failure(r)
                    case .success(let b): any = any || b
                    }
                }
                if !any { return .success(false) }
            case "$relatedTo":
                guard let target = condition["object"], let field = condition["key"]?.stringValue,
                      let cls = target["className"]?.stringValue, let id = target["objectId"]?.stringValue
                else { return .failure(box(error("E400002", "where is invalid."))) }
                let members = state.relations["\(collectionName(forClass: cls))/\(id)/\(field)"] ?? []
                guard let me = object["objectId"]?.stringValue, members.contains(where: { $0.1 == me }) else { return .success(false) }
            default:
                if key.hasPrefix("$") { return .failure(box(error("E400002", "where is invalid."))) }
                let value = lookup(object, key)
                if let ops = condition.objectValue, let first = ops.keys.first, first.hasPrefix("$") {
                    for (op, operand) in ops {
                        switch test(op, operand, value, ops: ops, object: object, key: key, collection: collection, caller) {
                        case .failure(let r): return .failure(r)
                        case .success(false): return .success(false)
                        case .success(true): continue
                        }
                    }
                } else if !equals(value, condition, object: object, key: key, collection: collection) {
                    return .success(false)
                }
            }
        }
        return .success(true)
    }

    struct HTTPResponseBox: Error { var response: TransportResponse }
    private func box(_ r: TransportResponse) -> HTTPResponseBox { HTTPResponseBox(response: r) }

    private func test(_ op: String, _ operand: JSON, _ value: JSON?, ops: JSONObject, object: JSONObject, key: String,
                      collection: String, _ caller: Caller) -> Result<Bool, HTTPResponseBox> {
        let bad = HTTPResponseBox(response: error("E400002", "where is invalid."))
        func list() -> [JSON]? { operand.arrayValue }
        switch op {
        case "$ne": return .success(!equals(value, operand, object: object, key: key, collection: collection))
        case "$lt", "$lte", "$gt", "$gte":
            guard let value, comparable(value, operand) else { return .success(false) }
            let c = compare(value, operand)
            switch op {
            case "$lt": return .success(c < 0)
            case "$lte": return .success(c <= 0)
            case "$gt": return .success(c > 0)
            default: return .success(c >= 0)
            }
        case "$in":
            guard let items = list() else { return .failure(bad) }
            return .success(items.contains { equals(value, $0, object: object, key: key, collection: collection) })
        case "$nin":
            guard let items = list() else { return .failure(bad) }
            return .success(!items.contains { equals(value, $0, object: object, key: key, collection: collection) })
        case "$all":
            guard let items = list() else { return .failure(bad) }
            guard let array = value?.arrayValue else { return .success(false) }
            return .success(items.allSatisfy { item in array.contains { jsonEqual($0, item) } })
        case "$inArray":
            guard let items = list() else { return .failure(bad) }
            guard let array = value?.arrayValue else { return .success(false) }
            return .success(items.contains { item in array.contains { jsonEqual($0, item) } })
        case "$ninArray":
            guard let items = list() else { return .failure(bad) }
            let array = value?.arrayValue ?? []
            return .success(!items.contains { item in array.contains { jsonEqual($0, item) } })
        case "$exists":
            guard let flag = operand.boolValue else { return .failure(bad) }
            // [inferred] a null (cleared) field counts as absent.
            let present = value.map { !$0.isNull } ?? false
            return .success(present == flag)
        case "$regex":
            guard let pattern = operand.stringValue, let regex = try? NSRegularExpression(pattern: pattern) else { return .failure(bad) }
            guard let s = value?.stringValue else { return .success(false) }
            return .success(regex.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)) != nil)
        case "$inQuery":
            guard let ids = subqueryIDs(operand, caller) else { return .failure(bad) }
            guard let id = value?["objectId"]?.stringValue else { return .success(false) }
            return .success(ids.contains(id))
        case "$select":
            guard let sub = operand["query"], let field = operand["key"]?.stringValue,
                  let rows = subquery(sub, caller) else { return .failure(bad) }
            let values = rows.compactMap { lookup($0, field) }
            return .success(values.contains { equals(value, $0, object: object, key: key, collection: collection) })
        case "$nearSphere":
            guard let center = geo(operand) else { return .failure(bad) }
            guard let here = value.flatMap(geo) else { return .success(false) }
            let radians = haversine(here, center)
            if let km = ops["$maxDistanceInKilometers"]?.doubleValue { return .success(radians * 6371.0 <= km) }
            if let mi = ops["$maxDistanceInMiles"]?.doubleValue { return .success(radians * 3958.8 <= mi) }
            if let r = ops["$maxDistanceInRadians"]?.doubleValue { return .success(radians <= r) }
            return .success(true)
        case "$maxDistanceInKilometers", "$maxDistanceInMiles", "$maxDistanceInRadians":
            return ops["$nearSphere"] == nil ? .failure(bad) : .success(true)
        case "$within":
            guard let box = operand["$box"]?.arrayValue, box.count == 2, let sw = geo(box[0]), let ne = geo(box[1]) else {
                return .failure(bad)
            }
            guard sw.0 <= ne.0, sw.1 <= ne.1 else { return .failure(bad) }
            guard let here = value.flatMap(geo) else { return .success(false) }
            return .success((sw.0...ne.0).contains(here.0) && (sw.1...ne.1).contains(here.1))
        default:
            return .failure(bad)
        }
    }

    private func subquery(_ json: JSON, _ caller: Caller) -> [JSONObject]? {
        guard let cls = json["className"]?.stringValue else { return nil }
        let collection = collectionName(forClass: cls)
        var items: [(String, String)] = []
        if let w = json["where"] { items.append(("where", w.printed())) }
        if let l = json["limit"]?.intValue { items.append(("limit", String(l))) }
        if let s = json["skip"]?.intValue { items.append(("skip", String(s))) }
        let response = find(collection: collection, items, caller)  // a sub-query: its fact is not kept
        guard response.status == 200, let results = self.json(response.body)?["results"]?.arrayValue else { return nil }
        return results.compactMap(\.objectValue)
    }

    private func subqueryIDs(_ json: JSON, _ caller: Caller) -> Set<String>? {
        subquery(json, caller).map { Set($0.compactMap { $0["objectId"]?.stringValue }) }
    }

    private func nearSphereKey(_ conditions: JSONObject) -> (String, (Double, Double))? {
        for (key, condition) in conditions {
            if let center = condition["$nearSphere"].flatMap(geo) { return (key, center) }
        }
        return nil
    }

    private func distance(_ object: JSONObject, _ near: (String, (Double, Double))) -> Double {
        guard let here = lookup(object, near.0).flatMap(geo) else { return .infinity }
        return haversine(here, near.1)
    }

    private func geo(_ json: JSON) -> (Double, Double)? {
        guard json["__type"]?.stringValue == "GeoPoint", let lat = json["latitude"]?.doubleValue,
              let lon = json["longitude"]?.doubleValue else { return nil }
        return (lat, lon)
    }

    private func haversine(_ a: (Double, Double), _ b: (Double, Double)) -> Double {
        let (la1, lo1, la2, lo2) = (a.0 * .pi / 180, a.1 * .pi / 180, b.0 * .pi / 180, b.1 * .pi / 180)
        let h = pow(sin((la2 - la1) / 2), 2) + cos(la1) * cos(la2) * pow(sin((lo2 - lo1) / 2), 2)
        return 2 * asin(min(1, sqrt(h)))
    }

    /// A dotted path into an object (`hash.a`, `list.0`).
    private func lookup(_ object: JSONObject, _ path: String) -> JSON? {
        var current: JSON? = .object(object)
        for part in path.split(separator: ".", omittingEmptySubsequences: false) {
            switch current {
            case .object(let o)?: current = o[String(part)]
            case .array(let a)?: current = Int(part).flatMap { $0 >= 0 && $0 < a.count ? a[$0] : nil }
            default: return nil
            }
        }
        return current
    }

    /// Equality as a query sees it: numbers by value, dates by instant (a plain createDate string equals its Date
    /// object), an array field equals a scalar it contains, a relation field equals a Pointer it holds ([inferred]).
    private func equals(_ value: JSON?, _ operand: JSON, object: JSONObject, key: String, collection: String) -> Bool {
        if operand.isNull { return value == nil || value!.isNull }
        guard let value else { return false }
        if value["__type"]?.stringValue == "Relation", operand["__type"]?.stringValue == "Pointer",
           let id = object["objectId"]?.stringValue, let target = operand["objectId"]?.stringValue {
            return (state.relations["\(collection)/\(id)/\(key)"] ?? []).contains { $0.1 == target }
        }
        if jsonEqual(value, operand) { return true }
        if case .array(let items) = value, operand.arrayValue == nil { return items.contains { jsonEqual($0, operand) } }
        return false
    }

    private func jsonEqual(_ a: JSON, _ b: JSON) -> Bool {
        if let da = dateValue(a), let db = dateValue(b) { return da == db }
        if a["__type"]?.stringValue == "Pointer", b["__type"]?.stringValue == "Pointer" {
            return a["className"] == b["className"] && a["objectId"] == b["objectId"]
        }
        return a.semanticallyEquals(b)
    }

    private func dateValue(_ json: JSON) -> Date? {
        if json["__type"]?.stringValue == "Date", let iso = json["iso"]?.stringValue { return ISO8601.parse(iso) }
        if let s = json.stringValue, s.count == 24, s.hasSuffix("Z"), let d = ISO8601.parse(s) { return d }
        return nil
    }

    private func comparable(_ a: JSON, _ b: JSON) -> Bool {
        if dateValue(a) != nil && dateValue(b) != nil { return true }
        switch (a, b) {
        case (.int, .int), (.int, .double), (.double, .int), (.double, .double), (.string, .string): return true
        default: return false
        }
    }

    /// A total order for sorting: missing/null < numbers < strings < dates < others; within a type by value.
    private func compare(_ a: JSON?, _ b: JSON?) -> Int {
        func rank(_ j: JSON?) -> Int {
            guard let j, !j.isNull else { return 0 }
            if dateValue(j) != nil, j.stringValue == nil { return 3 }
            switch j {
            case .int, .double: return 1
            case .string: return 2
            case .bool: return 4
            default: return 5
            }
        }
        let ra = rank(a), rb = rank(b)
        if ra != rb { return ra < rb ? -1 : 1 }
        switch (a, b) {
        case let (x?, y?) where ra == 1:
            let dx = x.doubleValue!, dy = y.doubleValue!
            return dx < dy ? -1 : (dx > dy ? 1 : 0)
        case let (.string(x)?, .string(y)?):
            return x < y ? -1 : (x > y ? 1 : 0)
        case let (x?, y?) where ra == 3:
            let dx = dateValue(x)!, dy = dateValue(y)!
            return dx < dy ? -1 : (dx > dy ? 1 : 0)
        case let (.bool(x)?, .bool(y)?):
            return x == y ? 0 : (x ? 1 : -1)
        default:
            return 0
        }
    }

    // MARK: ACL

    private func allowed(_ acl: JSON?, _ caller: Caller, write: Bool) -> Bool {
        guard let acl = acl?.objectValue else { return true }
        let verb = write ? "write" : "read"
        if acl["*"]?[verb]?.boolValue == true { return true }
        if let id = caller.userId, acl[id]?[verb]?.boolValue == true { return true }
        return caller.roles.contains { acl["role:\($0)"]?[verb]?.boolValue == true }
    }

    private func roleNames(of userId: String) -> [String] {
        (state.collections["roles"] ?? []).compactMap { role in
            guard let id = role["objectId"]?.stringValue,
                  (state.relations["roles/\(id)/belongUser"] ?? []).contains(where: { $0.1 == userId }) else { return nil }
            return role["roleName"]?.stringValue
        }
    }

    // MARK: Users and roles

    private func signUp(_ request: TransportRequest) -> TransportResponse {
        guard var body = json(request.body)?.objectValue else { return error("E400001", "JSON is invalid format.") }
        let date = state.timestamp()
        if let anonymous = body["authData"]?["anonymous"] {
            guard let anonId = anonymous["id"]?.stringValue, !anonId.isEmpty else { return error("E400002", "authData is invalid.") }
            if let existing = state.collections["users", default: []].first(where: { $0["authData"]?["anonymous"]?["id"]?.stringValue == anonId }),
               let id = existing["objectId"]?.stringValue {
                let token = newSession(for: id)
                var o = publicView(existing)
                o["sessionToken"] = .string(token)
                return ok(200, o, fact: "[inferred] an anonymous id already registered logs that user in again (200, the user with sessionToken)")
            }
            body["userName"] = .string(state.randomString(25))
            return storeUser(body, password: nil, date: date)
        }
        guard let name = body["userName"]?.stringValue, !name.isEmpty else { return error("E400003", "userName is empty.") }
        guard let password = body["password"]?.stringValue, !password.isEmpty else { return error("E400003", "password is empty.") }
        if state.collections["users", default: []].contains(where: { $0["userName"]?.stringValue == name }) {
            return error("E409001", "userName is duplication.")
        }
        if let mail = body["mailAddress"]?.stringValue,
           state.collections["users", default: []].contains(where: { $0["mailAddress"]?.stringValue == mail }) {
            return error("E409001", "mailAddress is duplication.")
        }
        body["password"] = nil
        return storeUser(body, password: password, date: date)
    }

    private func storeUser(_ body: JSONObject, password: String?, date: String) -> TransportResponse {
        let id = state.randomString(16)
        var user: JSONObject = ["objectId": .string(id), "createDate": .string(date), "updateDate": .string(date)]
        // [sdk] every SDK fixture shows a user with a public ACL: ncmb_android valid_get_getCurrentUser_response.json,
        // ncmb_ios NCMBUserSpec.m, ncmb_js 2013-09-01_role_get_fetchuser_success.json.
        user["acl"] = body["acl"] ?? .object(["*": .object(["read": true, "write": true])])
        user["userName"] = body["userName"] ?? .null
        user["mailAddress"] = body["mailAddress"] ?? .null
        user["mailAddressConfirm"] = .null
        user["authData"] = body["authData"] ?? .null
        var fields = body
        for k in ["acl", "userName", "mailAddress", "authData", "mailAddressConfirm", "sessionToken"] { fields[k] = nil }
        if let failure = apply(fields, to: &user, collection: "users", id: id) { return failure }
        state.collections["users", default: []].append(user)
        if let password { state.passwords[id] = password }
        let token = newSession(for: id)
        return ok(201, ["createDate": .string(date), "objectId": .string(id), "sessionToken": .string(token),
                        "userName": user["userName"]!, "authData": user["authData"]!],
                  fact: "[doc] ncmb.md §1.6 sign-up POST /users answers 201 {createDate, objectId, sessionToken, userName, authData}")
    }

    private func newSession(for userId: String) -> String {
        let token = state.randomString(25)
        state.sessions[token] = userId
        return token
    }

    private func logIn(body: JSON?) -> TransportResponse {
        guard let body = body?.objectValue else { return error("E400001", "JSON is invalid format.") }
        guard let password = body["password"]?.stringValue, !password.isEmpty else { return error("E400003", "password is empty.") }
        let users = state.collections["users"] ?? []
        let user: JSONObject?
        if let name = body["userName"]?.stringValue {
            user = users.first { $0["userName"]?.stringValue == name }
        } else if let mail = body["mailAddress"]?.stringValue {
            user = users.first { $0["mailAddress"]?.stringValue == mail }
        } else {
            return error("E400003", "userName is empty.")
        }
        guard let user, let id = user["objectId"]?.stringValue, state.passwords[id] == password else {
            return error("E401002", "Authentication error with ID/PASS incorrect.")
        }
        var o = publicView(user)
        o["sessionToken"] = .string(newSession(for: id))
        return ok(200, o, fact: "[doc] ncmb.md §1.6 POST /login answers 200 the user with sessionToken and mailAddressConfirm")
    }

    private func logOut(_ request: TransportRequest) -> TransportResponse {
        guard let token = request.headers["X-NCMB-Apps-Session-Token"], state.sessions[token] != nil else {
            return error("E401001", "Authentication error by header incorrect.")
        }
        state.sessions[token] = nil
        return empty(fact: "[doc] ncmb.md §1.6 GET /logout with the session token answers 200")
    }

    private func createRole(_ request: TransportRequest, _ caller: Caller) -> TransportResponse {
        guard let body = json(request.body)?.objectValue else { return error("E400001", "JSON is invalid format.") }
        guard let name = body["roleName"]?.stringValue, !name.isEmpty else { return error("E400003", "roleName is empty.") }
        if state.collections["roles", default: []].contains(where: { $0["roleName"]?.stringValue == name }) {
            return error("E409001", "roleName is duplication.")
        }
        return create(collection: "roles", request, caller)
    }

    // MARK: Files

    private func uploadFile(name: String, _ request: TransportRequest, _ caller: Caller) -> TransportResponse {
        guard let contentType = request.headers["Content-Type"], contentType.lowercased().hasPrefix("multipart/form-data"),
              let form = try? MultipartForm.decode(request.body ?? Data(), contentType: contentType)
        else { return error("E415001", "Unsupported Content-Type.", fact: "[doc] ncmb.md §1.9, §1.11 an upload is multipart/form-data; another type is 415 E415001") }
        if name.unicodeScalars.contains(where: { !$0.isASCII }) {
            return error("E403002", "Unauthorized operations.", fact: "[doc] ncmb.md §1.9 NCMB UserCommunity #1304: a full-width file name gave 403 E403002")
        }
        guard let fileIndex = form.parts.firstIndex(where: { $0.name == "file" }) else { return error("E400003", "file is empty.") }
        var acl: JSON = .object(["*": .object(["read": true, "write": true])])
        if let aclIndex = form.parts.firstIndex(where: { $0.name == "acl" }) {
            guard aclIndex < fileIndex else { return error("E400004", "acl is invalid format.") }
            guard let parsed = try? JSON.parse(form.parts[aclIndex].data), parsed.objectValue != nil else {
                return error("E400004", "acl is invalid format.")
            }
            acl = parsed
        }
        // [inferred] the name is the key: a second upload under a taken name is refused.
        if state.files.contains(where: { $0.name == name }) {
            return error("E409001", "fileName is duplication.", fact: "[inferred] the file name is the key (ncmb.md §1.9): a second upload under a taken name is 409 E409001")
        }
        let part = form.parts[fileIndex]
        let date = state.timestamp()
        state.files.append(StoredFile(name: name, data: part.data, mimeType: part.contentType ?? "application/octet-stream",
                                      acl: acl, createDate: date, updateDate: date))
        return ok(201, ["createDate": .string(date), "fileName": .string(name)],
                  fact: "[doc] ncmb.md §1.9 upload POST /files/{name} multipart (acl part first) answers 201 {createDate, fileName}")
    }

    private func downloadFile(name: String, _ caller: Caller) -> TransportResponse {
        guard let file = state.files.first(where: { $0.name == name }) else { return error("E404001", "No data available.") }
        guard allowed(file.acl, caller, write: false) else { return error("E403001", "No access with ACL.") }
        return TransportResponse(status: 200, headers: HTTPFields([("Content-Type", file.mimeType), (factHeader, "[doc] ncmb.md §1.9 download GET /files/{name} answers 200 the bytes")]),
                            body: file.data)
    }

    private func updateFile(name: String, _ request: TransportRequest, _ caller: Caller) -> TransportResponse {
        guard let index = state.files.firstIndex(where: { $0.name == name }) else { return error("E404001", "No data available.") }
        guard allowed(state.files[index].acl, caller, write: true) else { return error("E403001", "No access with ACL.") }
        guard let body = json(request.body)?.objectValue else { return error("E400001", "JSON is invalid format.") }
        // The ACL travels wrapped: {"acl":{…}} (ncmb.md §1.9).
        guard let acl = body["acl"], acl.objectValue != nil else { return error("E400003", "acl is empty.") }
        state.files[index].acl = acl
        let date = state.timestamp()
        state.files[index].updateDate = date
        return ok(200, ["updateDate": .string(date)], fact: "[doc] ncmb.md §1.9 file ACL update PUT /files/{name} {\"acl\":…} answers 200 {updateDate}")
    }

    private func deleteFile(name: String, _ caller: Caller) -> TransportResponse {
        guard let index = state.files.firstIndex(where: { $0.name == name }) else { return error("E404001", "No data available.") }
        guard allowed(state.files[index].acl, caller, write: true) else { return error("E403001", "No access with ACL.") }
        state.files.remove(at: index)
        return empty(fact: "[doc] ncmb.md §1.9 DELETE /files/{name} answers 200")
    }

    private func listFiles(_ query: [(String, String)], _ caller: Caller) -> TransportResponse {
        let entries: [JSONObject] = state.files.filter { allowed($0.acl, caller, write: false) }.map { f in
            ["fileName": .string(f.name), "mimeType": .string(f.mimeType), "fileSize": .int(Int64(f.data.count)),
             "createDate": .string(f.createDate), "updateDate": .string(f.updateDate), "acl": f.acl]
        }
        return runQuery(entries, collection: "files", query, caller,
                        fact: "[doc] ncmb.md §1.9 GET /files lists {results:[{fileName, mimeType, fileSize, createDate, updateDate, acl}]}")
    }

    // MARK: Wire helpers (own implementation of ncmb.md §2)

    /// The signature base string of a request, built from the URL exactly as received.
    private func stringToSign(_ request: TransportRequest) -> String? {
        guard let c = URLComponents(url: request.url, resolvingAgainstBaseURL: false), let host = c.percentEncodedHost,
              let appKey = request.headers["X-NCMB-Application-Key"], let timestamp = request.headers["X-NCMB-Timestamp"]
        else { return nil }
        var params = ["SignatureMethod=HmacSHA256", "SignatureVersion=2", "X-NCMB-Application-Key=\(appKey)",
                      "X-NCMB-Timestamp=\(timestamp)"]
        if request.method == .get, let q = c.percentEncodedQuery, !q.isEmpty {
            params += q.split(separator: "&").map(String.init)
        }
        // Sorted by name in byte order.
        params.sort { a, b in
            let ka = a.split(separator: "=", maxSplits: 1).first.map(String.init) ?? a
            let kb = b.split(separator: "=", maxSplits: 1).first.map(String.init) ?? b
            return ka == kb ? Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8))
                : Array(ka.utf8).lexicographicallyPrecedes(Array(kb.utf8))
        }
        return "\(request.method)\n\(host)\n\(c.percentEncodedPath)\n" + params.joined(separator: "&")
    }

    private func hmac(_ message: Data) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: Data(clientKey.utf8)))
        return Data(mac).base64EncodedString()
    }

    private func parseQuery(_ q: String?) -> [(String, String)] {
        guard let q, !q.isEmpty else { return [] }
        return q.split(separator: "&").map { item in
            let kv = item.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
            return (kv[0], kv.count > 1 ? kv[1] : "")
        }
    }

    private func json(_ data: Data?) -> JSON? {
        guard let data, !data.isEmpty else { return nil }
        return try? JSON.parse(data)
    }

    /// The response header naming the fact an answer follows (`Interaction.factHeader` of MBaaSReplay, spelled
    /// here so the simulator needs nothing beyond MBaaSCore).
    let factHeader = "X-MBaaS-Fact"

    private func ok(_ status: Int, _ body: JSONObject, fact: String) -> TransportResponse {
        TransportResponse(status: .init(code: status), headers: HTTPFields([("Content-Type", "application/json;charset=UTF-8"), (factHeader, fact)]),
                     body: JSON.object(body).data())
    }

    private func empty(fact: String) -> TransportResponse {
        TransportResponse(status: 200, headers: HTTPFields([("Content-Type", "application/json;charset=UTF-8"), (factHeader, fact)]))
    }

    /// An NCMB error answer: `{"code","error"}` with the HTTP status in digits 2-4 of the code. Without a more
    /// specific fact, it follows the documented error table.
    private func error(_ code: String, _ message: String, fact: String? = nil) -> TransportResponse {
        let status = Int(code.dropFirst().prefix(3)) ?? 400
        let named = fact ?? "[doc] ncmb.md §1.11 error table: \(code) is HTTP \(status) with {\"code\",\"error\"}"
        return TransportResponse(status: .init(code: status), headers: HTTPFields([("Content-Type", "application/json;charset=UTF-8"), (factHeader, named)]),
                            body: JSON.object(["code": .string(code), "error": .string(message)]).data())
    }

    private func errorCode(_ response: TransportResponse) -> String? {
        guard response.status.code >= 400 else { return nil }
        return json(response.body)?["code"]?.stringValue
    }
}
