import Foundation
public import MBaaSCore
#if canImport(Glibc)
import Glibc
#endif

/// A TCP socket on 127.0.0.1, on a free port, that listens and never answers: the kernel completes each handshake
/// (the backlog) and nobody ever reads. What a test of a client's timeout talks to. Close `fd` when done.
public func silentTCPListener() throws(MBaaSError) -> (fd: Int32, port: Int) {
    #if canImport(Glibc)
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    guard fd >= 0, bound == 0, listen(fd, 16) == 0 else {
        if fd >= 0 { close(fd) }
        throw MBaaSError(.localIO, "cannot listen on 127.0.0.1: \(String(cString: strerror(errno)))")
    }
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
    #else
    throw MBaaSError(.unsupported, "silentTCPListener needs Glibc")
    #endif
}
