import ArgumentParser
import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSMigration
import MBaaSNCMB
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Exit status of a migration or verification that finished but found differences or failures.
let exitStatusDifferences: Int32 = 8

/// `--acl-loss fail|allow` of `migrate` and `import`: ``MigrationMapping/ACLLossPolicy``.
enum ACLLossArgument: String, ExpressibleByArgument, CaseIterable {
    case fail, allow
    var policy: MigrationMapping.ACLLossPolicy { self == .allow ? .allow : .fail }
}

let aclLossHelp = ArgumentHelp(
    "What happens to records and files whose ACL the target cannot hold (fail or allow)",
    discussion: "fail (default): they are not written, each is named, exit status 8. allow: they are written without it (or with the wider ACL the target stores), each listed as a warning. A class's \"aclLoss\" in the mapping file overrides it for that class.")

/// Options shared by `export`, `import`, `migrate` and `verify`.
struct MigrationOptionGroup: ParsableArguments {
    @Option(name: .customLong("mapping"), help: "Mapping file (JSON): class and field renames, drops, file links, source id field, passwords")
    var mappingFile: String?
    @Option(name: .customLong("state"), help: "State folder (id map, checkpoint, lock); default: derived from the two URLs under the data directory")
    var stateDirectory: String?
    @Option(name: .customLong("report"), help: "Write the JSON report to this file")
    var reportFile: String?
    @Option(help: "Summary format: json or table (default: table on a terminal, json otherwise)")
    var format: OutputFormat?
    @Flag(help: "Log debug information to stderr (never secrets)")
    var verbose = false
    @Option(name: .customLong("from-url-file"),
            help: "Read the source URL (with its secrets) from this file's first line; give '-' as --from. The file must not be readable by others (chmod 600). Without it, '-' reads $MBAAS_FROM_URL.")
    var fromURLFile: String?
    @Option(name: .customLong("to-url-file"),
            help: "Read the target URL (with its secrets) from this file's first line; give '-' as --to. The file must not be readable by others (chmod 600). Without it, '-' reads $MBAAS_TO_URL.")
    var toURLFile: String?
    @Option(help: "Seconds an HTTP request may take before it fails with 'timed out' (default: each adapter's own, 60).")
    var timeout: Double?

    func validate() throws { try validateTimeout(timeout) }

    /// The source URL: `--from`, or for `-` the first line of `--from-url-file` or `$MBAAS_FROM_URL`.
    func sourceURL(_ argument: String) throws(MBaaSError) -> String {
        try resolveURLArgument(argument, file: fromURLFile, fileOption: "--from-url-file", variable: "MBAAS_FROM_URL")
    }

    /// The target URL: `--to`, or for `-` the first line of `--to-url-file` or `$MBAAS_TO_URL`.
    func targetURL(_ argument: String) throws(MBaaSError) -> String {
        try resolveURLArgument(argument, file: toURLFile, fileOption: "--to-url-file", variable: "MBAAS_TO_URL")
    }

    /// Refuses a URL file (`file`, given as `option`) for a side that is a bundle directory (`export --to`,
    /// `import --from`).
    func requireNoURLFile(_ file: String?, _ option: String, for side: String) throws(MBaaSError) {
        if file != nil { throw MBaaSError(.invalidRequest, "\(option): \(side) is a bundle directory, not a backend URL") }
    }
}

/// Opens the two sides of a migration: administrative identities where the adapter has one, no saved sessions. A
/// source must exist (a mistyped `sqlite:` path is `notFound`, never a new empty database); a target is created.
func openForMigration(_ text: String, verbose: Bool, timeout: Double? = nil, asSource: Bool = false, readOnly: Bool = false) async throws -> any Backend {
    var global = try GlobalOptions.parse([])
    global.verbose = verbose
    let url = try BackendURL(parsing: text)
    let transport = boundedTransport(timeout, logger: global.logger)
    // Sources, dry-run and verification targets only read: a sqlite: file is opened read-only (nothing is written
    // to it, not even its write-ahead log; a missing one is notFound, or an empty stand-in for a dry run).
    // A bundle read as a source is opened only to read: a missing or unfinished one is reported as such, and nothing
    // is created in its place. (Not every source: a read-only context lets a missing sqlite: file stand in empty.)
    let onlyReads = readOnly || (asSource && url.scheme == "bundle")
    return try await BuiltinAdapters.registry(localOpenMode: asSource || readOnly ? .readOnly : .create).open(
        url, context: BackendContext(transport: transport, logger: global.logger, administrative: true, readOnly: onlyReads))
}

/// Runs a migration with progress on stderr and the summary on stdout; exits 8 when something differs. `from` and
/// `to` resolve the two URLs and `makeOptions` reads the mapping file, inside the error reporting: a bad URL file or
/// mapping is a documented exit status (2 for an invalid one, 7 for one that cannot be read), never a usage error.
func runMigration(
    from resolveFrom: () throws -> String, to resolveTo: () throws -> String, options makeOptions: () throws -> MigrationOptions,
    group: MigrationOptionGroup, verifyOnly: Bool = false
) async throws {
    try await runReportingErrors {
        let (from, to, options) = (try resolveFrom(), try resolveTo(), try makeOptions())
        // A target that is the source itself, however written, is refused before anything is opened.
        if !verifyOnly { try requireDistinctStores(from: from, to: to) }
        // The source first (it creates nothing): a mistyped source leaves no state folder and no target behind;
        // then the state (its lock refuses a second run before the target is touched); then the target. What this run
        // creates (the state folder, a target file or folder) is removed again if it fails before writing anything.
        let source = try await openForMigration(from, verbose: group.verbose, timeout: group.timeout, asSource: true)
        try (source as? BundleBackend)?.requireFinished()
        let stateURL = group.stateDirectory.map { URL(fileURLWithPath: $0) } ?? MigrationState.defaultDirectory(from: from, to: to)
        let created = CreatedPaths(state: options.dryRun ? nil : stateURL, target: options.dryRun || verifyOnly ? nil : to)
        let report: MigrationReport
        do {
            // Declared in here: the state (and its lock) is let go of before a failed run's leftovers are looked at.
            let state: MigrationState?
            if options.dryRun {
                state = nil
            } else {
                state = try MigrationState(directory: stateURL)
                printNote("state: \(stateURL.path)")
            }
            let target: any Backend
            do {
                target = try await openForMigration(to, verbose: group.verbose, timeout: group.timeout, readOnly: options.dryRun || verifyOnly)
            } catch {
                await source.close()
                throw error
            }
            let progress = MigrationProgress(terminal: isatty(STDERR_FILENO) != 0)
            let migration = Migration(source: source, target: target, options: options, state: state,
                                      sourceDescription: BackendURL.redact(from), targetDescription: BackendURL.redact(to),
                                      observer: { progress.handle($0) })
            do {
                report = verifyOnly ? try await migration.verify() : try await migration.run()
                progress.finish()
                await source.close()
                await target.close()
            } catch {
                created.startedWriting = migration.startedWriting
                progress.finish()
                await source.close()
                await target.close()
                throw error
            }
        } catch {
            created.removeIfNothingWritten()
            throw error
        }
        let format = group.format ?? defaultFormat()
        if options.dryRun, let plan = report.plan {
            emit(report.json, table: plan.table + "dry run: nothing was written", format: format)
        } else {
            emit(report.json, table: report.table, format: format)
        }
        // After the summary, readable by its owner alone (it quotes record values). A report that cannot be written
        // is exit status 7, unless the run found differences: then it stays 8, and the failure is said.
        if let file = group.reportFile {
            do {
                try writePrivateFile(report.json.data([.pretty, .sortedKeys]), to: URL(fileURLWithPath: file), what: "the report")
            } catch {
                guard report.ok else {
                    reportError(MBaaSError.wrap(error))
                    throw ExitCode(exitStatusDifferences)
                }
                throw error
            }
        }
        if !report.ok { throw ExitCode(exitStatusDifferences) }
    }
}

/// Refuses a migration whose target is its source (`invalidRequest`, exit 2): the same file or folder however its
/// path is written (relative, absolute, through a symbolic or hard link: compared by device and inode), or the same
/// server URL with the same identity and options.
func requireDistinctStores(from: String, to: String) throws(MBaaSError) {
    guard let f = try? BackendURL(parsing: from), let t = try? BackendURL(parsing: to) else { return }
    func same(_ detail: String) -> MBaaSError {
        MBaaSError(.invalidRequest, "--from and --to are the same store (\(detail)): a migration never writes into its source; choose another target")
    }
    let local = { (u: BackendURL) in (u.host ?? "").isEmpty && !u.path.isEmpty }
    if local(f) && local(t) {
        // Device and inode, as the file system gives them (a link is followed).
        func identity(_ path: String) -> [String]? {
            guard let a = try? FileManager.default.attributesOfItem(atPath: URL(fileURLWithPath: path).resolvingSymlinksInPath().path),
                  let device = a[.systemNumber], let inode = a[.systemFileNumber] else { return nil }
            return ["\(device)", "\(inode)"]
        }
        if let a = identity(f.path), let b = identity(t.path), a == b { throw same(t.path) }
    } else if !local(f) && !local(t), f.scheme == t.scheme, f.host?.lowercased() == t.host?.lowercased(), f.port == t.port,
              f.path.trimmingCharacters(in: CharacterSet(charactersIn: "/")) == t.path.trimmingCharacters(in: CharacterSet(charactersIn: "/")),
              f.user == t.user, f.secret == t.secret, f.options == t.options {
        throw same(BackendURL.redact(to))
    }
}

/// What a migration run creates before it writes anything: its state folder, and a target that is a file or folder
/// (`sqlite:PATH` with its `-wal`/`-shm`/`-journal` files, `bundle:DIR`). Each path that did not exist when the run
/// began is removed again when the run fails with its state still empty (nothing was written: every write is marked
/// in the state first), so a plan that fails leaves nothing behind. A target created by a run that failed before it
/// could write (``MBaaSMigration/Migration/startedWriting``) is removed whatever the state.
final class CreatedPaths {
    let state: URL?
    /// Paths of the target that did not exist before.
    let target: [String]
    /// Whether the state folder did not exist before.
    let newState: Bool
    /// Whether the run got to where it may write.
    var startedWriting = false

    init(state: URL?, target: String?) {
        let fm = FileManager.default
        self.state = state
        newState = state.map { !fm.fileExists(atPath: $0.path) } ?? false
        var paths: [String] = []
        if let target, let url = try? BackendURL(parsing: target), (url.host ?? "").isEmpty, !url.path.isEmpty, !url.path.hasPrefix(":") {
            let candidates = url.scheme == "sqlite" ? ["", "-wal", "-shm", "-journal"].map { url.path + $0 } : [url.path]
            paths = candidates.filter { !fm.fileExists(atPath: $0) }
        }
        self.target = paths
    }

    func removeIfNothingWritten() {
        if !startedWriting { for path in target { try? FileManager.default.removeItem(atPath: path) } }
        guard let state, newState else { return }
        // Opened again only to look (the run's own handle is gone): a folder another run holds is left alone.
        guard let look = try? MigrationState(directory: state), (try? look.hasProgress()) == false else { return }
        _ = look
        for path in target { try? FileManager.default.removeItem(atPath: path) }
        try? FileManager.default.removeItem(at: state)
    }
}

/// A note on stderr (control characters escaped: notes can quote what a server sent); never fails loudly.
func printNote(_ text: String) { Terminal.writeErr("mbaas: \(escapingControlCharacters(text, keepNewlines: false))\n") }

func parseClasses(_ text: String?) throws(MBaaSError) -> [String]? {
    try text.map { text throws(MBaaSError) in try parseClassList(text) }
}

func loadMapping(_ path: String?) throws -> MigrationMapping {
    try path.map { try MigrationMapping(contentsOf: URL(fileURLWithPath: $0)) } ?? MigrationMapping()
}

/// `bundle:DIR` for a plain directory argument.
func bundleURL(_ text: String) -> String { text.hasPrefix("bundle:") ? text : "bundle:" + text }

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate", abstract: "Move records, users, roles and files from one backend to another, then verify.",
        discussion: """
            Sources and targets are backend URLs, bundle:DIR (MBaaSKit's own export) or ncmb-export:DIR (NCMB's console \
            export, as a source). Re-running the same command resumes where it stopped and never duplicates; a target that was \
            removed or replaced is started over, and --restart starts over on purpose. Exit status 8: \
            the migration finished but records failed or verification found differences (see --report).
            Example: mbaas migrate --from ncmb-export:Fixtures/Samples/ncmb-memo-export --to sqlite:memo.db
            """)
    @Option(help: "Source URL") var from: String
    @Option(help: "Target URL") var to: String
    @Option(help: "Only these classes, comma-separated (needed when the source cannot list its classes)") var classes: String?
    @Flag(name: .customLong("dry-run"), help: "Print the plan and write nothing anywhere") var dryRun = false
    @Option(name: .customLong("batch"), help: "Records per write, capped by the target's batch limit") var batch = 1000
    @Option(help: "Writes in flight at once (record batches, file copies)") var concurrency = 4
    @Flag(help: "Start over: discard the state folder's id map (what earlier runs recorded as written) before writing") var restart = false
    @Option(name: .customLong("acl-loss"), help: aclLossHelp) var aclLoss: ACLLossArgument = .fail
    @OptionGroup var group: MigrationOptionGroup

    func validate() throws {
        if batch < 1 { throw ValidationError("--batch must be >= 1") }
        if concurrency < 1 { throw ValidationError("--concurrency must be >= 1") }
    }

    func run() async throws {
        try await runMigration(from: { try group.sourceURL(from) }, to: { try group.targetURL(to) }, options: {
            MigrationOptions(classes: try parseClasses(classes), mapping: try loadMapping(group.mappingFile), batchSize: batch,
                             concurrency: concurrency, dryRun: dryRun, restart: restart, aclLoss: aclLoss.policy)
        }, group: group)
    }
}

struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export", abstract: "Export a backend into a bundle directory (MBaaSKit's neutral format), verified.")
    @Option(help: "Source URL") var from: String
    @Option(help: "Bundle directory to write") var to: String
    @Option(help: "Only these classes, comma-separated") var classes: String?
    @Flag(help: "Start over: discard the state folder's id map (what earlier runs recorded as written) before writing") var restart = false
    @OptionGroup var group: MigrationOptionGroup

    func run() async throws {
        try await runMigration(from: { try group.sourceURL(from) }, to: {
            try group.requireNoURLFile(group.toURLFile, "--to-url-file", for: "export's --to")
            return bundleURL(to)
        }, options: {
            MigrationOptions(classes: try parseClasses(classes), mapping: group.mappingFile == nil ? .verbatim : try loadMapping(group.mappingFile),
                             batchSize: 500, concurrency: 1, fileConcurrency: 4, restart: restart)
        }, group: group)
    }
}

struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import", abstract: "Import a bundle directory into a backend, then verify.")
    @Option(help: "Bundle directory to read") var from: String
    @Option(help: "Target URL") var to: String
    @Flag(help: "Start over: discard the state folder's id map (what earlier runs recorded as written) before writing") var restart = false
    @Option(name: .customLong("acl-loss"), help: aclLossHelp) var aclLoss: ACLLossArgument = .fail
    @OptionGroup var group: MigrationOptionGroup

    func run() async throws {
        try await runMigration(from: {
            try group.requireNoURLFile(group.fromURLFile, "--from-url-file", for: "import's --from")
            return bundleURL(from)
        }, to: { try group.targetURL(to) }, options: { MigrationOptions(mapping: try loadMapping(group.mappingFile), restart: restart, aclLoss: aclLoss.policy) }, group: group)
    }
}

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify", abstract: "Compare a target with its source through a migration's id map: counts, record checksums, pointers, files, users and roles.")
    @Option(help: "Source URL") var from: String
    @Option(help: "Target URL") var to: String
    @Option(help: "Only these classes, comma-separated") var classes: String?
    @OptionGroup var group: MigrationOptionGroup

    func run() async throws {
        try await runMigration(from: { try group.sourceURL(from) }, to: { try group.targetURL(to) }, options: {
            MigrationOptions(classes: try parseClasses(classes), mapping: try loadMapping(group.mappingFile))
        }, group: group, verifyOnly: true)
    }
}

struct SamplesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "samples", abstract: "Write sample data.", subcommands: [NCMBExport.self])

    struct NCMBExport: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ncmb-export", abstract: "Write a synthetic NCMB console export of the memo app (deterministic for a seed).")
        @Option(help: "How many MemoClass records") var records = 1000
        @Option(help: "Directory to write") var out: String
        @Option(help: "Seed of the generator") var seed: UInt64 = 1

        func validate() throws { if records < 0 { throw ValidationError("--records must be >= 0") } }

        func run() async throws {
            try await runReportingErrors {
                let s = try NCMBExportSample.write(records: records, seed: seed, to: URL(fileURLWithPath: out))
                emit(.object(["records": .int(Int64(s.records)), "users": .int(Int64(s.users)), "categories": .int(Int64(s.categories)),
                              "files": .int(Int64(s.files)), "directory": .string(out)]),
                     table: "wrote \(s.records) records, \(s.users) users, \(s.categories) categories and \(s.files) files to \(out)",
                     format: defaultFormat())
            }
        }
    }
}

/// Progress of a migration on stderr: a bar per class with rate and ETA on a terminal; else (a log, CI) a line per
/// phase, one when a class starts and ends, and one each time a tenth of the class's records is handled (every
/// ``logStep`` records when the count is unknown), so that a long copy shows it is moving.
final class MigrationProgress: @unchecked Sendable {
    /// Records between two progress lines in a log when the class's count is unknown.
    static let logStep = 10_000
    private let terminal: Bool
    private let lock = NSLock()
    private var started = Date()
    private var current: String?
    private var lastDraw = Date.distantPast
    /// The decile of the class's count (or the multiple of ``logStep``) last logged.
    private var lastLogged = 0

    init(terminal: Bool) { self.terminal = terminal }

    func handle(_ event: MigrationEvent) {
        lock.lock()
        defer { lock.unlock() }
        switch event {
        case .phase(let name):
            endLine()
            if !terminal || name != "records" { write("mbaas: \(name)\n") }
        case .classStarted(let rawSource, let rawTarget, let total):
            let (source, target) = (flat(rawSource), flat(rawTarget))
            endLine()
            started = Date()
            current = source
            lastLogged = 0
            if !terminal { write("mbaas: records \(source) -> \(target): \(total.map { "\($0) to read" } ?? "count unknown")\n") }
        case .progress(let rawSource, let done, let total) where !terminal:
            // Deciles of the count (at most nine lines), or steps of logStep records.
            let mark = total.map { $0 > 0 ? done * 10 / $0 : 0 } ?? done / Self.logStep
            guard mark > lastLogged, done != total else { return }
            lastLogged = mark
            let source = flat(rawSource)
            let elapsed = max(0.001, Date().timeIntervalSince(started))
            let rate = String(format: "%.0f rec/s", Double(done) / elapsed)
            if let total, total > 0 {
                write("mbaas: \(source): \(done) of \(total) (\(done * 100 / total)%, \(rate))\n")
            } else {
                write("mbaas: \(source): \(done) (\(rate))\n")
            }
        case .progress(let rawSource, let done, let total):
            guard Date().timeIntervalSince(lastDraw) > 0.1 || done == total else { return }
            let source = flat(rawSource)
            lastDraw = Date()
            let elapsed = max(0.001, Date().timeIntervalSince(started))
            let rate = Double(done) / elapsed
            var line = "\r\(source) "
            if let total, total > 0 {
                let width = 30, filled = min(width, width * done / total)
                let eta = rate > 0 ? Double(total - done) / rate : 0
                line += "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] \(done)/\(total)"
                line += String(format: " %.0f rec/s ETA %.0fs", rate, eta)
            } else {
                line += "\(done)" + String(format: " %.0f rec/s", rate)
            }
            write(line + "\u{1B}[K")
        case .classFinished(let c):
            endLine()
            let elapsed = max(0.001, Date().timeIntervalSince(started))
            write("mbaas: \(flat(c.source)) -> \(flat(c.target)): read \(c.read), written \(c.written), skipped \(c.skipped), failed \(c.failed)"
                  + String(format: " (%.1fs, %.0f rec/s)\n", elapsed, Double(c.read) / elapsed))
            current = nil
        case .note(let text):
            endLine()
            printNote(text)
        }
    }

    func finish() {
        lock.lock()
        defer { lock.unlock() }
        endLine()
    }

    private func endLine() {
        if terminal, current != nil { write("\n"); current = nil }
    }

    /// To stderr, never failing loudly (a closed or full stderr does not end the migration).
    private func write(_ s: String) { Terminal.writeErr(s) }

    /// A class name as a log line may hold it: control characters escaped, on one line.
    private func flat(_ s: String) -> String { escapingControlCharacters(s, keepNewlines: false) }
}
