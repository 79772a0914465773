import Foundation
import MBaaSCore
import MBaaSEmulator
import MBaaSLocal
import MBaaSTesting
import Testing

/// simple-salesforce (PyPI 1.12.x, which nobody at MBaaSKit wrote) drives the Salesforce dialect over HTTPS, trusting
/// the CA the emulator wrote through its `session`: OAuth, CRUD, query and query_all over more than 2000 rows,
/// COUNT(), a missing record (SalesforceResourceNotFound), malformed SOQL, an expired and a revoked token
/// (SalesforceExpiredSession). The script is `Tests/SalesforcePythonClient/drive.py`. `.ci/run` installs the client
/// into `.tools/salesforce-venv` and sets `MBAAS_SALESFORCE_PYTHON`; without it the test is skipped (reported as
/// skipped, not passed).
@Suite("Salesforce dialect driven by simple-salesforce over HTTPS", .ownThreads)
struct SalesforcePythonClientTests {
    static let python = ProcessInfo.processInfo.environment["MBAAS_SALESFORCE_PYTHON"]

    @Test("drive.py passes every step against the dialect over HTTPS", .enabled(if: python != nil, "MBAAS_SALESFORCE_PYTHON is not set"))
    func drive() async throws {
        let python = try #require(Self.python)
        let dir = try temporaryDirectory("salesforce-python")
        defer { try? FileManager.default.removeItem(at: dir) }
        let tls = try EmulatorTLS.selfSigned(directory: dir.path)
        let store = try LocalBackend.inMemory(options: LocalBackend.Options(passwordHashing: .testing))
        // Long enough for every phase of drive.py on a loaded two-core CI machine (6 s expired a token between a
        // create and the get that followed, in CI); the expired-session step sleeps past it once.
        let lifetime = 90
        var configuration = SalesforceDialect.Configuration(clientId: "3MVG9-python-client", clientSecret: "python-client-secret")
        configuration.tokenLifetime = .seconds(lifetime)
        let dialect = SalesforceDialect(store: store, configuration: configuration)
        try await dialect.provision([.init(username: "driver@example.com", password: "driver-pass-1")])
        let running = try await EmulatorServer(dialect: dialect, tls: tls).start()
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("SalesforcePythonClient/drive.py")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script.path]
        var env = ProcessInfo.processInfo.environment
        env["MBAAS_SF_BASE_URL"] = running.baseURL
        env["MBAAS_SF_CA"] = try #require(tls.caCertificatePath)
        env["MBAAS_SF_CLIENT_ID"] = configuration.clientId
        env["MBAAS_SF_CLIENT_SECRET"] = configuration.clientSecret
        env["MBAAS_SF_USERNAME"] = "driver@example.com"
        env["MBAAS_SF_PASSWORD"] = "driver-pass-1"
        env["MBAAS_SF_TOKEN_LIFETIME"] = String(lifetime)
        process.environment = env
        let errFile = dir.appendingPathComponent("drive.err")
        _ = FileManager.default.createFile(atPath: errFile.path, contents: nil)
        let out = Pipe(), err = try FileHandle(forWritingTo: errFile)
        defer { try? err.close() }
        process.standardOutput = out
        process.standardError = err
        try ChildProcesses.run(process)
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let errors = String(decoding: try Data(contentsOf: errFile), as: UTF8.self)
        await running.stop()
        await store.close()
        #expect(process.terminationStatus == 0, "drive.py failed:\n\(output)\n\(errors)")
        let summary = output.split(separator: "\n").last { $0.hasPrefix("salesforce-python-client: ") }
        let passed = summary.flatMap { Int($0.split(separator: " ")[1]) } ?? 0
        #expect(passed == 24, "\(output)")
    }
}
