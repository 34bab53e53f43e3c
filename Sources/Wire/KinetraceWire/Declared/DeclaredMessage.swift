/// A decoded message of a declared protocol: its kind, and each field's value
/// in declaration order (nil for padding and for an optional member left out).
public struct DeclaredMessage: Hashable, Sendable {
    public var kind: Int
    public var values: [DeclaredValue?]

    public init(kind: Int, values: [DeclaredValue?]) {
        self.kind = kind
        self.values = values
    }
}

/// Builds the engines' facts from role values as a decoder meets them, so the
/// binary path needs no array per message.
struct FactsBuilder {
    var facts: MessageFacts
    let unit: ClockUnit?

    init(direction: Direction, unit: ClockUnit?) {
        facts = MessageFacts(direction: direction)
        self.unit = unit
    }

    /// A clock value in the declared unit as ms since the clock's epoch; nil when it cannot be one.
    static func milliseconds(integer value: UInt64, unit: ClockUnit) -> UInt64? {
        switch unit {
        case .s: let (ms, overflow) = value.multipliedReportingOverflow(by: 1000); return overflow ? nil : ms
        case .ms: return value
        case .us: return value / 1000
        case .ns: return value / 1_000_000
        }
    }

    static func milliseconds(real value: Double, unit: ClockUnit) -> UInt64? {
        let scale: Double
        switch unit {
        case .s: scale = 1000
        case .ms: scale = 1
        case .us: scale = 0.001
        case .ns: scale = 0.000_001
        }
        let ms = (value * scale).rounded(.down)
        guard ms.isFinite, ms >= 0, ms < 1.8e19 else { return nil }
        return UInt64(ms)
    }

    /// Sets a role from an integer field; false when a clock value cannot be one.
    @inline(__always)
    mutating func set(_ role: FieldRole, unsigned value: UInt64) -> Bool {
        switch role {
        case .senderTime, .echoTime:
            guard let unit, let ms = Self.milliseconds(integer: value, unit: unit) else { return false }
            if role == .senderTime { facts.senderTimeMs = ms } else { facts.echoTimeMs = ms }
            return true
        default:
            set(role, real: Double(value))
            return true
        }
    }

    @inline(__always)
    mutating func set(_ role: FieldRole, real value: Double) -> Bool {
        switch role {
        case .senderTime, .echoTime:
            guard let unit, let ms = Self.milliseconds(real: value, unit: unit) else { return false }
            if role == .senderTime { facts.senderTimeMs = ms } else { facts.echoTimeMs = ms }
        case .motion(let slot, let axis):
            var reading = facts.motion ?? MotionReading()
            reading.set(slot, axis: axis, value)
            facts.motion = reading
        case .controllerID, .messageID:
            break
        }
        return true
    }
}

extension MotionReading {
    /// One axis of one vector, the others of that vector zero until set.
    @inline(__always)
    mutating func set(_ slot: VectorSlot, axis: Int, _ value: Double) {
        func update(_ v: inout Vector3?) {
            var vector = v ?? .zero
            switch axis {
            case 0: vector.x = value
            case 1: vector.y = value
            default: vector.z = value
            }
            v = vector
        }
        switch slot {
        case .userAcceleration: update(&userAcceleration)
        case .rotationRate: update(&rotationRate)
        case .gravity: update(&gravity)
        case .attitude: update(&attitude)
        case .own: update(&own)
        }
    }

    /// One axis of one vector, when the reading has that vector.
    public func value(_ slot: VectorSlot, axis: Int) -> Double? {
        let vector: Vector3?
        switch slot {
        case .userAcceleration: vector = userAcceleration
        case .rotationRate: vector = rotationRate
        case .gravity: vector = gravity
        case .attitude: vector = attitude
        case .own: vector = own
        }
        guard let vector else { return nil }
        return axis == 0 ? vector.x : axis == 1 ? vector.y : vector.z
    }

    /// The value of a motion role, when the reading has its vector.
    public func value(of role: FieldRole) -> Double? {
        guard case .motion(let slot, let axis) = role else { return nil }
        return value(slot, axis: axis)
    }
}
