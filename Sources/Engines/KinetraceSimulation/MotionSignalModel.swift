import KinetraceSupport
import KinetraceWire

/// A phone held upright by a player: sensor noise, a slow sway, and jump
/// gestures as a short user-acceleration pulse on ay (crouch, push-off,
/// landing). Values are gravity-free user acceleration in g and rotation
/// rate in rad/s, as CoreMotion's deviceMotion reports them.
package struct MotionSignalModel: Sendable {
    package var accelNoiseSd: Double = 0.015
    package var gyroNoiseSd: Double = 0.04
    package var swayAmplitude: Double = 0.05
    package var swayPeriodS: Double = 3.7
    /// Peak push-off acceleration of a jump is drawn from this range (g).
    package var jumpPeakRange: ClosedRange<Double> = 0.8...1.5

    package init() {}

    /// A jump performed at `onsetMs` (sender clock) with a given peak.
    package struct Jump: Hashable, Sendable {
        package var onsetMs: UInt64
        package var peak: Double
        /// Total length of the pulse: crouch 100 ms, push 200 ms, landing 150 ms.
        package static let durationMs: UInt64 = 450
    }

    /// ay contribution of a jump `elapsedMs` after its onset.
    package static func jumpPulse(_ jump: Jump, elapsedMs: Double) -> Double {
        switch elapsedMs {
        case 0..<100: return -0.25 * sin(Double.pi * elapsedMs / 100)
        case 100..<300: return jump.peak * sin(Double.pi * (elapsedMs - 100) / 200)
        case 300..<450: return -0.45 * jump.peak * sin(Double.pi * (elapsedMs - 300) / 150)
        default: return 0
        }
    }

    /// The reading at sender time `senderTimeMs`, given the jumps in progress.
    package func sample(senderTimeMs: UInt64, startMs: UInt64, jumps: some Sequence<Jump>,
                       using rng: inout SeededGenerator) -> MotionReading {
        let t = Double(senderTimeMs - startMs) / 1000
        let sway = swayAmplitude * sin(2 * Double.pi * t / swayPeriodS)
        var ay = rng.normal(sd: accelNoiseSd) + 0.3 * sway
        var wx = rng.normal(sd: gyroNoiseSd) + sway
        for jump in jumps where senderTimeMs >= jump.onsetMs && senderTimeMs < jump.onsetMs + Jump.durationMs {
            let elapsed = Double(senderTimeMs - jump.onsetMs)
            let pulse = Self.jumpPulse(jump, elapsedMs: elapsed)
            ay += pulse
            wx += 0.6 * pulse  // the wrist tips as the body rises
        }
        // Drawn in this order (ax, az, wy, wz): every seed's stream depends on it.
        let ax = rng.normal(sd: accelNoiseSd) + 0.5 * sway
        let az = rng.normal(sd: accelNoiseSd)
        let wy = rng.normal(sd: gyroNoiseSd)
        let wz = rng.normal(sd: gyroNoiseSd) + 0.2 * sway
        return MotionReading(userAcceleration: Vector3(ax, ay, az), rotationRate: Vector3(wx, wy, wz))
    }
}

/// When a simulated player jumps.
package enum GestureScript: Hashable, Sendable {
    /// Never.
    case idle
    /// Every 2 to 4 s (uniform), like a player keeping a rhythm.
    case jumps
    /// A Poisson process with a 3 s mean, some jumps close together to exercise the refractory period.
    case random

    /// The onset (ms after the start) of the next jump after `previousMs`.
    func nextOnset(after previousMs: Double, using rng: inout SeededGenerator) -> Double? {
        switch self {
        case .idle: return nil
        case .jumps: return previousMs + 2000 + 2000 * rng.unit()
        case .random: return previousMs - 3000 * log(max(rng.unit(), 0x1.0p-53))
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
