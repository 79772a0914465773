public import Foundation
public import MBaaSCore

/// Writes synthetic NCMB console exports of any size, deterministic for a seed: for benchmarks, soak tests and
/// trying a migration (`mbaas samples ncmb-export --records N --out DIR`).
///
/// The export has the memo app's shape (the same as `Fixtures/Samples/ncmb-memo-export`): `MemoClass.json` with `title`,
/// `money` (ints, some doubles), `comment`, `filename` (for one record in 50, naming a file under `files/`), `due`
/// (a Date), `place` (a GeoPoint for one in 5), `author` (a Pointer to a user), `category` (a Pointer to
/// `Category`), `tags`; `Category.json` (10 records), `user.json` (one user per 100 records, at least 3), `role.json`
/// (`Admins`) with `role-members/Admins.json`, and small files. Class files are written as streams.
public enum NCMBExportSample {
    /// A small deterministic generator (SplitMix64).
    struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func int(_ n: Int) -> Int { Int(next() % UInt64(n)) }
        mutating func id() -> String {
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
            return String(decoding: (0..<16).map { _ in alphabet[int(alphabet.count)] }, as: UTF8.self)
        }
    }

    /// What was written.
    public struct Summary: Sendable {
        public var records: Int
        public var users: Int
        public var categories: Int
        public var files: Int
    }

    /// Writes the export into `directory` (created if needed; existing files of the same names are replaced).
    @discardableResult
    /// `fileEvery`: one record in that many names a file (0: no files).
    public static func write(records: Int, seed: UInt64 = 1, fileEvery: Int = 50, to directory: URL) throws(MBaaSError) -> Summary {
        guard records >= 0 else { throw MBaaSError(.invalidRequest, "--records must be >= 0") }
        var g = Generator(state: seed)
        let fm = FileManager.default
        do {
            try fm.createDirectory(at: directory.appendingPathComponent("files"), withIntermediateDirectories: true)
            try fm.createDirectory(at: directory.appendingPathComponent("role-members"), withIntermediateDirectories: true)
        } catch {
            throw MBaaSError(.localIO, "cannot create \(directory.path): \(MBaaSError.describe(error))")
        }
        let base = Date(timeIntervalSince1970: 1_696_118_400)   // 2023-10-01
        func date(_ offset: Int) -> String { ISO8601.format(base.addingTimeInterval(TimeInterval(offset))) }
        let userCount = max(3, records / 100)
        let users = (0..<userCount).map { _ in g.id() }
        let categories = (0..<10).map { _ in g.id() }
        let fileCount = fileEvery > 0 ? records / fileEvery + (records > 0 ? 1 : 0) : 0

        func stream(_ name: String, count: Int, _ element: (Int, inout Generator) -> JSONObject) throws(MBaaSError) {
            let url = directory.appendingPathComponent(name)
            guard fm.createFile(atPath: url.path, contents: nil) else { throw MBaaSError(.localIO, "cannot create \(url.path)") }
            do {
                let handle = try FileHandle(forWritingTo: url)
                defer { try? handle.close() }
                var text = "{\n  \"results\": [\n"
                for i in 0..<count {
                    text += "    " + JSON.object(element(i, &g)).printed() + (i == count - 1 ? "\n" : ",\n")
                    if text.utf8.count > 1 << 20 { try handle.write(contentsOf: Data(text.utf8)); text = "" }
                }
                text += "  ]\n}\n"
                try handle.write(contentsOf: Data(text.utf8))
            } catch {
                throw MBaaSError(.localIO, "cannot write \(url.path): \(MBaaSError.describe(error))")
            }
        }

        try stream("user.json", count: userCount) { i, _ in
            [
                "objectId": .string(users[i]), "createDate": .string(date(i * 60)), "updateDate": .string(date(i * 60 + 30)),
                "acl": .object(["*": .object(["read": true]), users[i]: .object(["read": true, "write": true])]),
                "userName": .string("user\(i)"), "mailAddress": .string("user\(i)@example.com"), "mailAddressConfirm": .bool(i % 2 == 0),
                "password": .string("not-a-usable-password"), "authData": .null,
            ]
        }
        try stream("role.json", count: 1) { _, _ in
            [
                "objectId": .string("AdminsRole000001"), "createDate": .string(date(0)), "updateDate": .string(date(0)),
                "acl": .object(["*": .object(["read": true])]), "roleName": "Admins",
                "belongUser": .object(["__type": "Relation", "className": "user"]), "belongRole": .null,
            ]
        }
        try stream("role-members/Admins.json", count: 1) { _, _ in ["objectId": .string(users[0]), "userName": "user0"] }
        try stream("Category.json", count: categories.count) { i, _ in
            [
                "objectId": .string(categories[i]), "createDate": .string(date(i)), "updateDate": .string(date(i)),
                "acl": .object(["*": .object(["read": true, "write": true])]), "name": .string("category \(i)"),
            ]
        }
        try stream("MemoClass.json", count: records) { i, g in
            let owner = users[g.int(users.count)]
            var o: JSONObject = [
                "objectId": .string(g.id()), "createDate": .string(date(1000 + i)), "updateDate": .string(date(2000 + i)),
                "title": .string("memo \(i)"),
                "money": i % 7 == 0 ? .double(Double(g.int(100_000)) / 100) : .int(Int64(g.int(10_000))),
                "comment": .string(String(repeating: "note ", count: 1 + g.int(8))),
                "due": .object(["__type": "Date", "iso": .string(date(86_400 * (i % 365)))]),
                "author": .object(["__type": "Pointer", "className": "user", "objectId": .string(owner)]),
                "category": .object(["__type": "Pointer", "className": "Category", "objectId": .string(categories[g.int(categories.count)])]),
                "tags": .array([.string("t\(g.int(5))"), .string("t\(5 + g.int(5))")]),
            ]
            o["acl"] = i % 3 == 0
                ? .object(["*": .object(["read": true, "write": true])])
                : .object(["*": .object(["read": true]), owner: .object(["read": true, "write": true])])
            if i % 5 == 0 {
                o["place"] = .object(["__type": "GeoPoint", "latitude": .double(35 + Double(g.int(1000)) / 1000),
                                      "longitude": .double(139 + Double(g.int(1000)) / 1000)])
            }
            if fileEvery > 0, i % fileEvery == 0 { o["filename"] = .string("photo-\(i / fileEvery).png") }
            return o
        }
        for n in 0..<fileCount {
            var bytes = Data("sample file \(n) ".utf8)
            for _ in 0..<(64 + g.int(512)) { bytes.append(UInt8(truncatingIfNeeded: g.next())) }
            do { try bytes.write(to: directory.appendingPathComponent("files/photo-\(n).png")) } catch {
                throw MBaaSError(.localIO, "cannot write files/photo-\(n).png: \(MBaaSError.describe(error))")
            }
        }
        return Summary(records: records, users: userCount, categories: categories.count, files: fileCount)
    }
}
