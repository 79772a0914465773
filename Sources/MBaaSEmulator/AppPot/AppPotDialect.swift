public import Foundation
public import Logging
public import MBaaSAppPotWire
public import MBaaSCore

/// The AppPot REST dialect (server generation v2) on any server store (``MBaaSCore/ServerStore``): `mbaas serve --dialect apppot`.
///
/// Built on `MBaaSAppPotWire`, the wire module the AppPot client uses: ``AppPotAppPath``/``AppPotRoute`` parse
/// paths, ``AppPotLoginRequest``, ``AppPotSchemaRequest``, ``AppPotWriteRequest``, ``AppPotDeleteRequest`` and
/// ``AppPotQueryBody`` read bodies, ``AppPotQueryTranslator`` reads query expressions into the neutral query, and
/// ``AppPotEnvelope``/``AppPotErrorBody`` write answers.
///
/// The emulator is MBaaSKit's own reading of AppPot: a pass against it proves consistency with that reading (the
/// reference notes `apppot-salesforce.md` and the AppPot SDKs), not with NCDC's closed service.
///
/// # Generation
/// It serves generation **v2** (reference A2, A3; the default of the AppPot client, and what `generation=auto`
/// speaks when `GET anonymousTokens` works): `range.offset` counts from 1, the anonymous token is
/// `GET anonymousTokens`, login takes the v2 body with the anonymous token, columns are `varchar`, `integer` and
/// `long`. v3 and v4 are not served: a v4 `POST anonymousTokens` or account login is errCode 199 "Request not
/// found" (a client on `generation=auto` then tries v4 and fails plainly), and a v3 client's 0-based offsets are
/// read as v2's.
///
/// # What it enforces (evidence per rule: doc, sdk, inferred)
/// - Paths: `/{contextRoot}/api/{companyId}/{appId}/{appVersion}/…` [doc A3]; an unknown path is HTTP 404 errCode
///   199 [inferred]; another company, app or version is errCode 106 "App id or version not correct" [doc code].
/// - Tokens: `GET anonymousTokens?appKey=&deviceUDID=` needs the app key (else 101) [doc A5]; `POST auth/login`
///   needs an anonymous token from it and the app's `appId`/`companyId` (else 104) [doc A5]; every other call needs
///   the user token in `apppot-token` (files: or `?userToken=`, users: or `?token=`) [doc A5]. A missing, unknown or
///   logged-out token is errCode 121 at HTTP 200 [sdk: JS spec/logout.test.ts]; so is an expired one (AppPot
///   documents 120; the store does not tell expired from unknown).
/// - Users come from the company directory: there is no sign-up [doc A5]; the emulator provisions them from a
///   JSON file (see ``ProvisionedUser``). A wrong password or unknown user is 111 [sdk: JS spec/login.test.ts].
/// - Tables must be created with `POST schemas` before use [doc A6]; an existing table is kept unless
///   `isResetDatabase` [doc v1 CreateAppData]; a query on a table that does not exist is errCode 995 [inferred].
/// - Rows: every value answered as a string, NULL as `""` [doc A7, JS commit 5321b55]; system columns
///   `objectId` (`{Class}_{epoch ms}`), `scopeType`, `createUserId`, `groupIds` (`{12}`), `createTime`,
///   `updateTime`, `serverCreateTime`/`serverUpdateTime` (ISO-8601 with milliseconds at +09:00, the server's
///   zone [inferred: AppPot is hosted in Japan; the docs' sample shows +07:00]) and `serverRecordStatus` [doc A7].
///   A column the table does not have is errCode 109 [inferred: AppPot tables have fixed columns].
/// - Scopes [doc A7]: `scopeType` 1 (user) is the writer only, 2 (group, the default) the writer's groups,
///   3 (all) every user of the app; read and write go together. A record outside the caller's scope does not
///   exist for it: a read is HTTP 404 errCode 130, an update or delete errCode 130 [inferred].
/// - Optimistic locking: an update or delete carrying a `serverUpdateTime` other than the record's is errCode
///   130 [doc A7]; without one, last write wins [doc A7: isUsingLockForUpdate defaults to NO].
/// - Queries [doc A8, sdk]: `where.expression` SQL fragments as ``AppPotQueryTranslator`` reads them, `orderBy`,
///   `range` (`limit` default 1000 [inferred], `offset` 1-based); no match is HTTP 404 errCode 993 [sdk: JS commit
///   09f4d0d]; `data/query/{Class}/count` answers `{"count":N}` [sdk]. Joins are errCode 220 (not emulated).
///   MySQL's case-insensitive string comparison is not emulated: comparisons are exact [inferred divergence].
/// - Files [doc A9]: `POST files` (multipart `entity` `{"name"}` + `file`) stores `{uuid}_{name}`; `GET` and
///   `DELETE files/{name}`; a missing file is HTTP 404 errCode 600 [inferred]. A name with `/`, `\`, `..` or a
///   control character is errCode 601 at HTTP 400 and never reaches the disk [inferred]. Files have no scope in
///   AppPot: every user of the app may read and delete them [doc A9: no link to data rows].
/// - Size: a body over ``maxRequestBodySize`` is HTTP 413 errCode 109 "Input data not valid" [inferred: AppPot
///   documents no size error]; a file over ``Configuration/maxFileSize`` likewise.
/// - Tolerance [sdk]: `isPush` as a boolean or a string (AngularJS sample), `companyId` as a number or a
///   string, numbers sent as strings for `long` columns (and the reverse for `varchar`), a trailing slash, and a
///   `Content-Type` on a GET.
public struct AppPotDialect: EmulatorDialect {
    public struct Configuration: Sendable {
        /// The application key `GET anonymousTokens` checks.
        public var appKey: String
        /// The company number (`companyId`).
        public var companyId: String
        /// The application id (`appId`).
        public var appId: String
        /// The application version path segment (default `1.0`).
        public var appVersion: String
        /// The context root (default `apppot`).
        public var contextRoot: String
        /// How long a user token is valid (default 5 hours, the v1 sample's `validTime`).
        public var sessionLifetime: TimeInterval
        /// The largest file (default 10 MiB [inferred]).
        public var maxFileSize: Int
        /// The largest JSON body (default 1 MiB).
        public var maxDocumentSize: Int
        /// What `GET logLevel` answers (None, Error or Monitor; default Monitor: every line is wanted).
        public var logLevel: AppPotServerLogLevel = .monitor

        public init(appKey: String, companyId: String, appId: String, appVersion: String = "1.0",
                    contextRoot: String = "apppot", sessionLifetime: TimeInterval = 5 * 3600,
                    maxFileSize: Int = 10 << 20, maxDocumentSize: Int = 1 << 20) {
            self.appKey = appKey
            self.companyId = companyId
            self.appId = appId
            self.appVersion = appVersion
            self.contextRoot = contextRoot
            self.sessionLifetime = sessionLifetime
            self.maxFileSize = maxFileSize
            self.maxDocumentSize = maxDocumentSize
        }

        var appPath: AppPotAppPath {
            AppPotAppPath(contextRoot: contextRoot, companyId: companyId, appId: appId, appVersion: appVersion)
        }
    }

    /// A user of the company directory, as the `--users` file lists them:
    ///
    /// ```json
    /// [{"username": "alice", "password": "alice-pass", "id": 20, "firstName": "Alice", "lastName": "Sato",
    ///   "groups": [{"groupId": 12, "groupName": "Sales", "roleName": "User"}]},
    ///  {"username": "bob", "password": "bob-pass", "groups": ["Sales"]}]
    /// ```
    ///
    /// `id` (a number; default: 20, 21… in file order), `firstName`, `lastName` and `groups` are optional. A group
    /// is an object (`groupId`, `groupName`, `roleName`, default role `User`) or a group name; a name without an id
    /// gets the id of the same name elsewhere in the file, else 12, 13… A user whose name the store already
    /// has is left as it is (the file may be given again on every start of a `--data` store).
    public struct ProvisionedUser: Sendable, Hashable {
        public var id: String
        public var username: String
        public var password: String
        public var firstName: String?
        public var lastName: String?
        public var groups: [AppPotGroupRole]

        public init(id: String, username: String, password: String, firstName: String? = nil, lastName: String? = nil,
                    groups: [AppPotGroupRole] = []) {
            self.id = id
            self.username = username
            self.password = password
            self.firstName = firstName
            self.lastName = lastName
            self.groups = groups
        }

        /// Reads the `--users` file's JSON (an array, as above).
        public static func list(json: JSON) throws(MBaaSError) -> [ProvisionedUser] {
            let array = try UsersFile.entries(json, shape: "{username, password, groups?}")
            var groupIds: [String: String] = [:]
            var nextGroup = 12
            var users: [ProvisionedUser] = []
            for entry in array {
                for g in entry["groups"]?.arrayValue ?? [] {
                    if let name = g["groupName"]?.stringValue, let id = AppPotGroupRole.idString(g["groupId"]) {
                        groupIds[name] = id
                        if let n = Int(id), n >= nextGroup { nextGroup = n + 1 }
                    }
                }
            }
            for (n, entry) in array.enumerated() {
                let (username, password) = try UsersFile.credentials(entry, index: n, usernameKeys: ["username", "account"])
                var groups: [AppPotGroupRole] = []
                for g in entry["groups"]?.arrayValue ?? [] {
                    if let name = g.stringValue {
                        let id = groupIds[name] ?? { defer { nextGroup += 1 }; return String(nextGroup) }()
                        groupIds[name] = id
                        groups.append(AppPotGroupRole(groupId: id, groupName: name, roleName: "User"))
                    } else {
                        var role = try AppPotGroupRole(json: g)
                        if role.roleName == nil { role.roleName = "User" }
                        groups.append(role)
                    }
                }
                let id = AppPotGroupRole.idString(entry["id"] ?? entry["userId"]) ?? String(20 + n)
                users.append(ProvisionedUser(id: id, username: username, password: password,
                                             firstName: entry["firstName"]?.stringValue, lastName: entry["lastName"]?.stringValue,
                                             groups: groups))
            }
            return users
        }
    }

    public let name = "apppot"
    public let configuration: Configuration
    /// The store: the emulator acts through views of it that hold each request's session.
    public let store: any ServerStore
    let clock: @Sendable () -> Date
    let logger: Logger
    let state: AppPotDialectState

    /// - Parameters:
    ///   - store: the server store holding the app's data (the Local store in memory or a file, or any other ``MBaaSCore/ServerStore``).
    ///   - clock: the server clock (injectable for tests); server times never repeat (each write is at least
    ///     1 ms after the previous one), so `serverUpdateTime` works as a version.
    public init(store: any ServerStore, configuration: Configuration, clock: @escaping @Sendable () -> Date = { Date() },
                logger: Logger = Logger(label: "mbaas.emulator.apppot")) {
        self.store = store
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        self.state = AppPotDialectState(configuration)
    }

    /// Adds the users to the store's directory (users already there by name are kept as they are). Returns the
    /// names added.
    @discardableResult
    public func provision(_ users: [ProvisionedUser]) async throws -> [String] {
        let owner = store.sharing(session: nil, administrative: true)
        var added: [String] = []
        for u in users {
            if try await owner.findUser(username: u.username) != nil { continue }
            var fields: [String: Value] = ["apppotGroups": .string(JSON.array(u.groups.map(\.json)).printed())]
            if let f = u.firstName { fields["firstName"] = .string(f) }
            if let l = u.lastName { fields["lastName"] = .string(l) }
            let stored = try await owner.importUser(
                DirectoryUser(id: u.id, username: u.username, roles: AppPotAuthInfo.distinct(u.groups.compactMap(\.roleName)),
                              groups: AppPotAuthInfo.distinct(u.groups.map(\.groupId)), fields: fields),
                password: .temporary(u.password))
            if stored.id != u.id { logger.warning("apppot: user \(u.username) got id \(stored.id) (id \(u.id) is taken or invalid)") }
            added.append(u.username)
        }
        return added
    }

    /// The multipart envelope around the largest file.
    public var maxRequestBodySize: Int { max(configuration.maxFileSize + 64 << 10, configuration.maxDocumentSize) }

    public func requestTooLarge(limit: Int) -> TransportResponse {
        AppPotErrorBody(code: 109, description: "Input data not valid: the request is larger than \(limit) bytes", httpStatus: 413).response()
    }

    /// The error body of `error` (``EmulatorDialect/answer(_:to:)``): AppPot documents no timeout-style code, so the
    /// server's request deadline answers errCode 131 ("Process error") [inferred from the reference's code list].
    public func answer(_ error: MBaaSError, to request: TransportRequest) -> TransportResponse {
        AppPotErrorBody(error).response()
    }

    /// AppPot answers most errors with HTTP 200 and `"status":"error"` in the body: a success is a 2xx whose body
    /// does not say so.
    public func isSuccess(_ response: TransportResponse) -> Bool {
        guard (200..<300).contains(response.status.code) else { return false }
        return (try? JSON.parse(response.body))?["status"]?.stringValue != "error"
    }

    /// A `GET` of one object (`…/data/CLASS/ID`) on a store whose point reads run to their end
    /// (``MBaaSCore/ServerStore/pointReadsRunToTheirEnd``).
    public func isPointRead(_ request: TransportRequest) -> Bool {
        guard request.method == .get, store.pointReadsRunToTheirEnd, case .route(.object) = configuration.appPath.parse(Self.pathAndQuery(of: request.url).0)
        else { return false }
        return true
    }

    /// `apppot+http://KEY@host:port/apppot?company=N&app=ID&version=V`.
    public func backendURL(host: String, port: Int) -> String {
        let h = host.contains(":") ? "[\(host)]" : host
        return "apppot+http://\(percentEncode(configuration.appKey))@\(h):\(port)/\(configuration.contextRoot)?company=\(percentEncode(configuration.companyId))&app=\(percentEncode(configuration.appId))&version=\(percentEncode(configuration.appVersion))"
    }

    public func respond(to request: TransportRequest) async -> TransportResponse {
        let (path, _) = Self.pathAndQuery(of: request.url)
        let route: AppPotRoute
        switch configuration.appPath.parse(path) {
        case .route(let r): route = r
        case .otherApp: return AppPotErrorBody(code: 106).response()
        case .unknown: return AppPotErrorBody(code: 199, httpStatus: 404).response()
        }
        do {
            let call = AppPotCall(dialect: self, request: request, route: route)
            return try await call.answer()
        } catch {
            let e = MBaaSError.wrap(error)
            if e.kind == .internal || e.kind == .localIO {
                logger.error("apppot dialect: \(request.method) \(path) failed: \(e.message)")
            }
            return AppPotErrorBody(e).response()
        }
    }

    /// The raw path and the decoded query items of a URL as sent.
    static func pathAndQuery(of url: URL) -> (String, [(String, String)]) {
        let text = url.absoluteString
        var rest = Substring(text)
        if let scheme = rest.range(of: "://") {
            rest = rest[scheme.upperBound...]
            rest = rest.firstIndex(of: "/").map { rest[$0...] } ?? "/"
        }
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        let parts = rest.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = parts.first.map(String.init) ?? "/"
        var items: [(String, String)] = []
        if parts.count > 1 {
            for pair in parts[1].split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let decode: (Substring) -> String = { percentDecode(String($0).replacingOccurrences(of: "+", with: " ")) ?? String($0) }
                items.append((decode(kv[0]), kv.count > 1 ? decode(kv[1]) : ""))
            }
        }
        return (path, items)
    }

    // MARK: Server times

    /// The next server time: the clock, but at least 1 ms after the previous one; `reserving` milliseconds are
    /// kept for the rows of one batch (their object ids count up from it).
    func nextServerTime(reserving count: Int = 1) -> Date { state.nextTime(clock(), reserving: count) }

    /// `2026-01-01T09:00:01.000+09:00`.
    static func serverTime(_ date: Date) -> String {
        let ms = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let local = Date(timeIntervalSince1970: Double(ms) / 1000 + 9 * 3600)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: local)
        let millis = Int(((ms % 1000) + 1000) % 1000)
        func pad(_ n: Int, _ w: Int) -> String { let s = String(n); return String(repeating: "0", count: max(0, w - s.count)) + s }
        return "\(pad(c.year!, 4))-\(pad(c.month!, 2))-\(pad(c.day!, 2))T\(pad(c.hour!, 2)):\(pad(c.minute!, 2)):\(pad(c.second!, 2)).\(pad(millis, 3))+09:00"
    }
}

/// The dialect's memory, none of which two instances over one store need to share: anonymous tokens are
/// ``EmulatorTokens`` (signed with the app's key, accepted by every instance), transaction ids live in the store
/// (`_AppPotTransaction`), and the last server time only keeps this instance's times increasing (the store's
/// versions and per-record times order writes across instances; see `AppPotCall.updateData`).
final class AppPotDialectState: @unchecked Sendable {
    private let lock = NSLock()
    private var lastTime: Date = .distantPast
    private let anonymous: EmulatorTokens

    init(_ configuration: AppPotDialect.Configuration) {
        anonymous = EmulatorTokens(prefix: "", purpose: "apppot-anonymous",
                                   credentials: [configuration.companyId, configuration.appId, configuration.appKey])
    }

    func issueAnonymousToken() -> String { anonymous.issue() }

    func isAnonymousToken(_ token: String) -> Bool { anonymous.accepts(token) }

    func nextTime(_ now: Date, reserving count: Int = 1) -> Date {
        lock.lock()
        defer { lock.unlock() }
        let ms = (now.timeIntervalSince1970 * 1000).rounded(.down)
        let last = (lastTime.timeIntervalSince1970 * 1000).rounded(.down)
        let next = max(ms, last + 1)
        lastTime = Date(timeIntervalSince1970: (next + Double(max(1, count) - 1)) / 1000)
        return Date(timeIntervalSince1970: next / 1000)
    }
}
