public import Foundation

/// A new, empty directory under the system's temporary directory, named `<prefix>-<UUID>`; the caller removes it
/// (`try? FileManager.default.removeItem(at: url)`, usually in a `defer`).
///
/// ```swift
/// let dir = try temporaryDirectory("my-adapter-tests")
/// defer { try? FileManager.default.removeItem(at: dir) }
/// ```
public func temporaryDirectory(_ prefix: String = "mbaas-tests") throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
