import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSReplay
import Testing

@testable import MBaaSKii

/// The conformance suite over the Kii cassettes (`Fixtures/Cassettes/kii/`), and the generator that authors them.
@Suite struct KiiConformanceTests {
    static let cassettes = ConformanceSuite.bundledFixtures.appendingPathComponent("Cassettes/kii")

    /// Every runnable scenario passes in replay; the rest are skipped for a declared capability.
    @Test func everyRunnableScenarioPassesInReplay() async throws {
        let suite = try ConformanceSuite.bundled()
        let results = await ConformanceRunner.replay(adapter: "kii", factory: KiiBackendFactory(), cassettes: Self.cassettes,
                                                     scenarios: suite.scenarios)
        for r in results where r.outcome != .passed && r.outcome != .skipped {
            Issue.record("\(r.scenario): \(r.outcome) \(r.reason ?? "")")
        }
        let passed = results.filter { $0.outcome == .passed }.count
        let skipped = results.filter { $0.outcome == .skipped }
        #expect(passed + skipped.count == suite.scenarios.count)
        #expect(passed >= 40, "passed \(passed) of \(suite.scenarios.count)")
        // Skips are exactly the features Kii lacks, each with its reason.
        for s in skipped { #expect(s.reason?.contains("missing capability") == true, "\(s.scenario)") }
        #expect(Set(skipped.map(\.scenario)) == [
            "objects.update.increment", "objects.update.arrayOps", "queries.regex", "queries.containsAll",
            "queries.sort.multiKey", "queries.skip", "queries.keys", "auth.logOut.server", "auth.acl.private",
            "batch.create", "batch.mixed",
        ])
    }

    /// The documented facts each authored cassette follows.
    static let facts: [String] = [
        "kii.md §1.1 REST base https://api-jp.kii.com/api, resources under /apps/{appID}",
        "kii.md §1.2 X-Kii-AppID/X-Kii-AppKey on every call, Authorization: Bearer with a token",
        "kii.md §2.1 POST /api/oauth2/token: password, refresh_token and client_credentials grants; invalid_grant on a wrong password",
        "kii.md §2.2 POST /apps/{appID}/users registers (201 {userID,...}), USER_ALREADY_EXISTS 409",
        "kii.md §3.2 POST {bucket}/objects with application/vnd.{appID}.mydata+json → 201 {objectID,createdAt,dataType}, ETag \"1\"",
        "kii.md §3.4 GET object: reserved _id/_created/_modified/_owner/_dataType/_version, ETag",
        "kii.md §3.5 PUT full update with If-Match → 200 {modifiedAt}; stale → 409 OBJECT_VERSION_IS_STALE",
        "kii.md §3.6 POST with X-HTTP-Method-Override: PATCH merges keys and returns the object; missing → 404",
        "kii.md §3.7 DELETE object → 204",
        "kii.md §4.1-4.3 QueryRequest clause/orderBy/descending/bestEffortLimit/paginationKey; nextPaginationKey; BUCKET_NOT_FOUND for a missing bucket",
        "kii.md §4.2 not(eq) does not match objects without the field (SDK notEquals); hasField types STRING/INTEGER/DECIMAL/BOOLEAN",
        "kii.md §4.4 COUNT aggregation → {\"aggregations\":{\"count_field\":N}}",
        "kii.md §5.1 PUT/GET/DELETE {object}/body with the body's Content-Type; OBJECT_BODY_NOT_FOUND 404",
        "kii.md §6.2 and docs.kii.com Bucket/KiiObject Access Control: app scope lets any authenticated user create, every caller query and read",
        "kii.md §7 error bodies {errorCode,message} with application/vnd.kii.<Name>Exception+json",
    ]

    static let notes = """
        Authored with KiiSimulator (Tests/MBaaSKiiTests/KiiSimulator.swift), a documented-behaviour simulator \
        written independently of the adapter's codec, then replayed through the adapter. Recorded in admin mode \
        (client_credentials, kii.md §2.1) because Kii refuses object creation to anonymous callers in app scope; \
        user sessions take over after signUp/logIn.
        """

    /// The documented fact an exchange follows, by method and path.
    static func fact(_ i: Interaction) -> String? {
        let path = i.request.path, method = i.request.method, status = i.response.status
        if path.hasSuffix("/oauth2/token") {
            return status == 200 ? "kii.md §2.1 token endpoint → 200 {id,access_token,expires_in,token_type}"
                : "kii.md §2.1 failed login → 400 invalid_grant"
        }
        if path.hasSuffix("/users"), method == "POST" {
            return status == 201 ? "kii.md §2.2 registration → 201 user record" : "kii.md §2.2 USER_ALREADY_EXISTS 409"
        }
        if path.hasSuffix("/users/me") { return "kii.md §2.1 GET users/me returns the user with userID" }
        if path.hasSuffix("/query") {
            return status == 404 ? "kii.md §4.3 a query on a missing bucket is 404 BUCKET_NOT_FOUND"
                : "kii.md §4.1-4.4 QueryRequest → results/nextPaginationKey or aggregations"
        }
        if path.hasSuffix("/body") {
            switch (method, status) {
            case ("PUT", _): return "kii.md §5.1 body upload: raw bytes with the file's Content-Type → 200 {modifiedAt}"
            case ("GET", 200): return "kii.md §5.1 body download → 200 with the stored Content-Type"
            case ("DELETE", 204): return "kii.md §5.1 body delete → 204"
            default: return "kii.md §5.1 OBJECT_BODY_NOT_FOUND / OBJECT_NOT_FOUND 404"
            }
        }
        if path.contains("/acl") { return "kii.md §6.1 ACL list, grant (PUT) and revoke (DELETE)" }
        if path.hasSuffix("/objects"), method == "POST" {
            return status == 201 ? "kii.md §3.2 create → 201 {objectID,createdAt,dataType}, ETag \"1\""
                : "kii.md §6.2/§7 creation refused"
        }
        if status == 404 { return "kii.md §7.2 OBJECT_NOT_FOUND 404" }
        if status == 409 { return "kii.md §3.5 stale If-Match → 409 OBJECT_VERSION_IS_STALE" }
        switch method {
        case "GET": return "kii.md §3.4 GET object with reserved fields and ETag"
        case "PUT": return "kii.md §3.5 full update (PUT with If-Match) → 200 {modifiedAt}, new ETag"
        case "POST": return "kii.md §3.6 partial update (X-HTTP-Method-Override: PATCH) → merged object"
        case "DELETE": return "kii.md §3.7 DELETE → 204"
        default: return nil
        }
    }

    /// Authors the cassettes: runs every scenario through `ConformanceRunner.record` with a fresh simulator and a
    /// fixed clock, then annotates each exchange with its fact. A generator, not a test: it runs only with
    /// `MBAAS_AUTHOR_CASSETTES=1` and its output is verified by ``everyRunnableScenarioPassesInReplay()``.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["MBAAS_AUTHOR_CASSETTES"] == "1"))
    func authorCassettes() async throws {
        let suite = try ConformanceSuite.bundled()
        try FileManager.default.createDirectory(at: Self.cassettes, withIntermediateDirectories: true)
        let url = try BackendURL(parsing: "kii://simapp:simsecret@api-jp.kii.com?clientID=simclient")
        let recordedAt = Date(timeIntervalSince1970: 1_717_200_000)
        var written = 0
        for scenario in suite.scenarios {
            let results = await ConformanceRunner.record(
                adapter: "kii", factory: KiiBackendFactory(), url: url, transport: KiiSimulator(), clock: { recordedAt },
                provenance: .authored(server: "Kii Cloud (KiiSimulator, documented behaviour)", facts: Self.facts, notes: Self.notes),
                scenarios: [scenario], to: Self.cassettes)
            for r in results {
                switch r.outcome {
                case .recorded: written += 1
                case .skipped: break
                default: Issue.record("\(r.scenario): \(r.outcome) \(r.reason ?? "")")
                }
            }
            let file = Self.cassettes.appendingPathComponent(scenario.id + ".json")
            guard FileManager.default.fileExists(atPath: file.path) else { continue }
            // Read raw: `Cassette.load` would fill the placeholders in.
            var cassette = try Cassette(json: JSON.parse(Data(contentsOf: file)))
            for i in cassette.interactions.indices { cassette.interactions[i].fact = Self.fact(cassette.interactions[i]) }
            try cassette.write(to: file)
        }
        #expect(written > 0)
    }
}
