#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceSupport
import KinetraceTrace
import KinetraceTransport
import KinetraceWire

/// Stand-in phones for one active case: each controller is new to the host
/// (a new socket, or a new stdio controller id), sends exactly the bytes the
/// case crafts, and collects what the host sends back and what it reports
/// on the observation channel, timed on CLOCK_MONOTONIC.
package final class LiveProbe {
    package struct Reply: Sendable {
        package var controller: Int
        /// The reply's first `LiveProbe.replyBytesKept` bytes: a hostile host's 64 KiB replies
        /// must not be kept whole.
        package var payload: [UInt8]
        package var monoNs: Int64
        /// The reply's length on the wire.
        package var length: Int
        package var isTruncated: Bool { length > payload.count }
    }

    /// Bytes kept of each reply: far more than any protocol's reply (the largest seed reply is 20), so
    /// a longer reply is malformed whatever its tail holds.
    package static let replyBytesKept = 512
    /// Replies a case tolerates before it stops as flooded: 1,000 plus 10 per sample sent.
    /// A conforming host sends at most one reply per sample, so only a host that
    /// answers without being asked reaches it; with `replyBytesKept` it bounds a case's
    /// memory near 1 MB plus 6 KB per sample.
    package static func replyLimit(samplesSent: Int) -> Int { 1_000 + 10 * samplesSent }
    /// Decisions reported on the observation channel a case tolerates: 1,000 plus one per byte
    /// sent (a send may carry many stream records; no message is shorter than a byte, and a host
    /// reports at most one decision per message).
    package static func observationLimit(bytesSent: Int) -> Int { 1_000 + bytesSent }

    /// A valid reply that echoes a sample's stamp, and how long after that sample it came.
    package struct Echo: Sendable {
        package var controller: Int
        package var echo: UInt64
        package var payload: [UInt8]
        package var delayNs: Int64?
    }

    /// A decision the host reported on the observation channel.
    package struct Observed: Sendable {
        package var controller: Int
        package var observation: Observation
        package var monoNs: Int64
    }

    let link: any ControllerLink
    package var wireProtocol: any WireProtocol
    /// The case's sample-time origin: the controllers' wall clock when the case began (what a sender clock stamps).
    package let t0: UInt64
    /// Link indices of this case's controllers; the case sees them as 0, 1, …
    private var mine: [Int] = []
    private var local: [Int: Int] = [:]
    /// When each sample left, per controller and sender stamp, for reply delays.
    private var sentAt: [Int: [UInt64: Int64]] = [:]
    /// The newest messages each controller sent, with when they left: an observation that names
    /// no values is the decision on the newest message its controller sent before it arrived.
    private var recentSends: [Int: [(monoNs: Int64, bytes: [UInt8])]] = [:]
    /// Messages kept per controller for that (a load case sends thousands; the cases that need it, a few).
    package static let recentSendsKept = 256
    package private(set) var replies: [Reply] = []
    package private(set) var observations: [Observed] = []
    /// Decisions reported under a controller id that is none of this case's (a host that mixes up
    /// ids, or one slow enough to report an earlier case's): the first `strayObservationsKept`, and how many.
    package private(set) var strayObservations: [(controllerID: Int, observation: Observation)] = []
    package private(set) var strayObservationCount = 0
    package static let strayObservationsKept = 5
    /// The host reported a decision on the suite's preflight message: its observation channel works.
    package internal(set) var hostReportsDecisions = false
    /// The stdio controller ids of this case's controllers, for evidence.
    package var controllerIDs: [Int] { mine }
    /// Set when the host's port answered with ICMP port unreachable: nothing listens there.
    package private(set) var refused = false
    /// Set when an exec host exited or broke the framing.
    package private(set) var hostFailure: String?
    /// How an exec host ended, when it did during this case: the stdio adapter gives each its exit status.
    package private(set) var hostEnd: HostEnd?
    /// Controllers whose TCP connection the host ended: EPIPE when it closed it (FIN), ECONNRESET when it reset it.
    package private(set) var closedByHost: [Int: Int32] = [:]
    /// The newest sample stamp this case sent.
    package private(set) var newestSenderTimeMs: UInt64 = 0
    /// Messages this case sent, and replies and reply bytes its controllers received.
    package private(set) var samplesSent = 0
    package private(set) var repliesReceived = 0
    package private(set) var replyBytesReceived = 0
    package private(set) var bytesSent = 0
    package private(set) var observationsReceived = 0
    /// Set when the host sent more replies than `replyLimit` allows: the case stops waiting,
    /// keeps no more, and the suite fails it and runs nothing after it.
    package private(set) var flooded: String?

    init(link: any ControllerLink, wireProtocol: any WireProtocol, t0: UInt64) {
        self.link = link
        self.wireProtocol = wireProtocol
        self.t0 = t0
    }

    /// Where the host is: over `exec` it may report decisions on the observation channel; over a socket it cannot.
    package var target: LinkTarget { link.target }

    /// The newest message `controller` sent before `monoNs`, if this probe still holds it.
    package func newestSent(by controller: Int, before monoNs: Int64) -> [UInt8]? {
        recentSends[controller]?.last { $0.monoNs < monoNs }?.bytes
    }

    /// Opens `count` new controllers; returns their indices.
    package func controllers(_ count: Int) throws(SocketError) -> Range<Int> {
        let first = mine.count
        for _ in 0..<count {
            let index = try link.openController()
            local[index] = mine.count
            mine.append(index)
        }
        return first..<mine.count
    }

    /// Sends raw bytes from a controller. A forged far-future stamp is sent with
    /// `advancesClock: false`, so later cases' stamps stay near the wall clock.
    package func send(_ bytes: [UInt8], from controller: Int, advancesClock: Bool = true) {
        guard flooded == nil else { return }
        samplesSent += 1
        bytesSent += bytes.count
        // In place: a copy out of the dictionary would copy the whole window on every send.
        if recentSends[controller]?.count == Self.recentSendsKept { recentSends[controller]!.removeFirst(Self.recentSendsKept / 2) }
        recentSends[controller, default: []].append((SystemClock.monotonicNs(), bytes))
        let facts = wireProtocol.facts(bytes)
        if facts.isValid, facts.direction == .controllerToHost, let senderTimeMs = facts.senderTimeMs {
            sentAt[controller, default: [:]][senderTimeMs] = SystemClock.monotonicNs()
            if advancesClock { newestSenderTimeMs = max(newestSenderTimeMs, senderTimeMs) }
        }
        if let code = link.send(bytes, from: mine[controller], deadlineMonotonicNs: SystemClock.monotonicNs() + 1_000_000_000) {
            // EPIPE: an exec host has gone; the next collect says how it ended.
            if link.target.controllersAreConnections, code == EPIPE || code == ECONNRESET {
                closedByHost[controller] = closedByHost[controller] ?? code
            } else if code == ECONNREFUSED { refused = true } else if code != EPIPE, hostFailure == nil {
                hostFailure = "cannot send to the host: \(String(cString: strerror(code)))"
            }
        }
    }

    /// One message each from `count` controllers the host has never heard and that are not
    /// kept here (a state-exhaustion flood): distinct loopback sources over UDP, fresh
    /// controller ids over exec. Their replies, if any, are not collected.
    package func sendFromFreshSources(count: Int, firstSource: Int = 0, payload: (Int) -> [UInt8]) -> LoopbackSources.Outcome {
        switch link.target {
        case .network(let network) where !network.transport.hasConnections:
            let outcome = LoopbackSources.send(count: count, firstSource: firstSource, to: network.address, payload: payload)
            if case .sent(let n) = outcome { samplesSent += n }
            return outcome
        case .exec:
            guard link.controllerCount + count <= Int(UInt16.max) + 1 else {
                return .unavailable("the stdio adapter numbers at most 65,536 controllers in a run; \(count) more do not fit")
            }
            for i in 0..<count {
                let index: Int
                do { index = try link.openController() } catch { return .unavailable(error.description) }
                let bytes = payload(i)
                samplesSent += 1
                if let code = link.send(bytes, from: index, deadlineMonotonicNs: SystemClock.monotonicNs() + 1_000_000_000) {
                    return .unavailable("cannot send to the host: \(String(cString: strerror(code)))")
                }
                // Keep reading, so an exec host's replies never block it.
                if i % 1_000 == 999 { collect(forMs: 1) }
            }
            return .sent(count)
        case .network:
            return .unavailable("this host's controllers are its connections")
        }
    }

    /// Ends a controller's byte stream (its connection's write side); false where the link has none.
    package func endStream(of controller: Int) -> Bool { link.endStream(of: mine[controller]) }

    /// Bytes a controller wrote that the host has not read yet (the send queue, SIOCOUTQ), when the link can tell.
    package func unsentBytes(of controller: Int) -> Int? { link.unsentBytes(of: mine[controller]) }

    /// Collects replies for `ms` milliseconds (or until `until` says enough).
    package func collect(forMs ms: Int, until: ([Reply]) -> Bool = { _ in false }) {
        collect(untilMonotonicNs: SystemClock.monotonicNs() + Int64(ms) * 1_000_000, until: until)
    }

    /// Collects replies, each timed as it arrives, until a monotonic deadline:
    /// the way to wait between sends, so reply delays are not inflated by them.
    /// Replies to earlier cases' controllers are dropped.
    package func collect(untilMonotonicNs deadline: Int64, until: ([Reply]) -> Bool = { _ in false }) {
        while flooded == nil, !until(replies) {
            let remainingNs = deadline - SystemClock.monotonicNs()
            guard remainingNs > 0 else { return }
            // poll counts whole milliseconds: round up, so the wait never ends early.
            link.receive(timeoutMs: Int32(min((remainingNs + 999_999) / 1_000_000, 100))) { event in
                switch event {
                case .datagram(let controller, let payload, let monoNs):
                    guard flooded == nil else { return }
                    // Replies to another case's controllers are dropped but still count toward the
                    // flood limit: a host that floods an old controller is as hostile as any.
                    repliesReceived += 1
                    replyBytesReceived += payload.count
                    if repliesReceived > Self.replyLimit(samplesSent: samplesSent) {
                        flooded = "the host sent \(repliesReceived) replies (\(replyBytesReceived) bytes) to \(samplesSent) messages, "
                            + "past the limit of 1,000 plus 10 per message"
                        return
                    }
                    guard let c = local[controller] else { return }
                    let kept = payload.count > Self.replyBytesKept ? Array(payload.prefix(Self.replyBytesKept)) : payload
                    replies.append(Reply(controller: c, payload: kept, monoNs: monoNs, length: payload.count))
                case .observation(let controller, let observation, let monoNs):
                    guard flooded == nil else { return }
                    guard local[controller] != nil else {
                        strayObservationCount += 1
                        if strayObservations.count < Self.strayObservationsKept { strayObservations.append((controller, observation)) }
                        return
                    }
                    observationsReceived += 1
                    if observationsReceived > Self.observationLimit(bytesSent: bytesSent) {
                        flooded = "the host reported \(observationsReceived) decisions on \(bytesSent) bytes sent, "
                            + "past the limit of 1,000 plus 1 per byte"
                        return
                    }
                    if let c = local[controller] { observations.append(Observed(controller: c, observation: observation, monoNs: monoNs)) }
                case .error(let controller, let code):
                    if link.target.controllersAreConnections, code == EPIPE || code == ECONNRESET {
                        if let c = local[controller] { closedByHost[c] = closedByHost[c] ?? code }
                    } else if code == ECONNREFUSED { refused = true }
                case .hostEnded(let why):
                    hostFailure = hostFailure ?? why
                    hostEnd = hostEnd ?? .died(why)
                case .protocolError(let why):
                    hostFailure = hostFailure ?? why
                    hostEnd = hostEnd ?? .brokeFraming(why)
                case .hostFinished:
                    hostFailure = hostFailure ?? "the host process closed its output"
                    hostEnd = hostEnd ?? .died("the host process closed its output")
                }
            }
        }
    }

    /// Valid replies that echo a sample's stamp, with their delays.
    package var echoes: [Echo] {
        replies.compactMap { r in
            let facts = wireProtocol.facts(r.payload)
            guard !r.isTruncated, facts.isValid, facts.direction == .hostToController, let echo = facts.echoTimeMs else { return nil }
            return Echo(controller: r.controller, echo: echo, payload: r.payload, delayNs: sentAt[r.controller]?[echo].map { r.monoNs - $0 })
        }
    }

    package func forgetReplies() { replies.removeAll() }
}
