import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSReplay
import Testing

@testable import MBaaSKii
@testable import MBaaSKiiWire

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
        #expect(passed >= 36, "passed \(passed) of \(suite.scenarios.count)")
        // Skips are exactly the features Kii lacks, each with its reason.
        for s in skipped { #expect(s.isCapabilitySkip, "\(s.scenario): \(s.reason ?? "")") }
        #expect(Set(skipped.map(\.scenario).filter { !$0.hasPrefix("probes.") }) == [
            "objects.update.increment", "objects.update.arrayOps", "objects.concurrent.increment", "queries.regex", "queries.containsAll",
            "queries.sort.multiKey", "queries.skip", "queries.keys", "auth.logOut.server", "auth.acl.private",
            "auth.fixture.logOut.server", "batch.create", "batch.mixed", "batch.partialFailure", "batch.atomic.rollback",
            // Kii keeps empty strings: the scenario for backends that read them back absent does not apply.
            "values.string.emptyReadsAbsent",
            // Negation on keys objects may lack cannot be proven on Kii (KiiClauseTranslator, three-valued NOT).
            "queries.ne", "queries.nin", "queries.not", "queries.exists", "queries.ne.missingKey", "queries.nin.missingKey",
            "queries.exists.null",
            // Dates and pointers are stored as opaque JSON objects: they round-trip but cannot be compared.
            "queries.date.range", "queries.updatedAt.since", "queries.pointer.eq",
            // App-scope buckets let every caller read (kii.md §6): per-record ACLs are refused, not written.
            "acl.private.crossUser", "acl.publicRead.ownerWrite",
        ])
        // Every feature Kii does not declare is refused when used (one probe each), never approximated.
        let probes = Set(results.filter { $0.outcome == .passed && $0.scenario.hasPrefix("probes.") }.map(\.scenario))
        #expect(probes == [
            "probes.batch", "probes.fieldOperations", "probes.acl", "probes.op.regex", "probes.op.containsAll",
            "probes.op.not", "probes.multiKeySort", "probes.skip", "probes.selectKeys", "probes.serverLogout",
            "probes.op.ne", "probes.op.nin", "probes.op.exists", "probes.queryValueDate", "probes.queryValuePointer",
            "probes.nestedKeys",
        ])
    }

    /// Every exchange of every cassette names the fact it follows with an evidence mark, set by the simulator
    /// where it built the answer; no `[inferred]` fact stands for what the adapter now refuses.
    @Test func everyExchangeNamesItsEvidence() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.cassettes.path).filter { $0.hasSuffix(".json") }
        #expect(files.count >= 30)
        for name in files {
            let cassette = try Cassette(json: JSON.parse(Data(contentsOf: Self.cassettes.appendingPathComponent(name))))
            #expect(cassette.provenance.kind == .authored)
            for (i, interaction) in cassette.interactions.enumerated() {
                #expect(interaction.evidence != nil, "\(name) #\(i): \(interaction.fact ?? "no fact")")
                // Issue #33.3: a [capture] mark names the capture it comes from by repository and path, and stands
                // only on what that capture shows: the only Kii capture is ebisu's recorded login answer (kii.md §1.3),
                // so only a 200 answer of the token endpoint may carry it.
                if interaction.evidence == .capture {
                    #expect(interaction.fact?.hasPrefix(Self.loginCapture) == true, "\(name) #\(i): \(interaction.fact ?? "")")
                    #expect(interaction.request.path.hasSuffix("/oauth2/token") && interaction.response.status == 200,
                            "\(name) #\(i): \(interaction.request.path) \(interaction.response.status)")
                }
                // Nothing rests on the undocumented reading of NOT over hasField.
                #expect(interaction.evidence != .inferred, "\(name) #\(i): \(interaction.fact ?? "")")
                // The admin token is asked for as the JS SDK and python3-kii do: no grant_type.
                if interaction.request.path.hasSuffix("/oauth2/token"), case .json(let body) = interaction.request.body,
                   body["client_id"] != nil {
                    #expect(body["grant_type"] == nil, "\(name) #\(i)")
                }
                // No query leans on not(hasField) matching objects without the field.
                if interaction.request.path.hasSuffix("/query"), case .json(let body) = interaction.request.body {
                    #expect(!body.printed().contains("\"hasField\"") || !body.printed().contains("\"not\""), "\(name) #\(i)")
                }
            }
        }
        // The negation scenarios are skipped, so no cassette of theirs may remain.
        for gone in ["queries.ne", "queries.nin", "queries.not", "queries.exists"] {
            #expect(!files.contains(gone + ".json"), "\(gone)")
        }
    }

    /// The one real Kii capture the reference holds (kii.md §1.3, §8.4): a recorded login response.
    static let loginCapture = "[capture] KiiPlatform/ebisu tests/small_test/khc/data/resp-login.txt (kii.md §1.3)"

    /// The documented facts the authored cassettes follow, each with its evidence mark.
    static let facts: [String] = [
        "[doc] kii.md §1.1 REST base https://api-jp.kii.com/api, resources under /apps/{appID}",
        "[doc] kii.md §1.2 X-Kii-AppID/X-Kii-AppKey on every call, Authorization: Bearer with a token",
        "[sdk] KiiCloudSDK-JS KiiSDK.js, python3-kii kii/users.py: the app admin token is POST /api/oauth2/token {client_id, client_secret}, no grant_type",
        "[capture] KiiPlatform/ebisu tests/small_test/khc/data/resp-login.txt (kii.md §1.3): the token answer {id, access_token, expires_in, token_type}",
        "[doc] kii.md §2.2 POST /apps/{appID}/users registers (201 {userID,...}), USER_ALREADY_EXISTS 409",
        "[doc] kii.md §3.2 POST {bucket}/objects with application/vnd.{appID}.mydata+json → 201 {objectID,createdAt,dataType}, ETag \"1\"",
        "[doc] kii.md §3.4 GET object: reserved _id/_created/_modified/_owner/_dataType/_version, ETag",
        "[doc] kii.md §3.5 PUT full update with If-Match → 200 {modifiedAt}; stale → 409 OBJECT_VERSION_IS_STALE",
        "[doc] kii.md §3.6 POST with X-HTTP-Method-Override: PATCH merges keys and returns the object",
        "[doc] kii.md §3.7 DELETE object → 204",
        "[doc] kii.md §4.1-4.3 QueryRequest clause/orderBy/descending/bestEffortLimit/paginationKey; nextPaginationKey",
        "[doc] kii.md §4.4 COUNT aggregation → {\"aggregations\":{\"count_field\":N}}",
        "[doc] kii.md §5.1 PUT/GET/DELETE {object}/body with the body's Content-Type; OBJECT_BODY_NOT_FOUND 404",
        "[doc] kii.md §6.2 and docs.kii.com Bucket/KiiObject Access Control: app scope lets any authenticated user create, every caller query and read",
        "[doc] kii.md §7 error bodies {errorCode,message} with application/vnd.kii.<Name>Exception+json",
    ]

    static let notes = """
        Authored with KiiSimulator (Tests/MBaaSKiiTests/KiiSimulator.swift), a documented-behaviour simulator \
        written independently of the adapter's codec, then replayed through the adapter. Each exchange's fact is \
        named by the simulator where it built the answer (X-MBaaS-Fact). Recorded in admin mode (client id and \
        secret, as the JS SDK and python3-kii ask for the admin token) because Kii refuses object creation to \
        anonymous callers in app scope; user sessions take over after signUp/logIn.
        """

    /// Authors the cassettes: runs every scenario through `ConformanceRunner.record` with a fresh simulator and a
    /// fixed clock; the simulator names each exchange's fact. A generator, not a test: it runs only with
    /// `MBAAS_AUTHOR_CASSETTES=1` and its output is verified by ``everyRunnableScenarioPassesInReplay()``.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["MBAAS_AUTHOR_CASSETTES"] == "1"))
    func authorCassettes() async throws {
        // MBAAS_AUTHOR_SCENARIOS=id,id... authors only those scenarios (exact ids) and leaves every other cassette as it is.
        let authoring = ProcessInfo.processInfo.environment["MBAAS_AUTHOR_SCENARIOS"]?.split(separator: ",").map(String.init) ?? []
        let suite = ConformanceSuite(scenarios: try ConformanceSuite.bundled().scenarios.filter { authoring.isEmpty || authoring.contains($0.id) })
        try FileManager.default.createDirectory(at: Self.cassettes, withIntermediateDirectories: true)
        let url = try BackendURL(parsing: "kii://simapp:simkey@api-jp.kii.com")
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
        }
        #expect(written > 0)
    }
}
