public import Foundation
public import MBaaSCore

/// Files (reference A9): multipart upload of `entity` (`{"name":...}`) and `file`; the server stores the file
/// under a new name (a UUID prefixed to the name given), which the returned ``FileReference/name`` carries.
/// Downloads send the user token as `?userToken=` (as the docs do, so `<img src>` works) and no `Accept` header:
/// the server produces `application/octet-stream`, and the JS SDK sends none. Files are not linked
/// to data rows (no attachments) and there is no listing endpoint.
extension AppPotBackend {
    public func upload(_ upload: FileUpload) async throws -> FileReference {
        try await store(upload, path: AppPotRoute.files.segments, method: .post)
    }

    /// Replaces a stored file (`PUT files/{name}`); the server answers a new stored name.
    public func replaceFile(_ file: FileReference, with upload: FileUpload) async throws -> FileReference {
        try AppPotBackend.checkFileName(file.name)
        return try await store(upload, path: AppPotRoute.file(file.name).segments, method: .put)
    }

    public func download(_ file: FileReference) async throws -> Data {
        try AppPotBackend.checkFileName(file.name)
        let token = try await token(for: .user)
        var query: [(String, String)] = []
        if let t = token.value { query.append(("userToken", t)) }
        let (response, _) = try await send(.get, AppPotRoute.file(file.name).segments, query: query, token: .none, accept: nil)
        let isJSON = response.headers["Content-Type"]?.lowercased().contains("json") ?? false
        if !response.isSuccess || isJSON {
            if case .failure(let error) = AppPotEnvelope.check(response) {
                _ = try? check(response, token: token)  // ends the session on 120/121
                if response.status == 404 { throw MBaaSError(.notFound, "no AppPot file named \(file.name) (\(error.message))",
                                                              vendorCode: error.vendorCode, httpStatus: 404) }
                throw error
            }
        }
        return response.body
    }

    public func deleteFile(_ file: FileReference) async throws {
        try AppPotBackend.checkFileName(file.name)
        let (response, token) = try await send(.delete, AppPotRoute.file(file.name).segments, token: .user)
        do {
            _ = try check(response, token: token)
        } catch let error as MBaaSError where response.status == 404 {
            throw MBaaSError(.notFound, "no AppPot file named \(file.name) (\(error.message))",
                             vendorCode: error.vendorCode, httpStatus: 404)
        }
    }

    public func listFiles(prefix: String?, limit: Int?) async throws -> [FileInfo] {
        throw MBaaSError.unsupported("listing files", by: adapterName, reason: capabilities.note(for: .fileList))
    }

    func store(_ upload: FileUpload, path: [String], method: TransportRequest.Method) async throws -> FileReference {
        if upload.attachment != nil {
            throw MBaaSError.unsupported("attaching files to records", by: adapterName,
                                         reason: capabilities.note(for: .fileAttachment))
        }
        if upload.acl != nil {
            throw MBaaSError.unsupported("file ACLs", by: adapterName, reason: "AppPot files have no access control of their own")
        }
        try AppPotBackend.checkFileName(upload.name)
        let data = try upload.source.load()
        let contentType = upload.contentType ?? guessContentType(forFileName: upload.name)
        let form = AppPotFileCodec.uploadForm(name: upload.name, data: data, contentType: contentType, boundary: nextBoundary())
        let (_, json) = try await call(method, path, body: .multipart(form), token: .user)
        let stored = try AppPotFileCodec.uploadResult(json)
        upload.progress?(TransferProgress(completedBytes: Int64(data.count), totalBytes: Int64(data.count)))
        return FileReference(name: stored.name, url: stored.url, contentType: contentType, size: Int64(data.count))
    }

    static func checkFileName(_ name: String) throws {
        guard !name.isEmpty else { throw MBaaSError(.invalidRequest, "file name is empty") }
        guard !name.contains("/"), name != ".", name != ".." else {
            throw MBaaSError(.invalidRequest, "AppPot file name '\(name)' must not contain '/' or be '.' or '..'")
        }
    }
}
