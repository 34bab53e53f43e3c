/// The parameters of a host's threshold gesture rule: a threshold and a
/// window. Each protocol's host model says how it applies them: MotionLink v1
/// triggers when `ay > threshold` and `refractoryMs` of frame time has passed
/// since the last trigger (ML-GESTURE-*); a latching host ignores samples for
/// the window after a jump.
public struct GestureRule: Hashable, Sendable {
    /// τ, in g. Compared strictly: `ay > threshold`.
    public var threshold: Double
    /// R, the window in milliseconds (MotionLink: of frame time between triggers).
    public var refractoryMs: UInt64

    public static let `default` = GestureRule(threshold: 0.5, refractoryMs: 400)

    public init(threshold: Double, refractoryMs: UInt64) {
        self.threshold = threshold
        self.refractoryMs = refractoryMs
    }
}
