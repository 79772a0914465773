public import Foundation
public import MBaaSCore
@_exported import MBaaSSalesforceWire

/// A Salesforce org as a ``Backend``: sObject records over the REST API, SOQL queries, sObject Collections for
/// batches, ContentVersion for files, OAuth 2 sessions.
///
/// Open one from a URL with ``SalesforceBackendFactory`` (see ``SalesforceConfiguration`` for the forms) or with
/// ``init(configuration:context:)``. Records map as described on ``SalesforceRecordCodec``, queries as on
/// ``SOQLTranslator``; what Salesforce cannot do is listed in ``capabilities`` with the reason and thrown as
/// ``MBaaSError/Kind/unsupported``.
///
/// Sessions: an access token with the org's instance URL. A request answered 401 is replayed once after the
/// session is renewed (the refresh-token grant when there is a refresh token, else the URL's password grant); a
/// second 401 ends the session [sdk: the Mobile SDK refreshes and replays on any 401; simple-salesforce logs in
/// again].
public actor SalesforceBackend: Backend {
    public nonisolated let adapterName = "salesforce"
    public nonisolated let configuration: SalesforceConfiguration
    public nonisolated var capabilities: Capabilities { SalesforceWire.capabilities }
    nonisolated let context: BackendContext

    /// The current session; `extras["instanceURL"]` is the REST base.
    var current: Session?
    /// Field names per sObject type, from describe (for queries that select every field).
    var describeCache: [String: [String]] = [:]

    public init(configuration: SalesforceConfiguration, context: BackendContext = BackendContext()) {
        self.configuration = configuration
        self.context = context
        if case .accessToken(let token) = configuration.credentials {
            current = Session(token: token, userId: "", extras: ["instanceURL": configuration.loginBase])
        }
    }

    /// Opens a backend from a `salesforce://` URL (see ``SalesforceConfiguration``).
    public init(url: BackendURL, context: BackendContext = BackendContext()) throws(MBaaSError) {
        self.init(configuration: try SalesforceConfiguration(url: url), context: context)
    }

    public static var capabilities: Capabilities { SalesforceWire.capabilities }

    nonisolated var version: String { configuration.apiVersion }

    // MARK: Sessions

    /// The session to send with: the current one, else a login as the URL's user.
    func activeSession() async throws -> Session {
        if let current { return current }
        if case .password(_, _, let u?, let p?) = configuration.credentials {
            current = try await tokenGrant(.password(username: u, password: p), username: u)
            return current!
        }
        throw MBaaSError(.unauthorized, "no Salesforce session: log in first, or give ?username= and a password in the URL")
    }

    /// A new session after `stale` was answered 401: the current one if another request renewed it already, else a
    /// refresh, else a new password login with the URL's credentials; `nil` when none is possible.
    func renewed(after stale: Session) async throws -> Session? {
        if let current, current.token != stale.token { return current }
        if let refresh = stale.refreshToken {
            do {
                var s = try await tokenGrant(.refreshToken(refresh), username: stale.username)
                s.refreshToken = s.refreshToken ?? refresh
                if s.userId.isEmpty { s.userId = stale.userId }
                current = s
                return s
            } catch let e as MBaaSError where e.kind == .unauthorized {
                // The refresh token was revoked; a password login may still work.
            }
        }
        if case .password(_, _, let u?, let p?) = configuration.credentials {
            current = try await tokenGrant(.password(username: u, password: p), username: u)
            return current
        }
        return nil
    }

    /// Sends a token grant to the login host and reads the session it returns.
    func tokenGrant(_ grant: SalesforceTokenRequest.Grant, username: String?) async throws -> Session {
        guard case .password(let clientId, let clientSecret, _, _) = configuration.credentials else {
            throw MBaaSError(.unsupported, "an access-token Salesforce URL cannot log in or refresh; give a client id and secret")
        }
        let request = SalesforceTokenRequest(grant: grant, clientId: clientId, clientSecret: clientSecret)
        var headers = HTTPFields()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        headers["Accept"] = "application/json"
        let url = try URL.build(base: configuration.loginBase, path: SalesforceRoute.token.path(version: version))
        let response = try await transmit(TransportRequest(method: .post, url: url, headers: headers, body: request.body,
                                                           timeout: configuration.timeout))
        guard response.isSuccess else { throw SalesforceErrorCodec.error(for: response, now: context.now) }
        let token = try SalesforceTokenResponse(json: try json(response))
        return Session(token: token.accessToken, userId: token.userId ?? "", username: username,
                       refreshToken: token.refreshToken, extras: ["instanceURL": token.instanceURL])
    }

    // MARK: Requests

    /// Sends a REST request on the session: `path` below the instance URL (with its query string when it has one),
    /// replayed once after renewing the session on a 401. Non-2xx answers become ``MBaaSError``.
    func send(_ method: TransportRequest.Method, _ path: String, query: [(String, String)] = [], body: JSON? = nil,
              headers extra: [(String, String)] = []) async throws -> TransportResponse {
        var session = try await activeSession()
        var replayed = false
        while true {
            let request = try buildRequest(method, path, query: query, body: body, headers: extra, session: session)
            let response = try await transmit(request)
            if response.isSuccess { return response }
            if response.status.code == 401, !replayed {
                replayed = true
                if let next = try await renewed(after: session) {
                    session = next
                    continue
                }
            }
            if response.status.code == 401, current?.token == session.token {
                current = nil
            }
            throw SalesforceErrorCodec.error(for: response, now: context.now)
        }
    }

    nonisolated func buildRequest(_ method: TransportRequest.Method, _ path: String, query: [(String, String)], body: JSON?,
                                  headers extra: [(String, String)], session: Session) throws -> TransportRequest {
        let base = session.extras["instanceURL"] ?? configuration.loginBase
        let url: URL
        if path.contains("?") {
            guard let u = URL(string: base + path) else { throw MBaaSError(.invalidRequest, "cannot build a URL from \(path)") }
            url = u
        } else {
            url = try URL.build(base: base, path: path, query: query)
        }
        var headers = HTTPFields()
        headers["Authorization"] = "Bearer " + session.token
        headers["Accept"] = "application/json"
        if body != nil { headers["Content-Type"] = "application/json" }
        for (k, v) in extra { headers[k] = v }
        return TransportRequest(method: method, url: url, headers: headers, body: body.map { $0.data() },
                                timeout: configuration.timeout)
    }

    /// Sends through the transport, turning anything thrown into ``MBaaSError``.
    func transmit(_ request: TransportRequest) async throws -> TransportResponse {
        context.logger.debug("salesforce request", metadata: ["method": "\(request.method)", "path": "\(request.url.path)"])
        do {
            return try await context.transport.send(request)
        } catch {
            throw MBaaSError.wrap(error)
        }
    }

    nonisolated func json(_ response: TransportResponse) throws -> JSON {
        do { return try response.json() } catch { throw MBaaSError.wrap(error) }
    }

    nonisolated func path(_ route: SalesforceRoute) -> String { route.path(version: version) }
}
