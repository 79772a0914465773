public import Foundation
public import MBaaSCore

/// Files. An upload with an attachment goes into that record's file field (a protected single-file column,
/// created on demand); a standalone upload becomes a record of the files collection (`mbaas_files` by default:
/// `file`, `name` (the name asked for), `contentType`, `size`, and the ACL columns, so `FileUpload.acl` is
/// enforced). PocketBase renames every stored file (`photo.png` → `photo_k2j3h4l5m6.png`, non-ASCII names are
/// replaced); ``FileReference/name`` is the stored name. Listing with a prefix finds the files whose stored name or
/// name asked for starts with it.
///
/// Downloads of files on records that are not public need a short-lived file token, which the backend fetches
/// (`POST /api/files/token`) when a user is logged in (or with `data=superuser`).
extension PocketBaseBackend {
    struct FileLocation {
        var collection: String
        var recordId: String
        var filename: String
        /// The field of an attached file; `nil` for the files collection.
        var field: String?
    }

    func fileURL(collection: String, recordId: String, filename: String) -> String {
        configuration.baseURL + PocketBaseWire.filePath(collection: collection, recordId: recordId, filename: filename)
    }

    /// A file token for protected files, reused until 30 seconds before it expires (a token whose expiry cannot
    /// be read is reused until refused); `nil` for guests.
    func fileAccessToken() async throws -> String? {
        guard actsAsSomeone else { return nil }
        let owner = currentSession?.userId ?? "superuser"
        if let cached = fileToken, cached.owner == owner,
           cached.expiresAt.map({ $0.timeIntervalSince(context.now) > 30 }) ?? true {
            return cached.token
        }
        let json = try await sendJSON(.post, "/api/files/token", json: .object([:]), as: .data)
        guard let token = json["token"]?.stringValue else { throw MBaaSError(.decoding, "PocketBase file token response has no token") }
        fileToken = (token, PocketBaseTokenClaims(token: token)?.expiresAt, owner)
        return token
    }

    func locate(_ file: FileReference) async throws -> FileLocation {
        if let a = file.attachment {
            return FileLocation(collection: a.className, recordId: a.objectId, filename: file.name, field: a.field)
        }
        if let url = file.url, let p = PocketBaseWire.parseFilePath(url), p.filename == file.name {
            return FileLocation(collection: p.collection, recordId: p.recordId, filename: p.filename,
                                field: p.collection == configuration.filesCollection ? nil : "")
        }
        let filter = PocketBaseFilter.compare("file", .eq, .text(file.name))
        let list: PocketBaseList
        do {
            list = try PocketBaseList(json: try await sendJSON(
                .get, PocketBaseWire.recordsPath(configuration.filesCollection),
                query: [("page", "1"), ("perPage", "1"), ("skipTotal", "1"), ("filter", filter.text), ("fields", "id,file")],
                as: .data))
        } catch let e as MBaaSError where e.kind == .notFound {
            throw MBaaSError(.notFound, "no file '\(file.name)' (no files collection '\(configuration.filesCollection)')", httpStatus: e.httpStatus)
        }
        guard let id = list.items.first?["id"]?.stringValue else {
            throw MBaaSError(.notFound, "no file '\(file.name)' in '\(configuration.filesCollection)'")
        }
        return FileLocation(collection: configuration.filesCollection, recordId: id, filename: file.name, field: nil)
    }

    // MARK: FileStore

    public func upload(_ upload: FileUpload) async throws -> FileReference {
        guard !upload.name.isEmpty else { throw MBaaSError(.invalidRequest, "a file needs a name") }
        let data = try upload.source.load()
        let contentType = upload.contentType ?? guessContentType(forFileName: upload.name)
        let reference: FileReference
        if let a = upload.attachment {
            if upload.acl != nil {
                throw MBaaSError(.invalidRequest, "an attached file follows the ACL of its record; set the record's ACL instead of FileUpload.acl")
            }
            let schema = try await prepareFileField(className: a.className, field: a.field)
            var payload = JSONObject()
            let tag = PocketBaseWire.tagColumn(for: a.field)
            if schema.map({ $0.hasColumn(tag) }) ?? true { payload[schema?.column(tag) ?? tag] = "File" }
            let form = MultipartForm(parts: [
                .init(name: "@jsonPayload", data: JSON.object(payload).data()),
                .init(name: a.field, filename: upload.name, contentType: contentType, data: data),
            ])
            let json: JSON
            do {
                json = try await sendJSON(.patch, PocketBaseWire.recordsPath(a.className, id: a.objectId), form: form, as: .data)
            } catch let e as MBaaSError where e.kind == .notFound {
                throw await explainNotFound(e, className: a.className, id: a.objectId)
            }
            guard let stored = json[a.field]?.stringValue, !stored.isEmpty else {
                throw MBaaSError(.invalidRequest, "PocketBase did not store the file in '\(a.className).\(a.field)' (is it a file field?)")
            }
            reference = FileReference(
                name: stored, url: fileURL(collection: a.className, recordId: a.objectId, filename: stored),
                contentType: contentType, size: Int64(data.count), attachment: a)
        } else {
            _ = try await prepareFilesCollection()
            var payload: JSONObject = [
                "name": .string(upload.name), "contentType": .string(contentType), "size": .int(Int64(data.count)),
            ]
            for (k, v) in try PocketBaseRecordCodec.aclColumns(upload.acl) { payload[k] = v }
            let form = MultipartForm(parts: [
                .init(name: "@jsonPayload", data: JSON.object(payload).data()),
                .init(name: "file", filename: upload.name, contentType: contentType, data: data),
            ])
            let json: JSON
            do {
                json = try await sendJSON(.post, PocketBaseWire.recordsPath(configuration.filesCollection), form: form, as: .data)
            } catch let e as MBaaSError where e.kind == .notFound {
                throw MBaaSError(.unsupported, "standalone files need the collection '\(configuration.filesCollection)'; open the backend once with superuser credentials to create it", httpStatus: e.httpStatus)
            }
            guard let id = json["id"]?.stringValue, let stored = json["file"]?.stringValue, !stored.isEmpty else {
                throw MBaaSError(.decoding, "PocketBase did not return the stored file")
            }
            reference = FileReference(
                name: stored, url: fileURL(collection: configuration.filesCollection, recordId: id, filename: stored),
                contentType: contentType, size: Int64(data.count))
        }
        upload.progress?(TransferProgress(completedBytes: Int64(data.count), totalBytes: Int64(data.count)))
        return reference
    }

    public func download(_ file: FileReference) async throws -> Data {
        let location = try await locate(file)
        let token = try await fileAccessToken()
        let response = try await send(
            .get, PocketBaseWire.filePath(collection: location.collection, recordId: location.recordId, filename: location.filename),
            query: token.map { [("token", $0)] } ?? [], as: .guest)
        return response.body
    }

    public func deleteFile(_ file: FileReference) async throws {
        let location = try await locate(file)
        guard let field = location.field else {
            do {
                _ = try await send(.delete, PocketBaseWire.recordsPath(location.collection, id: location.recordId), as: .data)
            } catch let e as MBaaSError where e.kind == .notFound {
                throw await explainNotFound(e, className: location.collection, id: location.recordId)
            }
            return
        }
        guard !field.isEmpty else {
            throw MBaaSError(.invalidRequest, "file '\(file.name)' is on a record of '\(location.collection)' but its field is unknown; pass the reference with its attachment")
        }
        let current = try await sendJSON(.get, PocketBaseWire.recordsPath(location.collection, id: location.recordId), as: .data)
        guard current[field]?.stringValue == file.name else {
            throw MBaaSError(.notFound, "no file '\(file.name)' in \(location.collection)/\(location.recordId).\(field)")
        }
        let schema = try await schemaForReading(location.collection)
        var body: JSONObject = [schema?.column(field) ?? field: .null]
        let tag = PocketBaseWire.tagColumn(for: field)
        if current[tag] != nil { body[tag] = "" }
        do {
            _ = try await send(.patch, PocketBaseWire.recordsPath(location.collection, id: location.recordId), json: .object(body), as: .data)
        } catch let e as MBaaSError where e.kind == .notFound {
            throw await explainNotFound(e, className: location.collection, id: location.recordId)
        }
    }

    public func listFiles(prefix: String?, limit: Int?) async throws -> [FileInfo] {
        if let limit, limit <= 0 { return [] }
        let name = configuration.filesCollection
        if configuration.managesSchema, try await definition(name) == nil { return [] }
        var parameters: [(String, String)] = [("sort", "created,@rowid")]
        if let prefix, !prefix.isEmpty {
            // The stored name (what a reference carries, and what the core's prefix is of) or the name asked for.
            let upper = PocketBaseQueryTranslator.successor(of: prefix)
            let starts = ["file", "name"].map { column -> PocketBaseFilter in
                var parts: [PocketBaseFilter] = [.compare(column, .gte, .text(prefix))]
                if let upper { parts.append(.compare(column, .lt, .text(upper))) }
                return .all(parts)
            }
            parameters.append(("filter", PocketBaseFilter.any(starts).text))
        }
        let perPage = min(limit ?? capabilities.maxPageSize, capabilities.maxPageSize)
        var infos: [FileInfo] = []
        var page = 1
        while true {
            let list = try await self.list(name, page: page, perPage: perPage, skipTotal: true, parameters)
            for item in list.items {
                guard let id = item["id"]?.stringValue, let stored = item["file"]?.stringValue, !stored.isEmpty else { continue }
                infos.append(FileInfo(
                    reference: FileReference(
                        name: stored, url: fileURL(collection: name, recordId: id, filename: stored),
                        contentType: item["contentType"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 },
                        size: item["size"]?.intValue),
                    createdAt: item["created"]?.stringValue.flatMap(PocketBaseWire.parseDate),
                    updatedAt: item["updated"]?.stringValue.flatMap(PocketBaseWire.parseDate),
                    acl: try PocketBaseRecordCodec.acl(from: item)))
                if let limit, infos.count >= limit { return infos }
            }
            if list.items.count < perPage { return infos }
            page += 1
        }
    }
}
