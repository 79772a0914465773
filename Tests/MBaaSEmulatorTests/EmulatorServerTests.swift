import Foundation
import MBaaSCore
import MBaaSEmulator
#if canImport(Glibc)
import Glibc
#endif
import Testing
// `struct stat`, `timeval` and the like belong to whichever C module loaded their header first (CDispatch or
// CoreFoundation, depending on the dependencies in the graph); member import visibility asks for it by name.
#if canImport(CDispatch)
import CDispatch
#endif
#if canImport(CoreFoundation)
import CoreFoundation
#endif

/// The server's own limits, whatever the dialect.
@Suite("Emulator server")
struct EmulatorServerTests {
    @Test("a connection that never sends a request, or stops half-way through its head, is closed after the idle timeout")
    func idleConnectionsAreClosed() async throws {
        let server = EmulatorServer(dialect: try makeDialect(), idleTimeout: .seconds(1))
        let running = try await server.start()
        let port = running.port
        // The socket calls block: on a thread of their own, not the cooperative pool's; the expectations are checked
        // here, in the test's task.
        let outcome: Result<(silent: Int, half: Int), any Error> = await withCheckedContinuation { done in
            Thread { done.resume(returning: Result { try Self.receivedOnIdleConnections(port: port) }) }.start()
        }
        await running.stop()
        let received = try outcome.get()
        #expect(received.silent == 0, "the silent connection was not closed by the server (recv: \(received.silent))")
        #expect(received.half == 0, "the half-open connection was not closed by the server (recv: \(received.half))")
    }

    /// What `recv` answers on a connection that sends nothing and on one that sends half a request head: 0 when the
    /// server closed it (-1 when our own 20 s receive timeout ran out first).
    static func receivedOnIdleConnections(port: Int) throws -> (silent: Int, half: Int) {
        var buffer = [UInt8](repeating: 0, count: 64)
        let silent = try Self.connect(port: port)
        defer { close(silent) }
        let n = buffer.withUnsafeMutableBytes { recv(silent, $0.baseAddress, $0.count, 0) }
        let half = try Self.connect(port: port)
        defer { close(half) }
        let head = Array("GET /2013-09-01/classes/Memo HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8)
        _ = head.withUnsafeBytes { send(half, $0.baseAddress, $0.count, 0) }
        let m = buffer.withUnsafeMutableBytes { recv(half, $0.baseAddress, $0.count, 0) }
        return (n, m)
    }

    @Test("loopback addresses are told from the others")
    func loopback() {
        for host in ["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]", "LOCALHOST"] { #expect(EmulatorServer.isLoopback(host), "\(host)") }
        for host in ["0.0.0.0", "::", "192.168.1.2", "10.0.0.1", "127.0.0", "example.com", "127.0.0.1.example.com"] {
            #expect(!EmulatorServer.isLoopback(host), "\(host)")
        }
    }

    /// A blocking TCP socket to 127.0.0.1:`port` that gives up a receive after 20 s (so a server that never closes
    /// fails the test instead of hanging it).
    static func connect(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw MBaaSError(.transport, "socket() failed: errno \(errno)") }
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { close(fd); throw MBaaSError(.transport, "connect() failed: errno \(errno)") }
        return fd
    }
}
