import ArgumentParser
import Foundation
import MBaaSCore
import MBaaSEmulator
import MBaaSLocal

extension ServeCommand {
    /// `--app-key K --company N --app-id ID [--users FILE]` (or `MBAAS_APPPOT_APP_KEY`). AppPot has no sign-up: the
    /// users come from the `--users` JSON file (see `AppPotDialect.ProvisionedUser`); without it the directory
    /// starts empty (a `--data` store keeps the users of earlier runs).
    func appPotDialect(store: any ServerStore) async throws -> any EmulatorDialect {
        let env = ProcessInfo.processInfo.environment
        guard let key = appKey ?? env["MBAAS_APPPOT_APP_KEY"], !key.isEmpty, let company, let appID, !appID.isEmpty else {
            throw ValidationError("the apppot dialect needs --app-key, --company and --app-id")
        }
        let version = appVersion ?? "1.0"
        guard !version.isEmpty, version.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) || "._-".unicodeScalars.contains($0) }),
              version != ".", version != ".." else {
            throw ValidationError("--app-version must be a version such as 1.0 or 1.0.0 (letters, digits, '.', '_', '-'), got '\(version)'")
        }
        var configuration = AppPotDialect.Configuration(appKey: key, companyId: String(company), appId: appID, appVersion: version)
        if let maxFileSize { configuration.maxFileSize = maxFileSize }
        let dialect = AppPotDialect(store: store, configuration: configuration, logger: global.logger)
        if let users {
            let data: Data
            do { data = try Data(contentsOf: URL(fileURLWithPath: users)) } catch {
                throw ValidationError("cannot read the users file \(users): \(error.localizedDescription)")
            }
            let json: JSON
            do { json = try JSON.parse(data) } catch { throw ValidationError("the users file \(users) is not JSON: \(error)") }
            let added = try await dialect.provision(AppPotDialect.ProvisionedUser.list(json: json))
            global.logger.info("apppot: provisioned \(added.count) user(s) from \(users)")
        } else {
            global.logger.notice("apppot: no --users file: the company directory starts as the store has it (empty in memory); AppPot has no sign-up")
        }
        return dialect
    }
}
