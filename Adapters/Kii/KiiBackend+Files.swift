public import Foundation
public import MBaaSCore
import MBaaSKiiWire

/// Files as Kii object bodies (kii.md §5).
///
/// Kii attaches one body (any bytes, with their own Content-Type) to an object. This adapter exposes it two ways:
/// - **Attachments** (``FileUpload/attachment`` = class, object ID, field): `PUT {object}/body` with the file's
///   Content-Type, then the record's field is set to a `File` value naming the attachment, so the record shows where
///   its file is and a migration can carry it to another vendor's file field. One object holds one body: attaching
///   a second file under another field of the same record is ``MBaaSError/Kind/unsupported``. Deleting the file
///   deletes the body and removes the field.
/// - **The file store** (no attachment): an object `{"name","contentType","size"}` is created in the app-scope
///   files bucket (``KiiConfiguration/filesBucket``, default `mbaas_files`) and the bytes become its body. The
///   returned reference keeps the name as given (any Unicode) and the body's REST URL as ``FileReference/url``;
///   ``download(_:)`` and ``deleteFile(_:)`` follow that URL, or, for a reference that only has a name, the newest
///   file of that name. ``listFiles(prefix:limit:)`` queries the files bucket, oldest first.
///
/// Bodies share their object's ACL: ``FileUpload/acl`` is applied to the files-bucket object, and is
/// `unsupported` for an attachment (set the record's ACL instead). Resumable uploads and publication are not used.
extension KiiBackend {
    public func upload(_ upload: FileUpload) async throws -> FileReference {
        let data = try upload.source.load()
        let contentType = upload.contentType ?? guessContentType(forFileName: upload.name)
        guard !upload.name.isEmpty else { throw MBaaSError(.invalidRequest, "a file needs a name") }
        let reference: FileReference
        if let attachment = upload.attachment {
            reference = try await attach(upload, data: data, contentType: contentType, to: attachment)
        } else {
            reference = try await store(upload, data: data, contentType: contentType)
        }
        upload.progress?(TransferProgress(completedBytes: Int64(data.count), totalBytes: Int64(data.count)))
        return reference
    }

    func attach(_ upload: FileUpload, data: Data, contentType: String, to attachment: FileAttachment) async throws -> FileReference {
        if upload.acl != nil {
            throw MBaaSError.unsupported("an ACL on an attached file", by: adapterName,
                                         reason: "a Kii object body shares its object's ACL; set the record's ACL instead")
        }
        let bucket = try address(attachment.className)
        try KiiObjectCodec.validateFieldName(attachment.field)
        let owner = try await get(className: attachment.className, id: attachment.objectId)
        for (field, value) in owner.fields where field != attachment.field {
            if case .file(let f) = value, f.attachment?.objectId == attachment.objectId,
               f.attachment?.className == attachment.className
            {
                throw MBaaSError.unsupported("a second attached file on one record", by: adapterName,
                                             reason: "a Kii object has one body, already used by field '\(field)'")
            }
        }
        _ = try await send(try requests.putBody(bucket, id: attachment.objectId, data: data, contentType: contentType),
                           requireUser: bucket.needsUserToken)
        let reference = FileReference(name: upload.name, url: requests.bodyURL(bucket, id: attachment.objectId),
                                      contentType: contentType, size: Int64(data.count), attachment: attachment)
        let link: JSONObject = [attachment.field: KiiObjectCodec.kiiJSON(.file(reference))]
        _ = try await send(try requests.patchObject(bucket, id: attachment.objectId, changes: link),
                           requireUser: bucket.needsUserToken)
        return reference
    }

    func store(_ upload: FileUpload, data: Data, contentType: String) async throws -> FileReference {
        let files = KiiBucketAddress(bucket: configuration.filesBucket)
        let desiredACL = try upload.acl.map { acl throws(MBaaSError) in try KiiACLMapping.objectEntries(for: acl) }
        let meta: JSONObject = ["contentType": .string(contentType), "name": .string(upload.name), "size": .int(Int64(data.count))]
        // Kii objects have no unique key: the adapter keeps names unique itself, as the FileStore contract asks
        // (a name that exists is `duplicate`; delete it first). Not atomic: two clients racing can both store.
        do {
            _ = try await locate(FileReference(name: upload.name))
            throw MBaaSError(.duplicate, "a file named '\(upload.name)' already exists; delete it first or choose another name")
        } catch let e as MBaaSError where e.kind == .notFound {}
        let created = try await send(try requests.createObject(files, body: meta))
        let id = try KiiObjectCreationResponse(json: try json(created)).objectID
        do {
            try Task.checkCancellation()
            _ = try await send(try requests.putBody(files, id: id, data: data, contentType: contentType))
            if let desiredACL { try await applyObjectACL(bucket: files, id: id, desired: desiredACL) }
        } catch {
            // Leave no half-stored file behind, even when the upload was cancelled.
            let cleanup = Task { [self] in _ = try? await self.send(try self.requests.deleteObject(files, id: id)) }
            await cleanup.value
            throw MBaaSError.wrap(error)
        }
        return FileReference(name: upload.name, url: requests.bodyURL(files, id: id), contentType: contentType,
                             size: Int64(data.count))
    }

    public func download(_ file: FileReference) async throws -> Data {
        let location = try await locate(file)
        let response = try await send(try requests.getBody(location.bucket, id: location.objectID),
                                      requireUser: location.bucket.needsUserToken)
        return response.body
    }

    public func deleteFile(_ file: FileReference) async throws {
        if let attachment = file.attachment {
            let bucket = try address(attachment.className)
            _ = try await send(try requests.deleteBody(bucket, id: attachment.objectId), requireUser: bucket.needsUserToken)
            _ = try await replace(bucket: bucket, className: attachment.className, id: attachment.objectId, sets: [:],
                                  removals: [attachment.field], expectedVersion: nil)
            return
        }
        let location = try await locate(file)
        _ = try await send(try requests.deleteObject(location.bucket, id: location.objectID),
                           requireUser: location.bucket.needsUserToken)
    }

    public func listFiles(prefix: String?, limit: Int?) async throws -> [FileInfo] {
        if let limit, limit < 0 { throw MBaaSError(.invalidRequest, "limit must be >= 0, got \(limit)") }
        let files = KiiBucketAddress(bucket: configuration.filesBucket)
        var request = KiiQueryRequest(clause: prefix.map { .prefix(field: "name", prefix: $0) } ?? .all,
                                      orderBy: "_created", descending: false)
        var out: [FileInfo] = []
        while limit.map({ out.count < $0 }) ?? true {
            request.bestEffortLimit = min(capabilities.maxPageSize, limit.map { $0 - out.count } ?? capabilities.maxPageSize)
            let page = try await page(bucket: files, className: files.className, request: request)
            for record in page.records { out.append(fileInfo(record, bucket: files)) }
            guard let next = page.nextCursor, !page.records.isEmpty else { break }
            request.paginationKey = next
        }
        return limit.map { Array(out.prefix($0)) } ?? out
    }

    /// A file-store file's ACL as Kii enforces it (``KiiACLMapping/effectiveACL(object:bucket:)``): its files-bucket
    /// object's (`GET …/objects/{id}/acl`), with read for whoever the files bucket lets read every object (by default,
    /// in app scope, everyone), as ``recordACLs(className:ids:)`` reads a record's. Read per file, since the bucket's
    /// query does not carry it. An attached body has none of its own (it follows its object): `unsupported`.
    public func fileACL(_ file: FileReference) async throws -> ACL? {
        if file.attachment != nil {
            throw MBaaSError.unsupported("an attached file's own ACL", by: adapterName, reason: "a Kii object body shares its object's ACL")
        }
        let location = try await locate(file)
        let needsUser = location.bucket.needsUserToken
        let object = try await aclList(resource: location.bucket.objectPath(appID: configuration.appID, objectID: location.objectID), requireUser: needsUser)
        let bucket = try await aclList(resource: location.bucket.path(appID: configuration.appID), requireUser: needsUser)
        return KiiACLMapping.effectiveACL(object: object, bucket: bucket)
    }

    // MARK: Helpers

    nonisolated func fileInfo(_ record: Record, bucket: KiiBucketAddress) -> FileInfo {
        let reference = FileReference(
            name: record.fields["name"]?.stringValue ?? record.id ?? "", url: record.id.map { requests.bodyURL(bucket, id: $0) },
            contentType: record.fields["contentType"]?.stringValue, size: record.fields["size"]?.intValue)
        return FileInfo(reference: reference, createdAt: record.createdAt, updatedAt: record.updatedAt)
    }

    /// The object holding a file's body: the attachment, the body URL, or the newest file-store entry of the name.
    func locate(_ file: FileReference) async throws -> KiiBodyLocation {
        if let a = file.attachment { return KiiBodyLocation(bucket: try address(a.className), objectID: a.objectId) }
        if let url = file.url, let location = KiiBodyLocation(url: url, configuration: configuration) { return location }
        let files = KiiBucketAddress(bucket: configuration.filesBucket)
        let request = KiiQueryRequest(clause: .eq(field: "name", value: .string(file.name)), orderBy: "_created",
                                      descending: true, bestEffortLimit: 1)
        let page = try await page(bucket: files, className: files.className, request: request)
        guard let id = page.records.first?.id else {
            throw MBaaSError(.notFound, "no Kii file named '\(file.name)' in bucket \(configuration.filesBucket)")
        }
        return KiiBodyLocation(bucket: files, objectID: id)
    }
}
