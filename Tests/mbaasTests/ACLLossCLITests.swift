import Foundation
import MBaaSCore
import MBaaSTesting
import Testing

@Suite("mbaas migrate --acl-loss", .serialized, .ownThreads)
struct ACLLossCLITests {
    @Test("into the Kii dialect (app-scope buckets, no per-record ACLs): the memos whose ACL is not open to everyone fail by default, each named, exit 8; --acl-loss allow writes them, each listed, exit 0; a bad value is a usage error")
    func kiiTarget() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let (server, started) = try cli.startServer(["--dialect", "kii", "--app-id", "KAPP", "--app-key", "KKEY", "--client-id", "CID",
                                                     "--client-secret", "CSECRET"])
        defer { if server.isRunning { server.terminate() } }
        let base = try #require(started["baseURL"]?.stringValue)
        let target = "kii+" + base.replacingOccurrences(of: "http://", with: "http://KAPP:CSECRET@") + "?clientID=CID"
        let state = cli.directory.appendingPathComponent("state").path
        let arguments = ["migrate", "--from", "ncmb-export:\(sampleExportDirectory)", "--to", target, "--classes", "MemoClass", "--state", state,
                         "--format", "json"]
        let plan = try cli.run(arguments + ["--dry-run"], sessionOption: false)
        #expect(plan.status == 0, "\(plan.stderr)")
        let planned = try plan.json()["plan"]?["unsupported"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(planned.contains { $0.hasPrefix("ACLs: kii does not enforce per-record ACLs") && $0.contains("it fails, named") }, "\(planned)")

        let refused = try cli.run(arguments, sessionOption: false)
        #expect(refused.status == 8, "\(refused.stderr)")
        let json = try refused.json()
        let failed = (json["mismatches"]?.arrayValue ?? []).filter {
            $0["kind"] == "failed" && $0["detail"]?.stringValue?.contains("so the record would be readable by everyone there") == true
        }.compactMap { $0["sourceId"]?.stringValue }
        let memo = json["classes"]?.arrayValue?.first { $0["source"] == "MemoClass" }
        #expect(!failed.isEmpty && memo?["failed"]?.intValue == Int64(failed.count) && memo?["written"]?.intValue == Int64(12 - failed.count),
                "\(json)")

        let allowed = try cli.run(arguments + ["--acl-loss", "allow"], sessionOption: false)
        #expect(allowed.status == 0, "\(allowed.stderr) \(String(decoding: allowed.stdout, as: UTF8.self))")
        let listed = (try allowed.json()["warnings"]?.arrayValue ?? []).filter { $0["kind"] == "acl" }.compactMap { $0["sourceId"]?.stringValue }
        #expect(listed.sorted() == failed.sorted(), "\(listed)")

        let bad = try cli.run(arguments + ["--acl-loss", "maybe"], sessionOption: false)
        #expect(bad.status == 64 && bad.stderr.contains("--acl-loss"), "\(bad.stderr)")
        server.terminate()
    }
}
