import Foundation
import GRDB
import MBaaSCore

// Sync up's batch path: runs of queued creates sent in the remote's batch calls.

extension ReplicaBackend {
    static let takesIdsKey = "remoteTakesIds"

    /// How many queued creates go in one call: the remote's ``MBaaSCore/Capabilities/maxBatchSize`` when it declares
    /// the `batch` feature and has taken a client id before (a create sent alone kept its offline id); 0 (one request
    /// per entry) otherwise, so that a remote that refuses client ids learns it from one create, not a batch.
    func createBatchSize() async throws -> Int {
        let caps = remote.capabilities
        guard caps.has(.batch), caps.maxBatchSize > 1 else { return 0 }
        let takes = try await store.read { db in
            try ReplicaStore.meta(db, Self.takesIdsKey) == "1" && ReplicaStore.meta(db, Self.refusesIdsKey) != "1"
        }
        return takes ? caps.maxBatchSize : 0
    }

    /// Notes that the remote kept a client id (where it has batches, which then carry creates).
    func noteTakesIds(_ entry: OutboxEntry, _ stored: MBaaSCore.Record) async throws {
        guard remote.capabilities.has(.batch), stored.id == entry.id else { return }
        try await store.write { db in
            if try ReplicaStore.meta(db, Self.takesIdsKey) == nil { try ReplicaStore.setMeta(db, Self.takesIdsKey, "1") }
        }
    }

    /// Whether a listed entry may join a batch: a create, not blocked, not in flight (one in flight is looked up
    /// first, on the one-entry path).
    static func batchable(_ entry: OutboxEntry) -> Bool {
        entry.operation == .create && entry.blocked == nil && !entry.inflight
    }

    /// The record a queued create writes: its id, ACL and fields (encrypted ones opened).
    func createdRecord(_ entry: OutboxEntry) throws -> MBaaSCore.Record {
        let acl = try entry.payload["acl"].flatMap { j throws(MBaaSError) in j.isNull ? nil : try ACL(json: j) }
        var fields: [String: Value] = [:]
        for (key, json) in entry.payload["fields"]?.objectValue ?? [:] {
            fields[key] = try Value(json: try sealing.openJSON(json, field: key), path: key)
        }
        return MBaaSCore.Record(className: entry.className, id: entry.id, acl: acl, fields: fields)
    }

    /// The runs of queued creates that start with `first` (already taken from `entries`): consecutive creates of
    /// distinct records from `index` on, `batchSize` to a run, taken off `entries` by moving `index`. A further run
    /// starts only while every run so far is full and free of pointers, up to `limit` runs. An entry that is no
    /// create, that waits, or whose record a run already holds ends the runs and stays for the caller.
    static func createRuns(_ entries: [OutboxEntry], after first: OutboxEntry, index: inout Int, batchSize: Int,
                           limit: Int, waiting: Set<String>) -> [[OutboxEntry]] {
        func key(_ e: OutboxEntry) -> String { "\(e.className)/\(e.id)" }
        var keys: Set<String> = [key(first)]
        // Checked last wherever it is used: it claims the record.
        func takes(_ e: OutboxEntry) -> Bool { batchable(e) && !waiting.contains(key(e)) && keys.insert(key(e)).inserted }
        var runs: [[OutboxEntry]] = [[first]]
        while true {
            while index < entries.count, runs[runs.count - 1].count < batchSize, takes(entries[index]) {
                runs[runs.count - 1].append(entries[index])
                index += 1
            }
            guard runs.count < limit, runs[runs.count - 1].count == batchSize, runs.allSatisfy({ $0.allSatisfy(pointsNowhere) }),
                  index < entries.count, takes(entries[index])
            else { return runs }
            runs.append([entries[index]])
            index += 1
        }
    }

    /// Whether a queued create's fields hold no pointer (so its batch may go before an earlier one is answered). A
    /// field sealed at rest (``ReplicaCipher``) may hold one: it counts as pointing.
    static func pointsNowhere(_ entry: OutboxEntry) -> Bool {
        func points(_ json: JSON) -> Bool {
            if ReplicaCipher.isSealed(json) { return true }
            switch json {
            case .object(let o): return o["__type"]?.stringValue == "Pointer" || o.values.contains(where: points)
            case .array(let a): return a.contains(where: points)
            default: return false
            }
        }
        return !(entry.payload["fields"].map(points) ?? false)
    }

    /// Sends runs of queued creates of distinct records, none holding a pointer when listed, as concurrent batch
    /// calls (each run as ``sendCreates(_:merge:progress:report:deferPointers:)`` sends it). An entry that gained a
    /// pointer since it was listed (a local update coalesced into it) is not sent with its run: it goes after every
    /// call has ended, one entry at a time. The counts of every run that ended are kept in `report` even when another
    /// failed (its error is then thrown). Returns the keys of records that now wait.
    func sendCreateRuns(_ runs: [[OutboxEntry]], merge: ReplicaPolicy.MergeMode?, progress: (@Sendable (String) -> Void)?,
                        report: inout SyncReport) async throws -> [String] {
        typealias Outcome = (waiting: [String], deferred: [OutboxEntry], part: SyncReport, error: (any Error)?)
        let outcomes = await withTaskGroup(of: Outcome.self) { group in
            for run in runs {
                group.addTask {
                    var part = SyncReport()
                    do {
                        let (waiting, deferred) = try await self.sendCreates(run, merge: merge, progress: progress, report: &part,
                                                                            deferPointers: true)
                        return (waiting, deferred, part, nil)
                    } catch {
                        return ([], [], part, error)
                    }
                }
            }
            var all: [Outcome] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        var waiting: [String] = []
        var deferred: [OutboxEntry] = []
        for outcome in outcomes {
            waiting += outcome.waiting
            deferred += outcome.deferred
            for (className, summary) in outcome.part.classes { report.classes[className, default: .init()].up += summary.up }
        }
        // A refused session decides the run's outcome (exit 4) over any other stop, whichever call ended first.
        let errors = outcomes.compactMap(\.error)
        if let error = errors.first(where: { if case SyncStop.sessionRefused = $0 { true } else { false } }) ?? errors.first {
            throw error
        }
        return waiting + (try await sendOneByOne(deferred, merge: merge, progress: progress, report: &report))
    }

    /// Sends entries one at a time in outbox order, each as it is now, in flight or not as this run knows it; returns
    /// the keys of records that now wait.
    func sendOneByOne(_ entries: [OutboxEntry], merge: ReplicaPolicy.MergeMode?, progress: (@Sendable (String) -> Void)?,
                      report: inout SyncReport) async throws -> [String] {
        var waiting: [String] = []
        for listed in entries.sorted(by: { $0.seq < $1.seq }) {
            // As it is now (a refused id replaced by the remote's rewrites pointers in later entries).
            let seq = listed.seq
            guard var entry = try await store.read({ db in try ReplicaStore.entry(db, seq: seq) }) else { continue }
            entry.inflight = listed.inflight
            progress?("\(entry.className): sending \(entry.operation.rawValue) \(entry.id)")
            if try await send(entry, merge: merge) {
                report.classes[entry.className, default: .init()].up += 1
            } else {
                waiting.append("\(entry.className)/\(entry.id)")
            }
        }
        return waiting
    }

    /// Sends a run of queued creates of distinct records in one batch call.
    ///
    /// Every entry is marked in flight first, in one transaction, so that a run killed during the call looks each
    /// one up on the next sync instead of sending it twice (nothing is lost: the entries stay queued until applied).
    /// Each create the batch took is applied like a single send's. An entry the batch refused, every entry of a call
    /// that failed (or of an all-or-nothing batch with a failure), and an entry that changed since it was listed go
    /// through the one-entry path (``send(_:merge:)``), which looks an in-flight entry up before sending it again.
    /// Returns the keys (`class/id`) of records that now wait (conflict, refusal).
    ///
    /// With `deferPointers`, an entry whose payload now holds a pointer is neither marked nor sent: it is returned in
    /// `deferred` for the caller to send once the calls running beside this one have ended.
    func sendCreates(_ run: [OutboxEntry], merge: ReplicaPolicy.MergeMode?, progress: (@Sendable (String) -> Void)?,
                     report: inout SyncReport, deferPointers: Bool = false) async throws -> (waiting: [String], deferred: [OutboxEntry]) {
        let seqs = run.map(\.seq)
        // The entries as they are now (a local write may have coalesced into one), all marked in flight.
        let (fresh, changed, deferred) = try await store.write { db -> ([OutboxEntry], [OutboxEntry], [OutboxEntry]) in
            var fresh: [OutboxEntry] = [], changed: [OutboxEntry] = [], deferred: [OutboxEntry] = []
            for seq in seqs {
                // As read: `inflight` says whether an earlier run may have sent it (then it is looked up first).
                guard let entry = try ReplicaStore.entry(db, seq: seq) else { continue }
                if deferPointers && !Self.pointsNowhere(entry) { deferred.append(entry); continue }
                try ReplicaStore.markInFlight(db, entry)
                if Self.batchable(entry) { fresh.append(entry) } else { changed.append(entry) }
            }
            return (fresh, changed, deferred)
        }
        var singles = changed
        var batch: [(entry: OutboxEntry, record: MBaaSCore.Record)] = []
        for entry in fresh {
            // Not sent yet: an entry whose record cannot be built fails on the one-entry path, which reports why.
            guard let record = try? createdRecord(entry) else { singles.append(entry); continue }
            var sent = entry
            sent.inflight = true   // from here on the batch may have reached the remote
            batch.append((sent, record))
        }
        if !batch.isEmpty {
            progress?("\(batch[0].entry.className): sending \(batch.count) creates in one batch")
            var results: [BatchResult]?
            do {
                results = try await remote.batch(batch.map { .create($0.record) })
            } catch let e as MBaaSError where e.kind == .unauthorized {
                throw SyncStop.sessionRefused(e)
            } catch {
                results = nil   // unknown outcome: each entry is looked up on the one-entry path
            }
            if let r = results, r.count != batch.count || (remote.capabilities.has(.atomicBatch) && r.contains(where: {
                if case .failure = $0 { true } else { false }
            })) {
                results = nil
            }
            var answered: [(entry: OutboxEntry, outcome: SentOutcome)] = []
            for (index, item) in batch.enumerated() {
                if let results, case .success(let stored) = results[index] {
                    answered.append((item.entry, .stored(stored)))
                } else {
                    singles.append(item.entry)
                }
            }
            // The call's answers in one transaction.
            try await applySent(answered)
            for (entry, _) in answered { report.classes[entry.className, default: .init()].up += 1 }
        }
        return (try await sendOneByOne(singles, merge: merge, progress: progress, report: &report), deferred)
    }
}
