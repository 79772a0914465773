import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSReplay
import Testing
@testable import MBaaSNCMB

/// NCMB closed on 2024-03-31, so its conformance cassettes are *authored*: the scenarios run through the adapter
/// against ``NCMBSimulator`` (documented behaviour, independent of the adapter's codec) and the exchanges are
/// written with `provenance.kind = authored` and the facts followed. Replaying them is the conformance verdict.
@Suite("NCMB conformance cassettes")
struct ConformanceCassetteTests {
    static var fixtures: URL { ConformanceSuite.bundledFixtures }
    static var cassettes: URL { fixtures.appendingPathComponent("Cassettes/ncmb") }
    /// The authoring clock (the adapter's and the simulator's start): a date while NCMB still ran.
    static let authoredAt = ISO8601.parse("2024-03-01T00:00:00.000Z")!

    static let provenance = Provenance(
        kind: .authored, server: "NIFCLOUD mobile backend (documented behaviour)", serverVersion: "2013-09-01",
        facts: [
            "ncmb.md §1.1 base URL /2013-09-01; X-NCMB-Application-Key, X-NCMB-Timestamp, X-NCMB-Signature on every call; error body {\"code\":\"E…\",\"error\":…} with the HTTP status in the code",
            "ncmb.md §1.2 create 201 {createDate, objectId}; get 200 object with objectId/createDate/updateDate/acl; update 200 {updateDate}; delete 200 with an empty body; unknown id 404 E404001",
            "ncmb.md §1.3 Date, Pointer and GeoPoint JSON; __op Increment/Add/AddUnique/Remove; null clears a field",
            "ncmb.md §1.4 where/order/limit/skip/count=1; default order -createDate; limit 1..1000, default 100",
            "ncmb.md §1.6 POST /users 201 with sessionToken; POST /login; GET /logout; X-NCMB-Apps-Session-Token; E401002 wrong password; E409001 duplicate; E401001 refused token",
            "ncmb.md §1.7 roles: belongUser relation",
            "ncmb.md §1.8 ACL {\"*\"|userId|role:name: {read, write}}",
            "ncmb.md §1.9 files: multipart POST /files/{name} (acl part first) 201 {createDate, fileName}; GET bytes; DELETE 200; GET /files {results:[{fileName, mimeType, fileSize, …}]}",
            "ncmb.md §2.1-2.3 SignatureVersion 2 over the percent-encoded path and query (checked by the simulator)",
        ],
        notes: "NCMB shut down on 2024-03-31: nothing can be recorded live. Authored by running the conformance scenario through MBaaSNCMB against Tests/MBaaSNCMBTests/NCMBSimulator.swift, which implements ncmb.md without the adapter's codec. Inferred where the reference is silent: $exists treats a null field as absent; a user's default ACL is owner-only; a role's belongUser equals a user Pointer it holds.")

    /// Writes the cassettes. A generator, not a test: it runs only with `MBAAS_AUTHOR_CASSETTES=1`.
    @Test("author the NCMB cassettes from documented behaviour",
          .enabled(if: ProcessInfo.processInfo.environment["MBAAS_AUTHOR_CASSETTES"] == "1"))
    func author() async throws {
        let suite = try ConformanceSuite.bundled()
        let appKey = "ncmbAuthoredApplicationKey0000000000000000000000000000000000000"
        let clientKey = "ncmbAuthoredClientKey000000000000000000000000000000000000000000"
        let sim = NCMBSimulator(applicationKey: appKey, clientKey: clientKey, start: Self.authoredAt)
        try FileManager.default.createDirectory(at: Self.cassettes, withIntermediateDirectories: true)
        let url = try BackendURL(parsing: "ncmb://\(appKey):\(clientKey)@mbaas.api.nifcloud.com")
        let results = await ConformanceRunner.record(
            adapter: "ncmb", factory: NCMBBackendFactory(), url: url, transport: sim, clock: { Self.authoredAt },
            provenance: Self.provenance,
            scrubber: Scrubber(secrets: [("<APPLICATION_KEY>", appKey)]),
            scenarios: suite.scenarios, to: Self.cassettes)
        for result in results {
            #expect(result.outcome == .recorded || result.outcome == .skipped, "\(result.scenario): \(result.outcome) \(result.reason ?? "")")
        }
        // Name the documented fact each exchange follows.
        for result in results where result.outcome == .recorded {
            let file = Self.cassettes.appendingPathComponent(result.scenario + ".json")
            // Read raw: `Cassette.load` would fill the placeholders in.
            var cassette = try Cassette(json: JSON.parse(Data(contentsOf: file)))
            for i in cassette.interactions.indices {
                cassette.interactions[i].fact = Self.fact(for: cassette.interactions[i])
            }
            try cassette.write(to: file)
        }
    }

    @Test("every runnable scenario passes in replay; the others are skipped naming the capability")
    func replay() async throws {
        let suite = try ConformanceSuite.bundled()
        let results = await ConformanceRunner.replay(adapter: "ncmb", factory: NCMBBackendFactory(),
                                                     cassettes: Self.cassettes, scenarios: suite.scenarios)
        let bad = results.filter { $0.outcome != .passed && $0.outcome != .skipped }
        #expect(bad.isEmpty, "\(bad.map { "\($0.scenario): \($0.outcome) \($0.reason ?? "")" }.joined(separator: "\n"))")
        let skipped = results.filter { $0.outcome == .skipped }
        for s in skipped { #expect(s.reason?.contains("missing capability") == true, "\(s.scenario)") }
        #expect(Set(skipped.map(\.scenario)) == [
            "objects.version.conflict", "values.bytes", "values.null", "values.file", "queries.not", "queries.keys",
            "batch.create", "batch.mixed",
        ])
        #expect(results.filter { $0.outcome == .passed }.count == suite.scenarios.count - skipped.count)
    }

    @Test("the cassettes are authored, cite their facts, and hold no secret")
    func provenanceAndSecrets() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.cassettes.path).filter { $0.hasSuffix(".json") }
        #expect(files.count >= 40)
        for name in files {
            let cassette = try Cassette(json: JSON.parse(Data(contentsOf: Self.cassettes.appendingPathComponent(name))))
            #expect(cassette.provenance.kind == .authored)
            #expect(cassette.provenance.facts.count >= 5)
            #expect(cassette.interactions.allSatisfy { $0.fact?.hasPrefix("ncmb.md §") == true }, "\(name)")
            let text = try String(contentsOf: Self.cassettes.appendingPathComponent(name), encoding: .utf8)
            #expect(!text.contains("ncmbAuthoredApplicationKey") && !text.contains("ncmbAuthoredClientKey"), "\(name)")
        }
    }

    /// The ncmb.md fact an exchange follows, from its method, path and status.
    static func fact(for interaction: Interaction) -> String {
        let method = interaction.request.method
        let status = interaction.response.status
        let parts = interaction.request.path.split(separator: "/").map(String.init)
        let resource = parts.count > 1 ? parts[1] : ""
        let isItem = parts.count > (resource == "classes" ? 3 : 2)
        var code = ""
        if case .json(let body) = interaction.response.body, let c = body["code"]?.stringValue { code = c }
        if status >= 400 {
            switch code {
            case "E404001": return "ncmb.md §1.2 an unknown id or file is 404 E404001 No data available."
            case "E401001": return "ncmb.md §1.6 a refused session token is 401 E401001"
            case "E401002": return "ncmb.md §1.6 a wrong user name or password is 401 E401002"
            case "E409001": return "ncmb.md §1.6 a taken name is 409 E409001 (… is duplication.)"
            case "E403001": return "ncmb.md §1.8, §1.11 no access with the ACL is 403 E403001"
            default: return "ncmb.md §1.11 error \(code) with HTTP \(status)"
            }
        }
        switch (resource, method, isItem) {
        case ("classes", "POST", _), ("roles", "POST", _), ("installations", "POST", _):
            return "ncmb.md §1.2 create → 201 {createDate, objectId}"
        case (_, "GET", true) where resource != "files":
            return resource == "users" ? "ncmb.md §1.6 GET /users/{id} with the session token → 200 the user"
                : "ncmb.md §1.2 get → 200 the object with objectId, createDate, updateDate, acl"
        case (_, "PUT", true) where resource != "files":
            return "ncmb.md §1.2, §1.3 update sends only changed fields (null clears, __op operators) → 200 {updateDate}"
        case (_, "DELETE", true) where resource != "files":
            return "ncmb.md §1.2 delete → 200 with an empty body"
        case ("roles", "GET", false):
            return "ncmb.md §1.7 roles whose belongUser relation holds the user (equality with a Pointer, inferred)"
        case ("files", "GET", false):
            return "ncmb.md §1.9 GET /files lists {results:[{fileName, mimeType, fileSize, createDate, updateDate, acl}]}"
        case (_, "GET", false):
            return "ncmb.md §1.4 query with where/order/limit/skip/count → 200 {results[, count]}"
        case ("users", "POST", false):
            return "ncmb.md §1.6 sign up POST /users → 201 {createDate, objectId, sessionToken, userName}"
        case ("login", "POST", _):
            return "ncmb.md §1.6 log in POST /login → 200 the user with sessionToken"
        case ("logout", "GET", _):
            return "ncmb.md §1.6 log out GET /logout with the session token → 200"
        case ("files", "POST", true):
            return "ncmb.md §1.9 upload POST /files/{name} multipart (acl part first) → 201 {createDate, fileName}"
        case ("files", "GET", true):
            return "ncmb.md §1.9 download GET /files/{name} → 200 the bytes"
        case ("files", "PUT", true):
            return "ncmb.md §1.9 file ACL update PUT /files/{name} {\"acl\":…} → 200 {updateDate}"
        case ("files", "DELETE", true):
            return "ncmb.md §1.9 delete DELETE /files/{name} → 200"
        default:
            return "ncmb.md §1.1 \(method) \(interaction.request.path) → \(status)"
        }
    }
}
