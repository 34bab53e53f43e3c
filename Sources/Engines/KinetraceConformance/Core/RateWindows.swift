import KinetraceTrace

/// One message of a controller's stream for a rate judgement: when it was
/// sent or seen (in the series' ticks) and its position among all the
/// controller's messages, so an invalid or unstamped one still counts as sent.
package struct RateSample: Hashable, Sendable {
    package var time: UInt64
    package var ordinal: Int
    package init(time: UInt64, ordinal: Int) {
        self.time = time
        self.ordinal = ordinal
    }
}

/// One controller's rate samples, in two columns: 12 bytes a sample, where an array of
/// `RateSample` (padded to 16) would take a third more for every frame of a capture.
package struct RateSeries: RandomAccessCollection, Sendable {
    private var times: [UInt64] = []
    private var ordinals: [UInt32] = []
    package init() {}
    package var startIndex: Int { 0 }
    package var endIndex: Int { times.count }
    package subscript(i: Int) -> RateSample { RateSample(time: times[i], ordinal: Int(ordinals[i])) }
    package mutating func append(_ sample: RateSample) {
        times.append(sample.time)
        ordinals.append(UInt32(clamping: sample.ordinal))
    }
    package mutating func replaceLast(with sample: RateSample) {
        times[times.count - 1] = sample.time
        ordinals[ordinals.count - 1] = UInt32(clamping: sample.ordinal)
    }
}

/// The mean interval over every full window of each controller's stream
/// (10 s in every bundled protocol's rate requirements):
/// what the rate cases judge, whatever clock the times come from.
package struct RateWindows: Sendable {
    package struct Worst: Sendable {
        package var controller: Endpoint
        package var meanMs: Double
        /// Where the window starts, in the series' ticks.
        package var startTime: UInt64
    }

    /// Full windows judged, and full windows left out because they hold a lost message.
    package private(set) var windows = 0
    package private(set) var skipped = 0
    /// The smallest and largest mean interval of the judged windows, ms.
    package private(set) var meanMin = Double.infinity
    package private(set) var meanMax = -Double.infinity
    /// The window farthest from the nominal interval.
    package private(set) var worst: Worst?

    /// - Parameters:
    ///   - series: each controller's messages in order.
    ///   - nominalMs: the interval the rate is judged against.
    ///   - ticksPerMs: 1 for millisecond stamps, 1e6 for capture nanoseconds.
    ///   - detectLoss: leave out windows holding a gap over 1.5 × the usual interval (at most
    ///     300 ms at 10 Hz, the specs' loss): a lost datagram says nothing about the rate. Off for
    ///     streams, which lose nothing and whose records arrive several to a segment.
    package init(_ series: [Endpoint: [RateSample]], nominalMs: Double, ticksPerMs: Double, windowMs: Double = 10_000, detectLoss: Bool) {
        self.init(series, nominalMs: nominalMs, ticksPerMs: ticksPerMs, windowMs: windowMs, detectLoss: detectLoss) { $0 }
    }

    /// The same over each controller's `samples(messages)`.
    package init<Messages, Samples: RandomAccessCollection<RateSample>>(
        _ controllers: [Endpoint: Messages], nominalMs: Double, ticksPerMs: Double, windowMs: Double = 10_000,
        detectLoss: Bool, samples: (Messages) -> Samples) where Samples.Index == Int {
        let window = UInt64(windowMs * ticksPerMs)
        for (controller, messages) in controllers {
            let stamped = samples(messages)
            guard stamped.count > 1 else { continue }
            func interval(_ a: RateSample, _ b: RateSample) -> Double {
                Double(b.time &- a.time) / ticksPerMs / Double(max(1, b.ordinal - a.ordinal))
            }
            var lossGap = Double.infinity
            if detectLoss {
                let intervals = zip(stamped, stamped.dropFirst()).map { interval($0, $1) }.sorted()
                lossGap = Swift.min(300, 1.5 * intervals[intervals.count / 2])
            }
            var end = 0
            for start in stamped.indices {
                // Saturating: a stamp near 2^64 (hostile or wrapped) must not trap; stamps may arrive out of order.
                let (sum, overflow) = stamped[start].time.addingReportingOverflow(window)
                let windowEnd = overflow ? UInt64.max : sum
                while end + 1 < stamped.count && stamped[end + 1].time <= windowEnd { end += 1 }
                // Only full windows: the stream must run on past this one.
                guard end + 1 < stamped.count, end > start else { break }
                let slice = stamped[start...end]
                if detectLoss && zip(slice, slice.dropFirst()).contains(where: { interval($0, $1) > lossGap }) {
                    skipped += 1
                    continue
                }
                windows += 1
                let mean = interval(stamped[start], stamped[end])
                meanMin = Swift.min(meanMin, mean)
                meanMax = Swift.max(meanMax, mean)
                if abs(mean - nominalMs) > abs((worst?.meanMs ?? nominalMs) - nominalMs) {
                    worst = Worst(controller: controller, meanMs: mean, startTime: stamped[start].time)
                }
            }
        }
    }
}

extension RateWindows {
    /// INCONCLUSIVE when no full window could be judged, saying why (`message`: "frame" or
    /// "message"; `sends`: what a controller does for 10 s).
    func notJudged(_ info: CaseInfo, message: String, sends: String) -> CaseResult? {
        guard windows == 0 else { return nil }
        return CaseResult(info, .inconclusive(skipped > 0 ? "every full 10 s window holds a lost \(message) (a gap over 1.5 × the usual interval)"
                                                          : "no controller \(sends) for more than 10 s"),
                          measurements: [Measurement("windows_with_loss", Double(skipped))])
    }

    var measurements: [Measurement] {
        [Measurement("windows", Double(windows)), Measurement("windows_with_loss", Double(skipped)),
         Measurement("mean_interval_min", meanMin, "ms"), Measurement("mean_interval_max", meanMax, "ms")]
    }
}
