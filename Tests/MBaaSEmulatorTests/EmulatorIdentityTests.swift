import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSEmulator
import MBaaSNCMB
import MBaaSReplay
import Testing

/// Issue #33.1: the emulator names itself on every response, so a recording of it is `simulated`, never `recorded`.
@Suite("The emulator identifies itself", .serialized)
struct EmulatorIdentityTests {
    @Test func everyResponseNamesTheEmulatorAndItsDialect() async throws {
        let dialect = try makeDialect()
        let running = try await EmulatorServer(dialect: dialect).start()
        // An unsigned request: the dialect refuses it, and still names itself.
        let response = try await URLSessionTransport().send(TransportRequest(
            method: .get, url: URL(string: running.baseURL + "/2013-09-01/classes/Memo")!))
        await running.stop()
        #expect(response.status.code == 401 || response.status.code == 403, "\(response.status.code)")
        #expect(response.headers["Server"] == "mbaas-emulator/\(MBaaSKitVersion.current)")
        #expect(response.headers["X-MBaaS-Emulator"] == "ncmb")
        // The names the recorder reads are the ones the server writes.
        #expect(EmulatorServer.emulatorHeader == ServerIdentity.emulatorHeader)
        #expect(EmulatorServer.serverHeader.hasPrefix(ServerIdentity.emulatorProduct + "/"))
    }

    @Test func aCassetteRecordedFromTheEmulatorReplaysSimulated() async throws {
        let dialect = try makeDialect()
        let running = try await EmulatorServer(dialect: dialect).start()
        let url = try BackendURL(parsing: dialect.backendURL(host: "127.0.0.1", port: running.port))
        let scenario = try #require(try ConformanceSuite.bundled().scenario("objects.crud.basic"))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mbaas-identity-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        // Declared "recorded" with a typed-in version, as `mbaas conformance --record --server-version` does.
        let recorded = await ConformanceRunner.record(
            adapter: "ncmb", factory: NCMBBackendFactory(), url: url, transport: URLSessionTransport(), clock: nil,
            provenance: .recorded(server: "ncmb", version: "2013-09-01", notes: "test"),
            scenarios: [scenario], to: directory)
        // A live run against it is simulated evidence too, not live.
        let live = await ConformanceRunner.live(adapter: "ncmb", factory: NCMBBackendFactory(), url: url, scenarios: [scenario])
        await running.stop()
        #expect(live.map(\.outcome) == [.passed], "\(live.first?.reason ?? "")")
        #expect(live.first?.fixture == .simulated)
        #expect(recorded.map(\.outcome) == [.recorded], "\(recorded.first?.reason ?? "")")
        #expect(recorded.first?.fixture == .simulated)

        let cassette = try Cassette.load(from: directory.appendingPathComponent("objects.crud.basic.json"))
        #expect(cassette.provenance.kind == .simulated)
        #expect(cassette.provenance.emulator == "mbaas-emulator/\(MBaaSKitVersion.current) (dialect ncmb)")
        #expect(cassette.provenance.serverVersion == MBaaSKitVersion.current)
        #expect(cassette.provenance.serverVersionFrom == .server)
        #expect(!cassette.interactions.isEmpty)
        #expect(cassette.interactions.allSatisfy { $0.response.headers["X-MBaaS-Emulator"] == "ncmb" })

        let replayed = await ConformanceRunner.replay(adapter: "ncmb", factory: NCMBBackendFactory(), cassettes: directory,
                                                      scenarios: [scenario])
        #expect(replayed.map(\.outcome) == [.passed], "\(replayed.first?.reason ?? "")")
        #expect(replayed.first?.fixture == .simulated)

        // Relabelled by hand as recorded, the same file is refused (errored, never a recorded pass).
        var relabelled = try Cassette(json: JSON.parse(Data(contentsOf: directory.appendingPathComponent("objects.crud.basic.json"))))
        relabelled.provenance.kind = .recorded
        relabelled.provenance.emulator = nil
        try relabelled.write(to: directory.appendingPathComponent("objects.crud.basic.json"))
        let refused = await ConformanceRunner.replay(adapter: "ncmb", factory: NCMBBackendFactory(), cassettes: directory,
                                                     scenarios: [scenario])
        #expect(refused.map(\.outcome) == [.errored])
        #expect(refused.first?.reason?.contains("MBaaSKit's emulator answered this exchange") == true, "\(refused.first?.reason ?? "")")
    }
}
