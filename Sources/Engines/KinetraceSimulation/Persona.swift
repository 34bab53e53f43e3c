/// A gesture a simulated player performs, named as in trace labels (specs/trace-v1.md §2.2).
package enum GestureKind: String, Hashable, Sendable, CaseIterable {
    case jump
    case duck
    /// The phone turned counter-clockwise as the player sees its screen, like a steering wheel turned left.
    case tiltLeft = "tilt_left"
    /// The phone turned clockwise as the player sees its screen.
    case tiltRight = "tilt_right"
}

/// How often each gesture is chosen, as relative weights (zero: never).
package struct GestureMix: Hashable, Sendable {
    package var jump: Double
    package var duck: Double
    package var tiltLeft: Double
    package var tiltRight: Double

    package init(jump: Double = 0, duck: Double = 0, tiltLeft: Double = 0, tiltRight: Double = 0) {
        self.jump = jump
        self.duck = duck
        self.tiltLeft = tiltLeft
        self.tiltRight = tiltRight
    }

    package static let jumpsOnly = GestureMix(jump: 1)

    package func weight(of kind: GestureKind) -> Double {
        switch kind {
        case .jump: return jump
        case .duck: return duck
        case .tiltLeft: return tiltLeft
        case .tiltRight: return tiltRight
        }
    }

    /// The gesture a uniform draw `u` in [0, 1) picks; nil when every weight is zero.
    func pick(_ u: Double) -> GestureKind? {
        let total = GestureKind.allCases.reduce(0) { $0 + max(weight(of: $1), 0) }
        guard total > 0 else { return nil }
        var remaining = u * total
        for kind in GestureKind.allCases where weight(of: kind) > 0 {
            remaining -= weight(of: kind)
            if remaining < 0 { return kind }
        }
        return GestureKind.allCases.last { weight(of: $0) > 0 }
    }
}

/// A persona: a synthetic user, how they hold the phone and move. These are
/// the things a gesture detector's thresholds trade off (gesture size
/// against noise, tremor and steps).
///
/// Device axes are CoreMotion's: x to the right of the screen in portrait,
/// y to its top, z out of the screen towards the player. The phone is held
/// in front of the player with the screen tilted back (facing partly up) by
/// `holdPitchDegrees` = β, so at rest gravity in the device frame is
/// - portrait (top up): (0, −cos β, −sin β), about (0, −1, 0);
/// - landscape (top to the player's left, device +x up): (−cos β, 0, −sin β), about (−1, 0, 0).
package struct Persona: Hashable, Sendable {
    package enum Orientation: String, Hashable, Sendable {
        case portrait, landscape
    }

    /// Hand tremor: an oscillation on user acceleration and a matching one on rotation rate.
    package struct Tremor: Hashable, Sendable {
        /// The tremor's frequency, drawn once per controller (Hz).
        package var frequencyHz: ClosedRange<Double>
        /// User-acceleration amplitude (g); it drifts slowly across this range.
        package var amplitude: ClosedRange<Double>
        /// Rotation-rate amplitude per g of acceleration amplitude ((rad/s)/g).
        package var rotationRatePerG: Double

        package init(frequencyHz: ClosedRange<Double>, amplitude: ClosedRange<Double>, rotationRatePerG: Double) {
            self.frequencyHz = frequencyHz
            self.amplitude = amplitude
            self.rotationRatePerG = rotationRatePerG
        }
    }

    /// Walking while playing: a vertical bump per step, with harmonics, plus sideways sway every other step.
    package struct Walking: Hashable, Sendable {
        /// Steps per second, drawn once per controller.
        package var cadenceHz: ClosedRange<Double>
        /// Peak vertical user acceleration of each step (g), drawn per step.
        package var stepPeak: ClosedRange<Double>

        package init(cadenceHz: ClosedRange<Double>, stepPeak: ClosedRange<Double>) {
            self.cadenceHz = cadenceHz
            self.stepPeak = stepPeak
        }
    }

    package var name: String
    /// One line for headers and docs.
    package var summary: String
    package var orientation: Orientation
    /// How far the screen leans back from vertical at rest (β above), degrees.
    package var holdPitchDegrees: Double
    /// Each controller's hold differs from `holdPitchDegrees` by up to this much, degrees.
    package var holdPitchJitterDegrees: Double
    /// White noise on each user-acceleration axis (g).
    package var accelerationNoiseSd: Double
    /// White noise on each rotation-rate axis (rad/s).
    package var rotationRateNoiseSd: Double
    /// Slow wandering of the hand's attitude (degrees, about each device axis).
    package var swayDegrees: Double
    /// Slow wandering of the hand's position, as user acceleration (g).
    package var swayAcceleration: Double
    package var tremor: Tremor?
    package var walking: Walking?
    package var mix: GestureMix
    /// Mean time from one gesture's onset to the next (s).
    package var meanGestureIntervalS: Double
    /// Onsets of one controller's gestures are never closer than this (s),
    /// nor closer than the previous gesture's end plus half a second.
    package var minimumGestureSpacingS: Double
    /// Push-off peak of a jump, upwards (g).
    package var jumpPeak: ClosedRange<Double>
    /// Peak downward acceleration of a duck (g).
    package var duckPeak: ClosedRange<Double>
    /// How far a tilt turns the phone about its screen normal (degrees).
    package var tiltDegrees: ClosedRange<Double>
    /// How long a tilt is held between turning in and back (ms).
    package var tiltHoldMs: ClosedRange<Double>

    package init(name: String, summary: String, orientation: Orientation = .portrait, holdPitchDegrees: Double = 20,
                holdPitchJitterDegrees: Double = 5, accelerationNoiseSd: Double = 0.012, rotationRateNoiseSd: Double = 0.03,
                swayDegrees: Double = 1.5, swayAcceleration: Double = 0.02, tremor: Tremor? = nil, walking: Walking? = nil,
                mix: GestureMix = .jumpsOnly, meanGestureIntervalS: Double = 3, minimumGestureSpacingS: Double = 1.2,
                jumpPeak: ClosedRange<Double> = 0.8...1.5, duckPeak: ClosedRange<Double> = 0.3...0.6,
                tiltDegrees: ClosedRange<Double> = 15...40, tiltHoldMs: ClosedRange<Double> = 600...1200) {
        self.name = name
        self.summary = summary
        self.orientation = orientation
        self.holdPitchDegrees = holdPitchDegrees
        self.holdPitchJitterDegrees = holdPitchJitterDegrees
        self.accelerationNoiseSd = accelerationNoiseSd
        self.rotationRateNoiseSd = rotationRateNoiseSd
        self.swayDegrees = swayDegrees
        self.swayAcceleration = swayAcceleration
        self.tremor = tremor
        self.walking = walking
        self.mix = mix
        self.meanGestureIntervalS = meanGestureIntervalS
        self.minimumGestureSpacingS = minimumGestureSpacingS
        self.jumpPeak = jumpPeak
        self.duckPeak = duckPeak
        self.tiltDegrees = tiltDegrees
        self.tiltHoldMs = tiltHoldMs
    }
}

extension Persona {
    /// A typical player: portrait, still, jumps of 0.8–1.5 g.
    package static let steady = Persona(
        name: "steady", summary: "typical player, portrait, jumps only, 0.8–1.5 g push-off")

    /// Small jumps (0.35–0.8 g): a high threshold misses them.
    package static let weak = Persona(
        name: "weak", summary: "small jumps, portrait, 0.35–0.8 g push-off", jumpPeak: 0.35...0.8)

    /// Big jumps (1.2–2.2 g).
    package static let strong = Persona(
        name: "strong", summary: "big jumps, portrait, 1.2–2.2 g push-off", holdPitchDegrees: 15, jumpPeak: 1.2...2.2)

    /// Three times the sensor noise of `steady`.
    package static let noisy = Persona(
        name: "noisy", summary: "steady with 3x sensor noise (0.036 g, 0.09 rad/s)",
        accelerationNoiseSd: 0.036, rotationRateNoiseSd: 0.09)

    /// Hand tremor: 8–12 Hz, 0.05–0.15 g, and 0.3–0.9 rad/s of matching rotation rate.
    package static let tremor = Persona(
        name: "tremor", summary: "steady with an 8–12 Hz hand tremor of 0.05–0.15 g",
        holdPitchDegrees: 25,
        tremor: Tremor(frequencyHz: 8...12, amplitude: 0.05...0.15, rotationRatePerG: 6))

    /// Walking while playing: 1.6–2.1 steps/s, vertical bumps of 0.2–0.45 g that a low threshold fires on.
    package static let walking = Persona(
        name: "walking", summary: "steady while walking at 1.6–2.1 steps/s with 0.2–0.45 g step bumps",
        holdPitchDegrees: 30, swayDegrees: 2,
        walking: Walking(cadenceHz: 1.6...2.1, stepPeak: 0.2...0.45))

    /// Portrait, jumps and ducks in equal measure.
    package static let ducker = Persona(
        name: "ducker", summary: "portrait, jumps (0.8–1.5 g) and ducks (0.3–0.6 g) mixed",
        mix: GestureMix(jump: 1, duck: 1))

    /// Landscape steering, as in Apple's WWDC 2017 "Badger with Attitude" game: tilts left and right, some jumps.
    package static let steering = Persona(
        name: "steering", summary: "landscape, tilts left/right of 15–40° held 0.6–1.2 s, some jumps",
        orientation: .landscape, mix: GestureMix(jump: 0.4, tiltLeft: 1, tiltRight: 1), meanGestureIntervalS: 3.2)

    /// Every preset, in a fixed order.
    package static let presets: [Persona] = [.steady, .weak, .strong, .noisy, .tremor, .walking, .ducker, .steering]

    /// The preset called `name`, if any.
    package static func preset(named name: String) -> Persona? { presets.first { $0.name == name } }
}
