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

#if canImport(Darwin)
private let noSignal: Int32 = 0  // Darwin uses SO_NOSIGPIPE, set on the socket
#else
private let noSignal = Int32(MSG_NOSIGNAL)
#endif

/// A non-blocking TCP connection to one peer with Nagle's algorithm off
/// (TCP_NODELAY), so every write leaves as it was made: the controller's side
/// of a byte-stream link, and the simulated 3D mouse's stream.
package final class ConnectedTCPSocket: @unchecked Sendable {  // the descriptor is immutable; callers serialise writes and reads
    package let fd: Int32
    package let local: Endpoint

    /// Connects within `timeoutMs` (a host that drops SYNs must not hang the caller for minutes).
    /// `sendBufferBytes` fixes the kernel's send buffer (SO_SNDBUF, which Linux doubles) instead
    /// of letting it grow to megabytes: a small one models a phone's stream buffer.
    package init(to peer: SocketAddressBox, timeoutMs: Int32 = 5_000, sendBufferBytes: Int? = nil) throws(SocketError) {
        #if canImport(Glibc) || canImport(Musl)
        let fd = socket(peer.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        #else
        let fd = socket(peer.family, SOCK_STREAM, 0)
        if fd >= 0 { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        #endif
        guard fd >= 0 else { throw .fromErrno("socket") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        if var size = sendBufferBytes.map({ Int32(clamping: $0) }) {
            setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        #if canImport(Darwin)
        setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        var storage = peer.storage
        let connected = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, peer.length) }
        }
        if connected != 0 {
            guard errno == EINPROGRESS else {
                let error = SocketError.fromErrno("connect to \(peer)")
                close(fd)
                throw error
            }
            var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            var ready: Int32
            repeat { ready = poll(&pfd, 1, timeoutMs) } while ready < 0 && errno == EINTR
            var pending: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &pending, &length)
            guard ready > 0, pending == 0 else {
                close(fd)
                throw SocketError("connect to \(peer): \(ready == 0 ? "no answer within \(timeoutMs) ms" : String(cString: strerror(pending)))")
            }
        }
        var local = SocketAddressBox()
        local.length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &local.storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &local.length) }
        }
        self.fd = fd
        self.local = local.endpoint
    }

    /// Takes over `fd`, a connected non-blocking stream socket (a TLS relay's plaintext end),
    /// named by `local`: it is closed with this value.
    package init(adopting fd: Int32, local: Endpoint) {
        self.fd = fd
        self.local = local
        #if canImport(Darwin)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    deinit { close(fd) }

    package enum Written: Equatable, Sendable {
        /// Every byte went into the socket's send buffer.
        case all
        /// The buffer had no room for all of them; this many went in (the caller owns the rest).
        case partial(Int)
        /// The connection failed (EPIPE after the peer closed, ECONNRESET).
        case error(Int32)
    }

    /// One attempt to write, never blocking.
    package func tryWrite(_ bytes: UnsafeRawBufferPointer) -> Written {
        guard !bytes.isEmpty else { return .all }
        while true {
            let n = systemSend(fd, bytes.baseAddress, bytes.count, noSignal)
            if n == bytes.count { return .all }
            if n >= 0 { return .partial(n) }
            let error = errno
            if error == EINTR { continue }
            return error == EAGAIN || error == EWOULDBLOCK ? .partial(0) : .error(error)
        }
    }

    /// Writes all of `bytes` as one write, looping on partial writes while the
    /// peer reads, until `deadlineMonotonicNs`. Returns errno on failure
    /// (ETIMEDOUT: the peer stopped reading; some bytes may have gone).
    package func write(_ bytes: [UInt8], deadlineMonotonicNs: Int64) -> Int32? {
        var written = 0
        while written < bytes.count {
            let outcome = bytes.withUnsafeBytes { tryWrite(UnsafeRawBufferPointer(rebasing: $0[written...])) }
            switch outcome {
            case .all: return nil
            case .error(let code): return code
            case .partial(let n):
                written += n
                let remainingNs = deadlineMonotonicNs - SystemClock.monotonicNs()
                guard remainingNs > 0 else { return ETIMEDOUT }
                var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&pfd, 1, Int32(min((remainingNs + 999_999) / 1_000_000, 1000)))
            }
        }
        return nil
    }

    package enum Read: Equatable, Sendable {
        /// This many bytes were read into the buffer.
        case bytes(Int)
        /// Nothing is waiting.
        case nothing
        /// The peer closed its side in order (FIN).
        case closed
        /// The connection failed (ECONNRESET: the peer reset it).
        case error(Int32)
    }

    /// What one non-blocking read gives.
    package func read(into buffer: inout [UInt8]) -> Read {
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { return .bytes(n) }
            if n == 0 { return .closed }
            let error = errno
            if error == EINTR { continue }
            return error == EAGAIN || error == EWOULDBLOCK ? .nothing : .error(error)
        }
    }

    /// Bytes written but not yet confirmed (TCP ACK) by the peer (Linux SIOCOUTQ): they
    /// grow once a peer stops reading and its receive window closes. nil elsewhere.
    package var unsentBytes: Int? {
        #if os(Linux)
        var queued: Int32 = 0
        // SIOCOUTQ is TIOCOUTQ (0x5411) on Linux; Glibc does not export the name.
        let status = withUnsafeMutablePointer(to: &queued) { ioctl(fd, UInt(0x5411), $0) }
        return status == 0 ? Int(queued) : nil
        #else
        return nil
        #endif
    }

    /// Stops writing: the peer reads end of stream after what was sent.
    package func shutdownOutput() { _ = shutdown(fd, Int32(SHUT_WR)) }
}
