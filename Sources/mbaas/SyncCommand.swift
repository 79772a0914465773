import ArgumentParser
import Foundation
import MBaaSCore
import MBaaSSync
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `mbaas sync`: offline replicas (`replica:PATH`) of any backend, and their sync.
///
/// Exit statuses: 0 everything was sent; 6 the remote could not be reached (nothing lost, the outbox kept); 8 the run
/// finished with conflicts or refused records (listed); 4 the remote refused the session (sync up paused). `--watch`
/// runs until SIGINT/SIGTERM (130/143) and never exits on an unreachable remote.
struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync", abstract: "Offline replicas of any backend: create, sync, status, conflicts.",
        discussion: """
            A replica (replica:PATH, a SQLite file of mode 0600) keeps the classes its configuration names on the device; \
            reads are local, writes are queued and sent by `mbaas sync replica:PATH`. Every objects/files/auth/migrate \
            command takes replica:PATH as a backend URL. Encrypted fields need the key: $MBAAS_REPLICA_KEY (32 bytes, \
            base64) or --key-file FILE (mode 600). See the MBaaSSync documentation, "Offline and sync".
            """,
        subcommands: [Run.self, Init.self, Status.self, Conflicts.self, Resolve.self],
        defaultSubcommand: Run.self)

    /// `--key-file FILE`: the replica key (base64, mode 600), instead of $MBAAS_REPLICA_KEY.
    struct KeyOptions: ParsableArguments {
        @Option(name: .customLong("key-file"), help: "File holding the replica key in base64 (mode 600); default $MBAAS_REPLICA_KEY")
        var keyFile: String?

        func cipher() throws(MBaaSError) -> ReplicaCipher? {
            guard let keyFile else { return try ReplicaCipher.fromEnvironment() }
            guard let mode = fileMode(keyFile) else {
                throw MBaaSError(.localIO, "--key-file \(keyFile): \(String(cString: strerror(errno)))")
            }
            guard mode & 0o077 == 0 else {
                throw MBaaSError(.invalidRequest, "--key-file \(keyFile) is readable or writable by others (mode \(String(mode & 0o777, radix: 8))); run chmod 600 \(keyFile)")
            }
            let text: String
            do { text = try String(contentsOfFile: keyFile, encoding: .utf8) } catch {
                throw MBaaSError(.localIO, "--key-file \(keyFile): \(MBaaSError.describe(error))")
            }
            do { return try ReplicaCipher(base64: text) } catch { throw MBaaSError(.invalidRequest, "--key-file \(keyFile): \(error.message)") }
        }
    }

    /// Opens `replica:PATH` with its stored remote (live transport with retries and `--timeout`).
    static func open(_ text: String, _ global: GlobalOptions, key: KeyOptions) async throws -> ReplicaBackend {
        let url = try BackendURL(parsing: text)
        guard url.scheme == "replica" else {
            throw MBaaSError(.invalidRequest, "'\(url)' is not a replica URL: use replica:PATH")
        }
        let cipher = try key.cipher()
        let factory = ReplicaBackendFactory(registry: BuiltinAdapters.registry(), cipher: cipher)
        let context = BackendContext(transport: boundedTransport(global.timeout, logger: global.logger), logger: global.logger)
        guard let replica = try await factory.open(url, context: context) as? ReplicaBackend else {
            throw MBaaSError(.internal, "replica:\(url.path) did not open as a replica")
        }
        return replica
    }

    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "init", abstract: "Create a replica of a remote backend (or change its remote and configuration).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "replica:PATH") var replica: String
        @Option(help: "The remote backend URL ('-': read it from --remote-url-file or $MBAAS_REMOTE_URL)") var remote: String
        @Option(name: .customLong("remote-url-file"), help: "File holding the remote URL (mode 600), with --remote -")
        var remoteURLFile: String?
        @Option(help: "Class policies (JSON; see the Offline and sync article)") var config: String?

        func run() async throws {
            try await runReportingErrors {
                let url = try BackendURL(parsing: replica)
                guard url.scheme == "replica" else { throw MBaaSError(.invalidRequest, "'\(url)' is not a replica URL: use replica:PATH") }
                let path = try ReplicaBackendFactory.path(url)
                let remoteURL = try resolveURLArgument(remote, file: remoteURLFile, fileOption: "--remote-url-file", variable: "MBAAS_REMOTE_URL")
                let parsedRemote = try BackendURL(parsing: remoteURL)
                if parsedRemote.scheme == "replica" { throw MBaaSError(.invalidRequest, "--remote: a replica's remote is a server backend, not another replica") }
                // Checked before anything is written.
                let configuration = try config.map { file throws(MBaaSError) in try ReplicaConfiguration(contentsOf: URL(fileURLWithPath: file)) }
                let context = BackendContext(transport: boundedTransport(global.timeout, logger: global.logger), logger: global.logger)
                let registry = BuiltinAdapters.registry()
                guard registry.factory(forScheme: parsedRemote.scheme) != nil else {
                    throw MBaaSError(.invalidRequest, "--remote: unknown backend scheme '\(parsedRemote.scheme)'; known: \(registry.schemes.joined(separator: ", "))")
                }
                let remoteBackend = try await registry.open(parsedRemote, context: context)
                let opened = try await ReplicaBackend.open(path: path, remote: remoteBackend, remoteURL: remoteURL,
                                                           configuration: configuration, context: context)
                let classes = await opened.configuration.syncedClasses
                await opened.close()
                let json: JSON = .object(["replica": .string(path), "remote": .string(parsedRemote.description),
                                          "classes": .array(classes.map(JSON.string))])
                emit(json, table: "replica \(path) of \(parsedRemote.description); synced classes: \(classes.isEmpty ? "none (every class serverOnly)" : classes.joined(separator: ", "))\n",
                     format: global.resolvedFormat)
            }
        }
    }

    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "run", abstract: "Sync a replica with its remote (the default: mbaas sync replica:PATH).")
        @OptionGroup var global: GlobalOptions
        @OptionGroup var key: KeyOptions
        @Argument(help: "replica:PATH") var replica: String
        @Flag(help: "Only sync down") var down = false
        @Flag(help: "Only sync up") var up = false
        @Option(help: "Only these classes (comma-separated)") var classes: String?
        @Option(help: "overwrite or leave-if-changed, for this run") var merge: String?
        @Option(help: "Sync every SECONDS until interrupted") var watch: Double?
        @Flag(help: "Look for records deleted on the server on this run") var ghosts = false
        @Option(name: .customLong("calls-in-flight"), help: "Batch calls of queued creates sent at once during sync up (default 4; 1: one after the other)")
        var callsInFlight = 4

        func validate() throws {
            if down && up { throw ValidationError("use either --down or --up (neither: both)") }
            guard (1...16).contains(callsInFlight) else { throw ValidationError("--calls-in-flight must be between 1 and 16") }
            if let watch, !(watch > 0) { throw ValidationError("--watch takes a positive number of seconds") }
        }

        func run() async throws {
            try await runReportingErrors {
                let mergeMode = try merge.map { text throws(MBaaSError) in try ReplicaPolicy.MergeMode(parsing: text) }
                var classList: [String]?
                if let classes {
                    let names = classes.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
                    if names.contains(where: \.isEmpty) { throw MBaaSError(.invalidRequest, "--classes '\(classes)' has an empty class name") }
                    classList = names
                }
                let replicaBackend = try await SyncCommand.open(replica, global, key: key)
                let options = SyncOptions(direction: down ? .down : up ? .up : .both, classes: classList, merge: mergeMode,
                                          ghostScan: ghosts, createCallsInFlight: callsInFlight, progress: { Terminal.writeErr("mbaas: sync: \($0)\n") })
                let format = global.resolvedFormat
                if let watch {
                    while !Task.isCancelled {
                        let report = try await replicaBackend.sync(options)
                        SyncCommand.printReport(report, format: format == .json ? .ndjson : format)
                        do { try await Task.sleep(nanoseconds: UInt64(watch * 1e9)) } catch { break }
                    }
                    await replicaBackend.close()
                    return
                }
                let report = try await replicaBackend.sync(options)
                await replicaBackend.close()
                SyncCommand.printReport(report, format: format)
                switch report.outcome {
                case .unreachable: throw ExitCode(6)
                case .sessionRefused: throw ExitCode(4)
                case .complete: if !report.conflicts.isEmpty || !report.refusedDown.isEmpty { throw ExitCode(8) }
                }
            }
        }
    }

    static func printReport(_ report: SyncReport, format: OutputFormat) {
        var lines: [String] = []
        for name in report.classes.keys.sorted() {
            let s = report.classes[name]!
            lines.append("\(name): \(s.down) down, \(s.up) up, \(s.conflicts) conflicts, \(s.ghostsRemoved) ghosts removed, \(s.pruned) pruned"
                + (s.refused > 0 ? ", \(s.refused) refused" : ""))
        }
        switch report.outcome {
        case .complete:
            var notes: [String] = []
            if !report.conflicts.isEmpty { notes.append("\(report.conflicts.count) conflicts (mbaas sync conflicts)") }
            if !report.refusedDown.isEmpty { notes.append("\(report.refusedDown.count) remote records refused by sync down (listed below)") }
            lines.append(notes.isEmpty ? "complete" : "complete with " + notes.joined(separator: " and "))
        case .unreachable(let m): lines.append("remote unreachable, outbox kept: \(m)")
        case .sessionRefused(let m): lines.append("the remote refused the session, sync up paused (log in again): \(m)")
        }
        for c in report.conflicts { lines.append("  conflict \(c.className)/\(c.id): \(c.reason)") }
        for r in report.refusedDown {
            lines.append("  refused down \(r.className)/\(r.id.split(separator: "\u{0}", omittingEmptySubsequences: false).joined(separator: "\\u0000")): \(r.reason)")
        }
        emit(report.json, table: lines.joined(separator: "\n") + "\n", format: format)
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "status", abstract: "Queued writes, conflicts and last syncs per class.")
        @OptionGroup var global: GlobalOptions
        @OptionGroup var key: KeyOptions
        @Argument(help: "replica:PATH") var replica: String

        func run() async throws {
            try await runReportingErrors {
                let backend = try await SyncCommand.open(replica, global, key: key)
                let status = try await backend.status(probe: true)
                await backend.close()
                var lines = ["remote: " + (status.reachable == true ? "reachable" : "unreachable")]
                for name in status.classes.keys.sorted() {
                    let c = status.classes[name]!
                    lines.append("\(name): \(c.pending) pending, \(c.conflicts) conflicts, last down \(c.lastSyncDown.map(ISO8601.format) ?? "never"), last up \(c.lastSyncUp.map(ISO8601.format) ?? "never")")
                }
                emit(status.json, table: lines.joined(separator: "\n") + "\n", format: global.resolvedFormat)
            }
        }
    }

    struct Conflicts: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "conflicts", abstract: "List records waiting for a resolution.")
        @OptionGroup var global: GlobalOptions
        @OptionGroup var key: KeyOptions
        @Argument(help: "replica:PATH") var replica: String
        @Option(name: .customLong("class"), help: "Only this class") var className: String?

        func run() async throws {
            try await runReportingErrors {
                let backend = try await SyncCommand.open(replica, global, key: key)
                let conflicts = try await backend.conflicts(className: className)
                await backend.close()
                let table = conflicts.map { "\($0.className)/\($0.id): \($0.reason)" }.joined(separator: "\n")
                emit(.array(conflicts.map(\.json)), table: (conflicts.isEmpty ? "no conflicts" : table) + "\n", format: global.resolvedFormat)
            }
        }
    }

    struct Resolve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "resolve", abstract: "Settle a conflict: keep the local or the remote record.")
        @OptionGroup var global: GlobalOptions
        @OptionGroup var key: KeyOptions
        @Argument(help: "replica:PATH") var replica: String
        @Argument(help: "Class") var className: String
        @Argument(help: "Record id") var id: String
        @Option(help: "local or remote") var keep: String

        func validate() throws {
            if keep != "local" && keep != "remote" { throw ValidationError("--keep takes local or remote, not '\(keep)'") }
        }

        func run() async throws {
            try await runReportingErrors {
                let backend = try await SyncCommand.open(replica, global, key: key)
                do {
                    try await backend.resolve(className: className, id: id, keep == "local" ? .keepLocal : .keepRemote)
                } catch {
                    await backend.close()
                    throw error
                }
                await backend.close()
                emit(.object(["class": .string(className), "id": .string(id), "kept": .string(keep)]),
                     table: "\(className)/\(id): kept the \(keep) record\(keep == "local" ? " (sent on the next sync)" : "")\n",
                     format: global.resolvedFormat)
            }
        }
    }
}
