import Foundation
import MBaaSCore
import Testing
@testable import MBaaSReplay

@Suite struct MatchingTests {
    /// A vendor's signed-request headers, declared as its adapter would.
    static let signedProfile = WireProfile.generic.merging(WireProfile(
        secretHeaders: ["X-Vendor-Signature"], volatileHeaders: ["X-Vendor-Signature", "X-Vendor-Timestamp"]))

    func replays(_ i: Interaction, _ r: TransportRequest, profile: WireProfile = .generic) async -> MBaaSError? {
        let t = ReplayingTransport(cassette: cassette([i]), profile: profile)
        return await thrownError { _ = try await t.send(r) }
    }

    @Test func queryInAnyOrderAndHostIgnored() async {
        let i = interaction("GET", "/classes/Memo", query: [("limit", "2"), ("skip", "0")])
        #expect(await replays(i, request("GET", "http://127.0.0.1:54321/classes/Memo?skip=0&limit=2")) == nil)
        #expect(await replays(i, request("GET", "https://elsewhere.example/classes/Memo?limit=2&skip=0")) == nil)
        #expect(await replays(i, request("GET", "https://x/classes/Memo?limit=2")) != nil)
        #expect(await replays(i, request("GET", "https://x/classes/Memo?limit=2&skip=0&extra=1")) != nil)
    }

    @Test func jsonQueryValueComparedAsJSON() async {
        let i = interaction("GET", "/classes/Memo", query: [("where", #"{"a":1,"b":{"$gt":2}}"#)])
        let same = percentEncode(#"{ "b": {"$gt": 2.0}, "a": 1 }"#)
        #expect(await replays(i, request("GET", "https://x/classes/Memo?where=\(same)")) == nil)
        let other = percentEncode(#"{"a":1,"b":{"$gt":3}}"#)
        let e = await replays(i, request("GET", "https://x/classes/Memo?where=\(other)"))
        #expect(e?.message.contains("query 'where' at $.b.$gt: expected 2, got 3") == true)
    }

    @Test func jsonBodyIgnoresKeyOrderAndWhitespace() async {
        let i = interaction("POST", "/classes/Memo", headers: [.contentType: "application/json"],
                            body: .json(.object(["title": "a", "n": 1, "tags": ["x", "y"]])))
        let body = Data("{\n  \"tags\" : [\"x\",\"y\"],\"n\":1.0,\n \"title\":\"a\"}".utf8)
        #expect(await replays(i, request("POST", "https://x/classes/Memo", headers: [("Content-Type", "application/json; charset=utf-8")], body: body)) == nil)
        let e = await replays(i, request("POST", "https://x/classes/Memo", json: .object(["title": "a", "n": 1, "tags": ["y", "x"]])))
        #expect(e?.message.contains("body at $.tags[0]: expected \"x\", got \"y\"") == true)
    }

    @Test func multipartComparedByPartsBoundaryIgnored() async {
        func form(_ boundary: String, _ content: String) -> MultipartForm {
            MultipartForm(parts: [.text("acl", "{}"), MultipartForm.Part(name: "file", filename: "a.txt", contentType: "text/plain", data: Data(content.utf8))],
                          boundary: boundary)
        }
        let recorded = form("recorded-boundary", "hello")
        let i = interaction("POST", "/files/a.txt", headers: [.contentType: recorded.contentType],
                            body: RecordedBody.from(data: recorded.encoded(), contentType: recorded.contentType))
        let live = form("live-\(UUID().uuidString)", "hello")
        #expect(await replays(i, request("POST", "https://x/files/a.txt", headers: [("Content-Type", live.contentType)], body: live.encoded())) == nil)
        let changed = form("b2", "HELLO")
        let e = await replays(i, request("POST", "https://x/files/a.txt", headers: [("Content-Type", changed.contentType)], body: changed.encoded()))
        #expect(e?.message.contains("body part 1 'file'") == true)
    }

    @Test func formBodyComparedByFields() async {
        let i = interaction("POST", "/login", headers: [.contentType: "application/x-www-form-urlencoded"],
                            body: .text("user=bob&password=a+b"))
        let h = [("Content-Type", "application/x-www-form-urlencoded")]
        #expect(await replays(i, request("POST", "https://x/login", headers: h, body: Data("password=a%20b&user=bob".utf8))) == nil)
        let e = await replays(i, request("POST", "https://x/login", headers: h, body: Data("password=a%20c&user=bob".utf8)))
        #expect(e?.message.contains("body field 'password': expected \"a b\", got \"a c\"") == true)
    }

    @Test func volatileHeadersIgnoredUnlessPinned() async {
        let headers: HTTPFields = HTTPFields([("X-Vendor-Signature", "sig-A"), ("X-Vendor-Timestamp", "t1"), ("X-App", "app")])
        let plain = interaction("GET", "/c", headers: headers)
        let live: [(String, String)] = [("X-Vendor-Signature", "sig-B"), ("X-Vendor-Timestamp", "t2"), ("X-App", "app"),
                                        ("User-Agent", "sdk/9"), ("Date", "now")]
        let p = Self.signedProfile
        #expect(await replays(plain, request("GET", "https://x/c", headers: live), profile: p) == nil)
        // Volatile for the adapter's profile only: the generic profile compares them.
        let generic = await replays(plain, request("GET", "https://x/c", headers: live))
        #expect(generic?.message.contains("header 'X-Vendor-Signature': expected \"sig-A\", got \"sig-B\"") == true)
        // A recorded non-volatile header must be sent with the same value.
        let wrongApp = await replays(plain, request("GET", "https://x/c", headers: [("X-App", "other")]), profile: p)
        #expect(wrongApp?.message.contains("header 'X-App': expected \"app\", got \"other\"") == true)
        // Pinned: must match exactly.
        let pinned = interaction("GET", "/c", headers: headers, pinned: ["X-Vendor-Signature"])
        let e = await replays(pinned, request("GET", "https://x/c", headers: live), profile: p)
        #expect(e?.message.contains("header 'X-Vendor-Signature' (pinned): expected \"sig-A\", got \"sig-B\"") == true)
        #expect(await replays(pinned, request("GET", "https://x/c", headers: [("X-Vendor-Signature", "sig-A"), ("X-App", "app")]),
                              profile: p) == nil)
    }

    @Test func genericVolatileHeadersNameNoVendor() {
        #expect(RequestMatcher.volatileHeaders == RequestMatcher.volatileHeaders(for: .generic))
        #expect(RequestMatcher.volatileHeaders.isSuperset(of: ["date", "user-agent", "content-length", "host"]))
        #expect(RequestMatcher.volatileHeaders(for: Self.signedProfile).contains("x-vendor-timestamp"))
        #expect(!RequestMatcher.volatileHeaders.contains { $0.hasPrefix("x-vendor") })
    }

    @Test func contentTypeBoundaryAndCaseIgnored() {
        let r = RecordedRequest(method: "POST", path: "/u", headers: [.contentType: "multipart/form-data; boundary=a"])
        #expect(RequestMatcher.difference(recorded: r, live: request("POST", "https://x/u", headers: [("content-type", "Multipart/Form-Data; boundary=b")])) == nil)
        #expect(RequestMatcher.difference(recorded: r, live: request("POST", "https://x/u", headers: [("Content-Type", "application/json")])) != nil)
    }

    @Test func methodAndPercentEncodedPath() {
        let r = RecordedRequest(method: "GET", path: "/files/a%20b.txt")
        #expect(RequestMatcher.difference(recorded: r, live: request("GET", "https://x/files/a%20b.txt")) == nil)
        #expect(RequestMatcher.difference(recorded: r, live: request("DELETE", "https://x/files/a%20b.txt")) == "method: expected GET, got DELETE")
        #expect(RequestMatcher.difference(recorded: r, live: request("GET", "https://x/files/a%20c.txt")) == #"path: expected "/files/a b.txt", got "/files/a c.txt""#)
    }

    @Test func jsonDifferencePaths() {
        #expect(RequestMatcher.jsonDifference(.object(["a": 1]), .object(["a": 1.0])) == nil)
        #expect(RequestMatcher.jsonDifference(.object(["a": 1]), .object(["a": 1, "b": 2])) == "at $.b: expected nothing, got 2")
        #expect(RequestMatcher.jsonDifference(.object(["a b": [1]]), .object(["a b": [1, 2]])) == #"at $["a b"]: expected 1 elements, got 2"#)
        #expect(RequestMatcher.jsonDifference(.object(["x": "1"]), .object(["x": 1])) == #"at $.x: expected "1", got 1"#)
    }
}
