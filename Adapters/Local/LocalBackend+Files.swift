public import Foundation
import GRDB
public import MBaaSCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Files: bytes in ``LocalFileArea`` under random storage names, metadata (name, type, size, ACL, attachment) in
/// the `files` table. Names are unique; any Unicode is allowed.
///
/// - Upload copies the source in 256 KiB chunks to a partial file, calling `progress` after each chunk and
///   checking for cancellation between chunks (a cancelled upload removes its partial file and stores nothing),
///   then records the metadata in one transaction. An existing name is `duplicate` (delete it first): nothing is
///   overwritten silently.
/// - An upload with an `attachment` is stored as `<Class>/<id>/<field>/<name>`, needs write access to the record,
///   and sets the record's field to the `File` value in the same transaction (replacing, and deleting, the file
///   the field held before). Deleting the file removes the field; deleting the record deletes its files.
/// - Download and list need read access to the file's ACL (an unreadable file is `notFound`); delete needs write
///   access (`forbidden`). A file uploaded without an ACL by a logged-in user is private to that user (like a
///   record), by an anonymous caller public; an attachment defaults to its record's ACL.
/// - Attachment names belong to the record's writers: a plain upload named `Class/id/field/…` of an existing
///   record needs write access to it, and attaching replaces a plain file that squats the name.
extension LocalBackend {
    public func upload(_ upload: FileUpload) async throws -> FileReference {
        try StoreValidation.fileName(upload.name)
        if let a = upload.attachment {
            try StoreValidation.className(a.className)
            try StoreValidation.fieldName(a.field)
        }
        try checkWritable()
        let store = self.store
        let attachment = upload.attachment
        let name = attachment.map { "\($0.className)/\($0.objectId)/\($0.field)/\(upload.name)" } ?? upload.name
        let contentType = upload.contentType ?? guessContentType(forFileName: upload.name)

        // Fail fast (name taken, record missing or not writable) before copying any byte.
        _ = try await reading { db, principal in
            _ = try store.checkUpload(db, name: name, attachment: attachment, principal: principal)
            return true
        }
        let (storage, size) = try await store.files.copy(upload.source, name: upload.name, progress: upload.progress)
        do {
            if Task.isCancelled { throw CancellationError() }
            let (reference, unlink) = try await writing { db, principal in
                try store.commitUpload(db, name: name, storage: storage, contentType: contentType, size: size, acl: upload.acl,
                                       attachment: attachment, principal: principal)
            }
            store.files.remove(unlink)
            store.logger.debug("local: stored file", metadata: ["name": "\(name)", "bytes": "\(size)"])
            return reference
        } catch {
            store.files.remove([storage])
            if error is CancellationError || (error as? MBaaSError)?.underlying is CancellationError {
                throw LocalFileArea.cancelled(upload.name)
            }
            throw error
        }
    }

    public func download(_ file: FileReference) async throws -> Data {
        let store = self.store
        let storage = try await reading { db, principal in
            guard let row = try store.fileRow(db, name: file.name), principal.canRead(row.acl) else {
                throw MBaaSError(.notFound, "file '\(file.name)' not found")
            }
            return row.storage
        }
        return try await store.files.read(storage, name: file.name)
    }

    /// Streams the stored bytes in 1 MiB chunks (memory stays flat whatever the file's size), with progress and
    /// cancellation between chunks.
    public func download(_ file: FileReference, into write: @Sendable (Data) throws -> Void,
                         progress: (@Sendable (TransferProgress) -> Void)?) async throws {
        let store = self.store
        let storage = try await reading { db, principal in
            guard let row = try store.fileRow(db, name: file.name), principal.canRead(row.acl) else {
                throw MBaaSError(.notFound, "file '\(file.name)' not found")
            }
            return row.storage
        }
        try await store.files.stream(storage, name: file.name, into: write, progress: progress)
    }

    /// A stored file's ACL (`nil`: it has none), as ``listFiles(prefix:limit:)`` gives it; a file the session cannot
    /// read is `notFound`, as for ``download(_:)``.
    public func fileACL(_ file: FileReference) async throws -> ACL? {
        let store = self.store
        return try await reading { db, principal in
            guard let row = try store.fileRow(db, name: file.name), principal.canRead(row.acl) else {
                throw MBaaSError(.notFound, "file '\(file.name)' not found")
            }
            return row.acl
        }
    }

    /// Replaces the ACL of a stored file whatever its current ACL grants: the administrative way back to a file
    /// no one can reach, like ``repairACL(className:id:acl:)`` for records (no session needed; the CLI's
    /// `files repair-acl` checks that the caller owns the database file). `notFound` if there is no such file.
    public func repairFileACL(name: String, acl: ACL) async throws -> FileInfo {
        try checkWritable()
        let store = self.store
        do {
            return try await store.writer.write { db in
                try store.checkACL(db, acl)
                guard var row = try store.fileRow(db, name: name) else { throw MBaaSError(.notFound, "file '\(name)' not found") }
                let now = store.nowMillis
                try db.execute(sql: "UPDATE files SET acl = ?, updated_at = ? WHERE name = ?",
                               arguments: [LocalStore.encodeACL(acl), now, name])
                row.acl = acl
                row.updatedAt = now
                return row.info
            }
        } catch {
            throw LocalStore.mapError(error)
        }
    }

    public func deleteFile(_ file: FileReference) async throws {
        let store = self.store
        let storage = try await writing { db, principal in
            try store.deleteFile(db, name: file.name, principal: principal, now: store.nowMillis)
        }
        store.files.remove([storage])
    }

    /// Files readable by the session's user, oldest first (newest last), optionally only names starting with
    /// `prefix` (case-sensitive) and at most `limit`.
    public func listFiles(prefix: String?, limit: Int?) async throws -> [FileInfo] {
        if let limit, limit < 0 { throw MBaaSError(.invalidRequest, "limit must be >= 0, got \(limit)") }
        return try await reading { db, principal in
            let grant = principal.sqlGrant("f.acl", "read")
            var sql = "SELECT \(LocalStore.fileColumns) FROM files f WHERE \(grant.sql)"
            var arguments = grant.arguments
            if let prefix {
                // The range lets the name index find the prefix (a migration looks files up one by one); substr
                // keeps it exact.
                sql += " AND f.name >= ? AND f.name < ? AND substr(f.name, 1, ?) = ?"
                arguments += [prefix, prefix + "\u{10FFFF}", prefix.unicodeScalars.count, prefix]
            }
            sql += " ORDER BY f.seq LIMIT ?"
            arguments += [limit ?? -1]
            return try Row.fetchAll(db.cachedStatement(sql: sql), arguments: arguments).map { try LocalStore.fileRow($0).info }
        }
    }
}

/// One row of `files`.
struct LocalFileRow: Sendable {
    var name: String
    var storage: String
    var contentType: String?
    var size: Int64
    var createdAt: Int64
    var updatedAt: Int64
    var acl: ACL?
    var attachment: FileAttachment?

    var reference: FileReference {
        FileReference(name: name, contentType: contentType, size: size, attachment: attachment)
    }

    var info: FileInfo {
        FileInfo(reference: reference, createdAt: LocalTime.date(createdAt), updatedAt: LocalTime.date(updatedAt), acl: acl)
    }
}

extension LocalStore {
    static let fileColumns = "f.name, f.storage, f.content_type, f.size, f.created_at, f.updated_at, f.acl, f.att_class, f.att_id, f.att_field"

    static func fileRow(_ row: Row) throws -> LocalFileRow {
        var attachment: FileAttachment?
        if let c: String = row[7], let id: String = row[8], let field: String = row[9] {
            attachment = FileAttachment(className: c, objectId: id, field: field)
        }
        let aclText: String? = row[6]
        return LocalFileRow(name: row[0], storage: row[1], contentType: row[2], size: row[3], createdAt: row[4],
                            updatedAt: row[5], acl: try aclText.map { try ACL(json: JSON.parse($0)) }, attachment: attachment)
    }

    /// The file's row, or `nil`; a name holding NUL names no file (GRDB would bind it cut at the NUL, another name).
    func fileRow(_ db: Database, name: String) throws -> LocalFileRow? {
        if name.utf8.contains(0) { return nil }
        return try Row.fetchOne(db.cachedStatement(sql: "SELECT \(Self.fileColumns) FROM files f WHERE f.name = ?"), arguments: [name])
            .map(Self.fileRow)
    }

    /// Checks an upload can proceed; returns the attachment's record (checked for write access).
    ///
    /// Attachment names (`Class/id/field/name`) belong to the record's writers: a plain upload under the
    /// attachment name space of an existing record needs write access to it (`notFound`/`forbidden` as for an
    /// update), and an attachment replaces a plain file squatting its name.
    func checkUpload(_ db: Database, name: String, attachment: FileAttachment?, principal: LocalPrincipal) throws -> StoredRecord? {
        guard let a = attachment else {
            if try fileRow(db, name: name) != nil {
                throw MBaaSError(.duplicate, "a file named '\(name)' already exists; delete it first or choose another name")
            }
            let parts = name.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
            if parts.count == 4, (try? StoreValidation.className(parts[0])) != nil,
               try load(db, className: parts[0], id: parts[1]) != nil {
                _ = try loadForWrite(db, className: parts[0], id: parts[1], principal: principal, expectedVersion: nil)
            }
            return nil
        }
        let record = try loadForWrite(db, className: a.className, id: a.objectId, principal: principal, expectedVersion: nil)
        if let existing = try fileRow(db, name: name), existing.attachment != nil, existing.attachment != attachment {
            throw MBaaSError(.duplicate, "a file named '\(name)' already exists; delete it first or choose another name")
        }
        return record
    }

    /// Records an uploaded file (and attaches it); returns its reference and the storage names to unlink.
    func commitUpload(_ db: Database, name: String, storage: String, contentType: String, size: Int64, acl: ACL?,
                      attachment: FileAttachment?, principal: LocalPrincipal) throws -> (FileReference, [String]) {
        let record = try checkUpload(db, name: name, attachment: attachment, principal: principal)
        let now = nowMillis
        var unlink: [String] = []
        if let a = attachment {
            // The field's previous file (any name) is replaced, and so is a plain file squatting the name.
            unlink = try String.fetchAll(
                db.cachedStatement(sql: "SELECT storage FROM files WHERE (att_class = ? AND att_id = ? AND att_field = ?) OR name = ?"),
                arguments: [a.className, a.objectId, a.field, name])
            try db.cachedStatement(sql: "DELETE FROM files WHERE (att_class = ? AND att_id = ? AND att_field = ?) OR name = ?")
                .execute(arguments: [a.className, a.objectId, a.field, name])
        }
        if let acl, !principal.isAdministrator { try checkACL(db, acl) }
        let fileACL = try record.map { r in acl ?? r.record.acl } ?? effectiveACL(db, acl, principal: principal)
        try db.cachedStatement(sql: """
            INSERT INTO files(name, storage, content_type, size, created_at, updated_at, acl, att_class, att_id, att_field)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [name, storage, contentType, size, now, now, Self.encodeACL(fileACL),
                                     attachment?.className, attachment?.objectId, attachment?.field])
        let reference = FileReference(name: name, contentType: contentType, size: size, attachment: attachment)
        if let stored = record, let a = attachment {
            var fields = stored.record.fields
            fields[a.field] = .file(reference)
            try write(db, seq: stored.seq, fields: fields, acl: stored.record.acl, version: stored.versionNumber + 1, now: now)
        }
        return (reference, unlink)
    }

    /// Deletes a file's row (clearing its attachment field); returns the storage name to unlink.
    func deleteFile(_ db: Database, name: String, principal: LocalPrincipal, now: Int64) throws -> String {
        guard let row = try fileRow(db, name: name), principal.canRead(row.acl) || principal.canWrite(row.acl) else {
            throw MBaaSError(.notFound, "file '\(name)' not found")
        }
        guard principal.canWrite(row.acl) else {
            throw MBaaSError(.forbidden, "the ACL of file '\(name)' does not let \(principal.userId.map { "user \($0)" } ?? "anonymous users") delete it")
        }
        if let a = row.attachment, var stored = try load(db, className: a.className, id: a.objectId),
           case .file(let held)? = stored.record.fields[a.field], held.name == name {
            stored.record.fields[a.field] = nil
            try write(db, seq: stored.seq, fields: stored.record.fields, acl: stored.record.acl,
                      version: stored.versionNumber + 1, now: now)
        }
        try db.cachedStatement(sql: "DELETE FROM files WHERE name = ?").execute(arguments: [name])
        return row.storage
    }
}

extension LocalFileArea {
    static let chunkSize = 256 * 1024

    static func cancelled(_ name: String) -> MBaaSError {
        MBaaSError(.transport, "cancelled: the upload of '\(name)' was cancelled and nothing was stored", underlying: CancellationError())
    }

    /// Copies the source to a new storage file in chunks, with progress and cancellation between chunks.
    /// Returns the storage name and the size. A failure or cancellation removes the partial file.
    func copy(_ source: FileSource, name: String, progress: (@Sendable (TransferProgress) -> Void)?) async throws
        -> (String, Int64)
    {
        try ensureDirectory()
        let storage = SecureRandom.alphanumeric(24)
        let partial = directory.appendingPathComponent(".partial-" + storage)
        // Created 0600 and locked at once: the lock tells a later sweep (``sweepPartialFiles(logger:)``) that the
        // upload is alive; it is released when the descriptor closes or the process dies.
        let fd = open(partial.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw MBaaSError(.localIO, "cannot create a file in \(directory.path): \(String(cString: strerror(errno)))")
        }
        flock(fd, LOCK_EX)
        var done: Int64 = 0
        do {
            let out = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
            defer { try? out.close() }
            switch source {
            case .data(let data):
                let total = Int64(data.count)
                var offset = data.startIndex
                repeat {
                    if Task.isCancelled { throw CancellationError() }
                    let end = min(offset + Self.chunkSize, data.endIndex)
                    try out.write(contentsOf: data[offset..<end])
                    done += Int64(end - offset)
                    offset = end
                    progress?(TransferProgress(completedBytes: done, totalBytes: total))
                    // Between chunks, let the thread serve others (a server's event loop runs this).
                    await Task.yield()
                } while offset < data.endIndex
            case .url(let url):
                let input: FileHandle
                do { input = try FileHandle(forReadingFrom: url) } catch {
                    throw MBaaSError(.localIO, "cannot read \(url.path): \(MBaaSError.describe(error))")
                }
                defer { try? input.close() }
                let total = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value
                while true {
                    if Task.isCancelled { throw CancellationError() }
                    let chunk = try input.read(upToCount: Self.chunkSize) ?? Data()
                    if chunk.isEmpty { break }
                    try out.write(contentsOf: chunk)
                    done += Int64(chunk.count)
                    progress?(TransferProgress(completedBytes: done, totalBytes: total))
                    await Task.yield()
                }
                if done == 0 { progress?(TransferProgress(completedBytes: 0, totalBytes: 0)) }
            }
            try out.close()
            try FileManager.default.moveItem(at: partial, to: url(forStorage: storage))
        } catch {
            try? FileManager.default.removeItem(at: partial)
            if error is CancellationError { throw Self.cancelled(name) }
            if let e = error as? MBaaSError { throw e }
            throw MBaaSError(.localIO, "cannot store '\(name)' in \(directory.path): \(MBaaSError.describe(error))")
        }
        return (storage, done)
    }

    /// The bytes of a stored file.
    func read(_ storage: String, name: String) async throws -> Data {
        do {
            return try Data(contentsOf: url(forStorage: storage))
        } catch {
            throw MBaaSError(.localIO, "the bytes of file '\(name)' cannot be read from \(directory.path): \(MBaaSError.describe(error))")
        }
    }

    /// Hands the bytes of a stored file to `write` in chunks.
    func stream(_ storage: String, name: String, into write: @Sendable (Data) throws -> Void,
                progress: (@Sendable (TransferProgress) -> Void)?) async throws {
        let url = url(forStorage: storage)
        let input: FileHandle
        do { input = try FileHandle(forReadingFrom: url) } catch {
            throw MBaaSError(.localIO, "the bytes of file '\(name)' cannot be read from \(directory.path): \(MBaaSError.describe(error))")
        }
        defer { try? input.close() }
        let total = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value
        var done: Int64 = 0
        while true {
            if Task.isCancelled { throw MBaaSError(.transport, "cancelled: the download of '\(name)' was cancelled", underlying: CancellationError()) }
            let chunk: Data
            do { chunk = try input.read(upToCount: 1 << 20) ?? Data() } catch {
                throw MBaaSError(.localIO, "the bytes of file '\(name)' cannot be read: \(MBaaSError.describe(error))")
            }
            if chunk.isEmpty { break }
            try write(chunk)
            done += Int64(chunk.count)
            progress?(TransferProgress(completedBytes: done, totalBytes: total))
        }
        if done == 0 { progress?(TransferProgress(completedBytes: 0, totalBytes: 0)) }
    }

    /// Removes storage files (after the transaction that forgot them committed); errors are ignored.
    func remove(_ storages: [String]) {
        for s in storages { try? FileManager.default.removeItem(at: url(forStorage: s)) }
    }
}
