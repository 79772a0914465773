import Foundation
import MBaaSCore
import MBaaSLocal
import Testing

/// Cheap password hashing: scrypt's C code runs unoptimised in debug builds, where the default cost takes about
/// a second per hash. One test checks the default parameters.
let testOptions = LocalBackend.Options(passwordHashing: .init(logN: 10, blockSize: 8, parallelism: 1))

/// A fresh in-memory backend.
func memoryBackend() throws -> LocalBackend { try LocalBackend.inMemory(options: testOptions) }

/// A backend on a database file.
func fileBackend(_ path: String) throws -> LocalBackend { try LocalBackend(path: path, options: testOptions) }

/// A new empty temporary directory, removed by the caller with `removeTemporary`.
func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("mbaas-local-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

func date(_ iso: String) -> Date { ISO8601.parse(iso)! }

/// Runs `body` expecting an `MBaaSError` of `kind`; returns it for more checks.
@discardableResult
func expectError<T>(_ kind: MBaaSError.Kind, sourceLocation: SourceLocation = #_sourceLocation,
                    _ body: () async throws -> T) async -> MBaaSError? {
    do {
        _ = try await body()
        Issue.record("expected \(kind), got success", sourceLocation: sourceLocation)
        return nil
    } catch let e as MBaaSError {
        #expect(e.kind == kind, "expected \(kind), got \(e)", sourceLocation: sourceLocation)
        return e
    } catch {
        Issue.record("expected MBaaSError \(kind), got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
