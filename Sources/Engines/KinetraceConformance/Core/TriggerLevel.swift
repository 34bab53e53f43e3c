import KinetraceWire

/// Sample values chosen from the rule under test, so a case checks the host
/// the suite is told about (`--threshold`) rather than the default one.
package enum TriggerLevel {
    /// A value that clearly triggers: τ + 0.4 g (0.9 g at the default τ = 0.5),
    /// nudged up to the first float above τ if rounding lands on or below it.
    package static func above(_ rule: GestureRule) -> Float {
        var value = Float(rule.threshold + 0.4)
        while Double(value) <= rule.threshold && value.isFinite { value = value.nextUp }
        return value
    }

    /// A value that clearly does not: τ − 0.45 g (0.05 g at the default τ = 0.5),
    /// nudged down to the first float at or below τ if rounding lands above it.
    package static func below(_ rule: GestureRule) -> Float {
        var value = Float(rule.threshold - 0.45)
        while Double(value) > rule.threshold && value.isFinite { value = value.nextDown }
        return value
    }

    /// A sample of `wireProtocol` whose user acceleration is `ay` on y and zero elsewhere.
    package static func sample(_ wireProtocol: any WireProtocol, ay: Float, senderTimeMs: UInt64) -> [UInt8] {
        wireProtocol.sample(MotionReading(userAcceleration: Vector3(0, Double(ay), 0), rotationRate: .zero), timeMs: senderTimeMs) ?? []
    }
}
