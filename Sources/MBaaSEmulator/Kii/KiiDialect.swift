public import Foundation
public import Logging
public import MBaaSCore
import MBaaSKiiWire

/// The Kii Cloud REST dialect on any server store (``MBaaSCore/ServerStore``): `mbaas serve --dialect kii`.
///
/// Built on `MBaaSKiiWire`, the wire module the Kii client uses: ``KiiRoute`` parses paths, ``KiiQueryRequest``,
/// ``KiiClause`` and `KiiClauseTranslator.query(_:className:maxLimit:)` read queries, ``KiiObjectCodec`` converts
/// objects, ``KiiTokenRequest``/``KiiRegistrationRequest`` read auth bodies, ``KiiACLSubject``/``KiiACLVerb``
/// read ACL paths and ``KiiErrorBody`` writes errors.
///
/// # What it enforces (evidence per rule: [doc], [sdk], [inferred])
/// - Paths under `/api` (``Configuration/basePath``): `/api/oauth2/token` and `/api/apps/{appID}/...`; another
///   app ID (in the path or in `X-Kii-AppID`) is 404 `APP_NOT_FOUND` [doc code, inferred use]; an unknown path is
///   404 with errorCode `NOT_FOUND` [inferred]. The app key is not checked: Kii no longer checks it [doc kii.md
///   §1.2].
/// - Tokens: `Authorization: Bearer` with a token from `/oauth2/token` (user: `{username, password}`, optionally
///   with `grant_type: password` [doc]; admin: `{client_id, client_secret}` with or without `grant_type:
///   client_credentials` when `--client-id`/`--client-secret` are set [sdk, doc]). A token the server does not
///   know is 403 `WRONG_TOKEN` [doc code table: WRONG_TOKEN 403]; a wrong password 400 `invalid_grant` [inferred,
///   kii.md §2.1]. Tokens are the store's sessions (they expire with it; Kii's default lifetime is longer, and a
///   requested `expiresAt` is ignored). No refresh tokens are issued (a refresh is 403 `WRONG_REFRESH_TOKEN`).
///   Registration is `POST /apps/{appID}/users` (201, no token [doc kii.md §2.2]); groups are created with
///   `POST /apps/{appID}/groups` `{name, owner, members}` [sdk Unity `KiiGroup.cs`].
/// - Scopes [doc kii.md §6.2]: app-scope buckets let every caller query and read (READ_OBJECTS_IN_BUCKET) and
///   any authenticated user create; objects are writable by any authenticated user unless their ACL says
///   otherwise. A user-scope bucket is its user's: only that user (or the admin) creates and queries in it, and
///   its objects are private to the user unless an object ACL grants more. Group-scope buckets belong to the
///   group's members. `users/me` needs a user token. Refusals are 401 `UNAUTHORIZED` (UnauthorizedAccessException
///   [doc kii.md §7.1]); anonymous callers may not create [doc: Bucket Access Control].
/// - Objects [doc kii.md §3]: create 201 `ObjectCreationResponse` with `ETag` and `Location`; read with `ETag` and
///   the data type's Content-Type; `PUT` replaces (201 when it creates, `If-None-Match: *` refuses an existing
///   object with 409 `OBJECT_ALREADY_EXISTS`); `POST` + `X-HTTP-Method-Override: PATCH` merges and answers the
///   object; `If-Match` on PUT, PATCH and DELETE: a stale version is 409 `OBJECT_VERSION_IS_STALE`. Object ids
///   follow Kii's rule (`^[a-zA-Z0-9-_.]{2,100}$`, 400 `INVALID_OBJECT_ID` [sdk]); field names starting with `_`
///   are Kii's (dropped from bodies [doc: keys starting `_` are reserved]). An object over
///   ``Configuration/maxObjectSize`` characters is 400 `INVALID_INPUT_DATA` [doc limit 65534, inferred code].
/// - Queries [doc kii.md §4]: `QueryRequest` clauses (`geobox`/`geodistance` are 400 `QUERY_NOT_SUPPORTED`
///   here), one `orderBy`, `bestEffortLimit` (0 or over the maximum means the maximum), `paginationKey`; the COUNT
///   aggregation; a bucket that never held an object is 404 `BUCKET_NOT_FOUND` [doc].
/// - Bodies [doc kii.md §5.1]: `PUT`, `GET`, `HEAD`, `DELETE` on `{object}/body`, with the uploader's
///   Content-Type; no body is 404 `OBJECT_BODY_NOT_FOUND`. Reading needs read access, writing write access
///   [doc: "determined by the ACL set on the object"]. A body over ``Configuration/maxBodySize`` and any
///   request over ``maxRequestBodySize`` are 413 `REQUEST_ENTITY_TOO_LARGE` [inferred: Kii documents no limit
///   for bodies]. A path segment `.`/`..` or one that decodes to `/` never reaches the store (400
///   `INVALID_INPUT_DATA`).
/// - ACLs [doc kii.md §6.1]: an object's ACL is listed, granted and revoked on `{object}/acl`
///   (READ_EXISTING_OBJECT, WRITE_EXISTING_OBJECT; subjects UserID, GroupID, ANY_AUTHENTICATED_USER,
///   ANONYMOUS_USER) by its creator, the scope owner or the admin; a bucket's ACL can be listed (its default) but
///   not changed (403 `OPERATION_NOT_SUPPORTED`, an emulator limit). `UserID:ANONYMOUS_USER` grants every
///   caller [inferred: the store has no anonymous-only principal].
/// - Tolerance [sdk]: a trailing slash, a Content-Type on GET and DELETE, plain `application/json` where a vendor
///   type is documented, `X-Kii-*` headers in any case, `_` keys echoed back in bodies (ignored).
///
/// The emulator is MBaaSKit's reading of Kii, not proof of the vendor: a pass against it proves consistency with
/// that reading (and with the cassettes it is checked against), not with the closed service.
public struct KiiDialect: EmulatorDialect {
    public struct Configuration: Sendable {
        public var appID: String
        public var appKey: String
        /// The app admin's credentials (`--client-id`, `--client-secret`); without them no admin token is issued.
        public var clientID: String?
        public var clientSecret: String?
        /// The REST base path (`/api`).
        public var basePath: String
        /// The largest object, in characters of its JSON (default 65534, kii.md §3.1).
        public var maxObjectSize: Int
        /// The largest object body (file) upload (default 5 MiB).
        public var maxBodySize: Int
        /// The most results a query page holds (default 200).
        public var maxPageSize: Int

        public init(appID: String, appKey: String, clientID: String? = nil, clientSecret: String? = nil,
                    basePath: String = "/api", maxObjectSize: Int = 65534, maxBodySize: Int = 5 << 20,
                    maxPageSize: Int = 200) {
            self.appID = appID
            self.appKey = appKey
            self.clientID = clientID
            self.clientSecret = clientSecret
            self.basePath = basePath
            self.maxObjectSize = maxObjectSize
            self.maxBodySize = maxBodySize
            self.maxPageSize = maxPageSize
        }
    }

    public let name = "kii"
    public let configuration: Configuration
    /// The store: the emulator acts through views of it that hold each request's session.
    public let store: any ServerStore
    let clock: @Sendable () -> Date
    let logger: Logger
    let adminTokens: KiiAdminTokens

    public init(store: any ServerStore, configuration: Configuration, clock: @escaping @Sendable () -> Date = { Date() },
                logger: Logger = Logger(label: "mbaas.emulator.kii")) {
        self.store = store
        self.configuration = configuration
        self.adminTokens = KiiAdminTokens(configuration)
        self.clock = clock
        self.logger = logger
    }

    public var maxRequestBodySize: Int { max(configuration.maxBodySize, configuration.maxObjectSize * 4, 1 << 20) }

    public func requestTooLarge(limit: Int) -> TransportResponse {
        KiiErrorBody(errorCode: "REQUEST_ENTITY_TOO_LARGE", message: "The request is larger than \(limit) bytes").response()
    }

    /// The error body of `error` (``EmulatorDialect/answer(_:to:)``): work stopped for time is 503 `QUERY_TIMEOUT`.
    public func answer(_ error: MBaaSError, to request: TransportRequest) -> TransportResponse {
        KiiErrorBody(error).response()
    }

    /// A `GET` of one object (`…/buckets/B/objects/ID`) on a store whose point reads run to their end
    /// (``MBaaSCore/ServerStore/pointReadsRunToTheirEnd``), unless its scope names a user by e-mail address
    /// (`/users/EMAIL:…/`: a query of the profiles).
    public func isPointRead(_ request: TransportRequest) -> Bool {
        guard request.method == .get, store.pointReadsRunToTheirEnd,
              let path = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.percentEncodedPath,
              case .object(let bucket, _) = KiiRoute.parse(path: path, basePath: configuration.basePath)?.1 else { return false }
        if case .user(let selector) = bucket.scope, selector.hasPrefix("EMAIL:") { return false }
        return true
    }

    /// `kii+http://APP_ID:APP_KEY@host:port` (the Kii client's URL for a plain-HTTP server; add
    /// `?clientID=` with the client secret as the URL's secret for admin mode).
    public func backendURL(host: String, port: Int) -> String {
        let h = host.contains(":") ? "[\(host)]" : host
        let path = configuration.basePath == "/api" ? "" : configuration.basePath
        return "kii+http://\(percentEncode(configuration.appID)):\(percentEncode(configuration.appKey))@\(h):\(port)\(path)"
    }

    public func respond(to request: TransportRequest) async -> TransportResponse {
        let path = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? request.url.path
        if KiiRoute.hasUnsafeSegment(path) {
            return KiiErrorBody(errorCode: "INVALID_INPUT_DATA", message: "A path segment is not allowed").response()
        }
        guard let (appID, route) = KiiRoute.parse(path: path, basePath: configuration.basePath) else {
            return KiiErrorBody(errorCode: "NOT_FOUND", message: "No such resource: \(request.method) \(path)")
                .response(status: 404)
        }
        let headerApp = request.headers["X-Kii-AppID"] ?? basicAuthAppID(request)
        if let appID, appID != configuration.appID {
            return KiiErrorBody(errorCode: "APP_NOT_FOUND", message: "The application \(appID) was not found").response()
        }
        if let headerApp, !headerApp.isEmpty, headerApp != configuration.appID {
            return KiiErrorBody(errorCode: "APP_NOT_FOUND", message: "The application \(headerApp) was not found").response()
        }
        do {
            let call = try await KiiCall(dialect: self, request: request, route: route)
            return try await call.answer()
        } catch let failure as KiiFailure {
            return failure.body.response(status: failure.status)
        } catch {
            let e = MBaaSError.wrap(error)
            if e.kind == .internal || e.kind == .localIO {
                logger.error("kii dialect: \(request.method) \(path) failed: \(e.message)")
            }
            return KiiErrorBody(e).response()
        }
    }

    /// The app ID of an `Authorization: Basic base64(appID:key)` header (kii.md §1.2).
    func basicAuthAppID(_ request: TransportRequest) -> String? {
        guard let auth = request.headers["Authorization"], auth.lowercased().hasPrefix("basic "),
              let data = Data(base64Encoded: String(auth.dropFirst(6)).trimmingCharacters(in: .whitespaces))
        else { return nil }
        return String(decoding: data, as: UTF8.self).split(separator: ":", maxSplits: 1).first.map(String.init)
    }
}

/// A Kii error answer thrown inside a call: the body and, when it differs from the code's, the status.
struct KiiFailure: Error {
    var body: KiiErrorBody
    var status: Int?

    init(_ code: String, _ message: String, status: Int? = nil, extras: JSONObject = [:]) {
        body = KiiErrorBody(errorCode: code, message: message, extras: extras)
        self.status = status
    }
}

/// The admin tokens issued by `/oauth2/token` for the client credentials: ``EmulatorTokens`` keyed with the app id and
/// the client credentials, so every instance serving the app accepts a token any of them issued (nothing is kept in
/// memory); they end when the credentials change.
struct KiiAdminTokens: Sendable {
    private let tokens: EmulatorTokens

    init(_ configuration: KiiDialect.Configuration) {
        tokens = EmulatorTokens(prefix: "admin-", purpose: "kii-admin",
                                credentials: [configuration.appID, configuration.clientID ?? "", configuration.clientSecret ?? ""])
    }

    func issue() -> String { tokens.issue() }

    func contains(_ token: String) -> Bool { tokens.accepts(token) }
}
