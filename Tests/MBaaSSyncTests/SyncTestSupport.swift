import Foundation
import MBaaSCore
import MBaaSLocal
@testable import MBaaSSync
import MBaaSTesting

/// A fresh temporary directory, removed by the caller.
func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("mbaas-sync-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A Local remote with cheap password hashing.
func localRemote(_ directory: URL, name: String = "remote.db") throws -> LocalBackend {
    try LocalBackend(path: directory.appendingPathComponent(name).path,
                     options: LocalBackend.Options(passwordHashing: .testing))
}

let memoConfiguration = ReplicaConfiguration(classes: ["Memo": ReplicaPolicy(persistence: .localAndServer)])

/// A remote a test controls: forwards to a backend, counts object calls, refuses client ids on request, and fails
/// calls as a plan says (before or after the wrapped backend processed them).
final class ControlledRemote: Backend, @unchecked Sendable {
    enum Failure { case before(MBaaSError), after(MBaaSError) }
    let base: any Backend
    let lock = NSLock()
    var refuseClientIds = false
    var calls: [String] = []
    /// Called for each object call (its name): a failure to inject, or `nil`.
    var plan: (@Sendable (String) -> Failure?)?
    /// Changes each page a query returns (a remote that holds what the base cannot, say).
    var pageHook: (@Sendable (Query, RecordPage) -> RecordPage)?

    init(_ base: any Backend) { self.base = base }

    var adapterName: String { "controlled" }
    /// Features the remote claims not to have (a remote that cannot hold a type, keeps no ACLs...).
    var withoutFeatures: Set<Capabilities.Feature> = []
    /// A smaller batch limit than the base's, when set.
    var maxBatchSize: Int?
    /// How long each batch call waits before the base runs it (to let calls overlap), and the most calls seen at once.
    var batchDelay: Duration = .zero
    private(set) var batchesInFlight = 0
    private(set) var mostBatchesInFlight = 0
    var capabilities: Capabilities {
        var caps = base.capabilities
        for feature in lock.withLock({ withoutFeatures }) { caps.features.remove(feature) }
        if let limit = lock.withLock({ maxBatchSize }) { caps.maxBatchSize = limit }
        return caps
    }

    func record(_ name: String) -> Failure? {
        lock.withLock {
            calls.append(name)
            return plan?(name)
        }
    }

    func run<T>(_ name: String, _ body: () async throws -> T) async throws -> T {
        let failure = record(name)
        if case .before(let e)? = failure { throw e }
        let result = try await body()
        if case .after(let e)? = failure { throw e }
        return result
    }

    var callCount: Int { lock.withLock { calls.count } }
    func resetCalls() { lock.withLock { calls = [] } }

    func create(_ record: Record) async throws -> Record {
        if lock.withLock({ refuseClientIds }), record.id != nil {
            _ = self.record("create")
            throw MBaaSError(.invalidRequest, "client ids are not accepted").refusing(MBaaSError.recordIdKey)
        }
        return try await run("create") { try await base.create(record) }
    }
    func get(className: String, id: String) async throws -> Record { try await run("get") { try await base.get(className: className, id: id) } }
    func update(className: String, id: String, _ update: RecordUpdate) async throws -> Record {
        try await run("update") { try await base.update(className: className, id: id, update) }
    }
    func delete(className: String, id: String, expectedVersion: String?) async throws {
        try await run("delete") { try await base.delete(className: className, id: id, expectedVersion: expectedVersion) }
    }
    func queryPage(_ query: Query) async throws -> RecordPage {
        let hook = lock.withLock { pageHook }
        return try await run("query") {
            let page = try await base.queryPage(query)
            return hook?(query, page) ?? page
        }
    }
    func count(_ query: Query) async throws -> Int { try await run("count") { try await base.count(query) } }
    /// One "batch" call (a plan may fail it), whose creates count as "create" calls.
    func batch(_ operations: [BatchOperation]) async throws -> [BatchResult] {
        try await run("batch") {
            let delay = lock.withLock {
                batchesInFlight += 1
                mostBatchesInFlight = max(mostBatchesInFlight, batchesInFlight)
                return batchDelay
            }
            defer { lock.withLock { batchesInFlight -= 1 } }
            if delay > .zero { try await Task.sleep(for: delay) }
            return await sequentialBatch(operations)
        }
    }

    func upload(_ upload: FileUpload) async throws -> FileReference { try await run("upload") { try await base.upload(upload) } }
    func download(_ file: FileReference) async throws -> Data { try await run("download") { try await base.download(file) } }
    func deleteFile(_ file: FileReference) async throws { try await base.deleteFile(file) }
    func listFiles(prefix: String?, limit: Int?) async throws -> [FileInfo] { try await base.listFiles(prefix: prefix, limit: limit) }

    func signUp(username: String, password: String, email: String?, fields: [String: Value]) async throws -> Session {
        try await base.signUp(username: username, password: password, email: email, fields: fields)
    }
    func logIn(username: String, password: String) async throws -> Session { try await base.logIn(username: username, password: password) }
    func logOut(confirmWithServer: Bool) async throws { try await base.logOut(confirmWithServer: confirmWithServer) }
    func currentUser() async throws -> User { try await run("currentUser") { try await base.currentUser() } }
    var session: Session? { get async { await base.session } }
    func restore(_ session: Session?) async { await base.restore(session) }
}

/// Retries that never wait.
let instantRetry = RetryPolicy(maxAttempts: 3, baseDelay: 0, maxDelay: 0)
let noSleep: @Sendable (TimeInterval) async throws -> Void = { _ in }

func openReplica(_ path: String, remote: any Backend, configuration: ReplicaConfiguration? = memoConfiguration,
                 cipher: ReplicaCipher? = nil, retry: RetryPolicy = instantRetry) async throws -> ReplicaBackend {
    try await ReplicaBackend.open(path: path, remote: remote, configuration: configuration, cipher: cipher, retry: retry, sleep: noSleep)
}

/// Every record of a class, by id: fields only.
func contents(_ store: any ObjectStore, _ className: String = "Memo") async throws -> [String: [String: Value]] {
    var out: [String: [String: Value]] = [:]
    for try await r in store.records(matching: Query(className)) { out[r.id!] = r.fields }
    return out
}
