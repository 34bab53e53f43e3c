import KinetraceTrace
import KinetraceWire

/// A latency `kinetrace latency` measures. Which ones a trace can give
/// depends on where it was recorded (its header's `capture_point`).
package enum LatencyMeasure: String, CaseIterable, Hashable, Sendable {
    /// Every valid sample: capture time − its sender time. One-way only when the two clocks agree.
    case oneWayRaw = "one_way_raw"
    /// The paper's clock-free method: raw minus the median, plus `baseMs`.
    case oneWayRelative = "one_way_relative"
    /// Every valid reply: capture time − the sender time it echoes (the h2c direction).
    case replyEchoRaw = "reply_echo_raw"
    case replyEchoRelative = "reply_echo_relative"
    /// Frame sent → its reply received, on the controller's clock only.
    case replyRoundTrip = "reply_rtt"
    /// Frame seen → its reply seen, on a host's or a capture's clock.
    case replyTurnaround = "reply_turnaround"
    /// Two recordings joined (`LatencyJoin`): a frame's send at the controller → its receipt at the host.
    case joinedOneWay = "one_way_joined"
    /// Two recordings joined: a reply's send at the host → its receipt at the controller.
    case joinedReplyOneWay = "reply_one_way_joined"
    /// Protocols without a sender clock: capture time since the controller's previous valid message.
    case arrivalInterval = "arrival_interval"
    /// RFC 3550's interarrival jitter estimate after each message, with the protocol's
    /// nominal period standing in for the sender's spacing (no sender clock to read it from).
    case interarrivalJitter = "interarrival_jitter"

    package var title: String {
        switch self {
        case .oneWayRaw: return "One-way latency, raw (c2h samples: t_receive − sender time)"
        case .oneWayRelative: return "One-way latency, relative (raw − median)"
        case .replyEchoRaw: return "Reply latency, raw (h2c replies: t_receive − echoed sender time)"
        case .replyEchoRelative: return "Reply latency, relative (raw − median)"
        case .replyRoundTrip: return "Reply round trip on the controller's clock"
        case .replyTurnaround: return "Reply turnaround on the capture clock (frame seen → its reply seen)"
        case .joinedOneWay: return "One-way latency, c2h, joined (controller send → host receive)"
        case .joinedReplyOneWay: return "One-way latency, h2c, joined (host reply send → controller receive)"
        case .arrivalInterval: return "Arrival interval (c2h messages: t_receive − the previous one's, per controller)"
        case .interarrivalJitter: return "Interarrival jitter, RFC 3550 estimate (nominal period as the sender's spacing)"
        }
    }

    /// A few words, for plot titles.
    package var shortTitle: String {
        switch self {
        case .oneWayRaw: return "one-way latency (raw)"
        case .oneWayRelative: return "one-way latency (relative)"
        case .replyEchoRaw: return "reply latency (raw)"
        case .replyEchoRelative: return "reply latency (relative)"
        case .replyRoundTrip: return "reply round trip"
        case .replyTurnaround: return "reply turnaround"
        case .joinedOneWay: return "one-way latency, c2h (joined)"
        case .joinedReplyOneWay: return "one-way latency, h2c (joined)"
        case .arrivalInterval: return "arrival interval"
        case .interarrivalJitter: return "interarrival jitter"
        }
    }

    /// What a sample is: a frame (c2h measures) or a reply.
    package var sampleNoun: String {
        switch self {
        case .oneWayRaw, .oneWayRelative, .joinedOneWay: return "frame"
        case .arrivalInterval, .interarrivalJitter: return "message"
        default: return "reply"
        }
    }

    package var isRelative: Bool { self == .oneWayRelative || self == .replyEchoRelative }

    /// What the numbers mean at a capture point, in one sentence.
    /// What the measure means in a trace with this header: a replay's record with wallclock stamps
    /// says where the emulated network's delay is.
    package func meaning(in header: TraceHeader) -> String {
        guard header.capturePoint == .controller, let replay = header.replay, replay.stampsOnRecorderClock else {
            return meaning(at: header.capturePoint)
        }
        let network = replay.network.map { "the \($0) network's" } ?? "the emulated"
        switch self {
        case .oneWayRaw:
            return "A replay's stamp (each frame's scheduled departure, --timestamps wallclock) to its actual send: \(network) delay, as emulated."
        case .replyEchoRaw:
            return "A frame's scheduled departure to its reply's receipt: the round trip including \(network) delay (one way: replies are not delayed)."
        case .replyRoundTrip:
            return "A frame's actual send, after \(network) delay, to its reply's receipt: the host and the real path only; reply latency raw includes the emulated delay."
        default:
            return meaning(at: header.capturePoint)
        }
    }

    package func meaning(at point: CapturePoint) -> String {
        switch (self, point) {
        case (.arrivalInterval, _):
            return "Time between successive valid messages of one controller on the recorder's clock: the sender's rate as delivered, with the network's variation on top; messages that arrive together (one read of a stream) are 0 apart."
        case (.interarrivalJitter, _):
            return "J += (|D| − J)/16 after each message, D being its arrival interval minus the nominal period (RFC 3550, 6.4.1, without sender timestamps): the smoothed variation of the spacing; the last value per controller is RFC 3550's figure."
        case (.joinedOneWay, _):
            return "Each frame's send in the controller's trace to its receipt in the host's trace: the true one-way latency when the two recorders share a clock (one machine) or synchronised clocks."
        case (.joinedReplyOneWay, _):
            return "Each reply's send in the host's trace to its receipt in the controller's trace, on the same condition."
        case (.oneWayRaw, .host):
            return "Controller stamp to host receive: the true one-way latency when the controller's clock is the host's (loopback) or synchronised to it."
        case (.oneWayRaw, .network):
            return "Controller stamp to the packet capture: one-way to the capture point when the controller's clock is the capture machine's or synchronised to it."
        case (.oneWayRaw, .controller):
            return "Controller stamp to send, on the controller's own clock: the sender's delay, not the network's (a replay's stamps may be the original session's)."
        case (.oneWayRaw, .synthetic):
            return "Model send stamp to model arrival: the latency the model drew."
        case (.oneWayRaw, _):
            return "Capture time minus the frame's stamp; meaningful only when the clocks agree."
        case (.oneWayRelative, _), (.replyEchoRelative, _):
            return "Raw minus its median, so clock offsets and the constant part of the latency cancel; what remains is the variation (plus --base-ms)."
        case (.replyEchoRaw, .controller):
            return "Frame stamp to reply receive on the controller's clock: the round trip plus the sender's delay, at the sender clock's 1 ms resolution."
        case (.replyEchoRaw, .host):
            return "Frame stamp to reply send at the host: one-way latency plus host processing, when the clocks agree."
        case (.replyEchoRaw, _):
            return "Capture time of the reply minus the stamp of the frame it echoes; meaningful only when the clocks agree."
        case (.replyRoundTrip, _):
            return "The controller's send of a frame to its receipt of the reply, both on the controller's clock."
        case (.replyTurnaround, .host):
            return "Host receive of a frame to host send of its reply: the host's processing time."
        case (.replyTurnaround, .network):
            return "Frame to reply at the capture point: the round trip seen from there (the host's response time when captured beside the host)."
        case (.replyTurnaround, _):
            return "Frame seen to its reply seen, on the capture clock."
        }
    }
}

/// One latency sample: which controller (index into `LatencyAnalysis.controllers`),
/// which of that controller's frames or replies it is, when it was seen, and the value.
package struct LatencySample: Hashable, Sendable {
    package var controller: Int
    package var ordinal: Int
    package var timeNs: Int64
    package var ms: Double
}

/// How the relative measures take their median.
package enum MedianScope: String, CaseIterable, Sendable {
    /// Each controller's own median: each phone has its own clock offset.
    case controller
    /// One median over all controllers, as the paper did with one device.
    case dataset
}

package struct LatencyOptions: Hashable, Sendable {
    /// Outlier removal keeps samples within this many σ of the mean (the paper's 3); 0 keeps all.
    package var sigmas: Double = 3
    package var medianScope: MedianScope = .controller
    /// Added to relative latencies, to compare with a published table.
    package var baseMs: Double = 0
    package init(sigmas: Double = 3, medianScope: MedianScope = .controller, baseMs: Double = 0) {
        self.sigmas = sigmas
        self.medianScope = medianScope
        self.baseMs = baseMs
    }
}

/// Gathers latency samples from a trace one record at a time.
package struct LatencyCollector {
    package let header: TraceHeader
    package private(set) var controllers: [Endpoint] = []
    private var controllerIndex: [Endpoint: Int] = [:]
    private var frameCount: [Int] = []
    private var replyCount: [Int] = []
    /// When each controller's recent samples were seen, by sender time, to pair replies with them.
    private var seenFrames: [[UInt64: Int64]] = []
    /// The size at which a controller's `seenFrames` is next pruned; it doubles past what a prune keeps, so pruning stays amortised O(1).
    private var pruneAt: [Int] = []
    private var oneWay: [LatencySample] = []
    private var replyEcho: [LatencySample] = []
    private var roundTrips: [LatencySample] = []
    private var turnarounds: [LatencySample] = []
    package private(set) var invalidMessages = 0
    package private(set) var unpairedReplies = 0
    /// Valid messages whose stamp is too far from the capture time to subtract in nanoseconds.
    package private(set) var unusableStamps = 0

    /// Frames older than this on the capture clock are forgotten: no reply is that late.
    static let pairingWindowNs: Int64 = 60_000_000_000

    package let wireProtocol: any WireProtocol
    /// Without a sender clock, what can be measured is when messages arrive.
    private let hasSenderClock: Bool
    private let hasReplies: Bool
    private let nominalPeriodMs: Double
    private var lastArrivalNs: [Int64?] = []
    private var jitterMs: [Double] = []
    private var arrivalIntervals: [LatencySample] = []
    private var jitters: [LatencySample] = []

    package init(header: TraceHeader, wireProtocol: any WireProtocol) {
        self.header = header
        self.wireProtocol = wireProtocol
        hasSenderClock = ProtocolTraits.hasSenderClock(wireProtocol)
        hasReplies = ProtocolTraits.hasReplies(wireProtocol)
        nominalPeriodMs = 1000 / wireProtocol.nominalRateHz
    }

    package mutating func add(_ record: TraceRecord) {
        guard case .message(let message) = record else { return }
        let facts = message.facts(wireProtocol)
        guard facts.isValid, facts.direction == message.direction else {
            invalidMessages += 1
            return
        }
        let c = index(of: message.controller)
        switch message.direction {
        case .controllerToHost:
            frameCount[c] += 1
            if !hasSenderClock { return addArrival(of: c, at: message.timeNs) }
            guard let senderTimeMs = facts.senderTimeMs else {
                unusableStamps += 1
                return
            }
            if let raw = Self.sinceStamp(message.timeNs, senderTimeMs) {
                oneWay.append(LatencySample(controller: c, ordinal: frameCount[c], timeNs: message.timeNs, ms: raw))
            } else {
                unusableStamps += 1
            }
            // The first sighting counts: a duplicate is not the frame the host answered.
            if seenFrames[c][senderTimeMs] == nil { seenFrames[c][senderTimeMs] = message.timeNs }
            if seenFrames[c].count > pruneAt[c] { forgetOldFrames(of: c, now: message.timeNs) }
        case .hostToController:
            replyCount[c] += 1
            guard let echo = facts.echoTimeMs else {
                unusableStamps += 1
                return
            }
            if let raw = Self.sinceStamp(message.timeNs, echo) {
                replyEcho.append(LatencySample(controller: c, ordinal: replyCount[c], timeNs: message.timeNs, ms: raw))
            } else {
                unusableStamps += 1
            }
            // Pruning is lazy; the window is applied exactly here.
            let frameSeenNs = seenFrames[c][echo].flatMap { message.timeNs - $0 <= Self.pairingWindowNs ? $0 : nil }
            if frameSeenNs == nil { unpairedReplies += 1 }
            if let rtt = message.rttNs {
                roundTrips.append(LatencySample(controller: c, ordinal: replyCount[c], timeNs: message.timeNs, ms: Double(rtt) / 1e6))
            } else if let frameSeenNs {
                let sample = LatencySample(controller: c, ordinal: replyCount[c], timeNs: message.timeNs,
                                           ms: Double(message.timeNs - frameSeenNs) / 1e6)
                if header.capturePoint == .controller { roundTrips.append(sample) } else { turnarounds.append(sample) }
            }
        }
    }

    /// The interval since the controller's previous message, and RFC 3550's jitter after it.
    private mutating func addArrival(of c: Int, at timeNs: Int64) {
        defer { lastArrivalNs[c] = timeNs }
        guard let previous = lastArrivalNs[c] else { return }
        let (difference, overflow) = timeNs.subtractingReportingOverflow(previous)
        guard !overflow else { return unusableStamps += 1 }
        let intervalMs = Double(difference) / 1e6
        arrivalIntervals.append(LatencySample(controller: c, ordinal: frameCount[c], timeNs: timeNs, ms: intervalMs))
        jitterMs[c] += (abs(intervalMs - nominalPeriodMs) - jitterMs[c]) / 16
        jitters.append(LatencySample(controller: c, ordinal: frameCount[c], timeNs: timeNs, ms: jitterMs[c]))
    }

    /// Capture time minus a millisecond stamp, in ms; exact in integers until the final division.
    static func sinceStamp(_ timeNs: Int64, _ senderTimeMs: UInt64) -> Double? {
        guard senderTimeMs <= UInt64(Int64.max / 1_000_000) else { return nil }
        let (difference, overflow) = timeNs.subtractingReportingOverflow(Int64(senderTimeMs) * 1_000_000)
        return overflow ? nil : Double(difference) / 1e6
    }

    private mutating func index(of endpoint: Endpoint) -> Int {
        if let c = controllerIndex[endpoint] { return c }
        controllerIndex[endpoint] = controllers.count
        controllers.append(endpoint)
        frameCount.append(0)
        replyCount.append(0)
        seenFrames.append([:])
        pruneAt.append(4096)
        lastArrivalNs.append(nil)
        jitterMs.append(0)
        return controllers.count - 1
    }

    private mutating func forgetOldFrames(of c: Int, now: Int64) {
        seenFrames[c] = seenFrames[c].filter { now - $0.value <= Self.pairingWindowNs }
        pruneAt[c] = max(4096, 2 * seenFrames[c].count)
    }

    /// The measures and their statistics.
    package func analysis(options: LatencyOptions = .init()) -> LatencyAnalysis {
        var measures: [LatencyAnalysis.MeasureResult] = []
        var unavailable: [LatencyAnalysis.Unavailable] = []
        func add(_ measure: LatencyMeasure, _ samples: [LatencySample], missing: String) {
            if samples.isEmpty {
                unavailable.append(.init(measure: measure, reason: missing))
            } else {
                measures.append(.init(measure: measure, samples: samples, controllers: controllers.count,
                                      sigmas: options.sigmas, medians: nil, baseMs: 0))
            }
        }
        func addRelative(_ measure: LatencyMeasure, from raw: [LatencySample], missing: String) {
            guard !raw.isEmpty else { return unavailable.append(.init(measure: measure, reason: missing)) }
            let medians = Self.medians(of: raw, controllers: controllers.count, scope: options.medianScope)
            // The raw samples themselves, shared: the relative ones are made from them when asked for.
            measures.append(.init(measure: measure, samples: raw, controllers: controllers.count,
                                  sigmas: options.sigmas, medians: medians, baseMs: options.baseMs))
        }
        if !hasSenderClock { return arrivalAnalysis(options: options) }
        var notes: [String] = []
        // A raw figure across clocks that cannot be compared is no latency: withheld, and said why.
        for (raw, relative, samples, missing) in [(LatencyMeasure.oneWayRaw, LatencyMeasure.oneWayRelative, oneWay, "no valid frames"),
                                                   (.replyEchoRaw, .replyEchoRelative, replyEcho, "no valid replies")] {
            if let why = ClockComparison.incomparable(header: header, samples: samples) {
                unavailable.append(.init(measure: raw, reason: why + "; \(String(relative.rawValue.map { $0 == "_" ? "-" : $0 })) needs no common clock"))
                if notes.isEmpty {
                    notes.append("clocks: the sender's stamps and this trace's clock cannot be compared (\(why)): raw figures withheld, relative ones shown")
                }
            } else {
                add(raw, samples, missing: missing)
            }
            addRelative(relative, from: samples, missing: missing)
        }
        if header.capturePoint == .controller || !roundTrips.isEmpty {
            add(.replyRoundTrip, roundTrips, missing: "no reply answered a frame in this trace")
        } else {
            unavailable.append(.init(measure: .replyRoundTrip,
                                     reason: "needs a trace recorded at the controller; this one was recorded at \"\(header.capturePoint)\""))
        }
        if header.capturePoint != .controller {
            add(.replyTurnaround, turnarounds, missing: "no reply answered a frame in this trace")
        }
        return LatencyAnalysis(header: header, controllers: controllers, options: options, measures: measures,
                               unavailable: unavailable, invalidMessages: invalidMessages, unpairedReplies: unpairedReplies,
                               unusableStamps: unusableStamps, notes: notes, clocksIncomparable: !notes.isEmpty)
    }

    /// A protocol without a sender clock: arrival intervals and jitter, and plainly what cannot be measured.
    private func arrivalAnalysis(options: LatencyOptions) -> LatencyAnalysis {
        let name = wireProtocol.id
        var unavailable: [LatencyAnalysis.Unavailable] = []
        let noClock = "no sender clock: \(name) messages carry no timestamp; one-way latency needs --join with the sender's own trace"
        unavailable.append(.init(measure: .oneWayRaw, reason: noClock))
        unavailable.append(.init(measure: .oneWayRelative, reason: noClock))
        if !hasReplies {
            let noReplies = "no replies: \(name) hosts answer nothing, so there is no reply latency or round trip"
            for measure in [LatencyMeasure.replyEchoRaw, .replyEchoRelative, .replyRoundTrip, .replyTurnaround] {
                unavailable.append(.init(measure: measure, reason: noReplies))
            }
        }
        var measures: [LatencyAnalysis.MeasureResult] = []
        let tooFew = "no controller sent two valid messages"
        for (measure, samples) in [(LatencyMeasure.arrivalInterval, arrivalIntervals), (.interarrivalJitter, jitters)] {
            if samples.isEmpty {
                unavailable.append(.init(measure: measure, reason: tooFew))
            } else {
                var result = LatencyAnalysis.MeasureResult(measure: measure, samples: samples, controllers: controllers.count,
                                                           sigmas: options.sigmas, medians: nil, baseMs: 0)
                if measure == .interarrivalJitter {
                    result.finalValues = controllers.indices.map { c in lastArrivalNs[c] != nil && frameCount[c] > 1 ? jitterMs[c] : nil }
                }
                measures.append(result)
            }
        }
        return LatencyAnalysis(header: header, controllers: controllers, options: options, measures: measures,
                               unavailable: unavailable, invalidMessages: invalidMessages, unpairedReplies: unpairedReplies,
                               unusableStamps: unusableStamps)
    }

    /// The median per controller, or the dataset's median repeated for each.
    static func medians(of samples: [LatencySample], controllers: Int, scope: MedianScope) -> [Double] {
        switch scope {
        case .dataset:
            return Array(repeating: median(samples.map(\.ms)), count: controllers)
        case .controller:
            var values = Array(repeating: [Double](), count: controllers)
            for sample in samples { values[sample.controller].append(sample.ms) }
            return values.map { $0.isEmpty ? 0 : median($0) }
        }
    }

    /// numpy's median: the middle value, or the mean of the two middle ones.
    package static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted(), middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}

/// Every measure a trace gives, aggregated and per controller.
package struct LatencyAnalysis: Sendable {
    package var header: TraceHeader
    package var controllers: [Endpoint]
    package var options: LatencyOptions
    package var measures: [MeasureResult]
    package var unavailable: [Unavailable]
    package var invalidMessages: Int
    package var unpairedReplies: Int
    package var unusableStamps: Int
    /// How the measures were made, when that needs saying (a join by position, say).
    package var notes: [String] = []
    /// The sender stamps and the recorder's clock cannot be compared (`ClockComparison`): raw
    /// figures are withheld, and a relative measure's medians are the clocks' offset, not latency.
    package var clocksIncomparable = false

    package func result(for measure: LatencyMeasure) -> MeasureResult? { measures.first { $0.measure == measure } }

    package struct Unavailable: Hashable, Sendable {
        package var measure: LatencyMeasure
        package var reason: String
    }

    /// One measure: all its samples in trace order, and statistics for all of them and per controller.
    package struct MeasureResult: Sendable {
        package var measure: LatencyMeasure
        /// The samples as measured: for a relative measure, before its median is subtracted. A
        /// relative measure shares them with its raw one rather than hold a shifted copy.
        package let measuredSamples: [LatencySample]
        /// Every sample in trace order, as the statistics took them (relative ones shifted).
        package var samples: [LatencySample] {
            guard medians != nil else { return measuredSamples }
            return measuredSamples.map { sample in
                var shifted = sample
                shifted.ms = Self.value(of: sample, medians: medians, baseMs: baseMs)
                return shifted
            }
        }
        package var all: SeriesStatistics
        /// Indexed like `LatencyAnalysis.controllers`; nil for a controller without samples.
        package var perController: [SeriesStatistics?]
        /// For relative measures, the median subtracted from each controller's samples.
        package var medians: [Double]?
        package var baseMs: Double
        /// For interarrival jitter: each controller's estimate after its last message (RFC 3550's figure).
        package var finalValues: [Double?]?

        /// `samples` are as measured; with `medians`, each controller's is subtracted and `baseMs` added.
        init(measure: LatencyMeasure, samples: [LatencySample], controllers: Int, sigmas: Double, medians: [Double]?, baseMs: Double) {
            self.measure = measure
            measuredSamples = samples
            self.medians = medians
            self.baseMs = baseMs
            let value = { (sample: LatencySample) in Self.value(of: sample, medians: medians, baseMs: baseMs) }
            all = SeriesStatistics(samples.map(value), sigmas: sigmas)
            var split = Array(repeating: [Double](), count: controllers)
            for sample in samples { split[sample.controller].append(value(sample)) }
            perController = split.map { $0.isEmpty ? nil : SeriesStatistics($0, sigmas: sigmas) }
        }

        /// A sample's value in this measure: as measured, or less its controller's median plus the base.
        static func value(of sample: LatencySample, medians: [Double]?, baseMs: Double) -> Double {
            guard let medians else { return sample.ms }
            return sample.ms - medians[sample.controller] + baseMs
        }
    }
}

/// Table I after outlier removal, and raw percentiles before it.
package struct SeriesStatistics: Sendable {
    /// nil when nothing is left after outlier removal (never for a non-empty series).
    package var table: LatencyTable?
    /// p50, p90, p99 and p99.9 of every sample, as an HDR histogram gives them (`LatencyPercentiles`).
    package var percentiles: [(percentile: Double, ms: Double)]
    /// The figures only, and how they were taken: a controller's statistics keep no histogram.
    package var histogram: LatencyPercentiles
    /// The mean and σ outlier removal used, and the bounds it kept.
    package var removal: (mean: Double, sd: Double, lowerMs: Double, upperMs: Double)?

    package init(_ values: [Double], sigmas: Double) {
        table = LatencyTable(samplesMs: values, sigmas: sigmas)
        let finite = values.filter(\.isFinite)
        // A sample minus a median spans up to 2^63 ns: held inside Int64 rather than trap.
        func ns(_ ms: Double, _ rule: FloatingPointRoundingRule) -> Int64 {
            let value = (ms * 1e6).rounded(rule)
            return value >= 0x1p63 ? .max : value < -0x1p63 ? .min : Int64(value)
        }
        let originNs = ns(finite.min() ?? 0, .down)
        histogram = LatencyPercentiles(originNs: originNs, samplesNs: finite.map { ns($0, .toNearestOrAwayFromZero) })
        percentiles = histogram.values
        if finite.count > 1 {
            let mean = LatencyTable.mean(finite), sd = LatencyTable.sampleStandardDeviation(finite)
            removal = (mean, sd, mean - sigmas * sd, mean + sigmas * sd)
        }
    }
}
