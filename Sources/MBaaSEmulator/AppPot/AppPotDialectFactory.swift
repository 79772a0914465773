import Foundation
import Logging
public import MBaaSCore
import MBaaSAppPotWire

/// Serves `apppot+http://APP_KEY@HOST:PORT/apppot?company=N&app=ID&version=1.0`: the URL the AppPot client opens.
///
/// The path is the context root (`apppot` when the URL has none); `company`, `app` and `version` are required, as
/// the client requires them. The client's other options (`user`, `device`, `generation`, …) are accepted and
/// ignored; a URL secret (a user's password, with `user=`) is the client's too. AppPot has no sign-up: the users
/// file (``DialectOptions/usersFile``) provisions the company's users (``AppPotDialect/ProvisionedUser``).
public struct AppPotDialectFactory: DialectFactory {
    public init() {}
    public var schemes: [String] { ["apppot"] }
    public var dialectName: String { "apppot" }

    public func makeDialect(url: BackendURL, store: any ServerStore, options: DialectOptions) async throws -> any EmulatorDialect {
        guard let key = url.user, !key.isEmpty else {
            throw MBaaSError(.invalidRequest, "the apppot dialect needs the app key as the URL's user: apppot+http://APP_KEY@127.0.0.1:8080/apppot?company=24&app=ID&version=1.0")
        }
        func required(_ name: String) throws(MBaaSError) -> String {
            guard let v = url.option(name), !v.isEmpty else {
                throw MBaaSError(.invalidRequest, "the apppot dialect needs '?\(name)=…' in the URL (apppot+http://APP_KEY@127.0.0.1:8080/apppot?company=24&app=ID&version=1.0)")
            }
            return v
        }
        let company = try required("company"), app = try required("app"), version = try required("version")
        guard version.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) || "._-".unicodeScalars.contains($0) }),
              version != ".", version != ".." else {
            throw MBaaSError(.invalidRequest, "the URL's version must be a version such as 1.0 or 1.0.0 (letters, digits, '.', '_', '-'), got '\(version)'")
        }
        try DialectRegistry.requireKnownOptions(url, served: ["company", "app", "version"], clientOnly: [
            "device", "user", "anonymousData", "transactions", "generation", "defaultScope", "untypedReads",
            "clientGroupIds", "timeout", "schemas",
        ], dialect: dialectName)
        let root = url.path.split(separator: "/").joined(separator: "/")
        var configuration = AppPotDialect.Configuration(appKey: key, companyId: company, appId: app, appVersion: version,
                                                        contextRoot: root.isEmpty ? "apppot" : root)
        if let maxFileSize = options.maxFileSize { configuration.maxFileSize = maxFileSize }
        let dialect = AppPotDialect(store: store, configuration: configuration, logger: options.logger)
        if let users = options.usersFile {
            let added = try await dialect.provision(try AppPotDialect.ProvisionedUser.read(file: users))
            options.logger.info("apppot: provisioned \(added.count) user(s) from \(users)")
        } else {
            options.logger.notice("apppot: no --users file: the company directory starts as the store has it (empty in memory); AppPot has no sign-up")
        }
        return dialect
    }
}

extension AppPotDialect.ProvisionedUser {
    /// Reads a users file (a JSON array, see ``list(json:)``); an unreadable file or bad JSON is
    /// ``MBaaSError/Kind/invalidRequest`` naming the file.
    public static func read(file path: String) throws(MBaaSError) -> [Self] {
        try list(json: UsersFile.json(file: path))
    }
}
