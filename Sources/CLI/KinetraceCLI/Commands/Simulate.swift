import ArgumentParser
import Foundation
import KinetraceSupport
import KinetraceJSON
import KinetraceAnalysis
import KinetraceController
import KinetraceTransport
import KinetraceSimulation
import KinetraceTrace
import KinetraceWire
import Logging

/// `kinetrace simulate`: the reference controller(s).
struct Simulate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stream samples from simulated phones to a host and record what comes back.",
        discussion: """
            Each controller has its own socket (--to says which transport) and streams the protocol's samples \
            at its nominal rate, timed against absolute \
            monotonic deadlines, carrying realistic IMU signals: sensor noise, gravity-free \
            user acceleration, and jumps as a short ay pulse. Replies are matched to frames by \
            their echoed timestamp and timed on the controller's own clock. With --trace, the run is recorded: frames sent, replies received with their \
            round-trip times, and a ground-truth label for every gesture performed.

            --script takes idle, jumps or random, or a CSV file of recorded samples \
            (t,ax,ay,az,wx,wy,wz[,gesture], t in seconds), resampled to the stream rate. \
            --persona takes the gesture synthesizer's device motion instead (with attitude, and \
            every gesture labelled), sampled at the stream rate.

            A byte-stream protocol (--persona steering by default) goes over \
            one TCP connection per controller. On every tick the phone writes its record only \
            when the stream has room, so a host that reads too slowly shows up as blocked \
            writes (counted, and recorded as blocked_write events), never as lost records.
            """)

    @Option(help: ArgumentHelp("The host to stream to, as udp://HOST:PORT, tcp://HOST:PORT, ws://HOST:PORT/PATH or wss://HOST:PORT/PATH (WebSocket); a bare HOST:PORT or [IPV6]:PORT is on the protocol's own transport (UDP, or TCP for a byte-stream protocol).", valueName: "host:port"))
    var to: String

    @Option(help: ArgumentHelp("Number of controllers, each on its own socket.", valueName: "n"))
    var controllers = 1

    @OptionGroup var wire: ProtocolOptions

    @Option(help: ArgumentHelp("Samples per second per controller (default: the protocol's nominal rate).", valueName: "hz"))
    var rate: Double?

    @Option(help: ArgumentHelp("Seconds to stream (default: until SIGINT, or the end of a CSV script).", valueName: "seconds"))
    var duration: Double?

    @Option(help: ArgumentHelp("Motion: idle, jumps (every 2–4 s; the default), random (Poisson, 3 s mean), or a CSV file.", valueName: "script"))
    var script: String?

    @Option(help: ArgumentHelp("Motion from the gesture synthesizer's persona instead: \(Persona.presets.map(\.name).joined(separator: ", ")).", valueName: "name"))
    var persona: String?

    @Option(help: ArgumentHelp("Seed for every random choice; the same seed gives the same motion.", valueName: "n"))
    var seed: UInt64 = 1

    @Option(help: ArgumentHelp("Record the run to this trace file.", valueName: "file"), completion: .file())
    var trace: String?

    @Option(name: .customLong("spin-us"), help: ArgumentHelp("Spin this many µs before each send deadline instead of sleeping, for precise timing; 0 only sleeps.", valueName: "µs"))
    var spinUs: Int64 = 200

    @Option(name: .customLong("send-buffer"), help: ArgumentHelp("For a byte-stream protocol, the kernel send buffer per connection in bytes (SO_SNDBUF); a small one models a phone's stream buffer, so a slow host shows sooner (default: the kernel's, which grows to megabytes).", valueName: "bytes"))
    var sendBuffer: Int?

    @OptionGroup var tls: TLSClientOptions
    @OptionGroup var summaryFormat: SummaryFormatOptions

    func validate() throws {
        guard (1...10_000).contains(controllers) else { throw ValidationError("--controllers must be between 1 and 10000.") }
        // Slower than a frame in 1000 s is a mistake, and its period would leave Int64 ns.
        if let rate { guard rate.isFinite, rate >= 0.001, rate <= 10_000 else { throw ValidationError("--rate must be in [0.001, 10000] Hz.") } }
        guard (0...100_000).contains(spinUs) else { throw ValidationError("--spin-us must be between 0 and 100000.") }
        if let duration { guard duration.isFinite, duration > 0, duration <= 1e9 else { throw ValidationError("--duration must be a positive number of seconds, at most 1000000000.") } }
        let parsed: TransportTarget
        do { parsed = try TransportTarget.parse(to, fallback: Transports.udp) } catch { throw ValidationError("--to \(error.description)") }
        try tls.validate(secure: parsed.transport.isSecure, flag: "--to")
        if let sendBuffer { guard (1...(64 << 20)).contains(sendBuffer) else { throw ValidationError("--send-buffer must be between 1 and 67108864 bytes.") } }
        if script != nil && persona != nil { throw ValidationError("Give one of --script and --persona.") }
        if let persona, Persona.preset(named: persona) == nil {
            throw ValidationError("--persona must be one of \(Persona.presets.map(\.name).joined(separator: ", ")), not \(persona).")
        }
    }

    func run() throws {
        let target: TransportTarget
        do { target = try TransportTarget.parse(to, fallback: Transports.native(for: wire.wireProtocol)) } catch { throw ValidationError("--to \(error.description)") }
        if let problem = target.transport.problem(carrying: wire.wireProtocol) { throw ValidationError("--to \(problem)") }
        var configuration = ControllerSimulator.Configuration(wireProtocol: wire.wireProtocol, target: target)
        configuration.controllers = controllers
        configuration.rateHz = rate
        configuration.durationS = duration
        configuration.seed = seed
        configuration.tracePath = trace
        configuration.spinNs = spinUs * 1000
        configuration.sendBufferBytes = sendBuffer
        configuration.tlsTrust = try tls.trust()
        // A byte-stream protocol streams attitude, which the jump script cannot move.
        let streamsAttitude = wire.wireProtocol.transport == .byteStream
        switch script ?? (persona == nil && !streamsAttitude ? "jumps" : nil) {
        case nil: configuration.motion = .persona(Persona.preset(named: persona ?? "steering")!)  // checked in validate()
        case "idle": configuration.motion = .script(.idle)
        case "jumps": configuration.motion = .script(.jumps)
        case "random": configuration.motion = .script(.random)
        case let script?:
            guard let data = FileManager.default.contents(atPath: script) else {
                printError("\(script): cannot open: no such file (and not one of idle, jumps, random)")
                throw ExitStatus.noInput
            }
            do {
                configuration.motion = .samples(try MotionSamples(csv: String(decoding: data, as: UTF8.self), source: script))
            } catch {
                printError(error.description)
                throw ExitStatus.dataError
            }
        }
        // The scripted motion is an acceleration pulse: a protocol whose samples cannot carry it sends only level samples.
        let pulse = MotionReading(userAcceleration: Vector3(0, 1, 0), rotationRate: Vector3(0, 1, 0))
        if script != nil, wire.wireProtocol.sample(pulse, timeMs: 0) == wire.wireProtocol.sample(MotionReading(), timeMs: 0) {
            printWarning("\(wire.wireProtocol.id) samples carry none of the scripted motion (an acceleration pulse), so every sample is level; --persona gives the protocol's motion")
        }
        let logger = Logger(label: "kinetrace.simulate")
        let simulator = ControllerSimulator(configuration: configuration, logger: logger)
        let signals = onTermination { _ in simulator.stop() }
        defer { _ = signals }
        let report: SimulationReport
        do {
            report = try simulator.run()
        } catch let error as TraceError {
            printError(error.description)
            throw ExitStatus.forTraceError(error)
        } catch let error as SocketError {
            printError(error.description)
            throw ExitStatus.unavailable
        }
        let rtts = report.roundTripsNs.sorted()
        func percentile(_ p: Double) -> Double? {
            rtts.isEmpty ? nil : Double(rtts[min(rtts.count - 1, Int((p / 100 * Double(rtts.count)).rounded(.up)) - 1)]) / 1e6
        }
        if !target.transport.keepsMessageBoundaries { return try summarizeStream(report) }
        switch summaryFormat.format {
        case .text:
            var line = "sent \(report.framesSent) \(wire.wireProtocol.hostReplies ? "frames" : "messages") from \(controllers) controller(s), \(report.labels) gestures; "
                + (wire.wireProtocol.hostReplies ? "received \(report.repliesReceived) replies (\(report.unexpectedReplies) unexpected)"
                   : "no replies in \(wire.wireProtocol.id.name)" + (report.unexpectedReplies > 0 ? " (\(report.unexpectedReplies) unexpected messages came back)" : ""))
            if let p50 = percentile(50), let p99 = percentile(99) {
                line += "; round trip p50 \(SummaryRendering.ms(p50, 3)) ms, p99 \(SummaryRendering.ms(p99, 3)) ms"
            }
            let late = report.sendLateness
            if late.count > 0, let p50 = late.percentileMs(50), let p99 = late.percentileMs(99), let max = late.maxMs {
                line += "; sent late by p50 \(SummaryRendering.ms(p50 * 1000, 0)) µs, p99 \(SummaryRendering.ms(p99 * 1000, 0)) µs, max \(SummaryRendering.ms(max * 1000, 0)) µs"
            }
            printNow(line)
            for (reason, count) in report.sendErrors.sorted(by: { $0.key < $1.key }) {
                printWarning("\(count) frames could not be sent: \(reason)")
            }
        case .json:
            printNow(JSONValue.object([
                "frames_sent": .integer(Int64(report.framesSent)), "gestures": .integer(Int64(report.labels)),
                "replies_received": .integer(Int64(report.repliesReceived)), "unexpected_replies": .integer(Int64(report.unexpectedReplies)),
                "invalid_received": .integer(Int64(report.invalidReceived)),
                "send_errors": .object(report.sendErrors.mapValues { .integer(Int64($0)) }),
                "round_trip_ms": .object(["count": .integer(Int64(rtts.count)),
                                          "p50": percentile(50).map { .number($0) } ?? .null,
                                          "p99": percentile(99).map { .number($0) } ?? .null,
                                          "max": rtts.last.map { .number(Double($0) / 1e6) } ?? .null]),
                "send_lateness_us": lateness(report.sendLateness),
                "seed": .integer(Int64(bitPattern: seed)),
            ]).jsonText)
        }
        func lateness(_ d: DurationStatistics) -> JSONValue {
            guard d.count > 0 else { return .object(["count": .integer(0)]) }
            // Microseconds: the deadline error is far below a millisecond.
            return .object(["count": .integer(Int64(d.count)), "p50": .number(d.percentileMs(50)! * 1000),
                            "p99": .number(d.percentileMs(99)! * 1000), "max": .number(Double(d.maxNs) / 1000)])
        }
        if report.framesSent == 0 {
            printError("no frame could be sent to \(to)")
            throw ExitStatus.unavailable
        }
    }

    /// The summary of a byte-stream run: records written, blocked writes, connections the host ended.
    private func summarizeStream(_ report: SimulationReport) throws {
        switch summaryFormat.format {
        case .text:
            printNow("wrote \(report.framesSent) records (\(report.bytesSent) bytes) on \(controllers) connection(s), \(report.labels) gestures; "
                     + "\(report.blockedWrites) blocked writes, \(report.partialWrites) partial")
            if report.blockedWrites > 0 {
                printWarning("\(report.blockedWrites) ticks found no room in the stream: the host read slower than \(rate ?? wire.wireProtocol.nominalRateHz) Hz")
            }
            if report.tornRecords > 0 { printWarning("\(report.tornRecords) stream(s) ended inside a record the host could not take") }
            if report.connectionsEndedByHost > 0 { printWarning("the host ended \(report.connectionsEndedByHost) connection(s) while they were sending") }
            for (reason, count) in report.sendErrors.sorted(by: { $0.key < $1.key }) { printWarning("\(count) writes failed: \(reason)") }
        case .json:
            let late = report.sendLateness
            printNow(JSONValue.object([
                "records_written": .integer(Int64(report.framesSent)), "bytes_written": .integer(Int64(report.bytesSent)),
                "blocked_writes": .integer(Int64(report.blockedWrites)), "partial_writes": .integer(Int64(report.partialWrites)),
                "torn_records": .integer(Int64(report.tornRecords)),
                "gestures": .integer(Int64(report.labels)), "reads_received": .integer(Int64(report.datagramsReceived)),
                "connections_ended_by_host": .integer(Int64(report.connectionsEndedByHost)),
                "send_errors": .object(report.sendErrors.mapValues { .integer(Int64($0)) }),
                "send_lateness_us": late.count > 0
                    ? .object(["count": .integer(Int64(late.count)), "p50": .number(late.percentileMs(50)! * 1000),
                               "p99": .number(late.percentileMs(99)! * 1000), "max": .number(Double(late.maxNs) / 1000)])
                    : .object(["count": .integer(0)]),
                "seed": .integer(Int64(bitPattern: seed)),
            ]).jsonText)
        }
        if report.framesSent == 0 {
            printError("no record could be written to \(to)")
            throw ExitStatus.unavailable
        }
    }
}
