public import Foundation
public import Logging
public import MBaaSCore
import MBaaSSalesforceWire

/// The Salesforce REST dialect on the embedded store: `mbaas serve --dialect salesforce`.
///
/// Built on `MBaaSSalesforceWire`, the wire module the Salesforce client uses: ``MBaaSSalesforceWire/SalesforceRoute``
/// parses paths, `SalesforceTokenRequest`/`SalesforceTokenResponse`/`SalesforceUserInfo` carry OAuth,
/// `SalesforceRecordCodec` converts records, `SOQLQuery.parse` and `SOQLTranslator` read queries,
/// `SalesforceQueryPage`, `SalesforceSaveResult` and `SalesforceCollectionRequest` carry answers, and
/// `SalesforceErrorItem`/`SalesforceErrorCodec`/`SalesforceOAuthError` write errors. Facts come from
/// `shared/reference/salesforce.md` (its sections are named in ``Fact``).
///
/// # What it enforces (evidence per rule: doc, sdk, capture, inferred)
/// - OAuth 2 at `/services/oauth2/token`: the password grant (`client_id`, `client_secret`, `username`,
///   `password`) and the refresh-token grant (`refresh_token`, `hybrid_refresh` too) [capture/sdk]. An unknown
///   client id is 400 `invalid_client_id` "client identifier invalid", a wrong secret 400 `invalid_client`
///   "invalid client credentials", a wrong user or password 400 `invalid_grant` "authentication failure", an
///   unknown refresh token 400 `invalid_grant` "expired access/refresh token" [capture; doc for `invalid_client`].
///   The answer carries `access_token`, `refresh_token` (the emulator issues one on the password grant too, so
///   that clients can refresh), `instance_url` (the URL the client addressed), `id`, `token_type`, `issued_at`
///   and `signature` (base64 HMAC-SHA256 of `id` + `issued_at` under the client secret [doc]).
/// - Access tokens expire after ``Configuration/tokenLifetime`` (Salesforce's default session timeout is two hours
///   [doc]); `POST /services/oauth2/revoke` (`token=`) ends one at once (an access token, or a refresh token and
///   every access token issued from it) [doc]. `GET /services/oauth2/userinfo` answers the OpenID body [doc]; with
///   no valid token it is 403 `Bad_OAuth_Token`, the body the Mobile SDK refreshes on [sdk].
/// - Every `/services/data` request without a valid `Authorization: Bearer` token is 401
///   `[{"message":"Session expired or invalid","errorCode":"INVALID_SESSION_ID"}]`, an array (simple-salesforce
///   reads `[0]['errorCode']`) [capture/sdk].
/// - sObjects: create 201 `{"id","success":true,"errors":[]}` with a relative `Location`; GET the record with
///   `attributes` (`?fields=` selects); PATCH and DELETE 204 with no body; a missing record 404 `NOT_FOUND`, a
///   deleted one 404 `ENTITY_IS_DELETED`; an `Id` in a body 400 `INVALID_FIELD` [capture/doc].
///   `If-Unmodified-Since` on PATCH: 412 when the record changed after that date, the record untouched; a date
///   that is not an HTTP date is 400 [sdk test / doc].
/// - Query: `/query` and `/query/` (and `/queryAll`) with `q=`; SOQL through the Wire parser, anything else 400
///   `MALFORMED_QUERY` with the row and column; `SELECT COUNT()` is `{totalSize,done:true,records:[]}`; pages of
///   at most 2000 rows (`Sforce-Query-Options: batchSize=N`, 200…2000, makes them smaller) with `totalSize` on
///   every page and a `nextRecordsUrl` path `/services/data/vNN.0/query/<cursor>-<offset>` until the last one;
///   an unknown cursor is 400 `INVALID_QUERY_LOCATOR` [capture/doc].
/// - sObject Collections (`/composite/sobjects`): create (POST), update (PATCH), delete (DELETE `?ids=`), at most 200
///   records, answered 200 with one result per record in order, errors with `statusCode`; with `allOrNone` nothing
///   is written unless every record is valid, and the others say `ALL_OR_NONE_OPERATION_ROLLED_BACK` [doc/sdk].
/// - ContentVersion: a create with base64 `VersionData` stores the bytes as a file; `GET
///   /sobjects/ContentVersion/{id}/VersionData` answers them raw [capture].
/// - A body over ``maxRequestBodySize`` is 413 `[{"errorCode":"REQUEST_ENTITY_TOO_LARGE"}]` [inferred: the REST
///   JSON limit is documented, not its answer].
///
/// Record access is the org's: every user with a valid token reads and writes every record (org-wide default
/// Public Read/Write) [inferred]; there is no per-record ACL on the wire [doc].
///
/// The emulator is an oracle of MBaaSKit's own reading of Salesforce: a pass against it proves consistency with
/// that reading and with simple-salesforce, which drives it in CI, not with an org.
public struct SalesforceDialect: EmulatorDialect {
    public struct Configuration: Sendable {
        /// The connected app's consumer key and secret.
        public var clientId: String
        public var clientSecret: String
        /// How long an access token lives (default two hours).
        public var tokenLifetime: Duration
        /// The org id in identity URLs.
        public var organizationId: String
        /// The largest JSON body (50 MiB [doc]).
        public var maxDocumentSize: Int
        /// Whether each answer names the fact it follows in an `X-MBaaS-Fact` header (for authoring cassettes).
        public var namesFacts = false

        public init(clientId: String, clientSecret: String, tokenLifetime: Duration = .seconds(7200),
                    organizationId: String = "00DMBAASKIT0001", maxDocumentSize: Int = 50 << 20) {
            self.clientId = clientId
            self.clientSecret = clientSecret
            self.tokenLifetime = tokenLifetime
            self.organizationId = organizationId
            self.maxDocumentSize = maxDocumentSize
        }
    }

    /// A user of the org, from the `--users` file: `{"username","password","firstName"?,"lastName"?,"email"?}`.
    public struct ProvisionedUser: Sendable, Hashable {
        public var username: String
        public var password: String
        public var email: String?
        public var firstName: String?
        public var lastName: String?

        public init(username: String, password: String, email: String? = nil, firstName: String? = nil, lastName: String? = nil) {
            self.username = username
            self.password = password
            self.email = email
            self.firstName = firstName
            self.lastName = lastName
        }

        /// Reads the users file's JSON, an array of objects with `username` and `password`.
        public static func list(json: JSON) throws(MBaaSError) -> [ProvisionedUser] {
            var users: [ProvisionedUser] = []
            for (n, entry) in try UsersFile.entries(json, shape: "{username, password, email?, firstName?, lastName?}").enumerated() {
                let (username, password) = try UsersFile.credentials(entry, index: n)
                users.append(ProvisionedUser(username: username, password: password, email: entry["email"]?.stringValue,
                                             firstName: entry["firstName"]?.stringValue, lastName: entry["lastName"]?.stringValue))
            }
            return users
        }

        /// Reads a users file; an unreadable file or bad JSON is `invalidRequest` naming the file.
        public static func read(file path: String) throws(MBaaSError) -> [ProvisionedUser] {
            try list(json: UsersFile.json(file: path))
        }
    }

    public let name = "salesforce"
    public let configuration: Configuration
    public let store: any ServerStore
    let clock: @Sendable () -> Date
    let logger: Logger
    let state: SalesforceDialectState

    public init(store: any ServerStore, configuration: Configuration, clock: @escaping @Sendable () -> Date = { Date() },
                logger: Logger = Logger(label: "mbaas.emulator.salesforce")) {
        self.store = store
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        self.state = SalesforceDialectState()
    }

    /// Adds the users to the store's directory (a user already there by name is kept). Returns the names added.
    @discardableResult
    public func provision(_ users: [ProvisionedUser]) async throws -> [String] {
        let owner = store.sharing(session: nil, administrative: true)
        var added: [String] = []
        for u in users {
            if try await owner.findUser(username: u.username) != nil { continue }
            var fields: [String: Value] = [:]
            if let f = u.firstName { fields["FirstName"] = .string(f) }
            if let l = u.lastName { fields["LastName"] = .string(l) }
            _ = try await owner.importUser(DirectoryUser(id: "", username: u.username, email: u.email, roles: [], groups: [], fields: fields),
                                           password: .temporary(u.password))
            added.append(u.username)
        }
        return added
    }

    public var maxRequestBodySize: Int { configuration.maxDocumentSize }

    public func requestTooLarge(limit: Int) -> TransportResponse {
        naming(.tooLarge, SalesforceCall.errors(413, [SalesforceErrorItem(
            message: "The request body is larger than \(limit) bytes.", errorCode: "REQUEST_ENTITY_TOO_LARGE")]))
    }

    /// The error answer of `error` on `request`'s route (``EmulatorDialect/answer(_:to:)``): the REST error array
    /// (`REQUEST_RUNNING_TOO_LONG` for the server's request deadline), the OAuth form on the OAuth routes.
    public func answer(_ error: MBaaSError, to request: TransportRequest) -> TransportResponse {
        let path = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? request.url.path
        // userinfo answers its errors 403 Bad_OAuth_Token, on which the Mobile SDK refreshes its token: a timeout
        // is no token problem, so it gets the REST error array there.
        guard let parsed = SalesforceRoute.parse(path: path),
              !(parsed.route == .userinfo && QueryTimeLimitExceeded.isTimeLimit(error)) else {
            let (status, item) = SalesforceErrorCodec.restError(for: error)
            return SalesforceCall.errors(status, [item])
        }
        return SalesforceCall(dialect: self, request: request, route: parsed.route,
                              version: parsed.version ?? SalesforceWire.defaultAPIVersion).errorResponse(error)
    }

    /// A `GET` of one record (`/services/data/vXX.X/sobjects/TYPE/ID`) on a store whose point reads run to their end
    /// (``MBaaSCore/ServerStore/pointReadsRunToTheirEnd``).
    public func isPointRead(_ request: TransportRequest) -> Bool {
        guard request.method == .get, store.pointReadsRunToTheirEnd,
              let path = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.percentEncodedPath,
              case .sobject = SalesforceRoute.parse(path: path)?.route else { return false }
        return true
    }

    /// `salesforce+http://CLIENT_ID:CLIENT_SECRET@host:port`.
    public func backendURL(host: String, port: Int) -> String {
        "salesforce+http://\(percentEncode(configuration.clientId)):\(percentEncode(configuration.clientSecret))@"
            + "\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    public func respond(to request: TransportRequest) async -> TransportResponse {
        let path = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? request.url.path
        guard let parsed = SalesforceRoute.parse(path: path) else {
            return naming(.unknownPath, SalesforceCall.errors(404, [SalesforceErrorItem(
                message: "The requested resource does not exist", errorCode: "NOT_FOUND")]))
        }
        let call = SalesforceCall(dialect: self, request: request, route: parsed.route,
                                  version: parsed.version ?? SalesforceWire.defaultAPIVersion)
        let handler = call.handler()
        do {
            let answer = try await handler.run()
            return naming(answer.status.code < 300 ? handler.facts.success : handler.facts.failure, answer)
        } catch {
            let e = MBaaSError.wrap(error)
            if e.kind == .internal || e.kind == .localIO {
                logger.error("salesforce dialect: \(request.method) \(path) failed: \(e.message)")
            }
            return naming(handler.facts.failure, call.errorResponse(e))
        }
    }
}

/// What the dialect remembers between requests: the tokens it issued, query cursors and deleted ids.
actor SalesforceDialectState {
    struct Grant: Sendable {
        var userId: String
        var username: String
        /// The store's session for this user.
        var storeToken: String
        var expires: Date
        var refreshToken: String?
    }

    struct Cursor: Sendable {
        var query: Query
        var selection: [String]
        var total: Int
        var pageSize: Int
    }

    var grants: [String: Grant] = [:]
    var refreshTokens: [String: Grant] = [:]
    var cursors: [String: Cursor] = [:]
    var deleted: Set<String> = []
    /// The type of each id created through this dialect (sObject Collections delete by id alone).
    var types: [String: String] = [:]
    var nextCursor = 1

    func grant(_ token: String) -> Grant? { grants[token] }
    func issue(_ token: String, _ grant: Grant) { grants[token] = grant }
    func refresh(_ token: String) -> Grant? { refreshTokens[token] }
    func keepRefresh(_ token: String, _ grant: Grant) { refreshTokens[token] = grant }

    /// Ends an access token, or a refresh token and every access token issued from it; `false` when unknown.
    func revoke(_ token: String) -> Bool {
        if grants.removeValue(forKey: token) != nil { return true }
        guard refreshTokens.removeValue(forKey: token) != nil else { return false }
        grants = grants.filter { $0.value.refreshToken != token }
        return true
    }

    func open(_ cursor: Cursor) -> String {
        defer { nextCursor += 1 }
        let id = "01g" + String(format: "%015d", nextCursor)
        cursors[id] = cursor
        return id
    }

    func cursor(_ id: String) -> Cursor? { cursors[id] }
    func markDeleted(_ key: String) { deleted.insert(key) }
    func wasDeleted(_ key: String) -> Bool { deleted.contains(key) }
    func remember(_ id: String, type: String) { types[id] = type }
    func typeOf(_ id: String) -> String? { types[id] }
}
