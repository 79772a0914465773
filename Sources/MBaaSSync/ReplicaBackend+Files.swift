public import Foundation
public import MBaaSCore

/// Files go to the remote; downloads are cached next to the replica (`<path>-cache/`, mode 0700) and served from
/// the cache when the remote cannot be reached.
///
/// # Contract
/// - An upload attached to a record is `unsupported` (the record may not be on the remote yet).
/// - ``upload(_:)``, ``deleteFile(_:)``, ``listFiles(prefix:limit:)`` and ``fileACL(_:)`` are the remote's (an upload
///   needs the remote: it is not queued yet, see the "Offline and sync" article).
/// - ``download(_:)`` returns the remote's bytes and keeps a copy; when the remote is unreachable (`transport`,
///   `unavailable`), the cached copy, else the remote's error.
/// - Deleting a file drops its cached copy.
extension ReplicaBackend {
    nonisolated var cacheDirectory: URL { URL(fileURLWithPath: path + "-cache") }

    nonisolated func cacheURL(_ file: FileReference) -> URL {
        let key = Data(file.name.utf8).base64EncodedString()
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "+", with: "-")
        return cacheDirectory.appendingPathComponent(key)
    }

    public func upload(_ upload: FileUpload) async throws -> FileReference {
        if let attachment = upload.attachment {
            throw MBaaSError(.unsupported, "attaching '\(upload.name)' to \(attachment.className)/\(attachment.objectId): a replica's records reach the remote on sync; files are not attached to records of a replica yet (upload it to the file store)")
        }
        return try await remote.upload(upload)
    }

    public func download(_ file: FileReference) async throws -> Data {
        do {
            let data = try await remote.download(file)
            try? FileManager.default.createDirectory(at: cacheDirectory, withIntermediateDirectories: true,
                                                     attributes: [.posixPermissions: 0o700])
            try? data.write(to: cacheURL(file), options: .atomic)
            return data
        } catch let e as MBaaSError where e.kind == .transport || e.kind == .unavailable {
            guard let cached = try? Data(contentsOf: cacheURL(file)) else { throw e }
            return cached
        }
    }

    public func deleteFile(_ file: FileReference) async throws {
        try await remote.deleteFile(file)
        try? FileManager.default.removeItem(at: cacheURL(file))
    }

    public func listFiles(prefix: String?, limit: Int?) async throws -> [FileInfo] {
        try await remote.listFiles(prefix: prefix, limit: limit)
    }

    public func fileACL(_ file: FileReference) async throws -> ACL? {
        try await remote.fileACL(file)
    }
}
