public import Foundation
public import MBaaSCore
import MBaaSLocal
import GRDB

/// A backend that keeps working offline: a Local store on the device (one SQLite file, mode 0600) in front of any
/// remote backend, synced on demand.
///
/// ```swift
/// let remote = try await registry.open("ncmb://KEY:SECRET@mbaas.api.nifcloud.com")
/// let replica = try await ReplicaBackend.open(path: "memos.replica", remote: remote,
///     configuration: ReplicaConfiguration(classes: ["Memo": ReplicaPolicy(persistence: .localAndServer)]))
/// _ = try await replica.create(Record(className: "Memo", fields: ["title": "offline"]))   // queued
/// let report = try await replica.sync()                                                   // sent
/// ```
///
/// # Contract
/// - Code written against the core works unchanged: a replica is a ``MBaaSCore/Backend``. The class's
///   ``ReplicaPolicy`` decides where each call goes: `serverOnly` to the remote; `localOnly` and `localAndServer` to
///   the replica (reads run on the Local store's query engine, so queries mean what they mean on Local).
/// - A write of a `localAndServer` record changes the replica and appends to the outbox in one SQLite transaction; the
///   outbox is coalesced (``sync(_:)`` documents the rules) and sent by sync up. ``syncStatus(className:id:)`` tells
///   where a record stands.
/// - A record created offline gets an id at once (15 characters `[a-z0-9]`). Where the remote refuses client ids,
///   sync up adopts the remote's id: the old id still finds the record, and pointers to it are rewritten in the
///   replica and the outbox.
/// - Opening a file that is not a replica (another SQLite database, a Local store) or a replica of a newer format is
///   `invalidRequest`, and the file is left untouched.
/// - Encrypted fields (``ReplicaPolicy/encryptedFields``) are sealed at rest with ``ReplicaCipher``; a query testing
///   one is `unsupported`; reading one without the key is `unauthorized`.
public actor ReplicaBackend: Backend {
    public nonisolated let adapterName = "replica"
    public nonisolated let path: String
    /// The remote backend sync talks to, and `serverOnly` classes go to.
    public nonisolated let remote: any Backend
    /// The Local store holding the replica's records (administrative: the replica is the device's own copy).
    nonisolated let local: LocalBackend
    nonisolated let store: ReplicaStore
    nonisolated let sealing: ReplicaSealing
    nonisolated let context: BackendContext
    /// The class policies, as stored in the replica.
    public private(set) var configuration: ReplicaConfiguration
    static let aclNote = "a replica does not enforce ACLs on the device: records of its classes are written without one (the remote's ACLs apply when they are synced; write ACLs through a serverOnly class)"
    /// Called for each conflict sync up meets; `nil`: conflicts wait for ``resolve(className:id:_:)``.
    var conflictHandler: ConflictHandler?
    /// Set when the conflict handler resolved a conflict during a sync up (which then runs once more).
    var conflictsResolvedDuringRun = false
    /// How sync up retries `unavailable`, `transport` and `rateLimited` failures.
    public nonisolated let retry: RetryPolicy
    nonisolated let sleep: @Sendable (TimeInterval) async throws -> Void

    /// Opens the replica at `path`, creating it (mode 0600) when missing.
    ///
    /// - Parameters:
    ///   - remote: the backend to sync with (opened by the caller, from a registry or an adapter).
    ///   - remoteURL: stored in the replica (secrets included; the file is 0600) so that `replica:PATH` URLs reopen
    ///     the remote; `nil` keeps what is stored.
    ///   - configuration: the class policies, stored in the replica; `nil` uses the stored ones (a new replica:
    ///     every class `serverOnly`). Checked against the remote first (``check(_:against:)``): a configuration
    ///     the remote cannot serve is `invalidRequest` and nothing is written.
    ///   - cipher: the key of the encrypted fields; never stored.
    public static func open(
        path: String, remote: any Backend, remoteURL: String? = nil, configuration: ReplicaConfiguration? = nil,
        cipher: ReplicaCipher? = nil, context: BackendContext = BackendContext(),
        retry: RetryPolicy = RetryPolicy(maxAttempts: 4, baseDelay: 0.5, maxDelay: 8),
        sleep: @escaping @Sendable (TimeInterval) async throws -> Void = { try await Task.sleep(nanoseconds: UInt64($0 * 1e9)) }
    ) async throws -> ReplicaBackend {
        try configuration?.validate()
        if let configuration { try check(configuration, against: remote) }
        switch try ReplicaSchema.inspect(path: path) {
        case .missing: break
        case .foreign(let what):
            throw MBaaSError(.invalidRequest, "'\(path)' is not a replica (\(what)); it was left untouched: give a new path to create one")
        case .replica(let format) where format > ReplicaSchema.format || format < 1:
            throw MBaaSError(.invalidRequest, "'\(path)' is a replica of format \(format); this version reads format \(ReplicaSchema.format); it was left untouched")
        case .replica: break
        }
        var localContext = context
        localContext.administrative = true
        localContext.readOnly = false
        let local = try LocalBackend(path: path, context: localContext)
        let store = try ReplicaStore(path: path, clock: context.clock)
        let stored: ReplicaConfiguration = try await store.write { db in
            if let remoteURL { try ReplicaStore.setMeta(db, "remote", remoteURL) }
            if let configuration {
                try ReplicaStore.setMeta(db, "configuration", configuration.json.printed())
                return configuration
            }
            guard let text = try ReplicaStore.meta(db, "configuration") else { return ReplicaConfiguration() }
            return try ReplicaConfiguration(json: try JSON.parse(text))
        }
        let replica = ReplicaBackend(path: path, remote: remote, local: local, store: store, configuration: stored,
                                     cipher: cipher, context: context, retry: retry, sleep: sleep)
        if let lastSession = try await replica.storedSession(), await remote.session == nil {
            await remote.restore(lastSession)
        }
        return replica
    }

    init(path: String, remote: any Backend, local: LocalBackend, store: ReplicaStore, configuration: ReplicaConfiguration,
         cipher: ReplicaCipher?, context: BackendContext, retry: RetryPolicy,
         sleep: @escaping @Sendable (TimeInterval) async throws -> Void) {
        self.path = path
        self.remote = remote
        self.local = local
        self.store = store
        self.configuration = configuration
        self.sealing = ReplicaSealing(cipher: cipher)
        self.context = context
        self.retry = retry
        self.sleep = sleep
    }

    /// The remote URL stored in a replica file (`nil` when none), read without opening the replica for writing.
    public static func storedRemoteURL(path: String) throws(MBaaSError) -> String? {
        switch try ReplicaSchema.inspect(path: path) {
        case .missing: throw MBaaSError(.notFound, "no replica at '\(path)': create one with mbaas sync init replica:\(path) --remote URL")
        case .foreign(let what): throw MBaaSError(.invalidRequest, "'\(path)' is not a replica (\(what)); it was left untouched")
        case .replica: break
        }
        var config = Configuration()
        config.readonly = true
        do {
            let queue = try DatabaseQueue(path: path, configuration: config)
            defer { try? queue.close() }
            return try queue.read { db in try ReplicaStore.meta(db, "remote") }
        } catch {
            throw MBaaSError(.localIO, "cannot read the replica '\(path)': \(error)")
        }
    }

    /// Replaces the class policies (validated first; nothing is written when they are refused).
    public func setConfiguration(_ configuration: ReplicaConfiguration) async throws {
        try configuration.validate()
        try Self.check(configuration, against: remote)
        let text = configuration.json.printed()
        try await store.write { db in try ReplicaStore.setMeta(db, "configuration", text) }
        self.configuration = configuration
    }

    /// Sets the handler sync up calls for each conflict.
    public func setConflictHandler(_ handler: ConflictHandler?) { conflictHandler = handler }

    public nonisolated var capabilities: Capabilities {
        var caps = local.capabilities
        let remoteCaps = remote.capabilities
        let delegated: [Capabilities.Feature] = [.files, .fileDelete, .fileList, .fileAttachment, .attachmentACL, .fileNames,
                                                 .unicodeFileNames, .fileACL, .fileACLListing, .fileACLRead, .auth, .signUp,
                                                 .anonymousAuth, .serverLogout, .roles]
        for feature in delegated {
            if remoteCaps.has(feature) { caps.features.insert(feature) } else { caps.features.remove(feature) }
            if let note = remoteCaps.note(for: feature) { caps.notes[feature] = note }
        }
        // The replica is the device's own copy: the remote enforces ACLs when writes reach it, the replica does not.
        for feature: Capabilities.Feature in [.completeReads, .acl, .aclRead, .aclReadOnly, .aclNarrowing, .fileAttachment,
                                              .attachmentACL, .atomicBatch] {
            caps.features.remove(feature)
        }
        caps.notes[.fileAttachment] = "a replica's records reach the remote on sync; files are not attached to records of a replica yet"
        caps.notes[.acl] = Self.aclNote
        caps.notes[.atomicBatch] = "a replica applies a batch one write at a time (each queued for sync up)"
        return caps
    }

    public func close() async {
        await local.close()
        try? store.pool.close()
        await remote.close()
    }

    // MARK: Policies

    func policy(_ className: String) -> ReplicaPolicy { configuration.policy(for: className) }

    /// Whether a class's records live in the replica.
    func isLocal(_ className: String) -> Bool { policy(className).persistence != .serverOnly }

    /// A fresh offline id: 15 characters of `[a-z0-9]` (accepted as a client id by most backends).
    nonisolated static func newId() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        var generator = SystemRandomNumberGenerator()
        return String((0..<15).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] })
    }

    /// The sync status of a record of the replica (`nil`: not a replica record: unknown, or of a `serverOnly` class).
    public func syncStatus(className: String, id: String) async throws -> SyncStatus? {
        guard isLocal(className), !id.utf8.contains(0) else { return nil }   // no record has a NUL in its id
        return try await store.read { db -> SyncStatus? in
            let current = try ReplicaStore.resolve(db, className: className, id: id)
            if let state = try ReplicaStore.state(db, className: className, id: current) { return state.status }
            return try ReplicaStore.loadRow(db, className: className, id: current) == nil ? nil : .synced
        }
    }

    /// The neutral JSON of a record with a `"syncStatus"` member (present only for replica records).
    public func json(of record: MBaaSCore.Record) async throws -> JSON {
        guard case .object(var o) = record.json else { return record.json }
        if let id = record.id, let status = try await syncStatus(className: record.className, id: id) {
            o["syncStatus"] = .string(status.rawValue)
        }
        return .object(o)
    }
}

/// How a conflict is settled.
public enum ConflictResolution: Sendable, Hashable {
    /// Send the replica's record over the server's.
    case keepLocal
    /// Drop the replica's changes and take the server's record (or its absence).
    case keepRemote
    /// Write this record (fields) on both sides.
    case merged(MBaaSCore.Record)
}

/// A conflict: the replica's record (`nil`: deleted on the device) and the remote's (`nil`: deleted on the server).
public struct SyncConflict: Sendable, Hashable {
    public var className: String
    public var id: String
    public var local: MBaaSCore.Record?
    public var remote: MBaaSCore.Record?
    /// Why sync up stopped on it: `conflict` (the server changed it) or the remote's refusal.
    public var reason: String

    public var json: JSON {
        .object(["class": .string(className), "id": .string(id), "local": local?.json ?? .null, "remote": remote?.json ?? .null,
                 "reason": .string(reason)])
    }
}

/// Decides a conflict during sync up; returning `nil` leaves it for later.
public typealias ConflictHandler = @Sendable (SyncConflict) async -> ConflictResolution?
