/// The source paper's Table I for one latency series: mean, p95, max, min
/// and standard deviation in ms, after removing samples more than 3σ from
/// the mean, with the sample count before and after.
///
/// Conventions, fixed so other tools can reproduce the numbers:
/// - σ is the sample standard deviation (n − 1), as numpy's `std(ddof=1)`;
/// - outlier removal is one pass: keep x with |x − mean| ≤ k·σ of the full series;
/// - percentiles interpolate linearly between closest ranks, as numpy's default
///   (`percentile(…, method="linear")`).
package struct LatencyTable: Hashable, Sendable {
    package var countBefore: Int
    package var countAfter: Int
    package var meanMs: Double
    package var p95Ms: Double
    package var maxMs: Double
    package var minMs: Double
    package var sdMs: Double

    /// nil for an empty series; a single sample has σ 0.
    package init?(samplesMs: [Double], sigmas: Double = 3) {
        let kept = LatencyTable.removingOutliers(samplesMs, sigmas: sigmas)
        guard !kept.isEmpty else { return nil }
        let sorted = kept.sorted()
        countBefore = samplesMs.count
        countAfter = kept.count
        meanMs = LatencyTable.mean(kept)
        sdMs = LatencyTable.sampleStandardDeviation(kept)
        p95Ms = LatencyTable.percentile(sorted: sorted, 95)!
        minMs = sorted.first!
        maxMs = sorted.last!
    }

    /// The finite samples within `sigmas` sample standard deviations of the
    /// mean; all finite samples when `sigmas` is 0 or less (no removal) or σ is 0.
    package static func removingOutliers(_ samples: [Double], sigmas: Double) -> [Double] {
        let finite = samples.filter(\.isFinite)
        guard finite.count > 1, sigmas > 0 else { return finite }
        let m = mean(finite), limit = sigmas * sampleStandardDeviation(finite)
        return finite.filter { abs($0 - m) <= limit }
    }

    package static func mean(_ xs: [Double]) -> Double {
        // Kahan summation: long captures sum hundreds of thousands of similar values.
        var sum = 0.0, compensation = 0.0
        for x in xs {
            let y = x - compensation
            let t = sum + y
            compensation = (t - sum) - y
            sum = t
        }
        return sum / Double(xs.count)
    }

    package static func sampleStandardDeviation(_ xs: [Double]) -> Double {
        guard xs.count > 1 else { return 0 }
        let m = mean(xs)
        var squares = 0.0
        for x in xs { squares += (x - m) * (x - m) }
        return (squares / Double(xs.count - 1)).squareRoot()
    }

    /// The p-th percentile (0…100, clamped) of ascending `sorted`, linear between closest ranks; nil for none.
    package static func percentile(sorted: [Double], _ p: Double) -> Double? {
        guard !sorted.isEmpty, !p.isNaN else { return nil }
        let rank = min(max(p, 0), 100) / 100 * Double(sorted.count - 1)
        let below = Int(rank.rounded(.down)), above = min(below + 1, sorted.count - 1)
        return sorted[below] + (sorted[above] - sorted[below]) * (rank - Double(below))
    }
}
