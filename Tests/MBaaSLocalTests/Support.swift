import Foundation
import MBaaSCore
import MBaaSLocal
import Testing
// The shared test doubles (temporaryDirectory, expectError) for every file of this target.
@_exported import MBaaSTesting

/// Cheap password hashing: scrypt's C code runs unoptimised in debug builds, where the default cost takes about
/// a second per hash. One test checks the default parameters.
let testOptions = LocalBackend.Options(passwordHashing: .testing)

/// A fresh in-memory backend.
func memoryBackend() throws -> LocalBackend { try LocalBackend.inMemory(options: testOptions) }

/// A backend on a database file.
func fileBackend(_ path: String) throws -> LocalBackend { try LocalBackend(path: path, options: testOptions) }

func date(_ iso: String) -> Date { ISO8601.parse(iso)! }
