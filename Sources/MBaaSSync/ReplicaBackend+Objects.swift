public import MBaaSCore
import GRDB
import MBaaSLocal

/// Records: `serverOnly` classes go to the remote; the others are read from and written to the replica.
///
/// # Coalescing (Amplify DataStore's rules), per record, among writes not yet being sent
/// - create, then updates → one create with the merged fields;
/// - several updates → one update (operations per field merged: increments add up, adds concatenate, a set absorbs what
///   came before); when one field's operations do not combine (an increment then an add), the second update is queued
///   apart, never turned into a plain set that would lose a concurrent change on the server;
/// - create, then delete → nothing is sent;
/// - update(s), then delete → one delete.
extension ReplicaBackend {
    /// `notFound` for an id holding NUL (U+0000), as Local and PostgreSQL answer: the replica keys records by id in
    /// SQLite, where GRDB would bind it cut at the NUL and so name another record. No record has such an id (creates
    /// refuse it).
    static func refuseNUL(_ className: String, _ id: String) throws(MBaaSError) {
        if id.utf8.contains(0) { throw MBaaSError(.notFound, "no record \(className)/\(id)") }
    }

    public func create(_ record: MBaaSCore.Record) async throws -> MBaaSCore.Record {
        let policy = self.policy(record.className)
        guard policy.persistence != .serverOnly else { return try await remote.create(record) }
        if record.acl != nil { throw MBaaSError(.unsupported, "\(record.className): \(Self.aclNote)") }
        try policy.checkTypes(record.fields, className: record.className)
        let id = record.id ?? Self.newId()
        try StoreValidation.noNUL(id, "record id")
        var stored = record
        stored.id = id
        try await local.preflight(className: record.className, records: [stored])
        let queued = policy.persistence == .localAndServer
        let now = store.now
        let sealed = try sealing.sealFields(record.fields, encrypted: policy.encryptedFields)
        var sealedRecord = stored
        sealedRecord.fields = sealed
        let row = sealedRecord
        let createPayload = try payload(create: record.fields, acl: record.acl, encrypted: policy.encryptedFields)
        try await store.write { db in
            if try ReplicaStore.loadRow(db, className: record.className, id: id) != nil
                || ReplicaStore.state(db, className: record.className, id: id) != nil {
                throw MBaaSError(.duplicate, "a record \(record.className)/\(id) already exists in the replica")
            }
            try ReplicaStore.saveRow(db, row, version: 1, createdAt: now, updatedAt: now)
            if queued {
                try ReplicaStore.setStatus(db, className: record.className, id: id, .created)
                try ReplicaStore.append(db, className: record.className, id: id, .create, payload: createPayload)
            }
        }
        stored.createdAt = Millis.date(now)
        stored.updatedAt = Millis.date(now)
        stored.version = "1"
        return stored
    }

    public func get(className: String, id: String) async throws -> MBaaSCore.Record {
        guard isLocal(className) else { return try await remote.get(className: className, id: id) }
        try Self.refuseNUL(className, id)
        let current = try await store.read { db in try ReplicaStore.resolve(db, className: className, id: id) }
        return try sealing.openRecord(try await local.get(className: className, id: current))
    }

    public func update(className: String, id: String, _ update: RecordUpdate) async throws -> MBaaSCore.Record {
        let policy = self.policy(className)
        guard policy.persistence != .serverOnly else { return try await remote.update(className: className, id: id, update) }
        try Self.refuseNUL(className, id)
        if update.acl != nil { throw MBaaSError(.unsupported, "\(className): \(Self.aclNote)") }
        for key in update.changes.keys where MBaaSCore.Record.reservedFieldNames.contains(key) {
            throw MBaaSError(.invalidRequest, "fields: '\(key)' is reserved for record metadata")
        }
        let queued = policy.persistence == .localAndServer
        let encrypted = policy.encryptedFields
        let sealing = self.sealing
        let now = store.now
        let changes = try payload(update: update.changes, acl: update.acl, encrypted: encrypted)
        let validator = local
        // Read, check and compute outside the write (the Local preflight is async), then write only if unchanged.
        for _ in 0..<5 {
            let (current, row) = try await store.read { db -> (String, ReplicaStore.Row?) in
                let current = try ReplicaStore.resolve(db, className: className, id: id)
                return (current, try ReplicaStore.loadRow(db, className: className, id: current))
            }
            guard let row else { throw MBaaSError(.notFound, "no record \(className)/\(id)") }
            if let expected = update.expectedVersion, expected != String(row.localVersion) {
                throw MBaaSError(.conflict, "record \(className)/\(id) is at version \(row.localVersion), not \(expected)")
            }
            var fields = try sealing.openFields(row.record.fields)
            for (field, op) in update.changes {
                fields[field] = try op.applied(to: fields[field], field: field)
            }
            try policy.checkTypes(fields, className: className)
            var result = row.record
            result.id = current
            result.fields = fields
            if let acl = update.acl { result.acl = acl }
            try await validator.preflight(className: className, records: [result])
            var sealedResult = result
            sealedResult.fields = try sealing.sealFields(fields, encrypted: encrypted)
            let sealedRow = sealedResult
            let createdAt = row.record.createdAt.map(Millis.of) ?? now
            let written: Bool = try await store.write { db in
                guard let again = try ReplicaStore.loadRow(db, className: className, id: current),
                      again.localVersion == row.localVersion else { return false }
                try ReplicaStore.saveRow(db, sealedRow, version: row.localVersion + 1, createdAt: createdAt, updatedAt: now)
                guard queued else { return true }
                let state = try ReplicaStore.state(db, className: className, id: current)
                if state == nil || state?.status == .synced {
                    try ReplicaStore.setStatus(db, className: className, id: current, .updated)
                }
                try Self.enqueueUpdate(db, className: className, id: current, changes: changes, fields: sealedRow.fields,
                                       acl: sealedRow.acl, sealing: sealing)
                return true
            }
            if written {
                result.version = String(row.localVersion + 1)
                result.updatedAt = Millis.date(now)
                return result
            }
        }
        throw MBaaSError(.unavailable, "record \(className)/\(id) kept changing while it was updated; try again")
    }

    public func delete(className: String, id: String, expectedVersion: String?) async throws {
        let policy = self.policy(className)
        guard policy.persistence != .serverOnly else {
            return try await remote.delete(className: className, id: id, expectedVersion: expectedVersion)
        }
        try Self.refuseNUL(className, id)
        let queued = policy.persistence == .localAndServer
        try await store.write { db in
            let current = try ReplicaStore.resolve(db, className: className, id: id)
            guard let row = try ReplicaStore.loadRow(db, className: className, id: current) else {
                throw MBaaSError(.notFound, "no record \(className)/\(id)")
            }
            if let expectedVersion, expectedVersion != String(row.localVersion) {
                throw MBaaSError(.conflict, "record \(className)/\(id) is at version \(row.localVersion), not \(expectedVersion)")
            }
            try ReplicaStore.deleteRow(db, className: className, id: current)
            guard queued else { return }
            let entries = try ReplicaStore.entries(db, className: className, id: current)
            let waiting = entries.filter { !$0.inflight && $0.blocked == nil }
            for entry in waiting { try ReplicaStore.removeEntry(db, seq: entry.seq) }
            let neverSent = waiting.contains { $0.operation == .create } && !entries.contains { $0.inflight || $0.blocked != nil }
            if neverSent {
                try ReplicaStore.deleteState(db, className: className, id: current)
            } else {
                let state = try ReplicaStore.state(db, className: className, id: current)
                if state?.status != .conflicted { try ReplicaStore.setStatus(db, className: className, id: current, .deleted) }
                try ReplicaStore.append(db, className: className, id: current, .delete, payload: [:])
            }
        }
    }

    public func queryPage(_ query: Query) async throws -> RecordPage {
        guard isLocal(query.className) else { return try await remote.queryPage(query) }
        try refuseEncryptedKeys(query)
        var page = try await local.queryPage(query)
        page.records = try page.records.map { r throws(MBaaSError) in try sealing.openRecord(r) }
        return page
    }

    public func count(_ query: Query) async throws -> Int {
        guard isLocal(query.className) else { return try await remote.count(query) }
        try refuseEncryptedKeys(query)
        return try await local.count(query)
    }

    public func batch(_ operations: [BatchOperation]) async throws -> [BatchResult] {
        await sequentialBatch(operations)
    }

    public func preflight(className: String, records: [MBaaSCore.Record]) async throws {
        if isLocal(className) { try await local.preflight(className: className, records: records) }
        else { try await remote.preflight(className: className, records: records) }
    }

    // MARK: Helpers

    func refuseEncryptedKeys(_ query: Query) throws(MBaaSError) {
        let encrypted = policy(query.className).encryptedFields
        guard !encrypted.isEmpty else { return }
        var keys = query.predicate?.keys ?? []
        keys.formUnion(query.sort.map(\.key))
        if let key = keys.first(where: { encrypted.contains($0.split(separator: ".").first.map(String.init) ?? $0) }) {
            throw MBaaSError(.unsupported, "'\(key)' of '\(query.className)' is encrypted at rest in the replica; queries on it are not supported")
        }
    }

    func payload(create fields: [String: Value], acl: ACL?, encrypted: Set<String>) throws(MBaaSError) -> JSONObject {
        var sealed = JSONObject()
        for key in fields.keys.sorted() {
            let json = fields[key]!.json
            sealed[key] = encrypted.contains(key) ? try sealing.sealJSON(json, field: key) : json
        }
        var o: JSONObject = ["fields": .object(sealed)]
        if let acl { o["acl"] = acl.json }
        return o
    }

    func payload(update changes: [String: FieldOperation], acl: ACL?, encrypted: Set<String>) throws(MBaaSError) -> JSONObject {
        var sealed = JSONObject()
        for key in changes.keys.sorted() {
            let json = changes[key]!.json
            sealed[key] = encrypted.contains(key) ? try sealing.sealJSON(json, field: key) : json
        }
        var o: JSONObject = ["changes": .object(sealed)]
        if let acl { o["acl"] = acl.json }
        return o
    }

    /// Decodes a queued update's changes, opening sealed ones.
    static func changes(of payload: JSONObject, sealing: ReplicaSealing) throws(MBaaSError) -> [String: FieldOperation] {
        var out: [String: FieldOperation] = [:]
        for (key, json) in payload["changes"]?.objectValue ?? [:] {
            out[key] = try FieldOperation(json: try sealing.openJSON(json, field: key), path: key)
        }
        return out
    }

    /// Queues an update of a record, coalesced into the last waiting entry of the record where the rules allow.
    static func enqueueUpdate(_ db: Database, className: String, id: String, changes: JSONObject, fields: [String: Value],
                              acl: ACL?, sealing: ReplicaSealing) throws {
        let entries = try ReplicaStore.entries(db, className: className, id: id)
        if let last = entries.last, !last.inflight, last.blocked == nil {
            switch last.operation {
            case .create:
                // Not on the server yet: one create with the record as it is now (fields already sealed).
                var o: JSONObject = ["fields": Value.object(fields).json]
                if let acl { o["acl"] = acl.json }
                try ReplicaStore.replacePayload(db, seq: last.seq, op: .create, payload: o)
                return
            case .update:
                let before = try Self.changes(of: last.payload, sealing: sealing)
                let after = try Self.changes(of: changes, sealing: sealing)
                if let merged = ReplicaFieldOperations.merge(before, after) {
                    var o = JSONObject()
                    var sealedChanges = JSONObject()
                    let sealedBefore = last.payload["changes"]?.objectValue ?? [:]
                    let sealedAfter = changes["changes"]?.objectValue ?? [:]
                    for key in merged.keys.sorted() {
                        let plain = merged[key]!.json
                        let wasSealed = (sealedBefore[key].map(ReplicaCipher.isSealed) ?? false)
                            || (sealedAfter[key].map(ReplicaCipher.isSealed) ?? false)
                        sealedChanges[key] = wasSealed ? try sealing.sealJSON(plain, field: key) : plain
                    }
                    o["changes"] = .object(sealedChanges)
                    if let acl = changes["acl"] ?? last.payload["acl"] { o["acl"] = acl }
                    try ReplicaStore.replacePayload(db, seq: last.seq, op: .update, payload: o)
                    return
                }
            case .delete:
                break
            }
        }
        try ReplicaStore.append(db, className: className, id: id, .update, payload: changes)
    }
}
