import Foundation
import MBaaSCore
import Testing
@testable import MBaaSReplay

@Suite struct ReplayingTransportTests {
    @Test func identicalRequestsServedInRecordedOrderEachOnce() async throws {
        // A 429-then-200 retry and a polling sequence replay as recorded.
        let t = ReplayingTransport(cassette: cassette([
            interaction("GET", "/jobs/1", status: 429, response: .object(["n": 1])),
            interaction("GET", "/jobs/1", status: 200, response: .object(["n": 2])),
            interaction("GET", "/jobs/1", status: 200, response: .object(["n": 3])),
        ]))
        var seen: [JSON?] = []
        var statuses: [Int] = []
        for _ in 0..<3 {
            let r = try await t.send(request("GET", "https://x/jobs/1"))
            statuses.append(r.status.code)
            seen.append(try r.json()["n"])
        }
        #expect(statuses == [429, 200, 200])
        #expect(seen == [1, 2, 3])
        let e = await thrownError { _ = try await t.send(request("GET", "https://x/jobs/1")) }
        #expect(e?.kind == .transport)
        #expect(e?.message.contains("#0 GET /jobs/1 matches but was already used") == true)
        try t.verifyAllUsed()
    }

    @Test func strictFailureNamesClosestInteractionAndFirstDifference() async {
        let t = ReplayingTransport(cassette: cassette([
            interaction("POST", "/users"),
            interaction("GET", "/classes/Memo", query: [("limit", "2")]),
            interaction("PUT", "/classes/Memo/abc", headers: [.contentType: "application/json"],
                        body: .json(.object(["fields": .object(["title": "a"])]))),
        ], name: "objects.crud.basic"))
        let q = await thrownError { _ = try await t.send(request("GET", "https://x/classes/Memo?limit=3")) }
        #expect(q?.kind == .transport)
        #expect(q?.message.contains("cassette 'objects.crud.basic'") == true)
        #expect(q?.message.contains("GET /classes/Memo?limit=3") == true)
        #expect(q?.message.contains("closest is #1 GET /classes/Memo: query 'limit': expected \"2\", got \"3\"") == true)
        let b = await thrownError {
            _ = try await t.send(request("PUT", "https://x/classes/Memo/abc", json: .object(["fields": .object(["title": "b"])])))
        }
        #expect(b?.message.contains("closest is #2 PUT /classes/Memo/abc: body at $.fields.title: expected \"a\", got \"b\"") == true)
        let none = await thrownError { _ = try await t.send(request("DELETE", "https://x/nothing/like/it")) }
        #expect(none?.message.contains("closest is #") == true)
    }

    @Test func aRequestRecordedAnonymousDoesNotMatchAnIdentifiedOne() async throws {
        let t = ReplayingTransport(cassette: cassette([interaction("GET", "/a")], name: "s.anon"))
        let e = await thrownError { _ = try await t.send(request("GET", "https://x/a", headers: [("Authorization", "Bearer abc")])) }
        #expect(e?.message.contains("header 'Authorization': recorded without one (anonymous)") == true, "\(e?.message ?? "")")
        #expect(t.misses.count == 1)
        _ = try await t.send(request("GET", "https://x/a"))
        try t.verifyAllUsed()
    }

    @Test func verifyAllUsedListsUnusedInteractions() async throws {
        let t = ReplayingTransport(cassette: cassette([
            interaction("GET", "/a"), interaction("GET", "/b"), interaction("DELETE", "/c"),
        ], name: "s.unused"))
        _ = try await t.send(request("GET", "https://x/b"))
        #expect(t.unusedInteractions == [0, 2])
        let e = #expect(throws: MBaaSError.self) { try t.verifyAllUsed() }
        #expect(e?.message.contains("2 of 3 recorded interactions were not used: #0 GET /a, #2 DELETE /c") == true)
        t.reset()
        #expect(t.unusedInteractions == [0, 1, 2])
    }

    @Test func lenientModeRepeatsLastMatchAndDoesNotRequireAllUsed() async throws {
        let t = ReplayingTransport(cassette: cassette([
            interaction("GET", "/poll", response: .object(["state": "running"])),
            interaction("GET", "/poll", response: .object(["state": "done"])),
            interaction("GET", "/never"),
        ]), strict: false)
        var states: [String?] = []
        for _ in 0..<4 { states.append(try await t.send(request("GET", "https://x/poll")).json()["state"]?.stringValue) }
        #expect(states == ["running", "done", "done", "done"])
        try t.verifyAllUsed()
        let e = await thrownError { _ = try await t.send(request("GET", "https://x/unknown")) }
        #expect(e?.kind == .transport)
    }

    @Test func concurrentCallersEachGetADistinctInteraction() async throws {
        let n = 40
        let t = ReplayingTransport(cassette: cassette((0..<n).map { interaction("GET", "/same", response: .object(["i": .int(Int64($0))])) }))
        let values = try await withThrowingTaskGroup(of: Int64.self) { group in
            for _ in 0..<n { group.addTask { try await t.send(request("GET", "https://x/same")).json()["i"]!.intValue! } }
            var out: [Int64] = []
            for try await v in group { out.append(v) }
            return out
        }
        #expect(Set(values).count == n)
        #expect(t.usedCount == n)
        try t.verifyAllUsed()
    }

    @Test func placeholdersSubstitutedForReplayingClient() async throws {
        let c = cassette([
            interaction("GET", "/apps/<APP_ID>/me", headers: HTTPFields([("X-Token", "<TOKEN_1>")]), response: .object(["token": "<TOKEN_1>"])),
        ])
        let t = ReplayingTransport(cassette: c, substitutions: ["APP_ID": "app-1"])
        let r = try await t.send(request("GET", "https://x/apps/app-1/me", headers: [("X-Token", "replay-token-1")]))
        #expect(try r.json()["token"] == "replay-token-1")
        #expect(t.cassette.backendURL == "test://replay-app-key@example.com")
    }
}
