#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceSupport
import KinetraceTrace

#if canImport(Glibc)
private let systemSend = Glibc.send
#elseif canImport(Musl)
private let systemSend = Musl.send
#elseif canImport(Darwin)
private let systemSend = Darwin.send
#endif

/// A resolved IPv4 or IPv6 socket address.
package struct SocketAddressBox: Sendable, CustomStringConvertible {
    package internal(set) var storage = sockaddr_storage()
    package internal(set) var length: socklen_t = 0

    package var family: Int32 { Int32(storage.ss_family) }

    /// Resolves `HOST:PORT` or `[V6]:PORT` (numeric or a name such as localhost).
    package static func resolve(_ text: String) throws(SocketError) -> SocketAddressBox {
        let host: String, portText: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") {
            host = String(text[text.index(after: text.startIndex)..<close])
            portText = text[text.index(close, offsetBy: 2)...]
        } else if let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") {
            host = String(text[..<colon])
            portText = text[text.index(after: colon)...]
        } else {
            throw SocketError("\(text): expected HOST:PORT or [IPV6]:PORT")
        }
        guard let port = UInt16(portText) else { throw SocketError("\(text): the port must be a number from 0 to 65535") }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &result)
        guard status == 0, let first = result else {
            throw SocketError("\(text): cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(result) }
        var box = SocketAddressBox()
        withUnsafeMutableBytes(of: &box.storage) { dst in
            dst.copyMemory(from: UnsafeRawBufferPointer(start: first.pointee.ai_addr, count: Int(first.pointee.ai_addrlen)))
        }
        box.length = first.pointee.ai_addrlen
        return box
    }

    /// The address as a trace endpoint.
    package var endpoint: Endpoint {
        var copy = storage
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        return withUnsafePointer(to: &copy) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ in
                if family == AF_INET6 {
                    return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                        var address = sin6.pointee.sin6_addr
                        inet_ntop(AF_INET6, &address, &text, socklen_t(text.count))
                        return Endpoint(host: cText(text), port: UInt16(bigEndian: sin6.pointee.sin6_port))
                    }
                }
                return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    var address = sin.pointee.sin_addr
                    inet_ntop(AF_INET, &address, &text, socklen_t(text.count))
                    return Endpoint(host: cText(text), port: UInt16(bigEndian: sin.pointee.sin_port))
                }
            }
        }
    }

    package var description: String { endpoint.description }
}

/// A NUL-terminated C string held in an array.
func cText(_ chars: [CChar]) -> String {
    String(decoding: chars.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

package struct SocketError: Error, CustomStringConvertible, Sendable {
    package var description: String
    package init(_ description: String) { self.description = description }

    package static func fromErrno(_ action: String) -> SocketError {
        SocketError("\(action): \(String(cString: strerror(errno)))")
    }
}

/// A UDP socket connected to one peer: the controller's side of the link.
package final class ConnectedUDPSocket: @unchecked Sendable {  // the descriptor is immutable; callers serialise sends and reads
    package let fd: Int32
    package let local: Endpoint
    /// Whether the kernel stamps each reply's arrival (`Received.datagram`'s stamp).
    package let stampsArrivals: Bool

    package init(to peer: SocketAddressBox) throws(SocketError) {
        #if canImport(Glibc) || canImport(Musl)
        let fd = socket(peer.family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let fd = socket(peer.family, SOCK_DGRAM, 0)
        #endif
        guard fd >= 0 else { throw .fromErrno("socket") }
        var storage = peer.storage
        let connected = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, peer.length) }
        }
        guard connected == 0 else {
            let error = SocketError.fromErrno("connect to \(peer)")
            close(fd)
            throw error
        }
        // Non-blocking so the receive loop can drain with poll().
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        stampsArrivals = StampedReceive.enable(fd)
        var local = SocketAddressBox()
        local.length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &local.storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &local.length) }
        }
        self.fd = fd
        self.local = local.endpoint
    }

    deinit { close(fd) }

    /// Sends one datagram; returns errno on failure (ECONNREFUSED once the peer's port is closed).
    package func send(_ bytes: [UInt8]) -> Int32? {
        bytes.withUnsafeBytes { send($0) }
    }

    package func send(_ bytes: UnsafeRawBufferPointer) -> Int32? {
        let n = systemSend(fd, bytes.baseAddress, bytes.count, 0)
        return n == bytes.count ? nil : (n < 0 ? errno : EMSGSIZE)
    }

    /// A datagram's length and the kernel's arrival stamp (CLOCK_REALTIME ns; nil unstamped).
    package enum Received { case datagram(Int, arrivalRealtimeNs: Int64?), nothing, error(Int32) }

    /// One datagram if one is waiting, or the socket's pending error (an
    /// ICMP port unreachable surfaces here as ECONNREFUSED).
    package func receive(into buffer: inout [UInt8]) -> Received {
        let (n, stamp) = buffer.withUnsafeMutableBytes { StampedReceive.receive(fd, into: $0) }
        if n >= 0 { return .datagram(n, arrivalRealtimeNs: stamp) }
        let error = errno
        return error == EAGAIN || error == EWOULDBLOCK ? .nothing : .error(error)
    }
}

