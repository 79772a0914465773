import Foundation
@testable import MBaaSConformance
import MBaaSCore
import MBaaSExampleAdapter
import MBaaSReplay
import Testing

/// Record -> scrub -> replay end to end with an adapter that talks HTTP (to an in-process server transport).
@Suite struct RecordReplayRoundTripTests {
    static let ids = ["objects.crud.basic", "queries.eq", "auth.signUp.logIn", "auth.logIn.wrongPassword",
                      "auth.session.restore", "errors.notFound.record", "queries.count", "auth.currentUser.noSession"]

    @Test func recordedCassettesReplayAndKeepNoSecrets() async throws {
        let suite = try ConformanceSuite.bundled().selecting(Self.ids)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("roundtrip-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = try BackendURL(parsing: "example+http://app-key-1:s3cr3t-value-42@127.0.0.1:9")
        let recorded = await ConformanceRunner.record(
            adapter: "example", factory: HTTPExampleFactory(), url: url,
            transport: ExampleHTTPServer(secret: "s3cr3t-value-42"), clock: { Date(timeIntervalSince1970: 1_750_000_000) },
            provenance: .recorded(server: "example"), scenarios: suite.scenarios, to: dir)
        for r in recorded {
            #expect(r.outcome == (r.scenario == "queries.count" ? .skipped : .recorded), "\(r.scenario): \(r.reason ?? "")")
        }

        // No secret reaches a file: the URL secret, the scenario passwords and the session tokens are placeholders.
        let file = dir.appendingPathComponent("auth.logIn.wrongPassword.json")
        let text = try String(contentsOf: file, encoding: .utf8)
        let cassette = try Cassette.load(from: file)
        let run = try #require(cassette.variables["run"])
        #expect(!text.contains("s3cr3t-value-42"))
        #expect(!text.contains("pw-\(run)-Secret1"))
        #expect(!text.contains("not-the-password"))
        #expect(text.contains("<SCENARIO_PASSWORD_1>") && text.contains("<SCENARIO_PASSWORD_2>"))
        #expect(text.contains("<BACKEND_SECRET>"))
        #expect(text.contains("<TOKEN_1>"))
        #expect(text.contains("u\(run)a"))

        // Replay needs no server and passes.
        let replayed = await suite.replay(adapter: "example", factory: HTTPExampleFactory(), cassettes: dir)
        for r in replayed.results {
            #expect(r.outcome == (r.scenario == "queries.count" ? .skipped : .passed), "\(r.scenario): \(r.reason ?? "")")
        }

        // A cassette whose server answered differently fails with the difference.
        let crud = dir.appendingPathComponent("objects.crud.basic.json")
        // (the last occurrence: the response to the `get` after the update)
        let original = try String(contentsOf: crud, encoding: .utf8)
        let last = try #require(original.range(of: "\"money\": 60", options: .backwards))
        let tampered = original.replacingCharacters(in: last, with: "\"money\": 61")
        try tampered.write(to: crud, atomically: true, encoding: .utf8)
        let again = await suite.selecting(["objects.crud.basic"]).replay(adapter: "example", factory: HTTPExampleFactory(), cassettes: dir)
        let result = try #require(again.results.first)
        #expect(result.outcome == .failed)
        #expect(result.reason == "step 4 `get`: field 'money': expected 60, got 61")
    }

    @Test func anAdapterSendingSomethingElseIsErroredByTheStrictReplay() async throws {
        let suite = try ConformanceSuite.bundled().selecting(["queries.eq"])
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("roundtrip-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = try BackendURL(parsing: "example+http://app-key-1:s3cr3t-value-42@127.0.0.1:9")
        _ = await ConformanceRunner.record(
            adapter: "example", factory: HTTPExampleFactory(), url: url, transport: ExampleHTTPServer(secret: "s3cr3t-value-42"),
            clock: nil, provenance: .recorded(server: "example"), scenarios: suite.scenarios, to: dir)
        // Edit the recorded query so the adapter's request no longer matches it.
        let file = dir.appendingPathComponent("queries.eq.json")
        let text = try String(contentsOf: file, encoding: .utf8).replacingOccurrences(of: "\"value\": \"n\"", with: "\"value\": \"-n\"")
        try text.write(to: file, atomically: true, encoding: .utf8)
        let result = try #require(await suite.replay(adapter: "example", factory: HTTPExampleFactory(), cassettes: dir).results.first)
        #expect(result.outcome == .errored)
        #expect(result.reason?.contains("no unused recorded interaction matches GET") == true, "\(result.reason ?? "")")
    }

    @Test func replayComparesWhoIsCalling_swappingTwoUsersTokensFails() async throws {
        let scenario = try Scenario(json: JSON.parse("""
            {"id":"auth.two.users","title":"two users","group":"auth","requires":["auth","signUp"],"users":["alice","bob"],
             "steps":[
              {"op":"logIn","username":"${alice_username}","password":"${alice_password}"},
              {"op":"logIn","as":"bob","username":"${bob_username}","password":"${bob_password}"},
              {"op":"currentUser","expect":{"match":{"$.id":"${alice_id}"}}},
              {"op":"currentUser","as":"bob","expect":{"match":{"$.id":"${bob_id}"}}}]}
            """))
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("identity-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = try BackendURL(parsing: "example+http://app-key-1:s3cr3t-value-42@127.0.0.1:9")
        let recorded = await ConformanceRunner.record(
            adapter: "example", factory: HTTPExampleFactory(), url: url, transport: ExampleHTTPServer(secret: "s3cr3t-value-42"),
            clock: { Date(timeIntervalSince1970: 1_750_000_000) }, provenance: .recorded(server: "example"),
            scenarios: [scenario], to: dir)
        #expect(recorded.first?.outcome == .recorded, "\(recorded.first?.reason ?? "")")
        let file = dir.appendingPathComponent("auth.two.users.json")
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text.contains("FIXTURE_PASSWORD_ALICE"))
        let replayed = await ConformanceRunner.replay(adapter: "example", factory: HTTPExampleFactory(), cassettes: dir,
                                                      scenarios: [scenario])
        #expect(replayed.first?.outcome == .passed, "\(replayed.first?.reason ?? "")")
        #expect(replayed.first?.fixture == .recorded)

        // Swap the two users' tokens in the recorded requests only: the cassette now says alice's request was
        // made with bob's token. Replay must notice.
        var cassette = try Cassette.load(from: file)
        let headers = cassette.interactions.compactMap { $0.request.headers["Authorization"] }
        #expect(Set(headers).count >= 2, "\(headers)")
        for i in cassette.interactions.indices {
            guard let auth = cassette.interactions[i].request.headers["Authorization"] else { continue }
            let swapped = auth.contains("<TOKEN_1>") ? auth.replacingOccurrences(of: "<TOKEN_1>", with: "<TOKEN_2>")
                : auth.replacingOccurrences(of: "<TOKEN_2>", with: "<TOKEN_1>")
            cassette.interactions[i].request.headers["Authorization"] = swapped
        }
        try cassette.write(to: file)
        let swapped = await ConformanceRunner.replay(adapter: "example", factory: HTTPExampleFactory(), cassettes: dir,
                                                     scenarios: [scenario])
        #expect(swapped.first?.outcome != .passed, "\(swapped.first?.reason ?? "")")
    }

    @Test func aMissTheAdapterSwallowedStillMakesTheScenarioErrored() async throws {
        // A step that accepts a transport error would pass on the error the replay throws for a request the
        // cassette does not hold; the runner remembers the miss and errors the scenario.
        let scenario = try Scenario(json: JSON.parse("""
            {"id":"objects.swallowed","title":"","group":"objects","requires":["objects"],"steps":[
              {"op":"get","class":"M_${run}","id":"nope","expectError":["notFound","transport"]}]}
            """))
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("miss-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let empty = Cassette(name: "objects.swallowed", adapter: "example", provenance: .recorded(server: "example"),
                             recordedAt: Date(timeIntervalSince1970: 1_750_000_000),
                             backendURL: "example+http://app-key-1:<BACKEND_SECRET>@127.0.0.1:9",
                             variables: ["run": "abcdefgh"], interactions: [])
        try empty.write(to: dir.appendingPathComponent("objects.swallowed.json"))
        let result = try #require(await ConformanceRunner.replay(
            adapter: "example", factory: HTTPExampleFactory(), cassettes: dir, scenarios: [scenario]).first)
        #expect(result.outcome == .errored)
        #expect(result.reason?.contains("1 request(s) matched no recorded interaction") == true, "\(result.reason ?? "")")
    }
}
