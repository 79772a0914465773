import ArgumentParser
import Foundation
import MBaaSCore
import MBaaSEmulator
import MBaaSLocal

extension ServeCommand {
    /// `--application-key K --client-key C` (or `MBAAS_NCMB_APPLICATION_KEY`, `MBAAS_NCMB_CLIENT_KEY`).
    func ncmbDialect(store: any ServerStore) throws -> any EmulatorDialect {
        let env = ProcessInfo.processInfo.environment
        guard let appKey = applicationKey ?? env["MBAAS_NCMB_APPLICATION_KEY"], !appKey.isEmpty,
              let clientKey = clientKey ?? env["MBAAS_NCMB_CLIENT_KEY"], !clientKey.isEmpty
        else {
            throw ValidationError("the ncmb dialect needs --application-key and --client-key (or MBAAS_NCMB_APPLICATION_KEY and MBAAS_NCMB_CLIENT_KEY)")
        }
        var configuration = NCMBDialect.Configuration(applicationKey: appKey, clientKey: clientKey)
        if let maxFileSize { configuration.maxFileSize = maxFileSize }
        return NCMBDialect(store: store, configuration: configuration, logger: global.logger)
    }
}
