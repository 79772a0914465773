import Foundation
import MBaaSCore

/// A documented-behaviour simulator of the Kii Cloud REST API, as an ``HTTPTransport`` over an in-memory store.
///
/// It exists to author cassettes from documented facts (`/work/shared/reference/kii.md`, cited as `§n`, and the
/// Kii guides it names) and to test the adapter against them. It is written independently of the adapter's codec:
/// it uses no `Kii*` type from `MBaaSKii`, parses requests and prints responses itself, so the two cross-check
/// each other.
///
/// Modelled: §1 paths and headers; §2 token endpoint (password, refresh_token, client_credentials grants),
/// registration, `users/me`; §3 objects in app, user and group scopes with `_id/_created/_modified/_owner/
/// _version/_dataType`, POST create, PUT with `If-None-Match: *`/`If-Match`, PATCH override, DELETE, ETags;
/// §4 QueryRequest with every clause of §4.2 (three-valued: a leaf clause on a missing field is unknown, so
/// `not(eq)` skips objects without the field, as the SDK guides document for `notEquals`), one `orderBy`,
/// `bestEffortLimit`, `paginationKey`, `COUNT` aggregation; §5.1 bodies; §6 ACL lists, grants and revokes with the
/// documented default scope, bucket and object ACLs (docs.kii.com "Bucket Access Control", "KiiObject Access
/// Control": in app scope any authenticated user creates, anonymous and authenticated callers query and read;
/// `UserID:ANONYMOUS_USER` covers every caller); §7 error bodies and Content-Types.
/// Not modelled: resumable uploads, publication, things, topics, encrypted buckets.
actor KiiSimulator: HTTPTransport {
    struct Options: Sendable {
        var appID = "simapp"
        var adminClientID: String? = "simclient"
        var adminClientSecret = "simsecret"
        /// Seconds a token lives (`expires_in`); Kii's default is 2147483646 s.
        var tokenLifetime: Int64 = 2_147_483_646
        /// Whether the token policy issues refresh tokens (§2.1).
        var issueRefreshTokens = false
        /// The largest page (the real maximum is undocumented, §4.1).
        var maxPageSize = 200
        var start = Date(timeIntervalSince1970: 1_717_200_000)
    }

    enum Principal: Equatable { case anonymous, user(String), admin }

    struct User {
        var id: String
        var loginName: String?
        var password: String
        var email: String?
        var phone: String?
        var displayName: String?
        var custom: JSONObject
    }

    struct Token {
        var principal: Principal
        var expiresAt: Date
    }

    struct Body {
        var data: Data
        var contentType: String
        var etag: Int
    }

    struct Object {
        var id: String
        var fields: JSONObject
        var created: Int64
        var modified: Int64
        var version: Int
        var owner: String?
        var dataType: String?
        var acl: [String: Set<String>]
        var body: Body?
    }

    struct Bucket {
        var acl: [String: Set<String>]
        var objects: [String: Object] = [:]
        var order: [String] = []
    }

    struct Group {
        var id: String
        var name: String
        var owner: String
        var members: Set<String>
    }

    /// A scope: `app`, `users/{id}`, `groups/{id}`.
    enum Scope: Hashable {
        case app, user(String), group(String)
    }

    struct BucketKey: Hashable {
        var scope: Scope
        var name: String
    }

    let options: Options
    var users: [String: User] = [:]
    var tokens: [String: Token] = [:]
    var refreshTokens: [String: String] = [:]  // refresh token → user id
    var groups: [String: Group] = [:]
    var buckets: [BucketKey: Bucket] = [:]
    var paginationKeys: [String: (query: JSON, offset: Int)] = [:]
    var tick: Int64 = 0
    var serial = 0
    /// Every request received, for tests.
    private(set) var log: [TransportRequest] = []

    init(options: Options = Options()) {
        self.options = options
    }

    // MARK: Time and ids

    var nowMillis: Int64 { Int64(options.start.timeIntervalSince1970 * 1000) + tick }
    var now: Date { Date(timeIntervalSince1970: Double(nowMillis) / 1000) }

    func advance() { tick += 1 }

    func newID(_ kind: String) -> String {
        serial += 1
        let h = String(format: "%08x", (serial &* 2_654_435_761) & 0xffff_ffff)
        return "\(h)-\(String(format: "%04x", serial % 65536))-\(kind)-\(String(format: "%012d", serial))"
    }

    /// Moves the simulated clock (e.g. to expire tokens).
    func advance(seconds: Int64) { tick += seconds * 1000 }

    // MARK: Responses

    struct Failure: Error {
        var status: Int
        var code: String
        var message: String
        var extras: JSONObject = [:]
        /// The fact this error follows, when more specific than the error table.
        var fact: String? = nil
    }

    /// The response header naming the fact an answer follows (`Interaction.factHeader` of MBaaSReplay).
    static let factHeader = "X-MBaaS-Fact"

    static func exceptionType(_ code: String) -> String {
        if code == code.lowercased() { return "application/json" }
        // [doc] kii.md §7.1: the REST reference names UNAUTHORIZED's type UnauthorizedAccessException.
        if code == "UNAUTHORIZED" { return "application/vnd.kii.UnauthorizedAccessException+json" }
        let name = code.split(separator: "_").map { $0 == "ACL" ? "ACL" : $0.prefix(1).uppercased() + $0.dropFirst().lowercased() }.joined()
        return "application/vnd.kii.\(name)Exception+json"
    }

    func respond(_ f: Failure) -> TransportResponse {
        var o: JSONObject = ["errorCode": .string(f.code)]
        o[f.code == f.code.lowercased() ? "error_description" : "message"] = .string(f.message)
        for (k, v) in f.extras { o[k] = v }
        let fact = f.fact ?? (f.code == f.code.lowercased()
            ? "[sdk] ebisu live thing_test.cpp, KiiCloudSDK-JS KiiSDK.js: a token error is HTTP \(f.status) {errorCode: \(f.code), error_description}"
            : "[doc] kii.md §7.1-7.2 error {errorCode, message} as application/vnd.kii.<Exception>+json: \(f.code) is HTTP \(f.status)")
        return TransportResponse(status: .init(code: f.status), headers: HTTPFields([("Content-Type", KiiSimulator.exceptionType(f.code)), (Self.factHeader, fact)]),
                            body: JSON.object(o).data())
    }

    func json(_ status: Int, _ body: JSON, type: String = "application/json", fact: String,
              headers: [(String, String)] = []) -> TransportResponse {
        var h = HTTPFields([("Content-Type", type), (Self.factHeader, fact)])
        for (n, v) in headers { h.add(n, v) }
        return TransportResponse(status: .init(code: status), headers: h, body: body.data())
    }

    func empty(_ status: Int = 204, fact: String) -> TransportResponse {
        TransportResponse(status: .init(code: status), headers: HTTPFields([(Self.factHeader, fact)]))
    }

    // MARK: Transport

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        log.append(request)
        do {
            return try route(request)
        } catch let f as Failure {
            return respond(f)
        }
    }

    func route(_ request: TransportRequest) throws -> TransportResponse {
        guard let components = URLComponents(url: request.url, resolvingAgainstBaseURL: false) else {
            throw Failure(status: 400, code: "INVALID_INPUT_DATA", message: "bad URL")
        }
        let segments = components.percentEncodedPath.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
        guard segments.first == "api" else { throw Failure(status: 404, code: "NOT_FOUND", message: "no such resource") }
        let path = Array(segments.dropFirst())
        let method = request.method.rawValue
        if path == ["oauth2", "token"], method == "POST" { return try token(request) }
        guard path.count >= 2, path[0] == "apps" else { throw Failure(status: 404, code: "NOT_FOUND", message: "no such resource") }
        guard path[1] == options.appID, request.headers["X-Kii-AppID"] == options.appID else {
            throw Failure(status: 404, code: "APP_NOT_FOUND", message: "The application was not found", extras: ["appID": .string(path[1])])
        }
        let principal = try authenticate(request)
        var rest = Array(path.dropFirst(2))
        if rest == ["users"], method == "POST" { return try register(request) }
        if rest == ["users", "me"], method == "GET" { return try me(principal) }
        if rest == ["groups"], method == "POST" { return try createGroup(request, principal) }
        if rest == ["oauth2", "token"], method == "POST" { return try token(request) }
        // Scope prefix.
        var scope = Scope.app
        if rest.count >= 2, rest[0] == "users" || rest[0] == "groups" || rest[0] == "things" {
            switch rest[0] {
            case "users": scope = .user(try resolveUser(rest[1], principal))
            case "groups":
                guard groups[rest[1]] != nil else {
                    throw Failure(status: 404, code: "GROUP_NOT_FOUND", message: "Group \(rest[1]) not found")
                }
                scope = .group(rest[1])
            default: throw Failure(status: 404, code: "THING_NOT_FOUND", message: "things are not simulated")
            }
            rest.removeFirst(2)
        }
        guard rest.count >= 2, rest[0] == "buckets" else { throw Failure(status: 404, code: "NOT_FOUND", message: "no such resource") }
        let key = BucketKey(scope: scope, name: rest[1])
        try validateBucketName(rest[1])
        let tail = Array(rest.dropFirst(2))
        switch (method, tail.count) {
        case ("GET", 0): return try bucketInfo(key, principal)
        case ("DELETE", 0): return try dropBucket(key, principal)
        case ("POST", 1) where tail[0] == "objects": return try createObject(request, key, principal)
        case ("POST", 1) where tail[0] == "query": return try query(request, key, principal)
        case (_, _) where tail.first == "acl": return try bucketACL(method, Array(tail.dropFirst()), key, principal)
        case (_, _) where tail.count >= 2 && tail[0] == "objects":
            let id = tail[1]
            let more = Array(tail.dropFirst(2))
            switch (method, more.first) {
            case ("GET", nil): return try getObject(key, id, principal)
            case ("PUT", nil): return try putObject(request, key, id, principal)
            case ("POST", nil):
                guard request.headers["X-HTTP-Method-Override"]?.uppercased() == "PATCH" else {
                    throw Failure(status: 400, code: "INVALID_INPUT_DATA", message: "POST on an object needs X-HTTP-Method-Override: PATCH")
                }
                return try patchObject(request, key, id, principal)
            case ("DELETE", nil): return try deleteObject(request, key, id, principal)
            case (_, "body") where more.count == 1: return try body(request, key, id, principal)
            case (_, "acl"): return try objectACL(method, Array(more.dropFirst()), key, id, principal)
            default: break
            }
        default: break
        }
        throw Failure(status: 404, code: "NOT_FOUND", message: "no such resource")
    }

    // MARK: Authentication (§1.2, §2)

    func authenticate(_ request: TransportRequest) throws -> Principal {
        guard let auth = request.headers["Authorization"] else { return .anonymous }
        guard auth.hasPrefix("Bearer ") else { return .anonymous }  // Basic appID:any = anonymous (§1.2)
        let t = String(auth.dropFirst(7))
        guard let token = tokens[t] else {
            throw Failure(status: 403, code: "WRONG_TOKEN", message: "The provided token is not valid")
        }
        guard token.expiresAt > now else {
            throw Failure(status: 403, code: "WRONG_TOKEN", message: "The provided token has expired")
        }
        return token.principal
    }

    func resolveUser(_ selector: String, _ principal: Principal) throws -> String {
        if selector == "me" {
            guard case .user(let id) = principal else {
                throw Failure(status: 401, code: "UNAUTHORIZED", message: "'me' needs a user token",
                              extras: ["authenticatedAppID": .string(options.appID)])
            }
            return id
        }
        let found: User?
        if selector.hasPrefix("LOGIN_NAME:") { found = users.values.first { $0.loginName == String(selector.dropFirst(11)) } }
        else if selector.hasPrefix("EMAIL:") { found = users.values.first { $0.email == String(selector.dropFirst(6)) } }
        else if selector.hasPrefix("PHONE:") { found = users.values.first { $0.phone == String(selector.dropFirst(6)) } }
        else { found = users[selector] }
        guard let user = found else {
            throw Failure(status: 404, code: "USER_NOT_FOUND", message: "User \(selector) not found",
                          extras: ["field": "userID", "value": .string(selector), "appID": .string(options.appID)])
        }
        return user.id
    }

    func parseJSON(_ request: TransportRequest) throws -> JSON {
        guard let body = request.body, let j = try? JSON.parse(body) else {
            throw Failure(status: 400, code: "INVALID_JSON", message: "The request body is not valid JSON")
        }
        return j
    }

    func issueToken(for principal: Principal, expiresAt: Int64?) -> JSON {
        let token = "tk" + newID("t").replacingOccurrences(of: "-", with: "")
        var lifetime = options.tokenLifetime
        if let expiresAt { lifetime = max(0, (expiresAt - nowMillis) / 1000) }
        tokens[token] = Token(principal: principal, expiresAt: now.addingTimeInterval(TimeInterval(lifetime)))
        var o: JSONObject = ["access_token": .string(token), "expires_in": .int(lifetime), "token_type": "Bearer"]
        switch principal {
        case .user(let id):
            o["id"] = .string(id)
            if options.issueRefreshTokens {
                let refresh = "rf" + newID("r").replacingOccurrences(of: "-", with: "")
                refreshTokens[refresh] = id
                o["refresh_token"] = .string(refresh)
            }
        case .admin: o["id"] = .string(options.adminClientID ?? "admin")
        case .anonymous: break
        }
        return .object(o)
    }

    func token(_ request: TransportRequest) throws -> TransportResponse {
        let body = try parseJSON(request)
        // [sdk] KiiCloudSDK-JS and python3-kii ask for the admin token with {client_id, client_secret} and no grant_type.
        let grant = body["grant_type"]?.stringValue ?? (body["client_id"] != nil ? "client_credentials" : "password")
        switch grant {
        case "password":
            guard let name = body["username"]?.stringValue, let password = body["password"]?.stringValue else {
                throw Failure(status: 400, code: "invalid_request", message: "username and password are required")
            }
            let user: User?
            if name.hasPrefix("EMAIL:") { user = users.values.first { $0.email == String(name.dropFirst(6)) } }
            else if name.hasPrefix("PHONE:") { user = users.values.first { $0.phone == String(name.dropFirst(6)) } }
            else if name.hasPrefix("+") { user = users.values.first { $0.phone == name } }
            else if name.contains("@") { user = users.values.first { $0.email == name } }
            else { user = users.values.first { $0.loginName == name } }
            guard let user, user.password == password else {
                throw Failure(status: 400, code: "invalid_grant", message: "The user was not found or the password is wrong")
            }
            return json(200, issueToken(for: .user(user.id), expiresAt: body["expiresAt"]?.intValue),
                        type: "application/json;charset=UTF-8",
                        fact: "[capture] KiiPlatform/ebisu tests/small_test/khc/data/resp-login.txt (kii.md §1.3), a recorded login answer: 200 {id, access_token, expires_in, token_type}; the request it answers, POST /api/oauth2/token {username, password}, is [sdk] (kii.md §2.1)")
        case "refresh_token":
            guard let refresh = body["refresh_token"]?.stringValue, let userID = refreshTokens.removeValue(forKey: refresh) else {
                throw Failure(status: 403, code: "WRONG_REFRESH_TOKEN", message: "The refresh token is not valid")
            }
            // The old pair is invalidated (§2.1).
            for (t, tok) in tokens where tok.principal == .user(userID) { tokens[t] = nil }
            return json(200, issueToken(for: .user(userID), expiresAt: nil), type: "application/json;charset=UTF-8",
                        fact: "[doc] kii.md §2.1 refresh_token grant answers a new token pair")
        case "client_credentials":
            guard let id = options.adminClientID, body["client_id"]?.stringValue == id,
                  body["client_secret"]?.stringValue == options.adminClientSecret
            else {
                throw Failure(status: 400, code: "invalid_grant", message: "The client credentials are wrong")
            }
            return json(200, issueToken(for: .admin, expiresAt: nil), type: "application/json;charset=UTF-8",
                        fact: "[sdk] KiiCloudSDK-JS KiiSDK.js, python3-kii kii/users.py: POST /api/oauth2/token {client_id, client_secret} (no grant_type) answers the app admin token")
        default:
            throw Failure(status: 400, code: "unsupported_grant_type", message: "grant_type \(grant) is not supported")
        }
    }

    func register(_ request: TransportRequest) throws -> TransportResponse {
        guard let o = try parseJSON(request).objectValue else {
            throw Failure(status: 400, code: "INVALID_INPUT_DATA", message: "registration must be an object")
        }
        let loginName = o["loginName"]?.stringValue, email = o["emailAddress"]?.stringValue, phone = o["phoneNumber"]?.stringValue
        guard loginName != nil || email != nil || phone != nil else {
            throw Failure(status: 400, code: "INVALID_INPUT_DATA", message: "loginName, emailAddress or phoneNumber is required")
        }
        if let loginName {
            let ok = (3...64).contains(loginName.count) && loginName.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }
            guard ok else { throw Failure(status: 400, code: "INVALID_INPUT_DATA", message: "loginName is not valid") }
        }
        guard let password = o["password"]?.stringValue else {
            throw Failure(status: 400, code: "INVALID_INPUT_DATA", message: "password is required")
        }
        guard password.count >= 4 else { throw Failure(status: 400, code: "PASSWORD_TOO_SHORT", message: "The password is too short") }
        if users.values.contains(where: { ($0.loginName != nil && $0.loginName == loginName) || ($0.email != nil && $0.email == email) }) {
            throw Failure(status: 409, code: "USER_ALREADY_EXISTS", message: "The user already exists",
                          extras: ["field": "loginName", "value": .string(loginName ?? email ?? "")])
        }
        var custom = JSONObject()
        for (k, v) in o where !k.hasPrefix("_") && !["loginName", "password", "emailAddress", "phoneNumber", "displayName"].contains(k) {
            custom[k] = v  // custom attributes; `_` keys are dropped (§2.2)
        }
        advance()
        let id = newID("u")
        users[id] = User(id: id, loginName: loginName, password: password, email: email, phone: phone,
                         displayName: o["displayName"]?.stringValue, custom: custom)
        return json(201, userJSON(users[id]!), type: "application/vnd.kii.RegistrationResponse+json",
                    fact: "[doc] kii.md §2.2 POST /apps/{appID}/users answers 201 the user (RegistrationResponse)",
                    headers: [("Location", "/api/apps/\(options.appID)/users/\(id)")])
    }

    func userJSON(_ u: User) -> JSON {
        var o: JSONObject = ["userID": .string(u.id)]
        if let n = u.loginName { o["loginName"] = .string(n) }
        if let d = u.displayName { o["displayName"] = .string(d) }
        if let e = u.email { o["emailAddress"] = .string(e); o["emailAddressVerified"] = false }
        if let p = u.phone { o["phoneNumber"] = .string(p); o["phoneNumberVerified"] = false }
        for (k, v) in u.custom { o[k] = v }
        return .object(o)
    }

    func me(_ principal: Principal) throws -> TransportResponse {
        guard case .user(let id) = principal, let user = users[id] else {
            throw Failure(status: 401, code: "UNAUTHORIZED", message: "users/me needs a user token",
                          extras: ["authenticatedAppID": .string(options.appID)])
        }
        return json(200, userJSON(user), type: "application/vnd.kii.UserDataRetrievalResponse+json",
                    fact: "[doc] kii.md §2.2 GET users/me answers 200 the user (UserDataRetrievalResponse)")
    }

    func createGroup(_ request: TransportRequest, _ principal: Principal) throws -> TransportResponse {
        guard case .user(let caller) = principal else {
            throw Failure(status: 401, code: "UNAUTHORIZED", message: "creating a group needs a user token")
        }
        let body = try parseJSON(request)
        guard let name = body["name"]?.stringValue else { throw Failure(status: 400, code: "INVALID_INPUT_DATA", message: "name is required") }
        let owner = body["owner"]?.stringValue ?? caller
        var members = Set((body["members"]?.arrayValue ?? []).compactMap(\.stringValue))
        members.insert(owner)
        let id = newID("g").lowercased().replacingOccurrences(of: "-", with: "").prefix(24)
        groups[String(id)] = Group(id: String(id), name: name, owner: owner, members: members)
        return json(201, .object(["groupID": .string(String(id))]), type: "application/vnd.kii.GroupCreationResponse+json",
                    fact: "[doc] kii.md §3.7 POST /apps/{appID}/groups answers 201 {groupID}")
    }

    // MARK: Permissions (§6, docs "Access Control")

    /// The ACL subjects a caller is: `UserID:ANONYMOUS_USER` covers every caller, with or without a token.
    func subjects(_ p: Principal) -> Set<String> {
        var s: Set<String> = ["UserID:ANONYMOUS_USER"]
        if case .user(let id) = p {
            s.insert("UserID:ANY_AUTHENTICATED_USER")
            s.insert("UserID:\(id)")
            for g in groups.values where g.members.contains(id) { s.insert("GroupID:\(g.id)") }
        }
        return s
    }

    func allowed(_ p: Principal, _ acl: [String: Set<String>], _ verb: String) -> Bool {
        if p == .admin { return true }
        return !(acl[verb] ?? []).isDisjoint(with: subjects(p))
    }

    func denied(_ p: Principal, _ what: String) -> Failure {
        var extras: JSONObject = ["authenticatedAppID": .string(options.appID)]
        if case .user(let id) = p { extras["authenticatedPrincipalID"] = .string(id) }
        return Failure(status: 401, code: "UNAUTHORIZED", message: "The principal is not allowed to \(what)", extras: extras)
    }

    func scopeOwnerSubjects(_ scope: Scope) -> Set<String> {
        switch scope {
        case .app: []
        case .user(let id): ["UserID:\(id)"]
        case .group(let g): ["GroupID:\(g)"]
        }
    }

    func canCreateBucket(_ scope: Scope, _ p: Principal) -> Bool {
        switch scope {
        case .app: return allowed(p, ["CREATE_NEW_BUCKET": ["UserID:ANY_AUTHENTICATED_USER"]], "CREATE_NEW_BUCKET")
        default: return allowed(p, ["CREATE_NEW_BUCKET": scopeOwnerSubjects(scope)], "CREATE_NEW_BUCKET")
        }
    }

    func defaultBucketACL(_ scope: Scope, creator: Principal) -> [String: Set<String>] {
        var creatorSubject: Set<String> = []
        if case .user(let id) = creator { creatorSubject = ["UserID:\(id)"] }
        switch scope {
        case .app:
            return ["CREATE_OBJECTS_IN_BUCKET": ["UserID:ANY_AUTHENTICATED_USER"],
                    "QUERY_OBJECTS_IN_BUCKET": ["UserID:ANY_AUTHENTICATED_USER", "UserID:ANONYMOUS_USER"],
                    "READ_OBJECTS_IN_BUCKET": ["UserID:ANY_AUTHENTICATED_USER", "UserID:ANONYMOUS_USER"],
                    "DROP_BUCKET_WITH_ALL_CONTENT": ["UserID:ANY_AUTHENTICATED_USER"]]
        case .user, .group:
            let all = scopeOwnerSubjects(scope).union(creatorSubject)
            return ["CREATE_OBJECTS_IN_BUCKET": all, "QUERY_OBJECTS_IN_BUCKET": all, "READ_OBJECTS_IN_BUCKET": all,
                    "DROP_BUCKET_WITH_ALL_CONTENT": all]
        }
    }

    func defaultObjectACL(_ scope: Scope, creator: Principal) -> [String: Set<String>] {
        var creatorSubject: Set<String> = []
        if case .user(let id) = creator { creatorSubject = ["UserID:\(id)"] }
        switch scope {
        case .app:
            return ["READ_EXISTING_OBJECT": ["UserID:ANY_AUTHENTICATED_USER", "UserID:ANONYMOUS_USER"],
                    "WRITE_EXISTING_OBJECT": ["UserID:ANY_AUTHENTICATED_USER"]]
        case .user, .group:
            let all = scopeOwnerSubjects(scope).union(creatorSubject)
            return ["READ_EXISTING_OBJECT": all, "WRITE_EXISTING_OBJECT": all]
        }
    }

    /// Who may read and change an object's ACL: its creator, the scope owner (user; group owner), the admin.
    func mayManageACL(_ p: Principal, _ scope: Scope, _ object: Object) -> Bool {
        switch p {
        case .admin: return true
        case .anonymous: return false
        case .user(let id):
            if object.owner == id { return true }
            switch scope {
            case .app: return false
            case .user(let u): return u == id
            case .group(let g): return groups[g]?.owner == id
            }
        }
    }

    func canRead(_ p: Principal, _ bucket: Bucket, _ object: Object) -> Bool {
        allowed(p, bucket.acl, "READ_OBJECTS_IN_BUCKET") || allowed(p, object.acl, "READ_EXISTING_OBJECT")
    }

    // MARK: Objects (§3)

    func validateBucketName(_ name: String) throws {
        let plain = name.hasPrefix("CRYPTO:") ? String(name.dropFirst(7)) : name
        let ok = (2...64).contains(plain.count) && !plain.hasPrefix("_")
            && plain.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }
            && !["users", "devices", "installations", "internal", "things"].contains(plain)
        guard ok else { throw Failure(status: 400, code: "INVALID_BUCKET", message: "The bucket name \(name) is not valid") }
    }

    func existingBucket(_ key: BucketKey) throws -> Bucket {
        guard let b = buckets[key] else {
            throw Failure(status: 404, code: "BUCKET_NOT_FOUND", message: "The bucket \(key.name) was not found",
                          extras: ["bucketID": .string(key.name), "objectScope": scopeJSON(key.scope)])
        }
        return b
    }

    func existingObject(_ key: BucketKey, _ id: String) throws -> (Bucket, Object) {
        guard let b = buckets[key], let o = b.objects[id] else {
            throw Failure(status: 404, code: "OBJECT_NOT_FOUND", message: "The object with specified id not found",
                          extras: ["bucketID": .string(key.name), "objectID": .string(id), "objectScope": scopeJSON(key.scope)])
        }
        return (b, o)
    }

    func scopeJSON(_ scope: Scope) -> JSON {
        switch scope {
        case .app: .object(["appID": .string(options.appID), "type": "APP"])
        case .user(let u): .object(["appID": .string(options.appID), "userID": .string(u), "type": "APP_AND_USER"])
        case .group(let g): .object(["appID": .string(options.appID), "groupID": .string(g), "type": "APP_AND_GROUP"])
        }
    }

    /// `application/json` (no data type) or `application/vnd.{appID}.{type}+json` (§3.2).
    func dataType(_ request: TransportRequest) throws -> String? {
        let ct = (request.headers["Content-Type"] ?? "").split(separator: ";").first.map(String.init) ?? ""
        if ct == "application/json" { return nil }
        let prefix = "application/vnd.\(options.appID).", suffix = "+json"
        guard ct.hasPrefix(prefix), ct.hasSuffix(suffix), ct.count > prefix.count + suffix.count else {
            throw Failure(status: 400, code: "INVALID_DATA_TYPE", message: "Content-Type \(ct) is not an object data type")
        }
        return String(ct.dropFirst(prefix.count).dropLast(suffix.count))
    }

    func objectBody(_ request: TransportRequest) throws -> JSONObject {
        guard let o = try parseJSON(request).objectValue else {
            throw Failure(status: 400, code: "INVALID_JSON", message: "An object must be a JSON object")
        }
        var out = JSONObject()
        for (k, v) in o where !k.hasPrefix("_") { out[k] = v }  // reserved `_` keys are the server's (§3.4)
        return out
    }

    /// Creates a bucket on first use if the caller may (§3.1, §3.2).
    func bucketForWrite(_ key: BucketKey, _ p: Principal) throws -> Bucket {
        if let b = buckets[key] { return b }
        guard canCreateBucket(key.scope, p) else { throw denied(p, "create the bucket \(key.name)") }
        let b = Bucket(acl: defaultBucketACL(key.scope, creator: p))
        buckets[key] = b
        return b
    }

    func store(_ key: BucketKey, id: String, fields: JSONObject, dataType: String?, _ p: Principal) throws -> Object {
        var bucket = try bucketForWrite(key, p)
        guard allowed(p, bucket.acl, "CREATE_OBJECTS_IN_BUCKET") else { throw denied(p, "create objects in \(key.name)") }
        advance()
        var owner: String?
        if case .user(let u) = p { owner = u }
        let object = Object(id: id, fields: fields, created: nowMillis, modified: nowMillis, version: 1, owner: owner,
                            dataType: dataType, acl: defaultObjectACL(key.scope, creator: p))
        bucket.objects[id] = object
        bucket.order.append(id)
        buckets[key] = bucket
        return object
    }

    func createObject(_ request: TransportRequest, _ key: BucketKey, _ p: Principal) throws -> TransportResponse {
        let type = try dataType(request)
        let fields = try objectBody(request)
        let object = try store(key, id: newID("o"), fields: fields, dataType: type, p)
        var o: JSONObject = ["objectID": .string(object.id), "createdAt": .int(object.created)]
        if let type { o["dataType"] = .string("application/vnd.\(options.appID).\(type)+json") }
        return json(201, .object(o), type: "application/vnd.kii.ObjectCreationResponse+json",
                    fact: "[doc] kii.md §3.2 POST {bucket}/objects answers 201 {objectID, createdAt, dataType} with ETag \"1\" (ebisu live object_test.cpp)",
                    headers: [("ETag", "\"1\""), ("Location", "\(locationPrefix(key))/objects/\(object.id)")])
    }

    func locationPrefix(_ key: BucketKey) -> String {
        let scope: String
        switch key.scope {
        case .app: scope = ""
        case .user(let u): scope = "/users/\(u)"
        case .group(let g): scope = "/groups/\(g)"
        }
        return "https://api-jp.kii.com/api/apps/\(options.appID)\(scope)/buckets/\(key.name)"
    }

    func objectJSON(_ o: Object, versionAsNumber: Bool = false, calculated: JSONObject? = nil) -> JSONObject {
        var out = o.fields
        out["_id"] = .string(o.id)
        out["_created"] = .int(o.created)
        out["_modified"] = .int(o.modified)
        if let owner = o.owner { out["_owner"] = .string(owner) }
        if let t = o.dataType { out["_dataType"] = .string(t) }
        out["_version"] = versionAsNumber ? .int(Int64(o.version)) : .string(String(o.version))
        if let calculated { out["_calculated"] = .object(calculated) }
        return out
    }

    func objectType(_ o: Object) -> String {
        o.dataType.map { "application/vnd.\(options.appID).\($0)+json" } ?? "application/json"
    }

    func getObject(_ key: BucketKey, _ id: String, _ p: Principal) throws -> TransportResponse {
        let (bucket, object) = try existingObject(key, id)
        guard canRead(p, bucket, object) else { throw denied(p, "read the object \(id)") }
        return json(200, .object(objectJSON(object)), type: objectType(object), fact: "[doc] kii.md §3.4 GET {bucket}/objects/{id} answers 200 the object with _id, _created, _modified, _owner, _version and an ETag",
                    headers: [("ETag", "\"\(object.version)\"")])
    }

    /// `If-Match` against the current version: stale is 409 OBJECT_VERSION_IS_STALE (§3.5).
    func checkVersion(_ request: TransportRequest, _ object: Object) throws {
        guard let expected = request.headers["If-Match"] else { return }
        let bare = expected.trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
        guard bare == String(object.version) else {
            throw Failure(status: 409, code: "OBJECT_VERSION_IS_STALE", message: "The object version is stale",
                          extras: ["objectID": .string(object.id)])
        }
    }

    func putObject(_ request: TransportRequest, _ key: BucketKey, _ id: String, _ p: Principal) throws -> TransportResponse {
        let idOK = (2...100).contains(id.count) && id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }
        guard idOK else { throw Failure(status: 400, code: "INVALID_OBJECT_ID", message: "The object id \(id) is not valid") }
        let type = try dataType(request)
        let fields = try objectBody(request)
        if let bucket = buckets[key], var object = bucket.objects[id] {
            if request.headers["If-None-Match"] == "*" {
                throw Failure(status: 409, code: "OBJECT_ALREADY_EXISTS", message: "The object already exists",
                              extras: ["objectID": .string(id)])
            }
            try checkVersion(request, object)
            guard allowed(p, object.acl, "WRITE_EXISTING_OBJECT") else { throw denied(p, "write the object \(id)") }
            advance()
            object.fields = fields
            object.modified = nowMillis
            object.version += 1
            if let type { object.dataType = type }
            buckets[key]!.objects[id] = object
            return json(200, .object(["modifiedAt": .int(object.modified)]), type: "application/vnd.kii.ObjectUpdateResponse+json",
                        fact: "[doc] kii.md §3.5 PUT with If-Match answers 200 {modifiedAt} with the new ETag",
                        headers: [("ETag", "\"\(object.version)\"")])
        }
        if request.headers["If-Match"] != nil {
            throw Failure(status: 404, code: "OBJECT_NOT_FOUND", message: "The object with specified id not found",
                          extras: ["objectID": .string(id)])
        }
        let object = try store(key, id: id, fields: fields, dataType: type, p)
        return json(201, .object(["createdAt": .int(object.created), "modifiedAt": .int(object.modified)]),
                    type: "application/vnd.kii.ObjectUpdateResponse+json",
                    fact: "[doc] kii.md §3.3 PUT with If-None-Match: * answers 201 {createdAt, modifiedAt}",
                    headers: [("ETag", "\"1\"")])
    }

    func patchObject(_ request: TransportRequest, _ key: BucketKey, _ id: String, _ p: Principal) throws -> TransportResponse {
        var (_, object) = try existingObject(key, id)
        try checkVersion(request, object)
        guard allowed(p, object.acl, "WRITE_EXISTING_OBJECT") else { throw denied(p, "write the object \(id)") }
        let changes = try objectBody(request)
        advance()
        for (k, v) in changes { object.fields[k] = v }
        object.modified = nowMillis
        object.version += 1
        buckets[key]!.objects[id] = object
        return json(200, .object(objectJSON(object)), type: objectType(object), fact: "[doc] kii.md §3.6 partial update (POST, X-HTTP-Method-Override: PATCH) answers 200 the merged object with an ETag",
                    headers: [("ETag", "\"\(object.version)\"")])
    }

    func deleteObject(_ request: TransportRequest, _ key: BucketKey, _ id: String, _ p: Principal) throws -> TransportResponse {
        let (_, object) = try existingObject(key, id)
        if request.headers["If-None-Match"] != "*" { try checkVersion(request, object) }
        guard allowed(p, object.acl, "WRITE_EXISTING_OBJECT") else { throw denied(p, "delete the object \(id)") }
        advance()
        buckets[key]!.objects[id] = nil
        buckets[key]!.order.removeAll { $0 == id }
        return empty(fact: "[doc] kii.md §3.7 DELETE {bucket}/objects/{id} answers 204")
    }

    func bucketInfo(_ key: BucketKey, _ p: Principal) throws -> TransportResponse {
        let b = try existingBucket(key)
        guard allowed(p, b.acl, "QUERY_OBJECTS_IN_BUCKET") else { throw denied(p, "read the bucket \(key.name)") }
        return json(200, .object(["bucketType": "rw", "size": .int(Int64(b.objects.count))]),
                    fact: "[doc] kii.md §3.1 GET {bucket} answers 200 {bucketType, size}")
    }

    func dropBucket(_ key: BucketKey, _ p: Principal) throws -> TransportResponse {
        let b = try existingBucket(key)
        guard allowed(p, b.acl, "DROP_BUCKET_WITH_ALL_CONTENT") else { throw denied(p, "drop the bucket \(key.name)") }
        buckets[key] = nil
        return empty(fact: "[doc] kii.md §3.1 DELETE {bucket} drops the bucket: 204")
    }

    // MARK: Bodies (§5.1)

    func body(_ request: TransportRequest, _ key: BucketKey, _ id: String, _ p: Principal) throws -> TransportResponse {
        var (bucket, object) = try existingObject(key, id)
        switch request.method.rawValue {
        case "PUT":
            guard allowed(p, object.acl, "WRITE_EXISTING_OBJECT") else { throw denied(p, "upload the body of \(id)") }
            let type = request.headers["Content-Type"] ?? "application/octet-stream"
            advance()
            object.body = Body(data: request.body ?? Data(), contentType: type, etag: (object.body?.etag ?? 0) + 1)
            buckets[key]!.objects[id] = object
            return json(200, .object(["modifiedAt": .int(nowMillis)]), type: "application/vnd.kii.ObjectBodyUpdateResponse+json",
                        fact: "[doc] kii.md §5.1 PUT {object}/body answers 200 {modifiedAt} with an ETag",
                        headers: [("ETag", "\"\(object.body!.etag)\"")])
        case "GET":
            guard canRead(p, bucket, object) else { throw denied(p, "read the body of \(id)") }
            guard let body = object.body else {
                throw Failure(status: 404, code: "OBJECT_BODY_NOT_FOUND", message: "The object body was not found",
                              extras: ["objectID": .string(id)])
            }
            return TransportResponse(status: 200, headers: HTTPFields([("Content-Type", body.contentType), ("ETag", "\"\(body.etag)\""), ("Accept-Ranges", "bytes"), (Self.factHeader, "[doc] kii.md §5.1 GET {object}/body answers 200 the bytes with their Content-Type")]),
                                body: body.data)
        case "DELETE":
            guard allowed(p, object.acl, "WRITE_EXISTING_OBJECT") else { throw denied(p, "delete the body of \(id)") }
            guard object.body != nil else {
                throw Failure(status: 404, code: "OBJECT_BODY_NOT_FOUND", message: "The object body was not found",
                              extras: ["objectID": .string(id)])
            }
            object.body = nil
            buckets[key]!.objects[id] = object
            _ = bucket
            return empty(fact: "[doc] kii.md §5.1 DELETE {object}/body answers 204")
        default:
            throw Failure(status: 404, code: "NOT_FOUND", message: "no such resource")
        }
    }

    // MARK: ACL (§6)

    static let objectVerbs: Set<String> = ["READ_EXISTING_OBJECT", "WRITE_EXISTING_OBJECT"]
    static let bucketVerbs: Set<String> = ["CREATE_OBJECTS_IN_BUCKET", "QUERY_OBJECTS_IN_BUCKET", "READ_OBJECTS_IN_BUCKET",
                                           "DROP_BUCKET_WITH_ALL_CONTENT"]

    func aclJSON(_ acl: [String: Set<String>]) -> JSON {
        var o = JSONObject()
        for verb in acl.keys.sorted() {
            let subjects = acl[verb]!.sorted()
            guard !subjects.isEmpty else { continue }
            o[verb] = .array(subjects.map { s in
                let parts = s.split(separator: ":", maxSplits: 1).map(String.init)
                let name = parts[0] == "GroupID" ? "groupID" : parts[0] == "ThingID" ? "thingID" : "userID"
                return .object([name: .string(parts[1])])
            })
        }
        return .object(o)
    }

    func validSubject(_ s: String) -> Bool {
        let parts = s.split(separator: ":", maxSplits: 1)
        return parts.count == 2 && ["UserID", "GroupID", "ThingID"].contains(String(parts[0])) && !parts[1].isEmpty
    }

    func editACL(_ method: String, _ path: [String], _ acl: inout [String: Set<String>], verbs: Set<String>) throws -> TransportResponse {
        guard path.count == 2, verbs.contains(path[0]), validSubject(path[1]) else {
            throw Failure(status: 400, code: "INVALID_INPUT_DATA", message: "ACL entry \(path.joined(separator: "/")) is not valid")
        }
        let (verb, subject) = (path[0], path[1])
        switch method {
        case "PUT":
            if acl[verb]?.contains(subject) == true {
                throw Failure(status: 409, code: "ACL_ALREADY_EXISTS", message: "The ACL entry already exists")
            }
            acl[verb, default: []].insert(subject)
        case "DELETE":
            guard acl[verb]?.remove(subject) != nil else {
                throw Failure(status: 404, code: "ACL_NOT_FOUND", message: "The ACL entry was not found")
            }
        default:
            throw Failure(status: 404, code: "NOT_FOUND", message: "no such resource")
        }
        return empty(fact: "[doc] kii.md §6.1 PUT/DELETE {resource}/acl/{VERB}/{SUBJECT} answers 204")
    }

    func objectACL(_ method: String, _ path: [String], _ key: BucketKey, _ id: String, _ p: Principal) throws -> TransportResponse {
        var (_, object) = try existingObject(key, id)
        guard mayManageACL(p, key.scope, object) else { throw denied(p, "access the ACL of \(id)") }
        if path.isEmpty, method == "GET" {
            return json(200, aclJSON(object.acl), type: "application/vnd.kii.ACLRetrievalResponse+json",
                        fact: "[doc] kii.md §6.1 GET {object}/acl answers 200 the ACL lists by verb")
        }
        let response = try editACL(method, path, &object.acl, verbs: KiiSimulator.objectVerbs)
        buckets[key]!.objects[id] = object
        return response
    }

    func bucketACL(_ method: String, _ path: [String], _ key: BucketKey, _ p: Principal) throws -> TransportResponse {
        let mayManage: Bool
        switch (p, key.scope) {
        case (.admin, _): mayManage = true
        case (.user(let id), .user(let u)): mayManage = id == u
        case (.user(let id), .group(let g)): mayManage = groups[g]?.owner == id
        default: mayManage = false  // app-scope bucket ACLs are the admin's (§6.2)
        }
        guard mayManage else { throw denied(p, "access the ACL of bucket \(key.name)") }
        if path.isEmpty, method == "GET" {
            return json(200, aclJSON(try existingBucket(key).acl), type: "application/vnd.kii.ACLRetrievalResponse+json",
                        fact: "[doc] kii.md §6.1 GET {bucket}/acl answers 200 the ACL lists by verb")
        }
        // Setting an entry on a missing bucket creates it (§6.2).
        var bucket = buckets[key] ?? Bucket(acl: defaultBucketACL(key.scope, creator: p))
        let response = try editACL(method, path, &bucket.acl, verbs: KiiSimulator.bucketVerbs)
        buckets[key] = bucket
        return response
    }

    // MARK: Query (§4)

    enum Truth { case yes, no, unknown }

    indirect enum Clause {
        case all
        case eq(String, JSON)
        case not(Clause)
        case and([Clause]), or([Clause])
        case range(String, lower: (JSON, Bool)?, upper: (JSON, Bool)?)
        case within(String, [JSON])
        case prefix(String, String)
        case hasField(String, String)
        case geobox(String, ne: (Double, Double), sw: (Double, Double))
        case geodistance(String, center: (Double, Double), radius: Double, into: String?)
    }

    static let notHasFieldFact = "[inferred] not(hasField) matches objects without the field (Kii documents only notEquals, as three-valued)"

    /// Whether a clause holds a `not` of a `hasField`.
    static func negatesHasField(_ clause: JSON) -> Bool {
        if clause["type"]?.stringValue == "not", clause["clause"]?["type"]?.stringValue == "hasField" { return true }
        if let inner = clause["clause"], negatesHasField(inner) { return true }
        return (clause["clauses"]?.arrayValue ?? []).contains { negatesHasField($0) }
    }

    func badQuery(_ why: String) -> Failure { Failure(status: 400, code: "QUERY_NOT_SUPPORTED", message: why) }

    func point(_ j: JSON?) -> (Double, Double)? {
        guard let j, j["_type"]?.stringValue == "point", let lat = j["lat"]?.doubleValue, let lon = j["lon"]?.doubleValue
        else { return nil }
        return (lat, lon)
    }

    func parseClause(_ j: JSON) throws -> Clause {
        guard let type = j["type"]?.stringValue else { throw badQuery("a clause needs a type") }
        func field() throws -> String {
            guard let f = j["field"]?.stringValue, !f.isEmpty else { throw badQuery("\(type) needs a field") }
            return f
        }
        switch type {
        case "all": return .all
        case "eq":
            guard let v = j["value"], v.stringValue != nil || v.doubleValue != nil || v.boolValue != nil else {
                throw badQuery("eq takes a string, number or boolean value")
            }
            return .eq(try field(), v)
        case "not":
            guard let c = j["clause"] else { throw badQuery("not needs a clause") }
            return .not(try parseClause(c))
        case "and", "or":
            guard let items = j["clauses"]?.arrayValue, !items.isEmpty else { throw badQuery("\(type) needs clauses") }
            let cs = try items.map { try parseClause($0) }
            return type == "and" ? .and(cs) : .or(cs)
        case "range":
            let lower = j["lowerLimit"].map { ($0, j["lowerIncluded"]?.boolValue ?? true) }
            let upper = j["upperLimit"].map { ($0, j["upperIncluded"]?.boolValue ?? true) }
            guard lower != nil || upper != nil else { throw badQuery("range needs a limit") }
            return .range(try field(), lower: lower, upper: upper)
        case "in":
            guard let values = j["values"]?.arrayValue, !values.isEmpty, values.count <= 200 else {
                throw badQuery("in takes 1 to 200 values")
            }
            return .within(try field(), values)
        case "prefix":
            guard let p = j["prefix"]?.stringValue else { throw badQuery("prefix needs a prefix") }
            return .prefix(try field(), p)
        case "hasField":
            guard let t = j["fieldType"]?.stringValue, ["STRING", "INTEGER", "DECIMAL", "BOOLEAN"].contains(t) else {
                throw badQuery("hasField needs fieldType STRING, INTEGER, DECIMAL or BOOLEAN")
            }
            return .hasField(try field(), t)
        case "geobox":
            guard let ne = point(j["box"]?["ne"]), let sw = point(j["box"]?["sw"]) else { throw badQuery("geobox needs ne and sw points") }
            return .geobox(try field(), ne: ne, sw: sw)
        case "geodistance":
            guard let c = point(j["center"]), let r = j["radius"]?.doubleValue, r > 0, r <= 20_000_000 else {
                throw badQuery("geodistance needs a center and a radius in (0, 20000000]")
            }
            return .geodistance(try field(), center: c, radius: r, into: j["putDistanceInto"]?.stringValue)
        default:
            throw badQuery("unknown clause type \(type)")
        }
    }

    static func compare(_ a: JSON, _ b: JSON) -> Int? {
        if let x = a.doubleValue, let y = b.doubleValue, a.boolValue == nil, b.boolValue == nil { return x < y ? -1 : x > y ? 1 : 0 }
        if let x = a.stringValue, let y = b.stringValue {
            let xs = Array(x.unicodeScalars).map(\.value), ys = Array(y.unicodeScalars).map(\.value)
            return xs.lexicographicallyPrecedes(ys) ? -1 : xs == ys ? 0 : 1
        }
        if let x = a.boolValue, let y = b.boolValue { return x == y ? 0 : (!x ? -1 : 1) }
        return nil
    }

    static func distance(_ a: (Double, Double), _ b: (Double, Double)) -> Double {
        let r = 6_371_000.0, rad = Double.pi / 180
        let dLat = (b.0 - a.0) * rad, dLon = (b.1 - a.1) * rad
        let h = sin(dLat / 2) * sin(dLat / 2) + cos(a.0 * rad) * cos(b.0 * rad) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * r * asin(min(1, sqrt(h)))
    }

    func evaluate(_ c: Clause, _ o: JSONObject, _ calculated: inout JSONObject) -> Truth {
        func truth(_ b: Bool) -> Truth { b ? .yes : .no }
        switch c {
        case .all: return .yes
        case .eq(let f, let v):
            guard let x = o[f] else { return .unknown }
            return truth(KiiSimulator.compare(x, v) == 0)
        case .not(let inner):
            switch evaluate(inner, o, &calculated) {
            case .yes: return .no
            case .no: return .yes
            case .unknown: return .unknown
            }
        case .and(let cs):
            var result = Truth.yes
            for c in cs {
                switch evaluate(c, o, &calculated) {
                case .no: return .no
                case .unknown: result = .unknown
                case .yes: break
                }
            }
            return result
        case .or(let cs):
            var result = Truth.no
            for c in cs {
                switch evaluate(c, o, &calculated) {
                case .yes: return .yes
                case .unknown: result = .unknown
                case .no: break
                }
            }
            return result
        case .range(let f, let lower, let upper):
            guard let x = o[f] else { return .unknown }
            if let (l, inc) = lower {
                guard let r = KiiSimulator.compare(x, l), x.boolValue == nil else { return .no }
                if r < 0 || (r == 0 && !inc) { return .no }
            }
            if let (u, inc) = upper {
                guard let r = KiiSimulator.compare(x, u), x.boolValue == nil else { return .no }
                if r > 0 || (r == 0 && !inc) { return .no }
            }
            return .yes
        case .within(let f, let values):
            guard let x = o[f] else { return .unknown }
            return truth(values.contains { KiiSimulator.compare(x, $0) == 0 })
        case .prefix(let f, let p):
            guard let x = o[f] else { return .unknown }
            return truth(x.stringValue?.hasPrefix(p) ?? false)
        case .hasField(let f, let t):
            switch (o[f], t) {
            case (.string?, "STRING"), (.int?, "INTEGER"), (.double?, "DECIMAL"), (.bool?, "BOOLEAN"): return .yes
            default: return .no
            }
        case .geobox(let f, let ne, let sw):
            guard let x = o[f] else { return .unknown }
            guard let (lat, lon) = point(x) else { return .no }
            return truth(lat <= ne.0 && lat >= sw.0 && lon <= ne.1 && lon >= sw.1)
        case .geodistance(let f, let center, let radius, let into):
            guard let x = o[f] else { return .unknown }
            guard let p = point(x) else { return .no }
            let d = KiiSimulator.distance(center, p)
            if let into { calculated[into] = .double(d) }
            return truth(d <= radius)
        }
    }

    func query(_ request: TransportRequest, _ key: BucketKey, _ p: Principal) throws -> TransportResponse {
        let ct = request.headers["Content-Type"]?.split(separator: ";").first.map(String.init)
        guard ct == "application/vnd.kii.QueryRequest+json" || ct == "application/json" else {
            throw Failure(status: 400, code: "INVALID_INPUT_DATA", message: "Content-Type must be application/vnd.kii.QueryRequest+json")
        }
        let body = try parseJSON(request)
        guard let bq = body["bucketQuery"], let clauseJSON = bq["clause"] else { throw badQuery("bucketQuery.clause is required") }
        let clause = try parseClause(clauseJSON)
        // Kii documents notEquals as three-valued; how NOT treats hasField on a missing field is undocumented. This
        // simulator answers it two-valued, which is this project's reading: an answer that depends on it says so.
        let inferredNot = Self.negatesHasField(clauseJSON)
        let bucket = try existingBucket(key)
        guard allowed(p, bucket.acl, "QUERY_OBJECTS_IN_BUCKET") else { throw denied(p, "query \(key.name)") }
        var matches: [(Object, JSONObject)] = []
        for id in bucket.order {
            guard let object = bucket.objects[id], canRead(p, bucket, object) else { continue }
            var calculated = JSONObject()
            var view = objectJSON(object)
            view["_calculated"] = nil
            if evaluate(clause, view, &calculated) == .yes { matches.append((object, calculated)) }
        }
        if let aggregations = bq["aggregations"]?.arrayValue {
            var out = JSONObject()
            for a in aggregations {
                guard a["type"]?.stringValue == "COUNT", let into = a["putAggregationInto"]?.stringValue else {
                    throw badQuery("only COUNT aggregations are supported")
                }
                out[into] = .int(Int64(matches.count))
            }
            return json(200, .object(["aggregations": .object(out)]), type: "application/vnd.kii.QueryResponse+json",
                        fact: inferredNot ? Self.notHasFieldFact
                            : "[doc] kii.md §4.4 a COUNT aggregation answers {aggregations:{count_field:n}} (Unity TestObjectCount.cs)")
        }
        if let orderBy = bq["orderBy"]?.stringValue {
            let descending = bq["descending"]?.boolValue ?? false  // the reference's default (§4.1)
            func sortValue(_ m: (Object, JSONObject)) -> JSON? {
                if orderBy.hasPrefix("_calculated.") { return m.1[String(orderBy.dropFirst(12))] }
                return objectJSON(m.0)[orderBy]
            }
            // Stable: equal keys keep creation order; objects without the key sort last.
            matches = matches.enumerated().sorted { a, b in
                let x = sortValue(a.element), y = sortValue(b.element)
                switch (x, y) {
                case (nil, nil): return a.offset < b.offset
                case (nil, _): return false
                case (_, nil): return true
                case (let x?, let y?):
                    let r = KiiSimulator.compare(x, y) ?? 0
                    if r == 0 { return a.offset < b.offset }
                    return descending ? r > 0 : r < 0
                }
            }.map(\.element)
        }
        // Pagination (§4.3): resend the same bucketQuery with the key.
        var offset = 0
        if let key = body["paginationKey"]?.stringValue {
            guard let saved = paginationKeys[key], saved.query == bq else {
                throw Failure(status: 400, code: "INVALID_INPUT_DATA", message: "The pagination key is not valid for this query")
            }
            offset = saved.offset
        }
        var limit = Int(body["bestEffortLimit"]?.intValue ?? Int64(options.maxPageSize))
        if limit <= 0 || limit > options.maxPageSize { limit = options.maxPageSize }
        let page = matches.dropFirst(offset).prefix(limit)
        var out: JSONObject = ["queryDescription": "WHERE ( 1 = 1 )"]
        out["results"] = .array(page.map { .object(objectJSON($0.0, versionAsNumber: true, calculated: $0.1.isEmpty ? nil : $0.1)) })
        if offset + page.count < matches.count {
            let next = "pk" + newID("p").replacingOccurrences(of: "-", with: "")
            paginationKeys[next] = (bq, offset + page.count)
            out["nextPaginationKey"] = .string(next)
        }
        return json(200, .object(out), type: "application/vnd.kii.QueryResponse+json",
                    fact: inferredNot ? Self.notHasFieldFact
                        : "[doc] kii.md §4.1-4.3 QueryRequest (clause, orderBy, bestEffortLimit, paginationKey) answers {results[, nextPaginationKey]}")
    }
}
