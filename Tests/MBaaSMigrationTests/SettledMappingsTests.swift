import Foundation
import GRDB
import MBaaSTesting
import Testing
@testable import MBaaSMigration

/// The state's memory of settled kinds and classes (``MigrationState/settle(_:className:)``), checked by changing
/// the state database behind its back.
@Suite("Settled mappings")
struct SettledMappingsTests {
    @Test("settled mappings answer from memory once seen; a mapping written for them afterwards ends that; ids with quotes and accents round-trip")
    func settledMappings() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let state = try MigrationState(directory: scratch.path("state"))
        let odd = "q\"u\\o-t\u{e9}"
        try state.recordWritten(.user, className: "_User", [.init(sourceId: "u1", targetId: "t1", fixups: nil, attachments: []),
                                                           .init(sourceId: odd, targetId: "t-odd", fixups: nil, attachments: [])])
        #expect(try state.mapped(.user, className: "_User", sourceIds: ["u1", odd, "u2"]) == ["u1": "t1", odd: "t-odd"])
        state.settle(.user, className: "_User")
        #expect(try state.mapped(.user, className: "_User", sourceIds: ["u1", "u2"]) == ["u1": "t1"])
        // Gone from the database, still answered: the settled mapping came from memory.
        try state.db.write { try $0.execute(sql: "DELETE FROM idmap WHERE source_id = 'u1'") }
        #expect(try state.mapped(.user, className: "_User", sourceIds: ["u1", "u2"]) == ["u1": "t1"])
        // A mapping written afterwards unsettles the kind and class: look-ups go to the database again.
        try state.recordWritten(.user, className: "_User", [.init(sourceId: "u2", targetId: "t2", fixups: nil, attachments: [])])
        #expect(try state.mapped(.user, className: "_User", sourceIds: ["u1", "u2", odd]) == ["u2": "t2", odd: "t-odd"])
        // Other classes were never settled.
        try state.recordWritten(.record, className: "Memo", [.init(sourceId: "m1", targetId: "x1", fixups: nil, attachments: [])])
        try state.db.write { try $0.execute(sql: "DELETE FROM idmap WHERE source_id = 'm1'") }
        #expect(try state.mapped(.record, className: "Memo", sourceIds: ["m1"]).isEmpty)
    }

    @Test("users' mappings committed by recordUsers and records' through the write-behind also end a settlement")
    func unsettledByEveryWrite() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let state = try MigrationState(directory: scratch.path("state"))
        try state.recordUsers([("u1", "t1")], password: "reset")
        state.settle(.user, className: "_User")
        #expect(try state.mapped(.user, className: "_User", sourceIds: ["u1"]) == ["u1": "t1"])
        try state.db.write { try $0.execute(sql: "DELETE FROM idmap WHERE source_id = 'u1'") }
        try state.recordUsers([("u2", "t2")], password: "reset")
        #expect(try state.mapped(.user, className: "_User", sourceIds: ["u1", "u2"]) == ["u2": "t2"])

        try state.recordWritten(.record, className: "Memo", [.init(sourceId: "m1", targetId: "x1", fixups: nil, attachments: [])])
        state.settle(.record, className: "Memo")
        #expect(try state.mapped(.record, className: "Memo", sourceIds: ["m1"]) == ["m1": "x1"])
        try state.db.write { try $0.execute(sql: "DELETE FROM idmap WHERE source_id = 'm1'") }
        try state.recordWritten(.record, className: "Memo", [.init(sourceId: "m2", targetId: "x2", fixups: nil, attachments: [])], deferred: true)
        #expect(try state.mapped(.record, className: "Memo", sourceIds: ["m1", "m2"]) == ["m2": "x2"])
    }

    @Test("the memory keeps at most its limit of mappings, and forgets a kind and class unsettled meanwhile")
    func limit() {
        let memory = SettledMappings(limit: 2)
        var found: [String: String] = [:]
        var missing: [String] = []
        #expect(!memory.lookup(.user, className: "_User", sourceIds: ["a"], found: &found, missing: &missing))
        memory.settle(.user, className: "_User")
        memory.remember(.user, className: "_User", ["a": "1", "b": "2", "c": "3"])
        #expect(memory.lookup(.user, className: "_User", sourceIds: ["a", "b", "c"], found: &found, missing: &missing))
        #expect(found.count == 2 && missing.count == 1)
        memory.unsettle(.user, className: "_User")
        memory.remember(.user, className: "_User", ["d": "4"])   // arrives after the unsettling: not kept
        memory.settle(.user, className: "_User")
        found = [:]
        #expect(memory.lookup(.user, className: "_User", sourceIds: ["a", "d"], found: &found, missing: &missing))
        #expect(found.isEmpty && missing == ["a", "d"])
        // The room freed by unsettling is there again.
        memory.remember(.record, className: "Memo", ["x": "1", "y": "2"])   // not settled: ignored
        memory.settle(.record, className: "Memo")
        memory.remember(.record, className: "Memo", ["x": "1", "y": "2"])
        #expect(memory.lookup(.record, className: "Memo", sourceIds: ["x", "y"], found: &found, missing: &missing) && missing.isEmpty)
    }
}

/// ``offPool(_:)``: a state call waiting on the state database holds a thread of its own, not a cooperative one.
@Suite("State calls off the cooperative pool")
struct OffPoolTests {
    /// Checked on the mechanism, not by timing a task of the global pool: in a full parallel test run, other tests
    /// (the CLI tests waiting for their child processes) can hold every cooperative thread for a minute.
    @Test("state calls waiting on a held state database each hold a thread of their own, none of Swift's cooperative threads")
    func heldDatabaseDoesNotStallThePool() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let state = try MigrationState(directory: scratch.path("state"))
        // Twice as many calls as the machine has cores (the cooperative pool's width).
        let n = ProcessInfo.processInfo.activeProcessorCount * 2
        let entered = CallCounter()
        let allWaiting = LockedFlag()
        let held = DispatchSemaphore(value: 0)
        // Another thread holds the state database until every call is waiting for it (60 s at most: a failure).
        let holder = Thread {
            try? state.db.write { _ in
                held.signal()
                let deadline = Date() + 60
                while entered.value < n, Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
                if entered.value == n { allWaiting.set() }
            }
        }
        holder.start()
        held.wait()
        let done = DispatchGroup()
        let names = LockedList()
        for i in 0..<n {
            done.enter()
            StateCallThreads.shared.submit {
                entered.increment()
                try? state.recordWritten(.record, className: "C", [.init(sourceId: "s\(i)", targetId: "t\(i)", fixups: nil, attachments: [])])
                names.append(Thread.current.name ?? "")
                done.leave()
            }
        }
        done.wait()
        // Every call waited at once, each on a thread of its own (a pool as wide as the cores would have let 2 in).
        #expect(allWaiting.isSet, "\(entered.value) of \(n) calls were waiting while the database was held")
        #expect(names.values.count == n && names.values.allSatisfy { $0 == "mbaas-state" }, "\(names.values)")
        #expect(try state.mappedCount(.record, className: "C") == n)
        // And offPool runs its call there: the awaiting task holds no thread meanwhile.
        #expect(try await offPool { Thread.current.name } == "mbaas-state")
    }

    @Test("nothing a call captured outlives its await: a state folder is free again as soon as its last user returns")
    func callsLetGoBeforeResuming() async throws {
        final class Captured: Sendable {}
        for _ in 0..<200 {
            weak var gone: Captured?
            try await {
                let captured = Captured()
                gone = captured
                try await offPool { _ = captured }
            }()
            #expect(gone == nil)
        }
        // The case that needs it: a migration's state closed, the same folder opened again at once.
        let scratch = try Scratch()
        defer { scratch.remove() }
        for _ in 0..<50 {
            try await {
                let state = try MigrationState(directory: scratch.path("state"))
                try await offPool { try state.flushWritten() }
            }()
            _ = try MigrationState(directory: scratch.path("state"))
        }
    }
}

extension MigrationState {
    /// Runs SQL on the state database behind the state's back (tests only; GRDB is imported here, not where
    /// `MBaaSCore.Record` is used, whose name GRDB also has).
    func executeBehindItsBack(_ sql: String) throws {
        try db.write { try $0.execute(sql: sql) }
    }
}

/// Runs SQL on a SQLite file behind its owner's back (a test's way to change a target as no API would).
func executeBehindItsBack(database url: URL, _ sql: String) throws {
    let queue = try DatabaseQueue(path: url.path)
    try queue.write { try $0.execute(sql: sql) }
    try queue.close()
}

/// A flag set from another thread.
final class LockedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}

/// A list shared with other threads.
final class LockedList: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []
    func append(_ item: String) { lock.withLock { items.append(item) } }
    var values: [String] { lock.withLock { items } }
}
