import MBaaSCore

// What the state keeps in memory between its database's transactions: mappings written but not committed yet
// (``WriteBehind``) and mappings of settled classes (``SettledMappings``).

/// A batch of writes marked in flight (``MigrationState/beginWrites(_:className:sourceIds:)``).
struct PendingBatch: Sendable { var token: Int64 }

/// Which mappings: a kind and a source class (``WriteBehind`` and ``SettledMappings`` keep theirs by it).
struct MappingKey: Hashable, Sendable {
    var kind: MigrationState.Kind
    var className: String
}

/// The mappings of written records not committed yet, with the in-flight batches they settle:
/// ``MigrationState/recordWritten(_:className:_:deferred:settling:)``. Items leave only after their transaction
/// commits, so a look-up finds a mapping in memory, in the database, or both; one flush runs at a time.
final class WriteBehind: Sendable {
    private typealias Key = MappingKey
    private struct Contents {
        var waiting: [Key: [MigrationState.Written]] = [:]
        var index: [Key: [String: String]] = [:]
        var tokens: [Int64] = []
        var count = 0
    }
    private let contents = Locked(Contents())
    /// Held for a whole flush: one runs at a time.
    private let flushing = Locked(())

    /// Adds the items, and the batch they settle; returns how many wait now.
    func add(_ kind: MigrationState.Kind, className: String, _ items: [MigrationState.Written], settling batch: PendingBatch?) -> Int {
        contents.withLock { c in
            if let batch { c.tokens.append(batch.token) }
            let key = Key(kind: kind, className: className)
            c.waiting[key, default: []] += items
            for item in items { c.index[key, default: [:]][item.sourceId] = item.targetId }
            c.count += items.count
            return c.count
        }
    }

    func overlay(_ kind: MigrationState.Kind, className: String, sourceIds: [String], into found: inout [String: String]) {
        contents.withLock { c in
            guard let map = c.index[Key(kind: kind, className: className)] else { return }
            for id in sourceIds { if let target = map[id] { found[id] = target } }
        }
    }

    /// Hands what waits to `commit`, then forgets it (only if `commit` succeeded: a failed commit keeps it).
    func flush(
        _ commit: ([(kind: MigrationState.Kind, className: String, items: [MigrationState.Written])], [Int64]) throws(MBaaSError) -> Void
    ) throws(MBaaSError) {
        try flushing.withLock { (_) throws(MBaaSError) in
            let (taken, settled) = contents.withLock { ($0.waiting, $0.tokens) }
            guard !taken.isEmpty || !settled.isEmpty else { return }
            try commit(taken.map { ($0.key.kind, $0.key.className, $0.value) }, settled)
            contents.withLock { c in
                c.tokens.removeFirst(settled.count)   // tokens added during the commit were appended after these
                for (key, items) in taken {
                    // Items added during the commit stay (they were appended after the ones taken).
                    let rest = Array(c.waiting[key, default: []].dropFirst(items.count))
                    c.waiting[key] = rest.isEmpty ? nil : rest
                    var map = c.index[key] ?? [:]
                    let still = Set(rest.map(\.sourceId))
                    for item in items where !still.contains(item.sourceId) { map[item.sourceId] = nil }
                    c.index[key] = map.isEmpty ? nil : map
                    c.count -= items.count
                }
            }
        }
    }
}

/// The memory behind ``MigrationState/settle(_:className:)``: for each settled kind and class, the mappings found so
/// far (only mappings: an id found unmapped is asked again), at most `limit` in all.
final class SettledMappings: Sendable {
    private typealias Key = MappingKey
    private struct Contents {
        var maps: [Key: [String: String]] = [:]
        var count = 0
    }
    private let contents = Locked(Contents())
    private let limit: Int

    init(limit: Int) { self.limit = limit }

    func settle(_ kind: MigrationState.Kind, className: String) {
        contents.withLock { c in
            let key = Key(kind: kind, className: className)
            if c.maps[key] == nil { c.maps[key] = [:] }
        }
    }

    func clear() {
        contents.withLock { $0 = Contents() }
    }

    func unsettle(_ kind: MigrationState.Kind, className: String) {
        contents.withLock { c in
            if let gone = c.maps.removeValue(forKey: Key(kind: kind, className: className)) { c.count -= gone.count }
        }
    }

    /// For a settled kind and class: the known mappings into `found`, the other ids into `missing`, and `true`.
    /// Otherwise `false`, with both left as they are.
    func lookup(_ kind: MigrationState.Kind, className: String, sourceIds: [String], found: inout [String: String], missing: inout [String]) -> Bool {
        contents.withLock { c in
            guard let map = c.maps[Key(kind: kind, className: className)] else { return false }
            var rest: [String] = []
            for id in sourceIds {
                if let target = map[id] { found[id] = target } else { rest.append(id) }
            }
            missing = rest
            return true
        }
    }

    /// Keeps mappings looked up for a settled kind and class, while there is room.
    func remember(_ kind: MigrationState.Kind, className: String, _ mappings: [String: String]) {
        guard !mappings.isEmpty else { return }
        contents.withLock { c in
            let key = Key(kind: kind, className: className)
            guard c.maps[key] != nil else { return }   // unsettled meanwhile
            for (source, target) in mappings where c.count < limit {
                if c.maps[key]![source] == nil { c.count += 1 }
                c.maps[key]![source] = target
            }
        }
    }
}
