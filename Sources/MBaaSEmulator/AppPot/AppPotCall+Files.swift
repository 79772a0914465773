import Foundation
import MBaaSAppPotWire
import MBaaSCore

/// Files (reference A9): `POST files`, `PUT files/{old}`, `GET files/{name}?userToken=`, `DELETE files/{name}`.
///
/// Stored in the store's file area under the name the upload answers, `{uuid}_{name}` [doc A9], public to every
/// user of the app (AppPot files have no scope; the token is still required) [inferred].
extension AppPotCall {
    /// 600 "File not found" at HTTP 404 [inferred].
    static func fileNotFound() -> MBaaSError {
        MBaaSError(.notFound, "File not found", vendorCode: "600", httpStatus: 404)
    }

    /// A name that could leave the file area or confuse a path (`/`, `\`, `..`, control characters, empty, over 255
    /// characters) is errCode 601 at HTTP 400 [inferred code: the file API's 601 is undocumented].
    static func checkFileName(_ name: String) throws {
        if name.isEmpty || name.count > 255 || name == "." || name.contains("..") || name.contains("/") || name.contains("\\")
            || name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw MBaaSError(.invalidRequest, "Invalid file name", vendorCode: "601", httpStatus: 400)
        }
    }

    /// `POST files` (or `PUT files/{old}`, which replaces `old`): multipart `entity` (`{"name":…}`) and `file`;
    /// answers `{"results":{"name":"{uuid}_{name}","url":…}}` [doc A9].
    func upload(_ caller: Caller, replacing old: String?) async throws -> TransportResponse {
        guard let body = request.body, let type = request.headers["Content-Type"], type.lowercased().hasPrefix("multipart/form-data") else {
            throw MBaaSError(.invalidRequest, "Input parameters are required (multipart entity and file)", vendorCode: "198")
        }
        let form: MultipartForm
        do { form = try MultipartForm.decode(body, contentType: type) } catch {
            throw Self.invalid("the multipart body cannot be read")
        }
        guard let file = form.part(named: "file") else {
            throw MBaaSError(.invalidRequest, "Input parameters are required (file)", vendorCode: "198")
        }
        guard file.data.count <= dialect.configuration.maxFileSize else {
            throw MBaaSError(.invalidRequest, "Input data not valid: the file is larger than \(dialect.configuration.maxFileSize) bytes",
                             vendorCode: "109", httpStatus: 413)
        }
        let entity = form.part(named: "entity").flatMap { try? JSON.parse($0.data) }
        guard let name = entity?["name"]?.stringValue ?? file.filename, !name.isEmpty else {
            throw MBaaSError(.invalidRequest, "Input parameters are required (entity name)", vendorCode: "198")
        }
        try Self.checkFileName(name)
        if let old {
            try Self.checkFileName(old)
            do { try await caller.backend.deleteFile(FileReference(name: old)) } catch let e as MBaaSError where e.kind == .notFound {
                throw Self.fileNotFound()
            }
        }
        let stored = UUID().uuidString.lowercased() + "_" + name
        _ = try await caller.backend.upload(FileUpload(name: stored, source: .data(file.data),
                                                       contentType: file.contentType, acl: .publicReadWrite))
        return Self.json(AppPotFileCodec.uploadResponse(name: stored, url: fileURL(stored)))
    }

    /// `http://host:port/{contextRoot}/api/files/{name}`, the docs' sample form [doc A9].
    func fileURL(_ name: String) -> String? {
        let text = request.url.absoluteString
        guard let scheme = text.range(of: "://") else { return nil }
        let afterScheme = text[scheme.upperBound...]
        let host = afterScheme.prefix { $0 != "/" && $0 != "?" }
        return "\(text[..<scheme.upperBound])\(host)/\(dialect.configuration.contextRoot)/api/files/\(percentEncode(name))"
    }

    /// `GET files/{name}?userToken=`: the bytes as `application/octet-stream` [doc A9].
    func download(_ caller: Caller, _ name: String) async throws -> TransportResponse {
        try Self.checkFileName(name)
        let data: Data
        do { data = try await caller.backend.download(FileReference(name: name)) } catch let e as MBaaSError where e.kind == .notFound {
            throw Self.fileNotFound()
        }
        var headers: HTTPFields = [.contentType: "application/octet-stream"]
        if let as_ = query("asFilename"), !as_.isEmpty {
            headers["Content-Disposition"] = "attachment; filename*=UTF-8''\(percentEncode(as_))"
        }
        return TransportResponse(status: 200, headers: headers, body: data)
    }

    /// `DELETE files/{name}` [doc A9].
    func deleteFile(_ caller: Caller, _ name: String) async throws -> TransportResponse {
        try Self.checkFileName(name)
        do { try await caller.backend.deleteFile(FileReference(name: name)) } catch let e as MBaaSError where e.kind == .notFound {
            throw Self.fileNotFound()
        }
        return Self.ok()
    }
}
