import Foundation
import MBaaSCore
import Testing
@testable import MBaaSReplay

/// Guards the committed fixtures: no cassette under `Fixtures/Cassettes` (conformance) or `Fixtures/CLICassettes`
/// (CLI end-to-end tests) may contain a secret-looking string.
@Suite struct CassetteSecretScanTests {
    /// `<repo>/Fixtures`, found from this file's path (Tests/MBaaSReplayTests/X.swift -> ../../Fixtures).
    static let fixtures = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")
    static let cassettesDirectory = fixtures.appendingPathComponent("Cassettes")
    static let cassetteDirectories = [cassettesDirectory, fixtures.appendingPathComponent("CLICassettes")]

    @Test(arguments: cassetteDirectories)
    func committedCassettesContainNoSecrets(directory: URL) throws {
        let findings = try SecretScanner.scanCassettes(under: directory)
        #expect(findings.isEmpty, "secret-looking strings in committed cassettes:\n\(findings.map(\.description).joined(separator: "\n"))")
        // Every committed cassette must also load (a broken file is not silently skipped).
        let files = SecretScanner.cassetteFiles(under: directory)
        #expect(!files.isEmpty, "no cassettes found under \(directory.path)")
        for file in files {
            #expect(throws: Never.self, "\(file.lastPathComponent)") { _ = try Cassette.load(from: file) }
        }
    }

    /// A URL's path segments are ids (a `Location` header, a file `url`), scanned one by one like a request path;
    /// its query parameters are still scanned.
    @Test func urlsAreScannedSegmentBySegment() {
        let location = "http://h:8080/parse/classes/Memo_abcd1234/nyGeGTJXKCPpabt1"
        #expect(SecretScanner.scan(string: location, key: "Location", location: "$").isEmpty)
        let leaky = "http://h/download?token=" + String(repeating: "aB3", count: 12)
        #expect(SecretScanner.scan(string: leaky, key: "url", location: "$").map(\.kind) == ["long key"])
        let segment = "http://h/files/" + String(repeating: "0f9e", count: 8)
        #expect(SecretScanner.scan(string: segment, key: "url", location: "$").map(\.kind) == ["long key"])
        // Relative URLs too (Salesforce's Location and nextRecordsUrl): segments, not one 42-character run.
        #expect(SecretScanner.scan(string: "/services/data/v62.0/sobjects/ContentVersion/AQZvWP4xgRnq85jM", key: "Location", location: "$").isEmpty)
        #expect(SecretScanner.scan(string: "/services/data/v62.0/query/01g000000000000001-2000", key: "nextRecordsUrl", location: "$").isEmpty)
        #expect(SecretScanner.scan(string: "/x/" + String(repeating: "0f9e", count: 8), key: "Location", location: "$").map(\.kind) == ["long key"])
        // Elsewhere a leading slash changes nothing.
        #expect(SecretScanner.scan(string: "/" + String(repeating: "aB3", count: 14), key: "note", location: "$").map(\.kind) == ["long key"])
    }

    @Test func missingDirectoryHasNoFindings() throws {
        #expect(try SecretScanner.scanCassettes(under: URL(fileURLWithPath: "/nonexistent/Fixtures/Cassettes")).isEmpty)
    }

    static let planted: [(kind: String, interaction: Interaction)] = [
        ("JWT", interaction("GET", "/me", response: .object(["note": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig"]))),
        ("bearer token", interaction("GET", "/me", headers: [.authorization: "Bearer abcDEF123456ghi"])),
        ("password", interaction("POST", "/login", body: .json(.object(["username": "u", "password": "hunter2"])))),
        ("password", interaction("GET", "/login", query: [("password", "hunter2")])),
        ("password", interaction("POST", "/login", headers: [.contentType: "text/plain"], body: .text(#"{\"password\":\"hunter2\"}"#))),
        ("password", interaction("POST", "/signup", headers: [.contentType: "multipart/form-data; boundary=b"],
                                 body: .multipart([RecordedPart(name: "password", body: .text("hunter2"))]))),
        ("long key", interaction("GET", "/c", headers: HTTPFields([("X-NCMB-Application-Key", String(repeating: "6145f91061916580", count: 4))]))),
        ("long key", interaction("GET", "/c", response: .object(["key": "Xk9fQ2mZ7pL4sR8tV1wY3bN6cH0jD5gK"]))),
    ]

    @Test(arguments: 0..<planted.count)
    func detectorCatchesAPlantedSecret(_ index: Int) throws {
        let (kind, planted) = Self.planted[index]
        let dir = try temporaryDirectory()
        try cassette([interaction("GET", "/ok"), planted]).write(to: dir.appendingPathComponent("test/planted.json"))
        let findings = try SecretScanner.scanCassettes(under: dir)
        #expect(findings.contains { $0.kind == kind && $0.file == "test/planted.json" }, "\(findings)")
        // Findings never print the whole secret.
        #expect(!findings.contains { $0.description.contains("hunter2\"") || $0.description.contains("6145f910619165806145") })
    }

    @Test func ordinaryCassetteContentIsNotFlagged() throws {
        let clean = cassette([
            interaction("GET", "/apps/<APP_ID>/users/b56270b00022-171b-7e11-b35e-0911a10d",
                        query: [("where", #"{"createDate":{"$gte":{"__type":"Date","iso":"2024-03-31T23:59:59.123Z"}}}"#)],
                        headers: HTTPFields([("Authorization", "Bearer <TOKEN_1>"), ("X-Kii-AppID", "<APP_ID>"), ("X-Basic", BasicCredentials.header(for: "<APP_ID>:<APP_KEY>"))]),
                        body: .json(.object(["password": "<USER_PASSWORD>", "id": "123e4567-e89b-12d3-a456-426614174000"])),
                        response: .object(["token_type": "Bearer", "access_token": "<TOKEN_1>",
                                           "name": "replay-application-key", "class": "Memo_abcd1234_attachment_report"])),
            Interaction(request: RecordedRequest(method: "GET", path: "/file"),
                        response: RecordedResponse(status: 200, headers: [.eTag: "\"d41d8cd98f00b204e9800998ecf8427e\""],
                                                   body: .base64(Data((0..<64).map { UInt8($0 * 7 % 256) })))),
        ])
        let findings = SecretScanner.scan(json: clean.json)
        #expect(findings.isEmpty, "\(findings)")
    }

    @Test func recordFieldsNamedSecretAndMultipartBoundariesAreNotCredentials() throws {
        let ordinary = SecretScanner.scan(json: .object([
            "headers": .object(["Content-Type": "multipart/form-data; boundary=Boundary-6145f91061916580c742f806bab67649"]),
            "fields": .object(["secret": "mine"]),
        ]))
        #expect(ordinary.isEmpty, "\(ordinary)")
        let path = SecretScanner.scan(json: .object(["path": "/2013-09-01/classes/Memo/iPXBL5gKRruX1YlB"]))
        #expect(path.isEmpty, "a request path is not a key: \(path)")
        let keyInPath = SecretScanner.scan(json: .object(["path": "/files/6145f91061916580c742f806bab67649d10f4592"]))
        #expect(keyInPath.map(\.kind) == ["long key"], "a key-like path segment is still caught")
        let credential = SecretScanner.scan(json: .object(["secret": "s3cr3t-value-9f8e"]))
        #expect(credential.map(\.kind) == ["password"], "a long value under 'secret' is still a credential")
    }
}
