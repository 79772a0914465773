public import Foundation
public import MBaaSCore

/// One client of a ``MemoryServer``, with its own session.
public actor MemoryBackend: Backend {
    public nonisolated let adapterName = "memory"
    public nonisolated let capabilities = Capabilities(
        features: Set<Capabilities.Feature>([
            .objects, .count, .skip, .selectKeys, .multiKeySort, .files, .fileDelete, .fileList, .auth, .signUp, .serverLogout,
            .fileNames, .unicodeFileNames, .queryValue("Pointer"),
        ]).union(["int", "Date", "Bytes", "array", "object", "Pointer", "File", "GeoPoint", "null"].map(Capabilities.Feature.valueType)),
        operators: Set(QueryOperator.allCases).subtracting([.regex]),
        maxPageSize: 100, defaultPageSize: 20,
        notes: [
            .operator(.regex): "the example evaluates only operators it implements itself",
            .batch: "the example has no batch endpoint",
            .optimisticLocking: "the example keeps no versions",
            .acl: "the example has no per-record permissions",
            .fieldOperations: "the example supports set and delete only",
            .fileAttachment: "the example keeps files in a separate store only",
        ])

    private let server: MemoryServer
    private let context: BackendContext
    private var current: Session?

    public init(server: MemoryServer, context: BackendContext) {
        self.server = server
        self.context = context
    }

    // MARK: ObjectStore

    public func create(_ record: Record) async throws -> Record {
        try InMemoryQuery.validate(className: record.className)
        if let bad = record.fields.keys.first(where: Record.reservedFieldNames.contains) {
            throw MBaaSError(.invalidRequest, "'\(bad)' is a reserved field name")
        }
        if record.acl != nil {
            throw MBaaSError.unsupported("ACLs", by: adapterName, reason: capabilities.note(for: Capabilities.Feature.acl))
        }
        if record.id != nil { throw MBaaSError(.invalidRequest, "the example assigns ids itself") }
        let (id, seq) = await server.nextID("r")
        let now = context.now
        let stored = Record(className: record.className, id: id, createdAt: now, updatedAt: now, fields: record.fields)
        await server.put(stored, seq: seq)
        return stored
    }

    public func get(className: String, id: String) async throws -> Record {
        try InMemoryQuery.validate(className: className)
        guard let r = await server.record(className, id) else { throw MBaaSError(.notFound, "no \(className) \(id)") }
        return r
    }

    public func update(className: String, id: String, _ update: RecordUpdate) async throws -> Record {
        if update.expectedVersion != nil || update.acl != nil {
            throw MBaaSError.unsupported("versions and ACLs", by: adapterName, reason: capabilities.note(for: Capabilities.Feature.optimisticLocking))
        }
        var r = try await get(className: className, id: id)
        for (key, op) in update.changes {
            switch op {
            case .set(let v): r.fields[key] = v
            case .delete: r.fields[key] = nil
            default: throw MBaaSError.unsupported("field operations", by: adapterName, reason: capabilities.note(for: Capabilities.Feature.fieldOperations))
            }
        }
        r.updatedAt = context.now
        await server.replace(r)
        return r
    }

    public func delete(className: String, id: String, expectedVersion: String?) async throws {
        if expectedVersion != nil { throw MBaaSError.unsupported("versions", by: adapterName) }
        try InMemoryQuery.validate(className: className)
        guard await server.remove(className, id) else { throw MBaaSError(.notFound, "no \(className) \(id)") }
    }

    public func queryPage(_ query: Query) async throws -> RecordPage {
        try query.validate(against: capabilities, backend: adapterName)
        try InMemoryQuery.validate(className: query.className)
        var matches = await server.all(query.className).filter { r in query.predicate.map { InMemoryQuery.matches($0, r) } ?? true }
        if !query.sort.isEmpty {
            matches = InMemoryQuery.stableSorted(matches, by: query.sort)
        }
        let offset = query.cursor.flatMap(Int.init) ?? query.skip ?? 0
        let limit = min(query.limit ?? capabilities.defaultPageSize, capabilities.maxPageSize)
        var page = Array(matches.dropFirst(offset).prefix(limit))
        if let keys = query.keys {
            page = page.map { var r = $0; r.fields = r.fields.filter { keys.contains($0.key) }; return r }
        }
        let next = offset + limit < matches.count ? String(offset + limit) : nil
        return RecordPage(records: page, nextCursor: next, totalCount: matches.count)
    }

    public func count(_ query: Query) async throws -> Int {
        try query.validate(against: capabilities, backend: adapterName)
        return await server.all(query.className).filter { r in query.predicate.map { InMemoryQuery.matches($0, r) } ?? true }.count
    }

    public func batch(_ operations: [BatchOperation]) async throws -> [BatchResult] {
        throw MBaaSError.unsupported("batches", by: adapterName, reason: capabilities.note(for: Capabilities.Feature.batch))
    }

    // MARK: FileStore

    public func upload(_ upload: FileUpload) async throws -> FileReference {
        if upload.attachment != nil {
            throw MBaaSError.unsupported("file attachments", by: adapterName, reason: capabilities.note(for: Capabilities.Feature.fileAttachment))
        }
        let data = try upload.source.load()
        if await server.file(upload.name) != nil {
            throw MBaaSError(.duplicate, "a file named '\(upload.name)' already exists; delete it first")
        }
        let ref = FileReference(name: upload.name, contentType: upload.contentType ?? guessContentType(forFileName: upload.name),
                                size: Int64(data.count))
        await server.putFile(upload.name, data, FileInfo(reference: ref, createdAt: context.now))
        upload.progress?(TransferProgress(completedBytes: Int64(data.count), totalBytes: Int64(data.count)))
        return ref
    }

    public func download(_ file: FileReference) async throws -> Data {
        guard let f = await server.file(file.name) else { throw MBaaSError(.notFound, "no file \(file.name)") }
        return f.data
    }

    public func deleteFile(_ file: FileReference) async throws {
        guard await server.removeFile(file.name) else { throw MBaaSError(.notFound, "no file \(file.name)") }
    }

    public func listFiles(prefix: String?, limit: Int?) async throws -> [FileInfo] {
        let all = await server.files.values.map(\.info).filter { $0.reference.name.hasPrefix(prefix ?? "") }
        return Array(all.sorted { ($0.createdAt ?? .distantPast, $0.reference.name) < ($1.createdAt ?? .distantPast, $1.reference.name) }
            .prefix(limit ?? Int.max))
    }

    // MARK: Authenticator

    public var session: Session? { current }

    public func signUp(username: String, password: String, email: String?, fields: [String: Value]) async throws -> Session {
        guard let id = await server.addUser(username, password) else { throw MBaaSError(.duplicate, "user name taken") }
        return await startSession(username: username, userId: id)
    }

    public func logIn(username: String, password: String) async throws -> Session {
        guard let user = await server.users[username], user.password == password else {
            throw MBaaSError(.unauthorized, "wrong user name or password")
        }
        return await startSession(username: username, userId: user.id)
    }

    private func startSession(username: String, userId: String) async -> Session {
        let s = Session(token: await server.newToken(for: userId), userId: userId, username: username)
        current = s
        return s
    }

    public func logOut(confirmWithServer: Bool) async throws {
        let token = current?.token
        current = nil
        if confirmWithServer, let token { await server.endSession(token) }
    }

    public func currentUser() async throws -> User {
        guard let s = current else { throw MBaaSError(.unauthorized, "not logged in") }
        guard let u = await server.user(token: s.token) else {
            current = nil
            throw MBaaSError(.unauthorized, "session expired")
        }
        return User(id: u.id, username: u.name)
    }

    public func restore(_ session: Session?) async { current = session }
}
