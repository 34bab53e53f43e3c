import KinetraceSupport
import KinetraceWire

/// One simulated player: a seeded motion model driven by a gesture script.
/// Both the offline synthesizer and the live controller simulator use it,
/// so a seed means the same motion in either.
package struct Player: Sendable {
    package private(set) var rng: SeededGenerator
    package let script: GestureScript
    package let model: MotionSignalModel
    /// Onset of the next scripted jump, in ms after the session start.
    package private(set) var nextJumpMs: Double?
    private var active: [MotionSignalModel.Jump] = []

    /// `rng` should be a per-player stream (`SeededGenerator.derived`).
    package init(rng: SeededGenerator, script: GestureScript, model: MotionSignalModel = MotionSignalModel()) {
        var rng = rng
        self.script = script
        self.model = model
        nextJumpMs = script.nextOnset(after: 500, using: &rng)
        self.rng = rng
    }

    /// The reading at `elapsedMs` after the session start, whose sender
    /// clock reads `senderTimeMs`, and the jumps that began since the previous sample.
    package mutating func sample(elapsedMs: Double, senderTimeMs: UInt64, startMs: UInt64) -> (reading: MotionReading, started: [MotionSignalModel.Jump]) {
        var started: [MotionSignalModel.Jump] = []
        while let onset = nextJumpMs, onset <= elapsedMs {
            let peaks = model.jumpPeakRange
            let jump = MotionSignalModel.Jump(
                onsetMs: startMs + UInt64(onset),
                peak: peaks.lowerBound + rng.unit() * (peaks.upperBound - peaks.lowerBound))
            active.append(jump)
            started.append(jump)
            nextJumpMs = script.nextOnset(after: onset, using: &rng)
        }
        active.removeAll { senderTimeMs >= $0.onsetMs + MotionSignalModel.Jump.durationMs }
        return (model.sample(senderTimeMs: senderTimeMs, startMs: startMs, jumps: active, using: &rng), started)
    }

    /// Draws from the player's stream for decisions outside the motion (latency, corruption).
    package mutating func unit() -> Double { rng.unit() }
    package mutating func normal(mean: Double, sd: Double) -> Double { rng.normal(mean: mean, sd: sd) }
    package mutating func nextRandom() -> UInt64 { rng.next() }
}
