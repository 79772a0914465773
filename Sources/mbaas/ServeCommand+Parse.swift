import ArgumentParser
import Foundation
import MBaaSCore
import MBaaSEmulator
import MBaaSLocal
import MBaaSParseWire

extension ServeCommand {
    /// `--app-id ID --rest-key K [--master-key M] [--mount /parse]` (or `MBAAS_PARSE_APP_ID`,
    /// `MBAAS_PARSE_REST_KEY`, `MBAAS_PARSE_MASTER_KEY`). No master key unless one is given.
    func parseDialect(store: any ServerStore) throws -> any EmulatorDialect {
        let env = ProcessInfo.processInfo.environment
        guard let appId = appID ?? env["MBAAS_PARSE_APP_ID"], !appId.isEmpty,
              let restKey = restKey ?? env["MBAAS_PARSE_REST_KEY"], !restKey.isEmpty
        else {
            throw ValidationError("the parse dialect needs --app-id and --rest-key (or MBAAS_PARSE_APP_ID and MBAAS_PARSE_REST_KEY)")
        }
        let master = masterKey ?? env["MBAAS_PARSE_MASTER_KEY"]
        if let master, master.isEmpty || master == restKey {
            throw ValidationError("--master-key must be non-empty and differ from --rest-key")
        }
        var configuration = ParseDialect.Configuration(applicationId: appId, restKey: restKey, masterKey: master,
                                                       mount: mount ?? ParseWire.defaultMount)
        if let maxFileSize { configuration.maxFileSize = maxFileSize }
        return ParseDialect(store: store, configuration: configuration, logger: global.logger)
    }
}
