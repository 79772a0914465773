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

    /// The keys the cassettes are authored with: exactly the dummy values replay gives the `<APPLICATION_KEY>` and
    /// `<BACKEND_SECRET>` placeholders, so a replay computes the same `X-NCMB-Signature` and the cassettes pin it.
    /// Not secrets: nobody's keys.
    static let appKey = Cassette.dummyValue(forPlaceholder: "<APPLICATION_KEY>")
    static let clientKey = Cassette.dummyValue(forPlaceholder: "<BACKEND_SECRET>")
    /// The signature and its timestamp, kept and pinned: replay must send exactly what was recorded.
    static let pinnedHeaders = ["X-NCMB-Signature", "X-NCMB-Timestamp"]

    static let provenance = Provenance(
        kind: .authored, server: "NIFCLOUD mobile backend (documented behaviour)", serverVersion: "2013-09-01",
        facts: [
            "[doc] ncmb.md §1.1 base URL /2013-09-01; X-NCMB-Application-Key, X-NCMB-Timestamp, X-NCMB-Signature on every call; error body {\"code\":\"E…\",\"error\":…} with the HTTP status in the code",
            "[sdk] ncmb_swift NCMBRequest.swift, ncmb_android NCMBRequest.java, ncmb_js request.js: Content-Type: application/json on every request, GET and DELETE included",
            "[doc] ncmb.md §1.2 create 201 {createDate, objectId}; get 200 object with objectId/createDate/updateDate/acl; update 200 {updateDate}; delete 200 with an empty body; unknown id 404 E404001",
            "[doc] ncmb.md §1.3 Date, Pointer and GeoPoint JSON; __op Increment/Add/AddUnique/Remove; null clears a field",
            "[doc] ncmb.md §1.4 where/order/limit/skip/count=1; default order -createDate; limit 1..1000, default 100; a count sends limit=1 (ncmb_ios, ncmb_android)",
            "[doc] ncmb.md §1.6 POST /users 201 with sessionToken; POST /login; GET /logout; X-NCMB-Apps-Session-Token; E401002 wrong password; E409001 duplicate; E401001 refused token",
            "[doc] ncmb.md §1.7 a user's roles: GET /roles, then GET /users?where={$relatedTo:{role, belongUser}} per role",
            "[doc] ncmb.md §1.8 ACL {\"*\"|userId|role:name: {read, write}}",
            "[doc] ncmb.md §1.9 files: multipart POST /files/{name} (acl part first) 201 {createDate, fileName}; GET bytes; DELETE 200; GET /files {results:[{fileName, mimeType, fileSize, …}]}",
            "[doc] ncmb.md §2.1-2.3 SignatureVersion 2 over the percent-encoded path and query (checked by the simulator; pinned in the cassettes)",
        ],
        notes: "NCMB shut down on 2024-03-31: nothing can be recorded live. Authored by running the conformance scenario through MBaaSNCMB against Tests/MBaaSNCMBTests/NCMBSimulator.swift, which implements ncmb.md without the adapter's codec and names each answer's fact (X-MBaaS-Fact). Signed with the dummy keys replay substitutes and the pinned clock, so X-NCMB-Signature and X-NCMB-Timestamp are pinned. Inferred where the reference is silent: $exists treats a null field as absent; a second upload under a taken file name is E409001.")

    /// Writes the cassettes. A generator, not a test: it runs only with `MBAAS_AUTHOR_CASSETTES=1`.
    @Test("author the NCMB cassettes from documented behaviour",
          .enabled(if: ProcessInfo.processInfo.environment["MBAAS_AUTHOR_CASSETTES"] == "1"))
    func author() async throws {
        // MBAAS_AUTHOR_SCENARIOS=id,id... authors only those scenarios (exact ids) and leaves every other cassette as it is.
        let authoring = ProcessInfo.processInfo.environment["MBAAS_AUTHOR_SCENARIOS"]?.split(separator: ",").map(String.init) ?? []
        let suite = ConformanceSuite(scenarios: try ConformanceSuite.bundled().scenarios.filter { authoring.isEmpty || authoring.contains($0.id) })
        let sim = NCMBSimulator(applicationKey: Self.appKey, clientKey: Self.clientKey, start: Self.authoredAt)
        try FileManager.default.createDirectory(at: Self.cassettes, withIntermediateDirectories: true)
        let url = try BackendURL(parsing: "ncmb://\(Self.appKey):\(Self.clientKey)@mbaas.api.nifcloud.com")
        // The signature derives from a dummy key: keep it (the scrubber would redact it) and pin it.
        var scrubber = Scrubber(profile: .ncmb, secrets: [("<APPLICATION_KEY>", Self.appKey)])
        scrubber.secretHeaders.remove(NCMBSigner.Header.signature)
        let results = await ConformanceRunner.record(
            adapter: "ncmb", factory: NCMBBackendFactory(), url: url, transport: sim, clock: { Self.authoredAt },
            provenance: Self.provenance, scrubber: scrubber,
            requestHeaders: HeaderSelection.request(for: .ncmb).including(Set(Self.pinnedHeaders)),
            pinnedHeaders: Self.pinnedHeaders, scenarios: suite.scenarios, to: Self.cassettes)
        for result in results where result.scenario != "files.unicodeName" {
            #expect(result.outcome == .recorded || result.outcome == .skipped, "\(result.scenario): \(result.outcome) \(result.reason ?? "")")
        }
        // NCMB refuses non-ASCII file names (E403002): the adapter says so before sending, and no cassette is written.
        let unicode = results.first { $0.scenario == "files.unicodeName" }
        #expect(!authoring.isEmpty || unicode?.outcome != .recorded && unicode?.reason?.contains("non-ASCII") == true, "\(unicode?.reason ?? "")")
    }

    @Test("every runnable scenario passes in replay; the others are skipped naming the capability")
    func replay() async throws {
        let suite = try ConformanceSuite.bundled()
        let results = await ConformanceRunner.replay(adapter: "ncmb", factory: NCMBBackendFactory(),
                                                     cassettes: Self.cassettes, scenarios: suite.scenarios)
        let bad = results.filter { $0.outcome != .passed && $0.outcome != .skipped }
        #expect(bad.isEmpty, "\(bad.map { "\($0.scenario): \($0.outcome) \($0.reason ?? "")" }.joined(separator: "\n"))")
        let skipped = results.filter { $0.outcome == .skipped }
        for s in skipped { #expect(s.isCapabilitySkip, "\(s.scenario): \(s.reason ?? "")") }
        #expect(Set(skipped.map(\.scenario).filter { !$0.hasPrefix("probes.") }) == [
            "objects.version.conflict", "values.bytes", "values.null", "values.file", "values.int.big", "queries.not",
            "queries.keys", "batch.create", "batch.mixed", "batch.partialFailure",
            "batch.atomic.rollback",
            // NCMB keeps empty strings: the scenario for backends that read them back absent does not apply.
            "values.string.emptyReadsAbsent",
            // A stored null needs value.null, which NCMB does not declare.
            "queries.exists.null",
            // NCMB refuses non-ASCII file names (E403002): the adapter does not declare unicodeFileNames.
            "files.unicodeName",
        ])
        // Every feature NCMB does not declare is refused when used (one probe each), never approximated.
        let probes = Set(results.filter { $0.outcome == .passed && $0.scenario.hasPrefix("probes.") }.map(\.scenario))
        #expect(probes == [
            "probes.batch", "probes.optimisticLocking", "probes.op.not", "probes.selectKeys", "probes.unicodeFileNames",
            "probes.valueBytes", "probes.valuenull", "probes.valueFile", "probes.valueint",
        ])
        #expect(results.filter { $0.outcome == .passed }.count == suite.scenarios.count - skipped.count)
    }

    @Test("a cassette whose pinned signature differs by one character does not pass")
    func tamperedSignatureFails() async throws {
        let suite = try ConformanceSuite.bundled()
        let scenario = try #require(suite.scenarios.first { $0.id == "objects.crud.basic" })
        var cassette = try Cassette(json: JSON.parse(Data(contentsOf: Self.cassettes.appendingPathComponent("objects.crud.basic.json"))))
        let signature = try #require(cassette.interactions[0].request.headers["X-NCMB-Signature"])
        #expect(cassette.interactions[0].request.pinnedHeaders.contains { $0.lowercased() == "x-ncmb-signature" })
        var chars = Array(signature)
        chars[0] = chars[0] == "A" ? "B" : "A"
        cassette.interactions[0].request.headers["X-NCMB-Signature"] = String(chars)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ncmb-tamper-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try cassette.write(to: dir.appendingPathComponent("objects.crud.basic.json"))
        let tampered = await ConformanceRunner.replay(adapter: "ncmb", factory: NCMBBackendFactory(), cassettes: dir,
                                                      scenarios: [scenario])
        #expect(tampered.first?.outcome != .passed, "\(tampered.first?.reason ?? "")")
        // The untouched cassette passes, so the failure is the signature's.
        let intact = await ConformanceRunner.replay(adapter: "ncmb", factory: NCMBBackendFactory(), cassettes: Self.cassettes,
                                                    scenarios: [scenario])
        #expect(intact.first?.outcome == .passed, "\(intact.first?.reason ?? "")")
    }

    @Test("every exchange names its evidence; signatures are pinned; no inferred fact contradicts the reference")
    func provenanceAndSecrets() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.cassettes.path).filter { $0.hasSuffix(".json") }
        #expect(files.count >= 40)
        #expect(!files.contains("files.unicodeName.json"))
        for name in files {
            let cassette = try Cassette(json: JSON.parse(Data(contentsOf: Self.cassettes.appendingPathComponent(name))))
            #expect(cassette.provenance.kind == .authored)
            #expect(cassette.provenance.facts.count >= 5)
            for (i, interaction) in cassette.interactions.enumerated() {
                let where_ = "\(name) #\(i) \(interaction.request.method) \(interaction.request.path)"
                #expect(interaction.evidence != nil, "\(where_): \(interaction.fact ?? "no fact")")
                #expect(Set(interaction.request.pinnedHeaders.map { $0.lowercased() }) == ["x-ncmb-signature", "x-ncmb-timestamp"], "\(where_)")
                #expect(interaction.request.headers["Content-Type"] != nil, "\(where_): every NCMB request carries a Content-Type")
                // ncmb.md §1.9, UserCommunity #1304: a non-ASCII file name is refused (E403002), never created.
                let path = interaction.request.path
                if path.contains("/files/"), path.removingPercentEncoding?.unicodeScalars.contains(where: { !$0.isASCII }) == true {
                    #expect(interaction.response.status >= 400, "\(where_)")
                }
                // ncmb.md §1.7: roles are found with $relatedTo, never by equality on belongUser.
                #expect(!(path.hasSuffix("/roles") && interaction.request.query.contains { $0.value.contains("belongUser") && !$0.value.contains("$relatedTo") }), "\(where_)")
            }
            let text = try String(contentsOf: Self.cassettes.appendingPathComponent(name), encoding: .utf8)
            #expect(!text.contains(Self.clientKey), "\(name): the client key is a placeholder")
        }
        // The CLI cassette's exchanges are named by the same simulator.
        let cli = try Cassette(json: JSON.parse(Data(contentsOf: Self.fixtures.appendingPathComponent("CLICassettes/ncmb/session.json"))))
        #expect(cli.interactions.count >= 9)
        for (i, interaction) in cli.interactions.enumerated() {
            #expect(interaction.evidence != nil, "session.json #\(i): \(interaction.fact ?? "no fact")")
        }
    }
}
