import KinetraceTrace
import KinetraceJSON
import KinetraceSupport
import KinetraceWire

/// Generates, offline and deterministically, the trace a host-side capture
/// of a session of phones as controllers would hold: N controllers streaming samples of
/// the protocol at the nominal rate, a one-way latency drawn per sample, a
/// reference host answering as the protocol's host model says, and a
/// ground-truth label for each jump performed.
///
/// Records stream out in time order through a heap, so memory stays bounded
/// by the latency window, not the session length.
package struct SessionSynthesizer {
    package struct Configuration: Sendable {
        /// The protocol of the samples; it must be able to make them (`WireProtocol.sample`).
        package var wireProtocol: any WireProtocol = ProtocolRegistry.standard[ProtocolRegistry.defaultID]!
        package var controllers = 1
        package var durationS: Double = 60
        package var rateHz: Double = 10
        package var script: GestureScript = .jumps
        package var seed: UInt64 = 1
        /// Sender clock of the first frame, ms since the epoch.
        package var startMs: UInt64 = 1_767_225_600_000  // 2026-01-01T00:00:00Z
        /// One-way latency and addresses (the source paper's lab figures by default).
        package var network = SyntheticNetwork()
        /// Host processing time before the reply leaves, ms.
        package var hostDelayMs: ClosedRange<Double> = 0.15...0.6
        /// Probability that a frame arrives with one bit flipped.
        package var corruptProbability = 0.0
        package var host: Endpoint { network.host(port: wireProtocol.defaultPort) }
        package var rule = GestureRule.default

        package init() {}

        package func controllerEndpoint(_ index: Int) -> Endpoint { network.controllerEndpoint(index) }
    }

    package let configuration: Configuration
    private var controllers: [ControllerState]
    private var pending = RecordQueue()
    private var step = 0
    private let totalSteps: Int
    private var hostModel: any HostModel

    private struct ControllerState {
        var endpoint: Endpoint
        var phaseMs: Double
        var player: Player
        var lastArrivalNs = Int64.min
    }

    package init(_ configuration: Configuration) {
        self.configuration = configuration
        let root = SeededGenerator(seed: configuration.seed)
        controllers = (0..<configuration.controllers).map { index in
            var rng = root.derived(UInt64(index))
            // Controllers start within one frame period of each other, as players join.
            let phase = rng.unit() * 1000 / configuration.rateHz
            return ControllerState(endpoint: configuration.controllerEndpoint(index), phaseMs: phase,
                                   player: Player(rng: rng, script: configuration.script))
        }
        totalSteps = Int((configuration.durationS * configuration.rateHz).rounded(.down))
        hostModel = configuration.wireProtocol.makeHostModel(rule: configuration.rule)
    }

    /// The header for the trace this synthesizer produces.
    package func header(tool: String) -> TraceHeader {
        let c = configuration
        return TraceHeader(
            created: RFC3339.string(fromNanoseconds: Int64(c.startMs) * 1_000_000),
            tool: tool, wireProtocol: c.wireProtocol, capturePoint: .synthetic, clock: .model,
            notes: "kinetrace synth: \(c.controllers) controller(s), \(c.durationS) s at \(c.rateHz) Hz, script \(c.script), seed \(c.seed)",
            extra: ["seed": .integer(Int64(bitPattern: c.seed))])
    }

    /// The next record in time order, or nil when the session is over.
    package mutating func next() -> TraceRecord? {
        while true {
            if let first = pending.earliestNs, step >= totalSteps || first < horizonNs() {
                return pending.removeEarliest()
            }
            guard step < totalSteps else { return nil }
            if step == 0 { enqueueSeedEvent() }
            for index in controllers.indices { generateFrame(controller: index) }
            step += 1
        }
    }

    /// No record generated from now on can be earlier than this. Frames of
    /// the next step are sent at or after `step × period`; a jump label is
    /// stamped at its onset, which is later than the controller's previous
    /// frame, so at or after `(step − 1) × period`. One more ms absorbs the
    /// flooring of the sender time.
    private func horizonNs() -> Int64 {
        let periodMs = 1000 / configuration.rateHz
        return Int64((Double(configuration.startMs) + Double(step - 1) * periodMs - 1) * 1e6)
    }

    private mutating func enqueue(_ record: TraceRecord) {
        pending.insert(record)
    }

    private mutating func enqueueSeedEvent() {
        let c = configuration
        enqueue(.event(EventRecord(timeNs: Int64(c.startMs) * 1_000_000, event: "seed", data: [
            "seed": .integer(Int64(bitPattern: c.seed)), "controllers": .integer(Int64(c.controllers)),
            "script": .string("\(c.script)"), "rate_hz": .number(c.rateHz),
        ])))
    }

    private mutating func generateFrame(controller index: Int) {
        let c = configuration
        var state = controllers[index]
        defer { controllers[index] = state }
        let periodMs = 1000 / c.rateHz
        let elapsedMs = Double(step) * periodMs + state.phaseMs
        let senderTimeMs = c.startMs + UInt64(elapsedMs.rounded(.down))

        let (reading, started) = state.player.sample(elapsedMs: elapsedMs, senderTimeMs: senderTimeMs, startMs: c.startMs)
        for jump in started {
            enqueue(.label(LabelRecord(timeNs: Int64(jump.onsetMs) * 1_000_000, controller: state.endpoint,
                                       gesture: "jump", senderTimeMs: jump.onsetMs, durationMs: MotionSignalModel.Jump.durationMs)))
        }
        let latency = c.network.latencyMs { state.player.normal(mean: $0, sd: $1) }
        var arrivalNs = Int64(senderTimeMs) * 1_000_000 + Int64(latency * 1e6)
        // A byte stream delivers in order: a record cannot overtake the one written before it.
        if c.wireProtocol.transport == .byteStream {
            arrivalNs = max(arrivalNs, state.lastArrivalNs)
            state.lastArrivalNs = arrivalNs
        }
        // The CLI checks the protocol makes samples before it builds a synthesizer.
        var payload = c.wireProtocol.sample(reading, timeMs: senderTimeMs)!
        if c.corruptProbability > 0, state.player.unit() < c.corruptProbability {
            let bit = Int(state.player.nextRandom() % UInt64(payload.count * 8))
            payload[bit / 8] ^= 1 << UInt8(bit % 8)
            enqueue(.event(EventRecord(timeNs: arrivalNs, event: "corrupt", data: [
                "controller": .string(state.endpoint.description), "sender_time_ms": .integer(Int64(senderTimeMs)), "bit": .integer(Int64(bit)),
            ])))
        }
        enqueue(.message(MessageRecord(timeNs: arrivalNs, direction: .controllerToHost, source: state.endpoint,
                                       destination: c.host, payload: payload)))

        // The reference host's answer, decided on what actually arrived.
        if let decision = hostModel.accept(c.wireProtocol.facts(payload), from: index, receivedNs: arrivalNs).decision,
           let reply = c.wireProtocol.reply(to: decision) {
            let hostDelay = c.hostDelayMs.lowerBound + state.player.unit() * (c.hostDelayMs.upperBound - c.hostDelayMs.lowerBound)
            enqueue(.message(MessageRecord(timeNs: arrivalNs + Int64(hostDelay * 1e6), direction: .hostToController,
                                           source: c.host, destination: state.endpoint, payload: reply)))
        }
    }
}
