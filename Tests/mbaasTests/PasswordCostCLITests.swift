import Foundation
import MBaaSCore
import MBaaSTesting
import Testing

/// `MBAAS_PASSWORD_COST`: the scrypt cost of the hashes the stores the CLI opens make.
@Suite("MBAAS_PASSWORD_COST", .ownThreads)
struct PasswordCostCLITests {
    /// The bytes of the database file (the hashes are stored as text: `scrypt$<log2 N>$<r>$<p>$…`).
    func databaseText(_ cli: CLIHarness) throws -> String {
        let path = String(cli.url.dropFirst("sqlite:".count))
        return String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
    }

    @Test("light and strong hash at their cost, each verifies the other's hash; a bad value is a usage error (64) naming the variable, before anything is opened")
    func costs() throws {
        let cli = try CLIHarness()
        defer { cli.cleanUp() }
        let light = try cli.run(["auth", "signup", cli.url, "lena", "--password-stdin"], stdin: "lena-pass-1\n",
                                environment: ["MBAAS_PASSWORD_COST": "light"])
        #expect(light.status == 0, "\(light.stderr)")
        #expect(try databaseText(cli).contains("scrypt$11$8$1$"))
        // Unset is strong: a second user's hash has the default cost, and the light hash still verifies.
        let strong = try cli.run(["auth", "signup", cli.url, "stan", "--password-stdin"], stdin: "stan-pass-1\n",
                                 environment: ["MBAAS_PASSWORD_COST": ""])
        #expect(strong.status == 0, "\(strong.stderr)")
        #expect(try databaseText(cli).contains("scrypt$15$8$3$"))
        let login = try cli.run(["auth", "login", cli.url, "lena", "--password-stdin"], stdin: "lena-pass-1\n",
                                environment: ["MBAAS_PASSWORD_COST": "strong"])
        #expect(login.status == 0, "\(login.stderr)")

        let bad = try cli.run(["objects", "query", "sqlite:" + cli.directory.appendingPathComponent("never.db").path, "Memo"],
                              environment: ["MBAAS_PASSWORD_COST": "medium"])
        #expect(bad.status == 64 && bad.stderr.contains("MBAAS_PASSWORD_COST is 'medium': use light or strong"), "\(bad.status) \(bad.stderr)")
        #expect(!FileManager.default.fileExists(atPath: cli.directory.appendingPathComponent("never.db").path))
    }
}
