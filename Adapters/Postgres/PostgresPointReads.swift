import Foundation
import MBaaSCore
import PostgresNIO

/// The point reads of one store (a record by class and id, outside a transaction), gathered into one statement while
/// others run.
///
/// # Contract
/// - At most ``limit`` statements run at once, each in a task of its own (so no caller's cancellation reaches the
///   reads of others). A read that finds fewer running starts one; a read that finds ``limit`` running waits, and the
///   next statement to end reads every waiting key in one round trip (``PostgresPointReadBatch``: `unnest` of the
///   classes and ids, joined on the `(class, id)` index; one key alone is the prepared ``PostgresPointRead``).
/// - Every read is answered by a statement that started after the read was asked: a write acknowledged before a read
///   began is seen by it, as with a statement of its own.
/// - A statement that has had its connection for longer than ``staleAfter`` no longer counts towards ``limit``: a
///   statement stuck on a connection that died without a word (until TCP gives up) holds up only the reads it
///   carries. While reads wait, one watcher task checks every ``staleAfter`` whether a statement may start for them
///   (those under way may all be stuck, and no new read may come to start one). A statement waiting for a pooled
///   connection counts in full (waiting for the pool is not being stuck), and stale or not, at most four times
///   ``limit`` statements exist at once.
/// - A statement's failure (a lost connection) is the answer of every read it carried; a stored record that cannot
///   be decoded is the failure of the reads of that record alone. Waiting is not cancelled with the reader's task:
///   like a running statement (postgres-nio does not cancel one), it ends first.
/// - Why: under load every GET was a round trip of its own to another process on the same processors; `perf`
///   showed postgres-nio's send of Bind/Execute/Sync at 11% of the server's samples and PostgreSQL's backends at a
///   third of a processor. One statement now carries the reads that arrive while others run.
final class PostgresPointReads: @unchecked Sendable {
    typealias Found = PostgresStoredRecord?

    struct Key: Hashable, Sendable {
        var className: String
        var id: String
    }

    /// The most statements running at once for this store (not counting those past ``staleAfter``).
    let limit: Int
    /// How long a statement counts towards ``limit``, in nanoseconds.
    let staleAfter: UInt64

    typealias Waiter = (key: Key, reader: CheckedContinuation<Found, any Error>)
    private let lock = NSLock()
    private var waiting: [Waiter] = []
    /// The statements under way: an id each, and when its current batch got its connection (uptime nanoseconds;
    /// `UInt64.max` while it waits for one).
    private var running: [UInt64: UInt64] = [:]
    private var lastStatement: UInt64 = 0
    /// Whether the watcher task runs (see the type's contract).
    private var watching = false
    private var statementCount = 0

    /// The statements run so far (tests check that concurrent reads shared them).
    var statements: Int { lock.withLock { statementCount } }

    init(limit: Int = PostgresPointReads.defaultLimit, staleAfter: Duration = .seconds(1)) {
        precondition(limit > 0)
        self.limit = limit
        let c = staleAfter.components
        self.staleAfter = max(1_000_000, UInt64(max(0, c.seconds)) * 1_000_000_000 + UInt64(max(0, c.attoseconds) / 1_000_000_000))
    }

    /// One per processor, at least two: enough statements in flight to keep PostgreSQL busy, few enough that the
    /// reads arriving meanwhile wait and share one. Measured here (2 processors, `Benchmarks/http-get.sh 8 32 2`, the
    /// `ncmb-postgres` row, two runs each): 11.6k and 11.3k GETs/s with 1, 12.1k and 11.0k with 2, 10.9k and 9.6k with
    /// 3, 10.1k and 11.8k with 4, 9.6k with 8; each GET its own statement (before): 8.7–9.0k.
    static let defaultLimit = max(2, ProcessInfo.processInfo.activeProcessorCount)

    /// The record at `key`, or `nil`; read by `store` (see the type's contract).
    func load(_ key: Key, store: PostgresStore) async throws -> Found {
        try await withCheckedThrowingContinuation { reader in
            let (statement, watch): (UInt64?, Bool) = lock.withLock {
                waiting.append((key, reader))
                if let statement = startIfAllowed() { return (statement, false) }
                defer { watching = true }
                return (nil, !watching)
            }
            if let statement { Task { await self.serve(statement, store: store) } }
            if watch { Task { await self.watch(store: store) } }
        }
    }

    /// Under the lock: a new statement's id when one may start (fewer than ``limit`` count, fewer than four times
    /// ``limit`` exist), else `nil`.
    private func startIfAllowed() -> UInt64? {
        let now = DispatchTime.now().uptimeNanoseconds
        let counting = running.values.reduce(0) { $0 + ($1 == .max || now &- $1 < staleAfter ? 1 : 0) }
        guard counting < limit, running.count < 4 * limit else { return nil }
        lastStatement &+= 1
        running[lastStatement] = .max
        return lastStatement
    }

    /// While reads wait: every ``staleAfter``, starts a statement for them if one may start; ends when none waits.
    private func watch(store: PostgresStore) async {
        while true {
            try? await Task.sleep(nanoseconds: staleAfter)
            let next: (end: Bool, statement: UInt64?) = lock.withLock {
                guard !waiting.isEmpty else {
                    watching = false
                    return (true, nil)
                }
                return (false, startIfAllowed())
            }
            if next.end { return }
            if let statement = next.statement { Task { await self.serve(statement, store: store) } }
        }
    }

    /// Reads the waiting keys, one statement at a time, until none waits; then ends the statement.
    private func serve(_ statement: UInt64, store: PostgresStore) async {
        while true {
            let batch: [Waiter] = lock.withLock {
                let batch = waiting
                waiting = []
                running[statement] = batch.isEmpty ? nil : .max
                return batch
            }
            if batch.isEmpty { return }
            do {
                let found = try await read(batch.map(\.key), statement: statement, store: store)
                for (key, reader) in batch {
                    switch found[key] {
                    case nil: reader.resume(returning: nil)
                    case .success(let record)?: reader.resume(returning: record)
                    case .failure(let error)?: reader.resume(throwing: error)
                    }
                }
            } catch {
                for (_, reader) in batch { reader.resume(throwing: error) }
            }
        }
    }

    /// One statement for `keys` (repeats allowed): the prepared point read for one distinct key, the batch otherwise.
    /// A key without a row is missing from the answer; a row that cannot be decoded is that key's failure.
    private func read(_ keys: [Key], statement: UInt64, store: PostgresStore) async throws
        -> [Key: Result<PostgresStoredRecord, any Error>]
    {
        lock.withLock { statementCount += 1 }
        var distinct = Set<Key>()
        let unique = keys.filter { distinct.insert($0).inserted }
        return try await store.client.withConnection { conn in
            self.lock.withLock { self.running[statement] = DispatchTime.now().uptimeNanoseconds }
            var found: [Key: Result<PostgresStoredRecord, any Error>] = [:]
            if unique.count == 1, let key = unique.first {
                let rows = try await store.prepared(conn, PostgresPointRead(className: key.className, id: key.id))
                if let row = rows.first {
                    found[key] = Result { try PostgresStore.decodeRecord(className: key.className, row: row) }
                }
            } else {
                let batch = PostgresPointReadBatch(classes: unique.map(\.className), ids: unique.map(\.id))
                for row in try await store.prepared(conn, batch) {
                    let className = try row.text(7)
                    found[Key(className: className, id: try row.text(1))] = Result {
                        try PostgresStore.decodeRecord(className: className, row: row)
                    }
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
