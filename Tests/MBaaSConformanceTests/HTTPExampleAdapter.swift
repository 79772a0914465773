import Foundation
import MBaaSCore
import MBaaSExampleAdapter

// An adapter that talks HTTP, to test record -> scrub -> replay end to end without a network: the client sends
// JSON requests through `context.transport`; `ExampleHTTPServer` is a transport that answers them from an
// in-memory `MemoryServer` (via `MemoryBackend`), as a real server would.

struct HTTPExampleFactory: BackendFactory {
    let schemes = ["example"]
    let adapterName = "example"
    func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend {
        guard let key = url.user, let secret = url.secret else {
            throw MBaaSError(.invalidRequest, "example URLs need key:secret@host")
        }
        return HTTPExampleBackend(base: url.httpBase, key: key, secret: secret, context: context)
    }
}

actor HTTPExampleBackend: Backend {
    nonisolated let adapterName = "example"
    nonisolated let capabilities = Capabilities(
        features: [.objects, .auth, .signUp], operators: [.eq, .ne, .lt, .lte, .gt, .gte],
        notes: [.count: "the HTTP example has no count endpoint"])
    let base: String, key: String, secret: String, context: BackendContext
    var current: Session?

    init(base: String, key: String, secret: String, context: BackendContext) {
        (self.base, self.key, self.secret, self.context) = (base, key, secret, context)
    }

    private func call(_ method: TransportRequest.Method, _ path: String, query: [(String, String)] = [], body: JSON? = nil) async throws -> JSON {
        var headers: HTTPFields = HTTPFields([("X-Example-Key", key), ("X-API-Key", secret), ("Accept", "application/json")])
        if body != nil { headers["Content-Type"] = "application/json" }
        if let token = current?.token { headers["Authorization"] = "Bearer \(token)" }
        let request = TransportRequest(method: method, url: try URL.build(base: base, path: path, query: query),
                                  headers: headers, body: body?.data())
        let response = try await context.transport.send(request)
        let json = response.body.isEmpty ? JSON.null : try response.json()
        guard response.isSuccess else {
            let kind = json["error"]?.stringValue.flatMap { s in MBaaSError.Kind.allCases.first { $0.rawValue == s } } ?? MBaaSError.kind(forHTTPStatus: response.status.code)
            throw MBaaSError(kind, json["message"]?.stringValue ?? "HTTP \(response.status.code)", httpStatus: response.status.code)
        }
        return json
    }

    private func classPath(_ c: String, _ id: String? = nil) -> String {
        "/classes/" + percentEncode(c) + (id.map { "/" + percentEncode($0) } ?? "")
    }

    func create(_ record: Record) async throws -> Record {
        try Record(json: try await call(.post, classPath(record.className), body: .object(["fields": Record(className: "x", fields: record.fields).json["fields"]!])))
    }
    func get(className: String, id: String) async throws -> Record {
        try Record(json: try await call(.get, classPath(className, id)))
    }
    func update(className: String, id: String, _ update: RecordUpdate) async throws -> Record {
        var set = JSONObject()
        for (k, op) in update.changes {
            guard case .set(let v) = op else { throw MBaaSError.unsupported("field operations", by: adapterName) }
            set[k] = v.json
        }
        return try Record(json: try await call(.put, classPath(className, id), body: .object(["set": .object(set)])))
    }
    func delete(className: String, id: String, expectedVersion: String?) async throws {
        _ = try await call(.delete, classPath(className, id))
    }
    func queryPage(_ query: Query) async throws -> RecordPage {
        try query.validate(against: capabilities, backend: adapterName)
        var q: [(String, String)] = []
        if let p = query.predicate { q.append(("where", p.json.printed())) }
        if !query.sort.isEmpty { q.append(("order", query.sort.map(\.description).joined(separator: ","))) }
        if let l = query.limit { q.append(("limit", String(l))) }
        if let c = query.cursor { q.append(("cursor", c)) }
        let json = try await call(.get, classPath(query.className), query: q)
        var records: [Record] = []
        for r in json["records"]?.arrayValue ?? [] { records.append(try Record(json: r)) }
        return RecordPage(records: records, nextCursor: json["nextCursor"]?.stringValue)
    }
    func count(_ query: Query) async throws -> Int { throw MBaaSError.unsupported("count", by: adapterName) }
    func batch(_ operations: [BatchOperation]) async throws -> [BatchResult] { throw MBaaSError.unsupported("batch", by: adapterName) }
    func upload(_ upload: FileUpload) async throws -> FileReference { throw MBaaSError.unsupported("files", by: adapterName) }
    func download(_ file: FileReference) async throws -> Data { throw MBaaSError.unsupported("files", by: adapterName) }
    func deleteFile(_ file: FileReference) async throws { throw MBaaSError.unsupported("files", by: adapterName) }
    func listFiles(prefix: String?, limit: Int?) async throws -> [FileInfo] { throw MBaaSError.unsupported("files", by: adapterName) }

    var session: Session? { current }
    private func session(from json: JSON) throws -> Session {
        guard let token = json["sessionToken"]?.stringValue, let id = json["userId"]?.stringValue else {
            throw MBaaSError(.decoding, "no session in \(json)")
        }
        current = Session(token: token, userId: id, username: json["username"]?.stringValue)
        return current!
    }
    func signUp(username: String, password: String, email: String?, fields: [String: Value]) async throws -> Session {
        try session(from: try await call(.post, "/users", body: .object(["username": .string(username), "password": .string(password)])))
    }
    func logIn(username: String, password: String) async throws -> Session {
        let saved = current
        current = nil
        do {
            return try session(from: try await call(.post, "/login", body: .object(["username": .string(username), "password": .string(password)])))
        } catch {
            current = saved
            throw error
        }
    }
    func logOut(confirmWithServer: Bool) async throws {
        current = nil
        if confirmWithServer { throw MBaaSError.unsupported("server logout", by: adapterName) }
    }
    func currentUser() async throws -> User {
        guard current != nil else { throw MBaaSError(.unauthorized, "not logged in") }
        let json = try await call(.get, "/me")
        return User(id: json["id"]?.stringValue ?? "", username: json["username"]?.stringValue)
    }
    func restore(_ session: Session?) async { current = session }
}

/// The "server": a transport answering the example's routes from a ``MemoryServer``.
struct ExampleHTTPServer: HTTPTransport {
    let backends = MemoryBackendFactory()
    let secret: String

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        do {
            return try await route(request)
        } catch {
            let e = MBaaSError.wrap(error)
            let status = [MBaaSError.Kind.notFound: 404, .unauthorized: 401, .duplicate: 409, .invalidRequest: 400][e.kind] ?? 500
            return Self.reply(status, .object(["error": .string(e.kind.rawValue), "message": .string(e.message)]))
        }
    }

    static func reply(_ status: Int, _ json: JSON?) -> TransportResponse {
        TransportResponse(status: .init(code: status), headers: json == nil ? [:] : [.contentType: "application/json"], body: json?.data() ?? Data())
    }

    private func route(_ request: TransportRequest) async throws -> TransportResponse {
        guard request.headers["X-API-Key"] == secret else { return Self.reply(401, .object(["error": "unauthorized", "message": "bad key"])) }
        let backend = try await backends.open(BackendURL(scheme: "memory", host: "http"), context: BackendContext())
        if let auth = request.headers["Authorization"], auth.hasPrefix("Bearer ") {
            await backend.restore(Session(token: String(auth.dropFirst(7)), userId: ""))
        }
        let parts = request.url.path.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
        let body = try request.body.map { try JSON.parse($0) } ?? .null
        let items = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        func param(_ name: String) -> String? { items.first { $0.name == name }?.value }
        func sessionJSON(_ s: Session) -> JSON {
            .object(["sessionToken": .string(s.token), "userId": .string(s.userId), "username": .string(s.username ?? "")])
        }
        switch (request.method.rawValue, parts.count, parts.first) {
        case ("POST", 2, "classes"):
            var fields: [String: Value] = [:]
            for (k, v) in body["fields"]?.objectValue ?? [:] { fields[k] = try Value(json: v) }
            return Self.reply(201, try await backend.create(Record(className: parts[1], fields: fields)).json)
        case ("GET", 3, "classes"): return Self.reply(200, try await backend.get(className: parts[1], id: parts[2]).json)
        case ("PUT", 3, "classes"):
            var set: [String: Value] = [:]
            for (k, v) in body["set"]?.objectValue ?? [:] { set[k] = try Value(json: v) }
            return Self.reply(200, try await backend.update(className: parts[1], id: parts[2], .set(set)).json)
        case ("DELETE", 3, "classes"):
            try await backend.delete(className: parts[1], id: parts[2])
            return Self.reply(204, nil)
        case ("GET", 2, "classes"):
            var query = Query(parts[1], sort: SortKey.list(param("order") ?? ""), limit: param("limit").flatMap(Int.init),
                              cursor: param("cursor"))
            if let w = param("where") { query.predicate = try QueryPredicate(json: JSON.parse(w)) }
            let page = try await backend.queryPage(query)
            return Self.reply(200, .object(["records": .array(page.records.map(\.json)), "nextCursor": page.nextCursor.map(JSON.string) ?? .null]))
        case ("POST", 1, "users"):
            let s = try await backend.signUp(username: body["username"]?.stringValue ?? "", password: body["password"]?.stringValue ?? "")
            return Self.reply(201, sessionJSON(s))
        case ("POST", 1, "login"):
            return Self.reply(200, sessionJSON(try await backend.logIn(username: body["username"]?.stringValue ?? "",
                                                                      password: body["password"]?.stringValue ?? "")))
        case ("GET", 1, "me"):
            let u = try await backend.currentUser()
            return Self.reply(200, .object(["id": .string(u.id), "username": .string(u.username ?? "")]))
        default:
            return Self.reply(404, .object(["error": "notFound", "message": .string("no route \(request.method) \(request.url.path)")]))
        }
    }
}
