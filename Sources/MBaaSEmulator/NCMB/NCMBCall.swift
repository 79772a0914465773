import Foundation
import MBaaSCore
import MBaaSNCMBWire

/// One request being answered by the ``NCMBDialect``: its route, its caller, and the store view acting for it.
struct NCMBCall {
    let dialect: NCMBDialect
    let request: TransportRequest
    let route: NCMBRoute
    /// The session token the request carries, if any.
    let token: String?
    /// The store acting as the caller (anonymous without a token).
    let backend: any ServerStore
    /// The store acting as the application owner, for the dialect's own bookkeeping (role membership, unique
    /// names): never used to answer what the caller may see. Made when a call needs it, not on every request.
    var owner: any ServerStore { dialect.store.sharing(session: nil, administrative: true) }

    init(dialect: NCMBDialect, request: TransportRequest, route: NCMBRoute) {
        self.dialect = dialect
        self.request = request
        self.route = route
        let token = request.headers.value(NCMBSigner.Field.sessionToken).flatMap { $0.isEmpty ? nil : $0 }
        self.token = token
        self.backend = dialect.store.sharing(session: token.map { Session(token: $0, userId: "") }, administrative: false)
    }

    var method: String { request.method.rawValue }

    func answer() async throws -> TransportResponse {
        if let token { try await checkSession(token) }
        switch route {
        case .objects(.installation), .object(.installation, _), .objects(.push), .object(.push, _):
            // Push and devices are not emulated: answered as a service this application does not have.
            return NCMBErrorBody(code: "E404002").response()
        default: break
        }
        switch (route, method) {
        case (.objects(let cls), "GET"): return try await query(cls)
        case (.objects(let cls), "POST"):
            return cls == .user ? try await signUp() : try await create(cls)
        case (.object(let cls, let id), "GET"): return try await get(cls, id)
        case (.object(let cls, let id), "PUT"): return try await update(cls, id)
        case (.object(let cls, let id), "DELETE"): return try await delete(cls, id)
        case (.login, "POST"), (.login, "GET"): return try await logIn()
        case (.logout, "GET"): return try await logOut()
        case (.files, "GET"): return try await listFiles()
        case (.file(let name), "POST"): return try await upload(name)
        case (.file(let name), "GET"): return try await download(name)
        case (.file(let name), "PUT"): return try await updateFileACL(name)
        case (.file(let name), "DELETE"): return try await deleteFile(name)
        case (.batch, _), (.requestPasswordReset, _):
            return NCMBErrorBody(code: "E404002").response()
        default:
            return NCMBErrorBody(code: "E405001").response()
        }
    }

    /// A token the store does not know (never issued, expired, logged out) is E401001 on every call.
    func checkSession(_ token: String) async throws {
        do { _ = try await backend.currentUser() } catch let e as MBaaSError where e.kind == .unauthorized {
            throw MBaaSError(.unauthorized, "Authentication error by header incorrect.", vendorCode: "E401001")
        }
    }

    // MARK: Bodies and answers

    /// The JSON object body; a missing, non-JSON or non-object body is 400 E400001.
    func jsonBody() throws -> JSONObject {
        guard let data = request.body, !data.isEmpty else { return [:] }
        guard data.count <= dialect.configuration.maxDocumentSize else {
            throw MBaaSError(.invalidRequest, "Document size limit exceeded.", vendorCode: "E413002")
        }
        guard let json = try? JSON.parse(data), let object = json.objectValue else {
            throw MBaaSError(.invalidRequest, "JSON is invalid format.", vendorCode: "E400001")
        }
        return object
    }

    static func json(_ status: Int, _ body: JSON) -> TransportResponse {
        TransportResponse(status: .init(code: status), headers: [.contentType: "application/json"], body: body.data())
    }

    static func empty() -> TransportResponse { TransportResponse(status: 200, headers: [.contentType: "application/json"]) }

    var queryItems: [(String, String)] { ncmbQueryItems(of: request.url) }

    /// Reads a value of a request body, as NCMB's JSON (E400002 naming the field when it is malformed).
    static func value(_ json: JSON, _ key: String) throws -> Value {
        do { return try NCMBCodec.decode(json, path: key) } catch {
            throw MBaaSError(.invalidRequest, "\(key) is invalid. (\(error.message))", vendorCode: "E400002")
        }
    }

    /// The store a new object or file with this ACL is written through. An ACL that grants nothing (`{}`, only
    /// `false` grants) is one NCMB accepts and keeps for the master key and the console alone [sdk: ncmb_swift's
    /// `NCMBFileServiceTests` upload an `acl` part `{}`, answered 201]: the caller's store refuses it (the embedded
    /// store keeps its own clients from locking records away), so the owner's writes it, and from then on no
    /// application key or session reaches it, as on NCMB. Any other ACL goes through the caller's store.
    func store(creating acl: ACL?) -> any ServerStore {
        guard let acl, !acl.entries.values.contains(where: { $0.read || $0.write }),
              !acl.entries.keys.contains(where: { $0.key.isEmpty || $0.key.hasSuffix(":") })
        else { return backend }
        return owner
    }

    static func acl(_ json: JSON) throws -> ACL {
        do { return try NCMBCodec.decodeACL(json) } catch {
            throw MBaaSError(.invalidRequest, "acl is invalid. (\(error.message))", vendorCode: "E400002")
        }
    }

    static func checkFieldName(_ key: String) throws {
        if key.isEmpty || key.hasPrefix("$") || key.hasPrefix("__") || key == "_id" || key.contains(".") {
            throw MBaaSError(.invalidRequest, "\(key) is invalid format.", vendorCode: "E400004")
        }
    }
}
