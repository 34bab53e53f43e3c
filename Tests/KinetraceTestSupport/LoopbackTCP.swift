import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A TCP connection over loopback made with plain sockets: a listener bound
/// to port 0, then a client with TCP_NODELAY connected to it and the accepted side.
package final class LoopbackTCPPair {
    package let listener: Int32
    package private(set) var client: Int32 = -1
    package private(set) var server: Int32 = -1
    package let port: UInt16
    private var address = sockaddr_in()

    private static func failure(_ what: String) -> FixtureError { FixtureError("\(what): \(String(cString: strerror(errno)))") }

    package init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw Self.failure("socket") }
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        guard bound == 0, listen(listener, 4) == 0 else { close(listener); throw Self.failure("bind/listen") }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        self.listener = listener
        self.port = UInt16(bigEndian: address.sin_port)
    }

    package func connect() throws {
        client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard client >= 0 else { throw Self.failure("socket") }
        var on: Int32 = 1
        setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(client, $0, length) } }
        guard connected == 0 else { throw Self.failure("connect") }
        server = accept(listener, nil, nil)
        guard server >= 0 else { throw Self.failure("accept") }
    }

    deinit {
        if client >= 0 { close(client) }
        if server >= 0 { close(server) }
        close(listener)
    }

    package func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(client, $0.baseAddress! + sent, bytes.count - sent) }
            guard n > 0 else { throw FixtureError("write: \(String(cString: strerror(errno)))") }
            sent += n
        }
    }

    /// Closes the client's side, reads everything the server receives until then, and closes the server's.
    package func finish() throws -> [UInt8] {
        shutdown(client, Int32(SHUT_WR))
        // A bounded wait: a read that never sees end of file fails the test instead of hanging it.
        var limit = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(server, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(server, $0.baseAddress!, $0.count) }
            guard n >= 0 else {
                if errno == EINTR { continue }
                throw FixtureError(errno == EAGAIN || errno == EWOULDBLOCK ? "no end of stream within 30 s of closing the client's side (\(received.count) bytes read)"
                                                                          : "read: \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            received += buffer[0..<n]
        }
        shutdown(server, Int32(SHUT_RDWR))
        return received
    }
}

