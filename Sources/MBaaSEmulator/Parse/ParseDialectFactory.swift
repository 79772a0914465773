public import MBaaSCore
import MBaaSParseWire

/// Serves `parse+http://APPLICATION_ID:REST_KEY@HOST:PORT/parse[?masterKey=M]`: the URL the Parse client opens.
///
/// The path is the mount point (`/parse` when the URL has none). The REST key is required here (the dialect
/// checks it); `masterKey` is the master key the dialect accepts, as the client sends it (none unless given; it
/// must differ from the REST key). `batchSize`, `currentUserRoles` and `timeout` are the client's and ignored.
public struct ParseDialectFactory: DialectFactory {
    public init() {}
    public var schemes: [String] { ["parse"] }
    public var dialectName: String { "parse" }

    public func makeDialect(url: BackendURL, store: any ServerStore, options: DialectOptions) async throws -> any EmulatorDialect {
        guard let appId = url.user, !appId.isEmpty, let restKey = url.secret, !restKey.isEmpty else {
            throw MBaaSError(.invalidRequest, "the parse dialect needs the application id and REST key in the URL: parse+http://APPLICATION_ID:REST_KEY@127.0.0.1:1337/parse")
        }
        try DialectRegistry.requireKnownOptions(url, served: ["masterKey"], clientOnly: ["batchSize", "currentUserRoles", "timeout"],
                                                dialect: dialectName)
        try options.refuseUsersFile(dialect: dialectName)
        let master = url.option("masterKey")
        if let master, master.isEmpty || master == restKey {
            throw MBaaSError(.invalidRequest, "the URL's masterKey must be non-empty and differ from the REST key")
        }
        var configuration = ParseDialect.Configuration(applicationId: appId, restKey: restKey, masterKey: master,
                                                       mount: url.path.isEmpty ? ParseWire.defaultMount : url.path)
        if let maxFileSize = options.maxFileSize { configuration.maxFileSize = maxFileSize }
        return ParseDialect(store: store, configuration: configuration, logger: options.logger)
    }
}
