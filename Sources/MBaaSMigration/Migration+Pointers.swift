import Foundation
import MBaaSCore

// The pointers stage (phase 2): pointer fields the records stage left, set through the id map.

extension Migration {
    /// Sets the pointer fields phase 1 left, through the id map; reports pointers to records that were not migrated.
    func rewritePointers(_ state: MigrationState) async throws {
        let keepsIds = target.capabilities.has(.clientIds)
        for cls in try await offPool({ try state.fixupClasses() }) {
            let targetClass = mapping.targetClass(cls)
            var after = ""
            while true {
                let page = after
                let rows = try await offPool { try state.fixups(className: cls, after: page, limit: 200) }
                guard let last = rows.last else { break }
                after = last.sourceId
                var probes: [Record] = []
                for row in rows {
                    var probe = Record(className: cls, id: row.sourceId)
                    for (k, v) in row.pointers {
                        if k == Self.aclFixupKey { probe.acl = try ACL(json: v) } else { probe.fields[k] = try Value(json: v) }
                    }
                    probes.append(probe)
                }
                let probed = probes
                let maps = try await offPool { try self.maps(for: probed, state) }
                let narrowed = await narrowings(for: probed, maps: maps, reporting: true)
                var done: [String] = []
                var updates: [(String, String, RecordUpdate)] = []
                for row in rows {
                    var changes: [String: FieldOperation] = [:]
                    var resolved = true
                    var aclUpdate: ACL?
                    for (field, json) in row.pointers {
                        if field == Self.aclFixupKey {
                            let original = try ACL(json: json)
                            var mapped = mapACL(original, maps: maps, className: cls, sourceId: row.sourceId, reporting: false)
                            mapped = narrowed[mapped] ?? mapped
                            // As for pointers below: with kept ids, an ACL whose users all keep their ids was
                            // written as it is (a target that cannot update, a bundle, is never asked to).
                            if !(keepsIds && mapped == original) { aclUpdate = mapped }
                            continue
                        }
                        let original = try Value(json: json)
                        var unresolved = false
                        let rewritten = rewrite(original, maps: maps, unresolved: &unresolved)
                        if unresolved {
                            resolved = false
                            box.update { $0.warn(.init(kind: "pointer", className: cls, sourceId: row.sourceId,
                                                      detail: "field \(field) points at a record that was not migrated (\(describe(original))); kept with the source id")) }
                        }
                        // With kept ids phase 1 already wrote `rewritten` unless an id changed.
                        var unchanged = false
                        if keepsIds { var u = false; unchanged = rewrite(original, maps: Maps(), unresolved: &u) == rewritten }
                        if !unchanged { changes[field] = .set(rewritten) }
                    }
                    if !changes.isEmpty || aclUpdate != nil {
                        updates.append((row.sourceId, row.targetId, RecordUpdate(changes: changes, acl: aclUpdate)))
                    }
                    // Unresolved pointers stay in the state: a later run that migrates their records sets them.
                    if resolved { done.append(row.sourceId) }
                }
                let failed = try await applyUpdates(updates, className: cls, targetClass: targetClass)
                let settled = done.filter { !failed.contains($0) }
                try await offPool { try state.removeFixups(className: cls, sourceIds: settled) }
            }
        }
    }

    /// Applies phase-2 updates: in batch calls where the target has them, else `concurrency` at a time. Returns the
    /// source ids whose update failed (reported; the next run tries them again).
    func applyUpdates(_ updates: [(String, String, RecordUpdate)], className cls: String, targetClass: String) async throws -> Set<String> {
        guard !updates.isEmpty else { return [] }
        var failed: Set<String> = []
        func fail(_ sourceId: String, _ e: MBaaSError) {
            failed.insert(sourceId)
            box.update { $0.add(.init(kind: "failed", className: cls, sourceId: sourceId, detail: "pointers could not be set: \(e)")) }
        }
        if target.capabilities.has(.batch), target.capabilities.maxBatchSize > 0 {
            for start in stride(from: 0, to: updates.count, by: target.capabilities.maxBatchSize) {
                let chunk = Array(updates[start..<min(start + target.capabilities.maxBatchSize, updates.count)])
                let ops = chunk.map { BatchOperation.update(className: targetClass, id: $0.1, $0.2) }
                let results: [BatchResult]
                do { results = try await withRetry { try await self.target.batch(ops) } } catch {
                    for u in chunk { fail(u.0, MBaaSError.wrap(error)) }
                    continue
                }
                // Setting a field is idempotent, so an all-or-nothing batch with a failure is simply retried one by one.
                if results.contains(where: { if case .failure = $0 { true } else { false } }) {
                    for u in chunk {
                        do { _ = try await withRetry { try await self.target.update(className: targetClass, id: u.1, u.2) } } catch { fail(u.0, MBaaSError.wrap(error)) }
                    }
                }
            }
            return failed
        }
        let outcomes = try await withThrowingTaskGroup(of: (String, MBaaSError?).self) { group in
            var inFlight = 0
            var out: [(String, MBaaSError?)] = []
            for u in updates {
                if inFlight >= max(1, options.concurrency), let r = try await group.next() { out.append(r); inFlight -= 1 }
                group.addTask {
                    do { _ = try await self.withRetry { try await self.target.update(className: targetClass, id: u.1, u.2) }; return (u.0, nil) } catch {
                        return (u.0, MBaaSError.wrap(error))
                    }
                }
                inFlight += 1
            }
            while let r = try await group.next() { out.append(r) }
            return out
        }
        for (id, e) in outcomes { if let e { fail(id, e) } }
        return failed
    }

    func describe(_ v: Value) -> String {
        switch v {
        case .pointer(let p): "\(p.className)/\(p.objectId)"
        case .array(let items): items.map(describe).joined(separator: ", ")
        default: v.typeName
        }
    }
}
