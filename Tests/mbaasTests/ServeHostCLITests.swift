import Foundation
import MBaaSCore
import MBaaSTesting
import Testing

/// `mbaas serve --host`: loopback by default; another address only when asked for with --allow-remote.
@Suite("mbaas serve --host", .ownThreads)
struct ServeHostCLITests {
    @Test("an address beyond loopback without --allow-remote is a usage error (exit 64) that says why; nothing listens")
    func remoteNeedsConsent() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        for host in ["0.0.0.0", "::"] {
            let refused = try cli.run(["serve", "--dialect", "ncmb", "--application-key", "k", "--client-key", "c",
                                       "--host", host, "--port", "0"], sessionOption: false)
            #expect(refused.status == 64, "\(host): \(refused.status) \(refused.stderr)")
            #expect(refused.stderr.contains("--allow-remote") && refused.stderr.contains("plain HTTP"), "\(refused.stderr)")
        }
        let badTimeout = try cli.run(["serve", "--dialect", "ncmb", "--application-key", "k", "--client-key", "c",
                                      "--idle-timeout", "0"], sessionOption: false)
        #expect(badTimeout.status == 64 && badTimeout.stderr.contains("--idle-timeout"), "\(badTimeout.stderr)")
        for value in ["-1", "0.001", "nan", "86401"] {
            let badDeadline = try cli.run(["serve", "--dialect", "ncmb", "--application-key", "k", "--client-key", "c",
                                           "--request-timeout=\(value)"], sessionOption: false)
            #expect(badDeadline.status == 64 && badDeadline.stderr.contains("--request-timeout must be"), "\(value): \(badDeadline.stderr)")
        }
    }
}
