import Foundation
import MBaaSCore
import MBaaSReplay
import Testing

/// Issue #33.1: "recorded" means a real vendor server answered; the label is measured from the responses.
@Suite struct ServerIdentityTests {
    static func stub(_ headers: [(String, String)]) -> StubTransport {
        StubTransport { _ in TransportResponse.json(200, .object(["ok": true]), headers: headers) }
    }

    @Test func aRecordingTheEmulatorAnsweredIsSimulatedWhateverTheCallerDeclared() async throws {
        let live = Self.stub([("Server", "mbaas-emulator/0.9.0"), ("X-MBaaS-Emulator", "ncmb")])
        // A selection that would drop both headers: the evidence is kept anyway.
        let recorder = RecordingTransport(wrapping: live, requestHeaders: .defaultRequest,
                                          responseHeaders: HeaderSelection(names: ["content-type"]))
        _ = try await recorder.send(request("GET", "http://127.0.0.1:8080/2013-09-01/classes/Memo"))
        #expect(recorder.servers == [ServerIdentity(product: "mbaas-emulator", version: "0.9.0", emulatorDialect: "ncmb")])
        let c = recorder.cassette(name: "n", adapter: "ncmb",
                                  provenance: .recorded(server: "ncmb", version: "2013-09-01"), recordedAt: fixedDate)
        #expect(c.provenance.kind == .simulated)
        #expect(c.provenance.emulator == "mbaas-emulator/0.9.0 (dialect ncmb)")
        #expect(c.provenance.server == "MBaaSKit emulator, ncmb dialect")
        #expect(c.provenance.serverVersion == "0.9.0")
        #expect(c.provenance.serverVersionFrom == .server)
        #expect(c.interactions[0].response.headers.names == ["Content-Type", "Server", "X-MBaaS-Emulator"])
        #expect(c.interactions[0].fact == nil)  // not a capture of the vendor
        // The file round-trips and loads.
        #expect(try Cassette(json: JSON.parse(c.fileData)) == c)
    }

    @Test func theServerVersionIsWhatTheServerSaysAndTheFlagOnlyWhereItSaysNothing() async throws {
        let stating = RecordingTransport(wrapping: Self.stub([("Server", "PocketBase/0.40.6 (linux)")]))
        _ = try await stating.send(request("GET", "http://127.0.0.1:8090/api/health"))
        let a = stating.cassette(name: "n", adapter: "pocketbase",
                                 provenance: .recorded(server: "pocketbase", version: "9.9.9"), recordedAt: fixedDate)
        #expect(a.provenance.kind == .recorded)
        #expect(a.provenance.serverVersion == "0.40.6")
        #expect(a.provenance.serverVersionFrom == .server)
        #expect(a.provenance.emulator == nil)
        // Issue #33.3: a recorded exchange's fact is the capture, with the version the server stated.
        #expect(a.interactions.map(\.fact) == ["[capture] pocketbase 0.40.6"])
        #expect(a.interactions[0].evidence == .capture)

        let silent = RecordingTransport(wrapping: Self.stub([]))
        _ = try await silent.send(request("GET", "http://127.0.0.1:8090/api/health"))
        let b = silent.cassette(name: "n", adapter: "pocketbase",
                                provenance: .recorded(server: "pocketbase", version: "0.40.6"), recordedAt: fixedDate)
        #expect(b.provenance.kind == .recorded)
        #expect(b.provenance.serverVersion == "0.40.6")
        #expect(b.provenance.serverVersionFrom == .flag)
        #expect(b.provenance.json["serverVersionFrom"] == .string("flag"))
        let c = silent.cassette(name: "n", adapter: "pocketbase", provenance: .recorded(server: "pocketbase"),
                                recordedAt: fixedDate)
        #expect(c.provenance.serverVersion == nil)
        #expect(c.provenance.serverVersionFrom == nil)
    }

    static func document(kind: String, responseHeaders: JSON, emulator: String? = nil, versionFrom: String? = nil) -> JSON {
        var provenance: JSONObject = ["kind": .string(kind), "server": "PocketBase"]
        if let emulator { provenance["emulator"] = .string(emulator) }
        if let versionFrom { provenance["serverVersionFrom"] = .string(versionFrom) }
        return .object([
            "formatVersion": 1, "name": "objects.crud.basic", "adapter": "pocketbase",
            "provenance": .object(provenance), "recordedAt": "2024-04-01T00:00:00.123Z",
            "interactions": .array([
                .object(["request": .object(["method": "GET", "path": "/api/health"]),
                         "response": .object(["status": 200, "headers": .object(["Content-Type": "application/json"])])]),
                .object(["request": .object(["method": "GET", "path": "/api/health"]),
                         "response": .object(["status": 200, "headers": responseHeaders])]),
            ]),
        ])
    }

    @Test func aCassetteSayingRecordedWhoseExchangesShowTheEmulatorIsAFormatError() throws {
        for headers: JSON in [.object(["X-MBaaS-Emulator": "ncmb"]), .object(["Server": "mbaas-emulator/0.9.0"])] {
            let error = #expect(throws: MBaaSError.self) {
                try Cassette(json: Self.document(kind: "recorded", responseHeaders: headers))
            }
            #expect(error?.kind == .decoding)
            #expect(error?.message.hasPrefix("cassette interactions[1].response.headers: provenance.kind is \"recorded\" but MBaaSKit's emulator answered this exchange") == true, "\(error?.message ?? "")")
            // The same exchanges labelled simulated (or authored) load.
            #expect(try Cassette(json: Self.document(kind: "simulated", responseHeaders: headers)).provenance.kind == .simulated)
            #expect(try Cassette(json: Self.document(kind: "authored", responseHeaders: headers)).provenance.kind == .authored)
        }
        // A provenance that names the emulator cannot say recorded either.
        let error = #expect(throws: MBaaSError.self) {
            try Cassette(json: Self.document(kind: "recorded", responseHeaders: .object([:]),
                                             emulator: "mbaas-emulator/0.9.0 (dialect ncmb)"))
        }
        #expect(error?.message.hasPrefix("cassette provenance.emulator: the cassette says \"recorded\"") == true)
        // A vendor's own Server header is no emulator.
        #expect(try Cassette(json: Self.document(kind: "recorded", responseHeaders: .object(["Server": "nginx/1.25"])))
            .provenance.kind == .recorded)
        // An unknown version source is refused by name.
        let doc = Self.document(kind: "recorded", responseHeaders: .object([:]), versionFrom: "guess")
        let bad = #expect(throws: MBaaSError.self) { try Cassette(json: doc) }
        #expect(bad?.message == "cassette provenance.serverVersionFrom: expected \"server\" or \"flag\"")
    }
}
