import Histogram

/// Streaming summary of durations (intervals, delays): exact count, mean,
/// min and max, and percentiles from an HDR histogram at microsecond
/// resolution, so memory stays constant however long the trace.
public struct DurationStatistics: Sendable {
    private var histogram = Histogram<UInt64>(highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: .four)
    public private(set) var count = 0
    private var sumNs: Double = 0
    public private(set) var minNs: Int64 = .max
    public private(set) var maxNs: Int64 = .min

    public init() { histogram.autoResize = true }

    public mutating func record(ns: Int64) {
        count += 1
        sumNs += Double(ns)
        minNs = min(minNs, ns)
        maxNs = max(maxNs, ns)
        _ = histogram.record(UInt64(max(0, ns / 1000)))
    }

    public var meanMs: Double? { count == 0 ? nil : sumNs / Double(count) / 1e6 }
    public var minMs: Double? { count == 0 ? nil : Double(minNs) / 1e6 }
    public var maxMs: Double? { count == 0 ? nil : Double(maxNs) / 1e6 }

    /// The value at `percentile` (0–100), in milliseconds, to the histogram's
    /// four significant digits.
    public func percentileMs(_ percentile: Double) -> Double? {
        count == 0 ? nil : Double(histogram.valueAtPercentile(percentile)) / 1000
    }
}
