public import Foundation
public import MBaaSCore
import MBaaSSalesforceWire

/// Where and how a ``SalesforceBackend`` talks to a Salesforce org.
///
/// # Backend URL
/// ```
/// salesforce://CLIENT_ID:CLIENT_SECRET@login.salesforce.com?username=USER     OAuth password grant
/// salesforce://CLIENT_ID:CLIENT_SECRET@test.salesforce.com?username=USER      a sandbox
/// salesforce://token:ACCESS_TOKEN@yourInstance.my.salesforce.com              an instance URL and an access token
/// salesforce+http://CLIENT_ID:CLIENT_SECRET@127.0.0.1:8443?username=USER      a local server or emulator over HTTP
/// ```
/// - The password grant's host is the login host (`login.`, `test.` or a My Domain); the REST calls go to the
///   `instance_url` the token response names [doc/capture: salesforce.md "Authentication"].
/// - The password: option `password=` (keep the URL in a `--url-file` or `$MBAAS_URL`, never on a command line),
///   else the environment variable `MBAAS_SALESFORCE_PASSWORD`. Option `securityToken=` is appended to it, as
///   Salesforce expects [doc].
/// - `token:ACCESS_TOKEN@HOST`: the host is the instance; no login and no refresh (a 401 ends the session).
/// - Options: `version=62.0` (the REST API version; default ``SalesforceWire/defaultAPIVersion``),
///   `timeout=SECONDS`.
///
/// With the password-grant form, calls made before ``SalesforceBackend/logIn(username:password:)`` log in as the
/// URL's user (Salesforce has no anonymous REST access): the URL names that identity explicitly.
public struct SalesforceConfiguration: Sendable, Hashable {
    public enum Credentials: Sendable, Hashable {
        /// OAuth password grant against `loginBase` (`https://login.salesforce.com`).
        case password(clientId: String, clientSecret: String?, username: String?, password: String?)
        /// A ready access token for `loginBase`, which is then the instance.
        case accessToken(String)
    }

    /// `https://login.salesforce.com` (the token endpoint's base), or the instance for ``Credentials/accessToken(_:)``.
    public var loginBase: String
    public var credentials: Credentials
    /// `62.0`.
    public var apiVersion: String
    public var timeout: Double?

    public init(loginBase: String, credentials: Credentials, apiVersion: String = SalesforceWire.defaultAPIVersion,
                timeout: Double? = nil) {
        self.loginBase = loginBase
        self.credentials = credentials
        self.apiVersion = apiVersion
        self.timeout = timeout
    }

    /// The environment variable read for the password when the URL has none.
    public static let passwordVariable = "MBAAS_SALESFORCE_PASSWORD"

    /// Reads a `salesforce://` or `salesforce+http://` URL; errors name the part that is wrong.
    public init(url: BackendURL, environment: [String: String] = ProcessInfo.processInfo.environment) throws(MBaaSError) {
        let form = "salesforce://CLIENT_ID:CLIENT_SECRET@login.salesforce.com?username=USER (password: ?password= or $\(Self.passwordVariable))"
        guard url.scheme == "salesforce" else {
            throw MBaaSError(.invalidRequest, "not a Salesforce URL (scheme '\(url.scheme)'); use \(form)")
        }
        guard let host = url.host, !host.isEmpty else { throw MBaaSError(.invalidRequest, "Salesforce URL \(url) has no host; use \(form)") }
        try url.requireKnownOptions(["username", "password", "securityToken", "version", "timeout"], adapter: "Salesforce")
        var version = url.option("version") ?? SalesforceWire.defaultAPIVersion
        if version.hasPrefix("v") { version.removeFirst() }
        guard let v = Double(version), v >= 20, version.contains(".") else {
            throw MBaaSError(.invalidRequest, "Salesforce URL option version must look like 62.0, got '\(url.option("version") ?? "")'")
        }
        var base = BackendURL(scheme: "salesforce", isSecure: url.isSecure, host: host, port: url.port).httpBase
        if !url.path.isEmpty, url.path != "/" { base += url.path.hasSuffix("/") ? String(url.path.dropLast()) : url.path }
        guard let user = url.user, !user.isEmpty else {
            throw MBaaSError(.invalidRequest, "Salesforce URL \(url) has no client id (or 'token' for an access token); use \(form)")
        }
        let secret = url.secret.flatMap { $0.isEmpty ? nil : $0 }
        if user == "token" {
            guard let secret else {
                throw MBaaSError(.invalidRequest, "Salesforce URL \(url): the access-token form is salesforce://token:ACCESS_TOKEN@INSTANCE_HOST")
            }
            guard url.option("username") == nil, url.option("password") == nil else {
                throw MBaaSError(.invalidRequest, "Salesforce URL \(url): an access token takes no username or password")
            }
            self.init(loginBase: base, credentials: .accessToken(secret), apiVersion: version, timeout: try url.timeoutOption())
            return
        }
        var password = url.option("password") ?? environment[Self.passwordVariable].flatMap { $0.isEmpty ? nil : $0 }
        if let token = url.option("securityToken") {
            guard let p = password else {
                throw MBaaSError(.invalidRequest, "Salesforce URL \(url): securityToken is appended to a password, and there is none")
            }
            password = p + token
        }
        self.init(loginBase: base,
                  credentials: .password(clientId: user, clientSecret: secret, username: url.option("username"), password: password),
                  apiVersion: version, timeout: try url.timeoutOption())
    }
}
