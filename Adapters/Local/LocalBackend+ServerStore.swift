public import MBaaSCore

/// The embedded store serves the emulator: views from ``sharing(session:administrative:)``, sessions and password
/// hashes in the database, user administration without a session. Two openings of one database file (two
/// processes, or two instances in one) are one store: sessions, users, records and files live in the file and its
/// file directory (WAL mode; writers wait up to ``Options/busyTimeout``), nothing in the instance.
extension LocalBackend: ServerStore {
    /// `true`: a point read is one indexed `SELECT`, run synchronously (on a file, on a read-only connection of its
    /// own; in memory after a write in progress, milliseconds), which no cancellation interrupts.
    public nonisolated var pointReadsRunToTheirEnd: Bool { true }
}
