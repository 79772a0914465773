public import MBaaSCore
import MBaaSSalesforceWire

/// Serves `salesforce+http://CLIENT_ID:CLIENT_SECRET@HOST:PORT`: the URL the Salesforce client opens (served over
/// HTTPS with `mbaas serve`'s TLS flags, as `salesforce://…`).
///
/// The user and secret are the connected app's consumer key and secret. `tokenLifetime=SECONDS` sets how long access
/// tokens live (default 7200). The client's own options (`username`, `version`, …) are accepted and ignored. The
/// org's users come from the users file (``DialectOptions/usersFile``; Salesforce has no sign-up).
public struct SalesforceDialectFactory: DialectFactory {
    public init() {}
    public var schemes: [String] { ["salesforce"] }
    public var dialectName: String { "salesforce" }

    public func makeDialect(url: BackendURL, store: any ServerStore, options: DialectOptions) async throws -> any EmulatorDialect {
        guard let clientId = url.user, !clientId.isEmpty, let secret = url.secret, !secret.isEmpty else {
            throw MBaaSError(.invalidRequest, "the salesforce dialect needs the client id and client secret in the URL: salesforce+http://CLIENT_ID:CLIENT_SECRET@127.0.0.1:8443")
        }
        try DialectRegistry.requireKnownOptions(url, served: ["tokenLifetime"], clientOnly: [
            "username", "password", "version", "timeout", "securityToken",
        ], dialect: dialectName)
        var configuration = SalesforceDialect.Configuration(clientId: clientId, clientSecret: secret)
        if let text = url.option("tokenLifetime") {
            guard let seconds = Int(text), seconds > 0 else {
                throw MBaaSError(.invalidRequest, "the URL's tokenLifetime must be a positive number of seconds, got '\(text)'")
            }
            configuration.tokenLifetime = .seconds(seconds)
        }
        return try await SalesforceDialect.make(store: store, configuration: configuration, options: options)
    }
}

extension SalesforceDialect {
    /// The dialect with the users file's users provisioned (`mbaas serve`'s two forms share it).
    public static func make(store: any ServerStore, configuration: Configuration, options: DialectOptions) async throws -> SalesforceDialect {
        let dialect = SalesforceDialect(store: store, configuration: configuration, logger: options.logger)
        if let users = options.usersFile {
            let added = try await dialect.provision(try ProvisionedUser.read(file: users))
            options.logger.info("salesforce: provisioned \(added.count) user(s) from \(users)")
        } else {
            options.logger.notice("salesforce: no --users file: the org has no users unless the store has them (Salesforce has no sign-up)")
        }
        return dialect
    }
}
