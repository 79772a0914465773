import Foundation
public import MBaaSCore
import MBaaSKiiWire

/// Users and sessions (kii.md §2).
///
/// - ``signUp(username:password:email:fields:)`` registers with `POST /apps/{appID}/users` (custom fields become
///   Kii user attributes) and then logs in, as the SDKs do; a taken name is `USER_ALREADY_EXISTS` →
///   ``MBaaSError/Kind/duplicate``.
/// - ``logIn(username:password:)`` calls `POST /oauth2/token`; the user name may be a login name, an e-mail, a
///   `+`-phone number or an `EMAIL:`/`PHONE:` selector. `invalid_grant` → ``MBaaSError/Kind/unauthorized``.
/// - Tokens expire after `expires_in` seconds; with a refresh token (issued when the app's token policy enables it)
///   the session is refreshed automatically when less than five minutes remain, or with ``refreshSession()``.
/// - ``logOut(confirmWithServer:)`` is local: Kii has no revocation call, so with `confirmWithServer` the session
///   is cleared and ``MBaaSError/Kind/unsupported`` thrown.
/// - ``currentUser()`` is `GET /apps/{appID}/users/me`.
extension KiiBackend {
    public var session: Session? { userSession }

    public func restore(_ session: Session?) async {
        userSession = session
    }

    public func signUp(username: String, password: String, email: String?, fields: [String: Value]) async throws -> Session {
        if let problem = KiiRegistrationRequest.problem(loginName: username, password: password) {
            throw MBaaSError(.invalidRequest, "sign-up: \(problem)")
        }
        var custom = JSONObject()
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
            if key.hasPrefix("_") || ["loginName", "password", "emailAddress"].contains(key) {
                throw MBaaSError(.invalidRequest, "sign-up field '\(key)' is reserved by Kii")
            }
            custom[key] = KiiObjectCodec.kiiJSON(value)
        }
        // `displayName` and `phoneNumber` are Kii's own user attributes.
        let displayName = custom["displayName"]?.stringValue, phone = custom["phoneNumber"]?.stringValue
        if displayName != nil { custom["displayName"] = nil }
        if phone != nil { custom["phoneNumber"] = nil }
        let registration = KiiRegistrationRequest(loginName: username, password: password, emailAddress: email,
                                                  phoneNumber: phone, displayName: displayName, custom: custom)
        // Registration is made without a user token (kii.md §2.2), whatever session this instance holds.
        let response = try await transmit(try requests.register(registration))
        guard response.isSuccess else { throw KiiErrorCodec.error(for: response, authenticated: false, now: context.now) }
        return try await logIn(username: username, password: password)
    }

    public func logIn(username: String, password: String) async throws -> Session {
        let response = try await transmit(try requests.token(.password(username: username, password: password, expiresAt: nil)))
        guard response.isSuccess else {
            // A failed login leaves the current session as it was.
            throw KiiErrorCodec.error(for: response, authenticated: false, now: context.now)
        }
        let token = try KiiTokenResponse(json: try json(response))
        let session = token.session(username: username, now: context.now)
        refreshTask?.cancel()
        refreshTask = nil
        userSession = session
        return session
    }

    /// Exchanges the session's refresh token for a new token pair (kii.md §2.1). Concurrent callers share one
    /// refresh. A refused refresh (`WRONG_REFRESH_TOKEN`) ends the session and is ``MBaaSError/Kind/unauthorized``.
    @discardableResult
    public func refreshSession() async throws -> Session {
        if let task = refreshTask { return try await task.value }
        guard let current = userSession else { throw MBaaSError(.unauthorized, "no Kii session to refresh; log in first") }
        guard let refreshToken = current.refreshToken else {
            throw MBaaSError(.unsupported, "the Kii session has no refresh token (the app's token policy does not issue one)")
        }
        let request = try requests.token(.refresh(refreshToken: refreshToken))
        let task = Task<Session, any Error> { [context] in
            let response: TransportResponse
            do { response = try await context.transport.send(request) } catch { throw MBaaSError.wrap(error) }
            guard response.isSuccess else { throw KiiErrorCodec.error(for: response, authenticated: false, now: context.now) }
            let body: JSON
            do { body = try response.json() } catch { throw MBaaSError.wrap(error) }
            return try KiiTokenResponse(json: body).session(username: current.username, now: context.now)
        }
        refreshTask = task
        defer { refreshTask = nil }
        do {
            let renewed = try await task.value
            if userSession?.token == current.token { userSession = renewed }
            return renewed
        } catch let error as MBaaSError {
            if userSession?.token == current.token { userSession = nil }
            var e = error
            if e.kind != .transport { e.kind = .unauthorized }
            e.message = "Kii token refresh failed, the session has ended: " + e.message
            throw e
        }
    }

    public func logOut(confirmWithServer: Bool) async throws {
        userSession = nil
        refreshTask?.cancel()
        refreshTask = nil
        if confirmWithServer {
            throw MBaaSError.unsupported("server logout", by: "kii", reason: capabilities.note(for: .serverLogout))
        }
    }

    public func currentUser() async throws -> User {
        guard userSession != nil else {
            throw MBaaSError(.unauthorized, "no Kii session: log in first")
        }
        let used = userSession?.token
        do {
            let response = try await send(try requests.me(), requireUser: true)
            return try KiiUserRecord(json: try json(response)).user
        } catch var error as MBaaSError where error.httpStatus == 401 || error.httpStatus == 403 {
            // users/me refuses only a token it no longer accepts: the session has ended.
            if userSession?.token == used { userSession = nil }
            error.kind = .unauthorized
            throw error
        }
    }
}
