public import MBaaSCore
import PostgresNIO

/// The PostgreSQL store serves the emulator (`mbaas serve --dialect … --data postgres://…`): views from
/// ``sharing(session:administrative:)`` share the pool; sessions, users, roles, records and files live in the
/// database and are read by every call, so several servers over one schema are one store.
extension PostgresBackend: ServerStore {
    /// `true`: a point read is one indexed statement, gathered with the others under way (``PostgresPointReads``),
    /// which postgres-nio does not cancel once sent and which its readers wait for without being cancelled. A
    /// statement stuck on a dead connection holds up only the reads it carries (past a second it no longer counts
    /// towards the statements allowed at once).
    public nonisolated var pointReadsRunToTheirEnd: Bool { true }

    /// A user by id, with its roles and groups; no session needed. An unknown id is `notFound`.
    public func user(id: String) async throws -> User {
        let store = self.store
        guard let user = try await store.direct({ conn in try await store.user(conn, id: id) }) else {
            throw MBaaSError(.notFound, "user \(id) not found")
        }
        return user
    }

    /// Deletes a user and its sessions in one statement (the foreign key cascades), so every instance refuses its
    /// tokens at once; its records stay. An unknown id is `notFound`.
    public func deleteUser(id: String) async throws {
        let store = self.store
        let deleted = try await store.directWrite { conn in
            var q = PGSQL()
            q.sql("DELETE FROM \(store.s)users WHERE id = \(q.bind(id)) RETURNING 1")
            return try await conn.changed(q, logger: store.logger)
        }
        if deleted == 0 { throw MBaaSError(.notFound, "user \(id) not found") }
    }

    /// Replaces a record's ACL whatever it grants (the row locked); the new ACL must be usable; bumps the version.
    public func repairACL(className: String, id: String, acl: ACL) async throws -> Record {
        try StoreValidation.className(className)
        let store = self.store
        return try await store.directWrite { conn in
            try await store.checkACL(conn, acl)
            guard var stored = try await store.load(conn, className: className, id: id, forUpdate: true) else {
                throw MBaaSError(.notFound, "record \(className)/\(id) not found")
            }
            let now = store.nowMillis
            try await store.write(conn, seq: stored.seq, fields: stored.record.fields, acl: acl, version: stored.versionNumber + 1, now: now)
            stored.record.acl = acl
            stored.record.version = String(stored.versionNumber + 1)
            stored.record.updatedAt = PostgresTime.date(now)
            return stored.record
        }
    }

    /// Replaces a stored file's ACL whatever it grants, like ``repairACL(className:id:acl:)``.
    public func repairFileACL(name: String, acl: ACL) async throws -> FileInfo {
        let store = self.store
        return try await store.directWrite { conn in
            try await store.checkACL(conn, acl)
            let now = store.nowMillis
            var q = PGSQL()
            q.sql("UPDATE \(store.s)files SET acl = \(q.bind(PostgresStore.encodeACL(acl)))::jsonb, updated_at = \(q.bind(now)) WHERE name = \(q.bind(name)) RETURNING 1")
            guard try await conn.changed(q, logger: store.logger) == 1, var row = try await store.fileRow(conn, name: name) else {
                throw MBaaSError(.notFound, "file '\(name)' not found")
            }
            row.acl = acl
            return row.info
        }
    }
}
