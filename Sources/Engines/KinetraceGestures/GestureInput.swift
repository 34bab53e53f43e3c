import KinetraceTrace
import KinetraceWire

/// What a detector sees: one motion sample of one controller.
public struct GestureSample: Hashable, Sendable {
    /// The sample's time on the controller's clock (frames' `t_ms`).
    public var tMs: UInt64
    /// When it reached the recorder (for a host, the game's own clock).
    public var timeNs: Int64
    /// User acceleration in g, gravity removed.
    public var userAcceleration: Vector3
    /// Rotation rate in rad/s.
    public var rotationRate: Vector3
    /// Gravity in g, when the trace carries device-motion samples with it.
    public var gravity: Vector3?

    public init(tMs: UInt64, timeNs: Int64, userAcceleration: Vector3, rotationRate: Vector3, gravity: Vector3? = nil) {
        self.tMs = tMs
        self.timeNs = timeNs
        self.userAcceleration = userAcceleration
        self.rotationRate = rotationRate
        self.gravity = gravity
    }

    /// A valid sample message, when it carries a sender stamp and user acceleration.
    public init?(_ facts: MessageFacts, timeNs: Int64) {
        guard facts.isValid, facts.direction == .controllerToHost, let tMs = facts.senderTimeMs,
              let motion = facts.motion, let acceleration = motion.userAcceleration else { return nil }
        self.init(tMs: tMs, timeNs: timeNs, userAcceleration: acceleration, rotationRate: motion.rotationRate ?? .zero,
                  gravity: motion.gravity)
    }
}

/// Which records a controller's samples come from.
public enum SampleSource: String, CaseIterable, Hashable, Sendable {
    /// Device-motion samples when the trace has them for the controller, otherwise its frames.
    case auto
    /// The protocol's samples that reached the recorder (what a host sees).
    case frames
    /// The device-motion samples (what the phone saw, at its own rate).
    case motion
}

/// A ground-truth gesture.
public struct GestureLabel: Hashable, Sendable {
    public var gesture: String
    /// nil: the trace does not say which controller (it then matches any).
    public var controller: Endpoint?
    /// Onset on the controller's clock.
    public var tMs: Double
    public var durationMs: Double?

    public init(gesture: String, controller: Endpoint?, tMs: Double, durationMs: Double? = nil) {
        self.gesture = gesture
        self.controller = controller
        self.tMs = tMs
        self.durationMs = durationMs
    }
}

/// One trace, ready to evaluate: each controller's samples in controller-clock order, and the labels.
public struct GestureTrace: Sendable {
    public var source: String
    public var header: TraceHeader
    public var controllers: [Endpoint]
    /// Indexed like `controllers`.
    public var samples: [[GestureSample]]
    /// Which kind of record each controller's samples came from.
    public var sampleKinds: [SampleSource]
    public var labels: [GestureLabel]
    public var sampleCount: Int { samples.reduce(0) { $0 + $1.count } }

    public init(source: String, header: TraceHeader, controllers: [Endpoint], samples: [[GestureSample]],
                sampleKinds: [SampleSource], labels: [GestureLabel]) {
        self.source = source
        self.header = header
        self.controllers = controllers
        self.samples = samples
        self.sampleKinds = sampleKinds
        self.labels = labels
    }

    /// Reads every record once. Invalid frames and h2c traffic are left out;
    /// a frame or sample not newer than the controller's newest is dropped,
    /// as a host drops a stale frame.
    public static func read(_ reader: some TraceRecordSource, source: SampleSource = .auto) throws(TraceError) -> GestureTrace {
        // One hash per record: each controller's slot in these arrays.
        var slots: [Endpoint: Int] = [:]
        var order: [Endpoint] = []
        var frames: [[GestureSample]] = [], motion: [[GestureSample]] = []
        var labels: [GestureLabel] = []
        let wireProtocol = reader.wireProtocol
        func slot(_ controller: Endpoint) -> Int {
            if let i = slots[controller] { return i }
            slots[controller] = order.count
            order.append(controller)
            frames.append([])
            motion.append([])
            return order.count - 1
        }
        while let record = try reader.next() {
            switch record {
            case .message(let message) where message.direction == .controllerToHost:
                guard let sample = GestureSample(message.facts(wireProtocol), timeNs: message.timeNs) else { continue }
                frames[slot(message.source)].append(sample)
            case .motion(let m):
                motion[slot(m.controller)].append(GestureSample(
                    tMs: m.tMs, timeNs: m.timeNs, userAcceleration: m.userAcceleration, rotationRate: m.rotationRate,
                    gravity: m.gravity))
            case .label(let label):
                labels.append(GestureLabel(gesture: label.gesture, controller: label.controller,
                                           tMs: label.tMs.map { Double($0) } ?? Double(label.timeNs) / 1e6,
                                           durationMs: label.durationMs.map { Double($0) }))
            default:
                continue
            }
        }
        var samples: [[GestureSample]] = [], kinds: [SampleSource] = []
        for c in order.indices {
            let useMotion: Bool
            switch source {
            case .auto: useMotion = !motion[c].isEmpty
            case .frames: useMotion = false
            case .motion: useMotion = true
            }
            samples.append(dropStale(useMotion ? motion[c] : frames[c]))
            kinds.append(useMotion ? .motion : .frames)
        }
        return GestureTrace(source: reader.source, header: reader.header, controllers: order, samples: samples,
                            sampleKinds: kinds, labels: labels)
    }

    /// Keeps samples in arrival order, each newer than all before it on the controller's clock.
    static func dropStale(_ samples: [GestureSample]) -> [GestureSample] {
        var kept: [GestureSample] = []
        kept.reserveCapacity(samples.count)
        for sample in samples where kept.last.map({ sample.tMs > $0.tMs }) ?? true { kept.append(sample) }
        return kept
    }
}
