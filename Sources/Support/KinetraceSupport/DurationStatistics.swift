import Histogram

/// Streaming summary of durations (intervals, delays): exact count, mean,
/// min and max, and percentiles from an HDR histogram at microsecond
/// resolution, so memory stays constant however long the trace (about
/// 45 KB per instance for values up to 10 s; it grows for longer ones).
public struct DurationStatistics: Sendable {
    /// HDR histograms are exact to this many significant digits.
    public static let significantDigits = 3
    @usableFromInline var histogram = Histogram<UInt32>(highestTrackableValue: 10_000_000, numberOfSignificantValueDigits: .three)
    @usableFromInline var recordedCount = 0
    @usableFromInline var sumNs: Double = 0
    @usableFromInline var smallestNs: Int64 = .max
    @usableFromInline var largestNs: Int64 = .min
    public var count: Int { recordedCount }
    public var minNs: Int64 { smallestNs }
    public var maxNs: Int64 { largestNs }

    public init() { histogram.autoResize = true }

    // Inlinable: readers record a few intervals per message, and a call across modules costs more than the recording.
    @inlinable
    public mutating func record(ns: Int64) {
        recordedCount += 1
        sumNs += Double(ns)
        smallestNs = min(smallestNs, ns)
        largestNs = max(largestNs, ns)
        _ = histogram.record(UInt64(max(0, ns / 1000)))
    }

    public var meanMs: Double? { count == 0 ? nil : sumNs / Double(count) / 1e6 }
    public var minMs: Double? { count == 0 ? nil : Double(minNs) / 1e6 }
    public var maxMs: Double? { count == 0 ? nil : Double(maxNs) / 1e6 }

    /// The value at `percentile` (0–100) in milliseconds, rounded to the
    /// histogram's three significant digits: the histogram reports the top
    /// of a bucket (100.031 for 100), and digits past its precision are noise.
    public func percentileMs(_ percentile: Double) -> Double? {
        guard count > 0 else { return nil }
        let micros = Double(histogram.valueAtPercentile(percentile))
        let rounded: Double
        if micros < 1000 {
            rounded = micros / 1000
        } else {
            var scale = 1.0
            while micros / scale >= 1000 { scale *= 10 }
            rounded = (micros / scale).rounded() * scale / 1000
        }
        // A bucket's top, rounded, can pass the largest value recorded (p99 "1.07" above a max of 1.061):
        // a percentile never lies outside what was seen.
        return Swift.min(Swift.max(rounded, minMs!), maxMs!)
    }
}
