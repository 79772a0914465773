import Foundation
public import MBaaSCore

/// Login against the company's user directory (reference A5).
///
/// - ``logIn(username:password:)``: v2/v3: anonymous token, then `POST auth/login` with
///   `{"username","password","appId","deviceUDID","isPush":false,"appVersion","companyId"}`; v4: `POST auth/login`
///   with `{"account","password","appKey"}` and no token. The answer's `authInfor` (the server's spelling) or
///   `authInfo` gives the user token, its validity (`validTime`), the user id, account and names, and the groups
///   with their roles (flat or nested shape). `validTime` is an absolute epoch-ms time when it is above 10^12
///   (v2 answers `1470000416960`), else a duration in ms (the 2014 v1 sample's `18000000`); see
///   ``AppPotAuthInfo/expiry(now:)``.
/// - The session keeps the user's group ids and role names in `extras` (`groupIds`, `roles`, comma-separated),
///   so a restored session maps ACLs to scopes without a network call.
/// - ``logOut(confirmWithServer:)``: `POST auth/logout {}`; without confirmation it only forgets the session
///   (the AppPot SDKs' logout without `mustSyncWithServer`), which works offline. A server answer that the token
///   is already expired or unknown (120, 121) counts as logged out.
/// - ``currentUser()``: `GET users/{userId}?token=` (the docs call the query token required; the JS SDK sends it
///   and the header). errCode 120/121 there ends the session like anywhere else.
/// - ``signUp(username:password:email:fields:)`` is `unsupported`: AppPot users are created by administrators.
/// - A backend opened from a URL naming a user (`user=`, password as the URL's secret) logs that user in on the
///   first call that needs the session (data, files, ``currentUser()``); calls made while that log-in is under way
///   wait for it (one `POST auth/login`, however many tasks start at once). ``session`` is `nil` until then, and
///   an explicit ``logIn(username:password:)``, ``logOut(confirmWithServer:)`` or ``restore(_:)`` cancels it; a
///   restored session that has expired (`expiresAt` passed) is not used when the URL names a user: that user logs
///   in again on the next call that needs a session (a saved session of the CLI goes stale so).
extension AppPotBackend {
    public func signUp(username: String, password: String, email: String?, fields: [String: Value]) async throws -> Session {
        throw MBaaSError.unsupported("signing users up", by: adapterName, reason: capabilities.note(for: .signUp))
    }

    public func logIn(username: String, password: String) async throws -> Session {
        try await logIn(username: username, password: password, isPush: false)
    }

    /// Log-in with `isPush` (the push flow, ``registerDeviceAndLogIn(username:password:deviceToken:deviceName:osType:)``).
    /// `autoLogin` is the session epoch the URL user's log-in started in (``currentSession()``): its session is kept
    /// only if no explicit log-in, log-out or restore came since (else it throws `CancellationError`). An explicit
    /// log-in starts a new epoch and cancels that one.
    func logIn(username: String, password: String, isPush: Bool, autoLogin epoch: Int? = nil) async throws -> Session {
        guard !username.isEmpty else { throw MBaaSError(.invalidRequest, "user name is empty") }
        let json: JSON?
        if state.value.detectPending { _ = try await anonymousToken() }  // generation=auto: find out first
        if generation.accountLogin {
            let body = AppPotAccountLoginRequest(account: username, password: password, appKey: configuration.appKey)
            (_, json) = try await call(.post, AppPotRoute.login.segments, body: .json(body.json), token: .none)
        } else {
            let body = AppPotLoginRequest(
                username: username, password: password, appId: configuration.appId, deviceUDID: configuration.deviceUDID,
                isPush: isPush, appVersion: configuration.appVersion, companyId: configuration.companyId)
            (_, json) = try await call(.post, AppPotRoute.login.segments, body: .json(body.json), token: .anonymous)
        }
        guard let json else { throw MBaaSError(.decoding, "AppPot login answered an empty body") }
        let info = try AppPotAuthInfo(loginResponse: json)
        var extras: [String: String] = ["groupIds": info.groupIds.joined(separator: ","),
                                        "roles": info.roleNames.joined(separator: ",")]
        if let first = info.firstName { extras["firstName"] = first }
        if let last = info.lastName { extras["lastName"] = last }
        let session = Session(
            token: info.userToken, userId: info.userId, username: info.account ?? username,
            expiresAt: info.expiry(now: context.now), extras: extras)
        // Decided under the lock where log-out and restore start their epochs: the URL user's log-in that one of them
        // (or an explicit log-in) overtook keeps nothing.
        let kept = state.withLock { s -> Bool in
            if let epoch {
                guard s.loginEpoch == epoch else { return false }
            } else {
                s.loginEpoch += 1
                s.autoLogin?.cancel()
                s.autoLogin = nil
            }
            s.session = session
            s.groupIds = info.groupIds
            s.roles = info.roleNames
            s.autoLoginPending = false
            return true
        }
        guard kept else { throw CancellationError() }
        logger.debug("apppot logged in", metadata: ["userId": "\(info.userId)"])
        return session
    }

    public func logOut(confirmWithServer: Bool) async throws {
        let session = state.value.session
        defer {
            state.withLock { s in
                if s.session?.token == session?.token { s.session = nil; s.groupIds = []; s.roles = [] }
                s.autoLoginPending = false
                s.loginEpoch += 1
                s.autoLogin?.cancel()
                s.autoLogin = nil
            }
        }
        guard confirmWithServer, let session else { return }
        let (response, _) = try await send(.post, AppPotRoute.logout.segments, body: .json(.object([:])), token: .user)
        do {
            _ = try check(response, token: Token(value: session.token, anonymous: false))
        } catch let error as MBaaSError {
            if let code = error.numericVendorCode, AppPotErrorCode.endsSession(code) { return }
            throw error
        }
    }

    public func currentUser() async throws -> User {
        guard let session = try await currentSession() else {
            throw MBaaSError(.unauthorized, "not logged in to AppPot")
        }
        let (_, json) = try await call(.get, AppPotRoute.user(session.userId).segments, query: [("token", session.token)], token: .user)
        let info = try AppPotUserInfo(response: json ?? .null)
        let known = state.value
        let groups = info.groupsAndRoles.map { AppPotAuthInfo.distinct($0.map(\.groupId)) } ?? known.groupIds
        let roles = info.groupsAndRoles.map { AppPotAuthInfo.distinct($0.compactMap(\.roleName)) } ?? known.roles
        var fields: [String: Value] = [:]
        if let f = info.firstName ?? session.extras["firstName"] { fields["firstName"] = .string(f) }
        if let l = info.lastName ?? session.extras["lastName"] { fields["lastName"] = .string(l) }
        if let g = info.groupsAndRoles {
            var names: [String: Value] = [:]
            for e in g { if let n = e.groupName { names[e.groupId] = .string(n) } }
            if !names.isEmpty { fields["groupNames"] = .object(names) }
        }
        return User(id: info.userId, username: info.account ?? session.username, groups: groups, roles: roles,
                    fields: fields)
    }

    public var session: Session? {
        get async { state.value.session }
    }

    public func restore(_ session: Session?) async {
        let now = context.now
        let stale = configuration.loginUser != nil && (session?.expiresAt.map { $0 <= now } ?? false)
        let session = stale ? nil : session
        state.withLock { s in
            s.session = session
            s.groupIds = AppPotBackend.list(session?.extras["groupIds"])
            s.roles = AppPotBackend.list(session?.extras["roles"])
            s.autoLoginPending = stale
            s.loginEpoch += 1
            s.autoLogin?.cancel()
            s.autoLogin = nil
        }
    }

    static func list(_ text: String?) -> [String] {
        (text ?? "").split(separator: ",").map(String.init).filter { !$0.isEmpty }
    }
}
