import Crypto
import Foundation
import MBaaSCore
import MBaaSSalesforceWire

/// `/services/oauth2/token`, `/revoke` and `/userinfo`.
extension SalesforceCall {
    static func oauth(_ code: String, _ description: String) -> MBaaSError {
        MBaaSError(.unauthorized, description, vendorCode: code)
    }

    /// The password and refresh-token grants [capture: salesforce.md "Authentication"].
    func token() async throws -> TransportResponse {
        guard let form = SalesforceForm.decode(request.body ?? Data()) else {
            throw MBaaSError(.invalidRequest, "the body is not a form", vendorCode: "invalid_request")
        }
        let parsed: SalesforceTokenRequest
        switch SalesforceTokenRequest.parse(form: form) {
        case .success(let r): parsed = r
        case .failure(let e): throw MBaaSError(e.error == "invalid_client_id" ? .unauthorized : .invalidRequest, e.errorDescription, vendorCode: e.error)
        }
        let configuration = dialect.configuration
        guard parsed.clientId == configuration.clientId else { throw Self.oauth("invalid_client_id", "client identifier invalid") }
        let grant: SalesforceDialectState.Grant
        switch parsed.grant {
        case .password(let username, let password):
            guard parsed.clientSecret == configuration.clientSecret else { throw Self.oauth("invalid_client", "invalid client credentials") }
            let session: Session
            do {
                session = try await dialect.store.sharing(session: nil, administrative: false).logIn(username: username, password: password)
            } catch let e as MBaaSError where e.kind == .unauthorized {
                throw Self.oauth("invalid_grant", "authentication failure")
            }
            grant = .init(userId: session.userId, username: username, storeToken: session.token, expires: .distantPast,
                          refreshToken: Self.newToken(prefix: "5Aep861"))
            await dialect.state.keepRefresh(grant.refreshToken!, grant)
        case .refreshToken(let token):
            if let secret = parsed.clientSecret, secret != configuration.clientSecret {
                throw Self.oauth("invalid_client", "invalid client credentials")
            }
            guard let known = await dialect.state.refresh(token) else { throw Self.oauth("invalid_grant", "expired access/refresh token") }
            grant = known
        }
        var issued = grant
        let now = dialect.clock()
        let lifetime = configuration.tokenLifetime.components
        issued.expires = now.addingTimeInterval(Double(lifetime.seconds) + Double(lifetime.attoseconds) / 1e18)
        let accessToken = configuration.organizationId + "!" + Self.newToken(prefix: "AR")
        await dialect.state.issue(accessToken, issued)
        let identity = origin + "/id/" + configuration.organizationId + "/" + grant.userId
        let issuedAt = String(Int64((now.timeIntervalSince1970 * 1000).rounded(.down)))
        let key = SymmetricKey(data: Data(configuration.clientSecret.utf8))
        let signature = Data(HMAC<SHA256>.authenticationCode(for: Data((identity + issuedAt).utf8), using: key)).base64EncodedString()
        // A refresh answers no new refresh token [capture].
        var isRefresh = false
        if case .refreshToken = parsed.grant { isRefresh = true }
        let response = SalesforceTokenResponse(accessToken: accessToken, instanceURL: origin, identityURL: identity,
                                               issuedAt: issuedAt, signature: signature, scope: "api refresh_token",
                                               refreshToken: isRefresh ? nil : grant.refreshToken)
        return Self.json(200, response.json)
    }

    /// Ends an access or refresh token at once (`token=` in the form or the query); 200 with no body [doc].
    func revoke() async throws -> TransportResponse {
        let form = request.body.flatMap { $0.isEmpty ? nil : SalesforceForm.decode($0) } ?? [:]
        guard let token = form["token"] ?? queryItems["token"], !token.isEmpty else {
            throw MBaaSError(.invalidRequest, "token is required", vendorCode: "invalid_request")
        }
        // The store's session goes with the last grant that used it.
        var grant = await dialect.state.grant(token)
        if grant == nil { grant = await dialect.state.refresh(token) }
        guard await dialect.state.revoke(token) else { throw MBaaSError(.invalidRequest, "invalid token", vendorCode: "invalid_token") }
        if let grant, await dialect.state.refresh(grant.refreshToken ?? "") == nil {
            try? await dialect.store.sharing(session: Session(token: grant.storeToken, userId: grant.userId), administrative: false)
                .logOut(confirmWithServer: false)
        }
        return TransportResponse(status: .init(code: 200), headers: [:], body: Data())
    }

    /// The OpenID body of the token's user [doc].
    func userinfo() async throws -> TransportResponse {
        let grant = try await authenticate()
        let user = try await owner.findUser(username: grant.username)
        let first = user?.fields["FirstName"]?.stringValue, last = user?.fields["LastName"]?.stringValue
        let name = [first, last].compactMap { $0 }.joined(separator: " ")
        let info = SalesforceUserInfo(userId: grant.userId, organizationId: dialect.configuration.organizationId,
                                      preferredUsername: grant.username, name: name.isEmpty ? grant.username : name,
                                      email: user?.email, active: true)
        return Self.json(200, info.json)
    }

    /// A random token of letters and digits after `prefix`.
    static func newToken(prefix: String) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        var generator = SystemRandomNumberGenerator()
        return prefix + String((0..<48).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] })
    }
}
