/// The conditions of two fitted recordings side by side, and whether they agree: how a
/// researcher shows that a lab replay reproduces the event it was fitted to.
///
/// They agree when all three hold:
/// - delay: the two-sample Kolmogorov–Smirnov distance is at most `delayDistanceBound`
///   (0.05: five points of probability anywhere on the CDF; a fitted 33-point quantile table,
///   interpolated linearly, moves the CDF by less than its body's step of 0.05) or the test
///   cannot tell them apart (p > 0.05);
/// - loss rate: the two 95 % intervals overlap;
/// - bursts: the mean loss-burst lengths are within 20 % of each other, when both have bursts.
package struct PathComparison: Sendable {
    package static let delayDistanceBound = 0.05
    package static let burstTolerance = 0.2

    package struct Side: Sendable {
        package var samples: Int
        package var quantilesMs: [(p: Double, ms: Double)]
        package var lossRate: Double
        package var lossInterval: ClosedRange<Double>
        package var meanBurst: Double?
        package var reorderRate: Double
        package var duplicateRate: Double
        /// The median skew over the controllers it was removed for, ppm.
        package var medianSkewPPM: Double?
    }

    package var a: Side
    package var b: Side
    package var delay: KSResult
    package var delayAgrees: Bool { delay.distance <= Self.delayDistanceBound || delay.pValue > 0.05 }
    package var lossAgrees: Bool { a.lossInterval.overlaps(b.lossInterval) }
    /// Nil when either side has no burst to compare.
    package var burstsAgree: Bool? {
        guard let x = a.meanBurst, let y = b.meanBurst, x > 0 else { return nil }
        return abs(y - x) / x <= Self.burstTolerance
    }
    package var agrees: Bool { delayAgrees && lossAgrees && (burstsAgree ?? true) }

    /// The levels the report shows.
    package static let levels: [Double] = [0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1]

    /// Nil when the delays cannot be compared (either side empty).
    package static func compare(_ first: FittedPath, _ second: FittedPath) -> PathComparison? {
        guard let ks = KSResult.twoSample(first.delaysMs, second.delaysMs) else { return nil }
        return PathComparison(a: side(first), b: side(second), delay: ks)
    }

    static func side(_ path: FittedPath) -> Side {
        let sorted = path.delaysMs.sorted()
        let table = DelayFit.quantileTable(sortedMs: sorted, levels: levels).map { (p: $0.p, ms: $0.ms) }
        let skews = path.skews.map(\.estimate.ppm).sorted()
        return Side(samples: sorted.count, quantilesMs: table, lossRate: path.loss.rate, lossInterval: path.loss.rateInterval,
                    meanBurst: path.loss.bursts.meanLength, reorderRate: path.reorderRate, duplicateRate: path.duplicateRate,
                    medianSkewPPM: skews.isEmpty ? nil : skews[skews.count / 2])
    }
}
