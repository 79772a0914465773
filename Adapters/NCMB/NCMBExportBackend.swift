public import Foundation
public import MBaaSCore

/// Opens ``NCMBExportBackend``s from `ncmb-export:DIR` URLs.
public struct NCMBExportBackendFactory: BackendFactory {
    public init() {}
    public var schemes: [String] { ["ncmb-export"] }
    public var adapterName: String { "ncmb-export" }
    /// A directory, not a server: no host (`ncmb-export:DIR`).
    public var wireProfile: WireProfile { WireProfile.generic.merging(WireProfile(requiresHost: false)) }
    public func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend {
        try url.requireKnownOptions([], adapter: "ncmb-export")
        return try NCMBExportBackend(directory: URL(fileURLWithPath: url.path), context: context)
    }
}

/// What NCMB's console export produced, read as a read-only backend with no server: the source of a migration off
/// NCMB (`ncmb-export:DIR`).
///
/// The directory holds one `<Class>.json` per class, `user.json`, `role.json` and optionally `installation.json`,
/// each `{"results":[...]}` of objects with `objectId`, `createDate`, `updateDate`, `acl` and typed values in
/// NCMB's JSON forms [doc: NCMB's export guide]; and `files/<fileName>`, the file store's files downloaded
/// separately, by their NCMB file name (the export does not contain them [doc]).
///
/// - Classes are found by file name (every `*.json` but `user.json`, `role.json`, `push.json`), not from a list;
///   `installation.json` is the class `_Installation`.
/// - Files are read as streams (``JSONArrayFileReader``): memory stays flat however large a class is.
/// - A malformed file is ``MBaaSError/Kind/decoding`` naming the file and the line (`MemoClass.json line 12: …`).
///   ``count(_:)`` reads and checks every object of a class (parsed and decoded on every core; of several problems
///   the one on the earliest line is named), so a migration plan finds a problem before anything is written.
/// - Queries take no filter, sort, skip or key selection (an export is read front to back); pages resume at a byte
///   offset. Users come from `user.json` (`userName`, `mailAddress`, `mailAddressConfirm`; `password` and
///   `authData` are not carried), roles from `role.json` (`roleName`; members from `belongUser` when the export
///   lists them as pointers, see ``listRoles()``).
/// - Role members: the export shows `belongUser` as a bare Relation marker [sdk], so members are read from an optional
///   `role-members/<roleName>.json` (`{"results":[user objects]}`) beside it when present.
/// - Every write is `unsupported`.
public actor NCMBExportBackend: Backend {
    public nonisolated let adapterName = "ncmb-export"
    public nonisolated let directory: URL
    public nonisolated let capabilities = Capabilities(
        features: [.objects, .count, .listClasses, .listUsers, .files, .fileList, .readOnly,
                   .valueType("Date"), .valueType("Pointer"), .valueType("GeoPoint"), .valueType("array"), .valueType("object")],
        operators: [], maxPageSize: 1000, defaultPageSize: 100, maxBatchSize: 0,
        notes: [
            .batch: "an NCMB export is read only", .auth: "an NCMB export has no sessions (passwords are not exported)",
            .multiKeySort: "an NCMB export is read in file order", .skip: "an NCMB export is read in file order",
            .selectKeys: "an NCMB export is read whole", .fileAttachment: "NCMB keeps files in a separate store",
        ])
    private var counts: [String: Int] = [:]

    /// The system files that are not classes.
    static let directoryFiles: Set<String> = ["user.json", "role.json", "push.json"]

    public init(directory: URL, context: BackendContext = BackendContext()) throws(MBaaSError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw MBaaSError(.notFound, "ncmb-export: \(directory.path) is not a directory")
        }
        self.directory = directory
    }

    // MARK: Classes and records

    public func listClasses() async throws -> [String] {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: directory.path) } catch {
            throw MBaaSError(.localIO, "ncmb-export: cannot list \(directory.path): \(MBaaSError.describe(error))")
        }
        return names.filter { $0.hasSuffix(".json") && !Self.directoryFiles.contains($0) }
            .map { Self.className(forFile: String($0.dropLast(5))) }.sorted()
    }

    static func className(forFile base: String) -> String { base == "installation" ? "_Installation" : base }

    func fileURL(forClass className: String) throws(MBaaSError) -> URL {
        let base = className == "_Installation" ? "installation" : className
        guard !base.isEmpty, !base.contains("/"), !base.hasPrefix("."), !Self.directoryFiles.contains(base + ".json") else {
            throw MBaaSError(.invalidRequest, "ncmb-export: '\(className)' is not a class of the export")
        }
        let url = directory.appendingPathComponent(base + ".json")
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw MBaaSError(.notFound, "ncmb-export: no \(base).json in \(directory.path) (class \(className))")
        }
        return url
    }

    /// A reader of one export file, from its start or from a cursor (`offset:line`).
    nonisolated func openReader(_ url: URL, cursor: String?) throws(MBaaSError) -> JSONArrayFileReader {
        let name = url.lastPathComponent
        do {
            if let cursor {
                let parts = cursor.split(separator: ":")
                guard parts.count == 2, let offset = Int64(parts[0]), let line = Int(parts[1]) else {
                    throw MBaaSError(.invalidRequest, "ncmb-export: invalid cursor '\(cursor)'")
                }
                return try JSONArrayFileReader(url: url, resumingAt: offset, line: line, member: "results")
            }
            return try JSONArrayFileReader(url: url, member: "results")
        } catch let e as MBaaSError { throw e } catch let e as JSONArrayFileReader.Failure {
            throw Self.malformed(name, e)
        } catch {
            throw MBaaSError(.localIO, "ncmb-export: cannot read \(name): \(MBaaSError.describe(error))")
        }
    }

    /// Reads objects of one export file from a cursor (`offset:line`), handing each to `body` until it returns false.
    func scan(_ url: URL, cursor: String?, _ body: (JSONObject, Int) throws -> Bool) throws -> String? {
        let name = url.lastPathComponent
        var reader = try openReader(url, cursor: cursor)
        defer { reader.close() }
        do {
            while let element = try reader.next() {
                let object = try Self.object(element.value, file: name, line: element.line)
                if !(try body(object, element.line)) { return "\(element.endOffset):\(element.endLine)" }
            }
            return nil
        } catch let e as JSONArrayFileReader.Failure {
            throw Self.malformed(name, e)
        }
    }

    /// An element of a file's `results` as the object every result must be.
    static func object(_ value: JSON, file: String, line: Int) throws(MBaaSError) -> JSONObject {
        guard let object = value.objectValue else {
            throw MBaaSError(.decoding, "ncmb-export: \(file) line \(line): each result must be a JSON object")
        }
        return object
    }

    /// Malformed JSON in an export file, as the error naming the file and line.
    static func malformed(_ file: String, _ failure: JSONArrayFileReader.Failure) -> MBaaSError {
        MBaaSError(.decoding, "ncmb-export: \(file) \(failure)")
    }

    /// Parses and decodes every object of one export file, as ``queryPage(_:)`` does, on every core: the number of
    /// objects, or the error of the malformed object on the earliest line. One thread finds where the elements end;
    /// chunks of them are parsed in parallel, a few chunks at a time (memory holds those chunks, not the file).
    nonisolated func check(_ url: URL, className: String) async throws -> Int {
        let name = url.lastPathComponent
        var reader = try openReader(url, cursor: nil)
        defer { reader.close() }
        let width = max(1, ProcessInfo.processInfo.activeProcessorCount)
        return try await withThrowingTaskGroup(of: (index: Int, count: Int, error: MBaaSError?).self) { group in
            var total = 0, inFlight = 0, index = 0
            var first: (index: Int, error: MBaaSError)?
            func collect(_ r: (index: Int, count: Int, error: MBaaSError?)) {
                total += r.count
                if let e = r.error, first.map({ r.index < $0.index }) ?? true { first = (r.index, e) }
            }
            while first == nil {
                var chunk: [JSONArrayFileReader.RawElement] = []
                var readerError: MBaaSError?
                do {
                    while chunk.count < 256, let element = try reader.nextRaw() { chunk.append(element) }
                } catch let e as JSONArrayFileReader.Failure {
                    readerError = Self.malformed(name, e)
                }
                if !chunk.isEmpty {
                    if inFlight >= width, let r = try await group.next() { collect(r); inFlight -= 1 }
                    let elements = chunk, at = index
                    group.addTask {
                        var n = 0
                        for element in elements {
                            do throws(MBaaSError) { _ = try self.decode(element, className: className, file: name) } catch { return (at, n, error) }
                            n += 1
                        }
                        return (at, n, nil)
                    }
                    inFlight += 1
                    index += 1
                }
                // What the reader found wrong comes after every element it handed out.
                if let readerError { collect((index, 0, readerError)); break }
                if chunk.count < 256 { break }
            }
            while let r = try await group.next() { collect(r) }
            if let first { throw first.error }
            return total
        }
    }

    /// Parses and decodes one element a reader cut out; malformed JSON or a bad value names the file and line.
    nonisolated func decode(_ element: JSONArrayFileReader.RawElement, className: String, file: String) throws(MBaaSError) -> Record {
        let value: JSON
        do { value = try element.parse() } catch { throw Self.malformed(file, error) }
        return try decode(try Self.object(value, file: file, line: element.line), className: className, file: file, line: element.line)
    }

    nonisolated func decode(_ object: JSONObject, className: String, file: String, line: Int) throws(MBaaSError) -> Record {
        let record: Record
        do { record = try NCMBCodec.decodeRecord(className: className, object) } catch {
            throw MBaaSError(.decoding, "ncmb-export: \(file) line \(line): \(error.message)")
        }
        guard record.id != nil else { throw MBaaSError(.decoding, "ncmb-export: \(file) line \(line): objectId is missing") }
        return record
    }

    public func queryPage(_ query: Query) async throws -> RecordPage {
        try query.validate(against: capabilities, backend: adapterName)
        guard query.predicate == nil, query.sort.isEmpty, query.keys == nil, (query.skip ?? 0) == 0 else {
            throw MBaaSError.unsupported("filters, sorting, skip and key selection", by: adapterName,
                                         reason: "an NCMB export is read front to back; migrate it first")
        }
        let url = try fileURL(forClass: query.className)
        let limit = min(query.limit ?? capabilities.defaultPageSize, capabilities.maxPageSize)
        guard limit > 0 else { return RecordPage(records: []) }
        // The page's elements are cut out of the file in order (a fast scan for where each ends), then parsed and
        // decoded in chunks on every core: reading is the serial stage in front of a migration's writers.
        let name = url.lastPathComponent
        var reader = try openReader(url, cursor: query.cursor)
        defer { reader.close() }
        var raw: [JSONArrayFileReader.RawElement] = []
        var readerError: MBaaSError?
        do {
            while raw.count < limit, let element = try reader.nextRaw() { raw.append(element) }
        } catch let e as JSONArrayFileReader.Failure {
            readerError = Self.malformed(name, e)
        }
        let next = raw.count == limit ? reader.resumePoint : nil
        // A malformed element is reported before what the reader found wrong after it, as a front-to-back read would.
        let records = try await decodeAll(raw, className: query.className, file: name)
        if let readerError { throw readerError }
        return RecordPage(records: records, nextCursor: next.map { "\($0.offset):\($0.line)" })
    }

    /// Parses and decodes raw elements in order, in parallel chunks when there are many; the error of the earliest
    /// malformed element, if any.
    nonisolated func decodeAll(_ raw: [JSONArrayFileReader.RawElement], className: String, file: String) async throws -> [Record] {
        try await parallelMap(raw) { try self.decode($0, className: className, file: file) }
    }

    /// Reads and checks every object of the class, as ``queryPage(_:)`` decodes it, on every core (the first call;
    /// later calls reuse the number). A malformed object is ``MBaaSError/Kind/decoding`` naming the file and line.
    public func count(_ query: Query) async throws -> Int {
        guard query.predicate == nil else {
            throw MBaaSError.unsupported("counting with a filter", by: adapterName, reason: "an NCMB export is read front to back")
        }
        if let known = counts[query.className] { return known }
        let url = try fileURL(forClass: query.className)
        let n = try await check(url, className: query.className)
        counts[query.className] = n
        return n
    }

    public func get(className: String, id: String) async throws -> Record {
        let url = try fileURL(forClass: className)
        var found: Record?
        let name = url.lastPathComponent
        _ = try scan(url, cursor: nil) { object, line in
            guard object["objectId"]?.stringValue == id else { return true }
            found = try decode(object, className: className, file: name, line: line)
            return false
        }
        guard let found else { throw MBaaSError(.notFound, "ncmb-export: \(className)/\(id) not found") }
        return found
    }

    public func create(_ record: Record) async throws -> Record { throw readOnly() }
    public func update(className: String, id: String, _ update: RecordUpdate) async throws -> Record { throw readOnly() }
    public func delete(className: String, id: String, expectedVersion: String?) async throws { throw readOnly() }
    public func batch(_ operations: [BatchOperation]) async throws -> [BatchResult] { throw readOnly() }

    nonisolated func readOnly() -> MBaaSError {
        MBaaSError.unsupported("writing", by: adapterName, reason: "an NCMB export is read only")
    }

    // MARK: Users and roles

    /// `user.json` fields that are NCMB's own, not the app's: they are not carried as fields.
    static let userSystemFields: Set<String> = [
        "objectId", "createDate", "updateDate", "acl", "userName", "mailAddress", "mailAddressConfirm", "password",
        "authData", "sessionToken", "temporaryPassword",
    ]

    /// Every user of `user.json`, in file order; the cursor is a byte offset. A missing `user.json` is no users.
    public func listUsers(after cursor: String?, limit: Int) async throws -> DirectoryUserPage {
        let url = directory.appendingPathComponent("user.json")
        guard FileManager.default.fileExists(atPath: url.path) else { return DirectoryUserPage(users: [], nextCursor: nil) }
        var users: [DirectoryUser] = []
        let next = try scan(url, cursor: cursor) { object, line in
            users.append(try Self.user(object, line: line))
            return users.count < max(1, limit)
        }
        return DirectoryUserPage(users: users, nextCursor: next)
    }

    static func user(_ object: JSONObject, line: Int) throws(MBaaSError) -> DirectoryUser {
        func fail(_ message: String) -> MBaaSError { MBaaSError(.decoding, "ncmb-export: user.json line \(line): \(message)") }
        guard let id = object["objectId"]?.stringValue else { throw fail("objectId is missing") }
        let record: Record
        do { record = try NCMBCodec.decodeRecord(className: "_User", object) } catch { throw fail(error.message) }
        var fields = record.fields
        for key in userSystemFields { fields[key] = nil }
        func string(_ key: String) throws(MBaaSError) -> String? {
            guard let v = object[key], !v.isNull else { return nil }
            guard let s = v.stringValue else { throw fail("\(key) must be a string") }
            return s
        }
        var verified: Bool?
        if let v = object["mailAddressConfirm"], !v.isNull {
            guard let b = v.boolValue else { throw fail("mailAddressConfirm must be a boolean") }
            verified = b
        }
        return DirectoryUser(
            id: id, username: try string("userName"), email: try string("mailAddress"), emailVerified: verified,
            createdAt: record.createdAt, updatedAt: record.updatedAt, acl: record.acl, fields: fields)
    }

    /// Every role of `role.json`. Members come from `belongUser` / `belongRole` when they are arrays of pointers
    /// (or of object ids); a bare `{"__type":"Relation"}` marker names no members, and the role is exported without
    /// them (the export does not list relation members [inferred]).
    public func listRoles() async throws -> [DirectoryRole] {
        let url = directory.appendingPathComponent("role.json")
        guard FileManager.default.fileExists(atPath: url.path) else { return [] }
        var roles: [DirectoryRole] = []
        _ = try scan(url, cursor: nil) { object, line in
            func fail(_ message: String) -> MBaaSError { MBaaSError(.decoding, "ncmb-export: role.json line \(line): \(message)") }
            guard let name = object["roleName"]?.stringValue, !name.isEmpty else { throw fail("roleName is missing") }
            func members(_ key: String) -> [String] {
                guard let items = object[key]?.arrayValue else { return [] }
                return items.compactMap { $0.stringValue ?? $0.objectValue?["objectId"]?.stringValue }
            }
            var acl: ACL?
            if let a = object["acl"], !a.isNull {
                do throws(MBaaSError) { acl = try NCMBCodec.decodeACL(a) } catch { throw fail(error.message) }
            }
            roles.append(DirectoryRole(name: name, id: object["objectId"]?.stringValue, users: members("belongUser"),
                                       roles: members("belongRole"), acl: acl))
            return true
        }
        // Members listed beside the export (`role-members/<roleName>.json`, `{"results":[user objects]}`), the list
        // migration tools take because the export names none [inferred].
        for i in roles.indices where roles[i].users.isEmpty {
            let url = directory.appendingPathComponent("role-members/\(roles[i].name).json")
            guard !roles[i].name.contains("/"), FileManager.default.fileExists(atPath: url.path) else { continue }
            var users: [String] = []
            _ = try scan(url, cursor: nil) { object, line in
                guard let id = object["objectId"]?.stringValue else {
                    throw MBaaSError(.decoding, "ncmb-export: role-members/\(roles[i].name).json line \(line): objectId is missing")
                }
                users.append(id)
                return true
            }
            roles[i].users = users
        }
        return roles
    }

    // MARK: Files

    var filesDirectory: URL { directory.appendingPathComponent("files") }

    func fileURL(name: String) throws(MBaaSError) -> URL {
        guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
            throw MBaaSError(.invalidRequest, "ncmb-export: '\(name)' is not a file name")
        }
        return filesDirectory.appendingPathComponent(name)
    }

    /// The files under `files/`, by name.
    public func listFiles(prefix: String?, limit: Int?) async throws -> [FileInfo] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: filesDirectory.path)) ?? []
        var out: [FileInfo] = []
        for name in names.sorted() where prefix.map(name.hasPrefix) ?? true && !name.hasPrefix(".") {
            let url = filesDirectory.appendingPathComponent(name)
            let attributes = try? FileManager.default.attributesOfItem(atPath: url.path)
            guard (attributes?[.type] as? FileAttributeType) == .typeRegular else { continue }
            let size = (attributes?[.size] as? NSNumber)?.int64Value
            out.append(FileInfo(reference: FileReference(name: name, contentType: guessContentType(forFileName: name), size: size),
                                createdAt: attributes?[.creationDate] as? Date, updatedAt: attributes?[.modificationDate] as? Date))
            if let limit, out.count >= limit { break }
        }
        return out
    }

    public func download(_ file: FileReference) async throws -> Data {
        let url = try fileURL(name: file.name)
        do { return try Data(contentsOf: url) } catch CocoaError.fileReadNoSuchFile, CocoaError.fileNoSuchFile {
            throw MBaaSError(.notFound, "ncmb-export: file '\(file.name)' is not in \(filesDirectory.path)")
        } catch {
            throw MBaaSError(.localIO, "ncmb-export: cannot read files/\(file.name): \(MBaaSError.describe(error))")
        }
    }

    public func upload(_ upload: FileUpload) async throws -> FileReference { throw readOnly() }
    public func deleteFile(_ file: FileReference) async throws { throw readOnly() }

    // MARK: Auth

    public var session: Session? { nil }
    public func restore(_ session: Session?) {}
    public func signUp(username: String, password: String, email: String?, fields: [String: Value]) async throws -> Session {
        throw readOnly()
    }
    public func logIn(username: String, password: String) async throws -> Session {
        throw MBaaSError.unsupported("logging in", by: adapterName, reason: capabilities.note(for: .auth))
    }
    public func logOut(confirmWithServer: Bool) async throws {}
    public func currentUser() async throws -> User {
        throw MBaaSError(.unauthorized, "an NCMB export has no sessions")
    }
}
