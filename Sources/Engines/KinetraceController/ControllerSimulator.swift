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

/// The reference controller: N phones, each with its own connection to a host on any
/// transport, streaming samples of a protocol (MotionFrames by default) at its nominal rate,
/// and recording what they sent, the replies they got back (with round-trip times on their
/// own monotonic clock) and a ground-truth label per gesture performed.
///
/// A sample is written on every tick of the rate, as a phone does on every display frame,
/// only when the connection has room (the app's `hasSpaceAvailable`). A tick without room is
/// a blocked write, counted and recorded as a `blocked_write` event, never a silent loss; a
/// write a stream takes only in part is finished on the next ticks before any new sample, so
/// the stream never holds a torn record. Each write actually made is a `msg` record of its
/// bytes (TR-MSG-3).
///
/// Sending runs on a dedicated thread against absolute CLOCK_MONOTONIC deadlines
/// (clock_nanosleep, TIMER_ABSTIME), so per-frame work never shifts the schedule; replies
/// are read on a second thread, which also notices connections the host ends.
package final class ControllerSimulator: @unchecked Sendable {  // state shared across its threads is behind `lock`
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
        package var target: TransportTarget
        package var controllers = 1
        /// nil: the protocol's nominal rate.
        package var rateHz: Double?
        /// Seconds to stream; nil streams until the samples end or `stop()`.
        package var durationS: Double?
        package var motion = Motion.script(.jumps)
        package var seed: UInt64 = 1
        package var tracePath: String?
        /// How long to keep listening for replies after the last frame (and, on a stream,
        /// at most how long to wait for the host to close its side after ours).
        package var settleMs: Int64 = 300
        /// Spin this long before each deadline instead of sleeping (0: sleep only).
        package var spinNs: Int64 = 200_000
        /// The connection's kernel send buffer (SO_SNDBUF); nil lets the kernel size it.
        package var sendBufferBytes: Int?
        /// Which certificates a secure transport's host may present.
        package var tlsTrust = TLSTrust.system

        package init(wireProtocol: any WireProtocol, target: TransportTarget) {
            self.wireProtocol = wireProtocol
            self.target = target
        }

        /// A host at `address` on the protocol's own transport.
        package init(wireProtocol: any WireProtocol, address: SocketAddressBox) {
            self.init(wireProtocol: wireProtocol, target: TransportTarget(Transports.native(for: wireProtocol), address))
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
    /// Connections the host has ended (or that failed for good): nothing more is sent on them.
    private var hostEnded: [Bool] = []
    /// Set once every connection's output has been ended on purpose: the host closing then is expected.
    private var outputEnded = false

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
        guard c.wireProtocol.sample(MotionReading(), timeMs: 0) != nil else {
            throw SocketError("the simulator sends protocols that make samples; \(c.wireProtocol.id) is not one")
        }
        if let problem = c.target.transport.problem(carrying: c.wireProtocol) { throw SocketError(problem) }
        let options = ConnectionOptions(sendBufferBytes: c.sendBufferBytes, tlsTrust: c.tlsTrust)
        let target = c.target.fitted(to: c.wireProtocol)
        let connections = try (0..<c.controllers).map { _ throws(SocketError) in
            try target.transport.connect(to: target, options: options)
        }
        awaiting = Array(repeating: [:], count: c.controllers)
        hostEnded = Array(repeating: false, count: c.controllers)
        trace = try SimulationTrace(c, rateHz: rateHz, target: c.target.transport.keepsMessageBoundaries
                                    ? "\(c.target)" : "\(c.target), one write per msg record")
        let (startMono, startWallNs) = Self.sessionStart()
        record(.event(EventRecord(timeNs: SystemClock.realtimeNs(), event: "seed", data: [
            "seed": .integer(Int64(bitPattern: c.seed)), "controllers": .integer(Int64(c.controllers)),
            "rate_hz": .number(rateHz), "target": .string(c.target.address.description),
        ])))

        let receiver = WorkerThread { [self] in receiveLoop(connections) }
        defer { receiver.join() }
        sendLoop(connections, rateHz: rateHz, startMono: startMono, startWallNs: startWallNs)

        // The end of each stream: the host reads it all, then closes its side too. Datagrams
        // have no end to answer: late replies still count for the settling time.
        let waited = lock.withLock {
            outputEnded = true
            return connections.indices.filter { !hostEnded[$0] && connections[$0].endOutput() }
        }
        let settleDeadline = SystemClock.monotonicNs() + c.settleMs * 1_000_000
        if waited.isEmpty {
            DeadlineClock.sleep(untilMonotonicNs: settleDeadline)
        } else {
            while SystemClock.monotonicNs() < settleDeadline, !lock.withLock({ waited.allSatisfy { hostEnded[$0] } }) { usleep(5_000) }
        }
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

    private func sendLoop(_ connections: [any ControllerConnection], rateHz: Double, startMono: Int64, startWallNs: Int64) {
        let c = configuration
        // A protocol without replies has nothing to await (and, with no stamps, nothing to match one by).
        let awaitsReplies = c.wireProtocol.hostReplies && c.target.transport.keepsMessageBoundaries
        var ticks = MotionTicks(c, rateHz: rateHz, startWallNs: startWallNs)
        // Bytes of a record a stream took only in part, per controller: written before anything new.
        var unfinished = [[UInt8]](repeating: [], count: c.controllers)
        DeadlineClock.tightenTimerSlack()
        while let tick = ticks.next() {
            if lock.withLock({ stopRequested }) { break }
            let index = tick.controller, deadline = startMono + tick.offsetNs, senderTimeMs = tick.senderTimeMs
            let connection = connections[index]
            // The sample is built before the sleep so that nothing but the send follows the wake-up.
            let labels = tick.labels.map { $0.record(controller: connection.local) }
            let payload = c.wireProtocol.sample(tick.reading, timeMs: senderTimeMs)!  // checked in run()
            if awaitsReplies { lock.withLock { awaiting[index][senderTimeMs] = deadline } }
            DeadlineClock.wait(untilMonotonicNs: deadline, spinNs: c.spinNs)
            // Send and record under one lock, so the trace never shows a reply before its frame.
            lock.withLock {
                let sentMono = SystemClock.monotonicNs()
                let sentWall = SystemClock.realtimeNs()  // before the send: a reply can never predate its frame
                report.labels += labels.count
                for label in labels { unlockedRecord(.label(label)) }
                guard !hostEnded[index] else {
                    awaiting[index][senderTimeMs] = nil
                    return
                }
                report.sendLateness.record(ns: sentMono - deadline)
                if !unfinished[index].isEmpty {
                    // The previous record is finished first; without room for it, this sample waits for a later frame.
                    write(&unfinished[index], on: connection, controller: index, wall: sentWall)
                    guard unfinished[index].isEmpty, !hostEnded[index] else {
                        awaiting[index][senderTimeMs] = nil
                        return blocked(index, connection: connection, senderTimeMs: senderTimeMs, wall: sentWall)
                    }
                }
                guard connection.hasRoom else {
                    awaiting[index][senderTimeMs] = nil
                    return blocked(index, connection: connection, senderTimeMs: senderTimeMs, wall: sentWall)
                }
                var bytes = payload
                let sent = write(&bytes, on: connection, controller: index, wall: sentWall)
                guard sent > 0 else {
                    awaiting[index][senderTimeMs] = nil
                    // A failed send was counted; a stream that took nothing had no room after all.
                    if sent == 0 { blocked(index, connection: connection, senderTimeMs: senderTimeMs, wall: sentWall) }
                    return
                }
                if !bytes.isEmpty { report.partialWrites += 1 }
                unfinished[index] = bytes
                report.framesSent += 1
                // Round trips start at the actual send; a reply fast enough to beat
                // this line was timed from the deadline, at most the lateness longer.
                if awaiting[index][senderTimeMs] != nil { awaiting[index][senderTimeMs] = sentMono }
            }
        }
        // A record a stream took only in part and never finished: the stream ends torn, and says so.
        lock.withLock {
            for (index, rest) in unfinished.enumerated() where !rest.isEmpty {
                report.tornRecords += 1
                unlockedRecord(.event(EventRecord(timeNs: SystemClock.realtimeNs(), event: "torn_record", data: [
                    "controller": .string(connections[index].local.description), "unwritten_bytes": .integer(Int64(rest.count)),
                ])))
            }
        }
    }

    /// Sends what the connection takes of `bytes` and records it; leaves the rest in `bytes`.
    /// Returns the bytes taken, or -1 when the send failed.
    @discardableResult
    private func write(_ bytes: inout [UInt8], on connection: any ControllerConnection, controller index: Int, wall: Int64) -> Int {
        let outcome = bytes.withUnsafeBytes { connection.trySend($0) }
        let taken: Int
        switch outcome {
        case .all: taken = bytes.count
        case .partial(let n): taken = n
        case .failed(let code, let ended):
            report.sendErrors[String(cString: strerror(code)), default: 0] += 1
            if ended {
                hostEnded[index] = true
                unlockedRecord(.event(EventRecord(timeNs: wall, event: "connection_ended", data: [
                    "controller": .string(connection.local.description), "error": .string(String(cString: strerror(code))),
                ])))
            }
            return -1
        }
        guard taken > 0 else { return 0 }
        report.bytesSent += taken
        unlockedRecord(.message(MessageRecord(timeNs: wall, direction: .controllerToHost, source: connection.local,
                                              destination: configuration.target.address.endpoint, payload: Array(bytes[..<taken]))))
        bytes.removeFirst(taken)
        return taken
    }

    private func blocked(_ index: Int, connection: any ControllerConnection, senderTimeMs: UInt64, wall: Int64) {
        report.blockedWrites += 1
        var data: [String: JSONValue] = ["controller": .string(connection.local.description), "sender_time_ms": .integer(Int64(clamping: senderTimeMs))]
        if let unsent = connection.unsentBytes { data["unsent_bytes"] = .integer(Int64(unsent)) }
        unlockedRecord(.event(EventRecord(timeNs: wall, event: "blocked_write", data: data)))
    }

    private func record(_ record: TraceRecord) { lock.withLock { unlockedRecord(record) } }

    private func unlockedRecord(_ record: TraceRecord) { trace.write(record) }

    /// Reads what the host sends (recorded as it came) until sending has finished, and
    /// notices each connection it ends.
    private func receiveLoop(_ connections: [any ControllerConnection]) {
        var fds = connections.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        // Input a poll cannot show (decoded with the handshake's answer): read first.
        var held = connections.indices.filter { connections[$0].hasBufferedInput }
        while lock.withLock({ sending }) {
            let ready = poll(&fds, nfds_t(fds.count), held.isEmpty ? 50 : 0)
            lock.withLock { trace.flushIfDue() }
            for index in held where fds[index].fd >= 0 { fds[index].revents = Int16(POLLIN) }
            held.removeAll()
            guard ready > 0 || fds.contains(where: { $0.revents != 0 }) else { continue }
            for index in fds.indices where fds[index].revents != 0 {
                fds[index].revents = 0
                reading: while true {
                    let outcome = connections[index].read(into: &buffer)
                    let mono = SystemClock.monotonicNs(), wall = SystemClock.realtimeNs()
                    switch outcome {
                    case .bytes(let n, _):
                        handleReply(Array(buffer[0..<n]), controller: index, connection: connections[index], mono: mono, wall: wall)
                    case .nothing:
                        break reading
                    case .failed(let code, ended: false):
                        // An ICMP answer to a datagram ("Connection refused"): the next one may still go.
                        lock.withLock { report.sendErrors[String(cString: strerror(code)), default: 0] += 1 }
                    case .closed, .failed(_, ended: true):
                        fds[index].fd = -1  // poll skips negative descriptors
                        connectionEnded(index, connections[index], outcome, wall: wall)
                        break reading
                    }
                }
            }
        }
    }

    private func connectionEnded(_ index: Int, _ connection: any ControllerConnection, _ outcome: ReadOutcome, wall: Int64) {
        lock.withLock {
            guard !hostEnded[index] else { return }
            hostEnded[index] = true
            if case .failed(let code, _) = outcome { report.sendErrors[String(cString: strerror(code)), default: 0] += 1 }
            unlockedRecord(.event(EventRecord(timeNs: wall, event: "connection_ended", data: [
                "controller": .string(connection.local.description),
                "by": .string(outcome == .closed ? "host closed" : outcome == .failed(EPROTO, ended: true) ? "protocol error" : "reset"),
            ])))
            if !(outputEnded || stopRequested) { report.connectionsEndedByHost += 1 }
        }
    }

    /// One read from the host. Where the transport keeps message boundaries a read is one
    /// reply, judged and matched to its frame for the round trip; a stream's reads are chunks,
    /// recorded as they came.
    private func handleReply(_ payload: [UInt8], controller index: Int, connection: any ControllerConnection, mono: Int64, wall: Int64) {
        lock.withLock {
            report.datagramsReceived += 1
            var rtt: Int64?
            if configuration.target.transport.keepsMessageBoundaries {
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
            }
            unlockedRecord(.message(MessageRecord(timeNs: wall, direction: .hostToController,
                                                  source: configuration.target.address.endpoint, destination: connection.local,
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
