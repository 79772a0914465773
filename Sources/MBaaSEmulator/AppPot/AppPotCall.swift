import Foundation
import MBaaSAppPotWire
import MBaaSCore

/// One request being answered by the ``AppPotDialect``: its route, its caller, and the store view acting for it.
struct AppPotCall {
    let dialect: AppPotDialect
    let request: TransportRequest
    let route: AppPotRoute
    let queryItems: [(String, String)]
    /// The store acting as the application owner, for the dialect's own bookkeeping (schemas, the directory):
    /// never used to answer what the caller may see.
    let owner: any ServerStore

    init(dialect: AppPotDialect, request: TransportRequest, route: AppPotRoute) {
        self.dialect = dialect
        self.request = request
        self.route = route
        self.queryItems = AppPotDialect.pathAndQuery(of: request.url).1
        self.owner = dialect.store.sharing(session: nil, administrative: true)
    }

    var method: String { request.method.rawValue }

    func query(_ name: String) -> String? { queryItems.first { $0.0 == name }?.1 }

    /// The token the request carries: the `apppot-token` header, else `?token=` or `?userToken=` [doc A5].
    var token: String? {
        for t in [request.headers["apppot-token"], query("token"), query("userToken")] {
            if let t, !t.isEmpty { return t }
        }
        return nil
    }

    func answer() async throws -> TransportResponse {
        switch (route, method) {
        case (.anonymousTokens, "GET"): return anonymousToken()
        case (.anonymousTokens, "POST"):
            // v4's POST anonymousTokens: this emulator serves v2 (see AppPotDialect).
            return AppPotErrorBody(code: 199, description: "Request not found (this emulator serves AppPot v2)", httpStatus: 404).response()
        case (.login, "POST"): return try await logIn()
        case (.logLevel, "GET"):
            // Any token the app holds (the SDKs flush logs before and after log-in) [inferred].
            guard token != nil else { return AppPotErrorBody(code: 121).response() }
            return Self.json(dialect.configuration.logLevel.response)
        case (.logout, "POST"): return try await logOut()
        default: break
        }
        let caller = try await authenticate()
        switch (route, method) {
        case (.schemas, "POST"): return try await defineSchemas(caller)
        case (.schemas, "GET"): return Self.ok()
        case (.addData, "POST"): return try await addData(caller)
        case (.updateData, "POST"): return try await updateData(caller)
        case (.deleteData, "POST"): return try await deleteData(caller)
        case (.object(let cls, let id), "GET"): return try await getRow(caller, cls, id)
        case (.query(let cls), "POST"): return try await query(caller, cls, count: false)
        case (.count(let cls), "POST"): return try await query(caller, cls, count: true)
        case (.files, "POST"): return try await upload(caller, replacing: nil)
        case (.file(let name), "PUT"): return try await upload(caller, replacing: name)
        case (.file(let name), "GET"): return try await download(caller, name)
        case (.file(let name), "DELETE"): return try await deleteFile(caller, name)
        case (.user(let id), "GET"): return try await user(caller, id)
        case (.users, "GET"): return try await users(caller)
        case (.groups, "GET"): return try await groups(caller)
        case (.users, "POST"): return try await createUser(caller)
        case (.user(let id), "DELETE"): return try await deleteUser(caller, id)
        case (.groups, "POST"): return try await createGroup(caller)
        case (.group(let id), "DELETE"): return try await deleteGroup(caller, id)
        case (.logs, "POST"): return Self.ok()
        case (.devices, "POST"): return Self.ok()
        case (.legacyQuery, _), (.gateway, _), (.messages, _), (.emails, _), (.roles, _), (.group, _), (.user, _):
            return AppPotErrorBody(code: 199, description: "Request not found (not emulated)", httpStatus: 404).response()
        default:
            return AppPotErrorBody(code: 199, description: "Request not found (\(method) is not served here)", httpStatus: 405).response()
        }
    }

    // MARK: Callers

    /// The logged-in user a request acts for.
    struct Caller {
        let session: Session
        let user: User
        /// The store acting as this user.
        let backend: any ServerStore
        var groupIds: [String] { user.groups }
    }

    /// The caller of a request that needs a user token: 121 without one or for a token the store does not know
    /// (never issued, logged out, expired: the store does not tell them apart, so an expired token is 121 too,
    /// not the documented 120 [inferred divergence; the SDKs treat both as "log in again"]).
    func authenticate() async throws -> Caller {
        guard let token else { throw Self.tokenMissing() }
        let backend = dialect.store.sharing(session: Session(token: token, userId: ""), administrative: false)
        let user: User
        do {
            user = try await backend.currentUser()
        } catch let e as MBaaSError where e.kind == .unauthorized {
            throw Self.tokenMissing()
        }
        return Caller(session: Session(token: token, userId: user.id, username: user.username), user: user, backend: backend)
    }

    static func tokenMissing() -> MBaaSError {
        MBaaSError(.unauthorized, "Token does not exist", vendorCode: String(AppPotErrorCode.tokenMissing))
    }

    // MARK: Bodies and answers

    /// The JSON body; a missing or non-JSON body is errCode 109 (198 when the endpoint needs one).
    func jsonBody() throws -> JSON {
        guard let data = request.body, !data.isEmpty else {
            throw MBaaSError(.invalidRequest, "Input parameters are required", vendorCode: "198")
        }
        guard data.count <= dialect.configuration.maxDocumentSize else {
            throw MBaaSError(.invalidRequest, "Input data not valid: the body is larger than \(dialect.configuration.maxDocumentSize) bytes",
                             vendorCode: "109", httpStatus: 413)
        }
        guard let json = try? JSON.parse(data) else {
            throw MBaaSError(.invalidRequest, "Input data not valid: the body is not JSON", vendorCode: "109")
        }
        return json
    }

    static func json(_ body: JSON, status: Int = 200) -> TransportResponse {
        TransportResponse(status: .init(code: status), headers: [.contentType: AppPotWire.jsonContentType], body: body.data())
    }

    static func ok() -> TransportResponse { json(AppPotEnvelope.success()) }

    static func invalid(_ message: String) -> MBaaSError {
        MBaaSError(.invalidRequest, "Input data not valid: \(message)", vendorCode: "109")
    }
}
