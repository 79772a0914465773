import Foundation
import MBaaSCore
import Testing
@testable import MBaaSNCMB

/// Signature vectors: the official documentation's (V1), the ncmb_swift request-builder vectors (GET with a bare
/// parameter, POST/PUT/DELETE ignoring the query), a response signature produced by the real server (kept in the
/// ncmb_android tests), and vectors computed independently (Python hmac) for the encoding pitfalls of ncmb.md §2.3.
@Suite("NCMB signatures")
struct SignerTests {
    static let docAppKey = "6145f91061916580c742f806bab67649d10f45920246ff459404c46f00ff3e56"
    static let docClientKey = "1343d198b510a0315db1c03f3aa0e32418b7a743f8e4b47cbff670601345cf75"
    static let docTimestamp = "2013-12-02T02:44:35.452Z"
    let doc = NCMBSigner(applicationKey: docAppKey, clientKey: docClientKey)

    @Test("official documentation vector (ncmb.md §2.4, §2.5 V1)")
    func officialVector() throws {
        let url = URL(string: "https://mbaas.api.nifcloud.com/2013-09-01/classes/TestClass?where=%7B%22testKey%22%3A%22testValue%22%7D")!
        let text = try doc.stringToSign(method: "GET", url: url, timestamp: Self.docTimestamp)
        #expect(text == """
            GET
            mbaas.api.nifcloud.com
            /2013-09-01/classes/TestClass
            SignatureMethod=HmacSHA256&SignatureVersion=2&X-NCMB-Application-Key=\(Self.docAppKey)&X-NCMB-Timestamp=2013-12-02T02:44:35.452Z&where=%7B%22testKey%22%3A%22testValue%22%7D
            """)
        #expect(try doc.signature(method: "GET", url: url, timestamp: Self.docTimestamp) == "AltGkQgXurEV7u0qMd+87ud7BKuueldoCjaMgVc9Bes=")
    }

    @Test("the adapter's own query encoding reproduces the official vector")
    func officialVectorThroughURLBuild() throws {
        let url = try URL.build(base: "https://mbaas.api.nifcloud.com", path: "/2013-09-01/classes/TestClass",
                                query: [("where", #"{"testKey":"testValue"}"#)])
        #expect(url.absoluteString.hasSuffix("?where=%7B%22testKey%22%3A%22testValue%22%7D"))
        var request = TransportRequest(method: .get, url: url)
        try doc.sign(&request, timestamp: Self.docTimestamp)
        #expect(request.headers["X-NCMB-Signature"] == "AltGkQgXurEV7u0qMd+87ud7BKuueldoCjaMgVc9Bes=")
        #expect(request.headers["X-NCMB-Application-Key"] == Self.docAppKey)
        #expect(request.headers["X-NCMB-Timestamp"] == Self.docTimestamp)
    }

    /// ncmb_swift `NCMBRequestTests.test_build_all_arguments_*`: host piyo.example.com, API version 1986-02-04,
    /// query `p=q&r=t&s` (a bare `s`), timestamp 1986-02-04T12:34:56.789Z.
    @Test("ncmb_swift request vectors: GET signs the query (bare parameter included), other methods do not",
          arguments: [
            ("GET", "Gr/jVnob8/fucYAUwW8fXEVllonyDH1NMirCUHgoYZU="),
            ("POST", "ArT9YDP4fyy8gDxTm65k5uPkXxDjP5LquDNS76cSZqk="),
            ("PUT", "2cXESZFIx0Zed+XiKrf+VJjvo2/uxuRDw/J3sjqXogI="),
            ("DELETE", "873rompizKVX/dxhRLtcrBlOtRO/q1NeEvwYl8qEj/c="),
          ])
    func swiftSDKVectors(method: String, expected: String) throws {
        let signer = NCMBSigner(applicationKey: String(repeating: "0123456789abcdef", count: 4),
                                clientKey: String(repeating: "1", count: 64))
        let url = URL(string: "https://piyo.example.com/1986-02-04/classes/TestClass/abcdef01?p=q&r=t&s")!
        #expect(try signer.signature(method: method, url: url, timestamp: "1986-02-04T12:34:56.789Z") == expected)
        let text = try signer.stringToSign(method: method, url: url, timestamp: "1986-02-04T12:34:56.789Z")
        #expect(text.hasSuffix("&p=q&r=t&s") == (method == "GET"))
    }

    @Test("host, path and query are read from the URL's text as sent (user info, port, IPv6, fragment, empty path)")
    func wirePartsOfURLs() throws {
        func parts(_ text: String) -> [String?]? {
            NCMBSigner.wireParts(of: URL(string: text)!).map { [$0.host, $0.path, $0.query] }
        }
        #expect(parts("https://mbaas.api.nifcloud.com/2013-09-01/classes/Memo?where=%7B%7D&limit=1")
                == ["mbaas.api.nifcloud.com", "/2013-09-01/classes/Memo", "where=%7B%7D&limit=1"])
        #expect(parts("http://user:pw@127.0.0.1:8080/a/%E7%94%BB.png#frag") == ["127.0.0.1", "/a/%E7%94%BB.png", nil])
        #expect(parts("http://[::1]:9000/x?") == ["[::1]", "/x", ""])
        #expect(parts("https://host") == ["host", "/", nil])
        #expect(parts("https://host?q=1") == ["host", "/", "q=1"])
        #expect(parts("file:///tmp/x") == nil)
        // A signer copied or re-keyed signs with its own key.
        var signer = NCMBSigner(applicationKey: "a", clientKey: "k1")
        let first = signer.signature(of: "text")
        let copy = signer
        signer.clientKey = "k2"
        #expect(copy.signature(of: "text") == first && signer.signature(of: "text") != first)
        #expect(NCMBSigner(applicationKey: "a", clientKey: "k2").signature(of: "text") == signer.signature(of: "text"))
    }

    @Test("POST without a query signs the four fixed parameters only")
    func postWithoutQuery() throws {
        let url = URL(string: "https://mbaas.api.nifcloud.com/2013-09-01/classes/TestClass")!
        let text = try doc.stringToSign(method: "post", url: url, timestamp: Self.docTimestamp)
        #expect(text == "POST\nmbaas.api.nifcloud.com\n/2013-09-01/classes/TestClass\nSignatureMethod=HmacSHA256&SignatureVersion=2&X-NCMB-Application-Key=\(Self.docAppKey)&X-NCMB-Timestamp=\(Self.docTimestamp)")
        #expect(doc.signature(of: text) == "C9VyDhtcFDKrMidT0wVmMJ3fKYXBRcIm8y1XtNMnGvI=")
        // A query on a POST URL is not signed.
        let withQuery = URL(string: "https://mbaas.api.nifcloud.com/2013-09-01/classes/TestClass?x=1")!
        #expect(try doc.stringToSign(method: "POST", url: withQuery, timestamp: Self.docTimestamp) == text)
    }

    @Test("'+', an apostrophe, spaces and non-ASCII are signed as sent: %2B, %27, %20, UTF-8 percent-encoded")
    func encodingPitfalls() throws {
        let url = try URL.build(base: "https://mbaas.api.nifcloud.com", path: "/2013-09-01/classes/TestClass",
                                query: [("limit", "10"), ("where", #"{"name":"a+b 'c' 日本"}"#)])
        let wire = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedQuery)
        #expect(wire == "limit=10&where=%7B%22name%22%3A%22a%2Bb%20%27c%27%20%E6%97%A5%E6%9C%AC%22%7D")
        let text = try doc.stringToSign(method: "GET", url: url, timestamp: Self.docTimestamp)
        #expect(text.hasSuffix("&X-NCMB-Timestamp=\(Self.docTimestamp)&" + wire))
        #expect(doc.signature(of: text) == "PoklU/GehatWayq/+LfIVoP5KHuXtJgf/bgZT5nNHkI=")
    }

    @Test("a non-ASCII file name is signed over its percent-encoded path")
    func nonASCIIPath() throws {
        let url = try URL.build(base: "https://mbaas.api.nifcloud.com", path: "/2013-09-01/files/" + percentEncode("画像 1.png"))
        let text = try doc.stringToSign(method: "POST", url: url, timestamp: Self.docTimestamp)
        #expect(text.split(separator: "\n")[2] == "/2013-09-01/files/%E7%94%BB%E5%83%8F%201.png")
        #expect(doc.signature(of: text) == "GN3T8dXNvbQdTPvXRzG1vgBunA8vGqoG2XlbL425ezg=")
    }

    @Test("the timestamp is signed verbatim, even percent-encoded: the real server's response signature")
    func realServerResponseSignature() throws {
        // ncmb_android NCMBResponseTest: a response the real server signed (the app has since been deleted).
        let signer = NCMBSigner(applicationKey: "6e58668eb431b6cef540116a18ac269eeee83383acd61cdb08101e2531cdeece",
                                clientKey: "9714b04345bcdad2d609d3b9ba9bd89c7bed612189d4e6a923c70bf87da60e76")
        let url = URL(string: "https://mb.api.cloud.nifty.com/2013-09-01/classes/ResponseSignatureTest")!
        let text = try signer.stringToSign(method: "POST", url: url, timestamp: "2016-05-27T04%3A46%3A09.376Z")
        let body = Data(#"{"createDate":"2016-05-27T04:46:10.572Z","objectId":"5V67LBiCaOJl5psP"}"#.utf8)
        #expect(signer.responseSignature(stringToSign: text, body: body) == "tLdHmmi7td5+YnjdPxhPYfjV6Lh8pZNBrd2kH7EejnU=")
        let good = TransportResponse(status: 201, headers: HTTPFields([("X-NCMB-Response-Signature", "tLdHmmi7td5+YnjdPxhPYfjV6Lh8pZNBrd2kH7EejnU=")]), body: body)
        try signer.verifyResponse(good, stringToSign: text)
        var tampered = good
        tampered.body = Data(#"{"createDate":"2016-05-27T04:46:10.572Z","objectId":"5V67LBiCaOJl5psQ"}"#.utf8)
        let error = #expect(throws: MBaaSError.self) { try signer.verifyResponse(tampered, stringToSign: text) }
        #expect(error?.vendorCode == "E100001")
        #expect(error?.kind == .decoding)
    }

    @Test("an empty response body is signed as the string to sign alone")
    func emptyBodyResponseSignature() {
        let text = "DELETE\nh\n/p\nSignatureMethod=HmacSHA256"
        #expect(doc.responseSignature(stringToSign: text, body: Data()) == doc.signature(of: text))
        #expect(doc.responseSignature(stringToSign: text, body: Data("x".utf8)) == doc.signature(of: text + "\nx"))
    }

    @Test("a server verifies a signed request and rejects a changed one")
    func serverVerification() throws {
        let url = try URL.build(base: "http://127.0.0.1:8080", path: "/2013-09-01/classes/Memo", query: [("limit", "5")])
        var request = TransportRequest(method: .get, url: url)
        try doc.sign(&request, timestamp: Self.docTimestamp)
        #expect(doc.verify(request))
        // The signature covers the host without the port.
        #expect(try doc.stringToSign(method: "GET", url: url, timestamp: "t").split(separator: "\n")[1] == "127.0.0.1")
        var changed = request
        changed.url = try URL.build(base: "http://127.0.0.1:8080", path: "/2013-09-01/classes/Memo", query: [("limit", "6")])
        #expect(!doc.verify(changed))
        var otherKey = request
        otherKey.headers["X-NCMB-Application-Key"] = "other"
        #expect(!doc.verify(otherKey))
        #expect(!NCMBSigner(applicationKey: Self.docAppKey, clientKey: "wrong").verify(request))
    }

    @Test("a server also accepts a signature over the host with the Host header's port, as the Python SDK signs with NCMB.fqdn")
    func hostWithPort() throws {
        let url = try URL.build(base: "http://127.0.0.1:8080", path: "/2013-09-01/classes/Memo", query: [("limit", "5")])
        func signed(host: String) -> TransportRequest {
            var request = TransportRequest(method: .get, url: url)
            request.headers["X-NCMB-Application-Key"] = Self.docAppKey
            request.headers["X-NCMB-Timestamp"] = Self.docTimestamp
            request.headers["X-NCMB-Signature"] = doc.signature(of: doc.stringToSign(
                method: "GET", host: host, path: "/2013-09-01/classes/Memo", query: "limit=5", timestamp: Self.docTimestamp))
            return request
        }
        #expect(doc.verify(signed(host: "127.0.0.1")))
        #expect(doc.verify(signed(host: "127.0.0.1:8080")))
        // Only the port the request came to, and only this host.
        #expect(!doc.verify(signed(host: "127.0.0.1:8081")))
        #expect(!doc.verify(signed(host: "localhost:8080")))
        #expect(!doc.verify(signed(host: "127.0.0.1:")))
    }

    @Test("parameters sort by name in byte order, uppercase before lowercase")
    func sorting() {
        let text = doc.stringToSign(method: "GET", host: "h", path: "/p", query: "where=1&count=1&Zed=2&a", timestamp: "T")
        #expect(text.split(separator: "\n")[3] == "SignatureMethod=HmacSHA256&SignatureVersion=2&X-NCMB-Application-Key=\(Self.docAppKey)&X-NCMB-Timestamp=T&Zed=2&a&count=1&where=1")
    }
}
