import Crypto
public import Foundation
public import MBaaSCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Opens ``BundleBackend``s from `bundle:DIR` URLs.
public struct BundleBackendFactory: BackendFactory {
    public init() {}
    public var schemes: [String] { ["bundle"] }
    public var adapterName: String { "bundle" }
    /// A directory, not a server: no host (`bundle:DIR`).
    public var wireProfile: WireProfile { WireProfile.generic.merging(WireProfile(requiresHost: false)) }
    public func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend {
        try url.requireKnownOptions([], adapter: "bundle")
        return try BundleBackend(directory: URL(fileURLWithPath: url.path), context: context)
    }
}

/// MBaaSKit's own neutral export on disk, as a backend: the target of `mbaas export` and the source of
/// `mbaas import` (`bundle:DIR`). See <doc:BundleFormat> for the files.
///
/// A directory with a `manifest.json` is a finished bundle and is opened for reading, after every class file is
/// checked against the manifest's count and sha256 (a damaged bundle is `decoding`); an empty or missing directory,
/// or one an interrupted export left without a manifest, is opened for writing (appending; a line cut short by a
/// crash is cut off). Writing is append-only: records are created with their own ids and timestamps
/// (``Capabilities/Feature/clientIds``, ``Capabilities/Feature/clientTimestamps``), never updated or deleted.
/// ``finish()`` writes the compacted file index and the manifest; only then does the bundle read. ``close()`` closes
/// its files and removes the scratch index.
///
/// Records, users and roles are read and written as streams (one line at a time); the file index is held in a scratch
/// SQLite database (`files/.index.sqlite` while writing, a temporary file while reading), rebuilt from
/// `files/index.ndjson` when the bundle opens: memory stays flat however many files and links a bundle has.
public actor BundleBackend: Backend {
    public nonisolated let adapterName = "bundle"
    public nonisolated let directory: URL
    public nonisolated let capabilities: Capabilities
    /// Read (a finished bundle) or write (a new or unfinished one).
    public nonisolated let isReadOnly: Bool
    /// The manifest of a finished bundle.
    public nonisolated let manifest: BundleManifest?

    private let clock: @Sendable () -> Date
    private var writers: [String: NDJSONWriter] = [:]
    private let files: BundleFileIndex
    /// `<directory>/files/blobs/`, as a path (building URLs per file cost more than writing the file).
    private let blobsPath: String
    /// Describes the source in the manifest (set by the migration).
    public private(set) var sourceDescription: String = ""

    /// Sets the source description the manifest records.
    public func setSource(_ description: String) { sourceDescription = description }

    /// A finished bundle holds what was written into it: users with their fields and roles with their members among
    /// them (so verifying a bundle compares both), read only.
    static let readCapabilities = Capabilities(
        features: Set<Capabilities.Feature>([.objects, .count, .listClasses, .listUsers, .userFields, .userEmail, .fileACL, .fileACLListing, .roles, .files, .fileList, .readOnly,
                                              .acl, .clientIds, .clientTimestamps, .completeReads]).union(BundleBackend.valueTypes),
        operators: [], maxPageSize: 1000, defaultPageSize: 500, maxBatchSize: 0,
        notes: [.batch: "a finished bundle is read only", .auth: "a bundle has no sessions"])

    static let writeCapabilities = Capabilities(
        features: Set<Capabilities.Feature>([.objects, .batch, .listUsers, .importUsers, .userFields, .userEmail, .fileACL, .fileACLListing, .roles, .files, .acl, .clientIds, .clientTimestamps,
                                              .mixedFieldTypes])
            .union(BundleBackend.valueTypes),
        operators: [], maxPageSize: 1000, defaultPageSize: 500, maxBatchSize: 1000,
        notes: [
            .fieldOperations: "a bundle is written once; records are not updated",
            .optimisticLocking: "a bundle is written once; records are not updated",
            .fileAttachment: "a bundle keeps File values in records and the files in files/blobs",
            .auth: "a bundle has no sessions",
        ])

    static let valueTypes: Set<Capabilities.Feature> = Set(
        ["null", "bool", "int", "double", "string", "Date", "Bytes", "array", "object", "Pointer", "File", "GeoPoint"]
            .map(Capabilities.Feature.valueType))

    public init(directory: URL, context: BackendContext = BackendContext()) throws(MBaaSError) {
        self.directory = directory
        self.clock = context.clock
        blobsPath = directory.appendingPathComponent("files/blobs").path + "/"
        let manifestURL = directory.appendingPathComponent("manifest.json")
        let fm = FileManager.default
        if fm.fileExists(atPath: manifestURL.path) {
            let read = try BundleManifest.read(manifestURL)
            // A damaged or edited class file is refused before anything reads it.
            try read.check(directory: directory)
            manifest = read
            isReadOnly = true
            capabilities = Self.readCapabilities
            // The bundle's directory may not be writable: the scratch index goes to the temporary directory.
            files = try BundleFileIndex.load(directory, scratch: FileManager.default.temporaryDirectory
                .appendingPathComponent("mbaas-bundle-index-\(UUID().uuidString).sqlite"))
        } else {
            manifest = nil
            isReadOnly = false
            capabilities = Self.writeCapabilities
            // Opened only to read (a dry run): nothing is created.
            if context.readOnly {
                files = try BundleFileIndex(scratch: nil)
                return
            }
            // Written only into an empty or new folder, or one holding an unfinished bundle: never among other data.
            try Self.requireEmptyOrBundle(directory)
            do {
                for sub in ["", "records", "files", "files/blobs"] {
                    try fm.createDirectory(at: directory.appendingPathComponent(sub), withIntermediateDirectories: true,
                                           attributes: [.posixPermissions: 0o700])
                }
            } catch {
                throw MBaaSError(.localIO, "cannot create the bundle directory \(directory.path): \(MBaaSError.describe(error))")
            }
            for url in Self.lineFiles(directory) { try Self.cutPartialLine(url) }
            files = try BundleFileIndex.load(directory, scratch: directory.appendingPathComponent("files/.index.sqlite"))
        }
    }

    /// Throws `invalidRequest` when `directory` holds anything a bundle does not (a bundle is written only into an
    /// empty or new folder, or one an interrupted export left), naming up to three such entries; nothing is changed.
    static func requireEmptyOrBundle(_ directory: URL) throws(MBaaSError) {
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        guard fm.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue else { return }
        func entries(_ sub: String) -> [String] { ((try? fm.contentsOfDirectory(atPath: directory.appendingPathComponent(sub).path)) ?? []).sorted() }
        func isFolder(_ sub: String) -> Bool {
            var d: ObjCBool = false
            return fm.fileExists(atPath: directory.appendingPathComponent(sub).path, isDirectory: &d) && d.boolValue
        }
        var foreign: [String] = []
        for name in entries("") {
            switch name {
            case "users.ndjson", "roles.ndjson": continue
            case "records" where isFolder("records"):
                foreign += entries("records").filter { !$0.hasSuffix(".ndjson") }.map { "records/\($0)" }
            case "files" where isFolder("files"):
                foreign += entries("files").filter { !($0 == "index.ndjson" || ($0 == "blobs" && isFolder("files/blobs")) || $0.hasPrefix(".index")) }
                    .map { "files/\($0)" }
            default: foreign.append(name)
            }
        }
        guard foreign.isEmpty else {
            let named = foreign.prefix(3).map { "'\($0)'" }.joined(separator: ", ") + (foreign.count > 3 ? " and \(foreign.count - 3) more" : "")
            throw MBaaSError(.invalidRequest, "the bundle folder \(directory.path) is not empty and is not a bundle (it holds \(named)): a bundle is written only into an empty or new folder; choose another one")
        }
    }

    /// Whether the bundle holds anything: a manifest, or lines of records, users, roles or files.
    public nonisolated var holdsData: Bool {
        if manifest != nil { return true }
        return Self.lineFiles(directory).contains { url in
            var info = stat()
            return stat(url.path, &info) == 0 && info.st_size > 0
        }
    }

    /// The NDJSON files of a bundle.
    static func lineFiles(_ directory: URL) -> [URL] {
        let records = directory.appendingPathComponent("records")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: records.path)) ?? []
        return names.filter { $0.hasSuffix(".ndjson") }.map { records.appendingPathComponent($0) }
            + ["users.ndjson", "roles.ndjson", "files/index.ndjson"].map { directory.appendingPathComponent($0) }
    }

    /// Cuts off a last line a crash left without its newline.
    static func cutPartialLine(_ url: URL) throws(MBaaSError) {
        guard let handle = try? FileHandle(forUpdating: url) else { return }
        defer { try? handle.close() }
        do {
            let size = try handle.seekToEnd()
            guard size > 0 else { return }
            var keep = size
            let step: UInt64 = 4096
            while keep > 0 {
                let start = keep >= step ? keep - step : 0
                try handle.seek(toOffset: start)
                let chunk = try handle.read(upToCount: Int(keep - start)) ?? Data()
                if let last = chunk.lastIndex(of: 0x0A) {
                    keep = start + UInt64(last - chunk.startIndex) + 1
                    break
                }
                keep = start
            }
            if keep != size { try handle.truncate(atOffset: keep) }
        } catch {
            throw MBaaSError(.localIO, "cannot repair \(url.path): \(MBaaSError.describe(error))")
        }
    }

    // MARK: Paths

    func recordsURL(_ className: String) throws(MBaaSError) -> URL {
        guard !className.isEmpty, !className.contains("/"), !className.hasPrefix("."), className.utf8.count <= 200 else {
            throw MBaaSError(.invalidRequest, "'\(className)' cannot name a bundle class file")
        }
        return directory.appendingPathComponent("records/\(className).ndjson")
    }

    func writer(_ relativePath: String) throws(MBaaSError) -> NDJSONWriter {
        if let w = writers[relativePath] { return w }
        let w = try NDJSONWriter(url: directory.appendingPathComponent(relativePath))
        writers[relativePath] = w
        return w
    }

    nonisolated func readOnlyError() -> MBaaSError {
        MBaaSError.unsupported("writing", by: "bundle", reason: "the bundle at \(directory.path) is finished (it has a manifest.json)")
    }

    /// Throws unless this is a finished bundle that can be read: `notFound` when its directory does not exist,
    /// `invalidRequest` when it has no `manifest.json` (an export that did not finish).
    public nonisolated func requireFinished() throws(MBaaSError) {
        if manifest == nil { throw unfinishedError() }
    }

    nonisolated func unfinishedError() -> MBaaSError {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            return MBaaSError(.notFound, "there is no bundle at \(directory.path): the directory does not exist")
        }
        return MBaaSError(.invalidRequest, "the bundle at \(directory.path) has no manifest.json: it was not finished; run the export again to resume it")
    }

    // MARK: Records

    public func listClasses() async throws -> [String] {
        guard let manifest else { throw unfinishedError() }
        return manifest.classes.map(\.name).sorted()
    }

    public func queryPage(_ query: Query) async throws -> RecordPage {
        guard manifest != nil else { throw unfinishedError() }
        try query.validate(against: capabilities, backend: adapterName)
        guard query.predicate == nil, query.sort.isEmpty, query.keys == nil, (query.skip ?? 0) == 0 else {
            throw MBaaSError.unsupported("filters, sorting, skip and key selection", by: adapterName,
                                         reason: "a bundle is read front to back; import it first")
        }
        let url = try recordsURL(query.className)
        guard FileManager.default.fileExists(atPath: url.path) else { return RecordPage(records: []) }
        let limit = min(query.limit ?? capabilities.defaultPageSize, capabilities.maxPageSize)
        guard limit > 0 else { return RecordPage(records: []) }
        let (offset, line) = try Self.parseCursor(query.cursor)
        var reader = try NDJSONReader(url: url, offset: offset, line: line)
        defer { reader.close() }
        var records: [Record] = []
        var last: NDJSONReader.Line?
        while records.count < limit, let l = try reader.next() {
            do { records.append(try Record(json: l.value)) } catch {
                throw MBaaSError(.decoding, "\(url.lastPathComponent) line \(l.number): \(error.message)")
            }
            last = l
        }
        let next = records.count == limit ? last.map { "\($0.endOffset):\($0.number)" } : nil
        return RecordPage(records: records, nextCursor: next)
    }

    static func parseCursor(_ cursor: String?) throws(MBaaSError) -> (Int64, Int) {
        guard let cursor else { return (0, 0) }
        let parts = cursor.split(separator: ":")
        guard parts.count == 2, let o = Int64(parts[0]), let l = Int(parts[1]) else {
            throw MBaaSError(.invalidRequest, "invalid bundle cursor '\(cursor)'")
        }
        return (o, l)
    }

    public func count(_ query: Query) async throws -> Int {
        guard query.predicate == nil else {
            throw MBaaSError.unsupported("counting with a filter", by: adapterName, reason: "a bundle is read front to back")
        }
        if let manifest {
            return manifest.classes.first(where: { $0.name == query.className })?.count ?? 0
        }
        var n = 0
        try scanRecords(query.className) { _ in n += 1; return true }
        return n
    }

    func scanRecords(_ className: String, _ body: (Record) throws -> Bool) throws {
        let url = try recordsURL(className)
        guard FileManager.default.fileExists(atPath: url.path) else { return }
        var reader = try NDJSONReader(url: url)
        defer { reader.close() }
        while let l = try reader.next() {
            if !(try body(try Record(json: l.value))) { return }
        }
    }

    /// Scans the class file (bundles have no index): for resuming, not for hot paths.
    public func get(className: String, id: String) async throws -> Record {
        var found: Record?
        try scanRecords(className) { r in
            if r.id == id { found = r; return false }
            return true
        }
        guard let found else { throw MBaaSError(.notFound, "record \(className)/\(id) not found in the bundle") }
        return found
    }

    /// The ids among `ids` that the class file holds, in one scan (resuming an interrupted export).
    public func existingIds(className: String, among ids: Set<String>) throws -> Set<String> {
        var found: Set<String> = []
        try scanRecords(className) { r in
            if let id = r.id, ids.contains(id) { found.insert(id) }
            return found.count < ids.count
        }
        return found
    }

    public func create(_ record: Record) async throws -> Record {
        let results = try await batch([.create(record)])
        switch results[0] {
        case .success(let r): return r
        case .failure(let e): throw e
        }
    }

    /// `invalidRequest` when what the file index would key holds NUL (U+0000): the record's id or class, or a file
    /// field's name or the name of the file it links.
    static func nulProblem(_ record: Record) -> MBaaSError? {
        do throws(MBaaSError) {
            try StoreValidation.noNUL(record.id ?? "", "record id")
            try StoreValidation.noNUL(record.className, "class name")
            for (key, value) in record.fields {
                guard case .file(let ref) = value else { continue }
                try StoreValidation.noNUL(ref.name, "file name in field \(key)")
                try StoreValidation.noNUL(key, "field name")   // a link names its field
            }
        } catch { return error }
        return nil
    }

    /// Appends every record in one write; only creates are accepted.
    public func batch(_ operations: [BatchOperation]) async throws -> [BatchResult] {
        guard !isReadOnly else { throw readOnlyError() }
        var byClass: [String: [JSON]] = [:]
        var order: [String] = []
        var results: [BatchResult] = []
        var links: [(name: String, link: BundleFileEntry.Link)] = []
        let now = clock()
        for op in operations {
            guard case .create(var record) = op else {
                results.append(.failure(MBaaSError.unsupported("updates and deletes", by: adapterName,
                                                               reason: capabilities.note(for: .fieldOperations))))
                continue
            }
            if record.id == nil { record.id = UUID().uuidString.lowercased() }
            // The file index refuses a name or link holding NUL when read (it keys them in SQLite): never written.
            if let problem = Self.nulProblem(record) {
                results.append(.failure(problem))
                continue
            }
            record.createdAt = record.createdAt ?? now
            record.updatedAt = record.updatedAt ?? record.createdAt
            record.version = nil
            for key in record.fields.keys.sorted() {
                if case .file(let ref) = record.fields[key]! {
                    links.append((ref.name, BundleFileEntry.Link(className: record.className, id: record.id!, field: key)))
                }
            }
            if byClass[record.className] == nil { order.append(record.className) }
            byClass[record.className, default: []].append(record.json)
            results.append(.success(record))
        }
        for className in order {
            _ = try recordsURL(className)
            try writer("records/\(className).ndjson").append(lines: byClass[className]!)
        }
        if !links.isEmpty { try writer("files/index.ndjson").append(lines: try files.link(links)) }
        return results
    }

    public func update(className: String, id: String, _ update: RecordUpdate) async throws -> Record {
        throw isReadOnly ? readOnlyError() : MBaaSError.unsupported("updates", by: adapterName, reason: capabilities.note(for: .fieldOperations))
    }

    public func delete(className: String, id: String, expectedVersion: String?) async throws {
        throw isReadOnly ? readOnlyError() : MBaaSError.unsupported("deletes", by: adapterName, reason: capabilities.note(for: .fieldOperations))
    }

    // MARK: Users and roles

    public func listUsers(after cursor: String?, limit: Int) async throws -> DirectoryUserPage {
        let url = directory.appendingPathComponent("users.ndjson")
        guard FileManager.default.fileExists(atPath: url.path) else { return DirectoryUserPage(users: [], nextCursor: nil) }
        let (offset, line) = try Self.parseCursor(cursor)
        var reader = try NDJSONReader(url: url, offset: offset, line: line)
        defer { reader.close() }
        var users: [DirectoryUser] = []
        var last: NDJSONReader.Line?
        while users.count < max(1, limit), let l = try reader.next() {
            do { users.append(try DirectoryUser(json: l.value)) } catch {
                throw MBaaSError(.decoding, "users.ndjson line \(l.number): \(error.message)")
            }
            last = l
        }
        return DirectoryUserPage(users: users, nextCursor: users.count == max(1, limit) ? last.map { "\($0.endOffset):\($0.number)" } : nil)
    }

    public func listRoles() async throws -> [DirectoryRole] {
        let url = directory.appendingPathComponent("roles.ndjson")
        guard FileManager.default.fileExists(atPath: url.path) else { return [] }
        var reader = try NDJSONReader(url: url)
        defer { reader.close() }
        var roles: [DirectoryRole] = []
        while let l = try reader.next() {
            do { roles.append(try DirectoryRole(json: l.value)) } catch {
                throw MBaaSError(.decoding, "roles.ndjson line \(l.number): \(error.message)")
            }
        }
        return roles
    }

    public func findUser(username: String) async throws -> DirectoryUser? {
        try await firstUser { $0.username == username }
    }

    /// The first user in `users.ndjson` whose field `field` is the string `value`.
    public func findUser(field: String, equals value: String) async throws -> DirectoryUser? {
        try await firstUser { $0.fields[field]?.stringValue == value }
    }

    /// The first user in `users.ndjson` that matches, read page by page.
    private func firstUser(where matches: (DirectoryUser) -> Bool) async throws -> DirectoryUser? {
        var cursor: String?
        repeat {
            let page = try await listUsers(after: cursor, limit: 500)
            if let u = page.users.first(where: matches) { return u }
            cursor = page.nextCursor
        } while cursor != nil
        return nil
    }

    /// Appends the user with its own id. The password choice is the migration's to record; a bundle holds none.
    public func importUser(_ user: DirectoryUser, password: ImportedPassword) async throws -> DirectoryUser {
        guard !isReadOnly else { throw readOnlyError() }
        try writer("users.ndjson").append(user.json)
        return user
    }

    public func importRole(_ role: DirectoryRole) async throws {
        guard !isReadOnly else { throw readOnlyError() }
        try writer("roles.ndjson").append(role.json)
    }

    // MARK: Files

    /// Stores the bytes under `files/blobs/<sha256>` (written once per content) and indexes the name. A name taken
    /// by other content is stored as `<first 8 hex of sha256>-<name>`.
    public func upload(_ upload: FileUpload) async throws -> FileReference {
        guard !isReadOnly else { throw readOnlyError() }
        try StoreValidation.noNUL(upload.name, "file name")   // the file index could not be read back otherwise
        guard upload.attachment == nil else {
            throw MBaaSError.unsupported("attachments", by: adapterName, reason: capabilities.note(for: .fileAttachment))
        }
        let data = try upload.source.load()
        let sha = SHA256.hash(data: data).lowercaseHex
        let blob = blobsPath + sha
        // Written once per content; a blob of another size (cut short by a crash or power loss after its rename,
        // blobs are not synced) is written again.
        var present = stat()
        if stat(blob, &present) != 0 || Int64(present.st_size) != Int64(data.count) {
            do { try writeWhole(data, to: blob, through: blobsPath + ".\(sha).partial") } catch {
                throw MBaaSError(.localIO, "cannot write the blob of \(upload.name): \(error.message)")
            }
        }
        var name = upload.name
        if let existing = try files.entry(name), existing.sha256 != sha { name = "\(sha.prefix(8))-\(upload.name)" }
        let entry = BundleFileEntry(name: name, size: Int64(data.count), sha256: sha,
                                    contentType: upload.contentType ?? guessContentType(forFileName: name), acl: upload.acl)
        if try files.addIfAbsent(entry) { try writer("files/index.ndjson").append(entry.json) }
        upload.progress?(TransferProgress(completedBytes: Int64(data.count), totalBytes: Int64(data.count)))
        return entry.reference
    }

    public func download(_ file: FileReference) async throws -> Data {
        guard let entry = try files.entry(file.name) else { throw MBaaSError(.notFound, "file '\(file.name)' is not in the bundle") }
        guard let sha = entry.sha256 else { throw MBaaSError(.notFound, "file '\(file.name)' is linked but its bytes are not in the bundle") }
        guard let data = FileManager.default.contents(atPath: blobsPath + sha) else {
            // In a finished bundle the index promises the bytes: their absence is damage, not a file the source lacks.
            throw MBaaSError(isReadOnly ? .decoding : .notFound,
                             "the blob of '\(file.name)' is missing from the bundle (files/blobs/\(sha))\(isReadOnly ? ": the bundle is damaged" : "")")
        }
        if let size = entry.size, Int64(data.count) != size {
            throw MBaaSError(.decoding, "the blob of '\(file.name)' has \(data.count) bytes, the bundle's index says \(size) (files/blobs/\(sha)): the bundle is damaged")
        }
        let actual = SHA256.hash(data: data).lowercaseHex
        guard actual == sha else { throw MBaaSError(.decoding, "the blob of '\(file.name)' does not match its sha256 (files/blobs/\(sha)): the bundle is damaged") }
        return data
    }

    public func deleteFile(_ file: FileReference) async throws {
        throw isReadOnly ? readOnlyError() : MBaaSError.unsupported("deletes", by: adapterName, reason: capabilities.note(for: .fieldOperations))
    }

    /// Every indexed file with its bytes, in the order they were first seen (names records link to whose bytes are
    /// missing are not files of the bundle).
    public func listFiles(prefix: String?, limit: Int?) async throws -> [FileInfo] {
        try files.list(prefix: prefix, limit: limit).map { FileInfo(reference: $0.reference, acl: $0.acl) }
    }

    // MARK: Finishing

    /// Writes the compacted index and the manifest (format version, source, time, classes with counts and
    /// checksums): the bundle is finished and reads from then on. Safe to call again.
    public func finish() throws(MBaaSError) {
        guard !isReadOnly else { return }
        for w in writers.values { w.sync(); w.close() }
        writers = [:]
        let fm = FileManager.default
        // Compacted index: one line per file, links merged.
        let indexURL = directory.appendingPathComponent("files/index.ndjson")
        let tmpIndex = directory.appendingPathComponent("files/.index.ndjson.partial")
        try files.writeCompacted(to: tmpIndex)
        guard rename(tmpIndex.path, indexURL.path) == 0 else {
            throw MBaaSError(.localIO, "cannot write files/index.ndjson: \(String(cString: strerror(errno)))")
        }
        var classes: [BundleManifest.ClassEntry] = []
        let recordsDir = directory.appendingPathComponent("records")
        for file in ((try? fm.contentsOfDirectory(atPath: recordsDir.path)) ?? []).sorted() where file.hasSuffix(".ndjson") {
            let (count, sha) = try BundleManifest.checksum(recordsDir.appendingPathComponent(file))
            classes.append(.init(name: String(file.dropLast(7)), count: count, sha256: sha))
        }
        let users = try BundleManifest.checksum(directory.appendingPathComponent("users.ndjson")).0
        let roles = try BundleManifest.checksum(directory.appendingPathComponent("roles.ndjson")).0
        let manifest = BundleManifest(
            formatVersion: BundleManifest.currentVersion, source: sourceDescription, createdAt: clock(), classes: classes,
            users: users, roles: roles, files: try files.countWithBytes())
        try manifest.write(directory.appendingPathComponent("manifest.json"))
    }

    /// Closes the files and removes the scratch file index; the bundle cannot be used afterwards.
    public func close() async {
        for w in writers.values { w.close() }
        writers = [:]
        files.close()
    }

    // MARK: Auth (a bundle has none)

    public var session: Session? { nil }
    public func restore(_ session: Session?) {}
    public func signUp(username: String, password: String, email: String?, fields: [String: Value]) async throws -> Session {
        throw MBaaSError.unsupported("signing up", by: adapterName, reason: capabilities.note(for: .auth))
    }
    public func logIn(username: String, password: String) async throws -> Session {
        throw MBaaSError.unsupported("logging in", by: adapterName, reason: capabilities.note(for: .auth))
    }
    public func logOut(confirmWithServer: Bool) async throws {}
    public func currentUser() async throws -> User { throw MBaaSError(.unauthorized, "a bundle has no sessions") }
}
