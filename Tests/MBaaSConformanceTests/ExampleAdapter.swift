import Foundation
import MBaaSCore

// A minimal adapter: an in-memory "server" behind the core protocols. It is the example of the DocC article
// "Writing an adapter" and proves the extension path: it runs the bundled suite (ExampleAdapterTests), passes
// every scenario it can run, and is skipped, with a reason, on what it does not declare.

/// Opens ``MemoryBackend``s. Every backend opened for the same URL host shares one ``MemoryServer``, as two
/// clients of one real server would (so scenarios with two users work).
struct MemoryBackendFactory: BackendFactory {
    let schemes = ["memory"]
    let adapterName = "memory"
    private let servers = ServerDirectory()

    func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend {
        MemoryBackend(server: await servers.server(named: url.host ?? url.path), context: context)
    }

    private actor ServerDirectory {
        var servers: [String: MemoryServer] = [:]
        func server(named name: String) -> MemoryServer {
            if let s = servers[name] { return s }
            let s = MemoryServer()
            servers[name] = s
            return s
        }
    }
}

/// The shared state: records by class and id, files by name, users by name, sessions by token.
actor MemoryServer {
    var classes: [String: [String: (seq: Int, record: Record)]] = [:]
    var files: [String: (data: Data, info: FileInfo)] = [:]
    var users: [String: (id: String, password: String)] = [:]
    var tokens: [String: String] = [:]
    private var counter = 0

    func nextID(_ prefix: Character) -> (String, Int) {
        counter += 1
        return (String(prefix) + String(repeating: "0", count: 14 - String(counter).count) + String(counter), counter)
    }
    func put(_ record: Record, seq: Int) { classes[record.className, default: [:]][record.id!] = (seq, record) }
    func replace(_ record: Record) { classes[record.className]?[record.id!]?.record = record }
    func record(_ className: String, _ id: String) -> Record? { classes[className]?[id]?.record }
    func remove(_ className: String, _ id: String) -> Bool { classes[className]?.removeValue(forKey: id) != nil }
    func all(_ className: String) -> [Record] {
        (classes[className] ?? [:]).values.sorted { $0.seq < $1.seq }.map(\.record)
    }
    func putFile(_ name: String, _ data: Data, _ info: FileInfo) { files[name] = (data, info) }
    func file(_ name: String) -> (data: Data, info: FileInfo)? { files[name] }
    func removeFile(_ name: String) -> Bool { files.removeValue(forKey: name) != nil }
    func addUser(_ name: String, _ password: String) -> String? {
        guard users[name] == nil else { return nil }
        let id = nextID("u").0
        users[name] = (id, password)
        return id
    }
    func newToken(for userId: String) -> String {
        let token = "t" + nextID("t").0
        tokens[token] = userId
        return token
    }
    func user(token: String) -> (id: String, name: String)? {
        guard let id = tokens[token], let name = users.first(where: { $0.value.id == id })?.key else { return nil }
        return (id, name)
    }
    func endSession(_ token: String) { tokens[token] = nil }
}

/// One client of a ``MemoryServer``, with its own session.
actor MemoryBackend: Backend {
    nonisolated let adapterName = "memory"
    nonisolated let capabilities = Capabilities(
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

    init(server: MemoryServer, context: BackendContext) {
        self.server = server
        self.context = context
    }

    // MARK: ObjectStore

    func create(_ record: Record) async throws -> Record {
        try Self.validate(className: record.className)
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

    func get(className: String, id: String) async throws -> Record {
        try Self.validate(className: className)
        guard let r = await server.record(className, id) else { throw MBaaSError(.notFound, "no \(className) \(id)") }
        return r
    }

    func update(className: String, id: String, _ update: RecordUpdate) async throws -> Record {
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

    func delete(className: String, id: String, expectedVersion: String?) async throws {
        if expectedVersion != nil { throw MBaaSError.unsupported("versions", by: adapterName) }
        try Self.validate(className: className)
        guard await server.remove(className, id) else { throw MBaaSError(.notFound, "no \(className) \(id)") }
    }

    func queryPage(_ query: Query) async throws -> RecordPage {
        try query.validate(against: capabilities, backend: adapterName)
        try Self.validate(className: query.className)
        var matches = await server.all(query.className).filter { r in query.predicate.map { Self.matches($0, r) } ?? true }
        if !query.sort.isEmpty {
            matches = Self.stableSorted(matches, by: query.sort)
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

    func count(_ query: Query) async throws -> Int {
        try query.validate(against: capabilities, backend: adapterName)
        return await server.all(query.className).filter { r in query.predicate.map { Self.matches($0, r) } ?? true }.count
    }

    func batch(_ operations: [BatchOperation]) async throws -> [BatchResult] {
        throw MBaaSError.unsupported("batches", by: adapterName, reason: capabilities.note(for: Capabilities.Feature.batch))
    }

    // MARK: FileStore

    func upload(_ upload: FileUpload) async throws -> FileReference {
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

    func download(_ file: FileReference) async throws -> Data {
        guard let f = await server.file(file.name) else { throw MBaaSError(.notFound, "no file \(file.name)") }
        return f.data
    }

    func deleteFile(_ file: FileReference) async throws {
        guard await server.removeFile(file.name) else { throw MBaaSError(.notFound, "no file \(file.name)") }
    }

    func listFiles(prefix: String?, limit: Int?) async throws -> [FileInfo] {
        let all = await server.files.values.map(\.info).filter { $0.reference.name.hasPrefix(prefix ?? "") }
        return Array(all.sorted { ($0.createdAt ?? .distantPast, $0.reference.name) < ($1.createdAt ?? .distantPast, $1.reference.name) }
            .prefix(limit ?? Int.max))
    }

    // MARK: Authenticator

    var session: Session? { current }

    func signUp(username: String, password: String, email: String?, fields: [String: Value]) async throws -> Session {
        guard let id = await server.addUser(username, password) else { throw MBaaSError(.duplicate, "user name taken") }
        return await startSession(username: username, userId: id)
    }

    func logIn(username: String, password: String) async throws -> Session {
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

    func logOut(confirmWithServer: Bool) async throws {
        let token = current?.token
        current = nil
        if confirmWithServer, let token { await server.endSession(token) }
    }

    func currentUser() async throws -> User {
        guard let s = current else { throw MBaaSError(.unauthorized, "not logged in") }
        guard let u = await server.user(token: s.token) else {
            current = nil
            throw MBaaSError(.unauthorized, "session expired")
        }
        return User(id: u.id, username: u.name)
    }

    func restore(_ session: Session?) async { current = session }

    // MARK: Evaluation

    private static func validate(className: String) throws {
        guard let first = className.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic,
              className.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_") })
        else { throw MBaaSError(.invalidRequest, "invalid class name '\(className)'") }
    }

    /// Orders numbers, strings (by code point) and dates; `nil` for anything else.
    private static func order(_ a: Value, _ b: Value) -> Int? {
        if let x = a.doubleValue, let y = b.doubleValue { return x < y ? -1 : x > y ? 1 : 0 }
        switch (a, b) {
        case (.string(let x), .string(let y)):
            let xs = x.unicodeScalars.map(\.value), ys = y.unicodeScalars.map(\.value)
            return xs == ys ? 0 : xs.lexicographicallyPrecedes(ys) ? -1 : 1
        case (.date(let x), .date(let y)): return x < y ? -1 : x > y ? 1 : 0
        default: return nil
        }
    }

    private static func matches(_ p: QueryPredicate, _ r: Record) -> Bool {
        switch p {
        case .compare(let k, let c, let v):
            guard let field = r.fields[k] else { return c == .ne }
            switch c {
            case .eq: return field.looselyEquals(v)
            case .ne: return !field.looselyEquals(v)
            case .lt: return order(field, v).map { $0 < 0 } ?? false
            case .lte: return order(field, v).map { $0 <= 0 } ?? false
            case .gt: return order(field, v).map { $0 > 0 } ?? false
            case .gte: return order(field, v).map { $0 >= 0 } ?? false
            }
        case .in(let k, let vs):
            guard let field = r.fields[k] else { return false }
            let candidates = field.arrayValue ?? [field]
            return candidates.contains { c in vs.contains { c.looselyEquals($0) } }
        case .notIn(let k, let vs):
            guard let field = r.fields[k] else { return true }
            return !vs.contains { field.looselyEquals($0) }
        case .exists(let k, let present): return (r.fields[k].map { !$0.isNull } ?? false) == present
        case .prefix(let k, let s): return r.fields[k]?.stringValue?.hasPrefix(s) ?? false
        case .regex: return false // not declared; queryPage rejects it before evaluation
        case .containsAll(let k, let vs):
            guard let items = r.fields[k]?.arrayValue else { return false }
            return vs.allSatisfy { v in items.contains { $0.looselyEquals(v) } }
        case .and(let ps): return ps.allSatisfy { matches($0, r) }
        case .or(let ps): return ps.contains { matches($0, r) }
        case .not(let q): return !matches(q, r)
        }
    }

    /// Sorts by the keys (missing values first), keeping insertion order among equals.
    private static func stableSorted(_ records: [Record], by keys: [SortKey]) -> [Record] {
        records.enumerated().sorted { a, b in
            for key in keys {
                let x = a.element.fields[key.key], y = b.element.fields[key.key]
                let o: Int = switch (x, y) {
                case (nil, nil): 0
                case (nil, _): -1
                case (_, nil): 1
                case (let x?, let y?): order(x, y) ?? 0
                }
                if o != 0 { return key.ascending ? o < 0 : o > 0 }
            }
            return a.offset < b.offset
        }.map(\.element)
    }
}
