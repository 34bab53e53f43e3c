/// A decoded message of a declared protocol: its kind, and each field's value
/// in declaration order (nil for padding and for an optional member left out).
package struct DeclaredMessage: Hashable, Sendable {
    package var kind: Int
    package var values: [DeclaredValue?]

    package init(kind: Int, values: [DeclaredValue?]) {
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
            return set(role, real: Double(value))
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
    package func value(_ slot: VectorSlot, axis: Int) -> Double? {
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
    package func value(of role: FieldRole) -> Double? {
        guard case .motion(let slot, let axis) = role else { return nil }
        return value(slot, axis: axis)
    }
}

extension Int64 {
    /// The nearest Int64 to a double (0 for NaN): no trap on values a peer or a persona makes up.
    @inline(__always)
    init(nearest value: Double) {
        if value.isNaN { self = 0 }
        else if value >= 9.223372036854775807e18 { self = .max }
        else if value <= -9.223372036854775808e18 { self = .min }
        else { self = Int64(value.rounded()) }
    }
}

extension UInt64 {
    /// The nearest UInt64 to a double (0 for NaN and below).
    @inline(__always)
    init(nearest value: Double) {
        if value.isNaN || value <= 0 { self = 0 }
        else if value >= 1.8446744073709551615e19 { self = .max }
        else { self = UInt64(value.rounded()) }
    }
}
