#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceSimulation
import KinetraceSupport
import KinetraceTrace
import KinetraceWire

/// One sample a simulated phone sends: when (ns after the session start, on
/// the schedule), its sender stamp, what it carries, and the gestures that
/// began since the controller's previous sample.
struct MotionTick {
    var controller: Int
    var offsetNs: Int64
    var senderTimeMs: UInt64
    var reading: MotionReading
    var labels: [PendingLabel]
}

/// A gesture label whose controller address is known only to the sender.
struct PendingLabel {
    var timeNs: Int64
    var gesture: String
    var senderTimeMs: UInt64
    var durationMs: UInt64?

    func record(controller: Endpoint) -> LabelRecord {
        LabelRecord(timeNs: timeNs, controller: controller, gesture: gesture, senderTimeMs: senderTimeMs, durationMs: durationMs)
    }
}

/// The simulated phones' samples in send order, free of clocks and sockets:
/// the scripted player model, recorded CSV samples, or the persona
/// synthesizer's device motion (with attitude and labelled gestures).
struct MotionTicks {
    private enum Source {
        case stepped(Stepped)
        case persona(GestureSessionSynthesizer, controllerIndex: [Endpoint: Int])
    }
    private var source: Source
    private let startWallNs: Int64

    /// `startWallNs` is the session start on the wall clock, a whole millisecond.
    init(_ configuration: ControllerSimulator.Configuration, rateHz: Double, startWallNs: Int64) {
        self.startWallNs = startWallNs
        switch configuration.motion {
        case .persona(let persona):
            var session = GestureSessionSynthesizer.Configuration()
            session.wireProtocol = configuration.wireProtocol
            session.persona = persona
            session.controllers = configuration.controllers
            // Until stop() when no duration is given: longer than any run, still finite.
            session.durationS = configuration.durationS ?? 1e7
            session.motionHz = rateHz
            session.frameHz = rateHz
            session.seed = configuration.seed
            session.startMs = UInt64(startWallNs / 1_000_000)
            let index = Dictionary(uniqueKeysWithValues: (0..<configuration.controllers).map { (session.controllerEndpoint($0), $0) })
            source = .persona(GestureSessionSynthesizer(session), controllerIndex: index)
        case .script, .samples:
            source = .stepped(Stepped(configuration, rateHz: rateHz, startWallNs: startWallNs))
        }
    }

    mutating func next() -> MotionTick? {
        switch source {
        case .stepped(var stepped):
            defer { source = .stepped(stepped) }
            return stepped.next()
        case .persona(var synthesizer, let index):
            defer { source = .persona(synthesizer, controllerIndex: index) }
            var labels: [Int: [PendingLabel]] = [:]
            // Its records come in time order: a label precedes the sample that first shows its gesture.
            while let record = synthesizer.next() {
                switch record {
                case .label(let label):
                    guard let endpoint = label.controller, let controller = index[endpoint] else { continue }
                    labels[controller, default: []].append(PendingLabel(timeNs: label.timeNs, gesture: label.gesture,
                                                                         senderTimeMs: label.senderTimeMs ?? UInt64(label.timeNs / 1_000_000),
                                                                         durationMs: label.durationMs))
                case .motion(let sample):
                    guard let controller = index[sample.controller] else { continue }
                    let reading = MotionReading(userAcceleration: sample.userAcceleration, rotationRate: sample.rotationRate,
                                                gravity: sample.gravity, attitude: sample.attitude?.coreMotionAngles)
                    // Labels of other controllers wait for their own sample; none is lost, the session
                    // holds every controller's samples at least as often as their gestures.
                    pendingLabels.merge(labels.filter { $0.key != controller }) { $0 + $1 }
                    let mine = (pendingLabels.removeValue(forKey: controller) ?? []) + (labels[controller] ?? [])
                    return MotionTick(controller: controller, offsetNs: sample.timeNs - startWallNs, senderTimeMs: sample.senderTimeMs,
                                      reading: reading, labels: mine)
                default:
                    continue  // its frames and seed event: the simulator sends and records its own
                }
            }
            return nil
        }
    }
    private var pendingLabels: [Int: [PendingLabel]] = [:]

    /// The player model or CSV samples, stepped at the rate with a phase per controller.
    struct Stepped {
        let configuration: ControllerSimulator.Configuration
        let periodNs: Int64
        let startWallNs: Int64
        let durationNs: Int64?
        var players: [Player] = []
        var phasesNs: [Int64] = []
        let order: [Int]
        var position = 0
        var step: Int64 = 0
        var lastSenderTimeMs: [UInt64]
        var labelCursor: [Int]
        var ended = false

        init(_ c: ControllerSimulator.Configuration, rateHz: Double, startWallNs: Int64) {
            configuration = c
            self.startWallNs = startWallNs
            periodNs = Int64((1e9 / rateHz).rounded())
            let root = SeededGenerator(seed: c.seed)
            for index in 0..<c.controllers {
                var rng = root.derived(UInt64(index))
                phasesNs.append(Int64(rng.unit() * Double(periodNs)))
                let script: GestureScript
                if case .script(let s) = c.motion { script = s } else { script = .idle }
                players.append(Player(rng: rng, script: script))
            }
            let phases = phasesNs
            order = (0..<c.controllers).sorted { phases[$0] < phases[$1] }
            durationNs = {
                if let d = c.durationS { return Int64(d * 1e9) }
                if case .samples(let s) = c.motion { return Int64(s.durationS * 1e9) }
                return nil
            }()
            lastSenderTimeMs = [UInt64](repeating: 0, count: c.controllers)
            labelCursor = [Int](repeating: 0, count: c.controllers)
        }

        mutating func next() -> MotionTick? {
            guard !ended else { return nil }
            if position == order.count {
                position = 0
                step += 1
            }
            let index = order[position]
            position += 1
            let offsetNs = step * periodNs + phasesNs[index]
            if let durationNs, offsetNs >= durationNs {
                ended = true
                return nil
            }
            // A sender clock: the wall clock at the scheduled send time,
            // strictly increasing per controller.
            let senderTimeMs = max(UInt64((startWallNs + offsetNs) / 1_000_000), lastSenderTimeMs[index] + 1)
            lastSenderTimeMs[index] = senderTimeMs
            let elapsedMs = Double(offsetNs) / 1e6
            switch configuration.motion {
            case .samples(let samples):
                var labels: [PendingLabel] = []
                while labelCursor[index] < samples.labels.count, samples.labels[labelCursor[index]].atS * 1000 <= elapsedMs {
                    let label = samples.labels[labelCursor[index]]
                    labels.append(PendingLabel(timeNs: Int64(senderTimeMs) * 1_000_000, gesture: label.gesture, senderTimeMs: senderTimeMs, durationMs: nil))
                    labelCursor[index] += 1
                }
                return MotionTick(controller: index, offsetNs: offsetNs, senderTimeMs: senderTimeMs, reading: samples.reading(atS: elapsedMs / 1000), labels: labels)
            default:
                let (reading, started) = players[index].sample(elapsedMs: elapsedMs, senderTimeMs: senderTimeMs, startMs: UInt64(startWallNs / 1_000_000))
                let labels = started.map {
                    PendingLabel(timeNs: Int64($0.onsetMs) * 1_000_000, gesture: "jump", senderTimeMs: $0.onsetMs, durationMs: MotionSignalModel.Jump.durationMs)
                }
                return MotionTick(controller: index, offsetNs: offsetNs, senderTimeMs: senderTimeMs, reading: reading, labels: labels)
            }
        }
    }
}

extension MotionSampleRecord.Attitude {
    /// Roll, pitch and yaw in radians as CoreMotion's `CMAttitude` reports them
    /// (`AttitudeAngles`, shared with the gesture engine): pitch in [−π/2, π/2],
    /// roll and yaw in [−π, π], so their float32 forms stay in the attitude roles' declared ranges.
    package var coreMotionAngles: Vector3 {
        let angles = AttitudeAngles.rollPitchYaw(w: w, x: x, y: y, z: z)
        return Vector3(angles.roll, angles.pitch, angles.yaw)
    }
}
