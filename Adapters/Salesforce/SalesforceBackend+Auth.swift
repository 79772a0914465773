public import Foundation
public import MBaaSCore
import MBaaSSalesforceWire

/// Users: the OAuth password grant logs in, `revoke` logs out, `userinfo` names the current user. Salesforce has
/// no self sign-up through the REST API (users are provisioned in the org): ``signUp(username:password:email:fields:)``
/// is `unsupported`.
extension SalesforceBackend {
    public func signUp(username: String, password: String, email: String?, fields: [String: Value]) async throws -> Session {
        throw MBaaSError.unsupported("sign-up", by: adapterName, reason: capabilities.note(for: .signUp))
    }

    /// The password grant with the URL's client id and secret; a wrong user or password is `unauthorized`
    /// (`invalid_grant`, "authentication failure") and leaves the previous session.
    public func logIn(username: String, password: String) async throws -> Session {
        let session = try await tokenGrant(.password(username: username, password: password), username: username)
        current = session
        return session
    }

    /// Revokes the access token (`POST /services/oauth2/revoke`, form `token=`) when asked to, then forgets the
    /// session in every case.
    public func logOut(confirmWithServer: Bool) async throws {
        guard let session = current else { return }
        current = nil
        guard confirmWithServer else { return }
        let base = session.extras["instanceURL"] ?? configuration.loginBase
        var headers = HTTPFields()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        let url = try URL.build(base: base, path: path(.revoke))
        let response = try await transmit(TransportRequest(method: .post, url: url, headers: headers,
                                                           body: SalesforceForm.encode([("token", session.token)]),
                                                           timeout: configuration.timeout))
        guard response.isSuccess else { throw SalesforceErrorCodec.error(for: response, now: context.now) }
    }

    /// `GET /services/oauth2/userinfo`: the user's id (`005…`), user name and e-mail. A 401 after the replay ends
    /// the session (``session`` is then `nil`).
    public func currentUser() async throws -> User {
        guard current != nil else { throw MBaaSError(.unauthorized, "not logged in to Salesforce") }
        let response = try await send(.get, path(.userinfo))
        let info = try SalesforceUserInfo(json: try json(response))
        var fields: [String: Value] = [:]
        if let name = info.name { fields["name"] = .string(name) }
        if let org = info.organizationId { fields["organizationId"] = .string(org) }
        return User(id: info.userId, username: info.preferredUsername, email: info.email, fields: fields)
    }

    public var session: Session? { current }

    public func restore(_ session: Session?) async {
        current = session
        describeCache = [:]
    }
}
