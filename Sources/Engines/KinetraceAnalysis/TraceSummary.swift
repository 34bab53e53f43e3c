import KinetraceTrace
import KinetraceSupport
import KinetraceWire

/// What `kinetrace inspect` reports: counts per direction and controller,
/// frame-interval statistics, validity by reason, and what the gesture rule
/// makes of the frames compared with the replies actually seen.
package struct TraceSummary: Sendable {
    package var source: String
    package var header: TraceHeader
    package var rule: GestureRule
    /// The protocol's nominal sample period, ms: what gaps and missing samples are judged against.
    package var nominalPeriodMs: Double

    package var firstTimeNs: Int64?
    package var lastTimeNs: Int64?
    package var durationNs: Int64 { (lastTimeNs ?? 0) - (firstTimeNs ?? 0) }

    package var messages: [Direction: DirectionCounts] = [:]
    package var labels: [String: Int] = [:]
    package var events: [String: Int] = [:]
    /// Device-motion samples (trace minor 1).
    package var motionSamples = 0
    package var controllers: [Endpoint: ControllerSummary] = [:]

    /// Intervals between successive valid frames of one controller, on the
    /// sender's clock and on the capture clock (`t_ns`).
    package var senderIntervals = DurationStatistics()
    package var captureIntervals = DurationStatistics()
    /// Capture-clock delay from a triggering frame to its reply.
    package var replyDelay = DurationStatistics()
    /// Round-trip times the recorder measured itself (`rtt_ns`).
    package var roundTrips = DurationStatistics()

    package var staleFrames = 0
    /// Decisions the protocol's host model makes (triggers of a threshold).
    package var triggers = 0
    /// Of those, the ones that owe a reply on the wire.
    package var repliesOwed = 0
    package var replies = 0
    package var matchedReplies = 0
    /// Replies echoing a sender time the rule did not trigger on, or echoed twice.
    package var unexpectedReplies = 0
    package var truncation: TraceTruncation?
    package var unknownRecords = 0

    /// Whether the protocol's host owes replies at all (`ProtocolTraits`): without them
    /// there are no replies to match, and the report says so instead of counting them missing.
    package var hasReplies = true
    /// What the protocol's host does under the summary's rule (`WireProtocol.hostRule`).
    package var hostRule = ""
    /// Whether the protocol's samples carry the sender's clock; without it, intervals
    /// exist on the capture clock only.
    package var hasSenderClock = true
    /// Datagrams, or records cut from byte streams (which can end inside a record).
    package var transport = TransportKind.datagram
    /// The host model's decisions by name, as the protocol names them (`trigger`, `jump`, `attitude`).
    package var decisions: [String: Int] = [:]
    /// Messages whose `id` (as the protocol describes it) was seen before within
    /// `duplicateWindowNs`; nil when the protocol's messages have no id.
    package var duplicateIDs: Int?
    /// The smallest and largest attitude (roll, pitch, yaw, rad) of the valid samples, when they carry one.
    package var attitudeRange: (min: Vector3, max: Vector3)?
    /// Byte streams that ended inside a record (`FramingRecordSource.unfinished`).
    package var unfinishedStreams: [FramingRecordSource.Unfinished] = []
    /// How long an id is remembered to find duplicates: a duplicate on the network arrives within it.
    package static let duplicateWindowNs: Int64 = 60_000_000_000

    package struct DirectionCounts: Sendable, Equatable {
        package var total = 0
        package var valid = 0
        package var invalidByReason: [String: Int] = [:]
        package var invalid: Int { total - valid }
        package init() {}
    }

    package struct ControllerSummary: Sendable {
        package var frames = 0
        package var validFrames = 0
        package var replies = 0
        package var triggers = 0
        package var matchedReplies = 0
        /// Sender-clock gaps over `gapThresholdMs` between accepted samples.
        package var gaps = 0
        /// Frames the gaps imply were lost at the protocol's nominal rate.
        package var framesMissing = 0
        /// Per controller, so a few kilobytes at most each (`DurationStatistics.perController`): percentiles exact
        /// for a controller's first 64 intervals, within 1 % past them.
        package var senderIntervals = DurationStatistics.perController
        /// Intervals between successive valid samples on the capture clock.
        package var captureIntervals = DurationStatistics.perController
        /// Capture times of the first and last valid sample.
        package var firstValidNs: Int64?
        package var lastValidNs: Int64?
        /// Valid samples per second over the controller's span on the capture clock; nil under two samples.
        package var samplesPerSecond: Double? {
            guard validFrames > 1, let first = firstValidNs, let last = lastValidNs, last > first else { return nil }
            return Double(validFrames - 1) / (Double(last - first) / 1e9)
        }
        var lastSenderTimeMs: UInt64?
        var lastCaptureNs: Int64?
        var pendingTriggers: [UInt64: Int64] = [:]
        package init() {}
    }

    /// A sender-clock gap longer than three nominal periods (300 ms at 10 Hz) is reported as loss.
    package var gapThresholdMs: UInt64 { UInt64((3 * nominalPeriodMs).rounded()) }

    package var missingReplies: Int { repliesOwed - matchedReplies }

    package init(source: String, header: TraceHeader, nominalRateHz: Double, rule: GestureRule = .default) {
        self.source = source
        self.header = header
        self.rule = rule
        nominalPeriodMs = 1000 / nominalRateHz
    }
}

/// Builds a `TraceSummary` one record at a time, running the protocol's
/// host model over the samples as a conforming host would.
///
/// Per record it hashes the controller's endpoint once: controllers are
/// numbered on first sight and their summaries kept in an array by number,
/// the direction counts in a pair; `summary` assembles the dictionaries.
package struct TraceSummarizer {
    private var partial: TraceSummary
    package let wireProtocol: any WireProtocol
    private var model: any HostModel
    private var numbering = ControllerNumbering<Endpoint>()
    /// By controller number; nil for an endpoint seen only where the summary counts no controller (an invalid reply).
    private var controllers: [TraceSummary.ControllerSummary?] = []
    private var endpoints: [Endpoint] = []
    private var toHost = TraceSummary.DirectionCounts()
    private var toController = TraceSummary.DirectionCounts()
    private var recentIDs = RecentIDs()
    private let describesIDs: Bool

    package init(source: String, header: TraceHeader, wireProtocol: any WireProtocol, rule: GestureRule = .default) {
        partial = TraceSummary(source: source, header: header, nominalRateHz: wireProtocol.nominalRateHz, rule: rule)
        self.wireProtocol = wireProtocol
        model = wireProtocol.makeHostModel(rule: rule)
        partial.hasReplies = ProtocolTraits.hasReplies(wireProtocol)
        partial.hostRule = wireProtocol.hostRule(rule)
        partial.hasSenderClock = ProtocolTraits.hasSenderClock(wireProtocol)
        partial.transport = wireProtocol.transport
        describesIDs = ProtocolTraits.describesIDs(wireProtocol)
        if describesIDs { partial.duplicateIDs = 0 }
    }

    /// The summary of the records added so far.
    package var summary: TraceSummary {
        var summary = partial
        if toHost.total > 0 { summary.messages[.controllerToHost] = toHost }
        if toController.total > 0 { summary.messages[.hostToController] = toController }
        summary.controllers.reserveCapacity(endpoints.count)
        for (endpoint, controller) in zip(endpoints, controllers) {
            if let controller { summary.controllers[endpoint] = controller }
        }
        return summary
    }

    /// What the reader reported at the end: truncation, skipped records, streams that ended inside a record.
    package mutating func finish(_ reader: some TraceRecordSource) {
        partial.truncation = reader.truncation
        partial.unknownRecords = reader.unknownRecordCount
        if let framed = reader as? FramingRecordSource { partial.unfinishedStreams = framed.unfinished }
    }

    /// Reads a whole trace.
    package static func summarize(_ reader: some TraceRecordSource, rule: GestureRule = .default) throws(TraceError) -> TraceSummary {
        var summarizer = TraceSummarizer(source: reader.source, header: reader.header, wireProtocol: reader.wireProtocol, rule: rule)
        while let record = try reader.next() { summarizer.add(record) }
        summarizer.finish(reader)
        return summarizer.summary
    }

    package mutating func add(_ record: TraceRecord) {
        let t = record.timeNs
        partial.firstTimeNs = min(partial.firstTimeNs ?? t, t)
        partial.lastTimeNs = max(partial.lastTimeNs ?? t, t)
        switch record {
        case .label(let label): partial.labels[label.gesture, default: 0] += 1
        case .event(let event): partial.events[event.event, default: 0] += 1
        case .motion: partial.motionSamples += 1
        case .message(let message): add(message)
        }
    }

    /// The controller's number; its summary is made by `countController` (only then is it reported).
    private mutating func number(of endpoint: Endpoint) -> Int {
        let number = numbering.number(of: endpoint)
        if number == endpoints.count {
            endpoints.append(endpoint)
            controllers.append(nil)
        }
        return number
    }

    /// Makes the controller's summary if it has none; returns its number.
    @discardableResult
    private mutating func countController(_ number: Int) -> Int {
        if controllers[number] == nil { controllers[number] = TraceSummary.ControllerSummary() }
        return number
    }

    private mutating func add(_ message: MessageRecord) {
        let toHostDirection = message.direction == .controllerToHost
        let controller = number(of: toHostDirection ? message.source : message.destination)
        if toHostDirection { toHost.total += 1 } else { toController.total += 1 }
        if let rtt = message.rttNs { partial.roundTrips.record(ns: rtt) }
        let facts = message.facts(wireProtocol)
        let invalidReason: String? = if let error = facts.error {
            error.code.name
        } else if facts.direction != message.direction {
            // A valid message travelling the wrong way (a reply sent to the host, say).
            "wrong_direction"
        } else {
            nil
        }
        if let invalidReason {
            if toHostDirection {
                toHost.invalidByReason[invalidReason, default: 0] += 1
                controllers[countController(controller)]!.frames += 1
            } else {
                toController.invalidByReason[invalidReason, default: 0] += 1
            }
            return
        }
        if toHostDirection {
            toHost.valid += 1
            let verdict = model.accept(facts, from: controller, receivedNs: message.timeNs)
            if verdict == .stale { partial.staleFrames += 1 }
            let decision = verdict.decision
            if let decision {
                partial.triggers += 1
                partial.decisions[decision.name.description, default: 0] += 1
                if decision.owesReply { partial.repliesOwed += 1 }
            }
            if let attitude = facts.motion?.attitude { widenAttitudeRange(attitude) }
            if describesIDs, let id = ProtocolTraits.describedID(of: message, wireProtocol),
               recentIDs.isRepeat(id, at: message.timeNs, window: TraceSummary.duplicateWindowNs) {
                partial.duplicateIDs! += 1
            }
            let deltas = Self.addSample(facts.senderTimeMs, decision: decision, stale: verdict == .stale, at: message.timeNs,
                                        period: partial.nominalPeriodMs, gapMs: partial.gapThresholdMs,
                                        to: &controllers[countController(controller)]!)
            if let sender = deltas.senderMs { partial.senderIntervals.record(ns: Self.nanoseconds(ms: sender)) }
            if let capture = deltas.captureNs { partial.captureIntervals.record(ns: capture) }
        } else {
            toController.valid += 1
            partial.replies += 1
            let triggerNs = Self.addReply(facts.echoTimeMs, to: &controllers[countController(controller)]!)
            if let triggerNs {
                partial.matchedReplies += 1
                partial.replyDelay.record(ns: message.timeNs - triggerNs)
            } else {
                partial.unexpectedReplies += 1
            }
        }
    }

    /// Counts a valid sample; returns the intervals since the controller's previous accepted one.
    private static func addSample(_ senderTimeMs: UInt64?, decision: HostDecision?, stale: Bool, at timeNs: Int64, period: Double, gapMs: UInt64,
                                  to controller: inout TraceSummary.ControllerSummary) -> (senderMs: UInt64?, captureNs: Int64?) {
        controller.frames += 1
        controller.validFrames += 1
        if stale { return (nil, nil) }
        if let decision {
            controller.triggers += 1
            if decision.owesReply, let echo = decision.sampleTimeMs { controller.pendingTriggers[echo] = timeNs }
        }
        // A host model that does not drop stale samples may let a stamp run backwards: no interval then.
        let senderMs = senderTimeMs.flatMap { t in controller.lastSenderTimeMs.flatMap { t >= $0 ? t - $0 : nil } }
        let captureNs = controller.lastCaptureNs.map { timeNs - $0 }
        if let captureNs { controller.captureIntervals.record(ns: captureNs) }
        if controller.firstValidNs == nil { controller.firstValidNs = timeNs }
        controller.lastValidNs = timeNs
        if let senderMs {
            controller.senderIntervals.record(ns: Self.nanoseconds(ms: senderMs))
            if senderMs > gapMs {
                controller.gaps += 1
                // Stamps leap up to 2^64 ms: the estimate saturates rather than overflow.
                let missing = Swift.min((Double(senderMs) / period).rounded(), 1e15)
                let (sum, overflow) = controller.framesMissing.addingReportingOverflow(Int(missing) - 1)
                controller.framesMissing = overflow ? Int.max : sum
            }
        }
        if let senderTimeMs { controller.lastSenderTimeMs = senderTimeMs }
        controller.lastCaptureNs = timeNs
        return (senderMs, captureNs)
    }

    private mutating func widenAttitudeRange(_ a: Vector3) {
        guard let range = partial.attitudeRange else { return partial.attitudeRange = (a, a) }
        partial.attitudeRange = (Vector3(min(range.min.x, a.x), min(range.min.y, a.y), min(range.min.z, a.z)),
                                 Vector3(max(range.max.x, a.x), max(range.max.y, a.y), max(range.max.z, a.z)))
    }

    /// A sender-clock interval in ns. A u64 stamp may leap by up to 2^64 − 1 ms
    /// (a sender clock bounds nothing), so intervals past Int64 ns are held at Int64.max.
    static func nanoseconds(ms: UInt64) -> Int64 {
        let (ns, overflow) = ms.multipliedReportingOverflow(by: 1_000_000)
        return overflow || ns > UInt64(Int64.max) ? Int64.max : Int64(ns)
    }

    /// Counts a reply; returns the capture time of the sample it answers, if any.
    private static func addReply(_ echo: UInt64?, to controller: inout TraceSummary.ControllerSummary) -> Int64? {
        controller.replies += 1
        guard let echo, let triggerNs = controller.pendingTriggers.removeValue(forKey: echo) else { return nil }
        controller.matchedReplies += 1
        return triggerNs
    }
}

/// Ids seen recently, to count duplicates in bounded memory: an id is
/// forgotten `window` after it was seen (network duplicates arrive within it).
struct RecentIDs {
    private var seenNs: [String: Int64] = [:]
    private var pruneAt = 4096

    mutating func isRepeat(_ id: String, at timeNs: Int64, window: Int64) -> Bool {
        if let earlier = seenNs[id], timeNs - earlier <= window { return true }
        seenNs[id] = timeNs
        if seenNs.count > pruneAt {
            seenNs = seenNs.filter { timeNs - $0.value <= window }
            pruneAt = max(4096, 2 * seenNs.count)
        }
        return false
    }
}
