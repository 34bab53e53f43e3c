import Foundation
import Testing
@testable import KinetraceImpairment
@testable import KinetraceReplay
import KinetraceSimulation
import KinetraceTrace
import KinetraceSupport

/// The impairments draw what their parameters say, measured over many
/// samples with fixed seeds; tolerances are five standard errors, so a
/// correct model fails with odds below one in a million.
@Suite struct ImpairmentStatisticsTests {
    static let n = 200_000

    func samples(_ d: DelayDistribution, seed: UInt64 = 42) -> [Double] {
        var rng = SeededGenerator(seed: seed)
        return (0..<Self.n).map { _ in d.sample(using: &rng) }
    }

    func mean(_ x: [Double]) -> Double { x.reduce(0, +) / Double(x.count) }
    func sd(_ x: [Double]) -> Double {
        let m = mean(x)
        return (x.reduce(0) { $0 + ($1 - m) * ($1 - m) } / Double(x.count - 1)).squareRoot()
    }
    func fiveSE(_ sd: Double) -> Double { 5 * sd / Double(Self.n).squareRoot() }

    @Test func constantIsConstant() {
        #expect(samples(.constant(ms: 12.5)).allSatisfy { $0 == 12.5 })
    }

    @Test func uniformCoversItsRange() {
        let x = samples(.uniform(minMs: 10, maxMs: 30))
        #expect(x.allSatisfy { $0 >= 10 && $0 <= 30 })
        #expect(abs(mean(x) - 20) < fiveSE(20 / 12.0.squareRoot()))
        #expect(abs(sd(x) - 20 / 12.0.squareRoot()) < 0.05)
        // Each fifth of the range holds a fifth of the draws.
        for k in 0..<5 {
            let share = Double(x.filter { $0 >= 10 + 4 * Double(k) && $0 < 14 + 4 * Double(k) }.count) / Double(Self.n)
            #expect(abs(share - 0.2) < 5 * (0.2 * 0.8 / Double(Self.n)).squareRoot())
        }
    }

    @Test func normalMatchesThePapersLabLatency() {
        // mean 70.4 ms, sd 3.7 ms, clamped to the paper's min 52.2 and max 82.2.
        let x = samples(.normal(meanMs: 70.4, sdMs: 3.7, minMs: 52.2, maxMs: 82.2))
        #expect(x.allSatisfy { $0 >= 52.2 && $0 <= 82.2 })
        #expect(abs(mean(x) - 70.4) < fiveSE(3.7))
        #expect(abs(sd(x) - 3.7) < 0.05)
        let sorted = x.sorted()
        // The 95th percentile of N(70.4, 3.7) is 70.4 + 1.645 × 3.7 = 76.5 (the paper's p95, 73.2, is tighter than normal).
        #expect(abs(sorted[Int(0.95 * Double(Self.n))] - 76.49) < 0.1)
    }

    @Test func paretoHasItsMeanAndTail() {
        let shape = 2.5, scale = 10.0
        let x = samples(.pareto(scaleMs: scale, shape: shape))
        #expect(x.allSatisfy { $0 >= scale })
        let expectedMean = shape * scale / (shape - 1)  // 16.67
        #expect(DelayDistribution.pareto(scaleMs: scale, shape: shape).meanMs == expectedMean)
        // The variance is finite for shape > 2: sd = xm/(α−1)·sqrt(α/(α−2)).
        let expectedSD = scale / (shape - 1) * (shape / (shape - 2)).squareRoot()
        #expect(abs(mean(x) - expectedMean) < fiveSE(expectedSD))
        // Tail: P(X > t) = (xm/t)^α.
        for t in [20.0, 40.0] {
            let share = Double(x.filter { $0 > t }.count) / Double(Self.n)
            let expected = pow(scale / t, shape)
            #expect(abs(share - expected) < 5 * (expected * (1 - expected) / Double(Self.n)).squareRoot())
        }
    }

    @Test func empiricalReproducesItsSourceQuantiles() throws {
        var source = SeededGenerator(seed: 7)
        let measured = (0..<5000).map { _ in 50 + 30 * source.unit() * source.unit() }  // a skewed shape
        let d = try #require(DelayDistribution.empirical(samplesMs: measured))
        let x = samples(d).sorted()
        let m = measured.sorted()
        for q in [0.1, 0.5, 0.9, 0.99] {
            #expect(abs(x[Int(q * Double(x.count))] - m[Int(q * Double(m.count))]) < 0.5, "quantile \(q)")
        }
        #expect(x.first! >= m.first! && x.last! <= m.last!)
        #expect(DelayDistribution.empirical(samplesMs: []) == nil)
        #expect(DelayDistribution.empirical(samplesMs: [1, .nan]) == nil)
    }

    @Test(arguments: [0.0, 0.01, 0.1, 0.5, 1.0])
    func bernoulliLosesItsShare(_ p: Double) {
        var rng = SeededGenerator(seed: 3)
        var process = LossProcess(.bernoulli(p: p))
        let lost = (0..<Self.n).filter { _ in process.isLost(using: &rng) }.count
        let se = (p * (1 - p) / Double(Self.n)).squareRoot()
        #expect(abs(Double(lost) / Double(Self.n) - p) <= 5 * se + 1e-12)
    }

    @Test func gilbertElliottMatchesItsStationaryRateAndBursts() {
        // netem-style parameters: p = 2 %, r = 25 %, 1−h = 90 %, 1−k = 0.5 %.
        let model = LossModel.gilbertElliott(p: 0.02, r: 0.25, lossInBad: 0.9, lossInGood: 0.005)
        var rng = SeededGenerator(seed: 11)
        var process = LossProcess(model)
        var lost = 0, badSteps = 0, sojourns = 0, previousBad = false
        for _ in 0..<Self.n {
            if process.isLost(using: &rng) { lost += 1 }
            if process.inBadState { badSteps += 1; if !previousBad { sojourns += 1 } }
            previousBad = process.inBadState
        }
        let rate = Double(lost) / Double(Self.n)
        #expect(abs(model.expectedLossRate - (0.02 / 0.27 * 0.9 + 0.25 / 0.27 * 0.005)) < 1e-12)
        // Bursts correlate draws, so allow a wider band than Bernoulli's (3 % of the rate).
        #expect(abs(rate - model.expectedLossRate) < 0.03 * model.expectedLossRate + 0.001)
        // Mean time in the bad state is 1/r = 4 messages.
        #expect(abs(Double(badSteps) / Double(sojourns) - 4) < 0.2)
    }

    @Test func gilbertElliottBurstsAreBurstier() {
        let ge = LossModel.gilbertElliott(p: 0.02, r: 0.25, lossInBad: 0.9, lossInGood: 0.005)
        func pairs(_ model: LossModel) -> Double {
            var rng = SeededGenerator(seed: 5)
            var process = LossProcess(model)
            var last = false, both = 0
            for _ in 0..<Self.n {
                let now = process.isLost(using: &rng)
                if now && last { both += 1 }
                last = now
            }
            return Double(both) / Double(Self.n)
        }
        // P(two in a row) ≈ rate² for Bernoulli, much more for Gilbert–Elliott at the same rate.
        #expect(pairs(ge) > 5 * pairs(.bernoulli(p: ge.expectedLossRate)))
    }
}
