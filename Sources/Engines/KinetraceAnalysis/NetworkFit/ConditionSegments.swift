#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How `network fit` splits a recording into spans whose conditions differ.
package enum SegmentPolicy: Hashable, Sendable {
    /// One span: the whole recording. (Change points are still looked for, and reported.)
    case whole
    /// Where the delay's level changes, by `ChangePoints.segment`.
    case changePoints
    /// Fixed spans of this many seconds from the first message.
    case every(seconds: Double)
}

/// Change points in a delay series: binary segmentation (Scott and Knott, 1974) with
/// Pettitt's rank test for one change in location (Applied Statistics 28(2), 1979) as the
/// test at each step.
///
/// Pettitt's statistic over x₁…xₙ with ranks rᵢ is Uₜ = 2·Σᵢ≤ₜ rᵢ − t(n + 1), the
/// Mann–Whitney statistic of the split after t; K = max |Uₜ| and, approximately,
/// p = 2·exp(−6K² / (n³ + n²)). A split is kept when p < `alpha` and the medians either side
/// differ by at least `minimumShiftMs` (so that a long recording does not split on shifts
/// too small to matter); each side is then searched again, up to `maximumSegments`.
/// It finds changes of level (a rate step, a route change), not of spread alone.
package enum ChangePoints {
    package static let alpha = 1e-3
    package static let maximumSegments = 32
    /// Each side of a split spans at least this long and holds at least `minimumSamples`.
    package static let minimumSpanS = 10.0
    package static let minimumSamples = 100

    package struct Split: Hashable, Sendable {
        /// The first index of the right side.
        package let index: Int
        package let pValue: Double
    }

    /// The best single split of `values` (in time order) with at least `minimumSide` values each side.
    package static func pettitt(_ values: ArraySlice<Double>, allowed: Range<Int>) -> Split? {
        let n = values.count
        guard n >= 2, !allowed.isEmpty else { return nil }
        let ranks = averageRanks(Array(values))
        var running = 0.0, best = -1.0, bestIndex = -1
        let base = values.startIndex
        for t in 1..<n {
            running += ranks[t - 1]
            let index = base + t
            guard allowed.contains(index) else { continue }
            let u = abs(2 * running - Double(t) * Double(n + 1))
            if u > best { best = u; bestIndex = index }
        }
        guard bestIndex >= 0 else { return nil }
        let nn = Double(n)
        let p = Swift.min(1, 2 * exp(-6 * best * best / (nn * nn * nn + nn * nn)))
        return Split(index: bestIndex, pValue: p)
    }

    /// Ranks 1…n, ties given their mean rank.
    static func averageRanks(_ x: [Double]) -> [Double] {
        let order = x.indices.sorted { x[$0] < x[$1] }
        var ranks = [Double](repeating: 0, count: x.count)
        var i = 0
        while i < order.count {
            var j = i
            while j + 1 < order.count && x[order[j + 1]] == x[order[i]] { j += 1 }
            let rank = Double(i + j) / 2 + 1
            for k in i...j { ranks[order[k]] = rank }
            i = j + 1
        }
        return ranks
    }

    /// The indices where new segments start (not 0), ascending. `values` and `timesS` are parallel, in time order.
    package static func segment(values: [Double], timesS: [Double], minimumShiftMs: Double) -> [Int] {
        guard values.count == timesS.count else { return [] }
        var starts: [Int] = []
        var pending = [0..<values.count]
        while let range = pending.popLast(), starts.count + 1 < maximumSegments {
            // The split index must leave both sides long enough in count and in time.
            guard range.count >= 2 * minimumSamples else { continue }
            let lowTime = timesS[range.lowerBound] + minimumSpanS, highTime = timesS[range.upperBound - 1] - minimumSpanS
            guard lowTime <= highTime else { continue }
            let first = Swift.max(range.lowerBound + minimumSamples, firstIndex(timesS, atLeast: lowTime, in: range))
            let last = Swift.min(range.upperBound - minimumSamples, firstIndex(timesS, atLeast: highTime, in: range))
            guard first < last, let split = pettitt(values[range], allowed: first..<(last + 1)), split.pValue < alpha else { continue }
            let left = median(values[range.lowerBound..<split.index]), right = median(values[split.index..<range.upperBound])
            guard abs(left - right) >= minimumShiftMs else { continue }
            starts.append(split.index)
            pending.append(range.lowerBound..<split.index)
            pending.append(split.index..<range.upperBound)
        }
        return starts.sorted()
    }

    static func firstIndex(_ sorted: [Double], atLeast value: Double, in range: Range<Int>) -> Int {
        var lo = range.lowerBound, hi = range.upperBound
        while lo < hi {
            let mid = (lo + hi) / 2
            if sorted[mid] < value { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    static func median(_ values: ArraySlice<Double>) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
    }
}

/// One span of a recording and the conditions in it.
package struct FittedSegment: Hashable, Sendable {
    package var startS: Double
    package var endS: Double
    package var samples: Int
    package var medianMs: Double
    /// The delay's 10th percentile and its distribution-free 95 % interval (order statistics).
    package var lowMs: Double
    package var lowInterval: ClosedRange<Double>
    package var messages: Int
    package var lost: Int
    package var lossInterval: ClosedRange<Double>
    /// How much slower than the fastest segment its lower delays are, ms, with a 95 % interval.
    package var shiftMs: Double = 0
    package var shiftInterval: ClosedRange<Double> = 0...0
    /// The link rate that delays a message of the recording's mean size by `shiftMs`, with its
    /// interval; nil for a segment no slower than the fastest.
    package var bitsPerS: Double?
    package var bitsPerSInterval: ClosedRange<Double>?
    /// Whether the rate from the shift is below what the senders offered: the link then
    /// queued, and `bitsPerS` is the throughput the recording shows instead.
    package var saturated = false
    /// Whether messages queued back to back, so the rate comes from their spacing (`dispersion`).
    package var queued = false

    package var lossRate: Double { messages == 0 ? 0 : Double(lost) / Double(messages) }
}

/// The recording's segments and the rate steps they imply.
package struct ConditionSegments: Sendable {
    /// The quantile each segment's level is read at: low enough that queueing behind a
    /// slower link (which lengthens the upper delays) does not move it.
    package static let levelP = 0.1
    /// The rate written for the fastest segments: its serialisation (0.6 µs for 78 bytes) is
    /// below any clock's resolution here; the recording cannot show that link's rate.
    package static let unlimitedBitsPerS = 1e9
    /// Shifts below this are not written as a rate: a clock's resolution is 1 ms at worst.
    package static let minimumShiftMs = 0.5

    package var segments: [FittedSegment]
    /// Segment starts found by `ChangePoints` (s), whether or not they were used.
    package var changePointsS: [Double]

    /// The written rate steps: (from s, bits/s), the first at 0; empty when no segment is slower.
    package var rateSteps: [(fromS: Double, bitsPerS: Double)] {
        guard segments.contains(where: { $0.bitsPerS != nil }) else { return [] }
        var steps: [(fromS: Double, bitsPerS: Double)] = []
        for (i, segment) in segments.enumerated() {
            let rate = segment.bitsPerS ?? Self.unlimitedBitsPerS
            // Tenths of a second from the first message; the first step starts at 0.
            let from = i == 0 ? 0 : (segment.startS * 10).rounded() / 10
            if let last = steps.last, last.bitsPerS == rate || from <= last.fromS { continue }
            steps.append((from, rate))
        }
        return steps
    }

    /// The delay shift of the segment holding time `s`.
    package func shiftMs(atS s: Double) -> Double {
        var shift = 0.0
        for segment in segments where segment.startS <= s { shift = segment.bitsPerS == nil ? 0 : segment.shiftMs }
        return shift
    }

    /// Splits `delays` (with `timesS`, in time order) and `lossTimesS`/`lost` by `starts` and
    /// measures each segment. `messageBits` is a message's size on the link, headers counted.
    /// `arrivalsS` (parallel to the delays) are when each message reached the recorder: the
    /// spacing of messages that queued back to back is the link's serialisation time.
    package static func measure(delaysMs: [Double], timesS: [Double], arrivalsS: [Double], lost: [Bool], lossTimesS: [Double], boundariesS: [Double],
                                spanS: (start: Double, end: Double), messageBits: Double, changePointsS: [Double]) -> ConditionSegments {
        let edges = [spanS.start] + boundariesS + [spanS.end]
        // One pass each: the segment of a time is found by binary search over the edges.
        func segmentOf(_ t: Double) -> Int {
            var lo = 0, hi = edges.count - 2
            while lo < hi {
                let mid = (lo + hi + 1) / 2
                if edges[mid] <= t { lo = mid } else { hi = mid - 1 }
            }
            return lo
        }
        var delaysBySegment = [[Double]](repeating: [], count: edges.count - 1)
        var arrivalsBySegment = delaysBySegment
        for (i, (d, t)) in zip(delaysMs, timesS).enumerated() {
            let k = segmentOf(t)
            delaysBySegment[k].append(d)
            if i < arrivalsS.count { arrivalsBySegment[k].append(arrivalsS[i]) }
        }
        var messages = [Int](repeating: 0, count: edges.count - 1), lostCounts = messages
        for (isLost, t) in zip(lost, lossTimesS) {
            let k = segmentOf(t)
            messages[k] += 1
            if isLost { lostCounts[k] += 1 }
        }
        var segments: [FittedSegment] = []
        var arrivalsOf: [[Double]] = []
        for k in 0..<(edges.count - 1) {
            let d = delaysBySegment[k].sorted()
            guard !d.isEmpty else { continue }
            arrivalsOf.append(arrivalsBySegment[k])
            let low = orderStatistic(d, p: levelP)
            segments.append(FittedSegment(startS: edges[k], endS: edges[k + 1], samples: d.count, medianMs: d[d.count / 2], lowMs: low.value,
                                          lowInterval: low.interval, messages: messages[k], lost: lostCounts[k],
                                          lossInterval: messages[k] == 0 ? 0...1 : LossFit.wilson(successes: lostCounts[k], trials: messages[k], z: LossFit.z95)))
        }
        guard let reference = segments.indices.min(by: { segments[$0].lowMs < segments[$1].lowMs }) else {
            return ConditionSegments(segments: segments, changePointsS: changePointsS)
        }
        let r = segments[reference]
        for i in segments.indices where i != reference {
            let shift = segments[i].lowMs - r.lowMs
            let interval = Swift.max(0, segments[i].lowInterval.lowerBound - r.lowInterval.upperBound)...(segments[i].lowInterval.upperBound - r.lowInterval.lowerBound)
            segments[i].shiftMs = shift
            segments[i].shiftInterval = interval
            // A rate only where the shift is clear of zero and of the clock's resolution.
            guard interval.lowerBound > 0, shift >= minimumShiftMs, messageBits > 0 else { continue }
            var serialisationMs = shift, serialisationInterval = interval
            if let pairs = dispersion(arrivalsS: arrivalsOf[i], belowMs: shift * 1.05, samples: segments[i].samples), pairs.ms < shift {
                // Messages that queued behind each other: their level overstates the rate's delay, their spacing does not.
                serialisationMs = pairs.ms
                serialisationInterval = pairs.interval
                segments[i].queued = true
            }
            var rate = messageBits / (serialisationMs / 1000)
            var rateInterval = (messageBits / (serialisationInterval.upperBound / 1000))...(messageBits / (Swift.max(serialisationInterval.lowerBound, 1e-6) / 1000))
            let duration = segments[i].endS - segments[i].startS
            let offered = duration > 0 ? Double(segments[i].messages) * messageBits / duration : 0
            if rate < offered {
                // A link slower than its load queues without end: it delivers at its rate, so the throughput is the rate.
                segments[i].saturated = true
                rate = Double(segments[i].samples) * messageBits / duration
                rateInterval = rate...rate
            }
            segments[i].bitsPerS = rate
            segments[i].bitsPerSInterval = rateInterval
        }
        return ConditionSegments(segments: segments, changePointsS: changePointsS)
    }

    /// Packet-pair dispersion (Keshav, SIGCOMM 1991; Dovrolis, Ramanathan and Moore, INFOCOM
    /// 2001): two messages that leave a link back to back arrive one serialisation time apart,
    /// never closer. Among the gaps between consecutive arrivals below `belowMs`, the densest
    /// window (width 1 % of the gap, at least 20 µs) holds the queued pairs; its median is the
    /// serialisation time and its extremes the interval. Nil when fewer than 10 gaps, or under
    /// 1 % of the segment's messages, fall in it: too few queued to tell from chance spacing.
    static func dispersion(arrivalsS: [Double], belowMs: Double, samples: Int) -> (ms: Double, interval: ClosedRange<Double>)? {
        let sorted = arrivalsS.sorted()
        guard sorted.count > 1, belowMs > 0 else { return nil }
        var gaps: [Double] = []
        for (a, b) in zip(sorted, sorted.dropFirst()) {
            let gapMs = (b - a) * 1000
            if gapMs > belowMs / 2 && gapMs <= belowMs { gaps.append(gapMs) }
        }
        gaps.sort()
        var best = 0..<0, lo = 0
        for hi in gaps.indices {
            while gaps[hi] - gaps[lo] > Swift.max(0.02, 0.01 * gaps[hi]) { lo += 1 }
            if hi + 1 - lo > best.count { best = lo..<(hi + 1) }
        }
        guard best.count >= 10, Double(best.count) >= 0.01 * Double(samples) else { return nil }
        let window = gaps[best]
        return (window[window.startIndex + window.count / 2], window.first!...window.last!)
    }

    /// The p-quantile of ascending `x` (lower order statistic) and its 95 % interval: the order
    /// statistics at n·p ± 1.96·√(n·p·(1 − p)).
    static func orderStatistic(_ x: [Double], p: Double) -> (value: Double, interval: ClosedRange<Double>) {
        let n = Double(x.count)
        let centre = Swift.min(x.count - 1, Int((n * p).rounded(.down)))
        let half = LossFit.z95 * (n * p * (1 - p)).squareRoot()
        let lo = Swift.max(0, Int((n * p - half).rounded(.down))), hi = Swift.min(x.count - 1, Int((n * p + half).rounded(.up)))
        return (x[centre], x[lo]...x[hi])
    }
}
