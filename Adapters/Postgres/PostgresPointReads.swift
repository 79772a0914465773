import Foundation
import MBaaSCore
import PostgresNIO

/// The point reads of one store (a record by class and id, outside a transaction), gathered into one statement while
/// others run.
///
/// # Contract
/// - At most ``limit`` statements run at once. A read that finds fewer running runs at once, in its own task, with
///   the reads already waiting (alone when none waits: the prepared ``PostgresPointRead``). A read that finds
///   ``limit`` running waits for the next statement, which reads every waiting key in one round trip
///   (``PostgresPointReadBatch``: `unnest` of the classes and ids, joined on the `(class, id)` index).
/// - Every read is answered by a statement that started after the read was asked: a write acknowledged before a read
///   began is seen by it, as with a statement of its own.
/// - A statement's failure (a lost connection) is the answer of every read it carried. Waiting is not cancelled
///   with the reader's task: like a running statement (postgres-nio does not cancel one), it ends first.
/// - Why: under load every GET was a round trip of its own to another process on the same processors; `perf`
///   showed postgres-nio's send of Bind/Execute/Sync at 11% of the server's samples and PostgreSQL's backends at a
///   third of a processor. One statement now carries the reads that arrive while others run.
final class PostgresPointReads: @unchecked Sendable {
    typealias Found = PostgresStoredRecord?

    struct Key: Hashable, Sendable {
        var className: String
        var id: String
    }

    /// The most statements running at once for this store.
    let limit: Int

    private let lock = NSLock()
    private var running = 0
    typealias Waiter = (key: Key, reader: CheckedContinuation<Found, any Error>)
    private var waiting: [Waiter] = []
    private var statementCount = 0

    /// The statements run so far (tests check that concurrent reads shared them).
    var statements: Int { lock.withLock { statementCount } }

    init(limit: Int = PostgresPointReads.defaultLimit) {
        precondition(limit > 0)
        self.limit = limit
    }

    /// One per processor, at least two: enough statements in flight to keep PostgreSQL busy, few enough that the
    /// reads arriving meanwhile wait and share one. Measured here (2 processors, `Benchmarks/http-get.sh 8 32 2`, the
    /// `ncmb-postgres` row, two runs each): 11.6k and 11.3k GETs/s with 1, 12.1k and 11.0k with 2, 10.9k and 9.6k with
    /// 3, 10.1k and 11.8k with 4, 9.6k with 8; each GET its own statement (before): 8.7–9.0k.
    static let defaultLimit = max(2, ProcessInfo.processInfo.activeProcessorCount)

    /// The record at `key`, or `nil`; read by `store` (see the type's contract).
    func load(_ key: Key, store: PostgresStore) async throws -> Found {
        let others: [Waiter]? = lock.withLock {
            guard running < limit else { return nil }
            running += 1
            defer { waiting = [] }
            return waiting
        }
        if let others {
            let found: Result<[Key: PostgresStoredRecord], any Error>
            do {
                found = .success(try await read([key] + others.map(\.key), store: store))
            } catch {
                found = .failure(error)
            }
            Self.answer(others, with: found)
            handOver(store: store)
            return try found.get()[key]
        }
        return try await withCheckedThrowingContinuation { reader in
            // A slot may have freed since the check above: then a task of its own serves the waiting reads.
            let serveNow = lock.withLock {
                waiting.append((key, reader))
                guard running < limit else { return false }
                running += 1
                return true
            }
            if serveNow { Task { await self.serve(store: store) } }
        }
    }

    /// Keeps this statement's slot for the reads that arrived meanwhile (a task of its own serves them), or frees it.
    private func handOver(store: PostgresStore) {
        let more = lock.withLock {
            if waiting.isEmpty { running -= 1 }
            return !waiting.isEmpty
        }
        if more { Task { await self.serve(store: store) } }
    }

    /// Reads the waiting keys, one statement at a time, until none waits; then frees the slot.
    private func serve(store: PostgresStore) async {
        while true {
            let batch: [Waiter] = lock.withLock {
                let batch = waiting
                waiting = []
                if batch.isEmpty { running -= 1 }
                return batch
            }
            if batch.isEmpty { return }
            do {
                Self.answer(batch, with: .success(try await read(batch.map(\.key), store: store)))
            } catch {
                Self.answer(batch, with: .failure(error))
            }
        }
    }

    private static func answer(_ readers: [Waiter],
                               with found: Result<[Key: PostgresStoredRecord], any Error>) {
        for (key, reader) in readers { reader.resume(with: found.map { $0[key] }) }
    }

    /// One statement for `keys` (repeats allowed): the prepared point read for one distinct key, the batch otherwise.
    private func read(_ keys: [Key], store: PostgresStore) async throws -> [Key: PostgresStoredRecord] {
        lock.withLock { statementCount += 1 }
        var distinct = Set<Key>()
        let unique = keys.filter { distinct.insert($0).inserted }
        return try await store.client.withConnection { conn in
            var found: [Key: PostgresStoredRecord] = [:]
            if unique.count == 1, let key = unique.first {
                let rows = try await store.prepared(conn, PostgresPointRead(className: key.className, id: key.id))
                if let row = rows.first { found[key] = try PostgresStore.decodeRecord(className: key.className, row: row) }
            } else {
                let batch = PostgresPointReadBatch(classes: unique.map(\.className), ids: unique.map(\.id))
                for row in try await store.prepared(conn, batch) {
                    let className = try row.text(7)
                    found[Key(className: className, id: try row.text(1))] = try PostgresStore.decodeRecord(className: className, row: row)
                }
            }
            return found
        }
    }
}

/// Records by class and id, for ``PostgresPointReads``: the ``PostgresStore/recordColumns`` and the class.
struct PostgresPointReadBatch: PostgresStoreStatement {
    static func text(schemaPrefix s: String) -> String {
        "SELECT \(PostgresStore.recordColumns), r.class FROM unnest($1::text[], $2::text[]) AS k(class, id) "
            + "JOIN \(s)records r ON r.class = k.class AND r.id = k.id"
    }

    var classes: [String]
    var ids: [String]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(classes)
        bindings.append(ids)
        return bindings
    }
}
