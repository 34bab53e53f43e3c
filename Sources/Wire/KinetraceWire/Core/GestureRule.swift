/// The parameters of a host's threshold gesture rule: a threshold and a
/// window. Each protocol's host model says how it applies them: a refractory
/// host triggers when its quantity exceeds the threshold and `refractoryMs` of
/// sender time has passed since the last trigger; a latching host ignores
/// samples for the window after a jump.
package struct GestureRule: Hashable, Sendable {
    /// τ, in g. Compared strictly: `ay > threshold`.
    package var threshold: Double
    /// R, the window in milliseconds (of sender time between triggers, or of arrival time for a latch).
    package var refractoryMs: UInt64

    /// How long a host hears only stale frames from a controller before it forgets it and
    /// starts it afresh, in arrival time (a rule on the sender's clock only); 0 never does.
    package var staleResyncMs: UInt64

    package static let `default` = GestureRule(threshold: 0.5, refractoryMs: 400)
    /// The default resync: 20 samples at 10 Hz, longer than any reordering a path produces.
    package static let defaultStaleResyncMs: UInt64 = 2_000

    package init(threshold: Double, refractoryMs: UInt64, staleResyncMs: UInt64 = GestureRule.defaultStaleResyncMs) {
        self.threshold = threshold
        self.refractoryMs = refractoryMs
        self.staleResyncMs = staleResyncMs
    }
}
