import Foundation
import MBaaSCore
import PostgresNIO

// A batch made only of creates (what a migration and a replica's sync up send) is written by one INSERT of every row,
// through `unnest` of one array per column, instead of one statement per record: a round trip per batch, not per
// record.

extension PostgresStore {
    /// Inserts the records of a batch of creates with one statement, in the caller's transaction, with the rules of
    /// ``insert(_:_:principal:now:)``: each record's problems (validation, its id, its ACL) are found first, in
    /// order, then taken ids (in the table, or earlier in the same batch: `duplicate`), so a batch with both reports
    /// the first record that fails validation. The first failure is a ``PostgresBatchFailure`` naming its index, and
    /// the transaction rolls back; a statement error that names no row (a value the database refuses, a timeout) is
    /// found again record by record, from a savepoint.
    func insertAll(_ conn: PostgresConnection, _ encoded: [Result<EncodedInsert, MBaaSError>], operations: [BatchOperation],
                   principal: PostgresPrincipal, now: Int64) async throws -> [Record] {
        var records: [Record] = []
        records.reserveCapacity(encoded.count)
        var classes: [String] = [], ids: [String] = [], created: [Int64] = [], updated: [Int64] = []
        var acls: [String] = [], fields: [String] = []
        for (i, result) in encoded.enumerated() {
            do {
                let e = try result.get()
                var record = e.record
                record.acl = try await effectiveACL(conn, record.acl, principal: principal)
                if let problem = e.idProblem { throw problem }
                // The database owner (a migration) keeps the source's times; everyone else gets the server's.
                let c = principal.isAdministrator ? record.createdAt.map(ISO8601.millis) ?? now : now
                let u = principal.isAdministrator ? record.updatedAt.map(ISO8601.millis) ?? c : now
                classes.append(record.className); ids.append(record.id!); created.append(c); updated.append(u)
                // '' stands for no ACL (SQL NULL): an ACL is never printed empty.
                acls.append(Self.encodeACL(record.acl) ?? ""); fields.append(e.fieldsText)
                record.createdAt = PostgresTime.date(c)
                record.updatedAt = PostgresTime.date(u)
                record.version = "1"
                records.append(record)
            } catch let e as PostgresSessionInvalid {
                throw e
            } catch {
                throw PostgresBatchFailure(index: i, count: encoded.count, operation: operations[i], error: Self.mapError(error))
            }
        }
        var q = PGSQL()
        q.sql("""
            INSERT INTO \(s)records (class, id, created_at, updated_at, version, acl, fields)
            SELECT t.c, t.i, t.ca, t.ua, 1, NULLIF(t.a, '')::jsonb, t.f::jsonb
            FROM unnest(\(q.bind(classes))::text[], \(q.bind(ids))::text[], \(q.bind(created))::int8[], \(q.bind(updated))::int8[],
                        \(q.bind(acls))::text[], \(q.bind(fields))::text[]) WITH ORDINALITY AS t(c, i, ca, ua, a, f, n)
            ORDER BY t.n
            ON CONFLICT (class, id) DO NOTHING RETURNING class, id
            """)
        var written: [String: Int] = [:]
        // A statement error (a value the database refuses, a timeout) names no row: the statement is undone to a
        // savepoint and the records are written one by one, so that the failure names its operation as the
        // per-record path does.
        try await conn.run(PGSQL("SAVEPOINT mbaas_batch_insert"), logger: logger)
        do {
            for row in try await conn.rows(q, logger: logger) { written[try row.text(0) + "/" + (try row.text(1)), default: 0] += 1 }
        } catch {
            try await conn.run(PGSQL("ROLLBACK TO SAVEPOINT mbaas_batch_insert"), logger: logger)
            var one: [Record] = []
            for (i, result) in encoded.enumerated() {
                do {
                    one.append(try await insert(conn, result, principal: principal, now: now))
                } catch let e as PostgresSessionInvalid {
                    throw e
                } catch {
                    throw PostgresBatchFailure(index: i, count: encoded.count, operation: operations[i], error: Self.mapError(error))
                }
            }
            return one
        }
        if written.count == records.count { return records }
        // Some id was taken: the first record (in batch order) that was not written is the failure.
        for (i, record) in records.enumerated() {
            let key = record.className + "/" + record.id!
            if let n = written[key], n > 0 { written[key] = n - 1; continue }
            throw PostgresBatchFailure(index: i, count: records.count, operation: operations[i],
                                       error: MBaaSError(.duplicate, "record \(key) already exists"))
        }
        return records
    }
}
