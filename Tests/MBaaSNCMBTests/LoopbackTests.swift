import Foundation
import MBaaSCore
import MBaaSReplay
import MBaaSTesting
import Testing
@testable import MBaaSNCMB

/// The adapter over real HTTP: URLSession → LoopbackServer (127.0.0.1) → the simulator. Checks that what the
/// adapter signs is what reaches the server through a real client stack (ports, percent-encoding, multipart).
@Suite("NCMB over loopback HTTP")
struct LoopbackTests {
    @Test("ncmb+http:// URL: objects, queries with encoded where, files with a name needing percent-encoding, auth")
    func endToEnd() async throws {
        let sim = NCMBSimulator(applicationKey: "APPKEY", clientKey: "CLIENTKEY", start: BackendSimulatorTests.start)
        let server = try LoopbackServer { request in sim.respond(request) }
        defer { server.stop() }
        let registry = BackendRegistry([NCMBBackendFactory()])
        let backend = try await registry.open("ncmb+http://APPKEY:CLIENTKEY@127.0.0.1:\(server.port)")

        let memo = try await backend.create(Record(className: "Memo", fields: ["title": "a+b 'c' 日本", "n": 1]))
        let found = try await backend.queryPage(Query("Memo").filter(Field("title") == "a+b 'c' 日本"))
        #expect(found.records.map(\.id) == [memo.id])

        let bytes = Data((0..<300).map { UInt8($0 % 256) })
        let ref = try await backend.upload(FileUpload(name: "photo #1.bin", source: .data(bytes)))
        #expect(try await backend.download(ref) == bytes)

        _ = try await backend.signUp(username: "ann", password: "pw")
        #expect(try await backend.currentUser().username == "ann")
        try await backend.logOut(confirmWithServer: true)
        #expect(await backend.session == nil)
    }

    @Test("the server answers 400 to garbage, keeps connections alive, and stops")
    func serverBasics() async throws {
        let counter = CallCounter()
        let server = try LoopbackServer { request in
            counter.increment()
            return TransportResponse(status: 200, headers: [.contentType: "text/plain"], body: Data("\(request.method) \(request.url.path) \(request.body?.count ?? 0)".utf8))
        }
        let transport = URLSessionTransport()
        for i in 0..<3 {
            let url = URL(string: "\(server.baseURL)/echo/\(i)")!
            let response = try await transport.send(TransportRequest(method: .post, url: url, body: Data(repeating: 1, count: i * 1000)))
            #expect(response.status == 200)
            #expect(String(decoding: response.body, as: UTF8.self) == "POST /echo/\(i) \(i * 1000)")
        }
        #expect(counter.value == 3)
        server.stop()
        #expect(!server.isRunning)
        await #expect(throws: MBaaSError.self) {
            _ = try await transport.send(TransportRequest(method: .get, url: URL(string: "\(server.baseURL)/after")!, timeout: 2))
        }
    }
}
