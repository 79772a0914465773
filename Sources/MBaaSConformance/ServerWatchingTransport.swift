import Foundation
import MBaaSCore
import MBaaSReplay

/// Forwards every request unchanged and notes whether MBaaSKit's emulator answered any of them
/// (``ServerIdentity``), so a live run against `mbaas serve` is reported as `simulated` evidence, not `live`.
final class ServerWatchingTransport: HTTPTransport, @unchecked Sendable {
    let base: any HTTPTransport
    private let lock = NSLock()
    private var emulatorAnswered = false

    init(wrapping base: any HTTPTransport) { self.base = base }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let response = try await base.send(request)
        if ServerIdentity(headers: response.headers)?.isEmulator == true {
            lock.withLock { emulatorAnswered = true }
        }
        return response
    }

    /// Whether the emulator answered since the last ``reset()``.
    var sawEmulator: Bool { lock.withLock { emulatorAnswered } }

    func reset() { lock.withLock { emulatorAnswered = false } }
}
