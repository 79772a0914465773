import Foundation
import MBaaSCore
import GRDB

/// The lost-answer rule: a create whose answer never came back (a dropped connection, a timeout, a kill -9 between
/// sending and recording) must not be sent twice.
///
/// # Contract
/// - Where the remote keeps client ids, the create in flight is looked up by its id (``ReplicaBackend/lookUp(_:)``).
/// - Where the remote refuses client ids (it said so once with ``MBaaSCore/MBaaSError/refusesRecordId``; the replica
///   remembers it in its meta table), the record's id on the server is unknown. Before it is sent again, the remote
///   is queried for its **content fingerprint**: every top-level field of the create holding a string, a number or a
///   boolean, compared with `eq`. Records the replica already holds (synced, queued or mapped ids) are not candidates;
///   of the rest, the oldest (`createdAt`) is taken as the lost create: the replica adopts its id as if the answer
///   had come back. No marker field is written on the server (the records stay exactly what the app wrote).
/// - A create with no such field, or a remote that cannot run the query (`unsupported`, `invalidRequest`), is sent
///   again: the one case a lost answer can still duplicate a record (documented in the "Offline and sync" article).
extension ReplicaBackend {
    static let refusesIdsKey = "remoteRefusesIds"

    /// Whether the remote said it refuses client ids (remembered in the replica).
    func remoteRefusesIds() async throws -> Bool {
        try await store.read { db in try ReplicaStore.meta(db, Self.refusesIdsKey) == "1" }
    }

    /// The content fingerprint of a queued create: `eq` on its top-level strings, numbers and booleans (`nil`: none).
    nonisolated func fingerprint(_ entry: OutboxEntry) throws -> QueryPredicate? {
        var terms: [QueryPredicate] = []
        for (key, json) in (entry.payload["fields"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
            let value = try Value(json: try sealing.openJSON(json, field: key), path: key)
            switch value {
            case .string, .int, .double, .bool: terms.append(.compare(key, .eq, value))
            default: continue
            }
        }
        if terms.isEmpty { return nil }
        return terms.count == 1 ? terms[0] : .and(terms)
    }

    /// The remote's record a lost create of `entry` made, found by its content fingerprint where the remote refuses
    /// client ids; the replica adopts its id. `nil`: not found (or it cannot be looked up): send it.
    func findLostCreate(_ entry: OutboxEntry) async throws -> MBaaSCore.Record? {
        guard try await remoteRefusesIds(), let predicate = try fingerprint(entry) else { return nil }
        let className = entry.className
        let known = try await store.read { db -> Set<String> in
            var ids = Set(try String.fetchAll(db, sql: "SELECT id FROM replica_state WHERE class = ?", arguments: [className]))
            ids.formUnion(try String.fetchAll(db, sql: "SELECT remote_id FROM replica_idmap WHERE class = ?", arguments: [className]))
            ids.formUnion(try String.fetchAll(db, sql: "SELECT id FROM records WHERE class = ?", arguments: [className]))
            return ids
        }
        var query = Query(className, predicate: predicate, sort: [SortKey("createdAt")], limit: 100)
        var found: MBaaSCore.Record?
        do {
            scan: while true {
                let q = query
                let page = try await withRetry { try await remote.queryPage(q) }
                for record in page.records {
                    if let id = record.id, !known.contains(id) { found = record; break scan }
                }
                guard let next = page.nextCursor, !page.records.isEmpty else { break }
                query.cursor = next
            }
        } catch let e as MBaaSError where [.unsupported, .invalidRequest, .notFound].contains(e.kind) {
            return nil
        }
        guard let found, let newId = found.id else { return nil }
        let old = entry.id
        try await store.write { db in try ReplicaStore.replaceId(db, className: className, from: old, to: newId) }
        return found
    }
}
