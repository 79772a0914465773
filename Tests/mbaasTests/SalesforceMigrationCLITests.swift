import Foundation
import MBaaSCore
import MBaaSTesting
import Testing

/// Issue 36, point 4: Salesforce as a target and as a source of `mbaas migrate`, verified, against the emulator's
/// Salesforce dialect (`mbaas serve --dialect salesforce`, on loopback HTTP). The dialect is this project's own
/// simulator of the REST API: these runs prove the adapter and the migration engine agree with it, not with a real
/// org (no org's answers are recorded here).
@Suite("mbaas migrate to and from the Salesforce dialect", .ownThreads)
struct SalesforceMigrationCLITests {
    @Test("records and a file into Salesforce and records back out, each verified; a re-run writes nothing; what an org cannot hold (a private ACL, a Pointer) fails named, exit 8")
    func intoAndOutOfSalesforce() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let users = cli.directory.appendingPathComponent("users.json")
        try Data(#"[{"username":"ada@example.com","password":"ada-pass-1"}]"#.utf8).write(to: users)
        let (server, started) = try cli.startServer(["--dialect", "salesforce", "--client-id", "cid", "--client-secret", "csecret",
                                                     "--users", users.path])
        defer { if server.isRunning { server.terminate(); server.waitUntilExit() } }
        let backend = try #require(started["backendURL"]?.stringValue)
        #expect(backend.hasPrefix("salesforce+http://cid:csecret@127.0.0.1:"), "\(started.printed())")
        // The org's user logs in by the URL's password grant; the URL with its secret stays out of argv.
        let org = backend + "?username=ada%40example.com&password=ada-pass-1"

        // The source: the embedded store, scalar fields only (what an sObject field holds), and a standalone file.
        let tricky = #"O'Brien \ "quoted" \n"#
        for (i, name) in ["Acme", "Globex", tricky].enumerated() {
            var fields: [String: JSON] = [:]
            fields["Name"] = .string(name)
            fields["Employees"] = .int(Int64(10 * (i + 1)))
            fields["Rating"] = .double(Double(i) + 0.5)
            fields["Active"] = .bool(i != 1)
            let since: [String: JSON] = ["__type": .string("Date"), "iso": .string("2024-01-0\(i + 1)T03:04:05.000Z")]
            fields["Since"] = .object(JSONObject(sorting: since))
            let out = try cli.run(["objects", "create", cli.url, "Account", JSON.object(JSONObject(sorting: fields)).printed()])
            #expect(out.status == 0, "\(out.stderr)")
        }
        let file = cli.directory.appendingPathComponent("contract.txt")
        try Data("signed on 2024-01-02\n".utf8).write(to: file)
        #expect(try cli.run(["files", "upload", cli.url, file.path, "--name", "contract.txt"]).status == 0)

        let into = cli.directory.appendingPathComponent("state-into").path
        let first = try cli.run(["migrate", "--from", cli.url, "--to", "-", "--state", into, "--format", "json"], sessionOption: false,
                                environment: ["MBAAS_TO_URL": org])
        #expect(first.status == 0, "\(first.stderr)")
        let report = try first.json()
        #expect(report["ok"] == true && report["verified"] == true)
        let account = report["classes"]?.arrayValue?.first { $0["source"] == "Account" }
        #expect(account?["written"] == 3 && account?["verified"] == 3 && account?["mismatched"] == 0 && account?["failed"] == 0,
                "\(String(describing: account))")
        #expect(report["files"]?["written"] == 1 && report["files"]?["verified"] == 1, "\(String(describing: report["files"]))")
        #expect(report["users"]?["written"] == 0)
        #expect(!first.stdout.isEmpty && !String(decoding: first.stdout, as: UTF8.self).contains("ada-pass-1"), "no secret in the report")

        // Resumed: everything is found on the org, nothing is written twice.
        let again = try cli.run(["migrate", "--from", cli.url, "--to", "-", "--state", into, "--format", "json"], sessionOption: false,
                                environment: ["MBAAS_TO_URL": org])
        #expect(again.status == 0, "\(again.stderr)")
        let resumed = try again.json()["classes"]?.arrayValue?.first { $0["source"] == "Account" }
        #expect(resumed?["written"] == 0 && resumed?["skipped"] == 3 && resumed?["verified"] == 3, "\(String(describing: resumed))")

        // Out again, into a second embedded store: the org's records, verified against the org.
        let back = "sqlite:" + cli.directory.appendingPathComponent("back.sqlite").path
        let outOf = try cli.run(["migrate", "--from", "-", "--to", back, "--classes", "Account",
                                 "--state", cli.directory.appendingPathComponent("state-out").path, "--format", "json"],
                                sessionOption: false, environment: ["MBAAS_FROM_URL": org])
        #expect(outOf.status == 0, "\(outOf.stderr)")
        let returned = try outOf.json()["classes"]?.arrayValue?.first { $0["source"] == "Account" }
        #expect(returned?["written"] == 3 && returned?["verified"] == 3 && returned?["mismatched"] == 0, "\(String(describing: returned))")
        let rows = try cli.run(["objects", "query", back, "Account", "--format", "ndjson"]).text
            .split(separator: "\n").compactMap { try? JSON.parse(Data($0.utf8)) }
        #expect(Set(rows.compactMap { $0["fields"]?["Name"]?.stringValue }) == ["Acme", "Globex", tricky], "\(rows)")
        let globex = rows.first { $0["fields"]?["Name"] == "Globex" }?["fields"]
        #expect(globex?["Employees"] == 20 && globex?["Rating"] == 1.5 && globex?["Active"] == false, "\(String(describing: globex))")
        #expect(globex?["Since"]?["iso"] == "2024-01-02T03:04:05.000Z", "\(String(describing: globex))")

        // What an org cannot hold is refused, each record named, never widened in silence: a record only a role may
        // read (no per-record ACL on Salesforce's wire) and a Pointer (a lookup holds a bare Id).
        let acl = try cli.run(["objects", "create", cli.url, "Contract", #"{"Name":"private"}"#, "--acl", #"{"role:Admins":{"read":true,"write":true}}"#])
        #expect(acl.status == 0, "\(acl.stderr)")
        let privateId = try #require(try acl.json()["id"]?.stringValue)
        let pointer = try cli.run(["objects", "create", cli.url, "Contract",
                                   #"{"Name":"linked","account":{"__type":"Pointer","className":"Account","objectId":"x1"}}"#])
        let pointerId = try #require(try pointer.json()["id"]?.stringValue)
        let refused = try cli.run(["migrate", "--from", cli.url, "--to", "-", "--classes", "Contract",
                                   "--state", cli.directory.appendingPathComponent("state-refused").path, "--format", "json"],
                                  sessionOption: false, environment: ["MBAAS_TO_URL": org])
        #expect(refused.status == 8, "\(refused.stderr)")
        let failed = try refused.json()["mismatches"]?.arrayValue?.filter { $0["kind"] == "failed" } ?? []
        #expect(Set(failed.compactMap { $0["sourceId"]?.stringValue }) == [privateId, pointerId], "\(failed)")
        #expect(failed.contains { $0["sourceId"]?.stringValue == privateId && $0["detail"]?.stringValue?.contains("ACL") == true }, "\(failed)")
        #expect(failed.contains { $0["sourceId"]?.stringValue == pointerId && $0["detail"]?.stringValue?.contains("Pointer") == true }, "\(failed)")
        server.terminate()
        server.waitUntilExit()
    }
}
