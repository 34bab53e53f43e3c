#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceJSON
import KinetraceSimulation
import KinetraceSupport
import KinetraceTrace
import KinetraceTransport
import KinetraceWire
import Logging
import NIOConcurrencyHelpers

/// The reference controller: N phones, each on its own UDP socket,
/// streaming samples of a datagram protocol (MotionFrames by default) at its
/// nominal rate to a host, and recording what they sent, the replies they got
/// back (with round-trip times on their own monotonic clock) and a
/// ground-truth label per gesture performed.
///
/// Sending runs on the calling thread against absolute CLOCK_MONOTONIC
/// deadlines (clock_nanosleep, TIMER_ABSTIME), so per-frame work never
/// shifts the schedule; replies are read on a second thread.
package final class ControllerSimulator: @unchecked Sendable {  // state shared across its two threads is behind `lock`
    package enum Motion: Sendable {
        /// Generated motion with scripted jumps.
        case script(GestureScript)
        /// Recorded IMU samples, resampled to the stream rate.
        case samples(MotionSamples)
        /// The persona synthesizer's device motion (with attitude), sampled at the stream
        /// rate, its gestures labelled.
        case persona(Persona)
    }

    package struct Configuration: Sendable {
        package var wireProtocol: any WireProtocol
        package var target: SocketAddressBox
        package var controllers = 1
        /// nil: the protocol's nominal rate.
        package var rateHz: Double?
        /// Seconds to stream; nil streams until the samples end or `stop()`.
        package var durationS: Double?
        package var motion = Motion.script(.jumps)
        package var seed: UInt64 = 1
        package var tracePath: String?
        /// How long to keep listening for replies after the last frame.
        package var settleMs: Int64 = 300
        /// Spin this long before each deadline instead of sleeping (0: sleep only).
        package var spinNs: Int64 = 200_000
        /// Byte streams: the connection's kernel send buffer (SO_SNDBUF); nil lets the kernel size it.
        package var sendBufferBytes: Int?

        package init(wireProtocol: any WireProtocol, target: SocketAddressBox) {
            self.wireProtocol = wireProtocol
            self.target = target
        }
    }

    package let configuration: Configuration
    private let logger: Logger
    private let lock = NIOLock()
    private var stopRequested = false
    private var sending = true
    private var trace = SimulationTrace()
    private var report = SimulationReport()
    /// Frames awaiting a reply, per controller: sender time → monotonic send time.
    private var awaiting: [[UInt64: Int64]] = []

    package init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Asks a running simulation to stop after the current frame (any thread, signal-safe enough for a flag).
    package func stop() { lock.withLock { stopRequested = true } }

    /// Streams until the duration, the samples or `stop()` ends it.
    package func run() throws -> SimulationReport {
        let c = configuration
        let rateHz = c.rateHz ?? c.wireProtocol.nominalRateHz
        guard c.wireProtocol.transport == .datagram, c.wireProtocol.sample(MotionReading(), timeMs: 0) != nil else {
            throw SocketError("the simulator sends datagram protocols that make samples; \(c.wireProtocol.id) is not one")
        }
        let sockets = try (0..<c.controllers).map { _ throws(SocketError) in try ConnectedUDPSocket(to: c.target) }
        awaiting = Array(repeating: [:], count: c.controllers)
        trace = try SimulationTrace(c, rateHz: rateHz, target: "\(c.target)")
        // A protocol without replies has nothing to await (and, with no stamps, nothing to match one by).
        let awaitsReplies = c.wireProtocol.hostReplies

        let receiver = WorkerThread { [self] in receiveLoop(sockets) }
        defer { receiver.join() }

        let (startMono, startWallNs) = Self.sessionStart()
        record(.event(EventRecord(timeNs: SystemClock.realtimeNs(), event: "seed", data: [
            "seed": .integer(Int64(bitPattern: c.seed)), "controllers": .integer(Int64(c.controllers)),
            "rate_hz": .number(rateHz), "target": .string(c.target.description),
        ])))
        var ticks = MotionTicks(c, rateHz: rateHz, startWallNs: startWallNs)
        DeadlineClock.tightenTimerSlack()
        while let tick = ticks.next() {
            if lock.withLock({ stopRequested }) { break }
            let index = tick.controller, offsetNs = tick.offsetNs, senderTimeMs = tick.senderTimeMs
            // The sample is built before the sleep so that nothing but the send follows the wake-up.
            let labels = tick.labels.map { $0.record(controller: sockets[index].local) }
            let payload = c.wireProtocol.sample(tick.reading, timeMs: senderTimeMs)!  // checked above
            if awaitsReplies { lock.withLock { awaiting[index][senderTimeMs] = startMono + offsetNs } }
            DeadlineClock.wait(untilMonotonicNs: startMono + offsetNs, spinNs: c.spinNs)
            // Send and record under one lock, so the trace never shows a reply before its frame.
            lock.withLock {
                let sentMono = SystemClock.monotonicNs()
                let sentWall = SystemClock.realtimeNs()  // before the send: a reply can never predate its frame
                let failure = sockets[index].send(payload)
                let lateness = sentMono - (startMono + offsetNs)
                if let failure {
                    report.sendErrors[String(cString: strerror(failure)), default: 0] += 1
                    awaiting[index][senderTimeMs] = nil
                } else {
                    report.framesSent += 1
                    report.sendLateness.record(ns: lateness)
                    // Round trips start at the actual send; a reply fast enough to beat
                    // this line was timed from the deadline, at most `lateness` longer.
                    if awaiting[index][senderTimeMs] != nil { awaiting[index][senderTimeMs] = sentMono }
                }
                report.labels += labels.count
                for label in labels { unlockedRecord(.label(label)) }
                if failure == nil {
                    unlockedRecord(.message(MessageRecord(timeNs: sentWall, direction: .controllerToHost,
                                                          source: sockets[index].local, destination: c.target.endpoint,
                                                          payload: payload)))
                }
            }
        }
        // Late replies still count: listen a little longer, then stop the receiver.
        DeadlineClock.sleep(untilMonotonicNs: SystemClock.monotonicNs() + c.settleMs * 1_000_000)
        lock.withLock { sending = false }
        receiver.join()
        return try lock.withLock {
            report.repliesOutstanding = awaiting.reduce(0) { $0 + $1.count }
            try trace.close()
            return report
        }
    }

    /// The session start about 20 ms from now on both clocks, on a whole
    /// millisecond of the wall clock, so the motion's model clock and the wall clock agree.
    static func sessionStart() -> (monotonicNs: Int64, wallNs: Int64) {
        let nowWall = SystemClock.realtimeNs(), nowMono = SystemClock.monotonicNs()
        let startWall = (nowWall / 1_000_000 + 20) * 1_000_000
        return (nowMono + (startWall - nowWall), startWall)
    }

    private func record(_ record: TraceRecord) { lock.withLock { unlockedRecord(record) } }

    private func unlockedRecord(_ record: TraceRecord) { trace.write(record) }

    /// Reads replies from every socket until sending has finished.
    private func receiveLoop(_ sockets: [ConnectedUDPSocket]) {
        var fds = sockets.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        var buffer = [UInt8](repeating: 0, count: 2048)
        while lock.withLock({ sending }) {
            let ready = poll(&fds, nfds_t(fds.count), 50)
            lock.withLock { trace.flushIfDue() }
            guard ready > 0 else { continue }
            for (index, pfd) in fds.enumerated() where pfd.revents != 0 {
                receiving: while true {
                    switch sockets[index].receive(into: &buffer) {
                    case .datagram(let n, _):
                        let payload = Array(buffer[0..<n])
                        handleReply(payload, controller: index, socket: sockets[index],
                                  mono: SystemClock.monotonicNs(), wall: SystemClock.realtimeNs())
                    case .error(let code):
                        lock.withLock { report.sendErrors[String(cString: strerror(code)), default: 0] += 1 }
                    case .nothing:
                        break receiving
                    }
                }
                fds[index].revents = 0
            }
        }
    }

    private func handleReply(_ payload: [UInt8], controller index: Int, socket: ConnectedUDPSocket, mono: Int64, wall: Int64) {
        lock.withLock {
            report.datagramsReceived += 1
            var rtt: Int64?
            let facts = configuration.wireProtocol.facts(payload)
            if facts.isValid, facts.direction == .hostToController, let echo = facts.echoTimeMs {
                report.repliesReceived += 1
                if let sent = awaiting[index].removeValue(forKey: echo) {
                    rtt = mono - sent
                    report.roundTripsNs.append(mono - sent)
                } else {
                    report.unexpectedReplies += 1
                }
                // Everything older than this reply's frame will not be answered (a host replies at most once per sample).
                awaiting[index] = awaiting[index].filter { $0.key > echo }
            } else {
                report.invalidReceived += 1
            }
            unlockedRecord(.message(MessageRecord(timeNs: wall, direction: .hostToController,
                                                  source: configuration.target.endpoint, destination: socket.local,
                                                  payload: payload, rttNs: rtt)))
        }
    }
}

/// What a simulation run did.
package struct SimulationReport: Sendable {
    package var framesSent = 0
    package var labels = 0
    package var datagramsReceived = 0
    package var repliesReceived = 0
    package var unexpectedReplies = 0
    package var invalidReceived = 0
    /// Frames still waiting for a reply when the run ended (not triggers: most frames are never answered).
    package var repliesOutstanding = 0
    /// Byte streams: ticks whose sample was not written because the stream had no room
    /// (the host read slower than the phone wrote), and samples the socket took only in part.
    package var blockedWrites = 0
    package var partialWrites = 0
    package var bytesSent = 0
    /// Byte streams: records the run ended inside of (their rest never written).
    package var tornRecords = 0
    /// Byte streams: connections the host closed or reset while the phone was still sending.
    package var connectionsEndedByHost = 0
    /// Socket errors by reason, from sending or from the host's ICMP answers ("Connection refused").
    package var sendErrors: [String: Int] = [:]
    /// Round-trip time of every matched reply, on the controller's monotonic clock.
    package var roundTripsNs: [Int64] = []
    /// How late each frame left against its absolute deadline (CLOCK_MONOTONIC).
    package var sendLateness = DurationStatistics()
    package init() {}
}
