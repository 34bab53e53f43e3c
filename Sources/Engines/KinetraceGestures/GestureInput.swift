import KinetraceSupport
import KinetraceTrace
import KinetraceWire

/// What a sample carries: protocols carry different parts of the phone's motion.
package struct SampleContents: OptionSet, Hashable, Sendable {
    package let rawValue: UInt8
    package init(rawValue: UInt8) { self.rawValue = rawValue }

    package static let userAcceleration = SampleContents(rawValue: 1 << 0)
    package static let rotationRate = SampleContents(rawValue: 1 << 1)
    /// `senderTimeMs` is the sender's clock; without it, it is the arrival time in ms.
    package static let senderClock = SampleContents(rawValue: 1 << 2)
    package static let gravity = SampleContents(rawValue: 1 << 3)
    package static let attitude = SampleContents(rawValue: 1 << 4)
    /// The protocol's own vector (a sum of user acceleration and rotation rate, say).
    package static let ownVector = SampleContents(rawValue: 1 << 5)

    /// Every part, for sets being intersected.
    package static let everything = SampleContents(rawValue: 0x3F)

    /// The parts in words, for errors.
    package var names: [String] {
        let words: [(SampleContents, String)] = [(.userAcceleration, "user acceleration"), (.rotationRate, "rotation rate"),
                                                 (.senderClock, "sender timestamps"), (.gravity, "gravity"), (.attitude, "attitude"),
                                                 (.ownVector, "the protocol's own vector")]
        return words.filter { contains($0.0) }.map(\.1)
    }
}

/// What a detector sees: one motion sample of one controller.
package struct GestureSample: Hashable, Sendable {
    /// The sample's time on the controller's clock (its sender time).
    package var senderTimeMs: UInt64
    /// When it reached the recorder (for a host, the game's own clock).
    package var timeNs: Int64
    /// User acceleration in g, gravity removed.
    package var userAcceleration: Vector3
    /// Rotation rate in rad/s.
    package var rotationRate: Vector3
    /// Gravity in g, when the trace carries device-motion samples with it or an attitude it follows from.
    package var gravity: Vector3?
    /// Roll, pitch and yaw in radians (CoreMotion's, `AttitudeAngles`), when carried.
    package var attitude: Vector3?
    /// The protocol's own vector, when its samples carry one.
    package var own: Vector3?
    /// Which of the above are real (the others are zero or nil).
    package var contents: SampleContents

    package init(senderTimeMs: UInt64, timeNs: Int64, userAcceleration: Vector3, rotationRate: Vector3, gravity: Vector3? = nil,
                attitude: Vector3? = nil, own: Vector3? = nil, contents: SampleContents? = nil) {
        self.senderTimeMs = senderTimeMs
        self.timeNs = timeNs
        self.userAcceleration = userAcceleration
        self.rotationRate = rotationRate
        self.gravity = gravity
        self.attitude = attitude
        self.own = own
        var implied: SampleContents = [.userAcceleration, .rotationRate, .senderClock]
        if gravity != nil { implied.insert(.gravity) }
        if attitude != nil { implied.insert(.attitude) }
        if own != nil { implied.insert(.ownVector) }
        self.contents = contents ?? implied
    }

    /// A valid sample message with motion. A protocol without sender stamps gives the arrival
    /// time as `senderTimeMs`; gravity follows from an attitude when the message has no gravity.
    package init?(_ facts: MessageFacts, timeNs: Int64) {
        guard facts.isValid, facts.direction == .controllerToHost, let motion = facts.motion else { return nil }
        var contents: SampleContents = []
        if facts.senderTimeMs != nil { contents.insert(.senderClock) }
        if motion.userAcceleration != nil { contents.insert(.userAcceleration) }
        if motion.rotationRate != nil { contents.insert(.rotationRate) }
        if motion.own != nil { contents.insert(.ownVector) }
        var gravity = motion.gravity
        if let a = motion.attitude {
            contents.insert(.attitude)
            if gravity == nil {
                let g = AttitudeAngles.gravity(roll: a.x, pitch: a.y)
                gravity = Vector3(g.x, g.y, g.z)
            }
        }
        if gravity != nil { contents.insert(.gravity) }
        guard !contents.subtracting(.senderClock).isEmpty else { return nil }
        self.init(senderTimeMs: facts.senderTimeMs ?? UInt64(max(0, timeNs) / 1_000_000), timeNs: timeNs,
                  userAcceleration: motion.userAcceleration ?? .zero, rotationRate: motion.rotationRate ?? .zero,
                  gravity: gravity, attitude: motion.attitude, own: motion.own, contents: contents)
    }
}

/// Which records a controller's samples come from.
package enum SampleSource: String, CaseIterable, Hashable, Sendable {
    /// Device-motion samples when the trace has them for the controller, otherwise its frames.
    case auto
    /// The protocol's samples that reached the recorder (what a host sees).
    case frames
    /// The device-motion samples (what the phone saw, at its own rate).
    case motion
}

/// A ground-truth gesture.
package struct GestureLabel: Hashable, Sendable {
    package var gesture: String
    /// nil: the trace does not say which controller (it then matches any).
    package var controller: Endpoint?
    /// Onset on the controller's clock.
    package var senderTimeMs: Double
    package var durationMs: Double?

    package init(gesture: String, controller: Endpoint?, senderTimeMs: Double, durationMs: Double? = nil) {
        self.gesture = gesture
        self.controller = controller
        self.senderTimeMs = senderTimeMs
        self.durationMs = durationMs
    }
}

/// One trace, ready to evaluate: each controller's samples in controller-clock order, and the labels.
package struct GestureTrace: Sendable {
    package var source: String
    package var header: TraceHeader
    package var controllers: [Endpoint]
    /// Indexed like `controllers`.
    package var samples: [[GestureSample]]
    /// Which kind of record each controller's samples came from.
    package var sampleKinds: [SampleSource]
    /// What every one of a controller's samples carries, indexed like `controllers`.
    package var sampleContents: [SampleContents] {
        samples.map { $0.reduce(SampleContents.everything) { $0.intersection($1.contents) } }
    }
    /// The protocol of the trace's messages.
    package var protocolID: ProtocolID { header.protocolID }
    /// The protocol as a value: the declaration the header carries, or the compiled protocol it names.
    package var wireProtocol: (any WireProtocol)? {
        header.declaration.map { DeclaredProtocol($0, path: "\(source) (its header)") } ?? ProtocolRegistry.standard[header.protocolID]
    }
    package var labels: [GestureLabel]
    package var sampleCount: Int { samples.reduce(0) { $0 + $1.count } }

    package init(source: String, header: TraceHeader, controllers: [Endpoint], samples: [[GestureSample]],
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
    package static func read(_ reader: some TraceRecordSource, source: SampleSource = .auto) throws(TraceError) -> GestureTrace {
        var frames: [[GestureSample]] = [], motion: [[GestureSample]] = []
        var labels: [GestureLabel] = []
        let order = try scan(reader, newController: { frames.append([]); motion.append([]) },
                             frame: { frames[$0].append($1) }, motion: { motion[$0].append($1) }, label: { labels.append($0) })
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

    /// Reads every record once and hands over what gesture evaluation uses: each valid
    /// controller→host sample of the protocol (`frame`), each device-motion sample (`motion`),
    /// both with the controller's number in order of first appearance, and each label.
    /// Returns the controllers in that order.
    static func scan(_ reader: some TraceRecordSource, newController: () -> Void, frame: (Int, GestureSample) -> Void,
                     motion: (Int, GestureSample) -> Void, label: (GestureLabel) -> Void) throws(TraceError) -> [Endpoint] {
        // One hash per record: each controller's number.
        var slots: [Endpoint: Int] = [:]
        var order: [Endpoint] = []
        let wireProtocol = reader.wireProtocol
        // Device-motion samples of a protocol with a vector of its own carry it too, made by
        // the protocol's own encoding, so its detector sees what the game would.
        let sendsOwn = wireProtocol.sample(MotionReading(userAcceleration: .zero, rotationRate: .zero), timeMs: 1)
            .map { wireProtocol.facts($0).motion?.own != nil } ?? false
        func slot(_ controller: Endpoint) -> Int {
            if let i = slots[controller] { return i }
            slots[controller] = order.count
            order.append(controller)
            newController()
            return order.count - 1
        }
        while let record = try reader.next() {
            switch record {
            case .message(let message) where message.direction == .controllerToHost:
                guard let sample = GestureSample(message.facts(wireProtocol), timeNs: message.timeNs) else { continue }
                frame(slot(message.source), sample)
            case .motion(let m):
                let attitude = m.attitude.map { q in
                    let a = AttitudeAngles.rollPitchYaw(w: q.w, x: q.x, y: q.y, z: q.z)
                    return Vector3(a.roll, a.pitch, a.yaw)
                }
                let own = sendsOwn ? wireProtocol.sample(MotionReading(userAcceleration: m.userAcceleration, rotationRate: m.rotationRate,
                                                                        gravity: m.gravity, attitude: attitude), timeMs: 1)
                    .flatMap { wireProtocol.facts($0).motion?.own } : nil
                motion(slot(m.controller), GestureSample(
                    senderTimeMs: m.senderTimeMs, timeNs: m.timeNs, userAcceleration: m.userAcceleration, rotationRate: m.rotationRate,
                    gravity: m.gravity, attitude: attitude, own: own))
            case .label(let l):
                label(GestureLabel(gesture: l.gesture, controller: l.controller,
                                   senderTimeMs: l.senderTimeMs.map { Double($0) } ?? Double(l.timeNs) / 1e6,
                                   durationMs: l.durationMs.map { Double($0) }))
            default:
                continue
            }
        }
        return order
    }

    /// Keeps samples in arrival order, each stamped one newer than every stamped one before it on
    /// the controller's clock. Samples without a sender stamp are never stale: arrival order is all there is.
    static func dropStale(_ samples: [GestureSample]) -> [GestureSample] {
        // Most traces have no stale sample: then the array is kept, not copied (a million samples are 180 MB).
        guard let first = firstStale(samples) else { return samples }
        var kept = Array(samples[..<first])
        kept.reserveCapacity(samples.count)
        var newestMs = kept.last { $0.contents.contains(.senderClock) }?.senderTimeMs
        for sample in samples[first...] {
            if sample.contents.contains(.senderClock) {
                if let newestMs, sample.senderTimeMs <= newestMs { continue }
                newestMs = sample.senderTimeMs
            }
            kept.append(sample)
        }
        return kept
    }

    /// The index of the first sample not newer than the newest before it, if any.
    private static func firstStale(_ samples: [GestureSample]) -> Int? {
        var newestMs: UInt64?
        for (i, sample) in samples.enumerated() where sample.contents.contains(.senderClock) {
            if let newestMs, sample.senderTimeMs <= newestMs { return i }
            newestMs = sample.senderTimeMs
        }
        return nil
    }
}
