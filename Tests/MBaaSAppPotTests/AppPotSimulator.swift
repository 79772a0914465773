// A documented-behaviour simulator of the AppPot REST API (server generations v2, v3 and v4), as an in-memory
// `HTTPTransport`.
//
// It exists to author cassettes from documented facts (Fixtures/Cassettes/apppot) and to cross-check the
// adapter: it deliberately uses nothing of the adapter's codec (only MBaaSCore's JSON and HTTP types), so a
// mistake in the codec is not mirrored here. Every answer names the fact it follows in the response header
// `X-MBaaS-Fact` (moved into the cassette by the recorder), marked [doc] (the vendor docs as summarised in
// /work/shared/reference/apppot-salesforce.md part A and its addendum), [sdk] (the vendor's JS SDK
// ncdcdev/apppot-sdk-js, branch and path named) or [inferred] (this project's reading where both are silent).
//
// The server's database is MySQL (Troubleshoot.md `desc`, insertData.sql), so this simulator follows MySQL's
// defaults: `=` and `LIKE` on text are case-insensitive, NULLs sort first ascending (last descending), a table
// row is limited to 65,535 bytes, and a NULL column is answered as "" (JS commit 5321b55).
//
// Deterministic: tokens, object ids, file name prefixes and server times come from counters and a simulated
// clock that starts at `Options.start` and advances one second per write request.

import Foundation
import MBaaSCore

final class AppPotSimulator: HTTPTransport, @unchecked Sendable {
    struct Group: Sendable {
        var id: Int
        var name: String
        var role: String
    }

    struct Account: Sendable {
        var id: Int
        var account: String
        var password: String
        var firstName: String
        var lastName: String
        var groups: [Group]
    }

    struct Options: Sendable {
        var contextRoot = "apppot"
        var companyId = "24"
        var appId = "jp.co.example.App"
        var appVersion = "1.0"
        var appKey = "APP_KEY"
        /// How long a user token lives; the v2 login answers the expiry as an absolute epoch-ms `validTime`
        /// (addendum: seed 000 shows `1470000416960`).
        var validTimeMs: Int64 = 18_000_000
        /// The server API generation: v2 (1-based offsets, GET anonymousTokens), v3 (0-based offsets, typed
        /// columns), v4 (POST anonymousTokens, login by account and app key).
        var generation = "v2"
        /// A5: the server spells the member `authInfor`; the JS SDK also accepts `authInfo`.
        var authInfoKey = "authInfor"
        /// A5: the flat `{groupId,groupName,roleName}` or the nested `{group:{..},role:{..}}` shape.
        var nestedGroups = false
        /// The first server time (ISO-8601 in +09:00 on the wire).
        var start = Date(timeIntervalSince1970: 1_700_000_000)
    }

    struct Table {
        /// colName -> wire type (varchar, integer, long), A6.
        var columns: [String: (type: String, length: Int?)]
        var order: [String] = []
        var rows: [String: [String: JSON]] = [:]
    }

    struct StoredFile {
        var data: Data
        var contentType: String
    }

    struct State {
        var clock: Date
        var counter = 0
        var anonymousTokens = Set<String>()
        var userTokens: [String: (userId: Int, expires: Date)] = [:]
        var tables: [String: Table] = [:]
        var transactions = Set<String>()
        var files: [String: StoredFile] = [:]
        var fileOrder: [String] = []
        var logs: [(level: String, message: String)] = []
        var devices = Set<String>()
        var requests = 0
        /// The directory as administrators change it (POST/DELETE users, POST/DELETE groups), over `accounts`.
        var created: [Account] = []
        var deletedUsers = Set<Int>()
        var groups: [Int: (name: String, description: String)] = [:]
        var deletedGroups = Set<Int>()
        /// What `GET logLevel` answers (seed 000: None, Error, Monitor).
        var logLevel = "Monitor"
        /// Push log-ins in order: the UDID, and whether that UDID was registered before (A5's order).
        var pushLogins: [(udid: String, registeredBefore: Bool)] = []
    }

    let options: Options
    let accounts: [Account]
    private let lock = NSLock()
    private var state: State

    init(options: Options = Options(), accounts: [Account] = AppPotSimulator.defaultAccounts) {
        self.options = options
        self.accounts = accounts
        self.state = State(clock: options.start)
    }

    /// The fixture users of one company: alice (id 20) and bob (id 21) share group 12 (bob is also in 13);
    /// carol (22) shares no group with them.
    static let defaultAccounts: [Account] = [
        Account(id: 20, account: "alice", password: "alice-pass", firstName: "Alice", lastName: "Sato",
                groups: [Group(id: 12, name: "Sales", role: "User")]),
        Account(id: 21, account: "bob", password: "bob-pass", firstName: "Bob", lastName: "Suzuki",
                groups: [Group(id: 12, name: "Sales", role: "Manager"), Group(id: 13, name: "Ops", role: "User")]),
        Account(id: 22, account: "carol", password: "carol-pass", firstName: "Carol", lastName: "Ito",
                groups: [Group(id: 14, name: "Legal", role: "User")]),
    ]

    // MARK: Test hooks

    func withState<R>(_ body: (inout State) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&state)
    }

    /// Moves the server clock (token expiry).
    func advance(seconds: TimeInterval) { withState { $0.clock.addTimeInterval(seconds) } }
    var logs: [(level: String, message: String)] { withState { $0.logs } }
    var requestCount: Int { withState { $0.requests } }
    func table(_ name: String) -> Table? { withState { $0.tables[name] } }
    func fileNames() -> [String] { withState { $0.fileOrder } }

    // MARK: Transport

    func send(_ request: TransportRequest) async throws -> TransportResponse { handle(request) }

    /// Answers one request (under the lock).
    func handle(_ request: TransportRequest) -> TransportResponse {
        lock.lock()
        defer { lock.unlock() }
        state.requests += 1
        do {
            return try route(request)
        } catch let failure as Failure {
            return failure.response
        } catch {
            return Failure(status: 500, code: 131, description: "Process error: \(error)").response
        }
    }

    /// An error answer: the A4 envelope with an HTTP status.
    struct Failure: Error {
        var status: Int
        var code: Int
        var description: String
        var fact: String = "[inferred] process error"
        var response: TransportResponse {
            let body: JSON = .object(["status": "error", "errCode": .int(Int64(code)), "description": .string(description)])
            return TransportResponse(status: .init(code: status), headers: HTTPFields([("Content-Type", "application/json;charset=UTF-8"), ("X-MBaaS-Fact", fact)]), body: body.data())
        }
    }

    /// An error answer; `fact` names what it follows (default: the fact of its errCode, see ``codeFacts``).
    private func fail(_ code: Int, _ description: String, status: Int = 200, fact: String? = nil) -> Failure {
        Failure(status: status, code: code, description: description,
                fact: fact ?? Self.codeFacts[code] ?? "[doc] \(Self.ref) A4 error envelope {status:error, errCode, description}")
    }

    static let ref = "apppot-salesforce.md"

    /// The fact behind each error code this simulator answers.
    static let codeFacts: [Int: String] = [
        101: "[doc] \(ref) A4 errCode 101: app does not exist",
        103: "[doc] \(ref) A4/A6 errCode 103: cannot create the app database",
        104: "[doc] \(ref) A4 errCode 104: appId/appVersion/token mismatch",
        106: "[doc] \(ref) A4 errCode 106: app id or version not correct",
        109: "[doc] \(ref) A4 errCode 109: input data not valid",
        110: "[doc] \(ref) A4 errCode 110: user does not exist",
        111: "[sdk] apppot-sdk-js v2.3 spec/login.test.ts: a wrong password is refused (AppPot.Error at HTTP 200, errCode 111 per \(ref) A4)",
        112: "[inferred] data calls with the anonymous token are refused as a user/token mismatch (errCode 112)",
        120: "[doc] \(ref) A5 errCode 120: token expired",
        121: "[sdk] apppot-sdk-js v2.3 spec/logout.test.ts: a token unknown to the server (e.g. after logout) answers errCode 121",
        130: "[doc] \(ref) A7 errCode 130: record does not exist or data blocking (a stale serverUpdateTime)",
        161: "[doc] \(ref) A5 POST devices: an already registered UDID answers errCode 161",
        198: "[doc] \(ref) A4 errCode 198: input parameters are required",
        199: "[doc] \(ref) A4 errCode 199: request not found (HTTP 404)",
        211: "[doc] \(ref) A7 errCode 211: transactionId already used",
        220: "[doc] \(ref) A8 errCode 220: cannot execute query",
        600: "[inferred] a missing file answers HTTP 404 with errCode 600",
        993: "[sdk] apppot-sdk-js v2.3 commit 09f4d0d: a query that matches nothing answers HTTP 404 (empty result)",
        995: "[inferred] a class that was never created answers errCode 995 (table empty or does not exist)",
    ]

    /// A success answer (A4 envelope) and the fact it follows.
    private func ok(_ members: [(String, JSON)] = [], results: JSON? = nil, fact: String) -> TransportResponse {
        var o: JSONObject = ["status": "OK", "errCode": 0, "description": .null]
        if let results { o["results"] = results }
        for (k, v) in members { o[k] = v }
        return TransportResponse(status: 200, headers: HTTPFields([("Content-Type", "application/json;charset=UTF-8"), ("X-MBaaS-Fact", fact)]),
                            body: JSON.object(o).data())
    }

    private var v2: Bool { options.generation == "v2" }
    private var v4: Bool { options.generation == "v4" }

    private func route(_ request: TransportRequest) throws -> TransportResponse {
        guard let comps = URLComponents(url: request.url, resolvingAgainstBaseURL: false) else {
            throw fail(199, "Request not found", status: 404)
        }
        let segments = comps.percentEncodedPath.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
        let root = options.contextRoot.split(separator: "/").map(String.init)
        // A3: /{contextRoot}/api/{companyId}/{appId}/{appVersion}/{path}
        guard segments.count > root.count + 4, Array(segments.prefix(root.count)) == root, segments[root.count] == "api" else {
            throw fail(199, "Request not found", status: 404)
        }
        let company = segments[root.count + 1], app = segments[root.count + 2], version = segments[root.count + 3]
        guard company == options.companyId, app == options.appId else { throw fail(101, "App with id does not exist") }
        guard version == options.appVersion else { throw fail(106, "App id or version not correct") }
        let path = Array(segments.dropFirst(root.count + 4))
        var queryItems: [String: String] = [:]
        for item in comps.queryItems ?? [] { queryItems[item.name] = item.value ?? "" }
        let method = request.method.rawValue
        let token = request.headers["apppot-token"]

        switch (method, path.count, path.first) {
        case ("GET", 1, "anonymousTokens") where !v4: return try anonymousToken(queryItems)
        case ("POST", 1, "anonymousTokens") where v4: return try anonymousTokenV4(request)
        case ("POST", 2, "auth") where path[1] == "login": return try login(request, token: token)
        case ("POST", 2, "auth") where path[1] == "logout": return try logout(token: token)
        case ("GET", 1, "users"): return try users(token: token, queryToken: queryItems["token"], groupId: queryItems["groupId"])
        case ("GET", 2, "users"): return try user(id: path[1], token: token, queryToken: queryItems["token"])
        case ("POST", 1, "schemas"): return try schemas(request, token: token)
        case ("POST", 3, "data") where path[1] == "batch": return try batch(path[2], request, token: token)
        case ("GET", 3, "data"): return try getRow(className: path[1], id: path[2], token: token)
        case ("POST", 3, "data") where path[1] == "query": return try query(className: path[2], request, count: false, token: token)
        case ("POST", 4, "data") where path[1] == "query" && path[3] == "count":
            return try query(className: path[2], request, count: true, token: token)
        case ("POST", 1, "files"): return try storeFile(request, replacing: nil, token: token, host: comps)
        case ("PUT", 2, "files"): return try storeFile(request, replacing: path[1], token: token, host: comps)
        case ("GET", 2, "files"): return try getFile(path[1], userToken: queryItems["userToken"], accept: request.headers["Accept"])
        case ("DELETE", 2, "files"): return try deleteFile(path[1], token: token)
        case ("POST", 1, "logs"): return try log(request, token: token)
        case ("GET", 1, "logLevel"): return try logLevel(token: token)
        case ("POST", 1, "users"): return try createUser(request, token: token)
        case ("DELETE", 2, "users"): return try deleteUser(path[1], token: token, queryToken: queryItems["token"])
        case ("GET", 1, "groups"): return try listGroups(token: token ?? queryItems["token"])
        case ("POST", 1, "groups"): return try createGroup(request, token: token)
        case ("DELETE", 2, "groups"): return try deleteGroup(path[1], token: token ?? queryItems["token"])
        case ("POST", 1, "devices"): return try device(request, token: token)
        default: throw fail(199, "Request not found", status: 404)
        }
    }

    // MARK: Helpers

    /// v4 has no GET anonymousTokens: the route falls through to "not found" ([sdk] apppot-sdk-js v4
    /// src/ts/local-authenticator.ts posts it).

    private func nextCounter() -> Int {
        state.counter += 1
        return state.counter
    }

    private func newToken() -> String { String(format: "%032x", 0xA99_0000 + nextCounter()) }

    private func body(_ request: TransportRequest) throws -> JSON {
        guard let data = request.body, let json = try? JSON.parse(data) else { throw fail(198, "Input parameters are required") }
        return json
    }

    /// A5: 120 when the token expired, 121 when it does not exist. Returns the user.
    private func requireUser(_ token: String?) throws -> Account {
        guard let token, let entry = state.userTokens[token] else {
            if let token, state.anonymousTokens.contains(token) {
                // ASSUMPTION: data calls with the anonymous token are refused as a user/token mismatch (112).
                throw fail(112, "User info and token do not match")
            }
            throw fail(121, "Token does not exist")
        }
        guard entry.expires > state.clock else {
            state.userTokens[token] = nil
            throw fail(120, "Token expired")
        }
        return directory.first { $0.id == entry.userId }!
    }

    /// Anonymous or user token (A5 schemas, devices, logs).
    private func requireAnyToken(_ token: String?) throws -> Account? {
        if let token, state.anonymousTokens.contains(token) { return nil }
        return try requireUser(token)
    }

    /// A7: serverCreateTime/serverUpdateTime are ISO-8601 with a zone offset and ms.
    private func serverTime(_ date: Date) -> String {
        let shifted = date.addingTimeInterval(9 * 3600)
        return String(ISO8601.format(shifted).dropLast()) + "+09:00"
    }

    private func tick() -> Date {
        state.clock.addTimeInterval(1)
        return state.clock
    }

    private func visible(_ row: [String: JSON], to user: Account) -> Bool {
        // A7/A8: scopeType 1 user, 2 group, 3 all; the server filters by scope and groups.
        switch row["scopeType"]?.stringValue ?? "2" {
        case "3": return true
        case "1": return row["createUserId"]?.stringValue == String(user.id)
        default:
            let groups = Set((row["groupIds"]?.stringValue ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "{}"))
                .split(separator: ",").map(String.init))
            return !groups.isDisjoint(with: user.groups.map { String($0.id) })
        }
    }

    /// A7: values come back as strings; the row's keys as the server lists them. A NULL column is answered as
    /// "" (addendum; JS commit 5321b55 "NULL records came back as \"\"").
    private func wireRow(_ row: [String: JSON], table: Table) -> JSON {
        var o = JSONObject()
        o["objectId"] = row["objectId"] ?? .string("")
        for c in table.columns.keys.sorted() where !Self.system.contains(c) { o[c] = stringly(row[c] ?? .null) }
        for c in ["scopeType", "createUserId", "groupIds", "createTime", "updateTime", "serverCreateTime",
                  "serverUpdateTime", "serverRecordStatus"] {
            o[c] = stringly(row[c] ?? .null)
        }
        return .object(o)
    }

    private func stringly(_ v: JSON) -> JSON {
        switch v {
        case .null: .string("")
        case .int(let i): .string(String(i))
        case .double(let d): .string(SimValue.mysqlDouble(d))
        case .bool(let b): .string(b ? "1" : "0")
        default: v
        }
    }

    static let system: Set<String> = ["objectId", "scopeType", "createTime", "updateTime", "serverCreateTime",
                                      "serverUpdateTime", "createUserId", "groupIds", "serverRecordStatus"]

    /// Stores a client value in a column of its wire type (A6: varchar, integer, long); 109 when it does not fit.
    private func store(_ value: JSON, column: String, in table: Table) throws -> JSON {
        if value.isNull { return .null }
        guard let def = table.columns[column] else { throw fail(109, "Input data not valid: unknown column \(column)") }
        switch def.type {
        case "double", "float", "decimal":
            if let d = value.doubleValue ?? value.stringValue.flatMap({ Double($0) }) { return .double(d) }
            throw fail(109, "Input data not valid: \(column) is \(def.type)")
        case "integer", "long", "datetime":
            if let i = value.intValue { return .int(i) }
            if let s = value.stringValue, let i = Int64(s) { return .int(i) }
            if let b = value.boolValue { return .int(b ? 1 : 0) }
            throw fail(109, "Input data not valid: \(column) is \(def.type)")
        default:
            let text: String
            switch value {
            case .string(let s): text = s
            case .int(let i): text = String(i)
            case .double(let d): text = String(d)
            case .bool(let b): text = b ? "1" : "0"
            default: throw fail(109, "Input data not valid: \(column) is varchar")
            }
            // MySQL strict mode: "Data too long for column".
            let limit = def.type == "text" ? 65_535 / 3 : def.length
            if let n = limit, text.count > n {
                throw fail(109, "Input data not valid: \(column) longer than \(n)",
                           fact: "[inferred] MySQL strict mode refuses a value longer than its varchar column (errCode 109)")
            }
            return .string(text)
        }
    }

    // MARK: Auth (A5)

    private func anonymousToken(_ query: [String: String]) throws -> TransportResponse {
        guard let key = query["appKey"], query["deviceUDID"] != nil else { throw fail(198, "Input parameters are required") }
        guard key == options.appKey else { throw fail(101, "App with id does not exist") }
        let token = newToken()
        state.anonymousTokens.insert(token)
        return ok(results: .string(token),
                  fact: "[doc] \(Self.ref) A5 GET anonymousTokens?appKey&deviceUDID (v2, v3) returns the token in results")
    }

    /// v4: `POST anonymousTokens {appKey, account?}` answers an authInfo of role "Anonymous User" (roleId 6).
    private func anonymousTokenV4(_ request: TransportRequest) throws -> TransportResponse {
        let b = try body(request)
        guard let key = b["appKey"]?.stringValue else { throw fail(198, "Input parameters are required") }
        guard key == options.appKey else { throw fail(101, "App with id does not exist") }
        let token = newToken()
        state.anonymousTokens.insert(token)
        let account = b["account"]?.stringValue ?? "anonymous-\(state.counter)"
        let info: JSON = .object([
            "userTokens": .string(token), "validTime": .int(ISO8601.millis(state.clock) + options.validTimeMs),
            "userId": .int(0), "userInfo": .object(["account": .string(account)]),
            "groupsAndRoles": .array([.object(["groupId": .int(0), "groupName": .string("Anonymous"),
                                               "roleName": .string("Anonymous User"), "roleId": .int(6)])]),
        ])
        return ok([("authInfo", info)],
                  fact: "[sdk] apppot-sdk-js v4 spec/login_spec.js + src/ts/local-authenticator.ts: POST anonymousTokens {appKey, account?} answers authInfo.userTokens with role Anonymous User (roleId 6)")
    }

    private func login(_ request: TransportRequest, token: String?) throws -> TransportResponse {
        let b = try body(request)
        let name: String, password: String
        if v4 {
            // v4: {account, password, appKey}, no token needed.
            guard let a = b["account"]?.stringValue, let p = b["password"]?.stringValue, let key = b["appKey"]?.stringValue else {
                throw fail(198, "Input parameters are required")
            }
            guard key == options.appKey else { throw fail(101, "App with id does not exist") }
            (name, password) = (a, p)
        } else {
            guard let token else { throw fail(121, "Token does not exist") }
            guard state.anonymousTokens.contains(token) || state.userTokens[token] != nil else {
                throw fail(121, "Token does not exist")
            }
            guard let n = b["username"]?.stringValue, let p = b["password"]?.stringValue else {
                throw fail(198, "Input parameters are required")
            }
            (name, password) = (n, p)
            if b["isPush"]?.boolValue == true || b["isPush"]?.stringValue == "true" {
                let udid = b["deviceUDID"]?.stringValue ?? ""
                // [doc] A5 (02.Authentication): GetAnonymousToken, then DeviceRegistration, then Login.
                state.pushLogins.append((udid, state.devices.contains(udid)))
                guard state.devices.contains(udid) else { throw fail(163, "Register device before login") }
            }
            let company = b["companyId"]?.stringValue ?? b["companyId"]?.intValue.map { String($0) }
            guard b["appId"]?.stringValue == options.appId, b["appVersion"]?.stringValue == options.appVersion,
                  company == options.companyId else {
                throw fail(104, "appId/appVersion/token mismatch")
            }
        }
        guard let account = directory.first(where: { $0.account == name }) else { throw fail(110, "User does not exist") }
        guard account.password == password else { throw fail(111, "User name or password not correct") }
        let userToken = newToken()
        state.userTokens[userToken] = (account.id, state.clock.addingTimeInterval(Double(options.validTimeMs) / 1000))
        let groups: [JSON] = account.groups.map { g in
            options.nestedGroups
                ? .object(["group": .object(["groupId": .int(Int64(g.id)), "groupName": .string(g.name), "description": .null]),
                           "role": .object(["roleName": .string(g.role)])])
                : .object(["groupId": .int(Int64(g.id)), "groupName": .string(g.name), "roleName": .string(g.role),
                           "description": .null])
        }
        // The v2 login answers validTime as the absolute expiry in epoch ms (addendum, seed 000).
        let expiry = ISO8601.millis(state.clock) + options.validTimeMs
        let info: JSON = .object([
            "userTokens": .string(userToken), "validTime": .int(expiry), "userId": .int(Int64(account.id)),
            "userInfo": .object(["account": .string(account.account), "firstName": .string(account.firstName),
                                 "lastName": .string(account.lastName)]),
            "groupsAndRoles": .array(groups),
        ])
        if v4 {
            return ok([("authInfo", info)],
                      fact: "[sdk] apppot-sdk-js v4 src/ts/local-authenticator.ts: POST auth/login {account, password, appKey} without a token, answered under authInfo")
        }
        return ok([(options.authInfoKey, info)],
                  fact: "[doc] \(Self.ref) A5 POST auth/login {username, password, appId, deviceUDID, isPush, appVersion, companyId} with the anonymous token; answer under authInfor; validTime an absolute epoch-ms expiry (addendum)")
    }

    private func logout(token: String?) throws -> TransportResponse {
        _ = try requireUser(token)
        state.userTokens[token!] = nil
        // A5: logout answers {"status":"OK"}; later calls fail with 121.
        return TransportResponse(status: 200, headers: HTTPFields([("Content-Type", "application/json"), ("X-MBaaS-Fact", "[sdk] apppot-sdk-js v2.3 spec/logout.test.ts + \(Self.ref) A5: POST auth/logout {} answers {status:OK}; the token is unknown afterwards (121)")]),
                            body: JSON.object(["status": "OK"]).data())
    }

    private func user(id: String, token: String?, queryToken: String?) throws -> TransportResponse {
        // Docs 04.2: `users/5?token=XXX`, token (Required); the JS SDK sends it and the header.
        guard let queryToken, !queryToken.isEmpty else {
            throw fail(198, "Input parameters are required",
                       fact: "[doc] docs.apppot.jp 04.2 (\(Self.ref) addendum): GET users/{id} requires ?token=")
        }
        _ = try requireUser(token ?? queryToken)
        _ = try requireUser(queryToken)
        guard let account = directory.first(where: { String($0.id) == id }) else { throw fail(110, "User does not exist") }
        // A10: GET users/{id} gives {user}; ASSUMPTION: its members follow POST users (account, firstName, lastName,
        // groupRoleMap with the nested group/role shape) plus userId.
        let map: [JSON] = account.groups.map {
            .object(["group": .object(["groupId": .int(Int64($0.id)), "groupName": .string($0.name)]),
                     "role": .object(["roleName": .string($0.role)])])
        }
        return ok([("user", .object([
            "userId": .int(Int64(account.id)), "account": .string(account.account), "firstName": .string(account.firstName),
            "lastName": .string(account.lastName), "groupRoleMap": .array(map),
        ]))], fact: "[sdk] apppot-sdk-js v2.3 src/ts/user.ts findById: GET users/{id}?token= answers {user} (members inferred: account, firstName, lastName, groupRoleMap, userId)")
    }

    /// The directory: the provisioned accounts and those administrators created, less those they deleted.
    private var directory: [Account] {
        (accounts + state.created).filter { !state.deletedUsers.contains($0.id) }
    }

    /// [doc] reference A10: POST/PUT/DELETE users (and groups) require the Super Admin or Admin role. The refusal's
    /// errCode is not documented: 107 "App not assigned to user's groups" with HTTP 403 is [inferred].
    private func requireAdministrator(_ token: String?) throws -> Account {
        let user = try requireUser(token)
        guard user.groups.contains(where: { ["Super Admin", "Admin"].contains($0.role) }) else {
            throw fail(107, "User is not an administrator", status: 403,
                       fact: "[inferred] \(Self.ref) A10: user and group administration requires Super Admin or Admin; the refusal's errCode is undocumented")
        }
        return user
    }

    /// `POST users {account, firstName, lastName, password, groupRoleMap}` → `{user}` [doc A10].
    private func createUser(_ request: TransportRequest, token: String?) throws -> TransportResponse {
        _ = try requireAdministrator(token)
        let b = try body(request)
        guard let account = b["account"]?.stringValue, !account.isEmpty, let password = b["password"]?.stringValue, !password.isEmpty else {
            throw fail(198, "Input parameters are required")
        }
        guard !directory.contains(where: { $0.account == account }) else { throw fail(109, "Input data not valid: account exists") }
        var groups: [Group] = []
        for entry in b["groupRoleMap"]?.arrayValue ?? [] {
            let g = entry["group"]?["groupId"] ?? entry["groupId"]
            guard let id = g?.intValue ?? g?.stringValue.flatMap({ Int64($0) }) else { throw fail(109, "Input data not valid: groupId") }
            let name = directory.flatMap(\.groups).first { $0.id == Int(id) }?.name ?? state.groups[Int(id)]?.name ?? "Group \(id)"
            groups.append(Group(id: Int(id), name: name, role: (entry["role"]?["roleName"] ?? entry["roleName"])?.stringValue ?? "User"))
        }
        state.counter += 1
        let id = 100 + state.counter
        let created = Account(id: id, account: account, password: password, firstName: b["firstName"]?.stringValue ?? "",
                              lastName: b["lastName"]?.stringValue ?? "", groups: groups)
        state.created.append(created)
        return ok([("user", .object([
            "userId": .int(Int64(id)), "account": .string(account), "firstName": .string(created.firstName),
            "lastName": .string(created.lastName),
            "groupRoleMap": .array(groups.map { .object(["group": .object(["groupId": .int(Int64($0.id)), "groupName": .string($0.name)]),
                                                         "role": .object(["roleName": .string($0.role)])]) }),
        ]))], fact: "[doc] \(Self.ref) A10: POST users {account, firstName, lastName, password, groupRoleMap} (Super Admin or Admin) answers {user}")
    }

    private func deleteUser(_ id: String, token: String?, queryToken: String?) throws -> TransportResponse {
        _ = try requireAdministrator(token ?? queryToken)
        guard let account = directory.first(where: { String($0.id) == id }) else { throw fail(110, "User does not exist") }
        state.deletedUsers.insert(account.id)
        state.userTokens = state.userTokens.filter { $0.value.userId != account.id }
        return ok(fact: "[doc] \(Self.ref) A10: DELETE users/{id} (Super Admin or Admin)")
    }

    private func allGroups() -> [(id: Int, name: String, description: String)] {
        var seen: [Int: (String, String)] = [:]
        for g in directory.flatMap(\.groups) where seen[g.id] == nil { seen[g.id] = (g.name, "") }
        for (id, g) in state.groups { seen[id] = (g.name, g.description) }
        return seen.keys.sorted().filter { !state.deletedGroups.contains($0) }.map { ($0, seen[$0]!.0, seen[$0]!.1) }
    }

    private func listGroups(token: String?) throws -> TransportResponse {
        _ = try requireUser(token)
        let list: [JSON] = allGroups().map { .object(["groupId": .int(Int64($0.id)), "groupName": .string($0.name), "description": .string($0.description)]) }
        return ok([("groups", .array(list))], fact: "[doc] \(Self.ref) A10: GET groups answers {groups:[{groupId, groupName, description}]}")
    }

    private func createGroup(_ request: TransportRequest, token: String?) throws -> TransportResponse {
        _ = try requireAdministrator(token)
        let b = try body(request)
        guard let name = b["groupName"]?.stringValue, !name.isEmpty else { throw fail(198, "Input parameters are required") }
        state.counter += 1
        let id = 200 + state.counter
        state.groups[id] = (name, b["description"]?.stringValue ?? "")
        return ok([("group", .object(["groupId": .int(Int64(id)), "groupName": .string(name), "description": .string(state.groups[id]!.description)]))],
                  fact: "[doc] \(Self.ref) A10: POST groups answers {group}; [sdk] apppot-sdk-js v2.3 src/ts/group.ts create sends {groupId:null, groupName, isAddCurrentApp, description}")
    }

    private func deleteGroup(_ id: String, token: String?) throws -> TransportResponse {
        _ = try requireAdministrator(token)
        guard let n = Int(id), allGroups().contains(where: { $0.id == n }) else { throw fail(109, "Input data not valid: no group \(id)") }
        state.deletedGroups.insert(n)
        return ok(fact: "[doc] \(Self.ref) A10: DELETE groups/{id}")
    }

    /// `GET users?token=[&groupId=]`: every user of the company with their group memberships.
    private func users(token: String?, queryToken: String?, groupId: String?) throws -> TransportResponse {
        guard let queryToken, !queryToken.isEmpty else {
            throw fail(198, "Input parameters are required",
                       fact: "[sdk] apppot-sdk-js v2.3 src/ts/user.ts list: GET users sends ?token=")
        }
        _ = try requireUser(queryToken)
        let list: [JSON] = directory.filter { a in groupId.map { g in a.groups.contains { String($0.id) == g } } ?? true }.map { a in
            .object([
                "userId": .int(Int64(a.id)), "account": .string(a.account), "firstName": .string(a.firstName),
                "lastName": .string(a.lastName),
                "groupsRoles": .array(a.groups.map {
                    .object(["groupId": .int(Int64($0.id)), "groupName": .string($0.name), "roleName": .string($0.role)])
                }),
            ])
        }
        return ok([("users", .array(list))],
                  fact: "[sdk] apppot-sdk-js v2.3 src/ts/user.ts User.list + spec/user.test.ts: GET users?token=[&groupId=] answers users[] with groupsRoles (any logged-in user may list: inferred)")
    }

    // MARK: Schemas (A6)

    private func schemas(_ request: TransportRequest, token: String?) throws -> TransportResponse {
        _ = try requireAnyToken(token)
        let b = try body(request)
        guard b["appId"]?.stringValue == options.appId, b["appVersion"]?.stringValue == options.appVersion else {
            throw fail(104, "appId/appVersion/token mismatch")
        }
        guard let tables = b["tables"]?.arrayValue else { throw fail(198, "Input parameters are required") }
        if b["isResetDatabase"]?.boolValue == true { state.tables = [:] }  // A6: drops and recreates the tables
        for t in tables {
            guard let name = t["name"]?.stringValue, let cols = t["columns"]?.arrayValue else {
                throw fail(103, "Cannot create app database")
            }
            // ASSUMPTION: without isResetDatabase an existing table is kept as it is (rows and columns).
            if state.tables[name] != nil { continue }
            var table = Table(columns: [:])
            // A6: v2 knows varchar, integer, long; v3 (JS v3 database.ts) adds datetime, double, text, float, decimal.
            let types: Set<String> = v2 ? ["varchar", "integer", "long"]
                : ["varchar", "integer", "long", "datetime", "double", "text", "float", "decimal"]
            for c in cols {
                guard let col = c["colName"]?.stringValue, let type = c["type"]?.stringValue, types.contains(type) else {
                    throw fail(103, "Cannot create app database",
                               fact: "[doc] \(Self.ref) A6 (+ apppot-sdk-js v3 src/ts/database.ts for v3 types): an unknown column type fails table creation (103)")
                }
                table.columns[col] = (type, c["fieldLength"]?.intValue.map { Int($0) })
            }
            // A6/A7: default and server columns (Troubleshoot.md desc: objectId varchar(255), groupIds text).
            for (c, type, length) in [("objectId", "varchar", 255), ("scopeType", "varchar", 255), ("createTime", "long", 0),
                                      ("updateTime", "long", 0), ("serverCreateTime", "varchar", 255),
                                      ("serverUpdateTime", "varchar", 255), ("createUserId", "varchar", 255),
                                      ("groupIds", "text", 0), ("serverRecordStatus", "varchar", 255)]
            where table.columns[c] == nil || c == "objectId" || c == "scopeType" {
                table.columns[c] = (type, length == 0 ? nil : length)
            }
            // MySQL: a row may hold at most 65,535 bytes (varchar n in utf8: 3n+2; text 12).
            let bytes = table.columns.values.reduce(0) { sum, def in
                switch def.type {
                case "varchar": sum + (def.length ?? 255) * 3 + 2
                case "integer", "float": sum + 4
                case "long", "double", "datetime": sum + 8
                case "decimal": sum + 16
                default: sum + 12
                }
            }
            guard bytes <= 65_535 else {
                throw fail(103, "Cannot create app database: row size too large (\(bytes) > 65535)",
                           fact: "[inferred] MySQL refuses a table whose row exceeds 65,535 bytes (\(Self.ref) addendum: the server is MySQL); AppPot answers 103")
            }
            state.tables[name] = table
        }
        return ok(fact: "[doc] \(Self.ref) A6 POST schemas {appId, appVersion, companyId, isResetDatabase, tables}; an existing table is kept unless isResetDatabase (v1 CreateAppData)")
    }

    // MARK: Data (A7)

    private func batch(_ op: String, _ request: TransportRequest, token: String?) throws -> TransportResponse {
        let user = try requireUser(token)
        let b = try body(request)
        guard let name = b["objectName"]?.stringValue else { throw fail(198, "Input parameters are required") }
        // ASSUMPTION: a class that was never created answers 995 ("Table empty or does not exist").
        guard var table = state.tables[name] else { throw fail(995, "Table empty or does not exist") }
        let tx = b["transactionId"]?.stringValue
        if let tx, state.transactions.contains(tx) { throw fail(211, "Transaction Id existed") }  // A7: 211
        let now = tick()
        var results: [JSON] = []
        switch op {
        case "addData":
            guard let rows = b["data"]?.arrayValue else { throw fail(198, "Input parameters are required") }
            var n = 0
            for r in rows {
                guard let fields = r.objectValue else { throw fail(109, "Input data not valid") }
                var row: [String: JSON] = [:]
                for (k, v) in fields where !["serverCreateTime", "serverUpdateTime", "createUserId", "groupIds",
                                              "serverRecordStatus"].contains(k) {
                    row[k] = try store(v, column: k, in: table)
                }
                // A7: objectId server-assigned like {Class}_{epochMillis}; a client may send one.
                let id = row["objectId"]?.stringValue ?? "\(name)_\(ISO8601.millis(now) + Int64(n))"
                n += 1
                if table.rows[id] != nil {
                    results.append(.object(["objectId": "-1"]))  // docs 05.2: a failed row has object id -1
                    continue
                }
                row["objectId"] = .string(id)
                row["scopeType"] = row["scopeType"].flatMap { $0.isNull ? nil : $0 } ?? .string("2")
                row["createUserId"] = .string(String(user.id))
                row["groupIds"] = .string("{" + (try clientGroups(fields["groupIds"], user: user) ?? user.groups.map { String($0.id) }).joined(separator: ",") + "}")
                row["serverCreateTime"] = .string(serverTime(now))
                row["serverUpdateTime"] = .string(serverTime(now))
                row["serverRecordStatus"] = .string("1")
                table.rows[id] = row
                table.order.append(id)
                results.append(.object(["objectId": .string(id), "serverCreateTime": row["serverCreateTime"]!,
                                        "serverUpdateTime": row["serverUpdateTime"]!]))
            }
        case "updateData":
            guard let rows = b["data"]?.arrayValue else { throw fail(198, "Input parameters are required") }
            var updated: [String: [String: JSON]] = [:]
            for r in rows {
                guard let fields = r.objectValue, let id = fields["objectId"]?.stringValue,
                      var row = updated[id] ?? table.rows[id], visible(row, to: user) else {
                    throw fail(130, "Record does not exist or data blocking")
                }
                // A7: a stale serverUpdateTime fails with 130 (the lock is checked when the row carries one).
                if let expected = fields["serverUpdateTime"]?.stringValue, expected != row["serverUpdateTime"]?.stringValue {
                    throw fail(130, "Record does not exist or data blocking")
                }
                for (k, v) in fields where !["objectId", "serverCreateTime", "serverUpdateTime", "createUserId",
                                              "groupIds", "serverRecordStatus"].contains(k) {
                    row[k] = try store(v, column: k, in: table)
                }
                if let groups = try clientGroups(fields["groupIds"], user: user) {
                    row["groupIds"] = .string("{" + groups.joined(separator: ",") + "}")
                }
                row["serverUpdateTime"] = .string(serverTime(now))
                updated[id] = row
                results.append(.object(["objectId": .string(id), "serverCreateTime": row["serverCreateTime"] ?? .null,
                                        "serverUpdateTime": row["serverUpdateTime"]!]))
            }
            for (id, row) in updated { table.rows[id] = row }
        case "deleteData":
            guard let ids = b["objectIds"]?.arrayValue else { throw fail(198, "Input parameters are required") }
            var doomed: [String] = []
            for e in ids {
                guard let id = e["objectId"]?.stringValue, let row = table.rows[id], visible(row, to: user),
                      !doomed.contains(id) else {
                    throw fail(130, "Record does not exist or data blocking")
                }
                if let expected = e["serverUpdateTime"]?.stringValue, expected != row["serverUpdateTime"]?.stringValue {
                    throw fail(130, "Record does not exist or data blocking")
                }
                doomed.append(id)
                results.append(.object(["objectId": .string(id)]))
            }
            for id in doomed {
                table.rows[id] = nil
                table.order.removeAll { $0 == id }
            }
        default:
            throw fail(199, "Request not found", status: 404)
        }
        state.tables[name] = table
        if let tx { state.transactions.insert(tx) }
        return ok(results: .array(results),
                  fact: "[doc] \(Self.ref) A7 POST data/batch/\(op) {objectName, transactionId?, \(op == "deleteData" ? "objectIds[{objectId, serverUpdateTime}]" : "data[rows]")}; results per row in request order (docs 05.2)")
    }

    /// A client-sent `groupIds` (`"1"`, `"1,2"`; docs 05.2's addData example sends `"groupIds":"1"`): kept when
    /// every id is one of the writer's groups (inferred), else errCode 109.
    private func clientGroups(_ value: JSON?, user: Account) throws -> [String]? {
        guard let text = value?.stringValue ?? value?.intValue.map({ String($0) }), !text.isEmpty else { return nil }
        let ids = text.trimmingCharacters(in: CharacterSet(charactersIn: "{}")).split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard !ids.isEmpty, ids.allSatisfy({ id in user.groups.contains { String($0.id) == id } }) else {
            throw fail(109, "Input data not valid: groupIds",
                       fact: "[inferred] a client-sent groupIds naming a group the writer is not in is refused (errCode 109)")
        }
        return ids
    }

    private func getRow(className: String, id: String, token: String?) throws -> TransportResponse {
        let user = try requireUser(token)
        guard let table = state.tables[className] else { throw fail(995, "Table empty or does not exist") }
        // ASSUMPTION: a missing (or invisible) record answers HTTP 404 with errCode 130.
        guard let row = table.rows[id], visible(row, to: user) else {
            throw fail(130, "Record does not exist or data blocking", status: 404,
                       fact: "[inferred] GET data/{Class}/{id} for a missing or invisible record answers HTTP 404 with errCode 130")
        }
        return ok([(className, .array([wireRow(row, table: table)]))],
                  fact: "[doc] \(Self.ref) A7 GET data/{Class}/{id} answers {Class:[row]}, every value a string, NULL as \"\" (addendum, JS commit 5321b55)")
    }

    // MARK: Query (A8)

    private func query(className: String, _ request: TransportRequest, count: Bool, token: String?) throws -> TransportResponse {
        let user = try requireUser(token)
        let b = try body(request)
        guard let table = state.tables[className] else { throw fail(995, "Table empty or does not exist") }
        let alias = b["from"]?["alias"]?.stringValue ?? className
        guard b["from"]?["phyName"]?.stringValue == className else { throw fail(220, "Cannot execute query") }
        var rows = table.order.compactMap { table.rows[$0] }.filter { visible($0, to: user) }
        if let expression = b["where"]?["expression"], let source = expression["source"]?.stringValue {
            let parsed: SimExpr
            do {
                var parser = SimParser(tokens: try SimLexer.tokens(source), alias: alias)
                parsed = try parser.parse()
            } catch {
                throw fail(220, "Cannot execute query: \(error)")
            }
            let params = expression["params"]?.arrayValue ?? []
            guard parsed.placeholders == params.count else { throw fail(220, "Cannot execute query: parameter count") }
            rows = rows.filter { row in (try? parsed.evaluate(row: row, table: table, params: params)) == true }
        }
        if count {
            return ok([("count", .int(Int64(rows.count)))],
                      fact: "[sdk] apppot-sdk-js v2.3 spec/model.test.ts: POST data/query/{Class}/count answers a top-level count ({\"count\":N}; 0 when nothing matched is inferred)")
        }
        var orders: [(String, Bool)] = []
        for o in b["orderBy"]?.arrayValue ?? [] {
            guard let c = o["column"]?.stringValue, c.hasPrefix("#\(alias)."),
                  table.columns[String(c.dropFirst(alias.count + 2))] != nil else {
                throw fail(220, "Cannot execute query: bad orderBy")
            }
            orders.append((String(c.dropFirst(alias.count + 2)), o["type"]?.stringValue?.lowercased() == "desc"))
        }
        if !orders.isEmpty {
            rows.sort { a, b in
                for (col, desc) in orders {
                    let c = SimValue.compare(a[col] ?? .null, b[col] ?? .null, type: table.columns[col]?.type ?? "varchar", column: col)
                    if c == 0 { continue }
                    // MySQL: NULLs sort first ascending, last descending (compare puts NULL lowest).
                    return desc ? c > 0 : c < 0
                }
                return false
            }
        }
        // range.offset: 1-based on v2 (JS v2.3 limit(n, o) sends o+1), 0-based on v3/v4 (JS v3 sends o).
        let skip: Int
        if v2 {
            skip = max(1, Int(b["range"]?["offset"]?.intValue ?? 1)) - 1
        } else {
            skip = max(0, Int(b["range"]?["offset"]?.intValue ?? 0))
        }
        let limit = Int(b["range"]?["limit"]?.intValue ?? 1000)
        let page = Array(rows.dropFirst(skip).prefix(limit))
        // A4/A8: nothing matched answers HTTP 404.
        guard !page.isEmpty else { throw fail(993, "Table empty or does not exist", status: 404) }
        let offsetFact = v2 ? "[sdk] apppot-sdk-js v2.3 spec/select.test.ts + src/ts/model.ts limit(): range.offset is 1-based (offset 11 skips 10 rows)"
            : "[sdk] apppot-sdk-js \(options.generation == "v4" ? "v4" : "v3") spec/select_spec.js + src/ts/model.ts limit(): range.offset is 0-based (offset 10 skips 10 rows)"
        return ok([(alias, .array(page.map { wireRow($0, table: table) }))],
                  fact: "\(offsetFact); \(Self.ref) A8 query body, rows under the alias, NULL as \"\", MySQL collation (case-insensitive text, NULLs first ascending)")
    }

    // MARK: Files (A9)

    private func storeFile(_ request: TransportRequest, replacing old: String?, token: String?, host: URLComponents) throws -> TransportResponse {
        _ = try requireUser(token)
        guard let contentType = request.headers["Content-Type"], let body = request.body,
              let form = try? MultipartForm.decode(body, contentType: contentType),
              let entity = form.part(named: "entity"), let file = form.part(named: "file"),
              let name = (try? JSON.parse(entity.data))?["name"]?.stringValue else {
            throw fail(198, "Input parameters are required")
        }
        if let old {
            // ASSUMPTION: replacing a missing file answers HTTP 404 with errCode 600 (meaning undocumented).
            guard state.files[old] != nil else { throw fail(600, "File not found", status: 404) }
            state.files[old] = nil
            state.fileOrder.removeAll { $0 == old }
        }
        // A9: the server prefixes a UUID to the stored name.
        let n = nextCounter()
        let uuid = String(format: "00000000-0000-4000-8000-%012x", n)
        let stored = "\(uuid)_\(name)"
        state.files[stored] = StoredFile(data: file.data, contentType: file.contentType ?? "application/octet-stream")
        state.fileOrder.append(stored)
        var base = "\(host.scheme ?? "https")://\(host.host ?? "localhost")"
        if let port = host.port { base += ":\(port)" }
        let url = "\(base)/\(options.contextRoot)/api/files/\(percentEncode(stored))"
        return ok(results: .object(["name": .string(stored), "url": .string(url)]),
                  fact: "[doc] \(Self.ref) A9 \(old == nil ? "POST files" : "PUT files/{name}") multipart entity {name} + file; the stored name has a UUID prefix (07.FileAPI)")
    }

    private func getFile(_ name: String, userToken: String?, accept: String?) throws -> TransportResponse {
        _ = try requireUser(userToken)  // A5/A9: GET files/{name}?userToken=
        guard let f = state.files[name] else { throw fail(600, "File not found", status: 404) }
        // JAX-RS (JBoss AS 7.1): a resource producing only octet-stream answers 406 to an Accept it cannot meet.
        if let accept, !accept.isEmpty, !accept.contains("*/*"), !accept.contains("application/*"),
           !accept.contains("octet-stream") {
            return TransportResponse(status: 406, headers: HTTPFields([("Content-Type", "text/html"), ("X-MBaaS-Fact", "[inferred] the server is a JAX-RS app (setup_JBoss_MySQL.md); a download asked for \(accept) is 406 Not Acceptable")]),
                                body: Data("Not Acceptable".utf8))
        }
        return TransportResponse(status: 200, headers: HTTPFields([("Content-Type", "application/octet-stream"), ("X-MBaaS-Fact", "[doc] \(Self.ref) A9 GET files/{name}?userToken= answers the bytes as application/octet-stream (the JS SDK sends no Accept header)")]),
                            body: f.data)
    }

    private func deleteFile(_ name: String, token: String?) throws -> TransportResponse {
        _ = try requireUser(token)
        guard state.files[name] != nil else { throw fail(600, "File not found", status: 404) }
        state.files[name] = nil
        state.fileOrder.removeAll { $0 == name }
        return ok(fact: "[doc] \(Self.ref) A9 DELETE files/{name}")
    }

    // MARK: Logs and devices (A10, A5)

    private func log(_ request: TransportRequest, token: String?) throws -> TransportResponse {
        _ = try requireAnyToken(token)
        let b = try body(request)
        guard let message = b["message"]?.stringValue else { throw fail(198, "Input parameters are required") }
        state.logs.append((b["logLevel"]?.stringValue ?? "MONITOR", message))
        return ok(fact: "[sdk] apppot-sdk-js v2.3 src/ts/apppot.ts: POST logs {message, logLevel}")
    }

    /// `GET logLevel` [doc: seed 000 levels None/Error/Monitor; sdk: Android GET_LOG_LEVEL="/logLevel"]; the answer's
    /// shape (the level under `results`) is [inferred].
    private func logLevel(token: String?) throws -> TransportResponse {
        _ = try requireAnyToken(token)
        return ok(results: .string(state.logLevel),
                  fact: "[inferred] \(Self.ref) addendum seed 000 + Android GET_LOG_LEVEL: GET logLevel answers None, Error or Monitor (under results: inferred)")
    }

    private func device(_ request: TransportRequest, token: String?) throws -> TransportResponse {
        _ = try requireAnyToken(token)
        let b = try body(request)
        guard let udid = b["deviceUDID"]?.stringValue else { throw fail(198, "Input parameters are required") }
        guard !state.devices.contains(udid) else {
            throw fail(161, "The device already registered for this device and app")  // A4/A5
        }
        state.devices.insert(udid)
        return ok(fact: "[doc] \(Self.ref) A5 POST devices {deviceToken, deviceUDID, deviceName, osType}")
    }
}
