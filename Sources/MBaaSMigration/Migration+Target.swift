import Foundation
import GRDB
public import MBaaSCore

extension MigrationState {
    /// Whether the state holds anything of a run: a mapping, a write in flight, a finished step, a copied file.
    public func hasProgress() throws(MBaaSError) -> Bool {
        try flushWritten()
        return try read { db in
            for table in ["idmap", "pending", "pending_batches", "steps", "files", "attachments", "fixups", "users"] {
                if try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM \(table))") ?? false { return true }
            }
            return false
        }
    }

    /// Up to `limit` mappings of a kind, the first by class and source id: what ``Migration`` looks up on the
    /// target to tell whether it is the one this state wrote into.
    func sampleMappings(_ kind: Kind, limit: Int) throws(MBaaSError) -> [(className: String, sourceId: String, targetId: String)] {
        try flushWritten()
        return try read { db in
            try Row.fetchAll(db, sql: "SELECT class, source_id, target_id FROM idmap WHERE kind = ? ORDER BY class, source_id LIMIT ?",
                             arguments: [kind.rawValue, limit]).map { (className: $0[0], sourceId: $0[1], targetId: $0[2]) }
        }
    }

    /// Forgets everything a run recorded (the id map, writes in flight, steps, copied files, verification scratch),
    /// in one transaction, keeping the folder, its lock and its schema: the next run starts over. Called before
    /// anything of the run is written.
    public func discard() throws(MBaaSError) {
        try flushWritten()
        try write { db in
            let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'grdb_%'")
            for table in tables { try db.execute(sql: "DELETE FROM \"\(table)\"") }
        }
        forgetRemembered()
    }
}

extension Migration {
    /// How many of the id map's records (or, without records, users) are looked up on the target to tell whether it
    /// holds what the state says was written into it.
    static let targetProbeSize = 8

    /// Before anything is written: makes sure the state belongs to this target.
    ///
    /// - ``MigrationOptions/restart``: the state is discarded first, and the run starts over.
    /// - A bundle folder that already holds a bundle is written into only by the run whose state began it: a state
    ///   with nothing recorded, or one whose records the bundle does not hold, is refused (`invalidRequest`).
    /// - Otherwise, where the state holds mappings, a few of their target ids are looked up on the target: all there,
    ///   it is the same target and the run resumes; none there, the target is new or another one (a removed and
    ///   re-created database, say) provided the sampled classes are empty there, and the state is discarded and the
    ///   run starts over, said as a note and in the report's problems (a record the target holds but hides from this
    ///   identity counts as there); some there and some not, or none there in classes that hold records, it cannot tell, and the run is refused (`invalidRequest`) naming
    ///   the state folder and `--restart`. A state with only files or in-flight marks, or a target that cannot be
    ///   asked (users on a target without user fields), resumes as it always did.
    func checkTarget(_ state: MigrationState) async throws {
        if options.restart {
            let had = try await offPool { try state.hasProgress() }
            try await offPool { try state.discard() }
            if had { say("--restart: the state folder \(state.directory.path) was emptied (id map, writes in flight, steps); everything is written again") }
        }
        if let bundle = target as? BundleBackend, bundle.holdsData {
            let progress = try await offPool { try state.hasProgress() }
            guard progress else {
                throw MBaaSError(.invalidRequest, "the bundle folder \(bundle.directory.path) already holds \(bundle.manifest == nil ? "an unfinished" : "a finished") bundle that this migration's state (\(state.directory.path)) did not write; a bundle is written into an empty or new folder (or resumed by the run that began it): choose another folder or remove that one")
            }
            switch try await probeTarget(state) {
            case .same, .unknown: return
            case .absent, .mixed: break
            }
            throw MBaaSError(.invalidRequest, "the bundle folder \(bundle.directory.path) does not hold what this migration's state (\(state.directory.path)) says it wrote: it is another bundle; choose an empty or new folder (or remove that one)")
        }
        switch try await probeTarget(state) {
        case .same, .unknown: return
        case .absent(let sampled):
            try await offPool { try state.discard() }
            say("the target holds none of the \(sampled) sampled records or users that the state folder \(state.directory.path) says were written into it: it is new or another one, so the state was discarded and everything is written again")
        case .mixed(let present, let absent):
            let found = present == 0
                ? "none of the \(absent) sampled records it says were written are there, yet the target's classes hold records"
                : "of the records or users it says were written, \(present) sampled are there and \(absent) are not"
            throw MBaaSError(.invalidRequest, "cannot tell whether the target is the one the state folder \(state.directory.path) wrote into: \(found); run again with --restart to discard that state and start over (what is already on the target may then be written again), or give another --state")
        }
    }

    enum TargetProbe { case same, absent(Int), mixed(present: Int, absent: Int), unknown }

    /// Looks a few mapped target ids up on the target (records, else users by their source id field).
    func probeTarget(_ state: MigrationState) async throws -> TargetProbe {
        var present = 0, absent = 0
        let records = try await offPool { try state.sampleMappings(.record, limit: Self.targetProbeSize) }
        for m in records {
            let className = mapping.targetClass(m.className)
            do {
                _ = try await withRetry { try await self.target.get(className: className, id: m.targetId) }
                present += 1
            } catch let e as MBaaSError where e.kind == .notFound {
                absent += 1
            } catch let e as MBaaSError where [.forbidden, .unauthorized].contains(e.kind) {
                present += 1   // there, but not readable by this identity
            }
        }
        // A target whose records are hidden from this identity may answer "not found" for records it holds: none
        // found counts as a new target only where the sampled classes hold nothing at all.
        if present == 0, absent > 0, target.capabilities.has(.count) {
            for className in Set(records.map { mapping.targetClass($0.className) }) {
                let n = (try? await withRetry { try await self.target.count(Query(className)) }) ?? 0
                if n > 0 { return .mixed(present: 0, absent: absent) }
            }
        }
        if records.isEmpty, let field = mapping.sourceIdField, target.capabilities.has(.userFields) {
            for m in try await offPool({ try state.sampleMappings(.user, limit: Self.targetProbeSize) }) {
                let found: DirectoryUser?
                do { found = try await withRetry { try await self.target.findUser(field: field, equals: m.sourceId) } } catch let e as MBaaSError where e.kind == .unsupported {
                    return .unknown   // a target that cannot be asked resumes as before
                }
                if found?.id == m.targetId { present += 1 } else { absent += 1 }
            }
        }
        switch (present, absent) {
        case (0, 0): return .unknown
        case (_, 0): return .same
        case (0, _): return .absent(absent)
        default: return .mixed(present: present, absent: absent)
        }
    }

    /// A line on the run's notes and in the report's problems.
    func say(_ text: String) {
        observer(.note(text))
        box.update { $0.problem(text) }
    }
}
