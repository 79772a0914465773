import ArgumentParser
import Foundation
import MBaaSBuiltins
import MBaaSCore
import MBaaSLocal
import MBaaSPostgres
import MBaaSSync

/// The adapters the `mbaas` CLI can open, by URL scheme: the one built-in list of `MBaaSBuiltins` (``Builtins``).
enum BuiltinAdapters {
    /// `localOpenMode` is how `sqlite:` databases open (read-only for commands that only read).
    static func registry(localOpenMode: LocalBackend.OpenMode = .create) -> BackendRegistry {
        // A bad value was refused before any command ran.
        let hashing = (try? passwordHashing()) ?? .default
        var local = LocalBackend.Options(openMode: localOpenMode)
        local.passwordHashing = hashing
        var registry = Builtins.registry(local: local, postgres: PostgresBackend.Options(passwordHashing: hashing))
        // replica:PATH, whose remote is any of the above (the key of encrypted fields from $MBAAS_REPLICA_KEY).
        registry.register(ReplicaBackendFactory(registry: registry, key: ReplicaCipher.fromEnvironment))
        return registry
    }

    /// The scrypt cost of the password hashes the stores this command opens make (`sqlite:`, `postgres://`), from
    /// `MBAAS_PASSWORD_COST`: `strong` (N = 2^15, r = 8, p = 3) or `light` (N = 2^11, p = 1: cheap sign-ups and
    /// log-ins, weak hashes; for throwaway data such as tests and demos); `nil` when unset (the stores then use
    /// `strong`, `mbaas serve` in memory `light`). Hashes keep their own cost, so either verifies the other's.
    /// Anything else is a usage error naming the variable (exit 64), before any command runs; `mbaas serve
    /// --password-cost` takes precedence for the store it serves.
    static func passwordHashing(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ScryptPasswordHash.Parameters? {
        switch environment["MBAAS_PASSWORD_COST"] {
        case nil, "": return nil
        case "strong": return .default
        case "light": return .light
        case let other?: throw ValidationError("MBAAS_PASSWORD_COST is '\(other)': use light or strong (or leave it unset for strong)")
        }
    }

    /// The adapters conformance reports show, in their column order: every built-in adapter the suite runs against
    /// (an adapter without cassettes shows as not run). The neutral report orders nothing by itself.
    static var conformanceOrder: [String] { Builtins.conformanceOrder }
}
