import Foundation
import MBaaSCore
import MBaaSEmulator
import MBaaSLocal

extension ServeCommand {
    /// `--app-id ID --app-key K [--client-id ID --client-secret S]`.
    func kiiDialect(store: LocalBackend) async throws -> any EmulatorDialect {
        throw MBaaSError(.unsupported, "the kii dialect is not built yet; available: \(ServeCommand.available)")
    }
}
