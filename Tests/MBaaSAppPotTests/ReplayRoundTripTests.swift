import Foundation
import MBaaSCore
import MBaaSReplay
import Testing

@testable import MBaaSAppPot

/// The adapter's requests must be deterministic for a pinned clock (transaction ids, multipart boundaries), and
/// its recordings must scrub to cassettes without secrets that replay exactly.
@Suite("AppPot record and replay")
struct ReplayRoundTripTests {
    static let appKey = "sim-app-key-0001"
    static let url = "apppot+http://\(appKey):alice-pass@apppot.test:8080/apppot?company=24&app=jp.co.example.App&version=1.0&device=UDID1&user=alice"

    /// A session touching every endpoint family.
    static func exercise(_ backend: AppPotBackend) async throws -> [String] {
        var seen: [String] = []
        let r = try await backend.create(Record(className: "Memo", fields: ["title": "a", "money": 5, "done": true]))
        seen.append(r.fields["title"]?.stringValue ?? "?")
        let u = try await backend.update(className: "Memo", id: r.id!, RecordUpdate(changes: ["money": .set(6)], expectedVersion: r.version))
        seen.append("\(u.fields["money"]?.intValue ?? -1)")
        let page = try await backend.queryPage(Query("Memo").filter(Field("money") >= 6))
        seen.append("\(page.records.count)")
        seen.append("\(try await backend.count(Query("Memo").filter(Field("money") > 100)))")
        let file = try await backend.upload(FileUpload(name: "a.txt", source: .data(Data("hi".utf8))))
        seen.append(String(decoding: try await backend.download(file), as: UTF8.self))
        try await backend.deleteFile(file)
        try await backend.logMonitor("done")
        try await backend.delete(className: "Memo", id: r.id!)
        try await backend.logOut(confirmWithServer: true)
        return seen
    }

    @Test("a recorded session scrubs clean and replays request for request")
    func roundTrip() async throws {
        var options = AppPotSimulator.Options()
        options.appKey = Self.appKey
        let recorder = RecordingTransport(wrapping: AppPotSimulator(options: options), profile: AppPotCassettes.profile,
                                          scrubber: AppPotCassettes.scrubber(appKey: Self.appKey))
        let live = try await AppPotBackendFactory().open(try BackendURL(parsing: Self.url),
                                                         context: BackendContext(transport: recorder, clock: fixedClock))
        let liveResult = try await Self.exercise(live as! AppPotBackend)
        #expect(liveResult == ["a", "6", "1", "0", "hi"])
        let cassette = recorder.cassette(name: "roundtrip", adapter: "apppot", provenance: .authored(facts: ["A5"]),
                                         recordedAt: fixedClock(), backendURL: Self.url)
        let text = cassette.json.printed()
        #expect(!text.contains(Self.appKey) && !text.contains("alice-pass"))
        #expect(SecretScanner.scan(json: cassette.json).isEmpty, "\(SecretScanner.scan(json: cassette.json))")

        let replay = ReplayingTransport(cassette: cassette, profile: AppPotCassettes.profile)
        let url = try BackendURL(parsing: replay.cassette.backendURL!)
        let again = try await AppPotBackendFactory().open(url, context: BackendContext(transport: replay, clock: fixedClock))
        #expect(try await Self.exercise(again as! AppPotBackend) == liveResult)
        try replay.verifyAllUsed()
    }
}
