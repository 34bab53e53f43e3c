#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceJSON
import KinetraceSupport
import KinetraceTrace
import KinetraceTransport
import KinetraceWire
import Logging
import NIOConcurrencyHelpers

/// Phones of a byte-stream protocol (the 3D mouse): one TCP connection per
/// controller, a sample written on every tick of the rate, as the phone does
/// on every display frame, only when the stream has room (the app's
/// `hasSpaceAvailable`: the socket polls writable). A tick without room is a
/// blocked write, counted and recorded as a `blocked_write` event, never a
/// silent loss; a write the socket takes only in part is finished on the next
/// ticks before any new sample, so the stream never holds a torn record. Each
/// write actually made is recorded as a `msg` record of its bytes (TR-MSG-3).
///
/// The sender is a dedicated thread sleeping to absolute CLOCK_MONOTONIC
/// deadlines; a second thread reads whatever the host writes back and
/// notices connections it closes.
package final class StreamControllerSimulator: @unchecked Sendable {  // state shared across threads is behind `lock`
    package let configuration: ControllerSimulator.Configuration
    private let logger: Logger
    private let lock = NIOLock()
    private var stopRequested = false
    private var sending = true
    private var trace = SimulationTrace()
    private var report = SimulationReport()
    private var hostClosed: [Bool] = []
    /// Set once every stream has been ended on purpose: the host closing then is expected.
    private var outputEnded = false

    package init(configuration: ControllerSimulator.Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    package func stop() { lock.withLock { stopRequested = true } }

    package func run() throws -> SimulationReport {
        let c = configuration
        let rateHz = c.rateHz ?? c.wireProtocol.nominalRateHz
        guard c.wireProtocol.transport == .byteStream, c.wireProtocol.sample(MotionReading(), timeMs: 0) != nil else {
            throw SocketError("the stream simulator sends byte-stream protocols that make samples; \(c.wireProtocol.id) is not one")
        }
        let sockets = try (0..<c.controllers).map { _ throws(SocketError) in try ConnectedTCPSocket(to: c.target, sendBufferBytes: c.sendBufferBytes) }
        hostClosed = Array(repeating: false, count: c.controllers)
        trace = try SimulationTrace(c, rateHz: rateHz, target: "TCP \(c.target), one write per msg record")
        let (startMono, startWallNs) = ControllerSimulator.sessionStart()
        record(.event(EventRecord(timeNs: SystemClock.realtimeNs(), event: "seed", data: [
            "seed": .integer(Int64(bitPattern: c.seed)), "controllers": .integer(Int64(c.controllers)),
            "rate_hz": .number(rateHz), "target": .string(c.target.description),
        ])))

        let receiver = WorkerThread { [self] in receiveLoop(sockets) }
        defer { receiver.join() }
        let sender = WorkerThread { [self] in sendLoop(sockets, rateHz: rateHz, startMono: startMono, startWallNs: startWallNs) }
        sender.join()

        // The end of each stream: the host reads it all, then closes its side too.
        lock.withLock { outputEnded = true }
        for socket in sockets { socket.shutdownOutput() }
        let settleDeadline = SystemClock.monotonicNs() + c.settleMs * 1_000_000
        while SystemClock.monotonicNs() < settleDeadline, !lock.withLock({ hostClosed.allSatisfy { $0 } }) { usleep(5_000) }
        lock.withLock { sending = false }
        receiver.join()
        return try lock.withLock {
            try trace.close()
            return report
        }
    }

    private func sendLoop(_ sockets: [ConnectedTCPSocket], rateHz: Double, startMono: Int64, startWallNs: Int64) {
        let c = configuration
        var ticks = MotionTicks(c, rateHz: rateHz, startWallNs: startWallNs)
        // Bytes of a record the socket took only in part, per controller: written before anything new.
        var unfinished = [[UInt8]](repeating: [], count: c.controllers)
        DeadlineClock.tightenTimerSlack()
        while let tick = ticks.next() {
            if lock.withLock({ stopRequested }) { break }
            let index = tick.controller
            let socket = sockets[index]
            let labels = tick.labels.map { $0.record(controller: socket.local) }
            let payload = c.wireProtocol.sample(tick.reading, timeMs: tick.senderTimeMs)!  // checked in run()
            DeadlineClock.wait(untilMonotonicNs: startMono + tick.offsetNs, spinNs: c.spinNs)
            let sentMono = SystemClock.monotonicNs()
            let sentWall = SystemClock.realtimeNs()
            lock.withLock {
                report.labels += labels.count
                for label in labels { unlockedRecord(.label(label)) }
                guard !hostClosed[index] else { return }
                report.sendLateness.record(ns: sentMono - (startMono + tick.offsetNs))
                if !unfinished[index].isEmpty {
                    // The previous record is finished first; without room for it, this sample waits for a later frame.
                    write(&unfinished[index], on: socket, controller: index, wall: sentWall)
                    guard unfinished[index].isEmpty, !hostClosed[index] else { return blocked(index, socket: socket, senderTimeMs: tick.senderTimeMs, wall: sentWall) }
                }
                var pfd = pollfd(fd: socket.fd, events: Int16(POLLOUT), revents: 0)
                guard poll(&pfd, 1, 0) > 0, pfd.revents & Int16(POLLOUT) != 0 else {
                    return blocked(index, socket: socket, senderTimeMs: tick.senderTimeMs, wall: sentWall)
                }
                var bytes = payload
                write(&bytes, on: socket, controller: index, wall: sentWall)
                guard !hostClosed[index] else { return }
                guard bytes.count < payload.count else { return blocked(index, socket: socket, senderTimeMs: tick.senderTimeMs, wall: sentWall) }
                if !bytes.isEmpty { report.partialWrites += 1 }
                unfinished[index] = bytes
                report.framesSent += 1
            }
        }
        // A record the socket took only in part and never finished: the stream ends torn, and says so.
        lock.withLock {
            for (index, rest) in unfinished.enumerated() where !rest.isEmpty {
                report.tornRecords += 1
                unlockedRecord(.event(EventRecord(timeNs: SystemClock.realtimeNs(), event: "torn_record", data: [
                    "controller": .string(sockets[index].local.description), "unwritten_bytes": .integer(Int64(rest.count)),
                ])))
            }
        }
    }

    /// Writes what the socket takes of `bytes` and records it; leaves the rest in `bytes`.
    private func write(_ bytes: inout [UInt8], on socket: ConnectedTCPSocket, controller index: Int, wall: Int64) {
        let outcome = bytes.withUnsafeBytes { socket.tryWrite($0) }
        let taken: Int
        switch outcome {
        case .all: taken = bytes.count
        case .partial(let n): taken = n
        case .error(let code):
            report.sendErrors[String(cString: strerror(code)), default: 0] += 1
            hostClosed[index] = true
            unlockedRecord(.event(EventRecord(timeNs: wall, event: "connection_ended", data: [
                "controller": .string(socket.local.description), "error": .string(String(cString: strerror(code))),
            ])))
            return
        }
        guard taken > 0 else { return }
        report.bytesSent += taken
        unlockedRecord(.message(MessageRecord(timeNs: wall, direction: .controllerToHost, source: socket.local,
                                              destination: configuration.target.endpoint, payload: Array(bytes[..<taken]))))
        bytes.removeFirst(taken)
    }

    private func blocked(_ index: Int, socket: ConnectedTCPSocket, senderTimeMs: UInt64, wall: Int64) {
        report.blockedWrites += 1
        var data: [String: JSONValue] = ["controller": .string(socket.local.description), "sender_time_ms": .integer(Int64(clamping: senderTimeMs))]
        if let unsent = socket.unsentBytes { data["unsent_bytes"] = .integer(Int64(unsent)) }
        unlockedRecord(.event(EventRecord(timeNs: wall, event: "blocked_write", data: data)))
    }

    private func record(_ record: TraceRecord) { lock.withLock { unlockedRecord(record) } }

    private func unlockedRecord(_ record: TraceRecord) { trace.write(record) }

    /// Reads what the host writes (recorded as it came) and notices each connection it ends.
    private func receiveLoop(_ sockets: [ConnectedTCPSocket]) {
        var fds = sockets.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while lock.withLock({ sending }) {
            let ready = poll(&fds, nfds_t(fds.count), 50)
            lock.withLock { trace.flushIfDue() }
            guard ready > 0 else { continue }
            for index in fds.indices where fds[index].revents != 0 {
                fds[index].revents = 0
                reading: while true {
                    let outcome = sockets[index].read(into: &buffer)
                    let wall = SystemClock.realtimeNs()
                    switch outcome {
                    case .bytes(let n):
                        lock.withLock {
                            report.datagramsReceived += 1
                            unlockedRecord(.message(MessageRecord(timeNs: wall, direction: .hostToController,
                                                                  source: configuration.target.endpoint, destination: sockets[index].local,
                                                                  payload: Array(buffer[0..<n]))))
                        }
                    case .nothing:
                        break reading
                    case .closed, .error:
                        fds[index].fd = -1  // poll skips negative descriptors
                        lock.withLock {
                            let expected = outputEnded || stopRequested
                            if !hostClosed[index] {
                                hostClosed[index] = true
                                if case .error(let code) = outcome { report.sendErrors[String(cString: strerror(code)), default: 0] += 1 }
                                unlockedRecord(.event(EventRecord(timeNs: wall, event: "connection_ended", data: [
                                    "controller": .string(sockets[index].local.description),
                                    "by": .string(outcome == .closed ? "host closed" : "reset"),
                                ])))
                                if !expected { report.connectionsEndedByHost += 1 }
                            }
                        }
                        break reading
                    }
                }
            }
        }
    }
}
