public import MBaaSCore
import MBaaSKiiWire

/// Serves `kii+http://APP_ID:APP_KEY@HOST:PORT[/api]`: the URL the Kii client opens, read by the client's own
/// grammar (``KiiConfiguration/init(url:)``, in the Wire module both sides share).
///
/// The path is the REST base path (`/api` by default). With `clientID=CLIENT_ID` (the client's admin mode) the
/// URL's secret is the app admin's ClientSecret, and the dialect issues admin tokens for that pair; without it no
/// admin token is issued. `filesBucket`, `dataType` and `timeout` are the client's and ignored here.
public struct KiiDialectFactory: DialectFactory {
    public init() {}
    public var schemes: [String] { ["kii"] }
    public var dialectName: String { "kii" }

    public func makeDialect(url: BackendURL, store: any ServerStore, options: DialectOptions) async throws -> any EmulatorDialect {
        let client = try KiiConfiguration(url: url)
        try options.refuseUsersFile(dialect: dialectName)
        let path = url.path.isEmpty || url.path == "/" ? "/api" : (url.path.hasSuffix("/") ? String(url.path.dropLast()) : url.path)
        var configuration = KiiDialect.Configuration(
            appID: client.appID, appKey: client.appKey, clientID: client.adminCredentials?.clientID,
            clientSecret: client.adminCredentials?.clientSecret, basePath: path)
        if let maxFileSize = options.maxFileSize { configuration.maxBodySize = maxFileSize }
        return KiiDialect(store: store, configuration: configuration, logger: options.logger)
    }
}
