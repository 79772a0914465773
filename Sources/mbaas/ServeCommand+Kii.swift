import ArgumentParser
import Foundation
import MBaaSCore
import MBaaSEmulator
import MBaaSLocal

extension ServeCommand {
    /// `--app-id ID --app-key K [--client-id ID --client-secret S]` (or `MBAAS_KII_APP_ID`, `MBAAS_KII_APP_KEY`,
    /// `MBAAS_KII_CLIENT_ID`, `MBAAS_KII_CLIENT_SECRET`).
    func kiiDialect(store: any ServerStore) async throws -> any EmulatorDialect {
        let env = ProcessInfo.processInfo.environment
        guard let id = appID ?? env["MBAAS_KII_APP_ID"], !id.isEmpty,
              let key = appKey ?? env["MBAAS_KII_APP_KEY"], !key.isEmpty
        else {
            throw ValidationError("the kii dialect needs --app-id and --app-key (or MBAAS_KII_APP_ID and MBAAS_KII_APP_KEY)")
        }
        let clientID = clientID ?? env["MBAAS_KII_CLIENT_ID"], clientSecret = clientSecret ?? env["MBAAS_KII_CLIENT_SECRET"]
        guard (clientID == nil) == (clientSecret == nil) else {
            throw ValidationError("the kii dialect takes --client-id and --client-secret together")
        }
        var configuration = KiiDialect.Configuration(appID: id, appKey: key, clientID: clientID, clientSecret: clientSecret)
        if let maxFileSize { configuration.maxBodySize = maxFileSize }
        return KiiDialect(store: store, configuration: configuration, logger: global.logger)
    }
}
