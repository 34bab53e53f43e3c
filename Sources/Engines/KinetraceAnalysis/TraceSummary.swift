import KinetraceTrace
import KinetraceWire

/// What `kinetrace inspect` reports: counts per direction and controller,
/// frame-interval statistics, validity by reason, and what the gesture rule
/// makes of the frames compared with the acks actually seen.
public struct TraceSummary: Sendable {
    public var source: String
    public var header: TraceHeader
    public var rule: GestureRule

    public var firstTimeNs: Int64?
    public var lastTimeNs: Int64?
    public var durationNs: Int64 { (lastTimeNs ?? 0) - (firstTimeNs ?? 0) }

    public var messages: [Direction: DirectionCounts] = [:]
    public var labels: [String: Int] = [:]
    public var events: [String: Int] = [:]
    public var controllers: [Endpoint: ControllerSummary] = [:]

    /// Intervals between successive valid frames of one controller, on the
    /// sender's clock (`t_ms`) and on the capture clock (`t_ns`).
    public var senderIntervals = DurationStatistics()
    public var captureIntervals = DurationStatistics()
    /// Capture-clock delay from a triggering frame to its ack.
    public var ackDelay = DurationStatistics()
    /// Round-trip times the recorder measured itself (`rtt_ns`).
    public var roundTrips = DurationStatistics()

    public var staleFrames = 0
    public var triggers = 0
    public var acks = 0
    public var matchedAcks = 0
    /// Acks echoing a `t_ms` the rule did not trigger on, or echoed twice.
    public var unexpectedAcks = 0
    public var truncation: TraceTruncation?
    public var unknownRecords = 0

    public struct DirectionCounts: Sendable, Equatable {
        public var total = 0
        public var valid = 0
        public var invalidByReason: [String: Int] = [:]
        public var invalid: Int { total - valid }
        public init() {}
    }

    public struct ControllerSummary: Sendable {
        public var frames = 0
        public var validFrames = 0
        public var acks = 0
        public var triggers = 0
        public var matchedAcks = 0
        /// Sender-clock gaps over `gapThresholdMs` between accepted frames (ML-RATE-3).
        public var gaps = 0
        /// Frames the gaps imply were lost at the nominal 10 Hz.
        public var framesMissing = 0
        public var senderIntervals = DurationStatistics()
        var lastTMs: UInt64?
        var lastCaptureNs: Int64?
        var pendingTriggers: [UInt64: Int64] = [:]
        public init() {}
    }

    /// A sender-clock gap longer than this is reported as loss.
    public static let gapThresholdMs: UInt64 = 300

    public var missingAcks: Int { triggers - matchedAcks }

    public init(source: String, header: TraceHeader, rule: GestureRule = .default) {
        self.source = source
        self.header = header
        self.rule = rule
    }
}

/// Builds a `TraceSummary` one record at a time.
public struct TraceSummarizer {
    public private(set) var summary: TraceSummary
    private var tracker: GestureTracker<Endpoint>

    public init(source: String, header: TraceHeader, rule: GestureRule = .default) {
        summary = TraceSummary(source: source, header: header, rule: rule)
        tracker = GestureTracker(rule: rule)
    }

    /// Reads a whole trace.
    public static func summarize(_ reader: TraceReader, rule: GestureRule = .default) throws(TraceError) -> TraceSummary {
        var summarizer = TraceSummarizer(source: reader.source, header: reader.header, rule: rule)
        while let record = try reader.next() { summarizer.add(record) }
        summarizer.summary.truncation = reader.truncation
        summarizer.summary.unknownRecords = reader.unknownRecordCount
        return summarizer.summary
    }

    public mutating func add(_ record: TraceRecord) {
        let t = record.timeNs
        summary.firstTimeNs = min(summary.firstTimeNs ?? t, t)
        summary.lastTimeNs = max(summary.lastTimeNs ?? t, t)
        switch record {
        case .label(let label): summary.labels[label.gesture, default: 0] += 1
        case .event(let event): summary.events[event.event, default: 0] += 1
        case .message(let message): add(message)
        }
    }

    private mutating func add(_ message: MessageRecord) {
        let endpoint = message.controller
        var counts = summary.messages[message.direction] ?? .init()
        var controller = summary.controllers[endpoint] ?? .init()
        defer {
            summary.messages[message.direction] = counts
            summary.controllers[endpoint] = controller
        }
        counts.total += 1
        if let rtt = message.rttNs { summary.roundTrips.record(ns: rtt) }
        let decoded = message.decoded
        guard case .success(let value) = decoded else {
            if case .failure(let error) = decoded { counts.invalidByReason[error.code.name, default: 0] += 1 }
            if message.direction == .controllerToHost { controller.frames += 1 }
            return
        }
        switch (message.direction, value) {
        case (.controllerToHost, .frame(let frame)):
            counts.valid += 1
            controller.frames += 1
            controller.validFrames += 1
            switch tracker.accept(frame, from: endpoint) {
            case .stale:
                summary.staleFrames += 1
                return
            case .trigger:
                summary.triggers += 1
                controller.triggers += 1
                controller.pendingTriggers[frame.tMs] = message.timeNs
            case .accepted: break
            }
            if let last = controller.lastTMs {
                let delta = frame.tMs - last
                summary.senderIntervals.record(ns: Int64(delta) * 1_000_000)
                controller.senderIntervals.record(ns: Int64(delta) * 1_000_000)
                if delta > TraceSummary.gapThresholdMs {
                    controller.gaps += 1
                    controller.framesMissing += Int((Double(delta) / 100).rounded()) - 1
                }
            }
            if let lastNs = controller.lastCaptureNs { summary.captureIntervals.record(ns: message.timeNs - lastNs) }
            controller.lastTMs = frame.tMs
            controller.lastCaptureNs = message.timeNs
        case (.hostToController, .ack(let ack)):
            counts.valid += 1
            summary.acks += 1
            controller.acks += 1
            if let triggerNs = controller.pendingTriggers.removeValue(forKey: ack.echoTMs) {
                summary.matchedAcks += 1
                controller.matchedAcks += 1
                summary.ackDelay.record(ns: message.timeNs - triggerNs)
            } else {
                summary.unexpectedAcks += 1
            }
        default:
            // A valid message travelling the wrong way (an ack sent to the host, say).
            counts.invalidByReason["wrong_direction", default: 0] += 1
            if message.direction == .controllerToHost { controller.frames += 1 }
        }
    }
}
