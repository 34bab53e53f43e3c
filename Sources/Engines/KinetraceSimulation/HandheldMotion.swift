#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceSupport

/// What the phone's motion API reports at one instant: user acceleration (g)
/// and rotation rate (rad/s) in the device frame, gravity (g, unit length,
/// device frame) and the attitude (device to reference frame).
struct DeviceMotion {
    var userAcceleration: SIMD3<Double>
    var rotationRate: SIMD3<Double>
    var gravity: SIMD3<Double>
    var attitude: Rotation
}

/// One player's phone: the persona's hold, sway, tremor and walking, the
/// gestures in progress, and sensor noise, evaluated at increasing times.
///
/// Reference frame: x to the player's right, y forward (away from the
/// player), z up; gravity is (0, 0, −1) g in it.
struct HandheldMotion {
    let persona: Persona
    /// The attitude with the hand at rest: screen towards the player, leaning back by the hold pitch.
    let rest: Rotation
    private let swayPhases: [Double]
    private let tremorFrequencyHz: Double
    private let tremorPhase: Double
    private let tremorDriftPhase: Double
    private let cadenceHz: Double
    private let stepOffset: Double
    private var stepIndex = 0
    /// Peaks of the current and the next step; the bump's size glides between them.
    private var stepPeaks: (current: Double, next: Double) = (0, 0)
    private var walkingRNG: SeededGenerator
    private var noiseRNG: SeededGenerator

    /// Periods of the slow sway, s: attitude about x, y, z, then position along x, y, z.
    static let swayPeriodsS = [3.7, 5.3, 4.4, 2.9, 3.3, 4.1]
    /// Attitude sway about y and z relative to x, and position sway along y and z relative to x.
    static let swayWeights = [1, 0.6, 0.8, 1, 0.7, 0.5]
    /// The tremor's amplitude drifts across its range over this period, s.
    static let tremorDriftPeriodS = 6.3
    /// The hand's swing while walking: a nod about x once per step, turns about y and z once per stride (cycles per step).
    static let walkingSwing: [(axis: Int, degrees: Double, perStep: Double, lag: Double)] = [(0, 1.5, 1, 0.5), (1, 1, 0.5, 1.2), (2, 2, 0.5, 0)]
    /// Tremor wobble: about x fully, about z at half the angle, each with its own phase lag.
    static let tremorWobble: [(axis: Int, weight: Double, lag: Double)] = [(0, 1, 0.4), (2, 0.5, 1.3)]
    /// Device-frame direction of tremor acceleration: mostly through the screen, where a hand shakes most.
    static let tremorDirection = SIMD3<Double>(0.3, 0.5, 0.81) / (0.3 * 0.3 + 0.5 * 0.5 + 0.81 * 0.81).squareRoot()

    /// `constants` draws the per-controller hold, phases and frequencies;
    /// `walking` and `noise` are streams used as the session runs.
    init(persona: Persona, constants: SeededGenerator, walking: SeededGenerator, noise: SeededGenerator) {
        var rng = constants
        self.persona = persona
        let pitch = (persona.holdPitchDegrees + persona.holdPitchJitterDegrees * (2 * rng.unit() - 1)) * Double.pi / 180
        // From lying flat, screen up: stand the phone up about x, leaving it leaning back by `pitch`.
        let portrait = Rotation.aboutX(Double.pi / 2 - pitch)
        // Landscape: a quarter turn counter-clockwise about the screen normal puts the top to the left, +x up.
        rest = persona.orientation == .portrait ? portrait : (portrait * .aboutZ(Double.pi / 2)).normalized
        swayPhases = (0..<6).map { _ in 2 * Double.pi * rng.unit() }
        let tremor = persona.tremor ?? Persona.Tremor(frequencyHz: 0...0, amplitude: 0...0, rotationRatePerG: 0)
        tremorFrequencyHz = tremor.frequencyHz.lowerBound + rng.unit() * (tremor.frequencyHz.upperBound - tremor.frequencyHz.lowerBound)
        tremorPhase = 2 * Double.pi * rng.unit()
        tremorDriftPhase = 2 * Double.pi * rng.unit()
        let steps = persona.walking ?? Persona.Walking(cadenceHz: 0...0, stepPeak: 0...0)
        cadenceHz = steps.cadenceHz.lowerBound + rng.unit() * (steps.cadenceHz.upperBound - steps.cadenceHz.lowerBound)
        stepOffset = rng.unit()
        walkingRNG = walking
        noiseRNG = noise
        stepPeaks = (drawStepPeak(), drawStepPeak())
    }

    private mutating func drawStepPeak() -> Double {
        guard let peaks = persona.walking?.stepPeak else { return 0 }
        return peaks.lowerBound + walkingRNG.unit() * (peaks.upperBound - peaks.lowerBound)
    }

    /// The motion `t` seconds after the session start, with `gestures` (and
    /// the ms since each one's onset) in progress. Times must not decrease.
    mutating func sample(atS t: Double, gestures: [(gesture: GestureInstance, elapsedMs: Double)]) -> DeviceMotion {
        var turn = HandTurn()
        var linear = SIMD3<Double>.zero  // user acceleration in the reference frame, g
        var felt = SIMD3<Double>.zero  // user acceleration only the device frame knows (tremor), g
        addSway(atS: t, turn: &turn, linear: &linear)
        if let tremor = persona.tremor { addTremor(tremor, atS: t, turn: &turn, felt: &felt) }
        if persona.walking != nil { addWalking(atS: t, turn: &turn, linear: &linear) }
        for (gesture, elapsedMs) in gestures {
            let motion = gesture.motion(elapsedMs: elapsedMs)
            linear.z += motion.up
            turn += motion.turn
        }
        let attitude = (rest * turn.rotation).normalized
        let noise = { (rng: inout SeededGenerator, sd: Double) in
            SIMD3(rng.normal(sd: sd), rng.normal(sd: sd), rng.normal(sd: sd))
        }
        let accelerationNoise = noise(&noiseRNG, persona.accelerationNoiseSd)
        let rotationNoise = noise(&noiseRNG, persona.rotationRateNoiseSd)
        return DeviceMotion(
            userAcceleration: attitude.unrotate(linear) + felt + accelerationNoise,
            rotationRate: turn.rotationRate + rotationNoise,
            gravity: attitude.unrotate([0, 0, -1]),
            attitude: attitude)
    }

    private func addSway(atS t: Double, turn: inout HandTurn, linear: inout SIMD3<Double>) {
        let swayRadians = persona.swayDegrees * Double.pi / 180
        for axis in 0..<6 {
            let omega = 2 * Double.pi / Self.swayPeriodsS[axis], phase = omega * t + swayPhases[axis]
            if axis < 3 {
                let amplitude = swayRadians * Self.swayWeights[axis]
                turn.angles[axis] += amplitude * sin(phase)
                turn.angleRates[axis] += amplitude * omega * cos(phase)
            } else {
                linear[axis - 3] += persona.swayAcceleration * Self.swayWeights[axis] * sin(phase)
            }
        }
    }

    /// An oscillation at the tremor frequency on user acceleration, and the
    /// hand's matching wobble about x (and half as much about z), whose rate
    /// peaks at `rotationRatePerG` × the acceleration amplitude.
    private func addTremor(_ tremor: Persona.Tremor, atS t: Double, turn: inout HandTurn, felt: inout SIMD3<Double>) {
        let span = tremor.amplitude.upperBound - tremor.amplitude.lowerBound
        let driftOmega = 2 * Double.pi / Self.tremorDriftPeriodS
        let amplitude = tremor.amplitude.lowerBound + span * (0.5 + 0.5 * sin(driftOmega * t + tremorDriftPhase))
        let amplitudeRate = span * 0.5 * driftOmega * cos(driftOmega * t + tremorDriftPhase)
        let omega = 2 * Double.pi * tremorFrequencyHz, phase = omega * t + tremorPhase
        felt += amplitude * sin(phase) * Self.tremorDirection
        // Angle Θ(t)·sin(ωt + φ) with Θ = k·A/ω; its rate is Θ̇·sin + Θ·ω·cos.
        let angleAmplitude = tremor.rotationRatePerG * amplitude / omega
        let angleAmplitudeRate = tremor.rotationRatePerG * amplitudeRate / omega
        for (axis, weight, lag) in Self.tremorWobble {
            turn.angles[axis] += weight * angleAmplitude * sin(phase + lag)
            turn.angleRates[axis] += weight * (angleAmplitudeRate * sin(phase + lag) + angleAmplitude * omega * cos(phase + lag))
        }
    }

    /// One vertical bump per step (heel strike at whole step counts, with
    /// 2nd and 3rd harmonics), a forward surge per step, a sideways sway per
    /// stride (two steps), and the hand's matching swing.
    private mutating func addWalking(atS t: Double, turn: inout HandTurn, linear: inout SIMD3<Double>) {
        let steps = cadenceHz * t + stepOffset
        while Double(stepIndex + 1) <= steps {
            stepIndex += 1
            stepPeaks = (stepPeaks.next, drawStepPeak())
        }
        let fraction = steps - Double(stepIndex)
        let peak = stepPeaks.current + (stepPeaks.next - stepPeaks.current) * fraction
        let phase = 2 * Double.pi * steps
        // Normalised so the bump's maximum (at phase 0) is exactly `peak`.
        let bump = (cos(phase) + 0.45 * cos(2 * phase) + 0.2 * cos(3 * phase)) / 1.65
        linear += SIMD3(0.3 * peak * sin(phase / 2), 0.35 * peak * sin(phase - 0.8), peak * bump)
        let stepOmega = 2 * Double.pi * cadenceHz
        for (axis, degrees, perStep, lag) in Self.walkingSwing {
            let amplitude = degrees * Double.pi / 180, angle = perStep * phase + lag
            turn.angles[axis] += amplitude * sin(angle)
            turn.angleRates[axis] += amplitude * perStep * stepOmega * cos(angle)
        }
    }
}
