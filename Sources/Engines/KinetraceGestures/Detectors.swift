#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceTrace
import KinetraceWire

/// A gesture detector: a small state machine fed one controller's samples in
/// order. It reports a gesture at the sample that completes it.
package protocol GestureDetector {
    mutating func accept(_ sample: GestureSample) -> String?
}

/// The paper's rule: a jump when ay crosses τ upwards (edge-triggered, no memory beyond one sample).
package struct ThresholdDetector: GestureDetector {
    package var threshold: Double
    private var above = false

    package init(threshold: Double) { self.threshold = threshold }

    package mutating func accept(_ sample: GestureSample) -> String? {
        let now = sample.userAcceleration.y > threshold
        defer { above = now }
        return now && !above ? "jump" : nil
    }
}

/// A threshold latched on arrival time: y > τ starts a jump that latches for the
/// window on the game's own clock (when the sample arrived), whatever the phone's
/// stamps say. y is the protocol's own vector's when the sample carries one,
/// otherwise user acceleration's.
package struct LatchedThresholdDetector: GestureDetector {
    package var threshold: Double
    package var latchNs: Int64
    private var latchedUntilNs = Int64.min

    package init(threshold: Double, latchMs: Double) {
        self.threshold = threshold
        latchNs = Int64((latchMs * 1e6).rounded())
    }

    package mutating func accept(_ sample: GestureSample) -> String? {
        guard sample.timeNs >= latchedUntilNs, (sample.own?.y ?? sample.userAcceleration.y) > threshold else { return nil }
        latchedUntilNs = sample.timeNs + latchNs
        return "jump"
    }
}

/// A threshold with a refractory window on the sender's clock: ay > τ, then R ms of
/// sender time before the next. Stale samples never reach a detector (`GestureTrace`
/// drops them), as such a rule drops them.
package struct RefractoryThresholdDetector: GestureDetector {
    package var threshold: Double
    package var refractoryMs: UInt64
    private var lastTriggerMs: UInt64?

    package init(threshold: Double, refractoryMs: UInt64) {
        self.threshold = threshold
        self.refractoryMs = refractoryMs
    }

    package mutating func accept(_ sample: GestureSample) -> String? {
        guard sample.userAcceleration.y > threshold,
              lastTriggerMs.map({ sample.senderTimeMs &- $0 >= refractoryMs }) ?? true else { return nil }
        lastTriggerMs = sample.senderTimeMs
        return "jump"
    }
}

/// The protocol's own host model as a detector: a sample becomes the facts a host would get
/// (the sender clock and the vectors the sample really carries), and each decision is a
/// detection. For a declared protocol this is its declared behaviour, not a copy of it.
package struct HostModelDetector: GestureDetector {
    private var model: any HostModel

    package init(_ wireProtocol: any WireProtocol) { model = wireProtocol.makeHostModel(rule: wireProtocol.defaultRule) }

    package mutating func accept(_ sample: GestureSample) -> String? {
        let c = sample.contents
        let motion = MotionReading(userAcceleration: c.contains(.userAcceleration) ? sample.userAcceleration : nil,
                                   rotationRate: c.contains(.rotationRate) ? sample.rotationRate : nil,
                                   gravity: sample.gravity, attitude: sample.attitude, own: sample.own)
        let facts = MessageFacts(direction: .controllerToHost, senderTimeMs: c.contains(.senderClock) ? sample.senderTimeMs : nil, motion: motion)
        return model.accept(facts, from: 0, receivedNs: sample.timeNs).decision?.name
    }
}

/// The mean of the values seen in the last `windowMs` of controller time.
struct WindowMean {
    let windowMs: UInt64
    private var times: [UInt64] = []
    private var values: [Double] = []
    private var head = 0
    private var sum = 0.0

    init(windowMs: UInt64) { self.windowMs = windowMs }

    mutating func add(_ value: Double, at senderTimeMs: UInt64) -> Double {
        times.append(senderTimeMs)
        values.append(value)
        sum += value
        while head < times.count - 1, senderTimeMs - times[head] >= windowMs {
            sum -= values[head]
            head += 1
        }
        if head > 1024 && head * 2 > times.count {
            // Compact, and re-add from scratch so rounding never accumulates.
            times.removeFirst(head)
            values.removeFirst(head)
            head = 0
            sum = values.reduce(0, +)
        }
        return sum / Double(times.count - head)
    }
}

/// Gravity's direction for a phone held still, in the device frame, when the trace carries no gravity.
package enum HeldOrientation: String, CaseIterable, Hashable, Sendable {
    /// Upright, screen facing the player: gravity along −y.
    case portrait
    /// On its side, as for steering: gravity along −x.
    case landscape
    /// Lying face up: gravity along −z.
    case flat

    package var gravity: Vector3 {
        switch self {
        case .portrait: return Vector3(0, -1, 0)
        case .landscape: return Vector3(-1, 0, 0)
        case .flat: return Vector3(0, 0, -1)
        }
    }
}

/// "Badger with Attitude" (WWDC 2017) jump: the mean rotation rate about y over a
/// short window crosses τ upwards.
package struct BadgerJumpDetector: GestureDetector {
    package var threshold: Double
    private var window: WindowMean
    private var above = false

    package init(threshold: Double, windowMs: UInt64) {
        self.threshold = threshold
        window = WindowMean(windowMs: windowMs)
    }

    package mutating func accept(_ sample: GestureSample) -> String? {
        let now = window.add(sample.rotationRate.y, at: sample.senderTimeMs) > threshold
        defer { above = now }
        return now && !above ? "jump" : nil
    }
}

/// "Badger with Attitude" duck: the mean user acceleration along gravity (downwards)
/// over a short window crosses τ upwards. Gravity comes from the sample when it has
/// one, otherwise from how the phone is held.
package struct BadgerDuckDetector: GestureDetector {
    package var threshold: Double
    package var orientation: HeldOrientation
    private var window: WindowMean
    private var above = false

    package init(threshold: Double, windowMs: UInt64, orientation: HeldOrientation) {
        self.threshold = threshold
        self.orientation = orientation
        window = WindowMean(windowMs: windowMs)
    }

    package mutating func accept(_ sample: GestureSample) -> String? {
        let g = sample.gravity ?? orientation.gravity
        let length = g.length
        let along = length > 0 ? sample.userAcceleration.dot(g) / length : 0
        let now = window.add(along, at: sample.senderTimeMs) > threshold
        defer { above = now }
        return now && !above ? "duck" : nil
    }
}

/// "Badger with Attitude" tilt: the angle of gravity's y component against its x–z
/// component, atan2(g.y, hypot(g.x, g.z)), in degrees. Beyond +τ is tilt_left,
/// beyond −τ tilt_right; the phone must come back within `hysteresis`·τ before the
/// same side fires again. It arms only once the phone has been that level, so a
/// phone held some other way (upright in portrait reads −90°) never fires. Needs
/// gravity in the samples.
package struct BadgerTiltDetector: GestureDetector {
    package var thresholdDegrees: Double
    package var hysteresis: Double
    /// nil until the phone has been level; then −1, 0 or +1 for the side it is on.
    private var side: Int?

    package init(thresholdDegrees: Double, hysteresis: Double) {
        self.thresholdDegrees = thresholdDegrees
        self.hysteresis = hysteresis
    }

    package static func angleDegrees(_ g: Vector3) -> Double {
        atan2(g.y, (g.x * g.x + g.z * g.z).squareRoot()) * 180 / .pi
    }

    package mutating func accept(_ sample: GestureSample) -> String? {
        guard let g = sample.gravity else { return nil }
        let angle = Self.angleDegrees(g)
        if abs(angle) < hysteresis * thresholdDegrees {
            side = 0
            return nil
        }
        guard let current = side else { return nil }
        if angle > thresholdDegrees && current != 1 {
            side = 1
            return "tilt_left"
        }
        if angle < -thresholdDegrees && current != -1 {
            side = -1
            return "tilt_right"
        }
        return nil
    }
}

/// A tilt read from the attitude (roll, pitch, yaw), as the 3D mouse streams it: the chosen
/// angle beyond +τ degrees is tilt_right, beyond −τ tilt_left (CoreMotion's signs: a positive
/// roll drops the phone's right edge; held in landscape with its top to the player's left, a
/// negative pitch drops the left side). Roll suits a phone held flat or upright in portrait,
/// pitch one held in landscape. Like the badger tilt, the angle must come back within
/// `hysteresis`·τ before the same side fires again, and nothing fires until the phone has
/// been that level once.
package struct AttitudeTiltDetector: GestureDetector {
    package enum Axis: String, CaseIterable, Hashable, Sendable { case roll, pitch }

    package var thresholdDegrees: Double
    package var hysteresis: Double
    package var axis: Axis
    /// nil until the phone has been level; then −1, 0 or +1 for the side it is on.
    private var side: Int?

    package init(thresholdDegrees: Double, hysteresis: Double, axis: Axis) {
        self.thresholdDegrees = thresholdDegrees
        self.hysteresis = hysteresis
        self.axis = axis
    }

    package mutating func accept(_ sample: GestureSample) -> String? {
        guard let attitude = sample.attitude else { return nil }
        let angle = (axis == .roll ? attitude.x : attitude.y) * 180 / .pi
        if abs(angle) < hysteresis * thresholdDegrees {
            side = 0
            return nil
        }
        guard let current = side else { return nil }
        if angle > thresholdDegrees && current != 1 {
            side = 1
            return "tilt_right"
        }
        if angle < -thresholdDegrees && current != -1 {
            side = -1
            return "tilt_left"
        }
        return nil
    }
}
