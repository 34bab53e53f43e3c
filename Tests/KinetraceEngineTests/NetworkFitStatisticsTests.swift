import Foundation
import KinetraceAnalysis
import KinetraceSupport
import KinetraceTestSupport
import Testing

/// The statistics a network is fitted from measurements with (issue 28): clock skew removal,
/// Kolmogorov–Smirnov tests, loss models and delay distributions. Statistical cases draw from
/// fixed seeds, so each asserts on one pinned sample.
@Suite struct NetworkFitStatisticsTests {
    // MARK: draws

    /// Exponential with mean `mean`.
    static func exponential(_ mean: Double, _ rng: inout SeededGenerator) -> Double { -mean * Foundation.log(1 - rng.unit()) }
    /// Pareto by the replay's inverse CDF: scale / U^(1/shape), U in (0, 1].
    static func pareto(scale: Double, shape: Double, _ rng: inout SeededGenerator) -> Double {
        scale / Foundation.pow(1 - rng.unit(), 1 / shape)
    }

    /// 10 minutes at 10 Hz: a floor of 40 ms, `ppm` of skew, and a noise draw above the floor.
    static func skewed(ppm: Double, startS: Double = 0, seed: UInt64, noise: (inout SeededGenerator) -> Double) -> (t: [Double], d: [Double]) {
        var rng = SeededGenerator(seed: seed)
        let times = (0..<6_000).map { startS + Double($0) * 0.1 }
        let delays = times.map { 40 + ppm * 1e-3 * ($0 - startS) + noise(&rng) }
        return (times, delays)
    }

    // MARK: clock skew

    @Test func fiftyPpmIsRecoveredUnderExponentialAndParetoNoise() throws {
        let exponential = Self.skewed(ppm: 50, seed: 1) { Self.exponential(3, &$0) }
        let heavy = Self.skewed(ppm: 50, seed: 2) { Self.pareto(scale: 1, shape: 2.5, &$0) - 1 }
        for (name, sample) in [("exponential", exponential), ("pareto", heavy)] {
            let fit = try #require(SkewEstimate.fit(timesS: sample.t, delaysMs: sample.d))
            #expect(abs(fit.ppm - 50) < 5, "\(name): \(fit.ppm) ppm")
            #expect(abs(fit.skew - 50e-6) < 5e-6 && abs(fit.slopeMsPerS - 0.05) < 0.005)
            #expect(abs(fit.floorMs - 40) < 1, "\(name): floor \(fit.floorMs)")
            #expect(fit.points == 6_000 && abs(fit.spanS - 599.9) < 1e-9 && fit.startS == 0)
        }
    }

    @Test func zeroAndNegativeSkewAndEpochTimes() throws {
        let flat = Self.skewed(ppm: 0, seed: 3) { Self.exponential(5, &$0) }
        let zero = try #require(SkewEstimate.fit(timesS: flat.t, delaysMs: flat.d))
        #expect(abs(zero.ppm) < 5, "\(zero.ppm) ppm")
        // Times as Unix seconds: the fit works from the earliest time, so nothing is lost to rounding.
        let falling = Self.skewed(ppm: -80, startS: 1_767_225_600, seed: 4) { Self.exponential(5, &$0) }
        let negative = try #require(SkewEstimate.fit(timesS: falling.t, delaysMs: falling.d))
        #expect(abs(negative.ppm + 80) < 5, "\(negative.ppm) ppm")
        #expect(negative.startS == 1_767_225_600 && abs(negative.floorMs - 40) < 1)
    }

    @Test func theLineOnAHandDrawnHull() throws {
        // Lower hull (0,1) (1,0) (3,2); (2,1) lies on the last edge. Mean t = 1.5 is on the edge
        // (1,0)–(3,2): d = t − 1, leaving residuals 2, 0, 0, 0 (the edge (0,1)–(1,0) leaves 6).
        let fit = try #require(SkewEstimate.fit(timesS: [0, 1, 2, 3], delaysMs: [1, 0, 1, 2]))
        #expect(fit.slopeMsPerS == 1 && fit.floorMs == -1 && fit.ppm == 1_000 && fit.skew == 1e-3)
        #expect(fit.removing(from: [1, 0, 1, 2], timesS: [0, 1, 2, 3]) == [1, -1, -1, -1])
        #expect(fit.lineMs(atS: 3) == 2)
        // Points sharing a time: only the lowest matters, and order of input does not.
        let shuffled = try #require(SkewEstimate.fit(timesS: [3, 1, 2, 1, 0, 3], delaysMs: [2, 0, 1, 5, 1, 9]))
        #expect(shuffled.slopeMsPerS == 1 && shuffled.floorMs == -1)
    }

    /// Against every line through two points that stays below all points: none leaves a smaller sum.
    @Test func theFitMinimisesTheSumOverAllFeasibleLines() async {
        await seededPropertyCheck(count: 200, draw: { rng in
            (0..<Int.random(in: 2...25, using: &rng)).map { _ in
                (Double(Int.random(in: 0...20, using: &rng)), Double.random(in: 0...10, using: &rng))
            }
        }) { points in
            let t = points.map(\.0), d = points.map(\.1)
            guard Set(t).count > 1 else { #expect(SkewEstimate.fit(timesS: t, delaysMs: d) == nil); return }
            guard let fit = SkewEstimate.fit(timesS: t, delaysMs: d) else { Issue.record("no fit"); return }
            func sum(_ line: (Double) -> Double) -> Double { zip(t, d).reduce(0) { $0 + $1.1 - line($1.0) } }
            let fitted = sum { fit.lineMs(atS: $0) }
            #expect(zip(t, d).allSatisfy { $1 - fit.lineMs(atS: $0) >= -1e-9 }, "the line is below every point")
            var best = Double.infinity
            for i in points.indices { for j in points.indices where t[j] > t[i] {
                let slope = (d[j] - d[i]) / (t[j] - t[i])
                let line = { (x: Double) in d[i] + slope * (x - t[i]) }
                if zip(t, d).allSatisfy({ $1 - line($0) >= -1e-9 }) { best = min(best, sum(line)) }
            } }
            #expect(abs(fitted - best) <= 1e-7 * max(1, best), "fit \(fitted), best feasible \(best)")
        }
    }

    @Test func removingTheSkewLeavesNoTrendAndKeepsTheFloor() throws {
        let sample = Self.skewed(ppm: 50, seed: 5) { Self.exponential(3, &$0) }
        let fit = try #require(SkewEstimate.fit(timesS: sample.t, delaysMs: sample.d))
        let corrected = fit.removing(from: sample.d, timesS: sample.t)
        #expect(abs(corrected.min()! - fit.floorMs) < 1e-9)
        let again = try #require(SkewEstimate.fit(timesS: sample.t, delaysMs: corrected))
        #expect(abs(again.ppm) < 1e-6, "\(again.ppm) ppm left")
    }

    @Test func degenerateInputsGiveNoFit() {
        #expect(SkewEstimate.fit(timesS: [], delaysMs: []) == nil)
        #expect(SkewEstimate.fit(timesS: [1], delaysMs: [5]) == nil)
        #expect(SkewEstimate.fit(timesS: [2, 2, 2], delaysMs: [5, 6, 7]) == nil, "no time span")
        #expect(SkewEstimate.fit(timesS: [0, 1], delaysMs: [5]) == nil, "lengths differ")
        #expect(SkewEstimate.fit(timesS: [0, .nan], delaysMs: [5, 6]) == nil)
        #expect(SkewEstimate.fit(timesS: [0, 1], delaysMs: [5, .infinity]) == nil)
        #expect(SkewEstimate.fit(timesS: [0, 1], delaysMs: [5, 6])?.slopeMsPerS == 1)
    }

    @Test func twoHundredThousandPointsFitFast() throws {
        var rng = SeededGenerator(seed: 6)
        let times = (0..<200_000).map { Double($0) * 0.01 }
        let delays = times.map { 20 + 0.03 * $0 + Self.exponential(4, &rng) }
        let clock = ContinuousClock()
        var fit: SkewEstimate?
        let elapsed = clock.measure { fit = SkewEstimate.fit(timesS: times, delaysMs: delays) }
        #expect(abs(try #require(fit).ppm - 30) < 5)
        // A quadratic method needs 4·10¹⁰ steps here; the hull takes well under a second (debug build).
        #expect(elapsed < .seconds(10), "\(elapsed)")
    }

    // MARK: Kolmogorov–Smirnov

    @Test func identicalAndDisjointSamples() throws {
        let a = (0..<100).map { Double($0) }
        let same = try #require(KSResult.twoSample(a, a.reversed()))
        #expect(same.distance == 0 && same.pValue == 1 && same.effectiveN == 50)
        let apart = try #require(KSResult.twoSample(a, a.map { $0 + 1_000 }))
        #expect(apart.distance == 1 && apart.pValue < 1e-20)
        #expect(KSResult.twoSample([], a) == nil && KSResult.twoSample(a, []) == nil)
        #expect(KSResult.twoSample([1, .nan], a) == nil && KSResult.twoSample(a, [.infinity]) == nil)
    }

    @Test func sameDistributionPassesAndAHalfSdShiftFails() throws {
        var rng = SeededGenerator(seed: 7)
        let a = (0..<2_000).map { _ in rng.normal() }
        let b = (0..<2_000).map { _ in rng.normal() }
        let shifted = (0..<2_000).map { _ in rng.normal(mean: 0.5) }
        // Pinned (seed 7): D 0.0205, p 0.79; shifted D 0.196, p 4.7e-34.
        let same = try #require(KSResult.twoSample(a, b))
        #expect(same.pValue > 0.01, "D \(same.distance), p \(same.pValue)")
        let moved = try #require(KSResult.twoSample(a, shifted))
        #expect(moved.pValue < 1e-6 && moved.distance > 0.15, "D \(moved.distance), p \(moved.pValue)")
    }

    /// The merged distance against sup |F_a − F_b| evaluated at every value, on samples full of ties.
    @Test func twoSampleDistanceMatchesBruteForce() async {
        await seededPropertyCheck(count: 300, draw: { rng in
            ((0..<Int.random(in: 1...30, using: &rng)).map { _ in Double(Int.random(in: 0...9, using: &rng)) },
             (0..<Int.random(in: 1...30, using: &rng)).map { _ in Double(Int.random(in: 0...9, using: &rng)) })
        }) { samples in
            let (a, b) = samples
            var brute = 0.0
            for v in a + b {
                let fa = Double(a.filter { $0 <= v }.count) / Double(a.count)
                let fb = Double(b.filter { $0 <= v }.count) / Double(b.count)
                brute = max(brute, abs(fa - fb))
            }
            #expect(abs(KSResult.twoSample(a, b)!.distance - brute) < 1e-12)
        }
    }

    /// One sample against the uniform CDF on [0, 10], and against a step CDF (a constant at 5).
    @Test func oneSampleDistanceMatchesBruteForce() async {
        await seededPropertyCheck(count: 300, draw: { rng in
            (0..<Int.random(in: 1...30, using: &rng)).map { _ in Double(Int.random(in: 0...20, using: &rng)) / 2 }
        }) { x in
            let models: [(Double) -> Double] = [{ min(max($0 / 10, 0), 1) }, { $0 < 5 ? 0 : 1 }]
            for cdf in models {
                var brute = 0.0
                // Between observations the empirical function is flat: check at each value and
                // just below it, and at a grid between them, which the sup cannot exceed.
                for v in x + stride(from: -1, through: 11, by: 0.25).map({ $0 }) {
                    let at = Double(x.filter { $0 <= v }.count) / Double(x.count)
                    let below = Double(x.filter { $0 < v }.count) / Double(x.count)
                    brute = max(brute, abs(at - cdf(v)), abs(below - cdf(v.nextDown)))
                }
                #expect(abs(KSResult.oneSample(x, cdf: cdf)!.distance - brute) < 1e-12)
            }
        }
    }

    @Test func oneSampleEdgeCases() throws {
        let exact = try #require(KSResult.oneSample(Array(repeating: 5, count: 40), cdf: { $0 < 5 ? 0 : 1 }))
        #expect(exact.distance == 0 && exact.pValue == 1 && exact.effectiveN == 40)
        #expect(KSResult.oneSample([], cdf: { _ in 0.5 }) == nil)
        #expect(KSResult.oneSample([1, .nan], cdf: { _ in 0.5 }) == nil)
        #expect(KSResult.oneSample([1, 2], cdf: { _ in .nan }) == nil)
        // (i − 0.5)/n: the sample closest to uniform, D = 1/(2n).
        let n = 200
        let even = try #require(KSResult.oneSample((1...n).map { (Double($0) - 0.5) / Double(n) }, cdf: { min(max($0, 0), 1) }))
        #expect(abs(even.distance - 0.5 / Double(n)) < 1e-12 && even.pValue == 1)
    }

    /// Q(λ) against its series summed to 200 terms in double precision (Python), on both sides
    /// of the switch between the two forms at λ = 1.18.
    @Test func kolmogorovDistributionTail() {
        let reference: [(Double, Double)] = [
            (0.5, 0.9639452436648751), (0.8, 0.5441424115741981), (1.0, 0.26999967167735456),
            (1.1, 0.17771819260640118), (1.18, 0.1234538094297657), (1.2, 0.11224966667072496),
            (1.36, 0.049485876755377876), (1.63, 0.009846364888486529), (2.0, 0.0006709252557796953),
        ]
        for (lambda, q) in reference {
            #expect(abs(KSResult.kolmogorovQ(lambda) - q) < 1e-12, "Q(\(lambda)) = \(KSResult.kolmogorovQ(lambda)), want \(q)")
        }
        #expect(KSResult.kolmogorovQ(0) == 1 && KSResult.kolmogorovQ(-1) == 1 && KSResult.kolmogorovQ(0.05) == 1)
        #expect(KSResult.kolmogorovQ(.infinity) == 0 && KSResult.kolmogorovQ(40) == 0)
        let values = stride(from: 0.0, through: 4, by: 0.01).map(KSResult.kolmogorovQ)
        #expect(zip(values, values.dropFirst()).allSatisfy { $0 >= $1 }, "Q never rises")
    }

    // MARK: loss

    @Test func independentLossIsBernoulli() throws {
        var rng = SeededGenerator(seed: 8)
        let lost = (0..<20_000).map { _ in rng.unit() < 0.05 }
        // Pinned (seed 8): 963 lost, ln L −3860.632 (Bernoulli), −3860.630 (Gilbert, p 0.048, r 0.952).
        let fit = try #require(LossFit.fit(lost: lost))
        #expect(fit.choice == .bernoulli, "AIC Bernoulli \(fit.bernoulliAIC), Gilbert \(fit.gilbertAIC)")
        #expect(fit.rateInterval.contains(fit.rate) && fit.rateInterval.contains(0.05), "\(fit.rate) in \(fit.rateInterval)")
        #expect(fit.gilbertLogLikelihood >= fit.bernoulliLogLikelihood - 1e-9)
        // Independent loss looks like a Gilbert chain with p + r = 1.
        #expect(abs(fit.gilbertP + fit.gilbertR! - 1) < 0.05)
    }

    @Test func burstyLossIsGilbert() throws {
        // The replay's chain: move first (p good→bad, r bad→good), then lose every message in the bad state.
        var rng = SeededGenerator(seed: 9)
        var bad = false
        let lost = (0..<50_000).map { _ in
            let u = rng.unit()
            bad = bad ? !(u < 0.2) : u < 0.015
            return bad
        }
        // Pinned (seed 9): p 0.0152, r 0.187, 703 bursts of 5.3 messages; AIC 26620 (Bernoulli), 10900 (Gilbert).
        let fit = try #require(LossFit.fit(lost: lost))
        #expect(fit.choice == .gilbert)
        #expect(abs(fit.gilbertP / 0.015 - 1) < 0.2 && abs(fit.gilbertR! / 0.2 - 1) < 0.2, "p \(fit.gilbertP), r \(fit.gilbertR!)")
        let burst = try #require(fit.bursts.meanLength)
        #expect(abs(burst / 5 - 1) < 0.2, "mean burst \(burst)")
        #expect(abs(try #require(fit.goodRuns.meanLength) / (1 / 0.015) - 1) < 0.2)
        #expect(fit.bursts.messages == fit.lost && fit.goodRuns.messages == fit.messages - fit.lost)
    }

    @Test func handCountedSequence() throws {
        // 100 messages, lost at 10, 11, 12 and 50: from the good start 96 moves leave good (2 to bad),
        // 4 leave bad (2 back to good).
        var lost = Array(repeating: false, count: 100)
        for i in [10, 11, 12, 50] { lost[i] = true }
        let fit = try #require(LossFit.fit(lost: lost))
        #expect(fit.messages == 100 && fit.lost == 4 && fit.rate == 0.04)
        #expect(fit.gilbertP == 2.0 / 96 && fit.gilbertR == 0.5)
        #expect(fit.bursts.count == 2 && fit.bursts.messages == 4 && fit.bursts.meanLength == 2)
        #expect(fit.goodRuns.count == 3 && fit.goodRuns.meanLength == 32)
        // Wilson 95 % for 4 of 100 (Python): 0.015663303991548, 0.098370714358879.
        #expect(abs(fit.rateInterval.lowerBound - 0.01566330399154762) < 1e-12)
        #expect(abs(fit.rateInterval.upperBound - 0.0983707143588792) < 1e-12)
        let q = 0.04
        #expect(abs(fit.bernoulliLogLikelihood - (4 * Foundation.log(q) + 96 * Foundation.log(1 - q))) < 1e-9)
        let p = 2.0 / 96
        let gilbert = 2 * Foundation.log(p) + 94 * Foundation.log(1 - p) + 2 * Foundation.log(0.5) + 2 * Foundation.log(0.5)
        #expect(abs(fit.gilbertLogLikelihood - gilbert) < 1e-9)
        #expect(fit.bernoulliAIC == 2 - 2 * fit.bernoulliLogLikelihood && fit.gilbertAIC == 4 - 2 * fit.gilbertLogLikelihood)
    }

    @Test func noLossTooFewMessagesAndAllLost() throws {
        let clean = try #require(LossFit.fit(lost: Array(repeating: false, count: 1_000)))
        #expect(clean.rate == 0 && clean.choice == .bernoulli && clean.rateInterval.lowerBound == 0)
        #expect(clean.rateInterval.upperBound > 0 && clean.rateInterval.upperBound < 0.005)
        #expect(clean.gilbertP == 0 && clean.gilbertR == nil && clean.bursts.count == 0 && clean.bursts.meanLength == nil)
        #expect(clean.goodRuns.count == 1 && clean.goodRuns.messages == 1_000)
        #expect(LossFit.fit(lost: Array(repeating: false, count: LossFit.minimumMessages - 1)) == nil)
        #expect(LossFit.fit(lost: Array(repeating: false, count: LossFit.minimumMessages)) != nil)
        let dead = try #require(LossFit.fit(lost: Array(repeating: true, count: 200)))
        #expect(dead.rate == 1 && dead.choice == .bernoulli && dead.rateInterval.upperBound == 1 && dead.gilbertR == 0)
    }

    // MARK: delay

    @Test func paretoDelaysFitPareto() throws {
        var rng = SeededGenerator(seed: 10)
        let delays = (0..<5_000).map { _ in Self.pareto(scale: 30, shape: 2.5, &rng) }
        // Pinned (seed 10): scale 30.003, shape 2.544, D 0.0092, p 0.79; the normal's D is 0.29.
        let fit = try #require(DelayFit.fit(delaysMs: delays))
        guard case .family(.pareto(let scale, let shape)) = fit.choice else {
            Issue.record("chose \(fit.choice); candidates \(fit.candidates)"); return
        }
        #expect(abs(shape / 2.5 - 1) < 0.1 && abs(scale / 30 - 1) < 0.01, "scale \(scale), shape \(shape)")
        #expect(fit.candidates.first?.family.distributionName == "pareto" && fit.candidates.count == 4)
    }

    @Test func normalDelaysFitNormal() throws {
        var rng = SeededGenerator(seed: 11)
        let delays = (0..<5_000).map { _ in rng.normal(mean: 70.4, sd: 3.7) }
        // Pinned (seed 11): mean 70.28, sd 3.76, D 0.0058, p 0.996; uniform's D is 0.24.
        let fit = try #require(DelayFit.fit(delaysMs: delays))
        guard case .family(.normal(let mean, let sd)) = fit.choice else {
            Issue.record("chose \(fit.choice); candidates \(fit.candidates)"); return
        }
        #expect(abs(mean - 70.4) < 0.2 && abs(sd - 3.7) < 0.2, "mean \(mean), sd \(sd)")
        #expect(fit.candidates.map(\.ks.distance) == fit.candidates.map(\.ks.distance).sorted())
    }

    @Test func uniformAndConstantDelays() throws {
        var rng = SeededGenerator(seed: 12)
        let spread = try #require(DelayFit.fit(delaysMs: (0..<2_000).map { _ in 10 + 20 * rng.unit() }))
        #expect(spread.choice.family?.distributionName == "uniform", "\(spread.choice)")
        let fixed = try #require(DelayFit.fit(delaysMs: Array(repeating: 70, count: 60)))
        #expect(fixed.choice == .family(.constant(ms: 70)))
        #expect(fixed.quantiles.allSatisfy { $0.ms == 70 } && !fixed.candidates.contains { $0.family.distributionName == "pareto" })
    }

    /// Two well-separated modes: no family fits, so the quantile table is what a network writes.
    @Test func bimodalDelaysFallBackToTheTable() throws {
        var rng = SeededGenerator(seed: 13)
        let delays = (0..<4_000).map { i in rng.normal(mean: i % 2 == 0 ? 40 : 90, sd: 3) }
        let fit = try #require(DelayFit.fit(delaysMs: delays))
        #expect(fit.choice == .quantiles)
        #expect(fit.candidates.allSatisfy { $0.ks.pValue <= DelayFit.acceptanceP })
    }

    @Test func quantileTableIsMonotoneAndSpansTheSample() async {
        await seededPropertyCheck(count: 100, draw: { rng in
            (0..<Int.random(in: 50...400, using: &rng)).map { _ in Double.random(in: 0...200, using: &rng).rounded() }
        }) { delays in
            guard let fit = DelayFit.fit(delaysMs: delays) else { Issue.record("no fit"); return }
            let table = fit.quantiles
            #expect(table.first == DelayQuantile(p: 0, ms: delays.min()!) && table.last == DelayQuantile(p: 1, ms: delays.max()!))
            #expect(zip(table, table.dropFirst()).allSatisfy { $1.p > $0.p && $1.ms >= $0.ms })
            #expect(table.map(\.p) == DelayFit.defaultLevels && fit.samples == delays.count)
        }
    }

    @Test func quantileTableByHandAndItsLevels() throws {
        let sorted = (1...100).map(Double.init)
        let table = DelayFit.quantileTable(sortedMs: sorted, levels: [0.5, 0.25, 2, -1, 0.5])
        // Position p·99: p50 between 50 and 51; p25 at 24.75, so 25.75.
        #expect(table == [DelayQuantile(p: 0, ms: 1), DelayQuantile(p: 0.25, ms: 25.75), DelayQuantile(p: 0.5, ms: 50.5),
                          DelayQuantile(p: 1, ms: 100)])
        #expect(DelayFit.fit(delaysMs: Array(sorted.prefix(DelayFit.minimumSamples - 1))) == nil)
        #expect(DelayFit.fit(delaysMs: Array(sorted.prefix(DelayFit.minimumSamples))) != nil)
        #expect(DelayFit.fit(delaysMs: sorted + [.nan]) == nil)
    }

    @Test func familyDistributionFunctions() {
        #expect(DelayFamily.pareto(scaleMs: 30, shape: 2).cdf(60) == 0.75 && DelayFamily.pareto(scaleMs: 30, shape: 2).cdf(29) == 0)
        #expect(DelayFamily.uniform(minMs: 10, maxMs: 20).cdf(12.5) == 0.25)
        #expect(abs(DelayFamily.normal(meanMs: 70, sdMs: 4).cdf(70) - 0.5) < 1e-15)
        #expect(abs(DelayFamily.normal(meanMs: 70, sdMs: 4).cdf(70 + 4 * 1.959963984540054) - 0.975) < 1e-12)
        // The replay clamps normal draws below at 0 ms: the CDF steps there.
        #expect(DelayFamily.normal(meanMs: 1, sdMs: 4).cdf(-0.001) == 0 && DelayFamily.normal(meanMs: 1, sdMs: 4).cdf(0) > 0.4)
        #expect(DelayFamily.constant(ms: 5).cdf(4.9) == 0 && DelayFamily.constant(ms: 5).cdf(5) == 1)
    }
}

extension DelayFit.Choice {
    /// The chosen family, or nil for the quantile table.
    var family: DelayFamily? {
        if case .family(let family) = self { return family }
        return nil
    }
}
