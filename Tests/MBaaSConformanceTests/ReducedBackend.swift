import Foundation
import MBaaSCore
import MBaaSExampleAdapter

/// The example adapter (``MemoryBackend``) with features taken away or limits added, for the runner's tests: a
/// store without users (no `auth`, `signUp`), one whose users are provisioned by an administrator (no `signUp`),
/// or one that loses empty strings (and may or may not declare `emptyStringsAbsent`).
struct ReducedBackend: Backend {
    let inner: any Backend
    let removed: Set<Capabilities.Feature>
    let added: Set<Capabilities.Feature>
    /// Whether an empty string written is stored as no value (read back absent).
    let dropsEmptyStrings: Bool

    var adapterName: String { inner.adapterName }
    var capabilities: Capabilities {
        var c = inner.capabilities
        c.features.subtract(removed)
        c.features.formUnion(added)
        for f in removed { c.notes[f] = "the reduced example has no \(f.rawValue)" }
        return c
    }

    private func refuse(_ feature: Capabilities.Feature) throws {
        if removed.contains(feature) {
            throw MBaaSError.unsupported(feature.rawValue, by: adapterName, reason: capabilities.note(for: feature))
        }
    }

    private func stored(_ record: Record) -> Record {
        guard dropsEmptyStrings else { return record }
        var r = record
        r.fields = r.fields.filter { $0.value != .string("") }
        return r
    }

    func create(_ record: Record) async throws -> Record { try await inner.create(stored(record)) }
    func get(className: String, id: String) async throws -> Record { try await inner.get(className: className, id: id) }
    func update(className: String, id: String, _ update: RecordUpdate) async throws -> Record {
        try await inner.update(className: className, id: id, update)
    }
    func delete(className: String, id: String, expectedVersion: String?) async throws {
        try await inner.delete(className: className, id: id, expectedVersion: expectedVersion)
    }
    func queryPage(_ query: Query) async throws -> RecordPage { try await inner.queryPage(query) }
    func count(_ query: Query) async throws -> Int { try await inner.count(query) }
    func batch(_ operations: [BatchOperation]) async throws -> [BatchResult] { try await inner.batch(operations) }

    func upload(_ upload: FileUpload) async throws -> FileReference { try await inner.upload(upload) }
    func download(_ file: FileReference) async throws -> Data { try await inner.download(file) }
    func download(_ file: FileReference, into write: @Sendable (Data) throws -> Void,
                  progress: (@Sendable (TransferProgress) -> Void)?) async throws {
        try await inner.download(file, into: write, progress: progress)
    }
    func deleteFile(_ file: FileReference) async throws { try await inner.deleteFile(file) }
    func listFiles(prefix: String?, limit: Int?) async throws -> [FileInfo] { try await inner.listFiles(prefix: prefix, limit: limit) }

    func signUp(username: String, password: String, email: String?, fields: [String: Value]) async throws -> Session {
        try refuse(.auth)
        try refuse(.signUp)
        return try await inner.signUp(username: username, password: password, email: email, fields: fields)
    }
    func logIn(username: String, password: String) async throws -> Session {
        try refuse(.auth)
        return try await inner.logIn(username: username, password: password)
    }
    func logOut(confirmWithServer: Bool) async throws {
        try refuse(.auth)
        try await inner.logOut(confirmWithServer: confirmWithServer)
    }
    func currentUser() async throws -> User {
        try refuse(.auth)
        return try await inner.currentUser()
    }
    var session: Session? { get async { await inner.session } }
    func restore(_ session: Session?) async { await inner.restore(session) }
    func close() async { await inner.close() }
}

/// Opens ``ReducedBackend``s over one ``MemoryBackendFactory``. With `provisioned` users, the first open of each
/// server (URL host or path) creates them, as an administrator of a company directory would: the runner can only
/// log them in (the backend has no `signUp`).
struct ReducedFactory: BackendFactory {
    let schemes = ["memory"]
    let adapterName = "memory"
    var removed: Set<Capabilities.Feature> = []
    var added: Set<Capabilities.Feature> = []
    var dropsEmptyStrings = false
    var provisioned: [String: String] = [:]
    private let memory = MemoryBackendFactory()
    private let seen = Seen()

    init(removing removed: Set<Capabilities.Feature> = [], adding added: Set<Capabilities.Feature> = [],
         dropsEmptyStrings: Bool = false, provisioned: [String: String] = [:]) {
        self.removed = removed
        self.added = added
        self.dropsEmptyStrings = dropsEmptyStrings
        self.provisioned = provisioned
    }

    private actor Seen {
        var names: Set<String> = []
        func first(_ name: String) -> Bool { names.insert(name).inserted }
    }

    func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend {
        if !provisioned.isEmpty, await seen.first(url.host ?? url.path) {
            let admin = try await memory.open(url, context: context)
            for (name, password) in provisioned.sorted(by: { $0.key < $1.key }) {
                _ = try await admin.signUp(username: name, password: password, email: nil, fields: [:])
            }
            try await admin.logOut(confirmWithServer: false)
        }
        return ReducedBackend(inner: try await memory.open(url, context: context), removed: removed, added: added,
                              dropsEmptyStrings: dropsEmptyStrings)
    }
}
