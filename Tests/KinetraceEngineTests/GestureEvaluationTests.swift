import Foundation
import KinetraceTestSupport
import Testing
@testable import KinetraceGestures
import KinetraceTrace
import KinetraceWire

/// Detectors and scoring on hand-built samples whose right answers are known.
@Suite struct GestureEvaluationTests {
    let a = Endpoint(host: "10.0.0.10", port: 50000)
    let b = Endpoint(host: "10.0.0.11", port: 50001)

    func sample(_ tMs: UInt64, ay: Double = 0, wy: Double = 0, gravity: Vector3? = nil, arrivalMs: UInt64? = nil) -> GestureSample {
        GestureSample(senderTimeMs: tMs, timeNs: Int64(arrivalMs ?? tMs) * 1_000_000, userAcceleration: Vector3(0, ay, 0),
                      rotationRate: Vector3(0, wy, 0), gravity: gravity)
    }

    func detections<D: GestureDetector>(_ detector: D, _ samples: [GestureSample]) -> [UInt64] {
        GestureEvaluation.run([detector], samples)[0].map(\.senderTimeMs)
    }

    @Test func thresholdFiresOnEachUpwardCrossing() {
        let ay = [0.1, 0.6, 0.7, 0.4, 0.51, 0.5, 0.9]
        let samples = ay.enumerated().map { sample(UInt64($0.offset) * 100, ay: $0.element) }
        #expect(detections(ThresholdDetector(threshold: 0.5), samples) == [100, 400, 600])
    }

    @Test func keepCalmLatchesOnArrivalTimeNotStamps() {
        // Stamps 100 ms apart, but the second and third arrive bunched 50 ms after the first.
        let samples = [sample(0, ay: 0.9, arrivalMs: 1000), sample(100, ay: 0.9, arrivalMs: 1050),
                       sample(200, ay: 0.9, arrivalMs: 1399), sample(300, ay: 0.9, arrivalMs: 1400)]
        #expect(detections(LatchedThresholdDetector(threshold: 0.5, latchMs: 400), samples) == [0, 300])
    }

    @Test func motionLinkUsesTheRefractoryOnStamps() {
        let samples = [0, 100, 399, 400, 500, 900].map { sample($0, ay: 0.8) }
        #expect(detections(RefractoryThresholdDetector(threshold: 0.5, refractoryMs: 400), samples) == [0, 400, 900])
    }

    @Test func badgerJumpAveragesRotationOverTheWindow() {
        // 100 Hz; rotation about y of 2 rad/s for 60 ms: the 100 ms mean peaks at 1.2.
        let samples = (0..<50).map { i in sample(UInt64(i) * 10, wy: (10..<16).contains(i) ? 2 : 0) }
        #expect(detections(BadgerJumpDetector(threshold: 1.0, windowMs: 100), samples) == [150])
        #expect(detections(BadgerJumpDetector(threshold: 1.3, windowMs: 100), samples).isEmpty)
    }

    @Test func badgerDuckUsesGravityFromTheSampleOrTheOrientation() {
        // 0.5 g downwards (along −y in portrait) for 200 ms.
        let portrait = (0..<40).map { i in sample(UInt64(i) * 10, ay: (10..<30).contains(i) ? -0.5 : 0) }
        #expect(detections(BadgerDuckDetector(threshold: 0.3, windowMs: 100, orientation: .portrait), portrait) == [160])
        // Landscape held, gravity along −x: the same y motion is sideways, not along gravity.
        #expect(detections(BadgerDuckDetector(threshold: 0.3, windowMs: 100, orientation: .landscape), portrait).isEmpty)
        let sampled = portrait.map { s in var s = s; s.gravity = Vector3(0, -1, 0); return s }
        #expect(detections(BadgerDuckDetector(threshold: 0.3, windowMs: 100, orientation: .landscape), sampled) == [160])
    }

    @Test func badgerTiltReadsGravitysAngleWithHysteresis() {
        func g(_ degrees: Double) -> Vector3 {
            let r = degrees * .pi / 180
            return Vector3(-cos(r), sin(r), 0)  // landscape, rolled about z
        }
        let angles: [Double] = [0, 25, 30, 18, 22, 10, 25, -5, -25, -30, 0]
        let samples = angles.enumerated().map { sample(UInt64($0.offset) * 100, gravity: g($0.element)) }
        var detector = BadgerTiltDetector(thresholdDegrees: 20, hysteresis: 0.8)
        let found = samples.compactMap { s in detector.accept(s).map { ($0, s.senderTimeMs) } }
        // 18° is inside the band (16–20°), so 22° does not re-fire; 10° re-arms.
        #expect(found.map(\.0) == ["tilt_left", "tilt_left", "tilt_right"])
        #expect(found.map(\.1) == [100, 600, 800])
        #expect(abs(BadgerTiltDetector.angleDegrees(g(33)) - 33) < 1e-9)
        // Upright in portrait (−90°) it never arms, so it never fires.
        var upright = BadgerTiltDetector(thresholdDegrees: 20, hysteresis: 0.8)
        #expect((0..<10).compactMap { upright.accept(sample(UInt64($0) * 100, gravity: Vector3(0, -1, 0))) }.isEmpty)
        // Starting tilted, it waits for level first.
        var tilted = BadgerTiltDetector(thresholdDegrees: 20, hysteresis: 0.8)
        #expect([30.0, 30, 0, 30].compactMap { tilted.accept(sample(0, gravity: g($0))) } == ["tilt_left"])
    }

    @Test func matchingIsOneToOneInsideTheWindow() {
        let labels = [GestureLabel(gesture: "jump", controller: a, senderTimeMs: 1000, durationMs: 450),
                      GestureLabel(gesture: "jump", controller: a, senderTimeMs: 1300, durationMs: 450),
                      GestureLabel(gesture: "jump", controller: b, senderTimeMs: 5000, durationMs: 450),
                      GestureLabel(gesture: "jump", controller: nil, senderTimeMs: 9000, durationMs: nil)]
        let found: [(controller: Endpoint, detection: Detection)] = [
            (a, Detection(gesture: "jump", senderTimeMs: 1200, timeNs: 0)),   // the first label's
            (a, Detection(gesture: "jump", senderTimeMs: 1250, timeNs: 0)),   // inside both windows: the second label's
            (a, Detection(gesture: "jump", senderTimeMs: 1260, timeNs: 0)),   // a third detection, no label left: FP
            (a, Detection(gesture: "jump", senderTimeMs: 5100, timeNs: 0)),   // the wrong controller: FP, and b's label is missed
            (b, Detection(gesture: "jump", senderTimeMs: 9050, timeNs: 0)),   // a label without controller takes any
            (a, Detection(gesture: "jump", senderTimeMs: 20000, timeNs: 0)),  // nothing near: FP
        ]
        let score = GestureScore.match(labels: labels, detections: found, window: MatchWindow(beforeMs: 100, afterMs: 700))
        #expect(score.truePositives == 3 && score.falsePositives == 3 && score.falseNegatives == 1)
        #expect(score.delaysMs == [200, -50, 50])
        #expect(score.precision == 0.5 && score.recall == 0.75)
        #expect(score.f1 == 6.0 / 10)
        #expect(GestureScore().f1 == nil && GestureScore().precision == nil)
    }

    @Test func sweepValuesLandOnTheDecimals() throws {
        let range = try SweepRange(parsing: "threshold=0.2:1.2:0.1")
        #expect(range.values == [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2])
        #expect(throws: GestureError.self) { try SweepRange(parsing: "threshold=1:0:0.1") }
        #expect(throws: GestureError.self) { try SweepRange(parsing: "threshold=0:1") }
    }

    /// A sweep is the same as evaluating each value on its own: one pass changes nothing.
    @Test func sweepEqualsSeparateRuns() throws {
        var rng = SplitMix64(seed: 7)
        let samples = (0..<5000).map { i in sample(UInt64(i) * 100, ay: rng.unit() * 1.2 - 0.2) }
        let settings = try (0..<20).map { i in try DetectorKind.thresholdRefractory.settings(["threshold": String(0.1 + 0.05 * Double(i))]) }
        let together = GestureEvaluation.detect(.thresholdRefractory, settings, samples)
        for (i, setting) in settings.enumerated() {
            #expect(together[i] == GestureEvaluation.detect(.thresholdRefractory, [setting], samples)[0])
        }
    }

    /// The per-controller single walk scores exactly as the general one-to-one matching does.
    @Test(arguments: [false, true])
    func evaluationMatchesTheGeneralMatcher(looseLabels: Bool) throws {
        var rng = SplitMix64(seed: looseLabels ? 11 : 12)
        let controllers = [a, b, Endpoint(host: "10.0.0.12", port: 50002)]
        let samples = controllers.map { _ in (0..<3000).map { i in sample(UInt64(i) * 20, ay: rng.unit() < 0.03 ? 0.9 : 0.1) } }
        let labels = (0..<150).map { _ in
            GestureLabel(gesture: "jump", controller: looseLabels ? nil : controllers[Int(rng.next() % 3)],
                         senderTimeMs: Double(rng.next() % 60_000), durationMs: 450)
        }
        let header = TraceHeader(created: "", tool: "", capturePoint: .synthetic, clock: .model)
        let trace = GestureTrace(source: "t", header: header, controllers: controllers, samples: samples,
                                 sampleKinds: [.motion, .motion, .motion], labels: labels)
        let settings = try [0.5, 0.8].map { try DetectorKind.threshold.settings(["threshold": String($0)]) }
        let scores = try GestureEvaluation.evaluate(trace, settings: settings, window: MatchWindow())
        for (s, setting) in settings.enumerated() {
            let found = GestureEvaluation.detect(.threshold, [setting], samples[0]).map { $0.map { (controllers[0], $0) } }[0]
                + GestureEvaluation.detect(.threshold, [setting], samples[1]).map { $0.map { (controllers[1], $0) } }[0]
                + GestureEvaluation.detect(.threshold, [setting], samples[2]).map { $0.map { (controllers[2], $0) } }[0]
            let general = GestureScore.match(labels: labels, detections: found, window: MatchWindow())
            let fast = scores[s].score
            let fastCounts: [Int] = [fast.truePositives, fast.falsePositives, fast.falseNegatives]
            let generalCounts: [Int] = [general.truePositives, general.falsePositives, general.falseNegatives]
            #expect(fastCounts == generalCounts)
            #expect(fast.delaysMs.sorted() == general.delaysMs.sorted())
            #expect(general.truePositives > 20 && general.falsePositives > 20)
        }
    }

    @Test func settingsRejectUnknownNamesAndBadValues() {
        #expect(throws: GestureError.self) { try DetectorKind.threshold.settings(["treshold": "0.5"]) }
        #expect(throws: GestureError.self) { try DetectorKind.threshold.settings(["threshold": "high"]) }
        #expect(throws: GestureError.self) { try DetectorKind.badgerDuck.settings(["orientation": "sideways"]) }
        #expect(throws: GestureError.self) { try DetectorKind.thresholdLatch.settings(["latch_ms": "-1"]) }
        // Huge times would overflow nanoseconds; they are refused, not trapped on.
        for (kind, name) in [(DetectorKind.thresholdLatch, "latch_ms"), (.thresholdRefractory, "refractory_ms"), (.badgerJump, "window_ms")] {
            #expect(throws: GestureError.self) { try kind.settings([name: "1e300"]) }
        }
        #expect((try? DetectorKind.badgerDuck.settings(["orientation": "flat"]))?["orientation"] == 2)
    }

    @Test func tiltWithoutGravityIsAnErrorNotZeroScores() throws {
        let trace = GestureTrace(source: "t", header: TraceHeader(created: "", tool: "", capturePoint: .host, clock: .realtime),
                                 controllers: [a], samples: [[sample(0)]], sampleKinds: [.frames], labels: [])
        #expect(throws: GestureError.self) {
            try GestureEvaluation.evaluate(trace, settings: [try DetectorKind.badgerTilt.settings([:])], window: MatchWindow())
        }
    }
}

/// A sample not newer than the newest before it is dropped, as a host drops a stale frame;
/// a run with nothing stale is kept as it is (the fast path that copies nothing).
@Suite struct StaleSampleTests {
    static func plainModel(_ samples: [GestureSample]) -> [GestureSample] {
        var kept: [GestureSample] = []
        var newest: UInt64?
        for sample in samples {
            if sample.contents.contains(.senderClock) {
                if let newest, sample.senderTimeMs <= newest { continue }
                newest = sample.senderTimeMs
            }
            kept.append(sample)
        }
        return kept
    }

    @Test func dropsWhatAHostWouldAndKeepsTheRest() async {
        await seededPropertyCheck(count: 300, draw: { rng in
            (0..<Int(rng.next() % 40)).map { _ in (tMs: rng.next() % 30, clocked: rng.next() % 5 != 0) }
        }) { draw in
            let samples = draw.enumerated().map { i, d in
                GestureSample(senderTimeMs: d.tMs, timeNs: Int64(i), userAcceleration: Vector3(0, 0, 0), rotationRate: Vector3(0, 0, 0),
                              contents: d.clocked ? [.userAcceleration, .senderClock] : [.userAcceleration])
            }
            #expect(GestureTrace.dropStale(samples) == Self.plainModel(samples))
        }
    }

    @Test func risingStampsAreKeptWhole() {
        let samples = (0..<1000).map { i in
            GestureSample(senderTimeMs: UInt64(i), timeNs: Int64(i), userAcceleration: Vector3(0, Double(i), 0), rotationRate: Vector3(0, 0, 0),
                          contents: [.userAcceleration, .senderClock])
        }
        #expect(GestureTrace.dropStale(samples) == samples)
    }
}
