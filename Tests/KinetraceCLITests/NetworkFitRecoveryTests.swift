import Foundation
import KinetraceAnalysis
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing
@testable import KinetraceCLI
@testable import KinetraceImpairment
@testable import KinetraceReplay

/// Issue 28: `network fit` recovers the network a recording went through. The recordings are
/// made by the replay's own impairer (the code a replay applies), as a host on the same clock
/// would record them: each controller's 10 Hz samples, lost, delayed and duplicated as the
/// network decides, with pinned seeds.
@Suite struct NetworkFitRecoveryTests {
    static let host = Endpoint(host: "127.0.0.1", port: 47110)

    /// `controllers` × `perController` samples through `impairments`; `skewPPM` drifts every
    /// sender's clock against the recorder's.
    static func recording(_ impairments: Impairments, seed: UInt64, controllers: Int = 20, perController: Int = 3_000,
                          skewPPM: Double = 0, offsetMs: Double = 0) -> PathEvidence {
        var impairer = Impairer(impairments, seed: seed)
        let startMs: UInt64 = 1_767_225_600_000
        var records: [MessageRecord] = []
        for c in 0..<controllers {
            let source = Endpoint(host: "10.0.0.\(c + 10)", port: UInt16(50_000 + c))
            for i in 0..<perController {
                let stamp = startMs + UInt64(i * 100)
                let decision = impairer.decide(length: MotionFrame.size, link: c)
                if decision.lost { continue }
                // The recorder's clock: the true send time, the sender's drift and offset undone, plus the delay.
                let senderS = Double(i) * 0.1
                let trueSendMs = Double(stamp) + senderS * skewPPM * 1e-3 + offsetMs
                let arrivalNs = Int64((trueSendMs * 1e6).rounded()) + decision.delayNs
                let payload = MotionFrame(tMs: stamp, ay: 0.01).encoded()
                for copy in 0...decision.duplicates {
                    records.append(MessageRecord(timeNs: arrivalNs + Int64(copy) * 1_000, direction: .controllerToHost, source: source,
                                                 destination: host, payload: payload))
                }
            }
        }
        records.sort { $0.timeNs < $1.timeNs }
        let header = TraceHeader(created: "2026-11-26T00:00:00.000Z", tool: "NetworkFitRecoveryTests", capturePoint: .host, clock: .realtime)
        var evidence = PathEvidence(header: header, wireProtocol: MotionLinkV1())!
        for record in records { evidence.add(.message(record)) }
        return evidence
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func bernoulliLossIsRecoveredWithinItsInterval(seed: UInt64) throws {
        var network = Impairments()
        network.loss = .bernoulli(p: 0.05)
        network.delay = .normal(meanMs: 70.4, sdMs: 3.7)
        let fitted = try NetworkFitter.fit(Self.recording(network, seed: seed), baseMs: nil)
        #expect(fitted.loss.choice == .bernoulli, "BIC Gilbert \(fitted.loss.gilbertBIC), Bernoulli \(fitted.loss.bernoulliBIC)")
        #expect(fitted.loss.rateInterval.contains(0.05), "\(fitted.loss.rateInterval)")
        guard case .family(.normal(let mean, let sd)) = fitted.delay.choice else {
            Issue.record("a normal delay fits as \(fitted.delay.choice)")
            return
        }
        #expect(abs(mean - 70.4) < 0.2 && abs(sd - 3.7) < 0.2, "normal \(mean), \(sd)")
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func gilbertLossIsRecoveredWithItsBursts(seed: UInt64) throws {
        var network = Impairments()
        network.loss = .gilbertElliott(p: 0.015, r: 0.2, lossInBad: 1, lossInGood: 0)
        network.delay = .constant(ms: 20)
        let fitted = try NetworkFitter.fit(Self.recording(network, seed: seed, perController: 5_000), baseMs: nil)
        #expect(fitted.loss.choice == .gilbert)
        let r = try #require(fitted.loss.gilbertR)
        #expect(abs(fitted.loss.gilbertP - 0.015) / 0.015 < 0.2, "p \(fitted.loss.gilbertP)")
        #expect(abs(r - 0.2) / 0.2 < 0.2, "r \(r)")
        let burst = try #require(fitted.loss.bursts.meanLength)
        #expect(abs(burst - 5) / 5 < 0.2, "mean burst \(burst), expected 1/r = 5")
        // The stationary rate p / (p + r) = 6.98 % lies in the fit's interval.
        #expect(fitted.loss.rateInterval.contains(0.015 / 0.215), "\(fitted.loss.rateInterval)")
    }

    /// A long tail: Pareto, scale 30 ms, shape 2.5 (harsh's delay). Order is not preserved, so
    /// the tail reorders messages, and the fit says so.
    @Test(arguments: [UInt64(1), 2])
    func aLongTailedDelayIsRecovered(seed: UInt64) throws {
        var network = Impairments()
        network.delay = .pareto(scaleMs: 30, shape: 2.5)
        network.allowReordering = true
        network.duplicate = 0.01
        let fitted = try NetworkFitter.fit(Self.recording(network, seed: seed), baseMs: nil)
        guard case .family(.pareto(let scale, let shape)) = fitted.delay.choice else {
            Issue.record("a Pareto delay fits as \(fitted.delay.choice): \(fitted.delay.candidates.map { ($0.family, $0.ks.distance) })")
            return
        }
        #expect(abs(scale - 30) < 0.1 && abs(shape - 2.5) / 2.5 < 0.1, "Pareto \(scale), \(shape)")
        #expect(fitted.loss.lost == 0)
        #expect(abs(fitted.duplicateRate - 0.01) < 0.004, "duplicates \(fitted.duplicateRate)")
        #expect(fitted.reordered > 0)
        let document = ReplayNetwork(name: "fitted", description: "d", provenance: "p").document  // the writer exists for every form
        #expect(document.objectValue?["name"]?.stringValue == "fitted")
    }

    /// 50 ppm of skew over 10 minutes is 30 ms of drift: recovered within 5 ppm, and the delay
    /// quantiles are those of the recording without skew.
    @Test func fiftyPPMOfSkewIsRecoveredAndRemoved() throws {
        var network = Impairments()
        network.delay = .pareto(scaleMs: 30, shape: 2.5)
        network.allowReordering = true
        let skewed = try NetworkFitter.fit(Self.recording(network, seed: 7, controllers: 4, perController: 6_000, skewPPM: 50), baseMs: nil)
        let plain = try NetworkFitter.fit(Self.recording(network, seed: 7, controllers: 4, perController: 6_000), baseMs: nil)
        #expect(skewed.skews.count == 4)
        for skew in skewed.skews { #expect(abs(skew.estimate.ppm - 50) < 5, "\(skew.controller): \(skew.estimate.ppm) ppm") }
        for skew in plain.skews { #expect(abs(skew.estimate.ppm) < 5, "\(skew.controller): \(skew.estimate.ppm) ppm") }
        for (a, b) in zip(skewed.delay.quantiles, plain.delay.quantiles) where a.p >= 0.01 && a.p <= 0.99 {
            #expect(abs(a.ms - b.ms) < 1, "p\(a.p): \(a.ms) ms skewed, \(b.ms) ms without")
        }
    }

    /// The loop: a recording through a known network is fitted; the fitted network, applied as
    /// `network fit` writes it, makes a second recording (another seed); `network compare`'s
    /// rules find the two alike, and find a recording through another network different.
    @Test(arguments: [("Gilbert bursts and a Pareto tail", UInt64(11)), ("Bernoulli and a normal delay", UInt64(12))])
    func fitReplayCompareClosesTheLoop(_ what: String, seed: UInt64) throws {
        var truth = Impairments()
        if seed == 11 {
            truth.loss = .gilbertElliott(p: 0.015, r: 0.2, lossInBad: 1, lossInGood: 0)
            truth.delay = .pareto(scaleMs: 30, shape: 2.5)
            truth.allowReordering = true
        } else {
            truth.loss = .bernoulli(p: 0.04)
            truth.delay = .normal(meanMs: 70.4, sdMs: 3.7)
        }
        let event = try NetworkFitter.fit(Self.recording(truth, seed: seed, perController: 4_000), baseMs: nil)
        let fitted = NetworkFit.impairments(event)
        // What is written is what is replayed: through the file format and back.
        var network = ReplayNetwork(name: "fitted", description: "d", provenance: "p")
        network.impairments = fitted
        let replayed = try ReplayNetwork.parse(Array(network.document.jsonText.utf8), source: "fitted").impairments
        let lab = try NetworkFitter.fit(Self.recording(replayed, seed: seed + 100, perController: 4_000), baseMs: nil)
        let comparison = try #require(PathComparison.compare(event, lab))
        #expect(comparison.delay.distance <= PathComparison.delayDistanceBound, "\(what): KS \(comparison.delay.distance)")
        #expect(comparison.lossAgrees, "\(what): \(comparison.a.lossInterval) against \(comparison.b.lossInterval)")
        #expect(comparison.burstsAgree ?? true, "\(what): bursts \(String(describing: comparison.a.meanBurst)) against \(String(describing: comparison.b.meanBurst))")
        #expect(comparison.agrees)

        // And a recording through a different network does not pass for it.
        var other = truth
        other.delay = .constant(ms: 150)
        other.loss = .bernoulli(p: 0.2)
        let elsewhere = try NetworkFitter.fit(Self.recording(other, seed: seed + 200, perController: 4_000), baseMs: nil)
        let mismatch = try #require(PathComparison.compare(event, elsewhere))
        #expect(!mismatch.delayAgrees && !mismatch.lossAgrees && !mismatch.agrees)
    }

    /// Clocks days apart: refused without --base-ms (never a network from nothing), and with it
    /// each controller's floor is placed at the base.
    @Test func incomparableClocksNeedABase() throws {
        var network = Impairments()
        network.delay = .uniform(minMs: 40, maxMs: 60)
        let evidence = Self.recording(network, seed: 3, controllers: 3, perController: 1_000, offsetMs: 3 * 86_400_000)
        #expect(throws: NetworkFitError.self) { _ = try NetworkFitter.fit(evidence, baseMs: nil) }
        let fitted = try NetworkFitter.fit(evidence, baseMs: 40)
        #expect(!fitted.clocksComparable)
        // One stamp a clock jump away: refused with that reason, never a hint to give the base already given.
        var jumped = evidence
        jumped.add(.message(MessageRecord(timeNs: 1_767_225_700_000_000_000, direction: .controllerToHost, source: jumped.controllers[0],
                                          destination: Self.host, payload: MotionFrame(tMs: 1_767_225_600_000 + 1_000_000_000_000, ay: 0.01).encoded())))
        #expect {
            _ = try NetworkFitter.fit(jumped, baseMs: 40)
        } throws: { error in
            (error as? NetworkFitError)?.description.contains("a sender stamp lies far from its neighbours") == true
        }
        let low = try #require(fitted.delaysMs.min())
        #expect(abs(low - 40) < 0.5, "floor \(low)")
    }

    /// Too little to fit is a one-line refusal, not a network.
    @Test func tooLittleEvidenceIsRefused() throws {
        let evidence = Self.recording(Impairments(), seed: 1, controllers: 1, perController: 20)
        #expect(throws: NetworkFitError.self) { _ = try NetworkFitter.fit(evidence, baseMs: nil) }
        let header = TraceHeader(created: "2026-11-26T00:00:00.000Z", tool: "t", capturePoint: .host, clock: .realtime)
        let empty = PathEvidence(header: header, wireProtocol: MotionLinkV1())!
        #expect(throws: NetworkFitError.self) { _ = try NetworkFitter.fit(empty, baseMs: nil) }
    }
}
