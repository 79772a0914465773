import Foundation
import Testing
import XCTest
@testable import MBaaSCore

@Suite("Backend URLs")
struct BackendURLTests {
    @Test func parsesVendorURLsWithEncodedCredentials() throws {
        let url = try BackendURL(parsing: "pocketbase+http://admin%40example.com:p%40ss%3Aword@127.0.0.1:8090/base?x=1&y=a%20b")
        #expect(url.scheme == "pocketbase")
        #expect(!url.isSecure)
        #expect(url.user == "admin@example.com")
        #expect(url.secret == "p@ss:word")
        #expect(url.host == "127.0.0.1")
        #expect(url.port == 8090)
        #expect(url.path == "/base")
        #expect(url.options == ["x": "1", "y": "a b"])
        #expect(url.httpBase == "http://127.0.0.1:8090")
        #expect(!url.description.contains("p@ss"))
        #expect(url.description.contains("***"))
    }

    @Test func httpsIsTheDefault() throws {
        let url = try BackendURL(parsing: "ncmb://APPKEY:CLIENTKEY@mbaas.api.nifcloud.com")
        #expect(url.isSecure)
        #expect(url.httpBase == "https://mbaas.api.nifcloud.com")
        #expect(url.description == "ncmb://APPKEY:***@mbaas.api.nifcloud.com")
    }

    @Test(arguments: [
        ("sqlite:data/app.db", "data/app.db"), ("sqlite::memory:", ":memory:"), ("sqlite:///tmp/x.db", "/tmp/x.db"),
        ("sqlite:my%20db.sqlite?journal=wal", "my db.sqlite"),
    ])
    func parsesSQLiteForms(text: String, path: String) throws {
        let url = try BackendURL(parsing: text)
        #expect(url.scheme == "sqlite")
        #expect(url.path == path)
    }

    @Test(arguments: ["no-scheme", ":x", "bad scheme://x", "sqlite:"])
    func rejectsMalformedURLs(text: String) {
        #expect(throws: MBaaSError.self) { try BackendURL(parsing: text) }
    }

    @Test func parsingAcceptsAURLWithoutAHostTheFactoryDecides() throws {
        let url = try BackendURL(parsing: "vendor://")
        #expect(url.host == nil)
        #expect(try BackendURL(parsing: "files:///var/data").path == "/var/data")
    }

    @Test func redactsSecretsInFreeText() {
        #expect(BackendURL.redact("ncmb://k:secret@host/x") == "ncmb://k:***@host/x")
        #expect(BackendURL.redact("sqlite:x") == "sqlite:x")
        // Secret options too (a Salesforce password grant's password= was printed in migration reports).
        #expect(BackendURL.redact("salesforce+http://cid:cs@127.0.0.1:8443?username=ada%40example.com&password=pw1&Password=x")
                == "salesforce+http://cid:***@127.0.0.1:8443?username=ada%40example.com&password=***&Password=***")
        #expect(BackendURL.redact("parse://app@h/parse?masterKey=mk&timeout=5") == "parse://app@h/parse?masterKey=***&timeout=5")
        #expect(BackendURL.redact("sqlite:x.db?files=dir") == "sqlite:x.db?files=dir")
        // The state folder's hash keeps the earlier form: only the user secret goes.
        #expect(BackendURL.redactingUserSecret("s://c:s@h?password=p") == "s://c:***@h?password=p")
        let url = try? BackendURL(parsing: "salesforce://cid:cs@login.example.com?username=u&password=pw1&securityToken=t")
        #expect(url?.description == "salesforce://cid:***@login.example.com?password=***&securityToken=***&username=u")
    }

    struct FakeFactory: BackendFactory {
        let schemes = ["fake"]
        let adapterName = "fake"
        func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend {
            throw MBaaSError(.unavailable, "opened \(url.host ?? "")")
        }
    }

    @Test func registryIsAValueThatRoutesBySchemeIgnoringPlusHTTP() async throws {
        var registry = BackendRegistry()
        registry.register(FakeFactory())
        #expect(registry.schemes == ["fake"])
        await #expect { try await registry.open("fake+http://u:p@h1:1") } throws: {
            ($0 as? MBaaSError)?.message == "opened h1"
        }
        await #expect { try await registry.open("nope://h") } throws: {
            ($0 as? MBaaSError)?.message.contains("unknown backend scheme 'nope'; known: fake") == true
        }
        #expect(BackendRegistry().schemes.isEmpty, "registries are independent values")
    }

    struct FileFactory: BackendFactory {
        let schemes = ["files"]
        let adapterName = "files"
        var wireProfile: WireProfile { WireProfile.generic.merging(WireProfile(requiresHost: false)) }
        func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend {
            throw MBaaSError(.unavailable, "opened \(url.path)")
        }
    }

    @Test func theRegistryRefusesAURLWithoutAHostWhereTheFactoryRequiresOne() async throws {
        let registry = BackendRegistry([FakeFactory(), FileFactory()])
        #expect(FakeFactory().wireProfile == .generic)
        await #expect { try await registry.open("fake://") } throws: {
            let e = $0 as? MBaaSError
            return e?.kind == .invalidRequest && e?.message.contains("has no host") == true
                && e?.message.contains("fake://") == true
        }
        await #expect { try await registry.open("fake://u:secret@") } throws: {
            ($0 as? MBaaSError)?.message.contains("has no host") == true && ($0 as? MBaaSError)?.message.contains("secret") == false
        }
        await #expect { try await registry.open("files:///var/data") } throws: { ($0 as? MBaaSError)?.message == "opened /var/data" }
        await #expect { try await registry.open("files:relative/dir") } throws: { ($0 as? MBaaSError)?.message == "opened relative/dir" }
    }
}

@Suite("Wire profiles")
struct WireProfileTests {
    @Test func genericNamesStandardHTTPOnly() {
        let g = WireProfile.generic
        #expect(g.isSecretHeader("authorization") && g.isSecretHeader("Cookie") && g.isSecretHeader("SET-COOKIE"))
        #expect(g.isVolatileHeader("date") && g.isVolatileHeader("User-Agent") && g.isVolatileHeader("content-length"))
        #expect(g.isTokenField("access_token") && g.isTokenField("SessionToken"))
        #expect(g.isSecretField("password") && !g.isSecretField("secret"))
        #expect(g.capturedHeaderPrefixes.isEmpty)
        #expect(g.requiresHost)
        // Every name is a standard HTTP or widespread one: none names a product MBaaSKit has an adapter for.
        let names = g.secretHeaders.union(g.volatileHeaders).union(g.tokenFields).union(g.secretFields)
        for name in names {
            #expect(!["ncmb", "kii", "apppot", "parse", "pocketbase", "sqlite"].contains { name.lowercased().contains($0) },
                    "\(name)")
        }
    }

    @Test func mergingAddsNamesAndTakesTheOthersHostRule() {
        let vendor = WireProfile(secretHeaders: ["X-Vendor-Key"], volatileHeaders: ["X-Vendor-Clock"],
                                 tokenFields: ["vendorToken"], secretFields: ["vendorSecret"],
                                 capturedHeaderPrefixes: ["Vendor-"])
        let merged = WireProfile.generic.merging(vendor)
        #expect(merged.isSecretHeader("x-vendor-key") && merged.isSecretHeader("Authorization"))
        #expect(merged.isVolatileHeader("X-VENDOR-CLOCK") && merged.isVolatileHeader("Date"))
        #expect(merged.isTokenField("vendortoken") && merged.isTokenField("token"))
        #expect(merged.isSecretField("vendorSecret") && merged.isSecretField("password"))
        #expect(merged.capturedHeaderPrefixes == ["vendor-"])
        #expect(merged.isCapturedByPrefix("Vendor-Session") && !merged.isCapturedByPrefix("X-Vendor-Key"))
        #expect(merged.requiresHost)
        #expect(!WireProfile.generic.merging(WireProfile(requiresHost: false)).requiresHost)
        #expect(WireProfile.generic.merging(WireProfile()) == .generic)
    }
}

@Suite("HTTP")
struct HTTPTests {
    @Test func headersAreCaseInsensitiveAndRedactable() {
        var h: HTTPFields = HTTPFields([("Content-Type", "application/json"), ("X-NCMB-Signature", "sig")])
        #expect(h["content-type"] == "application/json")
        h["CONTENT-TYPE"] = "text/plain"
        #expect(h.values("Content-Type") == ["text/plain"])
        #expect(h.count == 2)
        let r = h.redacting(["x-ncmb-signature"])
        #expect(r["X-NCMB-Signature"] == "***")
        #expect(r["Content-Type"] == "text/plain")
    }

    @Test("value(_:) reads a header as the subscript does: one value as sent, repeated ones joined, a missing one nil")
    func valueOfAField() throws {
        let key = try #require(HTTPField.Name("X-App-Key"))
        var h = HTTPFields([("x-app-key", "k1"), ("Accept", "a/b")])
        #expect(h.value(key) == "k1")
        #expect(h.value(.contentType) == nil)
        h.append(HTTPField(name: key, value: "k2"))
        #expect(h.value(key) == "k1, k2" && h.value(key) == h[key])
        let cookies = HTTPFields([("Cookie", "a=1"), ("Cookie", "b=2")])
        #expect(cookies.value(.cookie) == "a=1; b=2" && cookies.value(.cookie) == cookies[.cookie])
    }

    @Test("the asynchronous scrypt calls give what the synchronous ones give; a bad stored hash is still decoding")
    func scryptOffTheCallersThread() async throws {
        let stored = try await ScryptPasswordHash.hash("s3cret pass", parameters: .light)
        // The synchronous call (what a synchronous caller gets) agrees with the asynchronous one.
        func verifyHere(_ password: String) throws -> Bool { try ScryptPasswordHash.verify(password, against: stored) }
        #expect(try verifyHere("s3cret pass") && !(try verifyHere("wrong")))
        #expect(try await ScryptPasswordHash.verify("s3cret pass", against: stored))
        #expect(try await !ScryptPasswordHash.verify("wrong", against: stored))
        // Many at once: each waits its turn on the bounded threads and gets its own answer.
        let answers = try await withThrowingTaskGroup(of: Bool.self) { group in
            for i in 0..<12 { group.addTask { try await ScryptPasswordHash.verify(i % 2 == 0 ? "s3cret pass" : "no", against: stored) } }
            return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        #expect(answers == 6)
        do {
            _ = try await ScryptPasswordHash.verify("x", against: "not-a-hash")
            Issue.record("a malformed stored hash verified")
        } catch {
            #expect(error.kind == .decoding)
        }
    }

    @Test func messagesUseSwiftHTTPTypesVocabulary() {
        // The same values a Hummingbird server hands over: nothing to convert.
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields.add("X-Vendor-Session", "s1")
        fields.add("x-vendor-session", "s2")
        #expect(fields["CONTENT-TYPE"] == "application/json")
        #expect(fields.values("X-VENDOR-SESSION") == ["s1", "s2"])
        #expect(fields.names == ["Content-Type", "X-Vendor-Session", "x-vendor-session"])
        // A name that is not a token is never present (and is refused where names come from outside).
        #expect(fields["bad name"] == nil && fields.values("bad:name").isEmpty)
        #expect(HTTPField.Name("bad name") == nil)

        let request = TransportRequest(method: .post, url: URL(string: "https://h/x")!, headers: fields)
        #expect(!request.isIdempotent)
        #expect(TransportRequest(method: .put, url: URL(string: "https://h/x")!).isIdempotent)
        #expect(TransportRequest.Method(name: "patch") == .patch && TransportRequest.Method(name: "a b") == nil)

        let ok = TransportResponse(status: .created)
        let missing = TransportResponse(status: 404)
        #expect(ok.isSuccess && !missing.isSuccess && missing.status.code == 404 && missing.status == .notFound)
    }

    @Test func strictPercentEncoding() throws {
        #expect(percentEncode("a+b 'c'/日") == "a%2Bb%20%27c%27%2F%E6%97%A5")
        let url = try URL.build(base: "https://h", path: "/2013-09-01/classes/A", query: [("where", #"{"a":"b c"}"#)])
        #expect(url.absoluteString == "https://h/2013-09-01/classes/A?where=%7B%22a%22%3A%22b%20c%22%7D")
    }

    @Test func dotSegmentsAreRefused() throws {
        for path in ["/apps/a/users/../buckets/Secret", "/a/./b", "/a/..", "/.."] {
            #expect(throws: MBaaSError.self, "\(path)") { try URL.build(base: "https://h", path: path) }
        }
        // Dots inside a name are names.
        for path in ["/a/.b/c", "/a/b../c", "/a/.../c", "/files/x.png", "/a//b"] {
            #expect(try URL.build(base: "https://h", path: path).absoluteString == "https://h" + path)
        }
    }

    @Test func logsRedactSecretsInURLs() throws {
        let url = try #require(URL(string: "https://u:pw@h/p?token=abc&x=1"))
        let s = HTTPLogging.redactedURL(url)
        #expect(!s.contains("pw") && !s.contains("abc"))
        #expect(s.contains("x=1"))
    }

    @Test func retryAfterParsesSecondsAndDates() {
        #expect(TransportResponse(status: 429, headers: [.retryAfter: "7"]).retryAfter() == 7)
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let later = TransportResponse(status: 503, headers: [.retryAfter: "Tue, 14 Nov 2023 22:13:40 GMT"])
        #expect(later.retryAfter(now: now) == 20)
        #expect(TransportResponse(status: 429).retryAfter() == nil)
    }

    @Test func multipartRoundTripKeepsPartsAndNonASCIINames() throws {
        let form = MultipartForm(parts: [
            .text("acl", #"{"*":{"read":true}}"#),
            MultipartForm.Part(name: "file", filename: "写真 \"1\".png", contentType: "image/png",
                               data: Data([0, 13, 10, 45, 45, 255])),
        ], boundary: "XyZ")
        let body = form.encoded()
        let decoded = try MultipartForm.decode(body, contentType: form.contentType)
        #expect(decoded.parts == form.parts)
        #expect(decoded.part(named: "file")?.filename == "写真 \"1\".png")
        #expect(throws: MBaaSError.self) { try MultipartForm.decode(body, contentType: "multipart/form-data") }
        #expect(throws: MBaaSError.self) { try MultipartForm.decode(Data("junk".utf8), contentType: form.contentType) }
    }

    actor Counter { var n = 0; func next() -> Int { n += 1; return n } }

    struct Scripted: HTTPTransport {
        let counter: Counter
        let statuses: [Int]
        func send(_ request: TransportRequest) async throws -> TransportResponse {
            let i = await counter.next()
            let status = statuses[min(i, statuses.count) - 1]
            if status == 0 { throw MBaaSError(.transport, "reset") }
            return TransportResponse(status: .init(code: status), headers: status == 429 ? [.retryAfter: "2"] : [:])
        }
    }

    actor Sleeps { var values: [TimeInterval] = []; func add(_ v: TimeInterval) { values.append(v) } }

    @Test func retriesIdempotentRequestsWithBackoffAndRetryAfter() async throws {
        let counter = Counter(), sleeps = Sleeps()
        let transport = RetryingTransport(
            Scripted(counter: counter, statuses: [503, 0, 429, 200]),
            policy: RetryPolicy(maxAttempts: 5, baseDelay: 1, random: { 0.5 }),
            sleep: { await sleeps.add($0) })
        let response = try await transport.send(TransportRequest(method: .get, url: URL(string: "http://h/")!))
        #expect(response.status == 200)
        #expect(await counter.n == 4)
        #expect(await sleeps.values == [0.5, 1.0, 2.0])
    }

    @Test func doesNotRetryPostWithoutIdempotencyKey() async throws {
        let counter = Counter()
        let transport = RetryingTransport(Scripted(counter: counter, statuses: [503, 200]), sleep: { _ in })
        let url = URL(string: "http://h/")!
        #expect(try await transport.send(TransportRequest(method: .post, url: url)).status == 503)
        #expect(await counter.n == 1)
        let keyed = try await transport.send(TransportRequest(method: .post, url: url, idempotencyKey: "k1"))
        #expect(keyed.status == 200)
    }

    @Test func givesUpAfterMaxAttempts() async throws {
        let counter = Counter()
        let transport = RetryingTransport(Scripted(counter: counter, statuses: [0]),
                                          policy: RetryPolicy(maxAttempts: 3), sleep: { _ in })
        await #expect(throws: MBaaSError.self) {
            try await transport.send(TransportRequest(method: .get, url: URL(string: "http://h/")!))
        }
        #expect(await counter.n == 3)
    }

    @Test func errorDescriptionCarriesVendorCodeAndStatus() {
        let e = MBaaSError(.notFound, "no such object", vendorCode: "E404001", httpStatus: 404)
        #expect(e.description == "notFound: no such object [vendor code E404001, HTTP 404]")
        #expect(MBaaSError.kind(forHTTPStatus: 429) == .rateLimited)
        #expect(MBaaSError.wrap(CancellationError()).kind == .transport)
    }
}

/// One XCTest case so the XCTest summary reports a real count next to Swift Testing's.
final class CoreSmokeXCTests: XCTestCase {
    func testNeutralRecordJSONIsStable() throws {
        let record = Record(className: "Memo", id: "1", fields: ["b": 2, "a": 1])
        XCTAssertEqual(record.json.printed(), #"{"class":"Memo","id":"1","fields":{"a":1,"b":2}}"#)
    }
}
