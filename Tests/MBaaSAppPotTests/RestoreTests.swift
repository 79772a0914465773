import Foundation
import MBaaSCore
import Testing

@testable import MBaaSAppPot

@Suite("AppPot restored sessions and the URL's user")
struct RestoreTests {
    static let aliceURL = simulatorURL.replacingOccurrences(of: "APP_KEY@", with: "APP_KEY:alice-pass@") + "&user=alice"

    @Test("an expired restored session is not used when the URL names a user: that user logs in again; a live one is kept")
    func expiredSessionLogsTheURLUserIn() async throws {
        let (b, _) = try await makeBackend(url: Self.aliceURL)
        await b.restore(Session(token: "stale", userId: "x", username: "alice", expiresAt: fixedClock().addingTimeInterval(-1)))
        #expect(await b.session == nil)
        #expect(try await b.currentUser().username == "alice")
        let renewed = try #require(await b.session)
        #expect(renewed.token != "stale" && renewed.username == "alice")

        let (c, _) = try await makeBackend(url: Self.aliceURL)
        let live = Session(token: "kept", userId: "x", username: "alice", expiresAt: fixedClock().addingTimeInterval(60))
        await c.restore(live)
        #expect(await c.session == live)
        // Without a URL user an expired session is restored as it is (the server decides).
        let (d, _) = try await makeBackend()
        let old = Session(token: "old", userId: "x", expiresAt: fixedClock().addingTimeInterval(-1))
        await d.restore(old)
        #expect(await d.session == old)
    }
}
