public import MBaaSCore
import MBaaSNCMBWire

/// Serves `ncmb+http://APPLICATION_KEY:CLIENT_KEY@HOST:PORT`: the URL the NCMB client opens.
///
/// Reads the application and client keys (both required) and `apiVersion`; the client's other options
/// (`scriptHost`, `scriptAPIVersion`, `verifyResponseSignature`, `currentUserRoles`, `timeout`) are accepted and
/// ignored. No users file: NCMB clients sign up.
public struct NCMBDialectFactory: DialectFactory {
    public init() {}
    public var schemes: [String] { ["ncmb"] }
    public var dialectName: String { "ncmb" }

    public func makeDialect(url: BackendURL, store: any ServerStore, options: DialectOptions) async throws -> any EmulatorDialect {
        guard let appKey = url.user, !appKey.isEmpty, let clientKey = url.secret, !clientKey.isEmpty else {
            throw MBaaSError(.invalidRequest, "the ncmb dialect needs the application key and client key in the URL: ncmb+http://APPLICATION_KEY:CLIENT_KEY@127.0.0.1:8080")
        }
        try DialectRegistry.requireKnownOptions(url, served: ["apiVersion"], clientOnly: [
            "scriptAPIVersion", "scriptHost", "verifyResponseSignature", "currentUserRoles", "timeout",
        ], dialect: dialectName)
        try options.refuseUsersFile(dialect: dialectName)
        var configuration = NCMBDialect.Configuration(applicationKey: appKey, clientKey: clientKey)
        if let v = url.option("apiVersion"), !v.isEmpty { configuration.apiVersion = v }
        if let maxFileSize = options.maxFileSize { configuration.maxFileSize = maxFileSize }
        return NCMBDialect(store: store, configuration: configuration, logger: options.logger)
    }
}
