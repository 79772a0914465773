public import Foundation
public import MBaaSCore

/// Files on `/files/{name}`.
///
/// - upload: `POST /files/{name}` with the raw bytes and their `Content-Type` → `201`, `Location` and
///   `{"url","name"}`; Parse Server stores the file as `<32 hex>_<name>`: the returned ``FileReference`` carries
///   that stored name and the url. Names Parse refuses (non-ASCII, or outside `^[_a-zA-Z0-9][a-zA-Z0-9@. ~_-]*$`)
///   are ``MBaaSError/Kind/unsupported`` before sending. An ACL on the upload is refused (Parse files have none).
/// - attachment: the record's field is set to `{"__type":"File","name","url"}` after the upload.
/// - download: `GET` of the file's url (built as `{base}{mount}/files/{applicationId}/{name}` when the reference
///   has none). Parse headers are sent only when the url is on the configured server.
/// - delete: `DELETE /files/{name}` with the master key (``ParseConfiguration/masterKey``); without it
///   ``MBaaSError/Kind/unsupported``. An attachment's field is then removed (`Delete`).
/// - list: Parse has no listing (``Capabilities/Feature/fileList`` not declared).
extension ParseBackend {
    public func upload(_ upload: FileUpload) async throws -> FileReference {
        guard !upload.name.isEmpty else { throw MBaaSError(.invalidRequest, "a file needs a name") }
        guard ParseWire.isValidFileName(upload.name) else {
            throw MBaaSError.unsupported("the file name '\(upload.name)'", by: "parse", reason: ParseWire.unicodeFileNamesNote)
        }
        if upload.acl != nil {
            throw MBaaSError.unsupported("file ACLs", by: "parse", reason: "Parse files have no ACL; protect the object that refers to the file")
        }
        let data = try upload.source.load()
        let contentType = upload.contentType ?? guessContentType(forFileName: upload.name)
        try checkCancelled()
        let response = try await send(.post, ParseRoute.file(upload.name).path, body: .raw(data, contentType: contentType),
                                      timeout: configuration.timeout * 4, context: "upload \(upload.name)")
        let created = try ParseFileCreated(json: try json(response))
        upload.progress?(TransferProgress(completedBytes: Int64(data.count), totalBytes: Int64(data.count)))
        var reference = FileReference(name: created.name, url: created.url, contentType: contentType, size: Int64(data.count))
        if let attachment = upload.attachment {
            _ = try await update(className: attachment.className, id: attachment.objectId,
                                 RecordUpdate(changes: [attachment.field: .set(.file(FileReference(name: created.name, url: created.url)))]))
            reference.attachment = attachment
        }
        return reference
    }

    /// The url a file is downloaded from.
    func fileURL(_ file: FileReference) -> String {
        if let url = file.url, !url.isEmpty { return url }
        return configuration.baseURL + configuration.mount + "/files/" + percentEncode(configuration.applicationId)
            + "/" + percentEncode(file.name)
    }

    public func download(_ file: FileReference) async throws -> Data {
        let text = fileURL(file)
        guard let url = URL(string: text) else { throw MBaaSError(.invalidRequest, "not a file url: \(text)") }
        var request = TransportRequest(method: .get, url: url, timeout: configuration.timeout * 4)
        if text.hasPrefix(configuration.baseURL + configuration.mount + "/") {
            request.headers[ParseHeader.applicationId] = configuration.applicationId
        }
        let response: TransportResponse
        do { response = try await context.transport.send(request) } catch {
            let e = MBaaSError.wrap(error)
            if e.kind == .transport || e.kind == .internal {
                throw MBaaSError(.transport, "download \(file.name): \(e.message)", underlying: e)
            }
            throw e
        }
        guard response.isSuccess else {
            throw ParseErrorBody.error(from: response, now: context.now, context: "download \(file.name)")
        }
        return response.body
    }

    public func deleteFile(_ file: FileReference) async throws {
        _ = try await send(.delete, ParseRoute.file(file.name).path, as: .master, context: "delete file \(file.name)")
        if let a = file.attachment {
            _ = try await update(className: a.className, id: a.objectId, RecordUpdate(changes: [a.field: .delete]))
        }
    }

    public func listFiles(prefix: String?, limit: Int?) async throws -> [FileInfo] {
        throw MBaaSError.unsupported("listing files", by: "parse", reason: capabilities.note(for: .fileList))
    }
}
