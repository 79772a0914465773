import Foundation
import MBaaSCore
import Testing
@testable import MBaaSReplay

@Suite struct CassetteFormatTests {
    func sample() -> Cassette {
        let form = MultipartForm(parts: [
            .text("acl", #"{"*":{"read":true}}"#),
            MultipartForm.Part(name: "file", filename: "a.png", contentType: "image/png", data: Data([0x89, 0x50, 0x00, 0xFF])),
        ], boundary: "XyZ")
        return Cassette(
            name: "files.upload.basic", adapter: "ncmb",
            provenance: Provenance(kind: .authored, server: "NCMB", serverVersion: "2013-09-01",
                                   facts: ["ncmb.md §1.2 create returns 201"], notes: "hand-written"),
            recordedAt: fixedDate, backendURL: "ncmb://<APPLICATION_KEY>:<CLIENT_KEY>@mbaas.example.com",
            variables: ["run": "abcd1234", "alpha": "z"],
            interactions: [
                Interaction(
                    request: RecordedRequest(method: "post", path: "/2013-09-01/files/a.png",
                                             query: [("where", #"{"b":2,"a":[1,2.5]}"#), ("limit", "2")],
                                             headers: HTTPFields([("Content-Type", form.contentType), ("X-NCMB-Application-Key", "<APPLICATION_KEY>")]),
                                             pinnedHeaders: ["X-NCMB-Signature"],
                                             body: RecordedBody.from(data: form.encoded(), contentType: form.contentType)),
                    response: RecordedResponse(status: 201, headers: [.contentType: "application/json"],
                                               body: .json(.object(["z": 1, "a": 1.0, "n": .null]))),
                    fact: "ncmb.md §3 upload"),
                Interaction(request: RecordedRequest(method: "GET", path: "/x"),
                            response: RecordedResponse(status: 200, headers: [.contentType: "text/plain"], body: .text("héllo\n"))),
                Interaction(request: RecordedRequest(method: "GET", path: "/bin"),
                            response: RecordedResponse(status: 200, body: .base64(Data([0, 1, 2, 0xFE])))),
            ])
    }

    @Test func roundTripsThroughJSONAndFile() throws {
        let c = sample()
        #expect(try Cassette(json: c.json) == c)
        let dir = try temporaryDirectory()
        let url = dir.appendingPathComponent("ncmb/files.upload.basic.json")
        try c.write(to: url)
        // Placeholders stay in the file; load without substitution keeps structure, with default dummies.
        let loaded = try Cassette.load(from: url)
        #expect(loaded.interactions.count == 3)
        #expect(loaded.recordedAt == c.recordedAt)
        #expect(loaded.backendURL == "ncmb://replay-application-key:replay-client-key@mbaas.example.com")
        #expect(loaded.variables == ["run": "abcd1234", "alpha": "z"])
        #expect(loaded.provenance == c.provenance)
        #expect(loaded.interactions[0].fact == "ncmb.md §3 upload")
    }

    @Test func outputIsPrettyDeterministicAndOrdered() throws {
        let text = String(decoding: sample().fileData, as: UTF8.self)
        #expect(text.hasSuffix("}\n"))
        #expect(sample().fileData == sample().fileData)
        let order = ["\"formatVersion\"", "\"name\"", "\"adapter\"", "\"provenance\"", "\"recordedAt\"", "\"backendURL\"",
                     "\"variables\"", "\"interactions\""].map { text.range(of: $0)!.lowerBound }
        #expect(order == order.sorted())
        #expect(text.contains("\"recordedAt\": \"2024-04-01T00:00:00.123Z\""))
        // Variables sorted; JSON body keeps key order and int/double.
        #expect(text.range(of: "\"alpha\"")!.lowerBound < text.range(of: "\"run\"")!.lowerBound)
        #expect(text.contains("\"z\": 1,\n") && text.contains("\"a\": 1.0"))
        // A JSON-valued query parameter is stored as JSON when lossless.
        #expect(text.contains("\"json\": {"))
    }

    @Test func bodiesAreStoredInTheirReadableForm() throws {
        let c = sample()
        guard case .multipart(let parts) = c.interactions[0].request.body else { Issue.record("not multipart"); return }
        #expect(parts.map(\.name) == ["acl", "file"])
        #expect(parts[0].body == .text(#"{"*":{"read":true}}"#))
        #expect(parts[1].body == .base64(Data([0x89, 0x50, 0x00, 0xFF])))
        #expect(parts[1].filename == "a.png" && parts[1].contentType == "image/png")
        #expect(RecordedBody.from(data: Data(#"{"b": 1, "a": 2.0}"#.utf8), contentType: "application/json; charset=utf-8")
            == .json(.object(JSONObject([("b", .int(1)), ("a", .double(2))]))))
        #expect(RecordedBody.from(data: Data("{}".utf8), contentType: "application/vnd.kii.UserRegistrationRequest+json") == .json(.object([:])))
        #expect(RecordedBody.from(data: Data("not json".utf8), contentType: "application/json") == .text("not json"))
        #expect(RecordedBody.from(data: Data([0xC3, 0x28]), contentType: "text/plain") == .base64(Data([0xC3, 0x28])))
        #expect(RecordedBody.from(data: Data(), contentType: "application/json") == RecordedBody.none)
        // Multipart re-encodes with a new boundary and decodes back to the same parts.
        let data = c.interactions[0].request.body.data(boundary: "other")
        let decoded = try MultipartForm.decode(data, contentType: "multipart/form-data; boundary=other")
        #expect(decoded.parts[1].data == Data([0x89, 0x50, 0x00, 0xFF]))
        #expect(c.interactions[2].response.httpResponse.body == Data([0, 1, 2, 0xFE]))
    }

    @Test func substitutionReachesEveryPlace() throws {
        var c = cassette([
            interaction("GET", "/apps/<APP_ID>/users", query: [("token", "<TOKEN_1>")],
                        headers: HTTPFields([("X-Key", "<APP_KEY>"), ("Authorization", BasicCredentials.header(for: "<APP_ID>:<APP_KEY>"))]),
                        body: .text("password=<PASSWORD_1>&x=1"), response: .object(["sessionToken": "<TOKEN_1>"])),
        ])
        c.interactions[0].request.headers["Content-Type"] = "application/x-www-form-urlencoded"
        c.variables = ["who": "<APP_ID>"]
        #expect(c.placeholders == ["<APP_ID>", "<APP_KEY>", "<PASSWORD_1>", "<TOKEN_1>"])
        let s = c.substituting(["APP_ID": "my app", "<PASSWORD_1>": "p w"])
        let r = s.interactions[0].request
        #expect(r.path == "/apps/my%20app/users")
        #expect(r.query[0].value == "replay-token-1")
        #expect(r.headers["X-Key"] == "replay-app-key")
        #expect(BasicCredentials(header: r.headers["Authorization"]!)?.decoded == "my app:replay-app-key")
        #expect(r.body == .text("password=p+w&x=1"))
        #expect(s.interactions[0].response.body == .json(.object(["sessionToken": "replay-token-1"])))
        #expect(s.backendURL == "test://replay-app-key@example.com")
        #expect(s.variables["who"] == "my app")
        #expect(s.placeholders.isEmpty)
        #expect(Cassette.dummyValue(forPlaceholder: "<APPLICATION_KEY>") == "replay-application-key")
    }

    @Test func rejectsNewerVersionsAndNamesBadFields() throws {
        var json = sample().json.objectValue!
        json["formatVersion"] = 2
        let newer = #expect(throws: MBaaSError.self) { try Cassette(json: .object(json)) }
        #expect(newer?.message.contains("version 2 is not supported") == true)
        let bad = try JSON.parse(#"{"formatVersion":1,"name":"n","adapter":"a","provenance":{"kind":"recorded"},"recordedAt":"2024-01-01T00:00:00Z","interactions":[{"request":{"method":"GET","path":"/"},"response":{"status":"x"}}]}"#)
        let e = #expect(throws: MBaaSError.self) { try Cassette(json: bad) }
        #expect(e?.message.contains("interactions[0].response.status") == true)
        #expect(e?.kind == .decoding)
        let missing = #expect(throws: MBaaSError.self) {
            try Cassette.load(from: URL(fileURLWithPath: "/nonexistent/cassette.json"))
        }
        #expect(missing?.kind == .notFound)
        // A header name that is not an HTTP token is a format error naming it, not a crash.
        let badHeader = try JSON.parse(#"{"formatVersion":1,"name":"n","adapter":"a","provenance":{"kind":"recorded"},"recordedAt":"2024-01-01T00:00:00Z","interactions":[{"request":{"method":"GET","path":"/","headers":{"Bad Name":"v"}},"response":{"status":200}}]}"#)
        let h = #expect(throws: MBaaSError.self) { try Cassette(json: badHeader) }
        #expect(h?.message.contains("Bad Name") == true && h?.message.contains("not a valid HTTP header name") == true)
    }

    @Test func authoringShorthandsAreAccepted() throws {
        let text = #"""
        {"formatVersion": 1, "name": "q", "adapter": "ncmb", "provenance": {"kind": "authored", "facts": ["f"]},
         "recordedAt": "2024-01-01T00:00:00Z",
         "interactions": [{"request": {"method": "GET", "path": "/c", "query": {"limit": "2", "where": {"a": 1}}},
                           "response": {"status": 200, "body": {"json": {"results": []}}}}]}
        """#
        let c = try Cassette(json: JSON.parse(text))
        #expect(c.interactions[0].request.query.map(\.name) == ["limit", "where"])
        #expect(c.interactions[0].request.query[1].value == #"{"a":1}"#)
        #expect(c.provenance.kind == .authored)
    }
}
