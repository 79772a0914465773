import Foundation
import Logging
import Testing
@testable import MBaaSCore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A URLProtocol stub that echoes what it received; injected through the session configuration (never
/// registered globally).
final class EchoProtocol: URLProtocol {
    override class func canInit(with request: URLRequest) -> Bool { true }
    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }
    override func startLoading() {
        var body = request.httpBody ?? Data()
        if body.isEmpty, let stream = request.httpBodyStream {
            stream.open()
            var buffer = [UInt8](repeating: 0, count: 4096)
            while stream.hasBytesAvailable {
                let n = stream.read(&buffer, maxLength: buffer.count)
                if n <= 0 { break }
                body.append(buffer, count: n)
            }
            stream.close()
        }
        let echo: JSON = .object([
            "method": .string(request.httpMethod ?? ""), "url": .string(request.url?.absoluteString ?? ""),
            "auth": .string(request.value(forHTTPHeaderField: "Authorization") ?? ""),
            "body": .string(String(decoding: body, as: UTF8.self)),
        ])
        let status = request.url?.path == "/missing" ? 404 : 200
        let response = HTTPURLResponse(url: request.url!, statusCode: status, httpVersion: "HTTP/1.1",
                                       headerFields: ["Content-Type": "application/json", "X-Echo": "1"])!
        client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
        client?.urlProtocol(self, didLoad: echo.data())
        client?.urlProtocolDidFinishLoading(self)
    }
    override func stopLoading() {}
}

/// Collects log lines in memory.
final class CapturingLogHandler: LogHandler, @unchecked Sendable {
    let lock = NSLock()
    private var _lines: [String] = []
    var lines: [String] { lock.lock(); defer { lock.unlock() }; return _lines }
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        lock.lock(); defer { lock.unlock() }
        _lines.append("\(event.message) \(event.metadata ?? [:])")
    }
}

@Suite("URLSession transport")
struct URLSessionTransportTests {
    func makeTransport(_ handler: CapturingLogHandler) -> URLSessionTransport {
        let config = URLSessionConfiguration.ephemeral
        config.protocolClasses = [EchoProtocol.self]
        return URLSessionTransport(session: URLSession(configuration: config),
                                   logger: Logger(label: "test", factory: { _ in handler }))
    }

    @Test func sendsMethodHeadersAndBodyAndReturnsEveryStatus() async throws {
        let handler = CapturingLogHandler()
        let transport = makeTransport(handler)
        let url = try #require(URL(string: "https://api.example.com/x?token=SECRET-TOKEN&q=1"))
        let response = try await transport.send(TransportRequest(
            method: .post, url: url, headers: [.authorization: "Bearer SECRET-BEARER"], body: Data(#"{"a":1}"#.utf8)))
        #expect(response.status == 200)
        #expect(response.headers["x-echo"] == "1")
        let echo = try response.json()
        #expect(echo["method"] == "POST")
        #expect(echo["body"] == #"{"a":1}"#)
        #expect(echo["auth"] == "Bearer SECRET-BEARER")
        let missing = try await transport.send(TransportRequest(method: .get, url: URL(string: "https://api.example.com/missing")!))
        #expect(missing.status == 404, "a 4xx status is a response, not a thrown error")
    }

    @Test func logsNeverContainSecrets() async throws {
        let handler = CapturingLogHandler()
        let transport = makeTransport(handler)
        let url = try #require(URL(string: "https://user:PASSWORD-1@api.example.com/x?token=SECRET-TOKEN"))
        _ = try await transport.send(TransportRequest(method: .get, url: url, headers: HTTPFields([("Authorization", "Bearer SECRET-BEARER"), ("X-NCMB-Application-Key", "SECRET-APPKEY"), ("X-Plain", "visible")])))
        let all = handler.lines.joined(separator: "\n")
        #expect(!handler.lines.isEmpty)
        for secret in ["PASSWORD-1", "SECRET-TOKEN", "SECRET-BEARER", "SECRET-APPKEY"] {
            #expect(!all.contains(secret), "\(secret) leaked into the log")
        }
        #expect(all.contains("visible"))
    }

    @Test func cancellationSurfacesAsATransportError() async throws {
        let transport = makeTransport(CapturingLogHandler())
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await transport.send(TransportRequest(method: .get, url: URL(string: "https://h/x")!))
        }
        await #expect { try await task.value } throws: { ($0 as? MBaaSError)?.kind == .transport }
    }
}
