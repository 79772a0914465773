import MBaaSBuiltins
import MBaaSCore
import MBaaSLocal
import MBaaSSync

/// The adapters the `mbaas` CLI can open, by URL scheme: the one built-in list of `MBaaSBuiltins` (``Builtins``).
enum BuiltinAdapters {
    /// `localOpenMode` is how `sqlite:` databases open (read-only for commands that only read).
    static func registry(localOpenMode: LocalBackend.OpenMode = .create) -> BackendRegistry {
        var registry = Builtins.registry(local: LocalBackend.Options(openMode: localOpenMode))
        // replica:PATH, whose remote is any of the above (the key of encrypted fields from $MBAAS_REPLICA_KEY).
        registry.register(ReplicaBackendFactory(registry: registry, key: ReplicaCipher.fromEnvironment))
        return registry
    }

    /// The adapters conformance reports show, in their column order: every built-in adapter the suite runs against
    /// (an adapter without cassettes shows as not run). The neutral report orders nothing by itself.
    static var conformanceOrder: [String] { Builtins.conformanceOrder }
}
