import Foundation
import MBaaSCore
import Testing
@testable import MBaaSReplay

/// A tiny client of a made-up vendor whose secrets travel in every form a real one uses.
struct MiniClient {
    var transport: any HTTPTransport
    var base: String
    var appID: String
    var appKey: String

    func login(user: String, password: String) async throws -> String {
        let url = try URL.build(base: base, path: "/apps/\(percentEncode(appID))/login",
                                query: [("userName", user), ("password", password)])
        let r = try await transport.send(TransportRequest(method: .get, url: url, headers: HTTPFields([("X-App-Key", appKey), ("Authorization", BasicCredentials.header(for: "\(appID):\(appKey)"))])))
        guard r.status == 200, let token = try r.json()["sessionToken"]?.stringValue else {
            throw MBaaSError(.unauthorized, "login failed \(r.status)")
        }
        return token
    }

    func formLogin(user: String, password: String) async throws -> Int {
        let url = try URL.build(base: base, path: "/apps/\(percentEncode(appID))/form-login")
        let body = "userName=\(formEncode(user))&password=\(formEncode(password))"
        return try await transport.send(TransportRequest(method: .post, url: url,
            headers: [.contentType: "application/x-www-form-urlencoded"], body: Data(body.utf8))).status.code
    }

    func create(token: String, note: String) async throws -> Int {
        let url = try URL.build(base: base, path: "/apps/\(percentEncode(appID))/classes/Memo", query: [("token", token)])
        let r = try await transport.send(TransportRequest(method: .post, url: url, headers: HTTPFields([("Content-Type", "application/json"), ("X-Session-Token", token), ("Authorization", "Bearer \(token)"), ("X-App-Key", appKey)]), body: JSON.object(["note": .string(note), "owner": .string(token)]).data()))
        return r.status.code
    }

    /// A text body that embeds the key JSON-escaped.
    func note(key: String) async throws -> Int {
        let url = try URL.build(base: base, path: "/apps/\(percentEncode(appID))/notes")
        let body = JSON.object(["embedded": .string(key)]).printed()
        return try await transport.send(TransportRequest(method: .post, url: url,
            headers: [.contentType: "text/plain"], body: Data(body.utf8))).status.code
    }
}

@Suite struct ScrubbingTests {
    static let appID = "APPID-s3cr3t-7781"
    static let appKey = #"k3y"with/slash é 99"#
    static let password = "p@ss word+1 ü"
    static let liveToken = "r:LIVE-token-0123456789abcdef"

    /// A live server that insists on the real secrets.
    static func liveServer() -> StubTransport {
        StubTransport { req in
            let auth = req.headers["Authorization"]
            guard req.headers["X-App-Key"] == nil || req.headers["X-App-Key"] == appKey,
                  auth == nil || auth == "Bearer \(liveToken)"
                    || BasicCredentials(header: auth!)?.decoded == "\(appID):\(appKey)"
            else { return TransportResponse.json(401, .object(["error": "bad key"])) }
            let (path, query) = RecordedRequest.split(req.url)
            if path.hasSuffix("/login") {
                guard query.contains(where: { $0.name == "password" && $0.value == password }) else {
                    return TransportResponse.json(401, .object(["error": "bad password"]))
                }
                return TransportResponse.json(200, .object(["sessionToken": .string(liveToken), "objectId": "u1"]))
            }
            if path.hasSuffix("/form-login") {
                let fields = RequestMatcher.parseForm(String(decoding: req.body ?? Data(), as: UTF8.self))
                return TransportResponse(status: fields.contains { $0.name == "password" && $0.value == password } ? 204 : 401)
            }
            return TransportResponse.json(201, .object(["objectId": "m1", "owner": .string(liveToken)]))
        }
    }

    static func exercise(_ client: MiniClient, password: String, key: String) async throws -> [Int] {
        let token = try await client.login(user: "bob", password: password)
        return [try await client.formLogin(user: "bob", password: password),
                try await client.create(token: token, note: "hello"),
                try await client.note(key: key)]
    }

    func record() async throws -> (Cassette, URL) {
        let recorder = RecordingTransport(
            wrapping: Self.liveServer(),
            scrubber: Scrubber(secrets: [("APP_ID", Self.appID), ("APP_KEY", Self.appKey), ("USER_PASSWORD", Self.password)]),
            requestHeaders: HeaderSelection.defaultRequest.including(["Authorization"]))
        let live = MiniClient(transport: recorder, base: "http://127.0.0.1:54321", appID: Self.appID, appKey: Self.appKey)
        let statuses = try await Self.exercise(live, password: Self.password, key: Self.appKey)
        #expect(statuses == [204, 201, 201])
        let c = recorder.cassette(
            name: "auth.login.basic", adapter: "mini", provenance: .recorded(server: "Stub", version: "1"),
            recordedAt: fixedDate,
            backendURL: "mini+http://\(percentEncode(Self.appID)):\(percentEncode(Self.appKey))@127.0.0.1:54321",
            variables: ["run": "abcd1234"])
        let url = try temporaryDirectory().appendingPathComponent("mini/auth.login.basic.json")
        try c.write(to: url)
        return (c, url)
    }

    @Test func noSecretFormSurvivesInTheWrittenFile() async throws {
        let (_, url) = try await record()
        let text = try String(contentsOf: url, encoding: .utf8)
        for secret in [Self.appID, Self.appKey, Self.password, Self.liveToken] {
            for form in Scrubber.forms(of: secret) {
                #expect(!text.contains(form), "secret form \(form.prefix(6))… leaked")
            }
        }
        #expect(!text.contains(Data("\(Self.appID):\(Self.appKey)".utf8).base64EncodedString()))
        #expect(!text.contains("LIVE-token"))
        #expect(text.contains("<APP_ID>") && text.contains("<APP_KEY>") && text.contains("<USER_PASSWORD>") && text.contains("<TOKEN_1>"))
        #expect(text.contains("\"Authorization\": \"Bearer <TOKEN_1>\""))
        #expect(try SecretScanner.scan(data: Data(contentsOf: url)).isEmpty)
    }

    @Test func replayRestoresPlaceholdersSoTheClientWorks() async throws {
        let (_, url) = try await record()
        let dummyKey = "dummy key/\"x\""
        let c = try Cassette.load(from: url, substitutions: ["APP_KEY": dummyKey, "USER_PASSWORD": "dummy pass+"])
        #expect(c.recordedAt == fixedDate)
        #expect(c.variables == ["run": "abcd1234"])
        let backend = try BackendURL(parsing: c.backendURL!)
        #expect(backend.user == "replay-app-id")
        #expect(backend.secret == dummyKey)
        let replay = ReplayingTransport(cassette: c)
        let client = MiniClient(transport: replay, base: "http://10.0.0.1:8080", appID: backend.user!, appKey: backend.secret!)
        let statuses = try await Self.exercise(client, password: "dummy pass+", key: dummyKey)
        #expect(statuses == [204, 201, 201])
        try replay.verifyAllUsed()
        // A client with the wrong password does not match.
        let again = ReplayingTransport(cassette: c)
        let wrong = MiniClient(transport: again, base: "http://h", appID: backend.user!, appKey: backend.secret!)
        let e = await thrownError { _ = try await wrong.login(user: "bob", password: "other") }
        #expect(e?.message.contains("query 'password'") == true)
    }

    @Test func recordingKeepsOnlySelectedHeaders() async throws {
        let live = StubTransport { _ in
            TransportResponse(status: 200, headers: HTTPFields([("Content-Type", "text/plain"), ("Date", "Mon"), ("Server", "x"), ("X-Vendor", "v"), ("Set-Cookie", "sid=abc"), ("vendor-hint", "h")]), body: Data("ok".utf8))
        }
        // A vendor whose timestamp is volatile and whose own headers carry no X- prefix.
        let profile = WireProfile.generic.merging(WireProfile(
            secretHeaders: ["vendor-token"], volatileHeaders: ["X-Vendor-Timestamp"], capturedHeaderPrefixes: ["Vendor-"]))
        let recorder = RecordingTransport(wrapping: live, profile: profile)
        _ = try await recorder.send(request("GET", "https://h/p", headers: [
            ("User-Agent", "sdk"), ("Authorization", "Bearer abcdefgh12345"), ("X-Vendor-Timestamp", "t"),
            ("X-Vendor-Id", "v1"), ("Accept", "application/json"), ("Cookie", "sid=abc"), ("vendor-token", "vt-123456789"),
        ]))
        let c = recorder.cassette(name: "n", adapter: "a", provenance: .recorded(server: "s"), recordedAt: fixedDate)
        // Authorization is kept (so replay compares identity), its token scrubbed to a placeholder.
        #expect(c.interactions[0].request.headers.names == ["Authorization", "X-Vendor-Id", "Accept", "vendor-token"])
        #expect(c.interactions[0].request.headers["Authorization"] == "Bearer <TOKEN_1>")
        #expect(c.interactions[0].request.headers["vendor-token"] == "<TOKEN_2>")
        #expect(c.interactions[0].response.headers.names == ["Content-Type", "X-Vendor", "vendor-hint"])
        #expect(c.interactions[0].response.body == .text("ok"))
        #expect(!String(decoding: c.fileData, as: UTF8.self).contains("abcdefgh12345"))
        #expect(!String(decoding: c.fileData, as: UTF8.self).contains("vt-123456789"))

        // The generic selection knows no vendor: the timestamp is an ordinary X- header, the prefix is not captured.
        #expect(HeaderSelection.defaultRequest.contains("X-Vendor-Timestamp"))
        #expect(!HeaderSelection.defaultRequest.contains("vendor-token"))
        #expect(!HeaderSelection.request(for: profile).contains("X-Vendor-Timestamp"))
        #expect(HeaderSelection.response(for: profile).contains("Vendor-Hint"))
        #expect(!HeaderSelection.defaultResponse.contains("Date"))
    }

    @Test func aSimulatorsFactHeaderBecomesTheExchangesFactAndNeverReachesTheClient() async throws {
        let sim = StubTransport { _ in
            TransportResponse(status: 201, headers: HTTPFields([("Content-Type", "application/json"), (Interaction.factHeader, "[doc] vendor.md §1 create answers 201")]),
                         body: Data("{}".utf8))
        }
        let recorder = RecordingTransport(wrapping: sim)
        let response = try await recorder.send(request("POST", "https://h/p", headers: []))
        #expect(response.headers[Interaction.factHeader] == nil)
        let c = recorder.cassette(name: "n", adapter: "a", provenance: .authored(facts: []), recordedAt: fixedDate)
        #expect(c.interactions[0].fact == "[doc] vendor.md §1 create answers 201")
        #expect(c.interactions[0].evidence == .doc)
        #expect(c.interactions[0].response.headers[Interaction.factHeader] == nil)
        var unmarked = c.interactions[0]
        unmarked.fact = "vendor.md §1"
        #expect(unmarked.evidence == nil)
        unmarked.fact = "[guess] vendor.md §1"
        #expect(unmarked.evidence == nil)
    }

    @Test func learnedSecretsFromHeadersAndKeys() {
        let raw = cassette([
            interaction("POST", "/login", headers: HTTPFields([("X-Vendor-Session-Token", "r:abcdef123456"), ("X-Vendor-Application-Key", "vendor-app-key-xyz")]),
                        body: .json(.object(["username": "u", "password": "hunter22", "nested": .object(["refresh_token": "rt-9876543210"])])),
                        response: .object(["access_token": "at-1111111111", "token_type": "Bearer"])),
        ])
        let profile = WireProfile.generic.merging(WireProfile(
            secretHeaders: ["X-Vendor-Session-Token", "X-Vendor-Application-Key"]))
        let scrubbed = Scrubber(profile: profile).scrub(raw)
        let text = String(decoding: scrubbed.fileData, as: UTF8.self)
        for secret in ["r:abcdef123456", "vendor-app-key-xyz", "hunter22", "rt-9876543210", "at-1111111111"] {
            #expect(!text.contains(secret))
        }
        let h = scrubbed.interactions[0].request.headers
        #expect(h["X-Vendor-Session-Token"] == "<TOKEN_1>")
        #expect(h["X-Vendor-Application-Key"] == "<X_VENDOR_APPLICATION_KEY>")
        #expect(scrubbed.interactions[0].request.body == .json(.object([
            "username": "u", "password": "<PASSWORD_1>", "nested": .object(["refresh_token": "<TOKEN_2>"])])))
        #expect(scrubbed.interactions[0].response.body == .json(.object(["access_token": "<TOKEN_3>", "token_type": "Bearer"])))
        // Deterministic: the same input scrubs to the same bytes.
        #expect(Scrubber(profile: profile).scrub(raw).fileData == scrubbed.fileData)
        // The generic scrubber does not know the vendor's application-key header: its value survives.
        #expect(Scrubber().scrub(raw).interactions[0].request.headers["X-Vendor-Application-Key"] == "vendor-app-key-xyz")
    }

    @Test func aRecordFieldNamedSecretIsDataNotACredential() {
        let raw = cassette([
            interaction("POST", "/classes/Memo", body: .json(.object(["secret": "mine", "client_secret": "cs-123456789"])),
                        response: .object(["objectId": "o1"])),
        ])
        let scrubbed = Scrubber().scrub(raw)
        #expect(scrubbed.interactions[0].request.body == .json(.object(["secret": "mine", "client_secret": "<SECRET_1>"])))
    }
}

extension ScrubbingTests {
    @Test func basicCredentialsAreScrubbedInsideTheBase64() {
        var raw = cassette([interaction("GET", "/me")])
        raw.interactions[0].request.headers["Authorization"] = BasicCredentials.header(for: "kii-app-0042:very-secret-key")
        let scrubbed = Scrubber(secrets: [("APP_KEY", "very-secret-key")]).scrub(raw)
        let header = scrubbed.interactions[0].request.headers["Authorization"]!
        #expect(BasicCredentials(header: header)?.decoded == "<BASIC_USER>:<APP_KEY>")
        #expect(!String(decoding: scrubbed.fileData, as: UTF8.self).contains(Data("kii-app-0042:very-secret-key".utf8).base64EncodedString()))
        let replayed = scrubbed.substituting(["APP_KEY": "k"])
        #expect(BasicCredentials(header: replayed.interactions[0].request.headers["Authorization"]!)?.decoded == "replay-basic-user:k")
    }
}
