public import Foundation

/// Where the bytes of an upload come from.
public enum FileSource: Sendable, Hashable {
    case data(Data)
    /// A local file, read by the adapter (streamed where the backend allows).
    case url(URL)

    /// The bytes, reading the file when the source is a URL.
    public func load() throws -> Data {
        switch self {
        case .data(let d): return d
        case .url(let u):
            do { return try Data(contentsOf: u) } catch {
                throw MBaaSError(.localIO, "cannot read \(u.path): \(MBaaSError.describe(error))")
            }
        }
    }
}

/// Progress of a transfer: bytes done so far and, when known, in all.
public struct TransferProgress: Sendable, Hashable {
    public var completedBytes: Int64
    public var totalBytes: Int64?
    public init(completedBytes: Int64, totalBytes: Int64?) {
        self.completedBytes = completedBytes
        self.totalBytes = totalBytes
    }
    public var fractionCompleted: Double? {
        guard let totalBytes, totalBytes > 0 else { return nil }
        return Double(completedBytes) / Double(totalBytes)
    }
}

/// A request to store a file.
public struct FileUpload: Sendable {
    /// The name asked for; the backend may store it under another (see ``FileReference/name``).
    public var name: String
    public var source: FileSource
    public var contentType: String?
    public var acl: ACL?
    /// When set, attach the file to this record's field in the backend's own way (a file field of the record,
    /// the body of an object, or a file-store entry whose name the field then holds).
    public var attachment: FileAttachment?
    /// Called with progress, at least once at the end. May be called on any task.
    public var progress: (@Sendable (TransferProgress) -> Void)?

    public init(
        name: String, source: FileSource, contentType: String? = nil, acl: ACL? = nil,
        attachment: FileAttachment? = nil, progress: (@Sendable (TransferProgress) -> Void)? = nil
    ) {
        self.name = name
        self.source = source
        self.contentType = contentType
        self.acl = acl
        self.attachment = attachment
        self.progress = progress
    }
}

/// Metadata of a stored file, as listed.
public struct FileInfo: Sendable, Hashable {
    public var reference: FileReference
    public var createdAt: Date?
    public var updatedAt: Date?
    public var acl: ACL?
    public init(reference: FileReference, createdAt: Date? = nil, updatedAt: Date? = nil, acl: ACL? = nil) {
        self.reference = reference
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.acl = acl
    }
}

/// Stores files, separately or attached to records.
///
/// Every method throws ``MBaaSError`` only.
///
/// # Contract
/// - ``upload(_:)`` stores the bytes and returns a ``FileReference`` usable with ``download(_:)`` and
///   ``deleteFile(_:)``. With an `attachment` the record's field refers to the file afterwards (a `File` value,
///   or the vendor's own link), and the returned reference carries the attachment. File names may be any
///   Unicode; adapters percent-encode them on the wire. On a backend with ``Capabilities/Feature/fileNames`` an
///   upload under a name that exists in the separate store is ``MBaaSError/Kind/duplicate`` (delete it first): the
///   stored bytes never change silently. Cancelling the task cancels the upload and leaves no
///   file behind where the backend allows it. A backend without ``Capabilities/Feature/files`` (or
///   ``Capabilities/Feature/fileAttachment`` for attachments) throws `unsupported`.
/// - ``download(_:)`` returns the bytes exactly as uploaded; a missing file is ``MBaaSError/Kind/notFound``.
///   ``download(_:into:progress:)`` hands them over in chunks as they arrive, so a large file need not fit in
///   memory (adapters that can stream implement it; the default downloads the whole file, then hands it over
///   as one chunk). An error thrown by `write` stops the download and is rethrown.
/// - ``deleteFile(_:)`` removes the file (and clears an attachment's field); missing is `notFound`.
/// - ``listFiles(prefix:limit:)`` lists the separate store, newest last; `unsupported` without
///   ``Capabilities/Feature/fileList``. `prefix` is of ``FileReference/name``, the name the store keeps; a store
///   that renames what it stores may also match the name a file was uploaded as (an adapter says so), so a caller that
///   needs exact prefixes filters the list.
/// - ``fileACL(_:)`` reads one file of the separate store's ACL (`nil`: the file has none); `notFound` for a missing
///   file, `unsupported` without ``Capabilities/Feature/fileACLRead`` (the default implementation).
public protocol FileStore: Sendable {
    func upload(_ upload: FileUpload) async throws -> FileReference
    func download(_ file: FileReference) async throws -> Data
    func download(_ file: FileReference, into write: @Sendable (Data) throws -> Void,
                  progress: (@Sendable (TransferProgress) -> Void)?) async throws
    func deleteFile(_ file: FileReference) async throws
    func listFiles(prefix: String?, limit: Int?) async throws -> [FileInfo]
    func fileACL(_ file: FileReference) async throws -> ACL?
}

extension FileStore {
    /// Uploads bytes under a name.
    public func upload(_ data: Data, name: String, contentType: String? = nil) async throws -> FileReference {
        try await upload(FileUpload(name: name, source: .data(data), contentType: contentType))
    }

    /// The whole file, then one call of `write` (for stores that cannot stream).
    public func download(_ file: FileReference, into write: @Sendable (Data) throws -> Void,
                         progress: (@Sendable (TransferProgress) -> Void)?) async throws {
        let data = try await download(file)
        try write(data)
        progress?(TransferProgress(completedBytes: Int64(data.count), totalBytes: Int64(data.count)))
    }

    /// `unsupported`: a store that reads one file's ACL declares ``Capabilities/Feature/fileACLRead`` and implements
    /// this.
    public func fileACL(_ file: FileReference) async throws -> ACL? {
        throw MBaaSError(.unsupported, "reading the ACL of the file '\(file.name)' on its own is not supported by this store")
    }

    /// Downloads a file by name (for stores addressed by name).
    public func download(name: String) async throws -> Data { try await download(FileReference(name: name)) }
}

/// Guesses a content type from a file name's extension; `application/octet-stream` when unknown.
public func guessContentType(forFileName name: String) -> String {
    let ext = (name as NSString).pathExtension.lowercased()
    return [
        "txt": "text/plain", "json": "application/json", "png": "image/png", "jpg": "image/jpeg",
        "jpeg": "image/jpeg", "gif": "image/gif", "pdf": "application/pdf", "csv": "text/csv",
        "html": "text/html", "xml": "application/xml", "zip": "application/zip", "mp4": "video/mp4",
    ][ext] ?? "application/octet-stream"
}
