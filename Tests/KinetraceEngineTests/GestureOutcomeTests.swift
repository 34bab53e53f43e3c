import Foundation
import KinetraceTestSupport
import Testing
@testable import KinetraceGestures
import KinetraceTrace
import KinetraceWire

/// What became of each label and detection is exactly what the score counts: as many
/// TP, FN and FP outcomes as the score has, each TP's delay one of the score's delays.
@Suite struct GestureOutcomeTests {
    static let controllers = [Endpoint(host: "10.0.0.10", port: 50000), Endpoint(host: "10.0.0.11", port: 50001),
                              Endpoint(host: "10.0.0.12", port: 50002)]

    static func sample(_ tMs: UInt64, ay: Double, ax: Double = 0) -> GestureSample {
        GestureSample(senderTimeMs: tMs, timeNs: Int64(tMs) * 1_000_000, userAcceleration: Vector3(ax, ay, 0), rotationRate: Vector3(0, 0, 0))
    }

    static func counts(_ outcomes: [GestureOutcome]) -> [Int] {
        GestureOutcome.Kind.allCases.map { kind in outcomes.filter { $0.kind == kind }.count }
    }

    static func counts(_ score: GestureScore) -> [Int] { [score.truePositives, score.falseNegatives, score.falsePositives] }

    /// Random traces: labels naming a controller, naming none, naming one without samples; two settings.
    @Test(arguments: [1, 2, 3, 4, 5, 6])
    func outcomesAreTheScoresCounts(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let samples = Self.controllers.map { _ in (0..<2000).map { i in Self.sample(UInt64(i) * 20, ay: rng.unit() < 0.03 ? 0.9 : 0.1) } }
        let stranger = Endpoint(host: "10.0.0.99", port: 1)
        let labels = (0..<120).map { _ in
            let pick = rng.next() % 5
            let controller: Endpoint? = pick < 3 ? Self.controllers[Int(pick)] : pick == 3 ? nil : stranger
            return GestureLabel(gesture: "jump", controller: controller, senderTimeMs: Double(rng.next() % 40_000), durationMs: 450)
        }
        let header = TraceHeader(created: "", tool: "", capturePoint: .synthetic, clock: .model)
        let trace = GestureTrace(source: "t", header: header, controllers: Self.controllers, samples: samples,
                                 sampleKinds: [.motion, .motion, .motion], labels: labels)
        let settings = try [0.5, 0.8].map { try DetectorKind.threshold.settings(["threshold": String($0)]) }
        let detected = DetectedTrace(trace, settings: settings)
        let scores = try GestureEvaluation.evaluate(detected, window: MatchWindow())
        for s in settings.indices {
            let outcomes = GestureEvaluation.outcomes(detected, setting: s, window: MatchWindow())
            #expect(Self.counts(outcomes) == Self.counts(scores[s].score), "setting \(s)")
            #expect(outcomes.compactMap(\.delayMs).sorted() == scores[s].score.delaysMs.sorted())
            #expect(outcomes.filter { $0.kind == .falseNegative && $0.controller == stranger }.count
                    == labels.filter { $0.controller == stranger }.count, "a label naming a controller without samples is missed")
            #expect(outcomes.map(\.timeMs) == outcomes.map(\.timeMs).sorted(), "in time order")
            for o in outcomes where o.kind == .truePositive {
                #expect(o.delayMs! >= -100 && o.delayMs! <= 700)
            }
        }
    }

    /// Two gestures (duck and jump) scored separately; the general matcher agrees with `GestureScore.match`.
    @Test func generalMatchAgreesWithTheScore() {
        var rng = SplitMix64(seed: 99)
        let detections = (0..<200).map { _ in
            (controller: Self.controllers[Int(rng.next() % 3)],
             detection: Detection(gesture: rng.next() % 2 == 0 ? "jump" : "duck", senderTimeMs: rng.next() % 30_000, timeNs: 0))
        }
        let labels = (0..<150).map { _ in
            GestureLabel(gesture: rng.next() % 2 == 0 ? "jump" : "duck", controller: rng.next() % 4 == 0 ? nil : Self.controllers[Int(rng.next() % 3)],
                         senderTimeMs: Double(rng.next() % 30_000))
        }
        let score = GestureScore.match(labels: labels, detections: detections, window: MatchWindow())
        let outcomes = GestureOutcome.match(labels: labels, detections: detections, window: MatchWindow())
        #expect(Self.counts(outcomes) == Self.counts(score))
        #expect(outcomes.compactMap(\.delayMs).sorted() == score.delaysMs.sorted())
        #expect(score.truePositives > 10 && score.falsePositives > 10 && score.falseNegatives > 10)
    }

    /// Every bundled gesture trace, under every detector that applies to it.
    @Test func theCorpusOutcomesAreItsScores() throws {
        let corpus = Fixture.packageRoot.appendingPathComponent("captures/gestures")
        let files = try FileManager.default.contentsOfDirectory(atPath: corpus.path).filter { $0.hasSuffix(".jsonl") }.sorted()
        #expect(files.count == 8)
        for file in files {
            let trace = try GestureTrace.read(try TraceReader(path: corpus.appendingPathComponent(file).path))
            for kind in DetectorKind.allCases {
                let detected = DetectedTrace(trace, settings: [try kind.settings([:])])
                guard let scores = try? GestureEvaluation.evaluate(detected, window: MatchWindow()) else { continue }
                let outcomes = GestureEvaluation.outcomes(detected, setting: 0, window: MatchWindow())
                #expect(Self.counts(outcomes) == Self.counts(scores[0].score), "\(file) \(kind.rawValue)")
            }
        }
    }

    @Test func watchedThresholdsNameTheQuantityCompared() throws {
        let threshold = try DetectorKind.threshold.settings(["threshold": "0.4"]).watchedThreshold(carrying: .everything)
        #expect(threshold == WatchedThreshold(vector: .userAcceleration, axis: 1, values: [0.4], unit: "g", summary: "τ on ay"))
        let tilt = try DetectorKind.attitudeTilt.settings(["axis": "pitch"]).watchedThreshold(carrying: .everything)
        #expect(tilt?.vector == .attitude && tilt?.axis == 1 && tilt?.values == [-12, 12])
        let latch = try DetectorKind.thresholdLatch.settings([:])
        #expect(latch.watchedThreshold(carrying: [.userAcceleration])?.vector == .userAcceleration)
        #expect(latch.watchedThreshold(carrying: [.ownVector])?.vector == .own)
        #expect(try DetectorKind.badgerDuck.settings([:]).watchedThreshold(carrying: .everything) == nil)
        let host = WatchedThreshold.host(of: ProtocolRegistry.defaultProtocol, threshold: 0.5)
        #expect(host?.values == [0.5])
    }
}
