import Histogram

/// Percentiles of a latency series as an HDR histogram at nanosecond resolution
/// and three significant digits gives them: the nearest-rank sample's bucket,
/// reported at the bucket's middle, so the error is at most half a bucket
/// (under 1/2048 of the value's distance above `originNs`, and under 1 ns
/// below 2,048 ns).
///
/// They are taken from the series itself, which `kinetrace latency` holds
/// anyway, and only the figures are kept: a histogram's counts (200 KB at this
/// range and precision) for each controller and measure did not fit a hundred
/// thousand controllers. The buckets are the histogram's, so the figures are
/// the ones a histogram of the series reports.
///
/// Relative latencies are negative as often as positive, and an HDR bucket
/// holds only non-negative integers: values are measured as their distance
/// above `originNs`, which the caller chooses at or below the smallest
/// sample. Three significant digits therefore apply to that distance.
package struct LatencyPercentiles: Sendable {
    package let originNs: Int64
    package let count: Int
    /// Samples below the origin, counted at it (never when the origin is the minimum).
    package let clampedBelow: Int
    /// Each percentile asked for, with its value in ms.
    package let values: [(percentile: Double, ms: Double)]

    /// The bucket arithmetic of a three-digit HDR histogram; its counts are never used (so they are tiny).
    private static let buckets = Histogram<UInt8>(highestTrackableValue: 4096, numberOfSignificantValueDigits: .three)

    /// The percentiles (0–100) of `samplesNs`, in any order.
    package init(originNs: Int64, samplesNs: [Int64], percentiles: [Double] = reported) {
        self.originNs = originNs
        count = samplesNs.count
        var below = 0
        var distances = samplesNs.map { ns -> UInt64 in
            let (distance, overflow) = ns.subtractingReportingOverflow(originNs)
            if distance < 0 || overflow { below += 1 }
            return overflow || distance < 0 ? 0 : UInt64(distance)
        }
        clampedBelow = below
        distances.sort()
        let n = distances.count
        values = n == 0 ? [] : percentiles.map { percentile in
            // The histogram's nearest rank: one ulp below the percentile, rounded up, at least the first sample.
            let rank = percentile >= 100 ? n : min(n, max(1, Int((max(percentile.nextDown, 0) * Double(n) / 100).rounded(.up))))
            let middle = Self.buckets.medianEquivalentForValue(distances[rank - 1])
            return (percentile, (Double(originNs) + Double(middle)) / 1e6)
        }
    }

    /// The value in ms at `percentile`, if it is one of those computed.
    package func ms(at percentile: Double) -> Double? {
        values.first { $0.percentile == percentile }?.ms
    }

    /// The largest error `ms(at:)` may have for a value of about `ms`, from
    /// the bucket width there (half a bucket).
    package func resolutionMs(near ms: Double) -> Double {
        // Below 2^64: samples lie within Int64 of the origin, and a wild `ms` must not trap.
        let distance = min(max(0, ms * 1e6 - Double(originNs)), 0x1p64 - 4096)
        return Double(Self.buckets.sizeOfEquivalentRangeForValue(UInt64(distance.rounded()))) / 2e6
    }

    /// The four percentiles `kinetrace latency` reports.
    package static let reported: [Double] = [50, 90, 99, 99.9]
}
