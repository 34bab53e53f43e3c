#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceSupport
import KinetraceTrace
import NIOConcurrencyHelpers

/// A host of a byte-stream protocol on TCP: one connection per controller,
/// opened by `openController()` with TCP_NODELAY, all kept open until the
/// link finishes. Each `send` is one write of the stream (looping on partial
/// writes), so the caller's segmentation is what the host's reads can see;
/// whatever the host writes back arrives as `.datagram` events, one per
/// read, and a connection the host ends is reported once as `.error`
/// (EPIPE: closed in order; ECONNRESET: reset).
package final class TCPControllerLink: ControllerLink, @unchecked Sendable {  // sockets behind `lock`; the buffer and poll set belong to the receiving thread
    package let address: SocketAddressBox
    package let hostEndpoint: Endpoint
    private let lock = NIOLock()
    private var sockets: [ConnectedTCPSocket] = []
    /// Kept after `finish`, so records and reports can still name every controller.
    private var endpoints: [Endpoint] = []
    private var polled: [pollfd] = []
    private var buffer = [UInt8](repeating: 0, count: 65_536)

    /// Each connection's kernel send buffer (SO_SNDBUF) when set: a small one makes a
    /// host that stops reading show up sooner as `unsentBytes` and ETIMEDOUT.
    package let sendBufferBytes: Int?

    package init(target: SocketAddressBox, sendBufferBytes: Int? = nil) {
        address = target
        hostEndpoint = target.endpoint
        self.sendBufferBytes = sendBufferBytes
    }

    package var target: LinkTarget { .tcp(address) }

    package func openController() throws(SocketError) -> Int {
        let socket = try ConnectedTCPSocket(to: address, sendBufferBytes: sendBufferBytes)
        return lock.withLock {
            sockets.append(socket)
            endpoints.append(socket.local)
            return sockets.count - 1
        }
    }

    package var controllerCount: Int { lock.withLock { endpoints.count } }

    package func endpoint(of controller: Int) -> Endpoint { lock.withLock { endpoints[controller] } }

    /// Writes `bytes` as one write of the controller's stream; ETIMEDOUT when the
    /// host stopped reading before all of it went (the stream then holds part of it).
    package func send(_ bytes: [UInt8], from controller: Int, deadlineMonotonicNs: Int64) -> Int32? {
        // EBADF once the link has finished: its connections are gone.
        guard let socket = lock.withLock({ controller < sockets.count ? sockets[controller] : nil }) else { return EBADF }
        return socket.write(bytes, deadlineMonotonicNs: deadlineMonotonicNs)
    }

    package func endStream(of controller: Int) -> Bool {
        guard let socket = lock.withLock({ controller < sockets.count ? sockets[controller] : nil }) else { return false }
        socket.shutdownOutput()
        return true
    }

    package func unsentBytes(of controller: Int) -> Int? {
        lock.withLock { controller < sockets.count ? sockets[controller] : nil }?.unsentBytes
    }

    package func receive(timeoutMs: Int32, _ handle: (LinkEvent) -> Void) {
        let open: [ConnectedTCPSocket] = lock.withLock {
            if polled.count < sockets.count {
                polled += sockets[polled.count...].map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            }
            return sockets
        }
        guard polled.contains(where: { $0.fd >= 0 }) else {
            // Nothing to wait on; still wait, so callers never spin.
            usleep(UInt32(clamping: Int64(max(timeoutMs, 0)) * 1000))
            return
        }
        guard poll(&polled, nfds_t(polled.count), timeoutMs) > 0 else { return }
        for index in polled.indices where polled[index].revents != 0 {
            polled[index].revents = 0
            // A bounded burst per connection and call, as the UDP link does.
            draining: for _ in 0..<64 {
                switch open[index].read(into: &buffer) {
                case .bytes(let n):
                    handle(.datagram(controller: index, payload: Array(buffer[0..<n]), receivedMonoNs: SystemClock.monotonicNs()))
                case .nothing:
                    break draining
                case .closed:
                    polled[index].fd = -1  // poll skips negative descriptors: reported once
                    handle(.error(controller: index, code: EPIPE))
                    break draining
                case .error(let code):
                    polled[index].fd = -1
                    handle(.error(controller: index, code: code))
                    break draining
                }
            }
        }
    }

    package func endInput() {}
    package var isDrained: Bool { true }

    package func finish(graceMs: Int) -> String? {
        lock.withLock {
            sockets.removeAll()
            polled.removeAll()
        }
        return nil
    }
}
