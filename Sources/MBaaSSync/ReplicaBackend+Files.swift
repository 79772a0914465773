public import Foundation
public import MBaaSCore
import GRDB

/// Files go to the remote when it answers; uploaded while it cannot be reached, they are kept in the replica and sent
/// by the next sync up. Downloads are cached next to the replica (`<path>-cache/`, mode 0700) and served from the
/// cache when the remote cannot be reached.
///
/// # Contract
/// - An upload attached to a record is `unsupported` (the record may not be on the remote yet).
/// - ``upload(_:)`` sends to the remote. When the remote is unreachable (`transport`, `unavailable`, `rateLimited`,
///   after the adapter's retries) the bytes are written into the replica file (`replica_files`, one SQLite
///   transaction) and a reference of the replica's own is returned at once: its name is
///   `replica-<15 characters>-<name>`, it has no URL. It can be stored in records (queued like any value),
///   downloaded offline (the replica's bytes) and deleted (then it is never sent).
/// - Sync up sends queued files first, in the order they were uploaded, then records. When the remote takes a file,
///   its reference replaces the replica's in every record of the replica and every queued write, in the same
///   transaction that records it as sent (as the remote's ids replace offline ids), so records reach the remote
///   pointing at the remote's file. The replica's reference still downloads (it resolves to the remote's).
/// - A file the remote refuses stops the sync with that error; nothing is dropped. Unreachable: the run reports it,
///   and the file stays queued. Limit: a kill between the remote taking a file and the replica recording it sends the
///   file again on the next run (a second copy of the file on the server; records point at one of them).
/// - ``deleteFile(_:)``, ``listFiles(prefix:limit:)`` and ``fileACL(_:)`` of sent files are the remote's.
/// - ``download(_:)`` returns the remote's bytes and keeps a copy; when the remote is unreachable, the cached copy,
///   else the remote's error. Deleting a file drops its cached copy.
extension ReplicaBackend {
    nonisolated var cacheDirectory: URL { URL(fileURLWithPath: path + "-cache") }

    nonisolated func cacheURL(_ file: FileReference) -> URL {
        let key = Data(file.name.utf8).base64EncodedString()
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "+", with: "-")
        return cacheDirectory.appendingPathComponent(key)
    }

    /// A file uploaded through the replica while offline: its bytes, and the remote's reference once sent.
    struct QueuedFile: Sendable {
        var bytes: Data
        var remote: FileReference?
    }

    func queuedFile(_ name: String) async throws -> QueuedFile? {
        // A name holding NUL is no queued file's (bound, it would be cut at the NUL and name another).
        guard name.hasPrefix("replica-"), !name.utf8.contains(0) else { return nil }
        let row = try await store.read { db in
            try GRDB.Row.fetchOne(db, sql: "SELECT bytes, remote FROM replica_files WHERE name = ?", arguments: [name])
                .map { ($0["bytes"] as Data, $0["remote"] as String?) }
        }
        guard let row else { return nil }
        let (bytes, remoteText) = row
        var remoteRef: FileReference?
        if let remoteText, case .file(let ref) = try Value(json: try JSON.parse(remoteText), path: "file") { remoteRef = ref }
        return QueuedFile(bytes: bytes, remote: remoteRef)
    }

    public func upload(_ upload: FileUpload) async throws -> FileReference {
        // Checked before the remote is tried: queued offline, a NUL would cut the name kept for the later upload.
        try StoreValidation.noNUL(upload.name, "file name")
        if let attachment = upload.attachment {
            throw MBaaSError(.unsupported, "attaching '\(upload.name)' to \(attachment.className)/\(attachment.objectId): a replica's records reach the remote on sync; files are not attached to records of a replica yet (upload it to the file store)")
        }
        do {
            return try await remote.upload(upload)
        } catch let e as MBaaSError where e.isTransient {
            let data: Data
            do { data = try upload.source.load() } catch { throw MBaaSError(.localIO, "cannot read '\(upload.name)': \(MBaaSError.describe(error))") }
            let name = "replica-\(Self.newId())-\(upload.name)"
            let acl = upload.acl?.json.printed()
            let original = upload.name, contentType = upload.contentType
            try await store.write { db in
                try db.execute(sql: "INSERT INTO replica_files(name, original, content_type, acl, bytes) VALUES (?, ?, ?, ?, ?)",
                               arguments: [name, original, contentType, acl, data])
            }
            return FileReference(name: name, contentType: contentType, size: Int64(data.count))
        }
    }

    public func download(_ file: FileReference) async throws -> Data {
        if let queued = try await queuedFile(file.name) {
            guard let sent = queued.remote else { return queued.bytes }
            do { return try await remote.download(sent) } catch let e as MBaaSError where e.isTransient { return queued.bytes }
        }
        do {
            let data = try await remote.download(file)
            try? FileManager.default.createDirectory(at: cacheDirectory, withIntermediateDirectories: true,
                                                     attributes: [.posixPermissions: 0o700])
            try? data.write(to: cacheURL(file), options: .atomic)
            return data
        } catch let e as MBaaSError where e.kind == .transport || e.kind == .unavailable {
            guard let cached = try? Data(contentsOf: cacheURL(file)) else { throw e }
            return cached
        }
    }

    public func deleteFile(_ file: FileReference) async throws {
        if let queued = try await queuedFile(file.name) {
            if let sent = queued.remote { try await remote.deleteFile(sent) }
            let name = file.name
            try await store.write { db in try db.execute(sql: "DELETE FROM replica_files WHERE name = ?", arguments: [name]) }
            return
        }
        try await remote.deleteFile(file)
        try? FileManager.default.removeItem(at: cacheURL(file))
    }

    public func listFiles(prefix: String?, limit: Int?) async throws -> [FileInfo] {
        try await remote.listFiles(prefix: prefix, limit: limit)
    }

    public func fileACL(_ file: FileReference) async throws -> ACL? {
        if let queued = try await queuedFile(file.name) {
            guard let sent = queued.remote else {
                let name = file.name
                let text = try await store.read { db in try String.fetchOne(db, sql: "SELECT acl FROM replica_files WHERE name = ?", arguments: [name]) }
                return try text.map(Self.parseACL)
            }
            return try await remote.fileACL(sent)
        }
        return try await remote.fileACL(file)
    }

    nonisolated static func parseACL(_ text: String) throws -> ACL { try ACL(json: try JSON.parse(text)) }

    /// Sends the files uploaded offline, in order; each one's reference is replaced by the remote's in records and
    /// queued writes in the transaction that marks it sent.
    func sendQueuedFiles(progress: (@Sendable (String) -> Void)?) async throws {
        let pending = try await store.read { db in
            try GRDB.Row.fetchAll(db, sql: "SELECT name, original, content_type, acl, bytes FROM replica_files WHERE remote IS NULL ORDER BY seq")
                .map { ($0["name"] as String, $0["original"] as String, $0["content_type"] as String?, $0["acl"] as String?, $0["bytes"] as Data) }
        }
        for (name, original, contentType, aclText, bytes) in pending {
            let acl = try aclText.map(Self.parseACL)
            progress?("file: sending \(original)")
            let upload = FileUpload(name: original, source: .data(bytes), contentType: contentType, acl: acl)
            let sent = try await withRetry { try await remote.upload(upload) }
            let sentJSON = Value.file(sent).json
            try await store.write { db in
                try db.execute(sql: "UPDATE replica_files SET remote = ? WHERE name = ?", arguments: [sentJSON.printed(), name])
                try FileRewrite.apply(db, from: name, to: sentJSON)
            }
        }
    }
}

/// Replaces a file reference `{"__type":"File","name":old,…}` by another anywhere in the replica's records and queued
/// writes (neutral JSON).
enum FileRewrite {
    static func apply(_ db: Database, from old: String, to new: JSON) throws {
        let quoted = JSON.string(old).printed()
        let pattern = "%\"name\":\(quoted)%"
        for row in try GRDB.Row.fetchAll(db, sql: "SELECT seq, fields FROM records WHERE fields LIKE ?", arguments: [pattern]) {
            let rewritten = rewrite(try JSON.parse(row["fields"] as String), from: old, to: new)
            try db.execute(sql: "UPDATE records SET fields = ? WHERE seq = ?", arguments: [rewritten.printed(), row["seq"] as Int64])
        }
        for row in try GRDB.Row.fetchAll(db, sql: "SELECT seq, payload FROM replica_outbox WHERE payload LIKE ?", arguments: [pattern]) {
            let rewritten = rewrite(try JSON.parse(row["payload"] as String), from: old, to: new)
            try db.execute(sql: "UPDATE replica_outbox SET payload = ? WHERE seq = ?", arguments: [rewritten.printed(), row["seq"] as Int64])
        }
    }

    static func rewrite(_ json: JSON, from old: String, to new: JSON) -> JSON {
        switch json {
        case .object(let o):
            if o["__type"]?.stringValue == "File", o["name"]?.stringValue == old { return new }
            var out = JSONObject()
            for (k, v) in o { out[k] = rewrite(v, from: old, to: new) }
            return .object(out)
        case .array(let items):
            return .array(items.map { rewrite($0, from: old, to: new) })
        default:
            return json
        }
    }
}
