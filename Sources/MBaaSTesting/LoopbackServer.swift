public import Foundation
public import MBaaSCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A small HTTP/1.1 server on `127.0.0.1` that answers every request with a handler: used by tests to put a
/// replaying transport or a simulator behind a real socket, so that a client process (the `mbaas` CLI) can talk
/// to it over `http://127.0.0.1:PORT`.
///
/// # Contract
/// - Binds `127.0.0.1` on a port the system chooses (``port``); only loopback clients can reach it.
/// - Reads requests with a `Content-Length` body (or `Transfer-Encoding: chunked`), passes each as an
///   ``TransportRequest`` (URL `http://127.0.0.1:PORT/target`) to the handler, and writes the ``TransportResponse`` with a
///   `Content-Length`. Connections are kept alive until the client closes them, asks `Connection: close`, or is
///   idle for `idleTimeout` seconds.
/// - Bounded: requests larger than `maxRequestBytes` get `413`, malformed ones `400`; at most `maxConnections`
///   connections are served at once (more wait in the listen backlog); after `lifetime` seconds the server stops
///   by itself, so a forgotten server never outlives its test for long.
/// - ``stop()`` closes the listening socket and every open connection; it is idempotent and also runs on deinit.
/// - Uses POSIX sockets only (Glibc, Musl or Darwin) and one thread per connection.
public final class LoopbackServer: @unchecked Sendable {
    public typealias Handler = @Sendable (TransportRequest) async -> TransportResponse

    /// The port the server listens on.
    public let port: Int
    /// `http://127.0.0.1:PORT`
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    private let handler: Handler
    private let maxRequestBytes: Int
    private let idleTimeout: TimeInterval
    private let listener: Int32
    private let state = NSLock()
    private var stopped = false
    private var connections: Set<Int32> = []
    private let slots: DispatchSemaphore

    /// Starts listening at once.
    /// - Parameters:
    ///   - maxRequestBytes: the largest request (headers and body) accepted.
    ///   - idleTimeout: seconds a kept-alive connection may wait for its next request.
    ///   - maxConnections: connections served at once.
    ///   - lifetime: seconds after which the server stops by itself (`nil`: only ``stop()`` stops it).
    public init(
        maxRequestBytes: Int = 64 << 20, idleTimeout: TimeInterval = 30, maxConnections: Int = 32,
        lifetime: TimeInterval? = 600, handler: @escaping Handler
    ) throws {
        self.handler = handler
        self.maxRequestBytes = maxRequestBytes
        self.idleTimeout = idleTimeout
        self.slots = DispatchSemaphore(value: max(1, maxConnections))
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw MBaaSError(.transport, "loopback server: socket() failed (errno \(errno))") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        #if canImport(Darwin)
        address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(0).bigEndian
        address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            let code = errno
            close(fd)
            throw MBaaSError(.transport, "loopback server: cannot listen on 127.0.0.1 (errno \(code))")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.listener = fd
        self.port = Int(UInt16(bigEndian: actual.sin_port))

        let acceptThread = Thread { [weak self] in self?.acceptLoop() }
        acceptThread.name = "LoopbackServer.accept"
        acceptThread.start()
        if let lifetime {
            DispatchQueue.global().asyncAfter(deadline: .now() + lifetime) { [weak self] in self?.stop() }
        }
    }

    deinit { stop() }

    /// Stops accepting, closes every open connection. Idempotent.
    public func stop() {
        state.lock()
        guard !stopped else { state.unlock(); return }
        stopped = true
        let open = connections
        connections.removeAll()
        state.unlock()
        _ = shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for fd in open { _ = shutdown(fd, Int32(SHUT_RDWR)) }
    }

    public var isRunning: Bool {
        state.lock()
        defer { state.unlock() }
        return !stopped
    }

    // MARK: Accepting

    private func acceptLoop() {
        while isRunning {
            slots.wait()
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                slots.signal()
                if errno == EINTR { continue }
                return
            }
            state.lock()
            if stopped {
                state.unlock()
                close(fd)
                slots.signal()
                return
            }
            connections.insert(fd)
            state.unlock()
            #if canImport(Darwin)
            var yes: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &yes, socklen_t(MemoryLayout<Int32>.size))
            #endif
            var timeout = timeval(tv_sec: Int(idleTimeout), tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let thread = Thread { [self] in
                serve(fd)
                state.lock()
                let wasOpen = connections.remove(fd) != nil
                state.unlock()
                if wasOpen { _ = shutdown(fd, Int32(SHUT_RDWR)) }
                close(fd)
                slots.signal()
            }
            thread.name = "LoopbackServer.connection"
            thread.start()
        }
    }

    // MARK: One connection

    private func serve(_ fd: Int32) {
        var reader = Reader(fd: fd, limit: maxRequestBytes)
        while isRunning {
            let parsed: ParsedRequest
            switch reader.readRequest() {
            case .closed: return
            case .tooLarge:
                write(fd, TransportResponse(status: 413, body: Data("request too large".utf8)), keepAlive: false)
                return
            case .malformed(let why):
                write(fd, TransportResponse(status: 400, body: Data(why.utf8)), keepAlive: false)
                return
            case .request(let r): parsed = r
            }
            guard let url = URL(string: baseURL + parsed.target) else {
                write(fd, TransportResponse(status: 400, body: Data("bad request target".utf8)), keepAlive: false)
                return
            }
            guard let method = TransportRequest.Method(parsed.method) else {
                write(fd, TransportResponse(status: 400, body: Data("bad method".utf8)), keepAlive: false)
                return
            }
            var request = TransportRequest(method: method, url: url, headers: parsed.headers)
            request.body = parsed.body.isEmpty ? nil : parsed.body
            let response = run(request)
            let keepAlive = parsed.keepAlive && isRunning
            guard write(fd, response, keepAlive: keepAlive, headOnly: parsed.method == "HEAD"), keepAlive else { return }
        }
    }

    /// Runs the async handler from this connection's thread.
    private func run(_ request: TransportRequest) -> TransportResponse {
        let done = DispatchSemaphore(value: 0)
        let box = ResponseBox()
        let handler = self.handler
        // The handler must not depend on the cooperative pool: callers (a test waiting for a child process,
        // a synchronous client) may be blocking every pool thread while they wait for this very response.
        if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *) {
            Task(executorPreference: HandlerExecutor.shared) {
                box.response = await handler(request)
                done.signal()
            }
        } else {
            Task.detached {
                box.response = await handler(request)
                done.signal()
            }
        }
        done.wait()
        return box.response ?? TransportResponse(status: 500)
    }

    @discardableResult
    private func write(_ fd: Int32, _ response: TransportResponse, keepAlive: Bool, headOnly: Bool = false) -> Bool {
        var head = "HTTP/1.1 \(response.status.code) \(Self.reason(response.status.code))\r\n"
        for field in response.headers {
            if [.contentLength, .transferEncoding, .connection].contains(field.name) { continue }
            head += "\(field.name.rawName): \(field.value)\r\n"
        }
        head += "Content-Length: \(response.body.count)\r\n"
        head += "Connection: \(keepAlive ? "keep-alive" : "close")\r\n\r\n"
        var bytes = Data(head.utf8)
        if !headOnly { bytes.append(response.body) }
        return bytes.withUnsafeBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                #if canImport(Darwin)
                let n = Darwin.send(fd, raw.baseAddress! + offset, raw.count - offset, 0)
                #else
                let n = send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                #endif
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return false }
                offset += n
            }
            return true
        }
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 409: "Conflict"
        case 413: "Payload Too Large"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        default: "Status"
        }
    }

    private final class ResponseBox: @unchecked Sendable {
        var response: TransportResponse?
    }
}

// MARK: - Request parsing

struct ParsedRequest {
    var method: String
    var target: String
    var headers: HTTPFields
    var body: Data
    var keepAlive: Bool
}

/// Buffered reads of HTTP/1.1 requests from a socket.
struct Reader {
    enum Outcome {
        case request(ParsedRequest)
        case closed
        case tooLarge
        case malformed(String)
    }

    let fd: Int32
    let limit: Int
    private var buffer: [UInt8] = []

    init(fd: Int32, limit: Int) {
        self.fd = fd
        self.limit = limit
    }

    /// Reads more bytes; `false` when the peer closed, timed out or failed.
    private mutating func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            buffer.append(contentsOf: chunk[0..<n])
            return true
        }
    }

    private func find(_ pattern: [UInt8], from start: Int = 0) -> Int? {
        guard buffer.count >= pattern.count + start else { return nil }
        var i = start
        while i + pattern.count <= buffer.count {
            if buffer[i] == pattern[0], Array(buffer[i..<i + pattern.count]) == pattern { return i }
            i += 1
        }
        return nil
    }

    mutating func readRequest() -> Outcome {
        let crlfcrlf: [UInt8] = [13, 10, 13, 10]
        var headerEnd = find(crlfcrlf)
        while headerEnd == nil {
            if buffer.count > min(limit, 1 << 20) { return .tooLarge }
            guard fill() else { return buffer.isEmpty ? .closed : .malformed("incomplete request head") }
            headerEnd = find(crlfcrlf, from: max(0, buffer.count - 64 * 1024 - 3))
        }
        let head = String(decoding: buffer[0..<headerEnd!], as: UTF8.self)
        buffer.removeFirst(headerEnd! + 4)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/1.") else { return .malformed("bad request line") }
        var headers = HTTPFields()
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":"),
                  let name = HTTPField.Name(String(line[..<colon]).trimmingCharacters(in: .whitespaces))
            else { return .malformed("bad header line") }
            headers.append(HTTPField(name: name, value: String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)))
        }
        var body = Data()
        if headers["Transfer-Encoding"]?.lowercased().contains("chunked") == true {
            while true {
                guard let lineEnd = readLineEnd() else { return .malformed("incomplete chunk") }
                let sizeText = String(decoding: buffer[0..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
                buffer.removeFirst(lineEnd + 2)
                guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else {
                    return .malformed("bad chunk size")
                }
                if size == 0 {
                    // Trailers end with an empty line.
                    while let end = readLineEnd() {
                        buffer.removeFirst(end + 2)
                        if end == 0 { break }
                    }
                    break
                }
                guard body.count + size <= limit else { return .tooLarge }
                while buffer.count < size + 2 { guard fill() else { return .malformed("incomplete chunk") } }
                body.append(contentsOf: buffer[0..<size])
                buffer.removeFirst(size + 2)
            }
        } else if let lengthText = headers["Content-Length"] {
            guard let length = Int(lengthText), length >= 0 else { return .malformed("bad Content-Length") }
            guard length <= limit else { return .tooLarge }
            while buffer.count < length { guard fill() else { return .malformed("incomplete body") } }
            body = Data(buffer[0..<length])
            buffer.removeFirst(length)
        }
        let version = requestLine[2]
        let connection = headers["Connection"]?.lowercased() ?? ""
        let keepAlive = version == "HTTP/1.1" ? !connection.contains("close") : connection.contains("keep-alive")
        return .request(ParsedRequest(method: String(requestLine[0]).uppercased(), target: String(requestLine[1]),
                                      headers: headers, body: body, keepAlive: keepAlive))
    }

    /// The index of the next CRLF, reading more as needed.
    private mutating func readLineEnd() -> Int? {
        while true {
            if let i = find([13, 10]) { return i }
            if buffer.count > 64 * 1024 { return nil }
            guard fill() else { return nil }
        }
    }
}

/// Runs loopback handlers on Dispatch threads instead of the cooperative pool, so a server answers even while
/// the pool is saturated by callers blocked waiting for it.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
private final class HandlerExecutor: TaskExecutor {
    static let shared = HandlerExecutor()
    private let queue = DispatchQueue(label: "LoopbackServer.handler", attributes: .concurrent)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
