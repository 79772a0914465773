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
                let new = try await prepareInsert(conn, result, principal: principal, now: now)
                let record = new.record
                classes.append(record.className); ids.append(record.id!); created.append(new.created); updated.append(new.updated)
                // '' stands for no ACL (SQL NULL): an ACL is never printed empty.
                acls.append(Self.encodeACL(record.acl) ?? ""); fields.append(new.fieldsText)
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
        var written: Set<String> = []
        // A statement error (a value the database refuses, a timeout) names no row: the statement is undone to a
        // savepoint and the records are written one by one, so that the failure names its operation as the
        // per-record path does.
        try await conn.run(PGSQL("SAVEPOINT mbaas_batch_insert"), logger: logger)
        do {
            for row in try await conn.rows(q, logger: logger) { written.insert(try row.text(0) + "/" + (try row.text(1))) }
        } catch let error as PSQLError where error.serverInfo != nil {
            // Only what PostgreSQL refused; a lost connection or a cancellation is thrown as it is.
            logger.debug("postgres: the batch insert was refused (\(error.serverInfo?[.sqlState] ?? "?")); writing record by record")
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
            // (class, id) is unique, so a key is written at most once: its first record in the batch.
            let key = record.className + "/" + record.id!
            if written.remove(key) != nil { continue }
            throw PostgresBatchFailure(index: i, count: records.count, operation: operations[i],
                                       error: MBaaSError(.duplicate, "record \(key) already exists"))
        }
        return records
    }
}
