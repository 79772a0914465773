import Foundation
import MBaaSCore
import MBaaSKiiWire

/// One request being answered by the ``KiiDialect``: its route, its caller, and the store views acting for it.
struct KiiCall {
    /// Who is calling: the access token's user, the app admin, or nobody.
    enum Caller: Equatable {
        case anonymous
        case user(id: String, token: String)
        case admin

        var userID: String? { if case .user(let id, _) = self { id } else { nil } }
    }

    let dialect: KiiDialect
    let request: TransportRequest
    let route: KiiRoute
    let caller: Caller
    /// The store acting as the caller (the database owner for the admin).
    let view: any ServerStore
    /// The store acting as the database owner, for bookkeeping and for what Kii lets every caller read.
    let owner: any ServerStore

    /// Every registered user holds this store role, so that `UserID:ANY_AUTHENTICATED_USER` is an ACL principal.
    static let authenticatedRole = "ANY_AUTHENTICATED_USER"
    /// The store role no user holds: bookkeeping records are the database owner's alone.
    static let bookkeepingACL = ACL([.role("KII_EMULATOR_BOOKKEEPING"): .readWrite])

    init(dialect: KiiDialect, request: TransportRequest, route: KiiRoute) async throws {
        self.dialect = dialect
        self.request = request
        self.route = route
        let owner = dialect.store.sharing(session: nil, administrative: true)
        self.owner = owner
        var token: String?
        if let auth = request.headers["Authorization"], auth.lowercased().hasPrefix("bearer ") {
            token = String(auth.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        }
        guard let token, !token.isEmpty else {
            caller = .anonymous
            view = dialect.store.sharing(session: nil, administrative: false)
            return
        }
        if dialect.adminTokens.contains(token) {
            caller = .admin
            view = owner
            return
        }
        let session = dialect.store.sharing(session: Session(token: token, userId: ""), administrative: false)
        do {
            let user = try await session.currentUser()
            caller = .user(id: user.id, token: token)
            view = dialect.store.sharing(session: Session(token: token, userId: user.id), administrative: false)
        } catch let e as MBaaSError where e.kind == .unauthorized || e.kind == .notFound {
            // [doc] kii.md §7.2: WRONG_TOKEN is 403.
            throw KiiFailure("WRONG_TOKEN", "The provided token is not valid")
        }
    }

    var method: String {
        if request.method == .post, let o = request.headers["X-HTTP-Method-Override"], !o.isEmpty { return o.uppercased() }
        return request.method.rawValue
    }

    func answer() async throws -> TransportResponse {
        switch (route, method) {
        case (.token, "POST"): return try await token()
        case (.users, "POST"): return try await register()
        case (.user(let selector), "GET"): return try await getUser(selector)
        case (.groups, "POST"): return try await createGroup()
        case (.bucket(let b), "GET"): return try await bucketInfo(b)
        case (.bucket(let b), "DELETE"): return try await dropBucket(b)
        case (.objects(let b), "POST"): return try await create(b)
        case (.object(let b, let id), "GET"): return try await get(b, id)
        case (.object(let b, let id), "PUT"): return try await replace(b, id)
        case (.object(let b, let id), "PATCH"): return try await patch(b, id)
        case (.object(let b, let id), "DELETE"): return try await delete(b, id)
        case (.query(let b), "POST"): return try await query(b)
        case (.body(let b, let id), "PUT"): return try await putBody(b, id)
        case (.body(let b, let id), "GET"): return try await getBody(b, id, head: false)
        case (.body(let b, let id), "HEAD"): return try await getBody(b, id, head: true)
        case (.body(let b, let id), "DELETE"): return try await deleteBody(b, id)
        case (.acl(let resource, let verb, let subject), "GET") where subject == nil:
            return try await listACL(resource, verb: verb)
        case (.acl(let resource, let verb?, let subject?), "PUT"): return try await changeACL(resource, verb, subject, grant: true)
        case (.acl(let resource, let verb?, let subject?), "DELETE"): return try await changeACL(resource, verb, subject, grant: false)
        default:
            // [inferred] Kii's answer to a method a resource does not take is not documented.
            throw KiiFailure("OPERATION_NOT_SUPPORTED", "\(method) is not supported on this resource", status: 405)
        }
    }

    // MARK: Bodies and answers

    /// The JSON object body; a missing body is `{}`, a non-JSON or non-object body 400 `INVALID_JSON` [doc code].
    func jsonBody() throws -> JSONObject {
        guard let data = request.body, !data.isEmpty else { return [:] }
        guard let json = try? JSON.parse(data), let object = json.objectValue else {
            throw KiiFailure("INVALID_JSON", "The request body is not a JSON object")
        }
        return object
    }

    static func json(_ status: Int, _ body: JSON, contentType: String = "application/json", headers: [(String, String)] = [])
        -> TransportResponse
    {
        var h = HTTPFields([("Content-Type", contentType)])
        for (n, v) in headers { h.add(n, v) }
        return TransportResponse(status: .init(code: status), headers: h, body: body.data())
    }

    static func noContent(headers: [(String, String)] = []) -> TransportResponse {
        TransportResponse(status: 204, headers: HTTPFields(headers))
    }

    /// The public URL of a path below the REST base, on the host the client addressed.
    func absoluteURL(_ path: String) -> String {
        var c = URLComponents()
        c.scheme = request.url.scheme ?? "http"
        c.host = request.url.host
        c.port = request.url.port
        return (c.string ?? "") + dialect.configuration.basePath + path
    }

    var appID: String { dialect.configuration.appID }

    // MARK: Callers and scopes

    /// A logged-in user, or 401 `UNAUTHORIZED`.
    func requireUser() throws -> String {
        guard let id = caller.userID else { throw unauthorized("this call needs a user access token") }
        return id
    }

    /// The UnauthorizedAccessException Kii answers an ACL refusal with ([doc] kii.md §7.1).
    func unauthorized(_ message: String) -> KiiFailure {
        var extras: JSONObject = ["authenticatedAppID": .string(appID)]
        if let id = caller.userID { extras["authenticatedPrincipalID"] = .string(id) }
        return KiiFailure("UNAUTHORIZED", message, extras: extras)
    }
}

/// How a Kii bucket is kept in the store: one class per scope and bucket.
///
/// Store class names are `[A-Za-z_][A-Za-z0-9_]*` of at most 64 characters, so the scope and bucket are encoded:
/// `a_{bucket}` (app), `u_{userID}_b_{bucket}` (user), `g_{groupID}_b_{bucket}` (group), where letters and digits
/// stay and `_` `-` `:` and other characters become `_u`, `_d`, `_c`, `_xHH`; a name over 64 characters becomes
/// `h_` and a 128-bit hash of it.
struct KiiStoreBucket: Hashable {
    /// The scope with its owner resolved (`me` and `LOGIN_NAME:` become the user ID).
    var scope: KiiScope
    var bucket: String

    var storeClass: String {
        let name: String
        switch scope {
        case .app: name = "a_" + Self.encode(bucket)
        case .user(let id): name = "u_" + Self.encode(id) + "_b_" + Self.encode(bucket)
        case .group(let id): name = "g_" + Self.encode(id) + "_b_" + Self.encode(bucket)
        case .thing(let id): name = "t_" + Self.encode(id) + "_b_" + Self.encode(bucket)
        }
        if name.utf8.count <= 64 { return name }
        return "h_" + Self.hash(name, seed: 0xcbf2_9ce4_8422_2325) + Self.hash(name, seed: 0x8422_2325_cbf2_9ce4)
    }

    static func encode(_ s: String) -> String {
        var out = ""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9": out.unicodeScalars.append(scalar)
            case "_": out += "_u"
            case "-": out += "_d"
            case ":": out += "_c"
            default:
                for byte in String(scalar).utf8 { out += "_x" + String(format: "%02x", byte) }
            }
        }
        return out
    }

    /// FNV-1a, 64 bits, in hex.
    static func hash(_ s: String, seed: UInt64) -> String {
        var h = seed
        for byte in s.utf8 {
            h ^= UInt64(byte)
            h = h &* 0x100_0000_01b3
        }
        return String(format: "%016llx", h)
    }

    /// The `objectScope` member of Kii's not-found errors ([doc] kii.md §7.1).
    func objectScope(appID: String) -> JSON {
        switch scope {
        case .app: .object(["appID": .string(appID), "type": "APP"])
        case .user(let id): .object(["appID": .string(appID), "type": "APP_AND_USER", "userID": .string(id)])
        case .group(let id): .object(["appID": .string(appID), "type": "APP_AND_GROUP", "groupID": .string(id)])
        case .thing(let id): .object(["appID": .string(appID), "type": "APP_AND_THING", "thingID": .string(id)])
        }
    }
}
