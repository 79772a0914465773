public import Foundation

/// Every entry below a folder (recursively, by relative path) with each file's bytes, a folder as `<dir>`: what a
/// test compares to prove a command left a folder untouched.
///
/// ```swift
/// let before = try folderSnapshot(export)
/// // ... a command that must refuse to write there ...
/// #expect(try folderSnapshot(export) == before)
/// ```
/// A missing folder is an empty snapshot.
public func folderSnapshot(_ folder: URL) throws -> [String: Data] {
    var out: [String: Data] = [:]
    let fm = FileManager.default
    guard let walker = fm.enumerator(atPath: folder.path) else { return out }
    for case let rel as String in walker {
        var isDirectory: ObjCBool = false
        _ = fm.fileExists(atPath: folder.appendingPathComponent(rel).path, isDirectory: &isDirectory)
        out[rel] = isDirectory.boolValue ? Data("<dir>".utf8) : try Data(contentsOf: folder.appendingPathComponent(rel))
    }
    return out
}
