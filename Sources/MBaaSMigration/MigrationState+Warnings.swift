import GRDB
import MBaaSCore

// Warnings about what a run wrote, kept so that a later run, which skips those writes, says them again.

extension MigrationState {
    /// Keeps `warnings` as said by `run` (a run's own token): a warning kept before (the same kind, class, source id
    /// and detail) now names `run` as the last run that said it.
    func keepWarnings(_ warnings: [MigrationReport.Mismatch], run: String) throws(MBaaSError) {
        guard !warnings.isEmpty else { return }
        try write { db in
            let stmt = try db.cachedStatement(sql: """
                INSERT INTO warnings(kind, class, source_id, detail, run) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(kind, class, source_id, detail) DO UPDATE SET run = excluded.run
                """)
            for w in warnings { try stmt.execute(arguments: [w.kind, w.className, w.sourceId ?? "", w.detail, run]) }
        }
    }

    /// Kept warnings that `run` has not said, in key order, after `after` (the last one of the previous page), at
    /// most `limit`.
    func earlierWarnings(notSaidBy run: String, after: MigrationReport.Mismatch?, limit: Int) throws(MBaaSError)
        -> [MigrationReport.Mismatch]
    {
        try read { db in
            var sql = "SELECT kind, class, source_id, detail FROM warnings WHERE run <> ?"
            var arguments: StatementArguments = [run]
            if let after {
                sql += " AND (kind, class, source_id, detail) > (?, ?, ?, ?)"
                arguments += [after.kind, after.className, after.sourceId ?? "", after.detail]
            }
            sql += " ORDER BY kind, class, source_id, detail LIMIT ?"
            arguments += [limit]
            return try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
                let sourceId: String = row[2]
                return MigrationReport.Mismatch(kind: row[0], className: row[1], sourceId: sourceId.isEmpty ? nil : sourceId, detail: row[3])
            }
        }
    }
}

extension Migration {
    /// Keeps the warnings this run gave since the last call in the state (``MigrationState/keepWarnings(_:run:)``).
    /// Called as each batch of records and each stage ends, so that memory holds a batch's warnings at most.
    func keepWarnings(_ state: MigrationState) async throws {
        let taken = box.update { report -> [MigrationReport.Mismatch] in
            defer { report.unkept.removeAll() }
            return report.unkept
        }
        guard !taken.isEmpty else { return }
        let run = runToken
        try await offPool { try state.keepWarnings(taken, run: run) }
    }

    /// Says again, as warnings of this run, those an earlier run gave about what it wrote and this run has not said
    /// (this run skipped those writes: the records were already there), so that a run that resumes or repeats reports
    /// what the target holds as the first run did. Each is marked `(from an earlier run)`. Called when the stages end.
    func sayEarlierWarnings(_ state: MigrationState) async throws {
        let run = runToken
        var last: MigrationReport.Mismatch?
        while true {
            let after = last
            let page = try await offPool { try state.earlierWarnings(notSaidBy: run, after: after, limit: 1000) }
            guard let end = page.last else { return }
            last = end
            box.update { report in
                for var w in page {
                    w.detail += " (from an earlier run)"
                    report.warn(w, keep: false)
                }
            }
        }
    }
}
