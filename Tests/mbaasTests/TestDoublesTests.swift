import Foundation
import MBaaSCore
import MBaaSTesting
import Testing

/// The shared doubles of MBaaSTesting that every test target (and a third-party adapter's tests) uses.
@Suite("MBaaSTesting doubles")
struct TestDoublesTests {
    @Test("CapturingTransport keeps every request in order, those the base fails too, and passes answers and errors on")
    func capturing() async throws {
        let base = StubTransport { request in
            if request.url.path == "/fail" { throw MBaaSError(.unavailable, "down") }
            return .json(201, .object(["path": .string(request.url.path)]))
        }
        let capture = CapturingTransport(base)
        let ok = try await capture.send(TransportRequest(method: .post, url: URL(string: "https://x.test/a")!))
        let body = try JSON.parse(ok.body)
        #expect(ok.status == 201 && body["path"] == "/a")
        let error = await thrownError { _ = try await capture.send(TransportRequest(method: .get, url: URL(string: "https://x.test/fail")!)) }
        #expect(error?.kind == .unavailable)
        #expect(capture.requests.map(\.url.path) == ["/a", "/fail"] && base.callCount == 2)
    }

    @Test("CallCounter counts calls from concurrent tasks exactly; next() returns the running count")
    func counter() async {
        let counter = CallCounter()
        #expect(counter.next() == 1)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<10 { group.addTask { for _ in 0..<100 { counter.increment() } } }
        }
        #expect(counter.value == 1_001 && counter.next() == 1_002)
    }

    @Test("temporaryDirectory makes a new empty directory each call, named by its prefix")
    func scratch() throws {
        let a = try temporaryDirectory("doubles")
        let b = try temporaryDirectory("doubles")
        defer { for url in [a, b] { try? FileManager.default.removeItem(at: url) } }
        #expect(a != b && a.lastPathComponent.hasPrefix("doubles-"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: a.path).isEmpty)
    }

    @Test("expectError returns the error of the kind expected; thrownError wraps other errors and is nil on success")
    func errors() async {
        let e = await expectError(.notFound) { throw MBaaSError(.notFound, "gone") }
        #expect(e?.message == "gone")
        #expect(await thrownError {} == nil)
        #expect(await thrownError { throw CocoaError(.fileNoSuchFile) }?.kind == .localIO)
    }

    @Test("jsonText answers the text as it stands, with the JSON content type and extra headers; TestClock can be set")
    func textAndClock() {
        let r = TransportResponse.jsonText(200, #"{"a":1,}"#, headers: [("ETag", "\"4\"")])
        #expect(String(decoding: r.body, as: UTF8.self) == #"{"a":1,}"#)
        #expect(r.headers["Content-Type"] == "application/json" && r.headers["ETag"] == "\"4\"")
        let clock = TestClock(Date(timeIntervalSince1970: 100))
        clock.set(to: Date(timeIntervalSince1970: 500))
        #expect(clock.now == Date(timeIntervalSince1970: 500))
    }
}
