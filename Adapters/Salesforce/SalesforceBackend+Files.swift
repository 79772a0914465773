public import Foundation
public import MBaaSCore
import MBaaSSalesforceWire

/// Files as ContentVersion records [capture/doc: salesforce.md "Files and describe"]: an upload is
/// `POST /sobjects/ContentVersion {Title, PathOnClient, VersionData:<base64>}` (JSON bodies hold at most 37.5 MB
/// of base64 [doc]). An upload with an attachment is refused as `unsupported` before anything is sent: a neutral
/// attachment goes with its record (deleted with it), which a ContentDocumentLink does not do, so the capability
/// `fileAttachment` is not declared and nothing approximates it. The reference's name is the ContentVersion id;
/// downloads are `GET /sobjects/ContentVersion/{id}/VersionData`, the raw bytes.
extension SalesforceBackend {
    /// The largest file a JSON upload carries (37.5 MB of base64 [doc]).
    static let maxUploadBytes = 37_500_000 / 4 * 3

    public func upload(_ upload: FileUpload) async throws -> FileReference {
        if upload.acl != nil {
            throw MBaaSError.unsupported("file ACLs", by: adapterName, reason: "file access follows the org's sharing of the ContentDocument")
        }
        if upload.attachment != nil {
            throw MBaaSError.unsupported("file attachments", by: adapterName, reason: capabilities.note(for: .fileAttachment))
        }
        let data: Data
        do { data = try upload.source.load() } catch { throw MBaaSError.wrap(error) }
        guard data.count <= Self.maxUploadBytes else {
            throw MBaaSError(.invalidRequest, "'\(upload.name)' is \(data.count) bytes; a Salesforce JSON upload holds at most \(Self.maxUploadBytes)")
        }
        let body: JSONObject = ["Title": .string(upload.name), "PathOnClient": .string(upload.name),
                                "VersionData": .string(data.base64EncodedString())]
        let response = try await send(.post, path(.sobjects("ContentVersion")), body: .object(body))
        let result = try SalesforceSaveResult(json: try json(response))
        guard result.success, let id = result.id else {
            throw SalesforceErrorCodec.error(for: result.errors.first ?? SalesforceErrorItem(message: "the upload was not saved", errorCode: "UNKNOWN_EXCEPTION"),
                                             httpStatus: response.status.code)
        }
        upload.progress?(TransferProgress(completedBytes: Int64(data.count), totalBytes: Int64(data.count)))
        return FileReference(name: id, url: path(.blob("ContentVersion", id: id, field: "VersionData")),
                             contentType: upload.contentType ?? guessContentType(forFileName: upload.name),
                             size: Int64(data.count))
    }

    public func download(_ file: FileReference) async throws -> Data {
        let response = try await send(.get, path(.blob("ContentVersion", id: file.name, field: "VersionData")))
        return response.body
    }

    public func deleteFile(_ file: FileReference) async throws {
        throw MBaaSError.unsupported("deleting files", by: adapterName, reason: capabilities.note(for: .fileDelete))
    }

    public func listFiles(prefix: String?, limit: Int?) async throws -> [FileInfo] {
        throw MBaaSError.unsupported("listing files", by: adapterName, reason: capabilities.note(for: .fileList))
    }
}
