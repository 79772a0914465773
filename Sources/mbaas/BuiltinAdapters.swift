import MBaaSAppPot
import MBaaSCore
import MBaaSKii
import MBaaSLocal
import MBaaSMigration
import MBaaSNCMB
import MBaaSPocketBase

/// The adapters the `mbaas` CLI can open, by URL scheme. One line per adapter.
enum BuiltinAdapters {
    static func registry() -> BackendRegistry {
        BackendRegistry([
            LocalBackendFactory(),
            PocketBaseBackendFactory(),
            NCMBBackendFactory(),
            KiiBackendFactory(),
            AppPotBackendFactory(),
            NCMBExportBackendFactory(),
            BundleBackendFactory(),
        ])
    }
}
