import MBaaSCore

/// What every stage of a run works with: the migration (source, target, options, the report under construction), the
/// state it resumes from, and the plan the run made before writing anything.
struct MigrationContext: Sendable {
    let migration: Migration
    let state: MigrationState
    let plan: MigrationPlan
}

/// One stage of a migration run (users, roles, records, files, pointers, finishing the target, verification), in the
/// spirit of GRDB's `DatabaseMigrator`: a named, ordered step.
///
/// Contract:
/// - ``Migration/stages`` runs the stages in their order, each whose ``applies(to:)`` is true, one at a time; before
///   one that is ``announced`` the observer gets ``MigrationEvent/phase(_:)`` with its ``name``.
/// - A stage throws only for what stops the whole run (cancellation, an unreachable target, a failing state);
///   per-record and per-file failures go into the report.
/// - A stage resumes through the state: running it again after a run died in it skips what the state says is done and
///   writes nothing twice.
protocol MigrationStage: Sendable {
    /// The phase name observers see (``MigrationEvent/phase(_:)``).
    var name: String { get }
    /// Whether the run announces the stage as a phase (default `true`).
    var announced: Bool { get }
    /// Whether the stage has work in this run (its options and both sides' capabilities).
    func applies(to context: MigrationContext) -> Bool
    func run(_ context: MigrationContext) async throws
}

extension MigrationStage {
    var announced: Bool { true }
    func applies(to context: MigrationContext) -> Bool { true }
}

extension Migration {
    /// The stages of a run that writes, in order.
    static let stages: [any MigrationStage] = [
        UsersStage(), RolesStage(), RecordsStage(), StandaloneFilesStage(), PointersStage(), FinishTargetStage(), VerifyStage(),
    ]

    /// Whether users move at all: asked (``MigrationOptions/users``), listed by the source and imported by the target.
    var movesUsers: Bool {
        options.users && source.capabilities.has(.listUsers) && target.capabilities.has(.importUsers)
    }

    /// Runs the stages in order, each that applies, announcing each that says so. The warnings each stage gives are
    /// kept in the state as it ends; when all have run, those earlier runs gave and this one did not are said again.
    func runStages(_ context: MigrationContext) async throws {
        for stage in Self.stages where stage.applies(to: context) {
            if stage.announced { observer(.phase(stage.name)) }
            try await stage.run(context)
            try await keepWarnings(context.state)
        }
        // What earlier runs warned of about writes this run skipped (``sayEarlierWarnings(_:)``).
        try await sayEarlierWarnings(context.state)
    }
}

/// Users, with their passwords as the source and target allow (``Migration/copyUsers(_:)``); a target without roles
/// is said to lose the source's roles.
struct UsersStage: MigrationStage {
    var name: String { "users" }
    func applies(to context: MigrationContext) -> Bool { context.migration.movesUsers }
    func run(_ context: MigrationContext) async throws {
        let m = context.migration
        try await m.copyUsers(context.state)
        // Records' pointers and ACLs look users up from here on: from memory, once seen.
        context.state.settle(.user, className: "_User")
        if !m.target.capabilities.has(.roles), let roles = try? await m.source.listRoles(), !roles.isEmpty {
            m.box.update { $0.problem("\(roles.count) roles not carried: \(m.target.adapterName) has no roles\(m.noted(.roles))") }
        }
    }
}

/// Roles and their members, after the users they name (``Migration/copyRoles(_:)``).
struct RolesStage: MigrationStage {
    var name: String { "roles" }
    func applies(to context: MigrationContext) -> Bool {
        context.migration.movesUsers && context.migration.target.capabilities.has(.roles)
    }
    func run(_ context: MigrationContext) async throws { try await context.migration.copyRoles(context.state) }
}

/// Records class by class (phase 1), with their linked files and attachments (``Migration/copyRecords(_:_:)``).
struct RecordsStage: MigrationStage {
    var name: String { "records" }
    func run(_ context: MigrationContext) async throws {
        for cp in context.plan.classes where !cp.skipped {
            try await context.migration.copyRecords(cp, context.state)
            context.state.settle(.record, className: cp.source)
        }
    }
}

/// Files no record links to (``Migration/copyStandaloneFiles(_:)``), when ``MigrationOptions/files``.
struct StandaloneFilesStage: MigrationStage {
    var name: String { "files" }
    func applies(to context: MigrationContext) -> Bool { context.migration.options.files }
    func run(_ context: MigrationContext) async throws { try await context.migration.copyStandaloneFiles(context.state) }
}

/// Pointer fields the records stage left, through the id map (phase 2, ``Migration/rewritePointers(_:)``).
struct PointersStage: MigrationStage {
    var name: String { "pointers" }
    func run(_ context: MigrationContext) async throws { try await context.migration.rewritePointers(context.state) }
}

/// A bundle target is finished (its manifest written) once everything is in it; not announced as a phase.
struct FinishTargetStage: MigrationStage {
    var name: String { "finish" }
    var announced: Bool { false }
    func applies(to context: MigrationContext) -> Bool { context.migration.target is BundleBackend }
    func run(_ context: MigrationContext) async throws {
        guard let bundle = context.migration.target as? BundleBackend else { return }
        await bundle.setSource(context.migration.box.value.from)
        try await bundle.finish()
    }
}

/// Every source record, user, role and file checked on the target (``Migration/verify(into:)``), when
/// ``MigrationOptions/verify``.
struct VerifyStage: MigrationStage {
    var name: String { "verify" }
    func applies(to context: MigrationContext) -> Bool { context.migration.options.verify }
    func run(_ context: MigrationContext) async throws {
        releaseFreedMemory()
        try await context.migration.verify(into: context.state)
    }
}
