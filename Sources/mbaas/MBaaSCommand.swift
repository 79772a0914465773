import ArgumentParser

/// The `mbaas` command line: records, files and users on any backend URL.
@main
struct MBaaSCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mbaas",
        abstract: "One command line for every mobile backend: records, files, users.",
        discussion: """
            Backends are named by URL: sqlite:demo.db (the embedded Local backend, no server needed), \
            ncmb://APP_KEY:CLIENT_KEY@mbaas.api.nifcloud.com, ...

            Output is JSON when stdout is not a terminal (--format json|table to choose). Errors go to stderr with a \
            non-zero exit status: 2 invalid request or unsupported, 3 not found, 4 unauthorized or forbidden, \
            5 conflict or duplicate, 6 backend unavailable or unreachable, 8 a migration or verification finished with \
            differences or failed records, 1 anything else.
            """,
        subcommands: [
            ObjectsCommand.self, FilesCommand.self, AuthCommand.self, ConformanceCommand.self, NCMBCommand.self,
            BenchCommand.self, MigrateCommand.self, ExportCommand.self, ImportCommand.self, VerifyCommand.self,
            SamplesCommand.self,
        ])
}
