import ArgumentParser
import Foundation
import MBaaSCore
import MBaaSEmulator
import MBaaSLocal

extension ServeCommand {
    /// `--client-id ID --client-secret S [--users users.json] [--token-lifetime SECONDS]` (or
    /// `MBAAS_SALESFORCE_CLIENT_ID`, `MBAAS_SALESFORCE_CLIENT_SECRET`).
    func salesforceDialect(store: any ServerStore) async throws -> any EmulatorDialect {
        let env = ProcessInfo.processInfo.environment
        guard let id = clientID ?? env["MBAAS_SALESFORCE_CLIENT_ID"], !id.isEmpty,
              let secret = clientSecret ?? env["MBAAS_SALESFORCE_CLIENT_SECRET"], !secret.isEmpty
        else {
            throw ValidationError("the salesforce dialect needs --client-id and --client-secret (or MBAAS_SALESFORCE_CLIENT_ID and MBAAS_SALESFORCE_CLIENT_SECRET)")
        }
        var configuration = SalesforceDialect.Configuration(clientId: id, clientSecret: secret)
        if let tokenLifetime { configuration.tokenLifetime = .seconds(tokenLifetime) }
        return try await SalesforceDialect.make(store: store, configuration: configuration,
                                                options: DialectOptions(logger: global.logger, usersFile: users))
    }
}
