import Foundation
import MBaaSCore
import MBaaSEmulator
#if canImport(Glibc)
import Glibc
#endif
import Testing

/// The server's own limits, whatever the dialect.
@Suite("Emulator server")
struct EmulatorServerTests {
    @Test("a connection that never sends a request is closed after the idle timeout; one that asks is answered")
    func idleConnectionsAreClosed() async throws {
        let server = EmulatorServer(dialect: try makeDialect(), idleTimeout: .seconds(1))
        let running = try await server.start()
        let port = running.port
        // The socket calls block: on a thread of their own, not the cooperative pool's.
        let outcome: Result<Void, any Error> = await withCheckedContinuation { done in
            Thread { done.resume(returning: Result { try Self.checkIdleClosing(port: port) }) }.start()
        }
        await running.stop()
        try outcome.get()
    }

    static func checkIdleClosing(port: Int) throws {
        // A silent connection: the server closes it (recv returns 0) long before our own 20 s give-up.
        let silent = try Self.connect(port: port)
        defer { close(silent) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = buffer.withUnsafeMutableBytes { recv(silent, $0.baseAddress, $0.count, 0) }
        #expect(n == 0, "the idle connection was not closed by the server (recv: \(n), errno \(errno))")
        // A half-open request head (no blank line yet): closed too.
        let half = try Self.connect(port: port)
        defer { close(half) }
        let head = Array("GET /2013-09-01/classes/Memo HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8)
        _ = head.withUnsafeBytes { send(half, $0.baseAddress, $0.count, 0) }
        let m = buffer.withUnsafeMutableBytes { recv(half, $0.baseAddress, $0.count, 0) }
        #expect(m == 0, "the half-open connection was not closed (recv: \(m), errno \(errno))")
        // A whole request is answered.
        let asking = try Self.connect(port: port)
        defer { close(asking) }
        let request = Array("GET /nothing HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(asking, $0.baseAddress, $0.count, 0) }
        let k = buffer.withUnsafeMutableBytes { recv(asking, $0.baseAddress, $0.count, 0) }
        #expect(k > 0 && String(decoding: buffer.prefix(max(0, k)), as: UTF8.self).hasPrefix("HTTP/1.1 "))
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
