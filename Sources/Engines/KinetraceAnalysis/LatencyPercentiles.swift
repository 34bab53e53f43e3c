import Histogram

/// Percentiles of a latency series kept in an HDR histogram at nanosecond
/// resolution and three significant digits, so they cost constant memory
/// however long the capture.
///
/// Relative latencies are negative as often as positive, and an HDR histogram
/// holds only non-negative integers: values are recorded as their distance
/// above `originNs`, which the caller chooses at or below the smallest
/// sample. Three significant digits therefore apply to that distance.
public struct LatencyPercentiles: Sendable {
    public let originNs: Int64
    private var histogram = Histogram<UInt64>(highestTrackableValue: 1 << 34, numberOfSignificantValueDigits: .three)
    public private(set) var count = 0
    /// Samples below the origin, clamped to it (never when the origin is the minimum).
    public private(set) var clampedBelow = 0

    public init(originNs: Int64) {
        self.originNs = originNs
        histogram.autoResize = true
    }

    public mutating func record(ns: Int64) {
        count += 1
        let (distance, overflow) = ns.subtractingReportingOverflow(originNs)
        if distance < 0 || overflow { clampedBelow += 1 }
        _ = histogram.record(overflow || distance < 0 ? 0 : UInt64(distance))
    }

    /// The value in ms at `percentile` (0–100): the nearest-rank sample's
    /// histogram bucket, reported at the bucket's middle so the error is at
    /// most half a bucket either way. nil when empty.
    public func ms(at percentile: Double) -> Double? {
        guard count > 0 else { return nil }
        let bucket = histogram.valueAtPercentile(percentile)
        let middle = histogram.medianEquivalentForValue(bucket)
        return (Double(originNs) + Double(middle)) / 1e6
    }

    /// The largest error `ms(at:)` may have for a value of about `ms`, from
    /// the bucket width there (half a bucket).
    public func resolutionMs(near ms: Double) -> Double {
        // Below 2^64: samples lie within Int64 of the origin, and a wild `ms` must not trap.
        let distance = min(max(0, ms * 1e6 - Double(originNs)), 0x1p64 - 4096)
        return Double(histogram.sizeOfEquivalentRangeForValue(UInt64(distance.rounded()))) / 2e6
    }

    /// The four percentiles `kinetrace latency` reports.
    public static let reported: [Double] = [50, 90, 99, 99.9]
}
