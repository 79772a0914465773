import Foundation
import MBaaSCore
import Testing
@testable import MBaaSReplay

@Suite struct SmokeTests {
    @Test func recordThenReplayRoundTrip() async throws {
        let live = StubTransport { req in
            if req.url.path.hasSuffix("/login") { return TransportResponse.json(200, .object(["sessionToken": "sess-ABCDEF123456", "objectId": "u1"])) }
            return TransportResponse.json(201, .object(["objectId": "abc", "createDate": "2024-04-01T00:00:00.000Z"]))
        }
        let recorder = RecordingTransport(wrapping: live, scrubber: Scrubber(secrets: [("APP_KEY", "k3y-SECRET-value")]))
        _ = try await recorder.send(request("GET", "https://h:1234/login?userName=bob&password=hunter2hunter2",
                                            headers: [("X-App-Key", "k3y-SECRET-value")]))
        _ = try await recorder.send(request("POST", "https://h:1234/classes/Memo",
                                            headers: [("X-Session-Token", "sess-ABCDEF123456")], json: .object(["title": "a"])))
        let c = recorder.cassette(name: "x.y", adapter: "test", provenance: .recorded(server: "Stub"),
                                  recordedAt: fixedDate, backendURL: "test://k3y-SECRET-value@h:1234")
        let text = String(decoding: c.fileData, as: UTF8.self)
        #expect(!text.contains("k3y-SECRET-value"))
        #expect(!text.contains("hunter2hunter2"))
        #expect(!text.contains("sess-ABCDEF123456"))
        let reread = try Cassette(json: JSON.parse(c.fileData))
        #expect(reread == c)
        let replay = ReplayingTransport(cassette: reread)
        let login = try await replay.send(request("GET", "http://other/login?password=replay-password-1&userName=bob",
                                                  headers: [("X-App-Key", "replay-app-key")]))
        let token = try login.json()["sessionToken"]?.stringValue
        #expect(token == "replay-token-1")
        let created = try await replay.send(request("POST", "http://other/classes/Memo",
                                                    headers: [("X-Session-Token", token!)], json: .object(["title": "a"])))
        #expect(created.status == 201)
        try replay.verifyAllUsed()
    }
}

