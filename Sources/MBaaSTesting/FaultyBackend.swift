public import Foundation
public import MBaaSCore

/// A ``MBaaSCore/Backend`` for tests that wraps another and fails some of its calls, deterministically for a seed:
/// writes before they happen (503, 429 with `Retry-After`) and after (a reset whose write happened), and, as told,
/// uploads, file names, ACL reads, user imports and look-ups. It can also declare less (or more) than the inner
/// backend: no client ids (always), no file attachments, narrowed ACLs, ACLs read apart, no file ACLs.
///
/// ```swift
/// let target = FaultyBackend(try LocalBackend.inMemory(), seed: 7, rate: 10)   // 10% of writes fail
/// let report = try await Migration(source: source, target: target, state: state).run()
/// #expect(target.injected > 0 && report.classes.allSatisfy { $0.failed == 0 })
/// ```
///
/// # Contract
/// - `rate` percent of creates, updates, batches and user imports fail: half before the write (`unavailable` or
///   `rateLimited`), half after it (`transport`, the write applied); all after with `afterOnly`. Reads never fail,
///   except queries while ``queriesFail`` is set.
/// - The same seed and the same calls in the same order inject the same faults.
/// - Capabilities: the inner backend's without ``MBaaSCore/Capabilities/Feature/clientIds`` (so only a look-up by
///   source id keeps writes from being duplicated), minus `without`, plus `adding` and what the options declare.
/// - Safe to use from concurrent tasks; its counters (``uploadedNames``, ``fileACLReads``, ``maxUploadsInFlight``,
///   ``recordACLReads``, ``injected``) are read under its lock.
public final class FaultyBackend: Backend, @unchecked Sendable {
    public let inner: any Backend
    private struct Tally {
        var rng: UInt64
        var injected = 0
        var uploaded: [String] = []
        var attempted: [String] = []
        var aclReads = 0
        var inFlight = 0
        var mostInFlight = 0
        var failQueries = false
        var recordReads = 0
    }
    private let tally: Locked<Tally>
    /// How many faults were injected so far.
    public var injected: Int { tally.withLock { $0.injected } }

    public let rate: UInt64

    /// Errors given instead of importing or finding a user, by user name (`nil`: none).
    public let userFault: @Sendable (String) -> MBaaSError?
    public let findUserFault: @Sendable (String) -> MBaaSError?

    /// Every injected fault comes after the write happened (a lost response).
    public let afterOnly: Bool
    /// Without ``Capabilities/Feature/fileAttachment``: files go to the file store (names unique there) and records
    /// hold File values, as on NCMB or Parse.
    public let plainFileStore: Bool
    /// How long each upload takes before it reaches the inner store.
    public let uploadDelay: Duration
    /// The names of the uploads that reached the inner store, in order.
    public var uploadedNames: [String] { tally.withLock { $0.uploaded } }
    /// The names of every upload asked for, refused or not, in order.
    public var uploadAttempts: [String] { tally.withLock { $0.attempted } }
    /// How many files' ACLs were read one by one (``fileACL(_:)``).
    public var fileACLReads: Int { tally.withLock { $0.aclReads } }
    /// The most uploads that were under way at one moment.
    public var maxUploadsInFlight: Int { tally.withLock { $0.mostInFlight } }
    /// Queries fail with a 503 while set.
    public var queriesFail: Bool {
        get { tally.withLock { $0.failQueries } }
        set { tally.withLock { $0.failQueries = newValue } }
    }

    /// `rate`: percent of writes that fail (half before, half after the write; all after with `afterOnly`).
    /// Features taken away from the inner backend's.
    public let without: Set<Capabilities.Feature>
    /// Features added to the inner backend's (declared only: as a limit such as `emptyStringsAbsent`).
    public let adding: Set<Capabilities.Feature>
    /// With a rule, the backend declares ``Capabilities/Feature/aclNarrowing``: an ACL the rule narrows (a non-nil
    /// answer) is refused on writes as `unsupported`, and ``narrowedACL(_:)`` answers the rule's ACL.
    public let narrow: (@Sendable (ACL) -> ACL?)?
    /// Without ``Capabilities/Feature/fileACL``: uploads carrying an ACL are `unsupported`, as on a store whose files
    /// have no ACLs of their own.
    public let refusesFileACLs: Bool
    /// File names the store refuses as `unsupported`, as NCMB's file store refuses full-width names.
    public let refusesFileName: @Sendable (String) -> Bool
    /// File names its file list leaves out (as a source: a linked file whose ACL cannot be found).
    public let hidesFromList: @Sendable (String) -> Bool
    /// Errors given instead of a file's ACL read on its own, by file name (`nil`: none).
    public let fileACLFault: @Sendable (String) -> MBaaSError?
    /// As Kii: records are read without their ACL (no ``Capabilities/Feature/acl``), which
    /// ``recordACLs(className:ids:)`` reads apart (``Capabilities/Feature/aclRead``); the fault, by record id, fails
    /// the whole call.
    public let readsACLsApart: Bool
    public let recordACLFault: @Sendable (String) -> MBaaSError?

    public init(_ inner: any Backend, seed: UInt64, rate: UInt64 = 10, afterOnly: Bool = false, plainFileStore: Bool = false,
         uploadDelay: Duration = .zero, without: Set<Capabilities.Feature> = [], adding: Set<Capabilities.Feature> = [], narrow: (@Sendable (ACL) -> ACL?)? = nil, refusesFileACLs: Bool = false,
         refusesFileName: @escaping @Sendable (String) -> Bool = { _ in false },
         hidesFromList: @escaping @Sendable (String) -> Bool = { _ in false },
         fileACLFault: @escaping @Sendable (String) -> MBaaSError? = { _ in nil },
         readsACLsApart: Bool = false, recordACLFault: @escaping @Sendable (String) -> MBaaSError? = { _ in nil },
         userFault: @escaping @Sendable (String) -> MBaaSError? = { _ in nil },
         findUserFault: @escaping @Sendable (String) -> MBaaSError? = { _ in nil }) {
        self.inner = inner
        tally = Locked(Tally(rng: seed))
        self.rate = rate
        self.afterOnly = afterOnly
        self.plainFileStore = plainFileStore
        self.uploadDelay = uploadDelay
        self.without = without
        self.adding = adding
        self.narrow = narrow
        self.refusesFileACLs = refusesFileACLs
        self.refusesFileName = refusesFileName
        self.hidesFromList = hidesFromList
        self.fileACLFault = fileACLFault
        self.readsACLsApart = readsACLsApart
        self.recordACLFault = recordACLFault
        self.userFault = userFault
        self.findUserFault = findUserFault
    }

    public var adapterName: String { inner.adapterName }
    /// Without ``Capabilities/Feature/clientIds``: a second create is not refused as a duplicate id, so only the
    /// migration's look-up by `sourceObjectId` keeps writes from being duplicated.
    public var capabilities: Capabilities {
        var c = inner.capabilities
        c.features.remove(.clientIds)
        if plainFileStore { c.features.remove(.fileAttachment) }
        c.features.subtract(without)
        c.features.formUnion(adding)
        if narrow != nil { c.features.insert(.aclNarrowing) }
        if refusesFileACLs { c.features.remove(.fileACL) }
        if readsACLsApart {
            c.features.remove(.acl)
            c.features.insert(.aclRead)
        }
        return c
    }

    /// How many records' ACLs were read apart (``recordACLs(className:ids:)``).
    public var recordACLReads: Int { tally.withLock { $0.recordReads } }
    public func recordACLs(className: String, ids: [String]) async throws -> [String: ACL] {
        guard readsACLsApart else { return try await inner.recordACLs(className: className, ids: ids) }
        for id in ids { if let fault = recordACLFault(id) { throw fault } }
        tally.withLock { $0.recordReads += ids.count }
        var out: [String: ACL] = [:]
        for id in ids {
            guard let r = try? await inner.get(className: className, id: id) else { continue }
            out[id] = r.acl ?? .publicReadWrite
        }
        return out
    }

    public func narrowedACL(_ acl: ACL) async throws -> ACL { narrow?(acl) ?? acl }
    public func preflight(className: String, records: [Record]) async throws { try await inner.preflight(className: className, records: records) }

    /// Refuses an ACL the narrowing rule would change, as a backend that cannot store it does.
    private func checkStorable(_ acl: ACL?) throws {
        if let acl, let narrow, narrow(acl) != nil {
            throw MBaaSError.unsupported("the ACL \(acl.json.printed())", by: "faulty", reason: "it narrows ACLs")
        }
    }

    /// 0 none, 1 fail before, 2 fail after.
    private func roll() -> Int {
        tally.withLock { t in
            t.rng = t.rng &* 6364136223846793005 &+ 1442695040888963407
            let r = (t.rng >> 33) % 100
            if r < rate / 2 { t.injected += 1; return afterOnly ? 2 : 1 }
            if r < rate { t.injected += 1; return 2 }
            return 0
        }
    }

    private func faulty<T>(_ body: () async throws -> T) async throws -> T {
        switch roll() {
        case 1: throw Bool.random() ? MBaaSError(.unavailable, "injected 503", httpStatus: 503)
            : MBaaSError(.rateLimited, "injected 429", httpStatus: 429, retryAfter: 0.01)
        case 2:
            _ = try await body()
            throw MBaaSError(.transport, "injected reset after the write")
        default: return try await body()
        }
    }

    public func create(_ record: Record) async throws -> Record {
        try checkStorable(record.acl)
        return try await faulty { try await inner.create(record) }
    }
    public func batch(_ operations: [BatchOperation]) async throws -> [BatchResult] {
        for op in operations {
            switch op {
            case .create(let r): try checkStorable(r.acl)
            case .update(_, _, let u): try checkStorable(u.acl)
            case .delete: break
            }
        }
        return try await faulty { try await inner.batch(operations) }
    }
    public func get(className: String, id: String) async throws -> Record {
        var r = try await inner.get(className: className, id: id)
        if readsACLsApart { r.acl = nil }
        return r
    }
    public func update(className: String, id: String, _ update: RecordUpdate) async throws -> Record {
        try checkStorable(update.acl)
        return try await faulty { try await inner.update(className: className, id: id, update) }
    }
    public func delete(className: String, id: String, expectedVersion: String?) async throws {
        try await inner.delete(className: className, id: id, expectedVersion: expectedVersion)
    }
    public func queryPage(_ query: Query) async throws -> RecordPage {
        if queriesFail { throw MBaaSError(.unavailable, "injected 503 on a query", httpStatus: 503) }
        var page = try await inner.queryPage(query)
        if readsACLsApart { for i in page.records.indices { page.records[i].acl = nil } }
        return page
    }
    public func count(_ query: Query) async throws -> Int { try await inner.count(query) }
    public func upload(_ upload: FileUpload) async throws -> FileReference {
        tally.withLock { t in
            t.attempted.append(upload.name)
            t.inFlight += 1
            t.mostInFlight = max(t.mostInFlight, t.inFlight)
        }
        defer { tally.withLock { $0.inFlight -= 1 } }
        if uploadDelay > .zero { try await Task.sleep(for: uploadDelay) }
        if refusesFileACLs, upload.acl != nil { throw MBaaSError.unsupported("file ACLs", by: "faulty", reason: "its files have no ACLs") }
        // As PocketBase and Kii do: an attached file follows its record.
        if upload.attachment != nil, upload.acl != nil, !capabilities.has(.attachmentACL) {
            throw MBaaSError(.invalidRequest, "an attached file follows the ACL of its record")
        }
        if refusesFileName(upload.name) { throw MBaaSError.unsupported("the file name '\(upload.name)'", by: "faulty", reason: "it refuses such names") }
        try checkStorable(upload.acl)
        let stored = try await inner.upload(upload)
        tally.withLock { $0.uploaded.append(upload.name) }
        return stored
    }
    public func download(_ file: FileReference) async throws -> Data { try await inner.download(file) }
    public func deleteFile(_ file: FileReference) async throws { try await inner.deleteFile(file) }
    /// Without ``Capabilities/Feature/fileACLListing`` the list carries no ACLs (as Kii's); without
    /// ``Capabilities/Feature/fileACLRead`` a file's ACL cannot be read on its own either.
    public func listFiles(prefix: String?, limit: Int?) async throws -> [FileInfo] {
        let unlisted = without.contains(.fileACLListing)
        return try await inner.listFiles(prefix: prefix, limit: limit).filter { !hidesFromList($0.reference.name) }.map {
            var info = $0
            if unlisted { info.acl = nil }
            return info
        }
    }
    public func fileACL(_ file: FileReference) async throws -> ACL? {
        if without.contains(.fileACLRead) { throw MBaaSError(.unsupported, "no fileACLRead") }
        tally.withLock { $0.aclReads += 1 }
        if let fault = fileACLFault(file.name) { throw fault }
        return try await inner.fileACL(file)
    }
    public func signUp(username: String, password: String, email: String?, fields: [String: Value]) async throws -> Session {
        try await inner.signUp(username: username, password: password, email: email, fields: fields)
    }
    public func logIn(username: String, password: String) async throws -> Session { try await inner.logIn(username: username, password: password) }
    public func logOut(confirmWithServer: Bool) async throws { try await inner.logOut(confirmWithServer: confirmWithServer) }
    public func currentUser() async throws -> User { try await inner.currentUser() }
    public var session: Session? { get async { await inner.session } }
    public func restore(_ session: Session?) async { await inner.restore(session) }
    public func listClasses() async throws -> [String] { try await inner.listClasses() }
    public func listUsers(after cursor: String?, limit: Int) async throws -> DirectoryUserPage { try await inner.listUsers(after: cursor, limit: limit) }
    public func listRoles() async throws -> [DirectoryRole] { try await inner.listRoles() }
    public func findUser(username: String) async throws -> DirectoryUser? {
        if let e = findUserFault(username) { throw e }
        return try await inner.findUser(username: username)
    }
    public func findUser(field: String, equals value: String) async throws -> DirectoryUser? {
        try await inner.findUser(field: field, equals: value)
    }
    public func importUser(_ user: DirectoryUser, password: ImportedPassword) async throws -> DirectoryUser {
        if let name = user.username, let e = userFault(name) { throw e }
        return try await faulty { try await inner.importUser(user, password: password) }
    }
    public func importRole(_ role: DirectoryRole) async throws { try await inner.importRole(role) }
}
