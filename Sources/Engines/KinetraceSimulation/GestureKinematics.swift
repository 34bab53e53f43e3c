#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceSupport

/// Small turns of the hand about the device's own axes, applied after the
/// rest attitude in the order x, y, z (radians), and the angles' time
/// derivatives (rad/s).
struct HandTurn {
    var angles = SIMD3<Double>.zero
    var angleRates = SIMD3<Double>.zero

    static func += (a: inout HandTurn, b: HandTurn) {
        a.angles += b.angles
        a.angleRates += b.angleRates
    }

    /// The attitude change this turn makes, after the rest attitude.
    var rotation: Rotation { .aboutX(angles.x) * .aboutY(angles.y) * .aboutZ(angles.z) }

    /// The body-frame angular velocity of `rotation` (what a gyroscope reads):
    /// for q = Rx(α)·Ry(γ)·Rz(ψ), ω = Rz(ψ)ᵀ(Ry(γ)ᵀ(α̇, 0, 0) + (0, γ̇, 0)) + (0, 0, ψ̇).
    var rotationRate: SIMD3<Double> {
        let afterY = Rotation.aboutY(angles.y).unrotate([angleRates.x, 0, 0]) + [0, angleRates.y, 0]
        return Rotation.aboutZ(angles.z).unrotate(afterY) + [0, 0, angleRates.z]
    }
}

/// A gesture being performed: what, when, and its drawn size. The shapes
/// are documented on `GestureSessionSynthesizer`.
struct GestureInstance: Hashable, Sendable {
    var kind: GestureKind
    /// Onset, ms after the session start.
    var onsetMs: Int64
    /// Push-off peak (jump) or downward peak (duck) in g; turn in radians for tilts, left positive.
    var size: Double
    /// How long a tilt is held (ms); unused otherwise.
    var holdMs: Double = 0

    static let jumpDurationMs = Double(MotionSignalModel.Jump.durationMs)
    /// The wrist flick about device y: starts with the push-off, one full sine period so the phone ends where it began.
    static let flickStartMs = 100.0
    static let flickLengthMs = 250.0
    /// Peak flick rate per g of push-off ((rad/s)/g): 2.4–4.5 rad/s for 0.8–1.5 g jumps.
    static let flickRatePerG = 3.0
    static let duckDownMs = 250.0
    static let duckStopMs = 350.0
    /// How far the phone tips forward while ducking, per g of duck peak (radians/g; 10° per g).
    static let duckTipPerG = 10 * Double.pi / 180
    static let tiltTurnMs = 300.0

    var durationMs: Double {
        switch kind {
        case .jump: return Self.jumpDurationMs
        case .duck: return Self.duckDownMs + Self.duckStopMs
        case .tiltLeft, .tiltRight: return 2 * Self.tiltTurnMs + holdMs
        }
    }

    /// Upward user acceleration (reference frame, g) and the hand's turn, `elapsedMs` after the onset.
    func motion(elapsedMs u: Double) -> (up: Double, turn: HandTurn) {
        var turn = HandTurn()
        guard u >= 0, u < durationMs else { return (0, turn) }
        switch kind {
        case .jump:
            let up = MotionSignalModel.jumpPulse(MotionSignalModel.Jump(onsetMs: 0, peak: size), elapsedMs: u)
            let f = u - Self.flickStartMs
            if f >= 0, f < Self.flickLengthMs {
                // Rate P·sin(2πf/T); angle its integral, P·T/2π·(1 − cos(2πf/T)).
                let peakRate = Self.flickRatePerG * size, lengthS = Self.flickLengthMs / 1000
                let phase = 2 * Double.pi * f / Self.flickLengthMs
                turn.angleRates.y = peakRate * sin(phase)
                turn.angles.y = peakRate * lengthS / (2 * Double.pi) * (1 - cos(phase))
            }
            return (up, turn)
        case .duck:
            // Down, then a stop whose area cancels it, so the player ends at rest, lower.
            let up = u < Self.duckDownMs
                ? -size * sin(Double.pi * u / Self.duckDownMs)
                : size * (Self.duckDownMs / Self.duckStopMs) * sin(Double.pi * (u - Self.duckDownMs) / Self.duckStopMs)
            let tip = Self.duckTipPerG * size, lengthS = durationMs / 1000
            let phase = 2 * Double.pi * u / durationMs
            turn.angles.x = -tip * (1 - cos(phase)) / 2
            turn.angleRates.x = -tip * Double.pi / lengthS * sin(phase)
            return (up, turn)
        case .tiltLeft, .tiltRight:
            // Smooth (half-cosine) turn in, hold, and turn back, about the screen normal.
            let turnS = Self.tiltTurnMs / 1000, peakRate = size * Double.pi / (2 * turnS)
            let back = u - Self.tiltTurnMs - holdMs
            if u < Self.tiltTurnMs {
                let phase = Double.pi * u / Self.tiltTurnMs
                turn.angles.z = size * (1 - cos(phase)) / 2
                turn.angleRates.z = peakRate * sin(phase)
            } else if back < 0 {
                turn.angles.z = size
            } else {
                let phase = Double.pi * back / Self.tiltTurnMs
                turn.angles.z = size * (1 + cos(phase)) / 2
                turn.angleRates.z = -peakRate * sin(phase)
            }
            return (0, turn)
        }
    }
}

/// When one controller's player performs which gesture, drawn from the persona:
/// a shifted exponential gap between onsets (so Poisson-like, never too close).
struct GestureSchedule {
    let persona: Persona
    private var rng: SeededGenerator
    /// Onset of the next gesture, ms after the session start; nil when the persona performs none.
    private(set) var nextOnsetMs: Int64?

    /// The first gesture comes after a second of settling in.
    static let firstOnsetMs = 1000.0
    /// A gesture never starts within this long of the previous one's end.
    static let settleMs = 500.0

    init(persona: Persona, rng: SeededGenerator) {
        self.persona = persona
        self.rng = rng
        if persona.mix.pick(0) != nil {
            nextOnsetMs = Int64((Self.firstOnsetMs + drawExtraGapMs()).rounded())
        }
    }

    private mutating func drawExtraGapMs() -> Double {
        let meanMs = max(persona.meanGestureIntervalS - persona.minimumGestureSpacingS, 0) * 1000
        return -meanMs * log(max(1 - rng.unit(), 0x1.0p-53))
    }

    private mutating func uniform(_ range: ClosedRange<Double>) -> Double {
        range.lowerBound + rng.unit() * (range.upperBound - range.lowerBound)
    }

    /// Performs the scheduled gesture (drawing its kind and size) and schedules the next.
    mutating func startNext() -> GestureInstance? {
        guard let onset = nextOnsetMs, let kind = persona.mix.pick(rng.unit()) else { return nil }
        var gesture = GestureInstance(kind: kind, onsetMs: onset, size: 0)
        switch kind {
        case .jump: gesture.size = uniform(persona.jumpPeak)
        case .duck: gesture.size = uniform(persona.duckPeak)
        case .tiltLeft, .tiltRight:
            let turn = uniform(persona.tiltDegrees) * Double.pi / 180
            gesture.size = kind == .tiltLeft ? turn : -turn
            gesture.holdMs = uniform(persona.tiltHoldMs).rounded()
        }
        let spacingMs = max(persona.minimumGestureSpacingS * 1000, gesture.durationMs + Self.settleMs)
        nextOnsetMs = onset + Int64((spacingMs + drawExtraGapMs()).rounded())
        return gesture
    }
}
