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

/// Stand-in phones for one active case: each controller is new to the host
/// (a new socket, or a new stdio controller id), sends exactly the bytes the
/// case crafts, and collects what the host sends back, timed on CLOCK_MONOTONIC.
public final class LiveProbe {
    public struct Reply: Sendable {
        public var controller: Int
        public var payload: [UInt8]
        public var monoNs: Int64
    }

    let transport: any ProbeTransport
    /// The case's frame-time origin: the controllers' wall clock (ML-FRAME-4) when the case began.
    public let t0: UInt64
    /// Transport indices of this case's controllers; the case sees them as 0, 1, …
    private var mine: [Int] = []
    private var local: [Int: Int] = [:]
    /// When each frame left, per controller and t_ms, for ack delays.
    private var sentAt: [Int: [UInt64: Int64]] = [:]
    public private(set) var replies: [Reply] = []
    /// Set when the host's port answered with ICMP port unreachable: nothing listens there.
    public private(set) var refused = false
    /// Set when an exec host exited or broke the framing.
    public private(set) var hostFailure: String?
    /// The newest frame time this case sent.
    public private(set) var newestTMs: UInt64 = 0

    init(transport: any ProbeTransport, t0: UInt64) {
        self.transport = transport
        self.t0 = t0
    }

    /// Opens `count` new controllers; returns their indices.
    public func controllers(_ count: Int) throws(SocketError) -> Range<Int> {
        let first = mine.count
        for _ in 0..<count {
            let index = try transport.openController()
            local[index] = mine.count
            mine.append(index)
        }
        return first..<mine.count
    }

    /// Sends raw bytes from a controller.
    public func send(_ bytes: [UInt8], from controller: Int) {
        if bytes.count == MotionFrame.size, case .success(.frame(let f)) = MotionLinkV1.decodeResult(bytes) {
            sentAt[controller, default: [:]][f.tMs] = SystemClock.monotonicNs()
            newestTMs = max(newestTMs, f.tMs)
        }
        if let code = transport.send(bytes, from: mine[controller]) {
            // EPIPE: an exec host has gone; the next collect says how it ended.
            if code == ECONNREFUSED { refused = true } else if code != EPIPE, hostFailure == nil {
                hostFailure = "cannot send to the host: \(String(cString: strerror(code)))"
            }
        }
    }

    public func send(_ frame: MotionFrame, from controller: Int) { send(frame.encoded(), from: controller) }

    /// Collects replies for `ms` milliseconds (or until `until` says enough).
    public func collect(forMs ms: Int, until: ([Reply]) -> Bool = { _ in false }) {
        collect(untilMonotonicNs: SystemClock.monotonicNs() + Int64(ms) * 1_000_000, until: until)
    }

    /// Collects replies, each timed as it arrives, until a monotonic deadline:
    /// the way to wait between sends, so ack delays are not inflated by them.
    /// Replies to earlier cases' controllers are dropped.
    public func collect(untilMonotonicNs deadline: Int64, until: ([Reply]) -> Bool = { _ in false }) {
        while !until(replies) {
            let remainingNs = deadline - SystemClock.monotonicNs()
            guard remainingNs > 0 else { return }
            // poll counts whole milliseconds: round up, so the wait never ends early.
            transport.poll(timeoutMs: Int32(min((remainingNs + 999_999) / 1_000_000, 100))) { event in
                switch event {
                case .reply(let controller, let payload, let monoNs):
                    if let c = local[controller] { replies.append(Reply(controller: c, payload: payload, monoNs: monoNs)) }
                case .refused: refused = true
                case .hostEnded(let why), .protocolError(let why): hostFailure = hostFailure ?? why
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
