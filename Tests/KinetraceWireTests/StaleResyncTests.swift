import KinetraceWire
import Testing

/// Issue 15, finding 9 (ML-STATE-4): one forged frame stamped far ahead used to make every
/// later frame of its controller stale for good. Now the lock-out ends once the controller
/// has been heard only stale for the resync time.
@Suite struct StaleResyncTests {
    static let ms: Int64 = 1_000_000

    func model(resyncMs: UInt64 = GestureRule.defaultStaleResyncMs) -> MotionLinkHostModel {
        MotionLinkHostModel(rule: GestureRule(threshold: 0.5, refractoryMs: 400, staleResyncMs: resyncMs))
    }

    func verdict(_ model: inout MotionLinkHostModel, _ tMs: UInt64, ay: Float32, atMs: Int64) -> HostVerdict {
        model.accept(MotionLinkV1.facts(MotionFrame(tMs: tMs, ay: ay).encoded()), from: 0, receivedNs: atMs * Self.ms)
    }

    @Test func aForgedFarFutureFrameLocksAControllerOutOnlyUntilTheResyncTime() {
        var host = model()
        #expect(verdict(&host, 1_000, ay: 0.9, atMs: 0).decision != nil)
        #expect(verdict(&host, UInt64.max, ay: 0, atMs: 50) == .accepted, "the forgery is a valid, newer frame")
        // The player's real frames at 10 Hz: stale, even a trigger, for 2 s after the forgery ...
        for i in 1...19 {
            #expect(verdict(&host, 1_000 + UInt64(i) * 100, ay: i == 10 ? 0.9 : 0, atMs: 50 + Int64(i) * 100) == .stale, "frame \(i)")
        }
        // ... and the first stale frame 2 s after the newest accepted one starts the controller afresh (ML-STATE-3).
        #expect(verdict(&host, 3_000, ay: 0, atMs: 2_050) == .accepted)
        #expect(verdict(&host, 3_100, ay: 0.9, atMs: 2_150).decision?.sampleTimeMs == 3_100, "it triggers again")
        #expect(verdict(&host, 3_000, ay: 0.9, atMs: 2_250) == .stale, "and the stale rule holds as before")
    }

    @Test func withoutResynchronisationTheLockOutIsForGood() {
        var host = model(resyncMs: 0)
        _ = verdict(&host, UInt64.max, ay: 0, atMs: 0)
        for minute in 1...60 { #expect(verdict(&host, UInt64(minute) * 60_000, ay: 0.9, atMs: Int64(minute) * 60_000) == .stale) }
    }

    @Test func aPlayingControllerNeverResynchronisesOnReorderedFrames() {
        var host = model()
        var acks = 0
        // 60 s at 10 Hz where every tenth frame is duplicated 1.5 s late: stale, never a resync.
        for i in 0..<600 {
            let t = 10_000 + UInt64(i) * 100, at = Int64(i) * 100
            if verdict(&host, t, ay: i % 50 == 0 ? 0.9 : 0, atMs: at).decision != nil { acks += 1 }
            if i >= 15, i % 10 == 0 {
                #expect(verdict(&host, t - 1_500, ay: 0.9, atMs: at) == .stale)
            }
        }
        #expect(acks == 12)
    }

    @Test func arrivalClocksThatRunBackwardsOrOverflowNeverResynchronise() {
        var host = model()
        _ = verdict(&host, 5_000, ay: 0, atMs: 1_000)
        #expect(host.accept(MotionLinkV1.facts(MotionFrame(tMs: 4_000, ay: 0.9).encoded()), from: 0, receivedNs: .min) == .stale)
        #expect(host.accept(MotionLinkV1.facts(MotionFrame(tMs: 4_000, ay: 0.9).encoded()), from: 0, receivedNs: 0) == .stale)
        var far = model()
        _ = far.accept(MotionLinkV1.facts(MotionFrame(tMs: 5_000, ay: 0).encoded()), from: 0, receivedNs: .min)
        // Int64.max − Int64.min overflows: no resync rather than a trap.
        #expect(far.accept(MotionLinkV1.facts(MotionFrame(tMs: 4_000, ay: 0.9).encoded()), from: 0, receivedNs: .max) == .stale)
    }
}
