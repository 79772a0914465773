import Foundation
@testable import MBaaSCore
import Testing

/// The core's HTTP client for adapters: request building, sending, the vendor error decoder as a parameter.
@Suite("HTTPAdapterClient")
struct HTTPAdapterClientTests {
    /// A client over a transport that records what it is sent and answers with `respond`.
    static func client(
        contentTypeWithoutBody: String? = nil, sent: Locked<[TransportRequest]> = Locked([]),
        _ respond: @escaping @Sendable (TransportRequest) throws -> TransportResponse
    ) -> HTTPAdapterClient {
        let transport = InMemoryTransport { request in
            sent.withLock { $0.append(request) }
            return try respond(request)
        }
        return HTTPAdapterClient(name: "demo", displayName: "Demo", baseURL: "http://127.0.0.1:8080/api", timeout: 7,
                                 context: BackendContext(transport: transport, clock: { Date(timeIntervalSince1970: 100) }),
                                 contentTypeWithoutBody: contentTypeWithoutBody) { response, now, what in
            MBaaSError(.notFound, "\(what ?? "-") at \(Int(now.timeIntervalSince1970)): \(response.status.code)",
                       vendorCode: "V\(response.status.code)", httpStatus: response.status.code)
        }
    }

    @Test("requests: base + path + strict query, the body's Content-Type, the timeout, dot segments refused")
    func buildsRequests() throws {
        let http = Self.client(contentTypeWithoutBody: "application/json") { _ in TransportResponse(status: 200) }
        let get = try http.request(.get, "/classes/Memo", query: [("where", #"{"a":"b c"}"#)])
        #expect(get.url.absoluteString == "http://127.0.0.1:8080/api/classes/Memo?where=%7B%22a%22%3A%22b%20c%22%7D")
        #expect(get.headers["Content-Type"] == "application/json" && get.body == nil && get.timeout == 7)

        let plain = Self.client { _ in TransportResponse(status: 200) }
        #expect(try plain.request(.delete, "/x").headers["Content-Type"] == nil)

        let post = try plain.request(.post, "/x", body: .json(["a": .int(1)]), base: "https://other", timeout: 2)
        #expect(post.url.absoluteString == "https://other/x" && post.timeout == 2)
        #expect(post.headers["Content-Type"] == "application/json" && post.body == Data(#"{"a":1}"#.utf8))

        let raw = try plain.request(.put, "/f", body: .raw(Data([1, 2]), contentType: "image/png"))
        #expect(raw.headers["Content-Type"] == "image/png" && raw.body == Data([1, 2]))

        let form = MultipartForm(parts: [.init(name: "k", data: Data("v".utf8))], boundary: "B")
        let multipart = try plain.request(.post, "/files", body: .multipart(form))
        #expect(multipart.headers["Content-Type"] == "multipart/form-data; boundary=B" && multipart.body == form.encoded())

        #expect(throws: MBaaSError.self) { try plain.request(.get, "/users/../Secret") }
    }

    @Test("sending: a 2xx as it came; any other status is the vendor decoder's error; no response is transport")
    func sends() async throws {
        let sent = Locked<[TransportRequest]>([])
        let http = Self.client(sent: sent) { request in
            switch request.url.path {
            case "/api/ok": TransportResponse(status: 201, body: Data(#"{"id":"a"}"#.utf8))
            case "/api/refused": throw URLError(.cannotConnectToHost)
            case "/api/html": TransportResponse(status: 200, body: Data("<html>".utf8))
            default: TransportResponse(status: 404)
            }
        }
        let ok = try await http.send(try http.request(.post, "/ok"), path: "/ok", context: "create")
        #expect(ok.status.code == 201)
        #expect(try http.json(ok) == .object(["id": .string("a")]))
        #expect(sent.value.count == 1)

        do {
            _ = try await http.send(try http.request(.get, "/missing"), path: "/missing", context: "get it")
            Issue.record("expected the decoder's error")
        } catch {
            #expect(error.kind == .notFound && error.vendorCode == "V404" && error.message == "get it at 100: 404")
        }

        do {
            _ = try await http.send(try http.request(.get, "/missing"), path: "/missing") { response, _, _ in
                MBaaSError(.conflict, "override \(response.status.code)")
            }
            Issue.record("expected the override's error")
        } catch {
            #expect(error.kind == .conflict && error.message == "override 404")
        }

        do {
            _ = try await http.send(try http.request(.get, "/refused"), path: "/refused")
            Issue.record("expected a transport error")
        } catch {
            #expect(error.kind == .transport && error.message.hasPrefix("GET /refused: "))
        }

        let html = try await http.send(try http.request(.get, "/html"), path: "/html")
        do {
            _ = try http.json(html)
            Issue.record("expected a decoding error")
        } catch {
            #expect(error.kind == .decoding && error.httpStatus == 200 && error.message.hasPrefix("Demo response is not JSON"))
        }
        #expect(sent.value.map(\.url.path) == ["/api/ok", "/api/missing", "/api/missing", "/api/refused", "/api/html"])
    }

    @Test("a cancelled task sends nothing")
    func cancelled() async throws {
        let sent = Locked<[TransportRequest]>([])
        let http = Self.client(sent: sent) { _ in TransportResponse(status: 200) }
        let task = Task { () async throws -> TransportResponse in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await http.send(try http.request(.get, "/x"), path: "/x")
        }
        let result = await task.result
        if case .failure(let error) = result { #expect((error as? MBaaSError)?.kind == .transport) } else { Issue.record("expected a failure") }
        #expect(sent.value.isEmpty)
    }
}
