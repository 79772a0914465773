import Foundation
import MBaaSTesting
import Testing
import MBaaSCore
@testable import MBaaSPocketBase

/// The live tests talk to the PocketBase server named by `MBAAS_POCKETBASE_URL` (a loopback server that
/// `.ci/pocketbase.sh` starts and stops); without the variable they are skipped, with that reason.
enum Live {
    static let url = ProcessInfo.processInfo.environment["MBAAS_POCKETBASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
    static var isAvailable: Bool { url != nil }
    static let skipReason: Comment =
        "MBAAS_POCKETBASE_URL is not set: run `.ci/pocketbase.sh run -- swift test` (or `start` and export it) to include the live PocketBase tests"

    /// A backend opened from the environment's URL (superuser credentials).
    static func backend(options: String = "") async throws -> PocketBaseBackend {
        guard var text = url else { throw MBaaSError(.invalidRequest, "MBAAS_POCKETBASE_URL is not set") }
        if !options.isEmpty { text += (text.contains("?") ? "&" : "?") + options }
        let backend = try await PocketBaseBackendFactory().open(try BackendURL(parsing: text), context: BackendContext())
        return backend as! PocketBaseBackend
    }

    /// 8 lowercase letters and digits, for per-run names.
    static func runId() -> String {
        String(UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(8))
    }
}

/// Every live test, one at a time: they share one server, and PocketBase's in-memory collection cache can lose a
/// collection when several clients change the schema at the same moment (the adapter works around it, but the
/// suite should not depend on winning that race). The suite also holds the process-wide "pocketbase-users" lock, as
/// the migration suites do: its sign-ups add fields (`nick`, `age`) to the shared users collection, and PocketBase
/// can refuse another client's user create while that collection changes.
@Suite("PocketBase live", .serialized, .enabled(if: Live.isAvailable, Live.skipReason), .exclusive("pocketbase-users"))
struct LiveTests {}
