import ArgumentParser
import Foundation
import MBaaSCore
import MBaaSEmulator
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
            5 conflict or duplicate, 6 backend unavailable or unreachable, 7 local I/O (a local file or stdout \
            could not be read or written), 8 a migration or verification finished with differences or failed records (or a sync with conflicts), \
            9 serve cannot listen on its address (a port in use), 1 anything else (internal, decoding). A usage error (unknown option, missing \
            or malformed argument) prints `Error: …` and the usage, exit status 64. A broken pipe on stdout ends \
            quietly with 141; Ctrl-C (SIGINT) and SIGTERM cancel the command cleanly: 130 and 143. With --format json \
            errors are one JSON line on stderr: {"error":{"kind":…,"message":…,"vendorCode":…,"httpStatus":…,"exitStatus":…}}.

            Secrets need not be on the command line: write - as the URL to read it from --url-file FILE (mode 600) \
            or the MBAAS_BACKEND_URL environment variable. JSON arguments (fields, --where) accept @FILE and - (stdin).
            """,
        version: MBaaSKitVersion.current,
        subcommands: [
            ObjectsCommand.self, FilesCommand.self, AuthCommand.self, ConformanceCommand.self, NCMBCommand.self,
            BenchCommand.self, MigrateCommand.self, ExportCommand.self, ImportCommand.self, VerifyCommand.self,
            SamplesCommand.self, ServeCommand.self, SyncCommand.self,
        ])

    /// Parses and runs like ArgumentParser's own `main()`, after ``Terminal/prepare()`` (SIGPIPE ignored), with
    /// SIGINT and SIGTERM turned into cancellation (see ``Interruption``).
    static func main() async {
        Terminal.prepare()
        // Before any other task starts: `mbaas serve` runs its handlers on the event loops unless told `--executor pool`.
        if ServeCommand.Executor.requested(in: CommandLine.arguments) == .eventLoops { EmulatorExecutor.useEventLoops() }
        let command: any ParsableCommand
        do {
            command = try parseAsRoot()
            _ = try BuiltinAdapters.passwordHashing()
        } catch {
            fail(error)
        }
        let box = CommandBox(command: command)
        let task = Task.detached { () async throws -> Void in
            var command = box.command
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        }
        Interruption.install { task.cancel() }
        do {
            try await task.value
        } catch {
            if let signal = Interruption.received { Foundation.exit(128 + signal) }
            fail(error)
        }
        if let signal = Interruption.received { Foundation.exit(128 + signal) }
    }

    private static func fail(_ error: any Error) -> Never {
        if errorsAsJSON, !(error is ExitCode), !(error is CleanExit) {
            // Usage errors (ArgumentParser's, exit 64) in the machine-readable form too.
            let status = exitCode(for: error).rawValue
            let message = fullMessage(for: error).trimmingCharacters(in: .whitespacesAndNewlines)
            let json: JSONObject = ["kind": "usage", "message": .string(message), "vendorCode": .null,
                                    "httpStatus": .null, "exitStatus": .int(Int64(status))]
            Terminal.writeErr(JSON.object(["error": .object(json)]).printed([.sortedKeys]) + "\n")
            Foundation.exit(status)
        }
        exit(withError: error)
    }
}

/// Carries the parsed command into the task that runs it (it is used by that task only).
private struct CommandBox: @unchecked Sendable {
    var command: any ParsableCommand
}
