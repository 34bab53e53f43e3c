import Foundation
import KinetraceSupport
import Testing
@testable import KinetraceAnalysis

/// Issue 28: where a recording's conditions change (Pettitt's test, binary segmentation) and
/// the level each segment is read at. Statistical cases draw from pinned seeds.
@Suite struct ChangePointTests {
    static func normal(_ rng: inout SeededGenerator) -> Double {
        // Box–Muller: one standard normal draw.
        (-2 * Foundation.log(1 - rng.unit())).squareRoot() * Foundation.cos(2 * Double.pi * rng.unit())
    }

    /// Pettitt's Uₜ is the Mann–Whitney statistic of each split: Σᵢ≤ₜ Σⱼ>ₜ sgn(xᵢ − xⱼ). The rank
    /// form finds the same best split as the pairs, ties included.
    @Test func theRankFormMatchesThePairs() {
        var rng = SeededGenerator(seed: 41)
        for _ in 0..<200 {
            let n = 2 + Int(rng.unit() * 30)
            let x = (0..<n).map { _ in (rng.unit() * 5).rounded() }  // many ties
            var best = -1.0, bestIndex = -1
            for t in 1..<n {
                var u = 0.0
                for i in 0..<t { for j in t..<n { u += x[i] == x[j] ? 0 : (x[i] > x[j] ? 1 : -1) } }
                if abs(u) > best { best = abs(u); bestIndex = t }
            }
            let split = ChangePoints.pettitt(x[...], allowed: 1..<n)
            #expect(split?.index == bestIndex, "\(x)")
            let nn = Double(n)
            #expect(abs((split?.pValue ?? -1) - min(1, 2 * Foundation.exp(-6 * best * best / (nn * nn * nn + nn * nn)))) < 1e-12)
        }
    }

    @Test func aShiftOfOneSdIsFoundAndNoiseIsNot() throws {
        var rng = SeededGenerator(seed: 42)
        let shifted = (0..<400).map { ($0 < 250 ? 0 : 1) + Self.normal(&rng) }
        let split = try #require(ChangePoints.pettitt(shifted[...], allowed: 1..<400))
        #expect(abs(split.index - 250) <= 25 && split.pValue < 1e-6, "\(split)")
        let flat = (0..<400).map { _ in Self.normal(&rng) }
        let none = try #require(ChangePoints.pettitt(flat[...], allowed: 1..<400))
        #expect(none.pValue > 0.01, "\(none)")
        // Constant input: no ranking to split on.
        #expect(ChangePoints.pettitt(Array(repeating: 3.0, count: 50)[...], allowed: 1..<50)?.pValue == 1)
        #expect(ChangePoints.pettitt([1.0][...], allowed: 0..<1) == nil)
        #expect(ChangePoints.pettitt([1.0, 2, 3][...], allowed: 5..<9) == nil)
    }

    /// Two steps 60 s apart in a 10 Hz series; a step within 10 s of an end, one too small to
    /// matter, and a series too short are not split.
    @Test func binarySegmentationFindsEachStepAndRespectsItsLimits() {
        var rng = SeededGenerator(seed: 43)
        let times = (0..<1_800).map { Double($0) * 0.1 }
        let levels = times.map { $0 < 60 ? 20.0 : ($0 < 120 ? 30 : 20) }
        let values = zip(levels, times).map { level, _ in level + Self.normal(&rng) }
        let starts = ChangePoints.segment(values: values, timesS: times, minimumShiftMs: 1)
        #expect(starts.count == 2, "\(starts)")
        #expect(starts.map { times[$0] }.allSatisfy { abs($0 - 60) < 1 || abs($0 - 120) < 1 }, "\(starts.map { times[$0] })")
        // A step at 5 s: each side must span 10 s.
        let early = zip(times, values).map { t, v in t < 5 ? v + 10 : v - (t >= 60 && t < 120 ? 10 : 0) }
        let earlyStarts = ChangePoints.segment(values: early, timesS: times, minimumShiftMs: 1).map { times[$0] }
        #expect(!earlyStarts.contains { $0 < 10 }, "\(earlyStarts)")
        // Shifts under the floor given are not kept.
        #expect(ChangePoints.segment(values: values, timesS: times, minimumShiftMs: 50).isEmpty)
        #expect(ChangePoints.segment(values: Array(values.prefix(150)), timesS: Array(times.prefix(150)), minimumShiftMs: 1).isEmpty)
        #expect(ChangePoints.segment(values: [], timesS: [], minimumShiftMs: 1).isEmpty)
    }

    /// Never more than `maximumSegments` segments, however many steps.
    @Test func aStaircaseStopsAtTheCap() {
        let times = (0..<40_000).map { Double($0) * 0.1 }
        let values = times.map { ($0 / 20).rounded(.down) * 5 }
        let starts = ChangePoints.segment(values: values, timesS: times, minimumShiftMs: 1)
        #expect(starts.count == ChangePoints.maximumSegments - 1, "\(starts.count)")
        #expect(starts == starts.sorted())
    }

    /// The order-statistic interval of the 10th percentile covers the true one about 95 % of the
    /// time: over 200 pinned samples of 300 uniform draws, between 180 and 200 cover it.
    @Test func theLevelIntervalCoversTheTrueQuantile() {
        var rng = SeededGenerator(seed: 44)
        var covered = 0
        for _ in 0..<200 {
            let sample = (0..<300).map { _ in rng.unit() }.sorted()
            let level = ConditionSegments.orderStatistic(sample, p: 0.1)
            if level.interval.contains(0.1) { covered += 1 }
            #expect(level.interval.contains(level.value))
        }
        #expect(covered >= 180 && covered <= 200, "\(covered) of 200")
    }
}
