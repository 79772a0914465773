import Foundation
public import MBaaSCore
@_exported import MBaaSAppPotWire

/// A client of one AppPot app (NCDC's mBaaS), speaking the REST API of the server generation the URL names
/// (`generation=v2|v3|v4|auto`, default v2; see ``AppPotGeneration``) under
/// `/{contextRoot}/api/{companyId}/{appId}/{appVersion}/`.
///
/// ```swift
/// let backend = try await registry.open("apppot://APP_KEY@trial.apppot.net/apppot?company=24&app=jp.co.example.App&version=1.0")
/// try await backend.logIn(username: "alice", password: "...")
/// let memo = try await backend.create(Record(className: "Memo", fields: ["title": "rent", "money": 50]))
/// ```
///
/// # Sessions and tokens
/// The adapter gets an anonymous token (`GET anonymousTokens`; `POST` on v4) when it first needs one, logs in
/// (`POST auth/login`, with the anonymous token before v4) and then sends the user token as `apppot-token`. The anonymous token serves only what the
/// reference documents for it: login, device registration, schema creation and logs. Data and file calls need a
/// user session and are ``MBaaSError/Kind/unauthorized`` without one (no request is sent), unless the URL option
/// `anonymousData=true` says the server accepts the anonymous token for them. Token expiry (errCode 120) and an
/// unknown token (121) end the session.
///
/// # Classes
/// AppPot stores rows in tables that must exist before data is written (`POST schemas`). ``defineClass(_:columns:resetDatabase:)``
/// and ``defineClass(_:resetDatabase:)`` (from a typed ``Model``) create them; creating a record in a class this
/// client does not know yet defines the class from the record's fields first (see
/// ``AppPotColumnType/derived(from:)``). Values come back as strings and are converted with the class's schema
/// as this client knows it; ``registerClass(_:)`` declares a class that already exists without a server call.
/// The server never tells column types (v2's only schema read, `GET schemas`, checks existence), so this client
/// does not guess them: reading or updating rows of a class it has no schema for is
/// ``MBaaSError/Kind/invalidRequest`` naming the class and the columns the server answered (register it first, or
/// open with `untypedReads=true` to get the strings as the server sends them). Before a first record defines
/// a class, the adapter asks the server for one row of it: when the class already holds rows, it refuses
/// rather than cache column types derived from the record; a schema derived for a class whose first write then
/// fails is forgotten, so a wrong one is never kept.
/// A field that is not a column of a known class is ``MBaaSError/Kind/invalidRequest``: AppPot tables have fixed
/// columns.
///
/// # Scopes
/// A record written without an ACL gets the URL's `defaultScope` (default `group`, as every AppPot SDK writes:
/// the writer's groups may read and write it). `defaultScope=all` shares such records with every user of the
/// app; `defaultScope=user` keeps them to their writer. An ACL no scope expresses is refused (`unsupported`);
/// ``narrowedACL(_:)`` tells, without writing, the ACL such a record can have instead (user scope: the writer's own),
/// which a migration writes, and says so.
///
/// # NULL and empty strings
/// The server answers a NULL column as `""`. The adapter reads `""` as absent in every column type; for varchar
/// and text columns that means an empty string written to AppPot reads back as absent (the server cannot tell
/// the two apart).
///
/// # Versions
/// `serverUpdateTime` is the record's ``MBaaSCore/Record/version``. An update or delete sends the version the
/// caller expects (or the current one, read first, when the caller gives none); a stale one is answered with
/// errCode 130 and thrown as ``MBaaSError/Kind/conflict``.
///
/// Instances are independent: each has its own session, schema cache and transport. Safe to use from many tasks.
public final class AppPotBackend: Backend, BackendAdministration {
    public let configuration: AppPotConfiguration
    public let context: BackendContext
    public var adapterName: String { "apppot" }
    public var capabilities: Capabilities { AppPotCapabilities.standard }

    let state = Locked(AppPotClientState())
    /// Log lines kept until ``flushLogs()``.
    let logBuffer = Locked<[(AppPotLogLevel, String)]>([])
    /// Distinguishes this instance's transaction ids from every other client's.
    let instanceNonce = String(UUID().uuidString.prefix(8)).lowercased()

    public init(configuration: AppPotConfiguration, context: BackendContext = BackendContext()) {
        self.configuration = configuration
        self.context = context
        state.withLock {
            $0.autoLoginPending = configuration.loginUser != nil
            $0.generation = configuration.generation
            $0.detectPending = configuration.detectGeneration
        }
    }

    /// Opens from a backend URL (see ``AppPotConfiguration``). Sends nothing: a user the URL names is logged in
    /// by the first call that needs the session; the classes of its `schemas=FILE` are declared.
    public convenience init(url: BackendURL, context: BackendContext = BackendContext()) throws {
        self.init(configuration: try AppPotConfiguration(url: url), context: context)
        try declareSchemasFile()
    }

    var logger: Logger { context.logger }

    /// The server generation spoken now (see ``AppPotGeneration``).
    public var generation: AppPotGeneration { state.value.generation }
}

/// Mutable state of one client, behind a lock.
struct AppPotClientState: Sendable {
    var session: Session?
    var groupIds: [String] = []
    var roles: [String] = []
    var anonymousToken: String?
    /// The URL's user has not been logged in yet (cleared by the first attempt and by logIn/logOut/restore).
    var autoLoginPending = false
    /// The URL user's log-in while it is under way, which every call needing the session waits for.
    var autoLogin: Task<Session, any Error>?
    /// Bumped by every explicit log-in, log-out and restore: an auto-login started in an earlier epoch keeps nothing.
    var loginEpoch = 0
    /// Classes being defined from a first write, which concurrent first writes wait for.
    var definingClasses: [String: Task<AppPotClassSchema, any Error>] = [:]
    /// Classes rows were written with: their schemas are the tables', never forgotten.
    var confirmedClasses: Set<String> = []
    /// Classes this client defined on the server (``AppPotBackend/definedFieldTypes``).
    var definedClasses: Set<String> = []
    var schemas: [String: AppPotClassSchema] = [:]
    /// The generation spoken (the URL's, or the detected one with `generation=auto`).
    var generation: AppPotGeneration = .v2
    /// `generation=auto` has not seen the server's first anonymous-token answer yet.
    var detectPending = false
    var transactionCounter = 0
    var boundaryCounter = 0
}

// MARK: - Requests

extension AppPotBackend {
    /// Which token a call sends as `apppot-token`.
    enum TokenUse {
        /// No token (the anonymous token request itself).
        case none
        /// The anonymous token (login, device registration).
        case anonymous
        /// The user token; no session is `unauthorized` (unless `anonymousData`).
        case user
        /// The user token when logged in, else the anonymous token (schemas, logs).
        case userOrAnonymous
    }

    /// The body of a request.
    enum Body {
        case none
        case json(JSON)
        case multipart(MultipartForm)
    }

    /// A token and whether it is the anonymous one.
    struct Token {
        var value: String?
        var anonymous: Bool
    }

    func token(for use: TokenUse) async throws -> Token {
        switch use {
        case .none: return Token(value: nil, anonymous: false)
        case .anonymous: return Token(value: try await anonymousToken(), anonymous: true)
        case .user:
            if let s = try await currentSession() { return Token(value: s.token, anonymous: false) }
            if configuration.anonymousData { return Token(value: try await anonymousToken(), anonymous: true) }
            throw MBaaSError(.unauthorized, "AppPot data and file calls need a logged-in user: log in first (on the command line `mbaas auth login URL USER`, or add user=USER to the URL with the password as its secret, apppot://APP_KEY:PASSWORD@…&user=USER; in Swift logIn(username:password:)), or open with anonymousData=true if your server accepts the anonymous token")
        case .userOrAnonymous:
            if let s = try await currentSession() { return Token(value: s.token, anonymous: false) }
            return Token(value: try await anonymousToken(), anonymous: true)
        }
    }

    /// The session, logging in the URL's user first when that is still pending. The log-in is made once, whoever
    /// asks: calls that need the session while it is under way wait for it, and share its outcome (a failed
    /// attempt is not repeated unless it failed for want of a response).
    func currentSession() async throws -> Session? {
        while true {
            let (session, login, epoch) = state.withLock { s -> (Session?, Task<Session, any Error>?, Int) in
                if let session = s.session { return (session, nil, s.loginEpoch) }
                if let running = s.autoLogin { return (nil, running, s.loginEpoch) }
                guard s.autoLoginPending, let user = configuration.loginUser, let password = configuration.loginPassword else {
                    return (nil, nil, s.loginEpoch)
                }
                s.autoLoginPending = false
                let epoch = s.loginEpoch
                let task = Task { try await self.logIn(username: user, password: password, isPush: false, autoLogin: epoch) }
                s.autoLogin = task
                return (nil, task, epoch)
            }
            if let session { return session }
            guard let login else { return nil }
            do {
                let session = try await login.value
                state.withLock { if $0.autoLogin == login { $0.autoLogin = nil } }
                return session
            } catch {
                // Overtaken by an explicit log-in, log-out or restore (however the cancelled request ended): what the
                // session is now decides, unless this caller itself was cancelled.
                if state.value.loginEpoch != epoch, !Task.isCancelled { continue }
                let e = MBaaSError.wrap(error)
                state.withLock { s in
                    guard s.autoLogin == login else { return }
                    s.autoLogin = nil
                    if e.kind == .transport, s.session == nil { s.autoLoginPending = true }
                }
                throw e
            }
        }
    }

    /// The anonymous token, fetched once: `GET anonymousTokens?appKey&deviceUDID` (v2, v3; reference A5) or
    /// `POST anonymousTokens {"appKey"}` (v4, JS v4 `local-authenticator.ts`). With `generation=auto` a GET that
    /// the server does not know (HTTP 404/405, errCode 199) means a v4 server: the POST follows and v4 is spoken
    /// from then on.
    func anonymousToken(refresh: Bool = false) async throws -> String {
        if !refresh, let t = state.value.anonymousToken { return t }
        let json: JSON?
        if generation.postsAnonymousToken {
            json = try await postAnonymousToken()
        } else if state.value.detectPending {
            let (response, _) = try await send(.get, AppPotRoute.anonymousTokens.segments,
                                               query: [("appKey", configuration.appKey), ("deviceUDID", configuration.deviceUDID)],
                                               token: .none)
            switch AppPotEnvelope.check(response) {
            case .success(let j):
                state.withLock { $0.detectPending = false }
                json = j
            case .failure(let error):
                guard [404, 405].contains(response.status.code) || error.vendorCode == "199" else { throw error }
                state.withLock { $0.generation = .v4; $0.detectPending = false }
                logger.info("apppot server has no GET anonymousTokens: speaking v4")
                json = try await postAnonymousToken()
            }
        } else {
            (_, json) = try await call(.get, AppPotRoute.anonymousTokens.segments,
                                       query: [("appKey", configuration.appKey), ("deviceUDID", configuration.deviceUDID)],
                                       token: .none)
        }
        let token = try AppPotAnonymousTokenCodec.token(json)
        state.withLock { $0.anonymousToken = token }
        return token
    }

    private func postAnonymousToken() async throws -> JSON? {
        let (_, json) = try await call(.post, AppPotRoute.anonymousTokens.segments,
                                       body: .json(AppPotAnonymousTokenCodec.v4Body(appKey: configuration.appKey)),
                                       token: .none)
        return json
    }

    /// Sends a request and returns the raw response (not checked), with the token it used. `accept` is the
    /// `Accept` header (`nil`: none, as for downloads, which the server serves as octet-stream).
    func send(_ method: TransportRequest.Method, _ path: [String], query: [(String, String)] = [], body: Body = .none,
              token use: TokenUse, idempotencyKey: String? = nil,
              accept: String? = "application/json") async throws -> (TransportResponse, Token) {
        let token = try await token(for: use)
        var headers: HTTPFields = [:]
        if let accept { headers["Accept"] = accept }
        var data: Data?
        switch body {
        case .none: break
        case .json(let j):
            headers["Content-Type"] = "application/json"
            data = j.data()
        case .multipart(let form):
            headers["Content-Type"] = form.contentType
            data = form.encoded()
        }
        if let t = token.value { headers["apppot-token"] = t }
        let url: URL
        do { url = try configuration.url(path, query: query) } catch { throw MBaaSError.wrap(error) }
        let request = TransportRequest(method: method, url: url, headers: headers, body: data, timeout: configuration.timeout,
                                       idempotencyKey: idempotencyKey)
        logger.debug("apppot request", metadata: ["method": "\(method)", "path": "\(path.first ?? "")"])
        do {
            return (try await context.transport.send(request), token)
        } catch {
            throw MBaaSError.wrap(error)
        }
    }

    /// Checks a response: returns its JSON (nil for an empty or non-JSON success body) or throws the envelope's
    /// error. Token errors (120, 121) end the session when the user token was used, and are reported so the
    /// caller may retry with a fresh anonymous token.
    func check(_ response: TransportResponse, token: Token) throws -> JSON? {
        switch AppPotEnvelope.check(response) {
        case .success(let json): return json
        case .failure(let error):
            if let code = error.numericVendorCode, AppPotErrorCode.endsSession(code) {
                if token.anonymous {
                    state.withLock { if $0.anonymousToken == token.value { $0.anonymousToken = nil } }
                } else if token.value != nil {
                    state.withLock { s in
                        if s.session?.token == token.value { s.session = nil; s.groupIds = []; s.roles = [] }
                    }
                    logger.info("apppot session ended by the server", metadata: ["errCode": "\(code)"])
                }
            }
            throw error
        }
    }

    /// Sends and checks; an anonymous token the server no longer knows (120/121) is fetched again once.
    @discardableResult
    func call(_ method: TransportRequest.Method, _ path: [String], query: [(String, String)] = [], body: Body = .none,
              token use: TokenUse, idempotencyKey: String? = nil) async throws -> (TransportResponse, JSON?) {
        var attempt = 0
        while true {
            let (response, token) = try await send(method, path, query: query, body: body, token: use,
                                                   idempotencyKey: idempotencyKey)
            do {
                return (response, try check(response, token: token))
            } catch let error as MBaaSError {
                attempt += 1
                if token.anonymous, attempt == 1, let code = error.numericVendorCode,
                   AppPotErrorCode.endsSession(code) {
                    continue
                }
                throw error
            }
        }
    }

    /// A fresh duplicate-submit guard when the URL asks for them (`transactions=true`), else `nil`:
    /// `{deviceUDID}_{epoch ms}_{instance}_{n}` (reference A7 samples `deviceUDID_20142305104705.550`). The server
    /// remembers every id it has seen, so ids must never repeat across clients of the app: the instance part is
    /// random, which is why recorded conformance runs leave this off (their requests must replay byte for byte).
    func nextTransactionId() -> String? {
        guard configuration.transactionIds else { return nil }
        let n = state.withLock { s -> Int in
            s.transactionCounter += 1
            return s.transactionCounter
        }
        return "\(configuration.deviceUDID)_\(ISO8601.millis(context.now))_\(instanceNonce)_\(n)"
    }

    /// A deterministic multipart boundary (random ones would make recorded uploads differ on every run).
    func nextBoundary() -> String {
        let n = state.withLock { s -> Int in
            s.boundaryCounter += 1
            return s.boundaryCounter
        }
        return "mbaaskit-apppot-\(n)"
    }

    /// The logged-in user's id and groups (`nil` user without a session), logging in the URL's user if pending.
    func identity() async throws -> (userId: String?, groupIds: [String]) {
        _ = try await currentSession()
        let s = state.value
        return (s.session?.userId, s.groupIds)
    }
}
