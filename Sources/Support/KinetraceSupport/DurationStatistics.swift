import Histogram

/// Streaming summary of durations (intervals, delays): exact count, mean,
/// min and max, and percentiles at microsecond resolution, so memory stays
/// constant however long the trace.
///
/// Two kinds, by how many are kept:
/// - one for a whole trace or run (`init()`): an HDR histogram, exact to three
///   significant digits (about 60 KB for values up to 10 s, 9 KB at two digits;
///   it grows for longer ones, and is made on the first value);
/// - one per controller (`perController`), of which a trace may hold a hundred
///   thousand: a `DurationSketch`, exact for the first 64 values and within 1 %
///   past them, in at most 4 KiB of counts (a few hundred bytes for a few values).
/// Either way a percentile is then rounded to three significant digits (up to
/// 0.5 % more).
package struct DurationStatistics: Sendable {
    /// HDR histograms are exact to this many significant digits (the default).
    package static let significantDigits = 3
    /// The histogram starts as a copy of an empty template that shares its counts: the
    /// counts are copied, as one block, on the first value (copy on write); making a
    /// histogram fills its counts one value at a time through generic code (300 µs).
    /// nil for statistics kept per controller, which use `sketch` instead. Boxed (and copied
    /// on write): inline, the histogram's fields would make every value of this type, those
    /// kept per controller included, 120 bytes larger.
    @usableFromInline var box: HistogramBox?
    @usableFromInline var sketch: DurationSketch?
    @usableFromInline var recordedCount = 0
    @usableFromInline var sumNs: Double = 0
    @usableFromInline var smallestNs: Int64 = .max
    @usableFromInline var largestNs: Int64 = .min
    package var count: Int { recordedCount }
    package var minNs: Int64 { smallestNs }
    package var maxNs: Int64 { largestNs }

    /// Significant digits of the percentiles: 3, or 2 for statistics kept per
    /// controller by the ten thousand (a seventh of the memory).
    package let digits: Int

    /// `significantDigits` is 3 or 2 (anything else is taken as 3).
    package init(significantDigits: Int = 3) {
        digits = significantDigits == 2 ? 2 : 3
        box = HistogramBox(digits == 2 ? Self.twoDigits : Self.threeDigits)
    }

    /// Statistics kept for each of many controllers: a few kilobytes at most (`DurationSketch`).
    package static var perController: DurationStatistics { DurationStatistics(sketch: DurationSketch()) }

    private init(sketch: DurationSketch) {
        digits = 3
        box = nil
        self.sketch = sketch
    }

    /// Whether percentiles come from a `DurationSketch` (per controller) rather than an HDR histogram.
    package var isPerController: Bool { sketch != nil }

    /// Bytes allocated for the percentiles of statistics kept per controller (nil for a histogram's).
    package var sketchBytes: Int? { sketch?.allocatedBytes }

    private static let threeDigits = template(.three)
    private static let twoDigits = template(.two)

    private static func template(_ digits: SignificantDigits) -> Histogram<UInt32> {
        var histogram = Histogram<UInt32>(highestTrackableValue: 10_000_000, numberOfSignificantValueDigits: digits)
        histogram.autoResize = true
        return histogram
    }

    // Inlinable: readers record a few intervals per message, and a call across modules costs more than the recording.
    @inlinable
    package mutating func record(ns: Int64) {
        recordedCount += 1
        sumNs += Double(ns)
        smallestNs = min(smallestNs, ns)
        largestNs = max(largestNs, ns)
        let micros = UInt64(max(0, ns / 1000))
        if sketch != nil {
            sketch!.record(micros)
        } else {
            if !isKnownUniquelyReferenced(&box) { box = HistogramBox(box!.histogram) }
            _ = box!.histogram.record(micros)
        }
    }

    package var meanMs: Double? { count == 0 ? nil : sumNs / Double(count) / 1e6 }
    package var minMs: Double? { count == 0 ? nil : Double(minNs) / 1e6 }
    package var maxMs: Double? { count == 0 ? nil : Double(maxNs) / 1e6 }

    /// The value at `percentile` (0–100) in milliseconds, rounded to the
    /// histogram's significant digits: the histogram reports the top of a
    /// bucket (100.031 for 100), and digits past its precision are noise.
    /// Per controller: the sketch's nearest-rank value (within 1 %), rounded alike.
    package func percentileMs(_ percentile: Double) -> Double? {
        guard count > 0 else { return nil }
        let micros = sketch?.value(atPercentile: percentile) ?? Double(box!.histogram.valueAtPercentile(percentile))
        let exact = digits == 2 ? 100.0 : 1000.0
        let rounded: Double
        if micros < exact {
            rounded = micros / 1000
        } else {
            var scale = 1.0
            while micros / scale >= exact { scale *= 10 }
            rounded = (micros / scale).rounded() * scale / 1000
        }
        // A bucket's top, rounded, can pass the largest value recorded (p99 "1.07" above a max of 1.061):
        // a percentile never lies outside what was seen.
        return Swift.min(Swift.max(rounded, minMs!), maxMs!)
    }
}

/// A histogram held by reference, for `DurationStatistics` to copy on write.
@usableFromInline
final class HistogramBox: @unchecked Sendable {  // mutated only when uniquely referenced (`DurationStatistics.record`)
    @usableFromInline var histogram: Histogram<UInt32>
    @usableFromInline init(_ histogram: Histogram<UInt32>) { self.histogram = histogram }
}
