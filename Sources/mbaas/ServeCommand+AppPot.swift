import Foundation
import MBaaSCore
import MBaaSEmulator
import MBaaSLocal

extension ServeCommand {
    /// `--app-key K --company N --app-id ID [--users FILE]`.
    func appPotDialect(store: LocalBackend) async throws -> any EmulatorDialect {
        throw MBaaSError(.unsupported, "the apppot dialect is not built yet; available: \(ServeCommand.available)")
    }
}
