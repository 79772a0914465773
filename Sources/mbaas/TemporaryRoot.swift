// TEMPORARY (conformance branch only): a minimal root so `mbaas conformance` builds and runs before the CLI
// root command and `BuiltinAdapters` from the `local` branch land. The lead deletes this file on merge (and
// restores the real root / main.swift).
import ArgumentParser
import MBaaSCore
import MBaaSLocal

@main
struct TemporaryRoot: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "mbaas", subcommands: [ConformanceCommand.self])
}

/// Stand-in for `Sources/mbaas/BuiltinAdapters.swift` (written by the `local` helper).
enum BuiltinAdapters {
    static func registry() -> BackendRegistry { BackendRegistry([LocalBackendFactory()]) }
}
