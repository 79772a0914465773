public import Foundation
public import MBaaSCore
import GRDB

/// What one ``ReplicaBackend/sync(_:)`` does.
public struct SyncOptions: Sendable {
    public enum Direction: String, Sendable, Hashable { case both, down, up }
    public var direction: Direction
    /// The classes to sync (`nil`: every `localAndServer` class, and every class with queued writes).
    public var classes: [String]?
    /// Overrides each class's ``ReplicaPolicy/merge`` for this run.
    public var merge: ReplicaPolicy.MergeMode?
    /// Runs the ghost scan (records deleted on the server) on this run whatever the count says.
    public var ghostScan: Bool
    /// The ghost scan also runs on every `ghostScanEvery`-th sync down of a class (the first included, once the replica
    /// holds a synced copy of the class: before that nothing can be a ghost).
    public var ghostScanEvery: Int
    /// Records per page of sync down.
    public var pageSize: Int
    /// Batch calls of queued creates sync up keeps in flight at once (runs of distinct records, none holding a
    /// pointer; 1: one call after the other). Default 4, as the migration.
    public var createCallsInFlight: Int
    /// Progress lines for long runs (`Memo: 1200 down`), called on any task.
    public var progress: (@Sendable (String) -> Void)?

    public init(direction: Direction = .both, classes: [String]? = nil, merge: ReplicaPolicy.MergeMode? = nil,
                ghostScan: Bool = false, ghostScanEvery: Int = 10, pageSize: Int = 200, createCallsInFlight: Int = 4,
                progress: (@Sendable (String) -> Void)? = nil) {
        self.createCallsInFlight = max(1, createCallsInFlight)
        self.direction = direction
        self.classes = classes
        self.merge = merge
        self.ghostScan = ghostScan
        self.ghostScanEvery = ghostScanEvery
        self.pageSize = pageSize
        self.progress = progress
    }
}

/// What a sync did, per class, and how it ended.
public struct SyncReport: Sendable {
    public struct ClassSummary: Sendable, Hashable {
        /// Records written into the replica by sync down.
        public var down = 0
        /// Queued writes the remote accepted.
        public var up = 0
        /// Records waiting for a resolution after this run (conflicts and refusals).
        public var conflicts = 0
        /// Synced records the ghost scan removed (deleted on the server, or no longer selected by `where`).
        public var ghostsRemoved = 0
        /// Synced copies older than the class's lifeSpan, removed from the replica.
        public var pruned = 0
        /// Remote records sync down left out (see ``SyncReport/refusedDown``).
        public var refused = 0
        public init() {}
    }

    public enum Outcome: Sendable, Hashable {
        /// Everything queued was sent (or waits for a resolution, see ``SyncReport/conflicts``).
        case complete
        /// The remote could not be reached (after retries); nothing was lost, the outbox is kept.
        case unreachable(String)
        /// The remote refused the session: sync up paused, the outbox is kept. Log in again.
        case sessionRefused(String)
    }

    public var classes: [String: ClassSummary] = [:]
    public var outcome: Outcome = .complete
    /// Records waiting for a resolution after this run.
    public var conflicts: [SyncConflict] = []
    /// Remote records sync down could not keep, each with its reason (`remote` set, `local` nil): an id holding NUL
    /// (U+0000), which the replica (SQLite, as GRDB binds text) would cut short and so write over another record.
    /// Kept in the replica and listed by every sync down of the class until the remote no longer has them (a ghost
    /// scan forgets them); the CLI exits 8 when there are any.
    public var refusedDown: [SyncConflict] = []

    /// `{"outcome":"complete"|"unreachable"|"sessionRefused","message":…,"classes":{"Memo":{"down":N,"up":N,
    /// "conflicts":N,"ghostsRemoved":N,"pruned":N,"refused":N}},"conflicts":[…],"refusedDown":[…]}`
    public var json: JSON {
        var classesObject = JSONObject()
        for name in classes.keys.sorted() {
            let s = classes[name]!
            classesObject[name] = .object(["down": .int(Int64(s.down)), "up": .int(Int64(s.up)), "conflicts": .int(Int64(s.conflicts)),
                                           "ghostsRemoved": .int(Int64(s.ghostsRemoved)), "pruned": .int(Int64(s.pruned)),
                                           "refused": .int(Int64(s.refused))])
        }
        var o: JSONObject = [:]
        switch outcome {
        case .complete: o["outcome"] = "complete"
        case .unreachable(let m): o["outcome"] = "unreachable"; o["message"] = .string(m)
        case .sessionRefused(let m): o["outcome"] = "sessionRefused"; o["message"] = .string(m)
        }
        o["classes"] = .object(classesObject)
        o["conflicts"] = .array(conflicts.map(\.json))
        o["refusedDown"] = .array(refusedDown.map(\.json))
        return .object(o)
    }
}

/// The state of a replica, as `mbaas sync status` prints it.
public struct ReplicaStatus: Sendable {
    public struct ClassStatus: Sendable, Hashable {
        /// Queued writes (after coalescing).
        public var pending: Int
        public var conflicts: Int
        public var lastSyncDown: Date?
        public var lastSyncUp: Date?
    }
    /// Whether the remote answered (`nil`: not probed).
    public var reachable: Bool?
    public var classes: [String: ClassStatus]

    /// `{"remote":{"reachable":bool},"classes":{"Memo":{"pending":N,"conflicts":N,"lastSyncDown":ISO|null,"lastSyncUp":ISO|null}}}`
    public var json: JSON {
        var classesObject = JSONObject()
        for name in classes.keys.sorted() {
            let c = classes[name]!
            classesObject[name] = .object([
                "pending": .int(Int64(c.pending)), "conflicts": .int(Int64(c.conflicts)),
                "lastSyncDown": c.lastSyncDown.map { .string(ISO8601.format($0)) } ?? .null,
                "lastSyncUp": c.lastSyncUp.map { .string(ISO8601.format($0)) } ?? .null,
            ])
        }
        return .object(["remote": .object(["reachable": reachable.map(JSON.bool) ?? .null]), "classes": .object(classesObject)])
    }
}

/// Why a sync stopped early.
enum SyncStop: Error {
    case unreachable(MBaaSError)
    case sessionRefused(MBaaSError)
}

/// The result of sending one queued write.
enum SentOutcome: Sendable {
    case stored(MBaaSCore.Record)
    case deleted
}

extension MBaaSError {
    /// A failure retrying may cure: the server was unreachable, overloaded or asked to wait.
    var isTransient: Bool { kind == .transport || kind == .unavailable || kind == .rateLimited }
}

extension ReplicaBackend {
    /// Syncs the replica with its remote: sync up (the outbox, in order per record), then sync down (what changed on
    /// the server since the class's high-water mark, page by page, the mark saved after each page so that an
    /// interrupted run resumes), then the ghost scan and lifeSpan pruning.
    ///
    /// # Contract
    /// - Sync up sends each record's writes in the order they were made. Before sending, a write is marked in flight
    ///   (committed); after a crash or a dropped connection, a write in flight is first looked up on the remote (a
    ///   create by its id, an update by the record's version, a delete by its absence) so that it is neither lost nor
    ///   applied twice. Updates of plain values are idempotent and simply sent again.
    /// - Where the remote declares `batch` (and takes client ids), a run of queued creates of distinct records goes in
    ///   batch calls of up to ``MBaaSCore/Capabilities/maxBatchSize``, every entry marked in flight first; a create the
    ///   batch refused, or every create of a call that failed, goes on one at a time (looked up first, as above).
    /// - `overwrite` writes over the server. `leaveIfChanged` (and `lockForUpdate`) sends the version the replica last
    ///   saw (``MBaaSCore/RecordUpdate/expectedVersion`` where the remote declares optimistic locking, else a compare of
    ///   `updatedAt` first): when the server changed meanwhile, the server's record is left alone and the local one is
    ///   marked ``SyncStatus/conflicted``, with the server's copy kept for ``conflicts(className:)``. The conflict
    ///   handler (``setConflictHandler(_:)``) may resolve it at once.
    /// - A write the remote refuses (`invalidRequest`, `forbidden`, ...) waits as a conflict naming the refusal; later
    ///   writes of that record wait behind it. Nothing is dropped in silence.
    /// - `transport`, `unavailable` and `rateLimited` failures are retried with backoff (``retry``); then the run ends
    ///   with ``SyncReport/Outcome/unreachable(_:)`` and every write stays queued. `unauthorized` ends it with
    ///   ``SyncReport/Outcome/sessionRefused(_:)``.
    /// - Sync down never overwrites a record with queued writes or a conflict.
    public func sync(_ options: SyncOptions = SyncOptions()) async throws -> SyncReport {
        var report = SyncReport()
        do {
            if options.direction != .down {
                try await syncUp(options, report: &report)
                if conflictsResolvedDuringRun {
                    conflictsResolvedDuringRun = false
                    try await syncUp(options, report: &report)
                }
            }
            if options.direction != .up {
                for className in try await classesToSync(options) where policy(className).persistence == .localAndServer {
                    try await syncDown(className, options: options, report: &report)
                }
            }
        } catch let stop as SyncStop {
            switch stop {
            case .unreachable(let e): report.outcome = .unreachable(e.description)
            case .sessionRefused(let e): report.outcome = .sessionRefused(e.description)
            }
        }
        report.conflicts = try await conflicts(className: nil)
        for conflict in report.conflicts where options.classes == nil || options.classes!.contains(conflict.className) {
            report.classes[conflict.className, default: .init()].conflicts += 1
        }
        return report
    }

    func classesToSync(_ options: SyncOptions) async throws -> [String] {
        if let classes = options.classes { return classes }
        return configuration.syncedClasses
    }

    // MARK: Sync up

    func syncUp(_ options: SyncOptions, report: inout SyncReport) async throws {
        try await sendQueuedFiles(progress: options.progress)
        let filter = options.classes
        let entries = try await store.read { db in try ReplicaStore.allEntries(db, classes: filter) }
        var waiting = Set<String>()
        var index = 0
        while index < entries.count {
            let listed = entries[index]
            index += 1
            let key = "\(listed.className)/\(listed.id)"
            if waiting.contains(key) { continue }
            if listed.blocked != nil { waiting.insert(key); continue }
            if Self.batchable(listed), case let batchSize = try await createBatchSize(), batchSize > 1 {
                // Runs of queued creates (one per record, in outbox order) go in batch calls; up to
                // `createCallsInFlight` runs of distinct records at once when none of them points at anything (a
                // pointer may name a record of an earlier run, which the remote may check before it exists).
                let runs = Self.createRuns(entries, after: listed, index: &index, batchSize: batchSize,
                                           limit: options.createCallsInFlight, waiting: waiting)
                if runs.count > 1, runs.allSatisfy({ $0.allSatisfy(Self.pointsNowhere) }) {
                    for k in try await sendCreateRuns(runs, merge: options.merge, progress: options.progress, report: &report) {
                        waiting.insert(k)
                    }
                    continue
                }
                if runs.count > 1 || runs[0].count > 1 {
                    // One run, or runs with pointers: one call after the other, in outbox order.
                    for r in runs {
                        for k in try await sendCreates(r, merge: options.merge, progress: options.progress, report: &report).waiting { waiting.insert(k) }
                    }
                    continue
                }
                // A lone create: the one-entry path below.
            }
            // The entry as it is now (a local write may have coalesced into it), marked in flight.
            let marked: OutboxEntry? = try await store.write { db in
                guard let entry = try ReplicaStore.entry(db, seq: listed.seq) else { return nil }
                try ReplicaStore.markInFlight(db, entry)
                return entry
            }
            guard let entry = marked else { continue }
            options.progress?("\(entry.className): sending \(entry.operation.rawValue) \(entry.id)")
            if try await send(entry, merge: options.merge) {
                report.classes[entry.className, default: .init()].up += 1
            } else {
                waiting.insert(key)
            }
        }
    }

    /// Sends one entry with retries; `true` when the remote took it, `false` when it now waits (conflict, refusal).
    func send(_ original: OutboxEntry, merge: ReplicaPolicy.MergeMode?) async throws -> Bool {
        var entry = original
        var attempt = 0
        while true {
            do {
                if entry.inflight, let done = try await lookUp(entry) {
                    try await applySent(entry, done)
                    return true
                }
                let outcome = try await perform(entry, merge: merge)
                try await applySent(entry, outcome)
                return true
            } catch let e as MBaaSError {
                if e.isTransient {
                    // A server that answered 5xx or 429 did not take the write; a dropped connection may have.
                    let answered = e.httpStatus != nil && (e.kind == .unavailable || e.kind == .rateLimited)
                    attempt += 1
                    if attempt >= max(1, retry.maxAttempts) {
                        if answered {
                            let seq = entry.seq
                            try await store.write { db in try db.execute(sql: "UPDATE replica_outbox SET inflight = 0 WHERE seq = ?", arguments: [seq]) }
                        }
                        throw SyncStop.unreachable(e)
                    }
                    try? await sleep(retry.delay(afterAttempt: attempt - 1, retryAfter: e.retryAfter))
                    entry.inflight = entry.inflight || !answered
                    continue
                }
                switch e.kind {
                case .unauthorized:
                    throw SyncStop.sessionRefused(e)
                case .conflict:
                    let current = try? await remote.get(className: entry.className, id: entry.id)
                    try await markWaiting(entry, reason: "conflict", remote: current)
                    return false
                case .notFound where entry.operation == .delete:
                    try await applySent(entry, .deleted)
                    return true
                case .notFound where entry.operation == .update:
                    try await markWaiting(entry, reason: "conflict", remote: nil)
                    return false
                default:
                    try await markWaiting(entry, reason: e.description, remote: nil)
                    return false
                }
            }
        }
    }

    /// Whether a write in flight already reached the remote: the remote's record when it did (`.deleted` for a delete),
    /// `nil` when it must be sent (again).
    func lookUp(_ entry: OutboxEntry) async throws -> SentOutcome? {
        func current() async throws -> MBaaSCore.Record? {
            do { return try await remote.get(className: entry.className, id: entry.id) } catch let e as MBaaSError where e.kind == .notFound {
                return nil
            }
        }
        switch entry.operation {
        case .create:
            if let found = try await current() { return .stored(found) }
            return try await findLostCreate(entry).map(SentOutcome.stored)
        case .delete:
            return try await current() == nil ? .deleted : nil
        case .update:
            let changes = try Self.changes(of: entry.payload, sealing: sealing)
            let idempotent = changes.values.allSatisfy { op in
                if case .set = op { return true }
                if case .delete = op { return true }
                return false
            }
            if idempotent { return nil }
            guard let record = try await current() else { return nil }
            let state = try await store.read { db in try ReplicaStore.state(db, className: entry.className, id: entry.id) }
            if let seen = state?.remoteVersion, let now = record.version { return seen == now ? nil : .stored(record) }
            if let seen = state?.remoteUpdatedAt, let now = record.updatedAt { return seen == Millis.of(now) ? nil : .stored(record) }
            return nil
        }
    }

    func perform(_ entry: OutboxEntry, merge: ReplicaPolicy.MergeMode?) async throws -> SentOutcome {
        var policy = self.policy(entry.className)
        if let merge { policy.merge = merge }
        let checks = policy.checksServerVersion && !entry.force
        let acl = try entry.payload["acl"].flatMap { j throws(MBaaSError) in j.isNull ? nil : try ACL(json: j) }
        switch entry.operation {
        case .create:
            let record = try createdRecord(entry)
            do {
                if try await remoteRefusesIds() { throw MBaaSError(.invalidRequest, "client ids refused").refusing(MBaaSError.recordIdKey) }
                let stored = try await remote.create(record)
                try await noteTakesIds(entry, stored)
                return .stored(stored)
            } catch let e as MBaaSError where e.refusesRecordId {
                try await store.write { db in try ReplicaStore.setMeta(db, Self.refusesIdsKey, "1") }
                var anonymous = record
                anonymous.id = nil
                let stored = try await remote.create(anonymous)
                guard let newId = stored.id else { throw MBaaSError(.decoding, "the remote created \(entry.className) without an id") }
                let className = entry.className, old = entry.id
                try await store.write { db in try ReplicaStore.replaceId(db, className: className, from: old, to: newId) }
                return .stored(stored)
            }
        case .update:
            let changes = try Self.changes(of: entry.payload, sealing: sealing)
            let expected = try await expectedVersion(entry, checks: checks)
            return .stored(try await remote.update(className: entry.className, id: entry.id,
                                                   RecordUpdate(changes: changes, expectedVersion: expected, acl: acl)))
        case .delete:
            let expected = try await expectedVersion(entry, checks: checks)
            try await remote.delete(className: entry.className, id: entry.id, expectedVersion: expected)
            return .deleted
        }
    }

    /// The version to send with an update or delete that checks the server: the one last seen where the remote
    /// locks optimistically; else the server's `updatedAt` is compared first (a `conflict` when it moved).
    func expectedVersion(_ entry: OutboxEntry, checks: Bool) async throws -> String? {
        guard checks else { return nil }
        let state = try await store.read { db in try ReplicaStore.state(db, className: entry.className, id: entry.id) }
        if remote.capabilities.has(.optimisticLocking), let seen = state?.remoteVersion { return seen }
        let current = try await remote.get(className: entry.className, id: entry.id)
        if let seen = state?.remoteUpdatedAt, let now = current.updatedAt, Millis.of(now) != seen {
            throw MBaaSError(.conflict, "\(entry.className)/\(entry.id) changed on the server since the replica last saw it")
        }
        return nil
    }

    /// Records the remote's answer: the entry leaves the outbox; when it was the record's last, the replica takes the
    /// server's copy and the record is synced.
    func applySent(_ entry: OutboxEntry, _ outcome: SentOutcome) async throws {
        try await applySent([(entry, outcome)])
    }

    /// Applies several answers in one transaction (a batch call's), each as ``applySent(_:_:)`` does.
    func applySent(_ answers: [(entry: OutboxEntry, outcome: SentOutcome)]) async throws {
        guard !answers.isEmpty else { return }
        let policies = Dictionary(answers.map { ($0.entry.className, self.policy($0.entry.className)) }) { a, _ in a }
        let sealing = self.sealing
        let now = store.now
        try await store.write { db in
            for (entry, outcome) in answers {
                try Self.applySent(db, entry, outcome, policy: policies[entry.className]!, sealing: sealing, now: now)
            }
        }
    }

    /// One answer applied inside the caller's transaction: the entry leaves the outbox; a stored record becomes the
    /// synced copy unless later entries of it still wait; its conflict, if any, is cleared.
    static func applySent(_ db: GRDB.Database, _ entry: OutboxEntry, _ outcome: SentOutcome, policy: ReplicaPolicy,
                          sealing: ReplicaSealing, now: Int64) throws {
        try ReplicaStore.removeEntry(db, seq: entry.seq)
        let id = try ReplicaStore.resolve(db, className: entry.className, id: entry.id)
        let remaining = try ReplicaStore.entries(db, className: entry.className, id: id)
        switch outcome {
        case .stored(let remoteRecord):
            if remaining.isEmpty {
                let row = try ReplicaStore.loadRow(db, className: entry.className, id: id)
                var copy = remoteRecord
                copy.id = id
                copy.fields = try sealing.sealFields(remoteRecord.fields, encrypted: policy.encryptedFields)
                try ReplicaStore.saveRow(db, copy, version: (row?.localVersion ?? 0) + 1,
                                         createdAt: remoteRecord.createdAt.map(Millis.of) ?? now,
                                         updatedAt: remoteRecord.updatedAt.map(Millis.of) ?? now)
                try ReplicaStore.markSynced(db, className: entry.className, id: id, remote: remoteRecord, now: now)
            } else {
                try db.execute(sql: "UPDATE replica_state SET remote_version = ?, remote_updated_at = ? WHERE class = ? AND id = ?",
                               arguments: [remoteRecord.version, remoteRecord.updatedAt.map(Millis.of), entry.className, id])
            }
        case .deleted:
            if remaining.isEmpty { try ReplicaStore.deleteState(db, className: entry.className, id: id) }
        }
        try db.execute(sql: "DELETE FROM replica_conflicts WHERE class = ? AND id = ?", arguments: [entry.className, id])
        try db.execute(sql: """
            INSERT INTO replica_classes(class, last_up) VALUES (?, ?) ON CONFLICT(class) DO UPDATE SET last_up = excluded.last_up
            """, arguments: [entry.className, now])
    }

    /// Leaves an entry waiting (a conflict or a refusal), the record conflicted, and the server's copy kept; then asks
    /// the conflict handler.
    func markWaiting(_ entry: OutboxEntry, reason: String, remote remoteRecord: MBaaSCore.Record?) async throws {
        let policy = self.policy(entry.className)
        var remoteJSON = JSON.null
        if var r = remoteRecord {
            r.fields = try sealing.sealFields(r.fields, encrypted: policy.encryptedFields)
            remoteJSON = r.json
        }
        let text = remoteJSON.printed()
        let now = store.now
        try await store.write { db in
            try db.execute(sql: "UPDATE replica_outbox SET blocked = ?, inflight = 0 WHERE seq = ?", arguments: [reason, entry.seq])
            try ReplicaStore.setStatus(db, className: entry.className, id: entry.id, .conflicted)
            try db.execute(sql: "INSERT OR REPLACE INTO replica_conflicts(class, id, remote, reason, at) VALUES (?, ?, ?, ?, ?)",
                           arguments: [entry.className, entry.id, text, reason, now])
        }
        guard let handler = conflictHandler else { return }
        let localRecord = try? await get(className: entry.className, id: entry.id)
        let conflict = SyncConflict(className: entry.className, id: entry.id, local: localRecord, remote: remoteRecord, reason: reason)
        if let resolution = await handler(conflict) {
            try await resolve(className: entry.className, id: entry.id, resolution)
            conflictsResolvedDuringRun = true
        }
    }

    // MARK: Conflicts

    /// The records waiting for a resolution (all classes when `className` is `nil`), ordered by class and id.
    public func conflicts(className: String?) async throws -> [SyncConflict] {
        let rows = try await store.read { db in
            try GRDB.Row.fetchAll(db, sql: "SELECT class, id, remote, reason FROM replica_conflicts ORDER BY class, id")
                .map { ($0["class"] as String, $0["id"] as String, $0["remote"] as String, $0["reason"] as String) }
        }
        var out: [SyncConflict] = []
        for (c, id, remoteText, reason) in rows where className == nil || className == c {
            let remoteRecord = try remoteJSONRecord(remoteText)
            let localRecord: MBaaSCore.Record?
            do { localRecord = try await get(className: c, id: id) } catch let e as MBaaSError where e.kind == .notFound { localRecord = nil }
            out.append(SyncConflict(className: c, id: id, local: localRecord, remote: remoteRecord, reason: reason))
        }
        return out
    }

    func remoteJSONRecord(_ text: String) throws(MBaaSError) -> MBaaSCore.Record? {
        let json: JSON
        do { json = try JSON.parse(text) } catch { throw MBaaSError(.decoding, "a stored conflict cannot be read: \(error)") }
        if json.isNull { return nil }
        return try sealing.openRecord(try MBaaSCore.Record(json: json))
    }

    /// Settles a conflict: keep the local record (sent over the server's on the next sync up), keep the remote's (the
    /// local changes are dropped and the server's copy taken), or write a merged record. `notFound` when the record
    /// has no conflict.
    public func resolve(className: String, id: String, _ resolution: ConflictResolution) async throws {
        try Self.refuseNUL(className, id)
        let policy = self.policy(className)
        let sealing = self.sealing
        let now = store.now
        let (current, remoteText) = try await store.read { db -> (String, String?) in
            let current = try ReplicaStore.resolve(db, className: className, id: id)
            return (current, try String.fetchOne(db, sql: "SELECT remote FROM replica_conflicts WHERE class = ? AND id = ?",
                                                 arguments: [className, current]))
        }
        guard let remoteText else { throw MBaaSError(.notFound, "no conflict on \(className)/\(id)") }
        let remoteRecord = try remoteJSONRecord(remoteText)
        var mergedPayload: JSONObject?
        var mergedRow: MBaaSCore.Record?
        if case .merged(let merged) = resolution {
            var row = merged
            row.className = className
            row.id = current
            row.fields = try sealing.sealFields(merged.fields, encrypted: policy.encryptedFields)
            mergedRow = row
            if remoteRecord == nil {
                mergedPayload = try payload(create: merged.fields, acl: merged.acl, encrypted: policy.encryptedFields)
            } else {
                var changes = merged.fields.mapValues(FieldOperation.set)
                for key in remoteRecord!.fields.keys where merged.fields[key] == nil { changes[key] = .delete }
                mergedPayload = try payload(update: changes, acl: merged.acl, encrypted: policy.encryptedFields)
            }
        }
        var sealedRemoteRecord = remoteRecord
        if let r = remoteRecord { sealedRemoteRecord?.fields = try sealing.sealFields(r.fields, encrypted: policy.encryptedFields) }
        let sealedRemote = sealedRemoteRecord, mergedRowFinal = mergedRow, mergedPayloadFinal = mergedPayload
        try await store.write { db in
            let row = try ReplicaStore.loadRow(db, className: className, id: current)
            switch resolution {
            case .keepRemote:
                try db.execute(sql: "DELETE FROM replica_outbox WHERE class = ? AND id = ?", arguments: [className, current])
                if let remoteRecord, let sealedRemote {
                    try ReplicaStore.saveRow(db, sealedRemote, version: (row?.localVersion ?? 0) + 1,
                                             createdAt: remoteRecord.createdAt.map(Millis.of) ?? now,
                                             updatedAt: remoteRecord.updatedAt.map(Millis.of) ?? now)
                    try ReplicaStore.markSynced(db, className: className, id: current, remote: remoteRecord, now: now)
                } else {
                    try ReplicaStore.deleteRow(db, className: className, id: current)
                    try ReplicaStore.deleteState(db, className: className, id: current)
                }
            case .keepLocal:
                if let remoteRecord {
                    try db.execute(sql: "UPDATE replica_outbox SET blocked = NULL, force = 1 WHERE class = ? AND id = ?",
                                   arguments: [className, current])
                    try db.execute(sql: "UPDATE replica_state SET remote_version = ?, remote_updated_at = ? WHERE class = ? AND id = ?",
                                   arguments: [remoteRecord.version, remoteRecord.updatedAt.map(Millis.of), className, current])
                    let ops = try ReplicaStore.entries(db, className: className, id: current)
                    try ReplicaStore.setStatus(db, className: className, id: current, ops.last?.operation == .delete ? .deleted : .updated)
                } else {
                    // Gone on the server (or refused): send the record as it is now, or nothing when it is gone here too.
                    let waiting = try ReplicaStore.entries(db, className: className, id: current)
                    let refusedOnly = waiting.contains { $0.blocked != nil && $0.blocked != "conflict" }
                    if refusedOnly {
                        try db.execute(sql: "UPDATE replica_outbox SET blocked = NULL, force = 1 WHERE class = ? AND id = ?",
                                       arguments: [className, current])
                        try ReplicaStore.setStatus(db, className: className, id: current, waiting.first?.operation == .create ? .created : .updated)
                    } else {
                        try db.execute(sql: "DELETE FROM replica_outbox WHERE class = ? AND id = ?", arguments: [className, current])
                        if let row {
                            var o: JSONObject = ["fields": Value.object(row.record.fields).json]
                            if let acl = row.record.acl { o["acl"] = acl.json }
                            try ReplicaStore.append(db, className: className, id: current, .create, payload: o, force: true)
                            try ReplicaStore.setStatus(db, className: className, id: current, .created)
                        } else {
                            try ReplicaStore.deleteState(db, className: className, id: current)
                        }
                    }
                }
            case .merged:
                try db.execute(sql: "DELETE FROM replica_outbox WHERE class = ? AND id = ?", arguments: [className, current])
                try ReplicaStore.saveRow(db, mergedRowFinal!, version: (row?.localVersion ?? 0) + 1,
                                         createdAt: row?.record.createdAt.map(Millis.of) ?? now, updatedAt: now)
                let op: OutboxEntry.Operation = remoteRecord == nil ? .create : .update
                try ReplicaStore.append(db, className: className, id: current, op, payload: mergedPayloadFinal!, force: true)
                if let remoteRecord {
                    try db.execute(sql: "UPDATE replica_state SET remote_version = ?, remote_updated_at = ? WHERE class = ? AND id = ?",
                                   arguments: [remoteRecord.version, remoteRecord.updatedAt.map(Millis.of), className, current])
                }
                try ReplicaStore.setStatus(db, className: className, id: current, op == .create ? .created : .updated)
            }
            try db.execute(sql: "DELETE FROM replica_conflicts WHERE class = ? AND id = ?", arguments: [className, current])
        }
    }

    // MARK: Sync down

    func withRetry<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            do { return try await body() } catch let e as MBaaSError {
                if e.kind == .unauthorized { throw SyncStop.sessionRefused(e) }
                guard e.isTransient else { throw e }
                attempt += 1
                if attempt >= max(1, retry.maxAttempts) { throw SyncStop.unreachable(e) }
                try? await sleep(retry.delay(afterAttempt: attempt - 1, retryAfter: e.retryAfter))
            }
        }
    }

    func syncDown(_ className: String, options: SyncOptions, report: inout SyncReport) async throws {
        let policy = self.policy(className)
        let sealing = self.sealing
        let (hwm, syncs) = try await store.read { db -> (Int64?, Int) in
            guard let row = try GRDB.Row.fetchOne(db, sql: "SELECT hwm, syncs FROM replica_classes WHERE class = ?", arguments: [className]) else {
                return (nil, 0)
            }
            let hwm: Int64? = row["hwm"]
            let syncs: Int = row["syncs"]
            return (hwm, syncs)
        }
        var predicate = policy.where
        if let hwm, remote.capabilities.has(.queryValue("Date")) {
            let since = QueryPredicate.compare("updatedAt", .gte, .date(Millis.date(hwm)))
            predicate = predicate.map { $0 && since } ?? since
        }
        // Nothing can be a ghost before the replica holds a synced copy: the scheduled scan skips that first run.
        let hadSynced = try await store.read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM replica_state WHERE class = ? AND status = 'synced')",
                              arguments: [className]) ?? false
        }
        let filter: ScopeFilter?
        do { filter = try await scopeFilter(className) } catch let e as MBaaSError where e.kind == .unauthorized { throw SyncStop.sessionRefused(e) }
        var query = Query(className, predicate: predicate, sort: [SortKey("updatedAt")], limit: options.pageSize)
        var down = 0
        var refused: [SyncConflict] = []
        var mark = hwm
        // The next page is fetched while this one is written (the remote's read and the replica's write overlap);
        // pages are still applied in order, each with its high-water mark.
        func fetch(_ q: Query) -> Task<RecordPage, any Error> {
            Task { try await self.withRetry { try await self.remote.queryPage(q) } }
        }
        var fetching = fetch(query)
        defer { fetching.cancel() }
        while true {
            // A cancelled sync stops the fetch under way too (an unstructured task does not inherit cancellation).
            let current = fetching
            let page = try await withTaskCancellationHandler { try await current.value } onCancel: { current.cancel() }
            if let next = page.nextCursor, !page.records.isEmpty {
                query.cursor = next
                fetching = fetch(query)
            }
            var keeping: [MBaaSCore.Record] = []
            for record in try await scoped(page.records, className: className, filter: filter) {
                // The replica keys records by id in SQLite, which would cut this one at its NUL: another record's key.
                if let id = record.id, id.utf8.contains(0) {
                    refused.append(SyncConflict(className: className, id: id, local: nil, remote: record,
                                                reason: "its id holds NUL (U+0000), which the replica would cut it at; left out"))
                } else {
                    keeping.append(record)
                }
            }
            let kept = keeping, refusedHere = refused
            refused = []
            let now = store.now
            let startMark = mark
            let pageMark: Int64? = try await store.write { db in
                var highest = startMark
                for record in page.records {
                    if let updated = record.updatedAt.map(Millis.of) { highest = max(highest ?? updated, updated) }
                }
                // Kept with the page: every later sync lists them, though the mark moves past them.
                for refusal in refusedHere { try ReplicaStore.keepRefused(db, refusal, now: now) }
                // One state prefetch per page and two cached statements per record (pending ones are skipped there).
                try ReplicaStore.applySyncedPage(db, className: className, records: kept, now: now) { fields in
                    try sealing.sealFields(fields, encrypted: policy.encryptedFields)
                }
                try db.execute(sql: """
                    INSERT INTO replica_classes(class, hwm) VALUES (?, ?) ON CONFLICT(class) DO UPDATE SET hwm = excluded.hwm
                    """, arguments: [className, highest])
                return highest
            }
            mark = pageMark
            down += kept.count
            if page.records.count >= 1000 || page.nextCursor == nil {
                options.progress?("\(className): \(down) down")
            }
            guard page.nextCursor != nil, !page.records.isEmpty else { break }
        }
        var summary = report.classes[className] ?? .init()
        summary.down += down
        if options.ghostScan || (hadSynced && syncs % max(1, options.ghostScanEvery) == 0) {
            summary.ghostsRemoved += try await ghostScan(className, predicate: policy.where, pageSize: options.pageSize, filter: filter)
        }
        summary.pruned += try await prune(className)
        let stillRefused = try await store.read { db in try ReplicaStore.refused(db, className: className) }
        summary.refused += stillRefused.count
        report.refusedDown += stillRefused
        let now = store.now
        try await store.write { db in
            try db.execute(sql: """
                INSERT INTO replica_classes(class, last_down, syncs) VALUES (?, ?, 1)
                ON CONFLICT(class) DO UPDATE SET last_down = excluded.last_down, syncs = syncs + 1
                """, arguments: [className, now])
        }
        report.classes[className] = summary
    }

    /// Removes synced records the remote no longer has (or `where` and `refreshScope` no longer select); pending ones
    /// stay.
    func ghostScan(_ className: String, predicate: QueryPredicate?, pageSize: Int, filter: ScopeFilter? = nil) async throws -> Int {
        var remoteIds = Set<String>()
        var query = Query(className, predicate: predicate, limit: pageSize)
        while true {
            let q = query
            let page = try await withRetry { try await remote.queryPage(q) }
            for r in try await scoped(page.records, className: className, filter: filter) { if let id = r.id { remoteIds.insert(id) } }
            guard let next = page.nextCursor, !page.records.isEmpty else { break }
            query.cursor = next
        }
        let known = remoteIds
        return try await store.write { db in
            try ReplicaStore.forgetRefused(db, className: className, keeping: known)
            let synced = try String.fetchAll(db, sql: "SELECT id FROM replica_state WHERE class = ? AND status = 'synced'", arguments: [className])
            var removed = 0
            for id in synced where !known.contains(id) {
                try ReplicaStore.deleteRow(db, className: className, id: id)
                try ReplicaStore.deleteState(db, className: className, id: id)
                removed += 1
            }
            return removed
        }
    }

    /// Removes synced copies older than the class's lifeSpan (never pending ones, never on the server).
    func prune(_ className: String) async throws -> Int {
        guard let lifeSpan = policy(className).lifeSpan else { return 0 }
        let cutoff = store.now - Int64(lifeSpan * 1000)
        return try await store.write { db in
            let old = try String.fetchAll(db, sql: """
                SELECT id FROM replica_state WHERE class = ? AND status = 'synced' AND synced_at < ?
                """, arguments: [className, cutoff])
            for id in old {
                try ReplicaStore.deleteRow(db, className: className, id: id)
                try ReplicaStore.deleteState(db, className: className, id: id)
            }
            return old.count
        }
    }

    // MARK: Status

    /// Queued writes, conflicts and last sync times per class (every `localAndServer` class and every class with
    /// queued writes); with `probe`, whether the remote answers a one-record query.
    public func status(probe: Bool = true) async throws -> ReplicaStatus {
        let synced = configuration.syncedClasses
        let rows = try await store.read { db -> [String: ReplicaStatus.ClassStatus] in
            var out: [String: ReplicaStatus.ClassStatus] = [:]
            for c in synced { out[c] = .init(pending: 0, conflicts: 0) }
            for row in try GRDB.Row.fetchAll(db, sql: "SELECT class, COUNT(*) AS n FROM replica_outbox GROUP BY class") {
                out[row["class"], default: .init(pending: 0, conflicts: 0)].pending = row["n"]
            }
            for row in try GRDB.Row.fetchAll(db, sql: "SELECT class, COUNT(*) AS n FROM replica_conflicts GROUP BY class") {
                out[row["class"], default: .init(pending: 0, conflicts: 0)].conflicts = row["n"]
            }
            for row in try GRDB.Row.fetchAll(db, sql: "SELECT class, last_down, last_up FROM replica_classes") {
                let c: String = row["class"]
                guard out[c] != nil else { continue }
                out[c]!.lastSyncDown = (row["last_down"] as Int64?).map(Millis.date)
                out[c]!.lastSyncUp = (row["last_up"] as Int64?).map(Millis.date)
            }
            return out
        }
        var reachable: Bool?
        if probe {
            do {
                _ = try await remote.queryPage(Query(rows.keys.sorted().first ?? "Replica", limit: 1))
                reachable = true
            } catch let e as MBaaSError {
                reachable = !(e.kind == .transport || e.kind == .unavailable)
            }
        }
        return ReplicaStatus(reachable: reachable, classes: rows)
    }

    // MARK: Auto refresh

    /// A task that syncs every `interval` seconds (default: the shortest ``ReplicaPolicy/autoRefresh`` of the
    /// configuration, else 60) until cancelled; an unreachable remote does not stop it. `onReport` gets each run's
    /// report (or the error of a run that threw).
    public nonisolated func autoRefresh(every interval: TimeInterval? = nil, options: SyncOptions = SyncOptions(),
                                        onReport: (@Sendable (Result<SyncReport, MBaaSError>) -> Void)? = nil) -> Task<Void, Never> {
        Task {
            let configured = await configuration.classes.values.compactMap(\.autoRefresh).min()
            let seconds = interval ?? configured ?? 60
            while !Task.isCancelled {
                do { onReport?(.success(try await sync(options))) } catch { onReport?(.failure(MBaaSError.wrap(error))) }
                do { try await Task.sleep(nanoseconds: UInt64(max(0.01, seconds) * 1e9)) } catch { return }
            }
        }
    }
}
