import MBaaSCore
import MBaaSLocal

/// The adapters the `mbaas` CLI can open, by URL scheme. One line per adapter.
enum BuiltinAdapters {
    static func registry() -> BackendRegistry {
        BackendRegistry([
            LocalBackendFactory(),
        ])
    }
}
