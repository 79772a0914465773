import Foundation
import MBaaSCore
import MBaaSEmulator
import MBaaSTesting
import Testing

/// The vendor's own NCMB Python SDK (PyPI `NCMB==1.3.1`, which nobody at MBaaSKit wrote) drives the NCMB dialect
/// over HTTP: objects, queries with where/order/limit/count, sign-up, log-in, log-out, all signed by the SDK.
/// The script is `Tests/NCMBPythonSDK/drive.py`. `.ci/run` installs the SDK into `.tools/ncmb-venv` and sets
/// `MBAAS_NCMB_PYTHON` to that venv's python; without it the test is skipped (reported as skipped, not passed).
@Suite("NCMB dialect driven by the vendor's Python SDK", .ownThreads)
struct NCMBPythonSDKTests {
    static let python = ProcessInfo.processInfo.environment["MBAAS_NCMB_PYTHON"]

    @Test("drive.py passes every step against a running emulator", .enabled(if: python != nil, "MBAAS_NCMB_PYTHON is not set"))
    func drive() async throws {
        let python = try #require(Self.python)
        let dialect = try makeDialect(applicationKey: "sdk-app-key-0123456789", clientKey: "sdk-client-key-9876543210")
        let running = try await EmulatorServer(dialect: dialect).start()
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("NCMBPythonSDK/drive.py")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script.path]
        var env = ProcessInfo.processInfo.environment
        env["MBAAS_NCMB_EMULATOR_URL"] = running.baseURL
        env["MBAAS_NCMB_APPLICATION_KEY"] = dialect.configuration.applicationKey
        env["MBAAS_NCMB_CLIENT_KEY"] = dialect.configuration.clientKey
        process.environment = env
        // Stdout through a pipe read to its end before waiting; stderr into a file, so that neither can fill up and
        // block the script while the other is read. The waits hold a thread of the suite's own (`.ownThreads`).
        let errFile = FileManager.default.temporaryDirectory.appendingPathComponent("ncmb-python-sdk-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: errFile.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errFile) }
        let out = Pipe(), err = try FileHandle(forWritingTo: errFile)
        defer { try? err.close() }
        process.standardOutput = out
        process.standardError = err
        try ChildProcesses.run(process)
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let errors = String(decoding: try Data(contentsOf: errFile), as: UTF8.self)
        await running.stop()
        #expect(process.terminationStatus == 0, "drive.py failed:\n\(output)\n\(errors)")
        let summary = output.split(separator: "\n").last { $0.hasPrefix("ncmb-python-sdk: ") }
        let passed = summary.flatMap { Int($0.split(separator: " ")[1]) } ?? 0
        #expect(passed >= 20, "\(output)")
        #expect(!output.contains("\nskip "), "a step was skipped:\n\(output)")
    }
}
