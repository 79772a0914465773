import Foundation
public import MBaaSCore
import PostgresNIO

/// The PostgreSQL store serves the emulator (`mbaas serve --data postgres://…`): views from
/// ``sharing(session:administrative:)``, sessions and password hashes in the database (a session's validity is read
/// on every call, so a log-out through one instance is seen by all), users administered without a session. Several
/// processes over one database are one store: nothing a request depends on is kept in an instance.
extension PostgresBackend: ServerStore {
    /// A user by id, with its roles and groups (administrative: no session needed). `notFound` if there is none.
    public func user(id: String) async throws -> User {
        let store = self.store
        guard let user = try await store.direct({ conn in try await store.user(conn, id: id) }) else {
            throw MBaaSError(.notFound, "user \(id) not found")
        }
        return user
    }

    /// Deletes a user and its sessions in one transaction (administrative); its records stay. `notFound` if unknown.
    public func deleteUser(id: String) async throws {
        let store = self.store
        let deleted = try await store.directWrite { conn in
            var sessions = PGSQL()
            sessions.sql("DELETE FROM \(store.s)sessions WHERE user_id = \(sessions.bind(id))")
            try await conn.run(sessions, logger: store.logger)
            var users = PGSQL()
            users.sql("DELETE FROM \(store.s)users WHERE id = \(users.bind(id)) RETURNING 1")
            return try await conn.changed(users, logger: store.logger)
        }
        if deleted == 0 { throw MBaaSError(.notFound, "user \(id) not found") }
    }

    /// Replaces a record's ACL whatever it grants and bumps its version (administrative). The ACL must be usable
    /// (`invalidRequest`); `notFound` if the record does not exist.
    public func repairACL(className: String, id: String, acl: ACL) async throws -> MBaaSCore.Record {
        try PostgresValidation.className(className)
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

    /// Replaces a stored file's ACL whatever it grants (administrative). `notFound` if there is no such file.
    public func repairFileACL(name: String, acl: ACL) async throws -> FileInfo {
        let store = self.store
        return try await store.directWrite { conn in
            try await store.checkACL(conn, acl)
            guard var row = try await store.fileRow(conn, name: name) else { throw MBaaSError(.notFound, "file '\(name)' not found") }
            let now = store.nowMillis
            var q = PGSQL()
            q.sql("UPDATE \(store.s)files SET acl = \(q.bind(PostgresStore.encodeACL(acl)))::jsonb, updated_at = \(q.bind(now)) WHERE seq = \(q.bind(row.seq))")
            try await conn.run(q, logger: store.logger)
            row.acl = acl
            row.updatedAt = now
            return row.info
        }
    }
}
