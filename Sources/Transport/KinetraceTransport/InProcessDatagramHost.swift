#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceSupport
import NIOConcurrencyHelpers

/// A host that is a function in this process, put on a UDP port of 127.0.0.1 so the
/// harness reaches it exactly as it reaches a real one: each datagram a controller sends
/// goes to `handler` with the controller's address ("127.0.0.1:50001"), and each reply it
/// returns goes back to that controller. One thread calls the handler, in arrival order,
/// so the handler needs no locking of its own.
package final class InProcessDatagramHost: @unchecked Sendable {  // `fd` and `thread` are fixed at init; the flag has its own lock
    package typealias Handler = @Sendable (_ datagram: [UInt8], _ controller: String) -> [[UInt8]]

    /// The loopback port the host listens on.
    package let port: UInt16
    private let fd: Int32
    /// Shared with the serving thread, which must not hold the host itself (it would outlive a deinit).
    private let stopping = NIOLockedValueBox(false)
    private var thread: WorkerThread?

    package init(handler: @escaping Handler) throws(SocketError) {
        #if canImport(Glibc) || canImport(Musl)
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_DGRAM, 0)
        #endif
        guard fd >= 0 else { throw SocketError.fromErrno("socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard bound == 0, named == 0 else {
            let error = SocketError.fromErrno("bind 127.0.0.1:0")
            close(fd)
            throw error
        }
        self.fd = fd
        port = UInt16(bigEndian: address.sin_port)
        let stopping = self.stopping
        thread = WorkerThread { Self.serve(fd, handler, stopping) }
    }

    /// Stops serving and closes the port; the handler is not called again once this returns.
    package func stop() {
        let first = stopping.withLockedValue { stopping -> Bool in
            defer { stopping = true }
            return !stopping
        }
        guard first else { return }
        thread?.join()
        close(fd)
    }

    deinit { stop() }

    private static func serve(_ fd: Int32, _ handler: Handler, _ stopping: NIOLockedValueBox<Bool>) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !stopping.withLockedValue({ $0 }) {
            // A short poll, so stop() is seen without a wake-up datagram.
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 50) > 0 else { continue }
            var source = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let count = buffer.withUnsafeMutableBytes { raw in
                withUnsafeMutablePointer(to: &source) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, raw.baseAddress, raw.count, 0, $0, &length) }
                }
            }
            guard count >= 0 else { continue }
            let ip = UInt32(bigEndian: source.sin_addr.s_addr)
            let controller = "\(ip >> 24).\(ip >> 16 & 0xFF).\(ip >> 8 & 0xFF).\(ip & 0xFF):\(UInt16(bigEndian: source.sin_port))"
            for reply in handler(Array(buffer[0..<count]), controller) {
                _ = reply.withUnsafeBytes { raw in
                    withUnsafePointer(to: &source) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, raw.baseAddress, raw.count, 0, $0, length) }
                    }
                }
            }
        }
    }
}
