import KinetraceTrace
import KinetraceJSON
import KinetraceSupport
import KinetraceWire

/// Generates, offline and deterministically, what a phone-as-controller
/// session gives, with ground truth, for evaluating gesture detectors: per
/// controller, device-motion samples (`motion` records) at `motionHz`, the
/// the protocol's samples sent from them at `frameHz` as the host receives them
/// (one-way latency drawn per frame, as `SessionSynthesizer` does; no replies),
/// and a `label` for every gesture performed.
///
/// ## Model
/// Device axes are CoreMotion's (x right of the screen in portrait, y to its
/// top, z out of the screen); the reference frame has x to the player's
/// right, y forward and z up. The attitude is rest · Rx(α) · Ry(γ) · Rz(ψ):
/// the persona's hold (`Persona` gives the rest gravity vectors)
/// then small turns about the device's own axes. Gravity is the attitude
/// applied backwards to (0, 0, −1); the rotation rate is the attitude's exact
/// body-frame angular velocity plus noise; user acceleration is the hand's
/// reference-frame acceleration turned into the device frame, plus tremor and
/// noise. On top of the persona's sway, tremor and walking:
/// - **jump** (450 ms): upward acceleration `MotionSignalModel.jumpPulse`:
///   crouch dip −0.25 g (0–100 ms), push-off of the drawn peak P (100–300 ms),
///   landing dip −0.45 P (300–450 ms). In portrait "up" is +y (leaning back
///   by β, ay sees P·cos β), in landscape +x. A wrist flick turns the phone
///   about device y: rate 3 (rad/s)/g · P · sin over one 250 ms period from
///   100 ms, so it ends where it began (2.4–4.5 rad/s for P = 0.8–1.5 g).
/// - **duck** (600 ms): downward acceleration −D·sin for 250 ms, then the
///   stop, +D·(250/350)·sin for 350 ms (equal areas: the player ends at rest,
///   lower); the phone tips forward about x by 10°/g · D and back.
/// - **tilt_left / tilt_right** (600 ms + hold): a turn about device z (the
///   screen normal) by the drawn angle θ, half-cosine in over 300 ms, held,
///   and back over 300 ms. tilt_left is counter-clockwise as the player sees
///   the screen (positive about z): the phone's left side (its top, in
///   landscape) drops, so gravity's y grows and atan2(g.y, hypot(g.x, g.z))
///   = asin(cos β · sin θ) ≈ +θ; tilt_right is the mirror image (negative).
///
/// Onsets are whole ms; the first is 1 s plus an exponential gap after the
/// start, then each next one is max(minimum spacing, duration + 0.5 s) plus
/// an exponential gap, so gestures of one controller never overlap. The
/// gesture's kind is drawn from the persona's mix, its size uniformly from
/// the persona's range.
///
/// Values are rounded to 1e-4 (user acceleration, rotation rate) and 1e-6
/// (gravity, attitude), finer than a phone resolves, so traces stay small.
/// A frame sent at t carries the latest sample at or before t (an app
/// reading `CMMotionManager.deviceMotion` from a timer): the sample at t
/// itself when `motionHz` is a multiple of `frameHz`.
///
/// Every random draw comes from per-controller streams derived from the
/// seed (constants, gestures, noise, steps, latency), so the same
/// configuration gives the same records, and adding a controller leaves the
/// others unchanged.
package struct GestureSessionSynthesizer {
    package struct Configuration: Sendable {
        /// The protocol of the frames; it must be able to make samples (`WireProtocol.sample`).
        package var wireProtocol: any WireProtocol = ProtocolRegistry.standard[ProtocolRegistry.defaultID]!
        package var persona: Persona = .steady
        package var controllers = 1
        package var durationS: Double = 60
        /// Device-motion samples per second per controller.
        package var motionHz: Double = 100
        /// Wire samples per second per controller.
        package var frameHz: Double = 10
        package var seed: UInt64 = 1
        /// Session start on every clock, ms since the epoch.
        package var startMs: UInt64 = 1_767_225_600_000  // 2026-01-01T00:00:00Z
        /// One-way latency and addresses (the source paper's lab figures by default).
        package var network = SyntheticNetwork()
        package var host: Endpoint { network.host(port: wireProtocol.defaultPort) }

        package init() {}

        package func controllerEndpoint(_ index: Int) -> Endpoint { network.controllerEndpoint(index) }
    }

    package let configuration: Configuration
    private var controllers: [ControllerState]
    private var pending = RecordQueue()
    private var step = 0
    private let totalSamples: Int
    private let totalFrames: Int
    private let startNs: Int64
    /// Every record still to be generated is at or after this time.
    private var horizonNs = Int64.min

    private struct ControllerState {
        var endpoint: Endpoint
        /// Players join within one frame period of the start; samples and frames share this offset.
        var offsetNs: Int64
        var hand: HandheldMotion
        var schedule: GestureSchedule
        var active: [GestureInstance] = []
        var latencyRNG: SeededGenerator
        var nextFrame = 0
        var lastArrivalNs = Int64.min
    }

    /// Stream numbers under each controller's derived generator.
    private enum Stream: UInt64 {
        case constants, gestures, noise, steps, latency
    }

    package init(_ configuration: Configuration) {
        self.configuration = configuration
        startNs = Int64(configuration.startMs) * 1_000_000
        let root = SeededGenerator(seed: configuration.seed)
        let framePeriodNs = 1e9 / configuration.frameHz
        controllers = (0..<configuration.controllers).map { index in
            let controllerRoot = root.derived(UInt64(index))
            var constants = controllerRoot.derived(Stream.constants.rawValue)
            let offsetNs = Int64(constants.unit() * framePeriodNs)
            return ControllerState(
                endpoint: configuration.controllerEndpoint(index), offsetNs: offsetNs,
                hand: HandheldMotion(persona: configuration.persona, constants: constants,
                                     walking: controllerRoot.derived(Stream.steps.rawValue),
                                     noise: controllerRoot.derived(Stream.noise.rawValue)),
                schedule: GestureSchedule(persona: configuration.persona, rng: controllerRoot.derived(Stream.gestures.rawValue)),
                latencyRNG: controllerRoot.derived(Stream.latency.rawValue))
        }
        totalSamples = max(Int((configuration.durationS * configuration.motionHz).rounded(.down)), 0)
        totalFrames = max(Int((configuration.durationS * configuration.frameHz).rounded(.down)), 0)
    }

    /// The header for the trace this synthesizer produces.
    package func header(tool: String) -> TraceHeader {
        let c = configuration
        return TraceHeader(
            created: RFC3339.string(fromNanoseconds: startNs),
            tool: tool, wireProtocol: c.wireProtocol, capturePoint: .synthetic, clock: .model,
            notes: "kinetrace synth: user \(c.persona.name) (\(c.persona.summary)), \(c.controllers) controller(s), "
                + "\(c.durationS) s, device motion at \(c.motionHz) Hz, frames at \(c.frameHz) Hz, seed \(c.seed)",
            extra: [
                "seed": .integer(Int64(bitPattern: c.seed)), "user": .string(c.persona.name), "motion_hz": .number(c.motionHz),
            ])
    }

    /// The next record in time order, or nil when the session is over.
    package mutating func next() -> TraceRecord? {
        while true {
            if let first = pending.earliestNs, step >= totalSamples || first < horizonNs {
                return pending.removeEarliest()
            }
            guard step < totalSamples else { return nil }
            if step == 0 { enqueueSeedEvent() }
            for index in controllers.indices { generateStep(controller: index) }
            // Later steps give samples after this step's, labels after the
            // onsets this step passed, and frames later still.
            horizonNs = startNs + sampleOffsetNs(step)
            step += 1
        }
    }

    private func sampleOffsetNs(_ index: Int) -> Int64 { Int64((Double(index) * 1e9 / configuration.motionHz).rounded()) }
    private func frameOffsetNs(_ index: Int) -> Int64 { Int64((Double(index) * 1e9 / configuration.frameHz).rounded()) }

    private mutating func enqueue(_ record: TraceRecord) {
        pending.insert(record)
    }

    private mutating func enqueueSeedEvent() {
        let c = configuration
        enqueue(.event(EventRecord(timeNs: startNs, event: "seed", data: [
            "seed": .integer(Int64(bitPattern: c.seed)), "controllers": .integer(Int64(c.controllers)),
            "user": .string(c.persona.name), "motion_hz": .number(c.motionHz), "rate_hz": .number(c.frameHz),
        ])))
    }

    /// The controller's sample of this step, the labels of gestures begun
    /// since its previous sample, and the frames sent before its next one.
    private mutating func generateStep(controller index: Int) {
        let c = configuration
        var state = controllers[index]
        defer { controllers[index] = state }
        let sampleNs = startNs + state.offsetNs + sampleOffsetNs(step)

        while let onsetMs = state.schedule.nextOnsetMs, startNs + onsetMs * 1_000_000 <= sampleNs,
              let gesture = state.schedule.startNext() {
            state.active.append(gesture)
            enqueue(.label(LabelRecord(
                timeNs: startNs + gesture.onsetMs * 1_000_000, controller: state.endpoint, gesture: gesture.kind.rawValue,
                senderTimeMs: c.startMs + UInt64(gesture.onsetMs), durationMs: UInt64(gesture.durationMs))))
        }
        let elapsed = state.active.map { (gesture: $0, elapsedMs: Double(sampleNs - startNs) / 1e6 - Double($0.onsetMs)) }
        state.active.removeAll { Double(sampleNs - startNs) / 1e6 >= Double($0.onsetMs) + $0.durationMs }
        let motion = state.hand.sample(atS: Double(sampleNs - startNs) / 1e9, gestures: elapsed)
        let sample = MotionSampleRecord(
            timeNs: sampleNs, controller: state.endpoint, senderTimeMs: UInt64(sampleNs / 1_000_000),
            userAcceleration: Self.vector(motion.userAcceleration, scale: 1e4),
            rotationRate: Self.vector(motion.rotationRate, scale: 1e4),
            gravity: Self.vector(motion.gravity, scale: 1e6),
            attitude: MotionSampleRecord.Attitude(
                w: Self.rounded(motion.attitude.w, scale: 1e6), x: Self.rounded(motion.attitude.x, scale: 1e6),
                y: Self.rounded(motion.attitude.y, scale: 1e6), z: Self.rounded(motion.attitude.z, scale: 1e6)))
        enqueue(.motion(sample))

        let isLastStep = step + 1 == totalSamples
        let nextSampleNs = startNs + state.offsetNs + sampleOffsetNs(step + 1)
        while state.nextFrame < totalFrames {
            let sendNs = startNs + state.offsetNs + frameOffsetNs(state.nextFrame)
            guard isLastStep || sendNs < nextSampleNs else { break }
            let latencyMs = c.network.latencyMs { state.latencyRNG.normal(mean: $0, sd: $1) }
            let reading = MotionReading(userAcceleration: sample.userAcceleration, rotationRate: sample.rotationRate,
                                        gravity: sample.gravity, attitude: Self.angles(sample.attitude))
            let payload = c.wireProtocol.sample(reading, timeMs: UInt64(sendNs / 1_000_000))!
            var arrivalNs = sendNs + Int64(latencyMs * 1e6)
            // A byte stream delivers in order: a record cannot overtake the one written before it.
            if c.wireProtocol.transport == .byteStream {
                arrivalNs = max(arrivalNs, state.lastArrivalNs)
                state.lastArrivalNs = arrivalNs
            }
            enqueue(.message(MessageRecord(timeNs: arrivalNs, direction: .controllerToHost,
                                           source: state.endpoint, destination: c.host, payload: payload)))
            state.nextFrame += 1
        }
    }

    /// CoreMotion's roll, pitch and yaw of the sample's attitude (what attitude protocols send).
    private static func angles(_ attitude: MotionSampleRecord.Attitude?) -> Vector3? {
        guard let q = attitude else { return nil }
        let a = AttitudeAngles.rollPitchYaw(w: q.w, x: q.x, y: q.y, z: q.z)
        return Vector3(a.roll, a.pitch, a.yaw)
    }

    /// `value` rounded to 1/`scale` (a power of ten), never negative zero.
    private static func rounded(_ value: Double, scale: Double) -> Double {
        let result = (value * scale).rounded() / scale
        return result == 0 ? 0 : result
    }

    private static func vector(_ v: SIMD3<Double>, scale: Double) -> Vector3 {
        Vector3(rounded(v.x, scale: scale), rounded(v.y, scale: scale), rounded(v.z, scale: scale))
    }
}
