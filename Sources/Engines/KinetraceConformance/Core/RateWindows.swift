import KinetraceTrace

/// One message of a controller's stream for a rate judgement: when it was
/// sent or seen (in the series' ticks) and its position among all the
/// controller's messages, so an invalid or unstamped one still counts as sent.
public struct RateSample: Hashable, Sendable {
    public var time: UInt64
    public var ordinal: Int
    public init(time: UInt64, ordinal: Int) {
        self.time = time
        self.ordinal = ordinal
    }
}

/// The mean interval over every full window of each controller's stream
/// (10 s in MotionLink's ML-RATE-3 and the protocols that share its bands):
/// what the rate cases judge, whatever clock the times come from.
public struct RateWindows: Sendable {
    public struct Worst: Sendable {
        public var controller: Endpoint
        public var meanMs: Double
        /// Where the window starts, in the series' ticks.
        public var startTime: UInt64
    }

    /// Full windows judged, and full windows left out because they hold a lost message.
    public private(set) var windows = 0
    public private(set) var skipped = 0
    /// Each judged window's mean interval, ms, sorted.
    public private(set) var means: [Double] = []
    /// The window farthest from the nominal interval.
    public private(set) var worst: Worst?

    /// - Parameters:
    ///   - series: each controller's messages in order.
    ///   - nominalMs: the interval the rate is judged against.
    ///   - ticksPerMs: 1 for millisecond stamps, 1e6 for capture nanoseconds.
    ///   - detectLoss: leave out windows holding a gap over 1.5 × the usual interval (at most
    ///     300 ms, ML-RATE-4's loss): a lost datagram says nothing about the rate. Off for
    ///     streams, which lose nothing and whose records arrive several to a segment.
    public init(_ series: [Endpoint: [RateSample]], nominalMs: Double, ticksPerMs: Double, windowMs: Double = 10_000, detectLoss: Bool) {
        self.init(series, nominalMs: nominalMs, ticksPerMs: ticksPerMs, windowMs: windowMs, detectLoss: detectLoss) { $0 }
    }

    /// The same, making each controller's samples only when its turn comes (`samples`), so only
    /// one controller's are in memory at a time: a capture may hold millions of messages.
    public init<Messages>(_ controllers: [Endpoint: Messages], nominalMs: Double, ticksPerMs: Double, windowMs: Double = 10_000,
                          detectLoss: Bool, samples: (Messages) -> [RateSample]) {
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
                means.append(mean)
                if abs(mean - nominalMs) > abs((worst?.meanMs ?? nominalMs) - nominalMs) {
                    worst = Worst(controller: controller, meanMs: mean, startTime: stamped[start].time)
                }
            }
        }
        means.sort()
    }
}
