import Foundation
import MBaaSCore
import MBaaSEmulator
import MBaaSTesting
import Testing

/// The emulator over HTTPS: a CA and server certificate written by ``EmulatorTLS/selfSigned(directory:hosts:validFor:now:)``
/// (swift-certificates), served through HummingbirdTLS, and checked by a client nobody here wrote (curl, with
/// OpenSSL's verification): trusted with `--cacert`, refused without.
@Suite("Emulator over HTTPS", .ownThreads)
struct EmulatorTLSTests {
    /// Runs `curl` with `arguments`; returns its exit status and standard output (stderr discarded).
    static func curl(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["curl", "--silent", "--max-time", "20"] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try ChildProcesses.run(process)
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }

    @Test("a client trusting the written CA gets the dialect's answer over HTTPS (by IP and by name); one that does not is refused; plain HTTP gets nothing")
    func httpsWithTheWrittenCA() async throws {
        let dir = try temporaryDirectory("emulator-tls")
        defer { try? FileManager.default.removeItem(at: dir) }
        let tls = try EmulatorTLS.selfSigned(directory: dir.path)
        let ca = dir.appendingPathComponent("ca.pem").path
        #expect(tls.caCertificatePath == ca)
        let running = try await EmulatorServer(dialect: try makeDialect(), tls: tls).start()
        #expect(running.baseURL == "https://127.0.0.1:\(running.port)")
        let path = "/2013-09-01/classes/Memo"
        let trusted = try Self.curl(["--cacert", ca, "-o", "/dev/null", "-D", "-", running.baseURL + path])
        let byName = try Self.curl(["--cacert", ca, "-o", "/dev/null", "-w", "%{http_code}", "https://localhost:\(running.port)" + path])
        let untrusted = try Self.curl(["-o", "/dev/null", running.baseURL + path])
        let plain = try Self.curl(["-o", "/dev/null", "http://127.0.0.1:\(running.port)" + path])
        await running.stop()

        #expect(trusted.status == 0, "curl --cacert failed with exit status \(trusted.status)")
        // An unsigned NCMB request: the dialect's own refusal, named by the emulator's header.
        #expect(trusted.output.hasPrefix("HTTP/1.1 401"), "\(trusted.output)")
        #expect(trusted.output.lowercased().contains("x-mbaas-emulator: ncmb"), "\(trusted.output)")
        #expect(byName.status == 0 && byName.output == "401", "by name: exit \(byName.status), \(byName.output)")
        // 60: curl could not verify the peer's certificate against its CA bundle.
        #expect(untrusted.status == 60, "without the CA curl exited \(untrusted.status)")
        #expect(plain.status != 0 && !plain.output.contains("HTTP/1.1"), "plain HTTP to the TLS port: exit \(plain.status)")
    }

    @Test("the self-signed files: a CA, the server's chain and a key readable by its owner alone")
    func selfSignedFiles() throws {
        let dir = try temporaryDirectory("emulator-tls-files").appendingPathComponent("new/certs")
        defer { try? FileManager.default.removeItem(at: dir.deletingLastPathComponent().deletingLastPathComponent()) }
        let tls = try EmulatorTLS.selfSigned(directory: dir.path)   // the directory is created
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        #expect(files == ["ca.pem", "server-key.pem", "server.pem"])
        let mode = try FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent("server-key.pem").path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let ca = try String(contentsOf: dir.appendingPathComponent("ca.pem"), encoding: .utf8)
        let chain = try String(contentsOf: dir.appendingPathComponent("server.pem"), encoding: .utf8)
        #expect(ca.components(separatedBy: "-----BEGIN CERTIFICATE-----").count == 2)
        #expect(chain.components(separatedBy: "-----BEGIN CERTIFICATE-----").count == 3 && chain.hasSuffix(ca))
        #expect(tls.certificateChainPEM == chain)
        #expect(!(try String(contentsOf: dir.appendingPathComponent("server-key.pem"), encoding: .utf8)).contains("CERTIFICATE"))
        // Read back as --tls-cert/--tls-key would.
        let loaded = try EmulatorTLS.load(certificateFile: dir.appendingPathComponent("server.pem").path,
                                          keyFile: dir.appendingPathComponent("server-key.pem").path)
        #expect(loaded.caCertificatePath == nil && loaded.privateKeyPEM == tls.privateKeyPEM)
        // A second call makes a new CA.
        let again = try EmulatorTLS.selfSigned(directory: dir.path)
        #expect(again.certificateChainPEM != chain)
    }

    @Test("bad certificate files: missing (localIO), not PEM, a key of another certificate, a file for the directory (invalidRequest), each named")
    func badFiles() async throws {
        let dir = try temporaryDirectory("emulator-tls-bad")
        defer { try? FileManager.default.removeItem(at: dir) }
        let one = dir.appendingPathComponent("one"), two = dir.appendingPathComponent("two")
        _ = try EmulatorTLS.selfSigned(directory: one.path)
        _ = try EmulatorTLS.selfSigned(directory: two.path)
        let cert = one.appendingPathComponent("server.pem").path, key = one.appendingPathComponent("server-key.pem").path
        let otherKey = two.appendingPathComponent("server-key.pem").path
        let text = dir.appendingPathComponent("notes.txt")
        try Data("not a certificate\n".utf8).write(to: text)

        let missing = await expectError(.localIO) { try EmulatorTLS.load(certificateFile: dir.appendingPathComponent("nope.pem").path, keyFile: key) }
        #expect(missing?.message.contains("--tls-cert") == true && missing?.message.contains("nope.pem does not exist") == true, "\(String(describing: missing))")
        let notPEM = await expectError(.invalidRequest) { try EmulatorTLS.load(certificateFile: text.path, keyFile: key) }
        #expect(notPEM?.message.contains("notes.txt") == true, "\(String(describing: notPEM))")
        let keyNotPEM = await expectError(.invalidRequest) { try EmulatorTLS.load(certificateFile: cert, keyFile: text.path) }
        #expect(keyNotPEM?.message.contains("is not a PEM private key") == true, "\(String(describing: keyNotPEM))")
        let mismatch = await expectError(.invalidRequest) { try EmulatorTLS.load(certificateFile: cert, keyFile: otherKey) }
        #expect(mismatch?.message.contains("does not belong to the first certificate") == true, "\(String(describing: mismatch))")
        let notDirectory = await expectError(.invalidRequest) { try EmulatorTLS.selfSigned(directory: text.path) }
        #expect(notDirectory?.message.contains("is a file") == true, "\(String(describing: notDirectory))")
    }
}
