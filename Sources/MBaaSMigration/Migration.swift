import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif
public import MBaaSCore

/// Settings of one migration run.
public struct MigrationOptions: Sendable {
    /// The classes to move; `nil`: every class the source lists (``Capabilities/Feature/listClasses``).
    public var classes: [String]?
    public var mapping: MigrationMapping
    /// Records per write: 1000 by default, capped by the target's ``Capabilities/maxBatchSize`` (so a target's own
    /// batch limit decides; an embedded target then writes 1000 records per transaction).
    public var batchSize: Int
    /// Writes in flight at once: record batches, and (unless ``fileConcurrency`` says otherwise) file copies and file
    /// verifications.
    public var concurrency: Int
    /// File copies and file verifications in flight at once; `nil`: ``concurrency``. `mbaas export` writes record
    /// batches one at a time (a bundle's lines in the source's order) and copies 4 files at a time.
    public var fileConcurrency: Int?
    /// What ``fileConcurrency`` comes to: at least 1.
    var fileCopiesInFlight: Int { max(1, fileConcurrency ?? concurrency) }
    /// Plan only: read the source (counts, field types) and write nothing anywhere.
    public var dryRun: Bool
    /// Verify after copying (as ``Migration/verify()`` does).
    public var verify: Bool
    /// Copy users, roles and files (each only where both sides can).
    public var users: Bool
    public var files: Bool
    /// How writes and look-ups are tried again on transient failures (429, 5xx, resets): the core's policy, its
    /// backoff and its cap on `Retry-After`. Batches are not idempotent, so the migration retries them itself (after
    /// looking up what an attempt may have written) rather than through a ``MBaaSCore/RetryingTransport``.
    public var retry: RetryPolicy
    /// Start over: the state's id map, writes in flight and steps are discarded before anything is written (`mbaas
    /// migrate --restart`). Without it, a state whose target holds none of what it says was written is discarded
    /// too (the target is new or another one), and one whose target holds some of it is refused
    /// (``Migration/checkTarget(_:)``).
    public var restart: Bool = false
    /// Attempts per write on transient failures (``retry``'s `maxAttempts`).
    public var maxAttempts: Int {
        get { retry.maxAttempts }
        set { retry.maxAttempts = newValue }
    }

    /// What happens to a record or file whose ACL the target cannot hold (``MigrationMapping/ACLLossPolicy``; a class
    /// of the mapping may say otherwise for its records): by default it fails, named, and is not written.
    public var aclLoss: MigrationMapping.ACLLossPolicy

    /// The default ``retry``: eight attempts, backoff from 50 ms doubling up to 10 s, `Retry-After` honoured up to 60 s.
    public static let defaultRetry = RetryPolicy(maxAttempts: 8, baseDelay: 0.05, maxDelay: 10)

    public init(
        classes: [String]? = nil, mapping: MigrationMapping = MigrationMapping(), batchSize: Int = 1000, concurrency: Int = 4,
        fileConcurrency: Int? = nil, dryRun: Bool = false, verify: Bool = true, users: Bool = true, files: Bool = true,
        maxAttempts: Int? = nil, retry: RetryPolicy = MigrationOptions.defaultRetry, restart: Bool = false,
        aclLoss: MigrationMapping.ACLLossPolicy = .fail
    ) {
        self.restart = restart
        self.aclLoss = aclLoss
        self.classes = classes
        self.mapping = mapping
        self.batchSize = batchSize
        self.concurrency = concurrency
        self.fileConcurrency = fileConcurrency
        self.dryRun = dryRun
        self.verify = verify
        self.users = users
        self.files = files
        self.retry = retry
        if let maxAttempts { self.retry.maxAttempts = maxAttempts }
    }
}

/// What a running migration reports as it goes (for progress bars and logs).
public enum MigrationEvent: Sendable {
    /// A phase starts: `users`, `roles`, `records`, `attachments`, `files`, `pointers`, `verify`.
    case phase(String)
    /// A class starts, with its record count when known.
    case classStarted(source: String, target: String, total: Int?)
    /// Records of a class handled so far (read, whether written or skipped).
    case progress(source: String, done: Int, total: Int?)
    case classFinished(MigrationReport.ClassCounts)
    /// A free-form line (a retry, a resumed batch).
    case note(String)
}

/// Moves records, users, roles and files from one backend to another, resumably, and proves the result.
///
/// ```swift
/// let registry = BackendRegistry([LocalBackendFactory(), NCMBExportBackendFactory(), BundleBackendFactory()])
/// let source = try await registry.open("ncmb-export:Fixtures/Samples/ncmb-memo-export", context: .init(administrative: true))
/// let target = try await registry.open("sqlite:memo.db", context: .init(administrative: true))
/// let state = try MigrationState(directory: URL(fileURLWithPath: "memo.migration"))
/// let report = try await Migration(source: source, target: target, state: state).run()
/// ```
///
/// # How it works
/// 1. **Plan**: the classes (listed by the source or given), their counts (a source on disk reads and checks every
///    object, so malformed input stops the run before anything is written), field types of a first page, and what the
///    target cannot keep. A dry run stops here.
/// 2. **Users, then roles**: each user is imported without a usable password (or with a temporary one), keeping its
///    source id in `sourceObjectId`; roles get their members through the id map.
/// 3. **Records (phase 1)**: page by page from the source, in batches (the target's batch call when it has one) with
///    bounded concurrency; each record keeps its source id (and, where the target sets its own, the source's
///    timestamps); ACL user principals are rewritten through the id map; pointers to records already copied are
///    rewritten, the others are kept for phase 2; file links become files in the target's own style (a file attached
///    to the record where the target has ``Capabilities/Feature/fileAttachment``, else a `File` value into its file
///    store). Each batch is marked pending before it is written and mapped after, in the state's transactions.
/// 4. **Files** that no record links to are copied to the target's file store.
/// 5. **Pointers (phase 2)**: fields left in phase 1 are set through the id map; a pointer to a record that was not
///    migrated is reported, never dropped.
/// 6. **Verify** (``verify()``): records by a checksum over their mapped content, files by size and sha256 (and by
///    their ACL where both stores keep file ACLs), users by user name, e-mail and the fields the import gave them, roles by their members where the target keeps roles.
///
/// Running again resumes: the target is first checked to be the one the state wrote into (``checkTarget(_:)``: a new
/// or removed one starts over, one that cannot be told apart is refused); mapped records are skipped; records that were pending when a run died are looked up on the
/// target by `sourceObjectId` (or by id where the target kept it) before anything is created, so nothing is
/// duplicated, also after `kill -9` between the target's write and the state's. The warnings a run gives about what
/// it wrote (a file the source lacks, an ACL written narrowed, …) are kept in the state, and a later run that skips
/// those writes says them again, marked `(from an earlier run)`: its report describes the target as the first one did.
public final class Migration: Sendable {
    public let source: any Backend
    public let target: any Backend
    public let options: MigrationOptions
    let state: MigrationState?
    let observer: @Sendable (MigrationEvent) -> Void
    let box: ReportBox
    /// File-link fields per source class: the mapping's and those the plan detected.
    let links = Locked<[String: Set<String>]>([:])
    /// What the target keeps, read once (every record asks).
    let traits: TargetTraits
    /// This run's token in the state's kept warnings (``MigrationState/keepWarnings(_:run:)``).
    let runToken = UUID().uuidString
    /// Linked files being copied: batches in flight that link the same file share one copy.
    let fileCopies = SharedFileCopies()
    /// The target's answers for ACLs it stores narrowed.
    let aclNarrowings = Locked<[ACL: ACL]>([:])
    /// Source files linked by records this run left unwritten for their ACL: copied with those records by a later
    /// run, not now as files no record links to.
    let unwrittenLinks = Locked<Set<String>>([])
    private let writing = Locked(false)

    /// Whether ``run()`` got past its plan and its target check, to where it may write (to the target or the state):
    /// a run that failed before that left the target as it found it.
    public var startedWriting: Bool { writing.withLock { $0 } }

    /// `state` may be `nil` only for a dry run.
    public init(
        source: any Backend, target: any Backend, options: MigrationOptions = MigrationOptions(), state: MigrationState?,
        sourceDescription: String = "", targetDescription: String = "", observer: @escaping @Sendable (MigrationEvent) -> Void = { _ in }
    ) {
        self.source = source
        self.target = target
        self.options = options
        self.state = state
        self.observer = observer
        self.traits = TargetTraits(target.capabilities)
        var report = MigrationReport(from: sourceDescription.isEmpty ? source.adapterName : sourceDescription,
                                     to: targetDescription.isEmpty ? target.adapterName : targetDescription)
        report.stateDirectory = state?.directory.path
        report.dryRun = options.dryRun
        // Every mismatch and warning, not only the first ``MigrationReport/maxListed``, one JSON per line.
        var log: NDJSONWriter?
        if let state, !options.dryRun {
            let url = state.directory.appendingPathComponent("mismatches.ndjson")
            _ = FileManager.default.createFile(atPath: url.path, contents: nil, attributes: [.posixPermissions: 0o600])
            log = try? NDJSONWriter(url: url)
            if log != nil { report.mismatchesFile = url.path }
        }
        self.box = ReportBox(report, log: log)
    }

    var mapping: MigrationMapping { options.mapping }

    /// The classes to move, in order.
    func sourceClasses() async throws -> [String] {
        // A bundle is read only once finished: a missing or unfinished one is named as such, whatever the classes.
        try (source as? BundleBackend)?.requireFinished()
        if let classes = options.classes { return classes }
        guard source.capabilities.has(.listClasses) else {
            throw MBaaSError(.invalidRequest,
                             "\(source.adapterName) cannot list its classes\(source.capabilities.note(for: .listClasses).map { " (\($0))" } ?? ""); name them with --classes A,B")
        }
        return try await source.listClasses()
    }

    // MARK: Plan

    /// Reads what the run would move, and writes nothing. A string field of the first page whose value names a file
    /// of the source's file store is a detected file link (unless the mapping says `"fileLink": false`).
    public func plan() async throws -> MigrationPlan {
        var plan = MigrationPlan()
        plan.passwords = mapping.passwords.rawValue
        var fileNames: Set<String> = []
        if options.files && source.capabilities.has(.fileList) {
            let files = try await source.listFiles(prefix: nil, limit: nil)
            plan.files = files.count
            fileNames = Set(files.map(\.reference.name))
            // A file whose ACL is not open to everyone: what is lost where its ACL cannot go along. Where the source
            // reads its files' ACLs one by one, the plan does not read them (a request per file): any may be.
            let reads = readsFileACLs
            let restricted = { (f: FileInfo) in reads || (f.acl.map { !Self.isOpen($0) } ?? false) }
            if !target.capabilities.has(.fileACL), files.contains(where: restricted) {
                plan.unsupported.append(fileACLProblem)
            }
            if !files.isEmpty, source.capabilities.has(.fileACL), !source.capabilities.has(.fileACLListing), !reads, target.capabilities.has(.fileACL) {
                plan.unsupported.append("file ACLs: \(source.adapterName) does not list its files' ACLs\(noted(.fileACLListing, of: source)); files are copied without theirs, as the target's store keeps files given none")
            }
            // Linked files become attachments there, reachable as their records are (where they have no ACL of their
            // own). The source's own attachments lose theirs only where narrower than their record's, which the run
            // finds out and says (a Local attachment uploaded without an ACL has its record's).
            if files.contains(where: { $0.reference.attachment == nil && restricted($0) }), source.capabilities.has(.fileACL),
               target.capabilities.has(.fileAttachment), !target.capabilities.has(.attachmentACL) {
                plan.unsupported.append(attachedFileACLProblem)
            }
        }
        let sourceTypes = source.capabilities.features.filter { $0.rawValue.hasPrefix("value.") }
        try mapping.validate()
        let classList = try await sourceClasses()
        // The fields each class's sampled records have, and the lineage fields they carry from an earlier migration,
        // for the mapping's checks against the source (``MigrationMapping/validate(against:fields:carried:lineage:)``).
        var sampledFields: [String: Set<String>] = [:]
        var carried: [String: Set<String>] = [:]
        let lineage = lineageFields
        for cls in classList {
            var cp = MigrationPlan.ClassPlan(source: cls, target: mapping.targetClass(cls), count: nil, fieldTypes: [:], renames: [:],
                                             drops: [], fileLinks: mapping.fileLinkFields(cls).sorted(), skipped: mapping.isSkipped(cls))
            for (field, rule) in mapping.classes[cls]?.fields ?? [:] {
                if rule.drop { cp.drops.append(field) } else if let r = rule.rename { cp.renames[field] = r }
            }
            cp.drops.sort()
            if !cp.skipped {
                if source.capabilities.has(.count) { cp.count = try await source.count(Query(cls)) }
                let page = try await source.queryPage(Query(cls, limit: min(100, source.capabilities.maxPageSize)))
                var detected: Set<String> = []
                let off = mapping.notFileLinkFields(cls)
                for r in page.records {
                    for (k, v) in r.fields {
                        cp.fieldTypes[k, default: []].insert(v.typeName)
                        if case .string(let s) = v, fileNames.contains(s), !off.contains(k) { detected.insert(k) }
                    }
                }
                sampledFields[cls] = Set(cp.fieldTypes.keys)
                let carries = Set(lineage.map(\.name).filter { name in
                    guard let types = cp.fieldTypes[name] else { return false }
                    return Self.isCarriedLineage(name, types: types)
                })
                if !carries.isEmpty {
                    carried[cls] = carries
                    plan.conversions.append("\(cls): its records carry \(carries.sorted().map { "'\($0)'" }.joined(separator: ", ")) from an earlier migration, which they keep (the first source's values)")
                }
                for field in detected.sorted() where !cp.fileLinks.contains(field) {
                    cp.fileLinks.append(field)
                    plan.conversions.append("\(cls).\(field) holds names of files in the source's file store: copied as file links (\"fileLink\": false in the mapping keeps it a string)")
                }
                links.withLock { $0[cls] = Set(cp.fileLinks) }
                if !target.capabilities.has(.mixedFieldTypes) {
                    plan.unsupported += mixedTypeNotes(cp, sampled: page.records.count)
                }
                // What the target can tell before anything is written (a table too wide for it, a field it lacks), for
                // the first batch's worth of the sample in its final shape: with every pointer in place (phase 1 leaves
                // out those to records not copied yet on a target that makes its own ids, and phase 2 sets them).
                let sample = page.records.prefix(writeBatchSize)
                    .map { r -> Record in
                        let prepared = prepare(r, maps: Maps(), verifying: true)
                        var record = prepared.record
                        for f in prepared.inlineFiles { record.fields[f.field] = .file(f.ref) }   // as the copy will hold them
                        return record
                    }
                if !sample.isEmpty {
                    do { try await target.preflight(className: cp.target, records: Array(sample)) } catch {
                        let e = MBaaSError.wrap(error)
                        plan.unsupported.append([.invalidRequest, .unsupported].contains(e.kind)
                            ? "\(cls): \(target.adapterName) would refuse its records as they are: \(e.message)"
                            : "\(cls): \(target.adapterName) could not check its records before the run: \(e)")
                    }
                }
            }
            plan.classes.append(cp)
        }
        // The mapping against the source, before anything is written: every class entry names a class the source
        // has (where it can list them), every field entry a field its sampled records have, and nothing is renamed
        // onto data.
        var listed: [String]? = options.classes == nil ? classList : nil
        if listed == nil, source.capabilities.has(.listClasses) { listed = try await source.listClasses() }
        try mapping.validate(against: listed, fields: sampledFields, carried: carried, lineage: lineage)
        if options.users && source.capabilities.has(.listUsers) {
            var n = 0
            for try await _ in source.allUsers() { n += 1 }
            plan.users = n
            plan.roles = try await source.listRoles().count
            if !target.capabilities.has(.importUsers) && n > 0 {
                plan.unsupported.append("users: \(target.adapterName) cannot import users\(noted(.importUsers))")
            } else if n > 0 {
                let email = target.capabilities.has(.userEmail)
                if !target.capabilities.has(.userFields) {
                    plan.unsupported.append("users' custom fields\(mapping.sourceIdField.map { " and their source id ('\($0)')" } ?? ""): \(target.adapterName) does not keep them\(noted(.userFields)); users are verified by user name\(email ? " and e-mail" : "")")
                }
                if !email {
                    plan.unsupported.append("users' e-mail addresses: \(target.adapterName) does not keep them\(noted(.userEmail)); users are verified by user name")
                }
            }
        }
        for feature in sourceTypes.sorted(by: { $0.rawValue < $1.rawValue }) where !target.capabilities.has(feature) {
            plan.unsupported.append("\(feature.rawValue.dropFirst(6)) values: \(target.adapterName) does not keep them exactly\(noted(feature))")
        }
        if !target.capabilities.has(.acl) {
            plan.unsupported.append("ACLs: \(target.adapterName) does not enforce per-record ACLs\(noted(.acl)); "
                + (options.aclLoss == .allow
                    ? "records are written without them (--acl-loss allow), each whose ACL is not open to everyone with a warning"
                    : "a record whose ACL is not open to everyone would be readable by everyone there, so it is not written: it fails, named (--acl-loss allow writes it without, with a warning each)")
                + aclLossExceptions + (readsRecordACLsForLoss ? "; each record's ACL is read apart to tell" : ""))
        } else if target.capabilities.has(.aclNarrowing) {
            plan.unsupported.append("ACLs: \(target.adapterName) cannot store every ACL\(noted(.aclNarrowing)); a record whose ACL it cannot store is written with the nearest one it can that grants nobody else more, with a warning per ACL; "
                + (options.aclLoss == .allow
                    ? "one it would store wider is written so (--acl-loss allow), with a warning per record"
                    : "one it would store wider (granting someone other than the writing user more) is not written: it fails, named (--acl-loss allow writes it, with a warning each)")
                + aclLossExceptions)
        }
        // A source that enforces ACLs, read without an administrative identity, shows only what the caller may read.
        if partialSource { plan.unsupported.append(partialSourceProblem) }
        // A source whose records are read without their ACL: each is read apart. (A source that enforces none may
        // still give ACLs with its records, as an NCMB export does: those go along as given.)
        if readsRecordACLs {
            plan.conversions.append("ACLs: \(source.adapterName) reads records without their ACLs; each record's is read apart (a request per record) and written with it")
        }
        if target.capabilities.has(.emptyStringsAbsent) {
            plan.unsupported.append("empty strings: \(target.adapterName) reads them back absent\(noted(.emptyStringsAbsent)); verification counts an empty string and no value as equal, and each class and field whose records hold one is warned (with the count and the first record ids)")
        }
        if !target.capabilities.has(.fileAttachment) && !target.capabilities.has(.files) {
            plan.unsupported.append("files: \(target.adapterName) has no file store")
        }
        if let f = mapping.sourceIdField { plan.conversions.append("every record keeps its source id in '\(f)'") }
        if target.capabilities.has(.clientIds) { plan.conversions.append("ids: the target keeps the source's ids where it accepts them") }
        if target.capabilities.has(.clientTimestamps) {
            plan.conversions.append("timestamps: \(target.adapterName) keeps the source's createdAt/updatedAt as its own (a store that sets its own, written from it later, keeps them in '\(MigrationMapping.defaultSourceCreatedAtField)'/'\(MigrationMapping.defaultSourceUpdatedAtField)' by default)")
        } else if mapping.keepSourceTimestamps {
            plan.conversions.append("timestamps: \(target.adapterName) sets its own createdAt/updatedAt (the time of writing); the source's go to '\(mapping.sourceCreatedAtField)'/'\(mapping.sourceUpdatedAtField)', where records that already carry them from an earlier migration keep theirs")
        } else {
            plan.conversions.append("timestamps: \(target.adapterName) sets its own createdAt/updatedAt (the time of writing); the source's are not kept (keepSourceTimestamps is false)")
        }
        if target.capabilities.has(.fileAttachment) {
            plan.conversions.append("file links: files are attached to their records in \(target.adapterName)'s own way")
        } else if target.capabilities.has(.files) {
            plan.conversions.append("file links: files go to the target's file store and fields hold File values")
        }
        plan.conversions.append("pointers and ACL user ids are rewritten through the id map")
        return plan
    }

    /// The lineage fields this run writes into each record, with their entries in the mapping: the source id (unless
    /// switched off) and, where the target sets its own timestamps and the mapping keeps the source's, those.
    var lineageFields: [(name: String, path: String)] {
        var out: [(name: String, path: String)] = []
        if let f = mapping.sourceIdField { out.append((f, "$.sourceIdField")) }
        if mapping.keepSourceTimestamps && !traits.clientTimestamps {
            out.append((mapping.sourceCreatedAtField, "$.sourceCreatedAtField"))
            out.append((mapping.sourceUpdatedAtField, "$.sourceUpdatedAtField"))
        }
        return out
    }

    /// Whether a source field is lineage an earlier migration wrote: it has a lineage field's default name and holds
    /// what the migration writes there (strings for the source id, dates for the timestamps; nulls aside).
    static func isCarriedLineage(_ name: String, types: Set<String>) -> Bool {
        let kinds = types.subtracting(["null"])
        switch name {
        case MigrationMapping.defaultSourceIdField: return kinds == ["string"]
        case MigrationMapping.defaultSourceCreatedAtField, MigrationMapping.defaultSourceUpdatedAtField: return kinds == ["Date"]
        default: return false
        }
    }

    /// The lineage value a source record carries in `field` from an earlier migration (``isCarriedLineage(_:types:)``),
    /// which it keeps; `nil` when it carries none.
    static func carriedLineage(_ record: Record, _ field: String) -> Value? {
        guard let v = record.fields[field] else { return nil }
        switch (field, v) {
        case (MigrationMapping.defaultSourceIdField, .string(let s)) where !s.isEmpty: return v
        case (MigrationMapping.defaultSourceCreatedAtField, .date), (MigrationMapping.defaultSourceUpdatedAtField, .date): return v
        default: return nil
        }
    }

    /// The key a source record is found by on the target: the source id it carries from an earlier migration
    /// (kept in ``MigrationMapping/sourceIdField``), else its id.
    func lineageKey(_ record: Record) -> String {
        if let f = mapping.sourceIdField, mapping.rule(className: record.className, field: f) == nil,
           case .string(let s)? = Self.carriedLineage(record, f) { return s }
        return record.id ?? ""
    }

    /// The source fields of a class whose sampled values have more than one type (numbers are one type; nulls none),
    /// for a target that keeps one type per field: the records whose value differs from the field's type will be
    /// refused there.
    func mixedTypeNotes(_ cp: MigrationPlan.ClassPlan, sampled: Int) -> [String] {
        var notes: [String] = []
        for (field, types) in cp.fieldTypes.sorted(by: { $0.key < $1.key }) where !cp.drops.contains(field) && !cp.fileLinks.contains(field) {
            let kinds = Set(types.compactMap { $0 == "null" ? nil : ($0 == "int" || $0 == "double") ? "number" : $0 })
            guard kinds.count > 1 else { continue }
            let name = cp.renames[field] ?? field
            notes.append("\(cp.source).\(field) holds \(kinds.sorted().joined(separator: " and ")) values (among the first \(sampled) records): "
                         + "\(target.adapterName) keeps one type per field\(noted(.mixedFieldTypes)); "
                         + "records whose \(name) has another type than the field's are refused and reported failed")
        }
        return notes
    }

    // MARK: Run

    /// Plans, then (unless this is a dry run) copies and verifies. Throws only for what stops the whole run (a
    /// malformed source, an unreachable target); per-record failures are in the report.
    public func run() async throws -> MigrationReport {
        let plan = try await plan()
        box.update { $0.plan = plan }
        if options.dryRun { return box.value }
        guard let state else { throw MBaaSError(.invalidRequest, "a migration that writes needs a state folder") }
        // The state belongs to this target (or is discarded, or the run refused), before anything is written.
        try await checkTarget(state)
        writing.withLock { $0 = true }
        for note in plan.unsupported { box.update { $0.problem(note) } }
        try await runStages(MigrationContext(migration: self, state: state, plan: plan))
        return box.value
    }
}

/// The target's capabilities that decide how each record is prepared and checked.
struct TargetTraits: Sendable {
    let keepsIds: Bool
    let attachesFiles: Bool
    let acl: Bool
    let clientTimestamps: Bool
    let roles: Bool
    /// Some ACLs are stored narrowed (``MBaaSCore/Capabilities/Feature/aclNarrowing``).
    let narrowsACLs: Bool
    /// An empty string reads back absent (``MBaaSCore/Capabilities/Feature/emptyStringsAbsent``).
    let emptyStringsAbsent: Bool

    init(_ c: Capabilities) {
        keepsIds = c.has(.clientIds)
        attachesFiles = c.has(.fileAttachment)
        acl = c.has(.acl)
        clientTimestamps = c.has(.clientTimestamps)
        roles = c.has(.roles)
        narrowsACLs = c.has(.acl) && c.has(.aclNarrowing)
        emptyStringsAbsent = c.has(.emptyStringsAbsent)
    }
}

extension Migration {
    /// Records per write: ``MigrationOptions/batchSize``, capped by the target's batch limit, at least 1.
    var writeBatchSize: Int {
        max(1, min(options.batchSize, target.capabilities.maxBatchSize > 0 ? target.capabilities.maxBatchSize : options.batchSize))
    }

    /// Whether a class's records whose ACL the target cannot hold (and the files they link) are written anyway: the
    /// mapping's `aclLoss` for the class, else ``MigrationOptions/aclLoss``.
    func allowsACLLoss(_ cls: String) -> Bool { mapping.aclLoss(cls, default: options.aclLoss) == .allow }

    /// The classes whose mapping entry says otherwise than the run's ``MigrationOptions/aclLoss``, as the plan quotes
    /// them: ` (allow for A, B, as the mapping says)`, or nothing.
    var aclLossExceptions: String {
        let other: MigrationMapping.ACLLossPolicy = options.aclLoss == .allow ? .fail : .allow
        let names = mapping.classes.filter { $0.value.aclLoss == other }.map(\.key).sorted()
        return names.isEmpty ? "" : " (\(other.rawValue) for \(names.joined(separator: ", ")), as the mapping says)"
    }

    /// Whether the source enforces ACLs (``MBaaSCore/Capabilities/Feature/acl`` or
    /// ``MBaaSCore/Capabilities/Feature/aclRead``) without proving that this caller reads everything
    /// (``MBaaSCore/Capabilities/Feature/completeReads``): records and files others keep private may be unseen.
    var partialSource: Bool {
        let c = source.capabilities
        return (c.has(.acl) || c.has(.aclRead)) && !c.has(.completeReads)
    }

    /// What the plan and the report say of a ``partialSource``: only what the caller can read is moved, and how to
    /// read it all (the source's note).
    var partialSourceProblem: String {
        "partial source: \(source.adapterName) enforces ACLs and this caller has no administrative identity there, so only what it may read is moved; "
            + "records and files others keep private are neither copied nor counted, and verification cannot see them"
            + (source.capabilities.note(for: .completeReads).map { " (to move everything: \($0))" } ?? "")
    }

    /// A side's note on a feature (the target's unless told), as plan lines and problems quote it: ` (note)`, or
    /// nothing.
    func noted(_ feature: Capabilities.Feature, of side: (any Backend)? = nil) -> String {
        (side ?? target).capabilities.note(for: feature).map { " (\($0))" } ?? ""
    }
}

/// The report under construction, shared by concurrent batches.
final class ReportBox: @unchecked Sendable {   // the log file is written only under the report's lock
    private let report: Locked<MigrationReport>
    private let log: NDJSONWriter?
    init(_ report: MigrationReport, log: NDJSONWriter? = nil) {
        self.report = Locked(report)
        self.log = log
    }
    deinit { log?.close() }
    var value: MigrationReport { report.value }
    /// Changes the report; mismatches and warnings it adds go to the log file at once, in order (under the lock).
    func update<T>(_ body: (inout MigrationReport) -> T) -> T {
        report.withLock { report in
            let result = body(&report)
            if !report.unlogged.isEmpty {
                for (m, warning) in report.unlogged {
                    var j = m.json.objectValue ?? [:]
                    if warning { j["warning"] = true }
                    try? log?.append(.object(j))
                }
                report.unlogged.removeAll()
            }
            return result
        }
    }
}

/// SHA-256 as lowercase hex.
func sha256Hex(_ data: Data) -> String { SHA256.hash(data: data).lowercaseHex }
