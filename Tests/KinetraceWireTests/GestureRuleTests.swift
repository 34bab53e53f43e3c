import Testing
@testable import KinetraceWire

@Suite struct GestureRuleTests {
    func frame(_ t: UInt64, ay: Float32) -> MotionFrame { MotionFrame(tMs: t, ay: ay) }

    @Test func thresholdIsStrict() {
        var tracker = GestureTracker<String>()
        #expect(tracker.accept(frame(100, ay: 0.5), from: "a") == .accepted)
        #expect(tracker.accept(frame(200, ay: Float32(0.5).nextUp), from: "a") == .trigger)
    }

    @Test func refractoryPeriodIsInclusiveOfR() {
        var tracker = GestureTracker<String>()
        #expect(tracker.accept(frame(1000, ay: 1), from: "a") == .trigger)
        #expect(tracker.accept(frame(1399, ay: 1), from: "a") == .accepted)  // 399 ms < R
        #expect(tracker.accept(frame(1400, ay: 1), from: "a") == .trigger)   // exactly R
        #expect(tracker.accept(frame(1500, ay: 1), from: "a") == .accepted)
    }

    @Test func staleFramesAreIgnoredEntirely() {
        var tracker = GestureTracker<String>()
        #expect(tracker.accept(frame(1000, ay: 0), from: "a") == .accepted)
        #expect(tracker.accept(frame(1000, ay: 2), from: "a") == .stale)  // duplicate t_ms
        #expect(tracker.accept(frame(900, ay: 2), from: "a") == .stale)   // reordered
        #expect(tracker.accept(frame(1100, ay: 2), from: "a") == .trigger)
        // A stale frame does not move the refractory clock either.
        #expect(tracker.accept(frame(1050, ay: 2), from: "a") == .stale)
        #expect(tracker.accept(frame(1500, ay: 2), from: "a") == .trigger)
    }

    @Test func controllersAreIndependent() {
        var tracker = GestureTracker<String>()
        #expect(tracker.accept(frame(1000, ay: 1), from: "a") == .trigger)
        #expect(tracker.accept(frame(1000, ay: 1), from: "b") == .trigger)
        #expect(tracker.accept(frame(1100, ay: 1), from: "b") == .accepted)
        #expect(tracker.controllerCount == 2)
    }

    @Test func rulesAreConfigurable() {
        var tracker = GestureTracker<Int>(rule: GestureRule(threshold: 1.0, refractoryMs: 0))
        #expect(tracker.accept(frame(1, ay: 0.9), from: 0) == .accepted)
        #expect(tracker.accept(frame(2, ay: 1.1), from: 0) == .trigger)
        #expect(tracker.accept(frame(3, ay: 1.1), from: 0) == .trigger)  // R = 0: every frame may trigger
    }

    @Test func defaultsAreThePapersAndKeepCalms() {
        #expect(GestureRule.default == GestureRule(threshold: 0.5, refractoryMs: 400))
    }
}
