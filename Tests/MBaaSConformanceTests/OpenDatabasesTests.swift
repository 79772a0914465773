import Foundation
import MBaaSConformance
import MBaaSCore
import MBaaSLocal
import MBaaSTesting
import Testing

/// A run on fresh databases closes each one: a test process that runs the suite many times (the whole test run
/// does) would otherwise hold thousands of descriptors, and Foundation's `Process.run()` on this toolchain reads past
/// its buffer when it lists them (see `ChildProcesses`).
@Suite("Databases a conformance run opens are closed")
struct OpenDatabasesTests {
    /// Descriptors of this process that point into `directory` (Linux: `/proc/self/fd`; elsewhere nothing to check).
    static func descriptors(under directory: URL) -> [String] {
        let fm = FileManager.default
        guard let entries = try? fm.contentsOfDirectory(atPath: "/proc/self/fd") else { return [] }
        return entries.compactMap { try? fm.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0) }
            .filter { $0.hasPrefix(directory.path) }
    }

    @Test("after liveOnFreshDatabases no descriptor points at its databases")
    func closed() async throws {
        #if os(Linux)
        let parent = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: parent) }
        let suite = try ConformanceSuite.bundled()
        let scenarios = suite.scenarios
        let results = await ConformanceRunner.liveOnFreshDatabases(
            adapter: "local", factory: LocalBackendFactory(options: LocalBackend.Options(passwordHashing: .testing)),
            scenarios: scenarios, in: parent) { file in BackendURL(scheme: "sqlite", path: file.path) }
        #expect(results.count == scenarios.count)
        #expect(results.filter { $0.outcome == .passed }.count >= 20)
        let open = Self.descriptors(under: parent)
        #expect(open.isEmpty, "\(open.count) descriptors still open, e.g. \(open.prefix(3))")
        #endif
    }
}
