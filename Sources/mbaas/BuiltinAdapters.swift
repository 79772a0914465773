import MBaaSCore
import MBaaSLocal
import MBaaSNCMB

/// The adapters the `mbaas` CLI can open, by URL scheme. One line per adapter.
enum BuiltinAdapters {
    static func registry() -> BackendRegistry {
        BackendRegistry([
            LocalBackendFactory(),
            NCMBBackendFactory(),
        ])
    }
}
