#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceTrace
import KinetraceTransport
import KinetraceWire

/// Stand-in phones for the active cases: each has its own UDP socket (so
/// the host sees a new controller), sends exactly the bytes a case crafts,
/// and collects what the host sends back, timed on CLOCK_MONOTONIC.
public final class LiveProbe {
    public struct Reply: Sendable {
        public var controller: Int
        public var payload: [UInt8]
        public var monoNs: Int64
    }

    public let target: SocketAddressBox
    private var sockets: [ConnectedUDPSocket] = []
    /// When each frame left, per controller and t_ms, for ack delays.
    private var sentAt: [Int: [UInt64: Int64]] = [:]
    public private(set) var replies: [Reply] = []
    /// Set when the host's port answered with ICMP port unreachable: nothing listens there.
    public private(set) var refused = false

    public init(target: SocketAddressBox) { self.target = target }

    /// Opens `count` new controllers; returns their indices.
    public func controllers(_ count: Int) throws(SocketError) -> Range<Int> {
        let first = sockets.count
        for _ in 0..<count { sockets.append(try ConnectedUDPSocket(to: target)) }
        return first..<sockets.count
    }

    /// Sends raw bytes from a controller.
    public func send(_ bytes: [UInt8], from controller: Int) {
        if bytes.count == MotionFrame.size, case .success(.frame(let f)) = MotionLinkV1.decodeResult(bytes) {
            sentAt[controller, default: [:]][f.tMs] = SystemClock.monotonicNs()
        }
        if sockets[controller].send(bytes) == ECONNREFUSED { refused = true }
    }

    public func send(_ frame: MotionFrame, from controller: Int) { send(frame.encoded(), from: controller) }

    /// Collects replies for `ms` milliseconds (or until `until` says enough).
    public func collect(forMs ms: Int, until: ([Reply]) -> Bool = { _ in false }) {
        collect(untilMonotonicNs: SystemClock.monotonicNs() + Int64(ms) * 1_000_000, until: until)
    }

    /// Collects replies, each timed as it arrives, until a monotonic deadline:
    /// the way to wait between sends, so ack delays are not inflated by them.
    public func collect(untilMonotonicNs deadline: Int64, until: ([Reply]) -> Bool = { _ in false }) {
        var fds = sockets.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        var buffer = [UInt8](repeating: 0, count: 2048)
        while !until(replies) {
            let remainingNs = deadline - SystemClock.monotonicNs()
            guard remainingNs > 0 else { return }
            // poll counts whole milliseconds: round up, so the wait never ends early.
            guard poll(&fds, nfds_t(fds.count), Int32(min((remainingNs + 999_999) / 1_000_000, 100))) >= 0 else { return }
            for i in fds.indices where fds[i].revents != 0 {
                fds[i].revents = 0
                receiving: while true {
                    switch sockets[i].receive(into: &buffer) {
                    case .datagram(let n):
                        replies.append(Reply(controller: i, payload: Array(buffer[0..<n]), monoNs: SystemClock.monotonicNs()))
                    case .error(let code):
                        if code == ECONNREFUSED { refused = true }
                    case .nothing:
                        break receiving
                    }
                }
            }
        }
    }

    /// Valid acks received, as (controller, echo).
    public var acks: [(controller: Int, echo: UInt64, ack: HapticAck, delayNs: Int64?)] {
        replies.compactMap { r in
            guard case .success(.ack(let ack)) = MotionLinkV1.decodeResult(r.payload) else { return nil }
            return (r.controller, ack.echoTMs, ack, sentAt[r.controller]?[ack.echoTMs].map { r.monoNs - $0 })
        }
    }

    public func forgetReplies() { replies.removeAll() }
}
