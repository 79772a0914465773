public import Foundation
public import MBaaSCore
import PostgresNIO

/// Files in the database: metadata in `files`, bytes in `file_chunks` as 1 MiB `bytea` rows, so every instance serves
/// every file and a backup (`pg_dump`) holds them. Chunked `bytea` rather than large objects: chunks are ordinary rows,
/// deleted with their file by a foreign key (large objects outlive their reference unless cleaned up), covered by
/// ordinary table rights, and each is read or written by one bound statement, so an upload or download holds one chunk
/// in memory whatever the file's size.
///
/// - An upload runs in one transaction: the `files` row, then the chunks as the source is read, then the attachment;
///   a failure or cancellation rolls it all back, so no instance ever sees a partial file. A taken name is `duplicate`.
/// - Attachments, ACLs and defaults are the Local store's: an attachment needs write access to its record, sets the
///   record's field to the `File` value and replaces the file the field held; a plain upload without an ACL by a
///   logged-in user is private to that user, an anonymous one public; an attachment defaults to its record's ACL.
extension PostgresBackend {
    static let chunkSize = 1 << 20

    public func upload(_ upload: FileUpload) async throws -> FileReference {
        try StoreValidation.fileName(upload.name)
        if let a = upload.attachment {
            try StoreValidation.className(a.className)
            try StoreValidation.fieldName(a.field)
        }
        try self.store.checkWritable()
        let store = self.store
        let attachment = upload.attachment
        let name = attachment.map { "\($0.className)/\($0.objectId)/\($0.field)/\(upload.name)" } ?? upload.name
        let contentType = upload.contentType ?? guessContentType(forFileName: upload.name)
        _ = try await reading { conn, principal in
            _ = try await store.checkUpload(conn, name: name, attachment: attachment, principal: principal, lock: false)
            return true
        }
        let source = upload.source, progress = upload.progress, acl = upload.acl, uploadName = upload.name
        do {
            return try await writing { conn, principal in
                try await store.storeUpload(conn, name: name, uploadName: uploadName, source: source, contentType: contentType,
                                            acl: acl, attachment: attachment, principal: principal, progress: progress)
            }
        } catch let e as MBaaSError where e.underlying is CancellationError {
            throw MBaaSError(.transport, "cancelled: the upload of '\(upload.name)' was cancelled and nothing was stored", underlying: CancellationError())
        }
    }

    public func download(_ file: FileReference) async throws -> Data {
        let collected = PostgresChunks()
        try await download(file, into: { collected.append($0) }, progress: nil)
        return collected.data
    }

    /// Streams the stored chunks one statement each: memory holds one chunk (1 MiB) whatever the file's size.
    public func download(_ file: FileReference, into write: @Sendable (Data) throws -> Void,
                         progress: (@Sendable (TransferProgress) -> Void)?) async throws {
        let store = self.store, token = sessionState.tokenHash
        do {
            try await store.client.withConnection { conn in
                let principal = try await store.principal(conn, tokenHash: token)
                guard let row = try await store.fileRow(conn, name: file.name), principal.canRead(row.acl) else {
                    throw MBaaSError(.notFound, "file '\(file.name)' not found")
                }
                var done: Int64 = 0
                var n: Int32 = 0
                while done < row.size {
                    if Task.isCancelled {
                        throw MBaaSError(.transport, "cancelled: the download of '\(file.name)' was cancelled", underlying: CancellationError())
                    }
                    var q = PGSQL()
                    q.sql("SELECT data FROM \(store.s)file_chunks WHERE file_seq = \(q.bind(row.seq)) AND n = \(q.bind(Int64(n)))::integer")
                    guard let chunkRow = try await conn.first(q, logger: store.logger) else {
                        throw MBaaSError(.notFound, "file '\(file.name)' was deleted while it was read")
                    }
                    let chunk = try chunkRow[0].decode(Data.self)
                    try write(chunk)
                    done += Int64(chunk.count)
                    n += 1
                    progress?(TransferProgress(completedBytes: done, totalBytes: row.size))
                }
                if row.size == 0 { progress?(TransferProgress(completedBytes: 0, totalBytes: 0)) }
            }
        } catch {
            throw handle(error, tokenHash: token)
        }
    }

    public func fileACL(_ file: FileReference) async throws -> ACL? {
        let store = self.store
        return try await reading { conn, principal in
            guard let row = try await store.fileRow(conn, name: file.name), principal.canRead(row.acl) else {
                throw MBaaSError(.notFound, "file '\(file.name)' not found")
            }
            return row.acl
        }
    }

    public func deleteFile(_ file: FileReference) async throws {
        let store = self.store
        try await writing { conn, principal in
            try await store.deleteFile(conn, name: file.name, principal: principal, now: store.nowMillis)
        }
    }

    /// Files readable by the session's user, oldest first, optionally only names starting with `prefix`.
    public func listFiles(prefix: String?, limit: Int?) async throws -> [FileInfo] {
        if let limit, limit < 0 { throw MBaaSError(.invalidRequest, "limit must be >= 0, got \(limit)") }
        let store = self.store
        return try await reading { conn, principal in
            var q = PGSQL()
            var sql = "SELECT \(PostgresStore.fileColumns) FROM \(store.s)files f WHERE " + principal.readGrant("f.acl", &q)
            if let prefix { sql += " AND starts_with(f.name, \(q.bind(prefix)))" }
            sql += " ORDER BY f.seq"
            if let limit { sql += " LIMIT \(q.bind(Int64(limit)))" }
            q.sql(sql)
            return try await conn.rows(q, logger: store.logger).map { try PostgresStore.fileRow($0).info }
        }
    }
}

/// Chunks gathered by a whole-file download.
final class PostgresChunks: @unchecked Sendable {
    private let lock = NSLock()
    private var bytes = Data()
    func append(_ d: Data) { lock.withLock { bytes.append(d) } }
    var data: Data { lock.withLock { bytes } }
}

struct PostgresFileRow: Sendable {
    var seq: Int64
    var name: String
    var contentType: String?
    var size: Int64
    var createdAt: Int64
    var updatedAt: Int64
    var acl: ACL?
    var attachment: FileAttachment?

    var reference: FileReference { FileReference(name: name, contentType: contentType, size: size, attachment: attachment) }
    var info: FileInfo {
        FileInfo(reference: reference, createdAt: PostgresTime.date(createdAt), updatedAt: PostgresTime.date(updatedAt), acl: acl)
    }
}

extension PostgresStore {
    static let fileColumns = "f.seq, f.name, f.content_type, f.size, f.created_at, f.updated_at, f.acl::text, f.att_class, f.att_id, f.att_field"

    static func fileRow(_ row: PostgresRandomAccessRow) throws -> PostgresFileRow {
        var attachment: FileAttachment?
        if let c = try row.optionalText(7), let id = try row.optionalText(8), let field = try row.optionalText(9) {
            attachment = FileAttachment(className: c, objectId: id, field: field)
        }
        return PostgresFileRow(seq: try row.int(0), name: try row.text(1), contentType: try row.optionalText(2), size: try row.int(3),
                               createdAt: try row.int(4), updatedAt: try row.int(5),
                               acl: try row.optionalText(6).map { try ACL(json: JSON.parse($0)) }, attachment: attachment)
    }

    func fileRow(_ conn: PostgresConnection, name: String) async throws -> PostgresFileRow? {
        var q = PGSQL()
        q.sql("SELECT \(Self.fileColumns) FROM \(s)files f WHERE f.name = \(q.bind(name))")
        return try await conn.first(q, logger: logger).map(Self.fileRow)
    }

    /// Checks an upload can proceed; returns the attachment's record (checked for write access, locked with `lock`).
    func checkUpload(_ conn: PostgresConnection, name: String, attachment: FileAttachment?, principal: PostgresPrincipal,
                     lock: Bool) async throws -> PostgresStoredRecord? {
        guard let a = attachment else {
            if try await fileRow(conn, name: name) != nil {
                throw MBaaSError(.duplicate, "a file named '\(name)' already exists; delete it first or choose another name")
            }
            let parts = name.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
            if parts.count == 4, (try? StoreValidation.className(parts[0])) != nil,
               try await load(conn, className: parts[0], id: parts[1]) != nil {
                _ = try await loadForWrite(conn, className: parts[0], id: parts[1], principal: principal, expectedVersion: nil)
            }
            return nil
        }
        let record = try await loadForWrite(conn, className: a.className, id: a.objectId, principal: principal, expectedVersion: nil)
        if let existing = try await fileRow(conn, name: name), existing.attachment != nil, existing.attachment != attachment {
            throw MBaaSError(.duplicate, "a file named '\(name)' already exists; delete it first or choose another name")
        }
        return record
    }

    /// Stores an upload in the caller's transaction: the row, the chunks as the source is read, the attachment.
    func storeUpload(_ conn: PostgresConnection, name: String, uploadName: String, source: FileSource, contentType: String,
                     acl: ACL?, attachment: FileAttachment?, principal: PostgresPrincipal,
                     progress: (@Sendable (TransferProgress) -> Void)?) async throws -> FileReference {
        let record = try await checkUpload(conn, name: name, attachment: attachment, principal: principal, lock: true)
        let now = nowMillis
        if let a = attachment {
            var d = PGSQL()
            d.sql("DELETE FROM \(s)files WHERE (att_class = \(d.bind(a.className)) AND att_id = \(d.bind(a.objectId)) AND att_field = \(d.bind(a.field))) OR name = \(d.bind(name))")
            try await conn.run(d, logger: logger)
        }
        if let acl, !principal.isAdministrator { try await checkACL(conn, acl) }
        let fileACL: ACL?
        if let record { fileACL = acl ?? record.record.acl } else { fileACL = try await effectiveACL(conn, acl, principal: principal) }
        var ins = PGSQL()
        ins.sql("""
            INSERT INTO \(s)files (name, content_type, size, created_at, updated_at, acl, att_class, att_id, att_field)
            VALUES (\(ins.bind(name)), \(ins.bind(contentType)), 0, \(ins.bind(now)), \(ins.bind(now)), \(ins.bind(Self.encodeACL(fileACL)))::jsonb,
                    \(ins.bind(attachment?.className)), \(ins.bind(attachment?.objectId)), \(ins.bind(attachment?.field)))
            ON CONFLICT (name) DO NOTHING RETURNING seq
            """)
        guard let seqRow = try await conn.first(ins, logger: logger) else {
            throw MBaaSError(.duplicate, "a file named '\(name)' already exists; delete it first or choose another name")
        }
        let seq = try seqRow.int(0)
        var done: Int64 = 0
        var n: Int64 = 0
        func store(_ chunk: Data) async throws {
            if Task.isCancelled { throw MBaaSError(.transport, "cancelled", underlying: CancellationError()) }
            var c = PGSQL()
            c.sql("INSERT INTO \(s)file_chunks (file_seq, n, data) VALUES (\(c.bind(seq)), \(c.bind(n))::integer, \(c.bind(chunk)))")
            try await conn.run(c, logger: logger)
            n += 1
            done += Int64(chunk.count)
        }
        switch source {
        case .data(let data):
            let total = Int64(data.count)
            var offset = data.startIndex
            while offset < data.endIndex {
                let end = min(offset + PostgresBackend.chunkSize, data.endIndex)
                try await store(Data(data[offset..<end]))
                offset = end
                progress?(TransferProgress(completedBytes: done, totalBytes: total))
            }
            if data.isEmpty { progress?(TransferProgress(completedBytes: 0, totalBytes: 0)) }
        case .url(let url):
            let input: FileHandle
            do { input = try FileHandle(forReadingFrom: url) } catch {
                throw MBaaSError(.localIO, "cannot read \(url.path): \(MBaaSError.describe(error))")
            }
            defer { try? input.close() }
            let total = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value
            while true {
                let chunk: Data
                do { chunk = try input.read(upToCount: PostgresBackend.chunkSize) ?? Data() } catch {
                    throw MBaaSError(.localIO, "cannot read \(url.path): \(MBaaSError.describe(error))")
                }
                if chunk.isEmpty { break }
                try await store(chunk)
                progress?(TransferProgress(completedBytes: done, totalBytes: total))
            }
            if done == 0 { progress?(TransferProgress(completedBytes: 0, totalBytes: 0)) }
        }
        var size = PGSQL()
        size.sql("UPDATE \(s)files SET size = \(size.bind(done)) WHERE seq = \(size.bind(seq))")
        try await conn.run(size, logger: logger)
        let reference = FileReference(name: name, contentType: contentType, size: done, attachment: attachment)
        if let stored = record, let a = attachment {
            var fields = stored.record.fields
            fields[a.field] = .file(reference)
            try await write(conn, seq: stored.seq, fields: fields, acl: stored.record.acl, version: stored.versionNumber + 1, now: now)
        }
        _ = uploadName
        return reference
    }

    /// Deletes a file's row (its chunks follow by foreign key) and clears its attachment field.
    func deleteFile(_ conn: PostgresConnection, name: String, principal: PostgresPrincipal, now: Int64) async throws {
        guard let row = try await fileRow(conn, name: name), principal.canRead(row.acl) || principal.canWrite(row.acl) else {
            throw MBaaSError(.notFound, "file '\(name)' not found")
        }
        guard principal.canWrite(row.acl) else {
            throw MBaaSError(.forbidden, "the ACL of file '\(name)' does not let \(principal.userId.map { "user \($0)" } ?? "anonymous users") delete it")
        }
        if let a = row.attachment, var stored = try await load(conn, className: a.className, id: a.objectId, forUpdate: true),
           case .file(let held)? = stored.record.fields[a.field], held.name == name {
            stored.record.fields[a.field] = nil
            try await write(conn, seq: stored.seq, fields: stored.record.fields, acl: stored.record.acl,
                            version: stored.versionNumber + 1, now: now)
        }
        var q = PGSQL()
        q.sql("DELETE FROM \(s)files WHERE seq = \(q.bind(row.seq))")
        try await conn.run(q, logger: logger)
    }
}
