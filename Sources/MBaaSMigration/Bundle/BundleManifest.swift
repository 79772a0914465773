import Crypto
public import Foundation
public import MBaaSCore

/// `manifest.json` of a bundle: what it holds and how to check it.
///
/// ```json
/// {"formatVersion":1,"source":"ncmb-export:memo","createdAt":"2026-11-23T10:00:00.000Z",
///  "classes":[{"name":"Memo","count":12,"sha256":"<hex of records/Memo.ndjson>"}],"users":3,"roles":1,"files":4}
/// ```
/// A reader refuses a newer `formatVersion` than it knows; a class file whose bytes do not match `sha256` is damaged.
public struct BundleManifest: Sendable, Hashable {
    public struct ClassEntry: Sendable, Hashable {
        public var name: String
        public var count: Int
        /// SHA-256 (hex) of the class's `records/<name>.ndjson`.
        public var sha256: String
    }

    /// The format this version of MBaaSKit writes and reads.
    public static let currentVersion = 1

    public var formatVersion: Int
    public var source: String
    public var createdAt: Date
    public var classes: [ClassEntry]
    public var users: Int
    public var roles: Int
    public var files: Int

    public var json: JSON {
        .object([
            "formatVersion": .int(Int64(formatVersion)), "source": .string(source), "createdAt": .string(ISO8601.format(createdAt)),
            "classes": .array(classes.map { .object(["name": .string($0.name), "count": .int(Int64($0.count)), "sha256": .string($0.sha256)]) }),
            "users": .int(Int64(users)), "roles": .int(Int64(roles)), "files": .int(Int64(files)),
        ])
    }

    public init(formatVersion: Int, source: String, createdAt: Date, classes: [ClassEntry], users: Int, roles: Int, files: Int) {
        self.formatVersion = formatVersion
        self.source = source
        self.createdAt = createdAt
        self.classes = classes
        self.users = users
        self.roles = roles
        self.files = files
    }

    public init(json: JSON) throws(MBaaSError) {
        func fail(_ m: String) -> MBaaSError { MBaaSError(.decoding, "manifest.json: \(m)") }
        guard let o = json.objectValue else { throw fail("must be a JSON object") }
        guard let v = o["formatVersion"]?.intValue else { throw fail("formatVersion is missing") }
        guard v <= Self.currentVersion, v >= 1 else {
            throw fail("formatVersion \(v) is newer than this MBaaSKit reads (\(Self.currentVersion)); update MBaaSKit")
        }
        guard let created = o["createdAt"]?.stringValue.flatMap(ISO8601.parse) else { throw fail("createdAt must be an ISO-8601 string") }
        guard let list = o["classes"]?.arrayValue else { throw fail("classes must be an array") }
        var classes: [ClassEntry] = []
        for (i, c) in list.enumerated() {
            guard let co = c.objectValue, let name = co["name"]?.stringValue, let count = co["count"]?.intValue, let sha = co["sha256"]?.stringValue else {
                throw fail("classes[\(i)] needs name, count and sha256")
            }
            classes.append(ClassEntry(name: name, count: Int(count), sha256: sha))
        }
        self.init(formatVersion: Int(v), source: o["source"]?.stringValue ?? "", createdAt: created, classes: classes,
                  users: Int(o["users"]?.intValue ?? 0), roles: Int(o["roles"]?.intValue ?? 0), files: Int(o["files"]?.intValue ?? 0))
    }

    static func read(_ url: URL) throws(MBaaSError) -> BundleManifest {
        do { return try BundleManifest(json: JSON.parse(Data(contentsOf: url))) } catch let e as MBaaSError { throw e } catch {
            throw MBaaSError(.decoding, "manifest.json: \(error)")
        }
    }

    /// Writes the manifest atomically (0600).
    func write(_ url: URL) throws(MBaaSError) {
        do {
            try json.data([.pretty, .sortedKeys]).write(to: url, options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
        } catch {
            throw MBaaSError(.localIO, "cannot write \(url.path): \(MBaaSError.describe(error))")
        }
    }

    /// The number of non-empty lines and the SHA-256 of a file (0 and the hash of nothing when it is missing), read
    /// in chunks.
    static func checksum(_ url: URL) throws(MBaaSError) -> (Int, String) {
        var hasher = SHA256()
        var lines = 0
        guard let handle = try? FileHandle(forReadingFrom: url) else {
            return (0, hasher.finalize().lowercaseHex)
        }
        defer { try? handle.close() }
        var lastWasNewline = true
        do {
            while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
                hasher.update(data: chunk)
                for b in chunk {
                    if b == 0x0A { if !lastWasNewline { lines += 1 }; lastWasNewline = true } else { lastWasNewline = false }
                }
            }
        } catch {
            throw MBaaSError(.localIO, "cannot read \(url.path): \(MBaaSError.describe(error))")
        }
        if !lastWasNewline { lines += 1 }
        return (lines, hasher.finalize().lowercaseHex)
    }

    /// Checks every class file against its count and checksum; a damaged bundle is `decoding` naming the file.
    public func check(directory: URL) throws(MBaaSError) {
        for c in classes {
            let (count, sha) = try Self.checksum(directory.appendingPathComponent("records/\(c.name).ndjson"))
            guard count == c.count, sha == c.sha256 else {
                throw MBaaSError(.decoding, "bundle \(directory.path): records/\(c.name).ndjson has \(count) records with sha256 \(sha.prefix(12))…, the manifest says \(c.count) with \(c.sha256.prefix(12))… (the bundle is damaged or was changed)")
            }
        }
    }
}

/// One line of `files/index.ndjson`: a file's name, size, sha256 (its blob is `files/blobs/<sha256>`), content type,
/// ACL and the records that link to it.
public struct BundleFileEntry: Sendable, Hashable {
    public struct Link: Sendable, Hashable {
        public var className: String
        public var id: String
        public var field: String
    }

    public var name: String
    public var size: Int64?
    public var sha256: String?
    public var contentType: String?
    public var acl: ACL?
    public var linkedBy: [Link] = []

    public init(name: String, size: Int64? = nil, sha256: String? = nil, contentType: String? = nil, acl: ACL? = nil) {
        self.name = name
        self.size = size
        self.sha256 = sha256
        self.contentType = contentType
        self.acl = acl
    }

    var reference: FileReference { FileReference(name: name, contentType: contentType, size: size) }

    public var json: JSON {
        var o: JSONObject = ["name": .string(name)]
        if let size { o["size"] = .int(size) }
        if let sha256 { o["sha256"] = .string(sha256) }
        if let contentType { o["contentType"] = .string(contentType) }
        if let acl { o["acl"] = acl.json }
        o["linkedBy"] = .array(linkedBy.map { .object(["class": .string($0.className), "id": .string($0.id), "field": .string($0.field)]) })
        return .object(o)
    }

    public init(json: JSON) throws(MBaaSError) {
        guard let o = json.objectValue, let name = o["name"]?.stringValue, !name.isEmpty else {
            throw MBaaSError(.decoding, "a file entry needs a name")
        }
        // The bundle's file index keys entries by name in SQLite, where a NUL would merge two files into one.
        guard !name.utf8.contains(0) else {
            throw MBaaSError(.decoding, "file entry '\(name.replacingOccurrences(of: "\u{0}", with: "\\u0000"))': a file name holds NUL (U+0000)")
        }
        self.init(name: name, size: o["size"]?.intValue, sha256: o["sha256"]?.stringValue, contentType: o["contentType"]?.stringValue,
                  acl: try o["acl"].flatMap { a throws(MBaaSError) in a.isNull ? nil : try ACL(json: a) })
        for l in o["linkedBy"]?.arrayValue ?? [] {
            guard let lo = l.objectValue, let c = lo["class"]?.stringValue, let id = lo["id"]?.stringValue, let f = lo["field"]?.stringValue else {
                throw MBaaSError(.decoding, "file \(name): each linkedBy entry needs class, id and field")
            }
            guard !id.utf8.contains(0), !c.utf8.contains(0), !f.utf8.contains(0) else {
                throw MBaaSError(.decoding, "file \(name): a linkedBy entry holds NUL (U+0000)")
            }
            linkedBy.append(Link(className: c, id: id, field: f))
        }
    }

    /// Takes the other line's facts where this one lacks them, and its links.
    mutating func merge(_ other: BundleFileEntry) {
        size = size ?? other.size
        sha256 = sha256 ?? other.sha256
        contentType = contentType ?? other.contentType
        acl = acl ?? other.acl
        for l in other.linkedBy where !linkedBy.contains(l) { linkedBy.append(l) }
    }
}
