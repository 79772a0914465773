public import Foundation
public import MBaaSCore

/// The file store on `/files/{fileName}`: the file name is the key (no prefix is added). An upload under a name
/// with a non-ASCII character is ``MBaaSError/Kind/unsupported`` (NCMB refuses full-width names with E403002, see
/// `checkUploadName`); other operations percent-encode the name in the path (and sign it as encoded).
///
/// - upload: `POST /files/{name}`, `multipart/form-data` with an `acl` part (when an ACL is given) **before** the
///   `file` part → `201 {"fileName","createDate"}`.
/// - download: `GET /files/{name}` → the bytes.
/// - ACL: `PUT /files/{name}` with `{"acl":{…}}` (``updateFileACL(name:acl:)``).
/// - delete: `DELETE /files/{name}`.
/// - list: `GET /files?where=…&order=createDate` → `{"results":[{"fileName","mimeType","fileSize",…}]}`.
///
/// **Attachments.** NCMB has no File type: a record refers to a file by its name in a string field. An upload
/// with ``FileUpload/attachment`` stores the file, then sets that field of the record to the file name; the
/// returned ``FileReference`` carries the attachment. Reading the record back, the field is a plain string (the
/// name): pass `FileReference(name: record["field"].stringValue!, attachment: …)` to ``download(_:)`` or
/// ``deleteFile(_:)`` (which then also clears the field).
extension NCMBBackend {
    public func upload(_ upload: FileUpload) async throws -> FileReference {
        guard !upload.name.isEmpty else { throw MBaaSError(.invalidRequest, "a file needs a name") }
        try Self.checkUploadName(upload.name)
        let data = try upload.source.load()
        let contentType = upload.contentType ?? guessContentType(forFileName: upload.name)
        var parts: [MultipartForm.Part] = []
        if let acl = upload.acl {
            parts.append(MultipartForm.Part(name: "acl", filename: "acl", data: try NCMBCodec.encode(acl).data()))
        }
        parts.append(MultipartForm.Part(name: "file", filename: upload.name, contentType: contentType, data: data))
        let form = MultipartForm(parts: parts, boundary: Self.boundary(avoiding: parts.map(\.data)))
        try checkCancelled()
        let response = try await send(.post, filePath(upload.name), body: .multipart(form),
                                      timeout: configuration.timeout * 4, context: "upload \(upload.name)")
        let created = try NCMBCreated(json: try json(response))
        let storedName = created.extras["fileName"]?.stringValue ?? upload.name
        if Task.isCancelled {
            // The caller gave up: leave no file behind.
            _ = try? await send(.delete, filePath(storedName), context: "delete \(storedName)")
            throw MBaaSError(.transport, "cancelled", underlying: CancellationError())
        }
        upload.progress?(TransferProgress(completedBytes: Int64(data.count), totalBytes: Int64(data.count)))
        var reference = FileReference(name: storedName, contentType: contentType, size: Int64(data.count))
        if let attachment = upload.attachment {
            do {
                _ = try await update(className: attachment.className, id: attachment.objectId,
                                     RecordUpdate(changes: [attachment.field: .set(.string(storedName))]))
            } catch {
                _ = try? await send(.delete, filePath(storedName), context: "delete \(storedName)")
                throw MBaaSError.wrap(error)
            }
            reference.attachment = attachment
        }
        return reference
    }

    public func download(_ file: FileReference) async throws -> Data {
        let response = try await send(.get, filePath(file.name), timeout: configuration.timeout * 4,
                                      context: "download \(file.name)")
        return response.body
    }

    public func deleteFile(_ file: FileReference) async throws {
        _ = try await send(.delete, filePath(file.name), context: "delete file \(file.name)")
        if let a = file.attachment {
            _ = try await update(className: a.className, id: a.objectId, RecordUpdate(changes: [a.field: .delete]))
        }
    }

    /// Lists the file store, oldest first (`order=createDate`), following pages of 1000 until `limit` entries or
    /// the end. `prefix` filters by an anchored `$regex` on `fileName` [sdk: ncmb_js's `File` queries `/files` with
    /// every `Query` method, `regularExpressionTo` (`$regex`) included; a community SDK's test (NCMBMania ncmb_deno,
    /// `file.spec.ts`) filters `fileName` with `$regex` against the service. No official fixture shows it.]
    public func listFiles(prefix: String?, limit: Int?) async throws -> [FileInfo] {
        if let limit, limit < 0 { throw MBaaSError(.invalidRequest, "limit must be >= 0, got \(limit)") }
        var infos: [FileInfo] = []
        var skip = 0
        while limit.map({ infos.count < $0 }) ?? true {
            let pageSize = min(NCMBQuery.maxLimit, limit.map { $0 - infos.count } ?? NCMBQuery.maxLimit)
            var query = NCMBQuery(order: ["createDate"], limit: pageSize, skip: skip == 0 ? nil : skip)
            if let prefix, !prefix.isEmpty {
                query.where_ = NCMBWhere(entries: [
                    .init(key: "fileName", constraint: .operators([.regex("^" + NCMBQueryTranslator.escapeRegex(prefix))]))
                ])
            }
            let results = try await find(className: "file", query)
            for entry in results.results { infos.append(try NCMBFileMetadata(json: .object(entry)).fileInfo) }
            if results.results.count < pageSize { break }
            skip += results.results.count
        }
        return infos
    }

    /// Replaces a file's ACL: `PUT /files/{name}` with `{"acl":{…}}` (not the bare ACL some SDKs sent).
    public func updateFileACL(name: String, acl: ACL) async throws {
        let response = try await send(.put, filePath(name), body: .json(["acl": try NCMBCodec.encode(acl)]),
                                      context: "update file \(name)")
        _ = try NCMBUpdated(json: try json(response))
    }

    /// A fixed, readable multipart boundary (stable requests, stable cassettes), with a counter appended while it
    /// occurs in the content.
    static func boundary(avoiding contents: [Data]) -> String {
        var candidate = "MBaaSKit-NCMB-Boundary"
        var n = 0
        while contents.contains(where: { $0.range(of: Data(candidate.utf8)) != nil }) {
            n += 1
            candidate = "MBaaSKit-NCMB-Boundary-\(n)"
        }
        return candidate
    }

    /// Refuses a file name with a non-ASCII character before anything is sent: [doc] NCMB UserCommunity #1304
    /// (2022-06), uploading "テスト.ZIP" through ncmb_swift gave E403002 and the NCMB answer was that full-width
    /// names may fail and to use ASCII (or Base64-encoded) names; the SDKs even disagree on how such a path is
    /// signed (ncmb_swift signs the decoded path, ncmb_android the encoded one). Names already stored under a
    /// non-ASCII name can still be downloaded, listed and deleted.
    static func checkUploadName(_ name: String) throws(MBaaSError) {
        if let bad = name.unicodeScalars.first(where: { !$0.isASCII }) {
            throw MBaaSError.unsupported(
                "the file name '\(name)' (non-ASCII character U+\(String(bad.value, radix: 16, uppercase: true)))",
                by: "ncmb", reason: NCMBBackend.unicodeFileNamesNote)
        }
    }

    /// `/files/<percent-encoded name>`
    func filePath(_ name: String) -> String { "/files/" + percentEncode(name) }
}

/// `Task.checkCancellation()` throwing an ``MBaaSError`` of kind `transport`.
func checkCancelled() throws(MBaaSError) {
    if Task.isCancelled { throw MBaaSError(.transport, "cancelled", underlying: CancellationError()) }
}
