import KinetraceSupport
import KinetraceTrace
import KinetraceWire

/// A message named in evidence, without its bytes: a capture may hold millions,
/// and a case keeps only the few it shows.
package struct MessageRef: Sendable {
    package var number: Int
    package var timeNs: Int64
    package var direction: Direction
    package var source: Endpoint
    package var destination: Endpoint
    package var length: Int
    package var controller: Endpoint { direction == .controllerToHost ? source : destination }
}

extension CaptureObservation.Datagram {
    package var ref: MessageRef {
        MessageRef(number: number, timeNs: timeNs, direction: direction, source: source, destination: destination, length: payload.count)
    }
}

/// At most `limit` items kept as evidence, and how many there were in all.
package struct Kept<Item: Sendable>: Sendable {
    package private(set) var items: [Item] = []
    package private(set) var total = 0
    let limit: Int
    package init(limit: Int = ReplyMatching.evidenceKept) { self.limit = limit }
    package mutating func add(_ item: @autoclosure () -> Item) {
        total += 1
        if items.count < limit { items.append(item()) }
    }
    package var isEmpty: Bool { total == 0 }
}

/// What one case works out from a capture, message by message in capture order,
/// keeping only what its verdict needs (counts, per-controller state, a bounded sample
/// of evidence); the verdict comes once every message has been seen.
package protocol PassiveJudge {
    mutating func observe(_ d: CaptureObservation.Datagram)
    func verdict(_ summary: PassiveSummary) -> CaseResult
}

/// A judge that needs only what the pass works out for every case (replies, rates, counts).
struct SummaryJudge: PassiveJudge {
    let body: (PassiveSummary) -> CaseResult
    mutating func observe(_ d: CaptureObservation.Datagram) {}
    func verdict(_ summary: PassiveSummary) -> CaseResult { body(summary) }
}

/// How a rate case reads a controller's pace: the sender's own stamps
/// (its sender clock) or, for protocols without them, the capture clock.
package enum RateSeriesKind: Hashable, Sendable {
    case senderStamps
    case captureTime
}

/// The capture as every case sees it when the pass ends: where it came from, counts,
/// what the reader said about streams, and the analyses several cases share.
package struct PassiveSummary: Sendable {
    package var source: String
    package var wireProtocol: any WireProtocol
    package var capturePoint: CapturePoint
    package var parameters: SuiteParameters
    /// The first message's capture time: evidence times are relative to it.
    package var startNs: Int64 = 0
    package var messages = 0
    package var frames = 0
    package var replies = 0
    /// Byte streams that ended inside a message (a stream protocol's framing reader reports them).
    package var unfinished: [FramingRecordSource.Unfinished] = []
    /// The reader's events about streams (`stream_gap`, …), the first `streamEventsKept`.
    package var streamEvents: [EventRecord] = []
    package var streamEventsDropped = 0
    package var truncation: TraceTruncation?
    package var replyMatching: ReplyMatching
    /// The rate windows of each kind some selected case asked for.
    package var rates: [RateSeriesKind: RateWindows] = [:]

    package func describe(_ d: CaptureObservation.Datagram) -> String { d.describe(since: startNs) }
    /// "#12 at 3.5 s from 10.0.0.2:50000 (36 bytes)", for evidence lines.
    package func describe(_ m: MessageRef) -> String {
        let seconds3 = (Double(m.timeNs - startNs) / 1e6).rounded() / 1000
        return "#\(m.number) at \(seconds3) s \(m.direction == .controllerToHost ? "from" : "to") \(m.controller) (\(m.length) bytes)"
    }
}

/// One pass over a capture for a set of passive cases: each message goes to the shared
/// analyses and to every case's judge, then is dropped. Memory grows with controllers,
/// triggers and the rate cases' stamps (12 bytes a frame), not with the capture's bytes.
package struct PassivePass {
    package private(set) var summary: PassiveSummary
    private let cases: [any PassiveCase]
    private var judges: [any PassiveJudge]
    private var replyMatcher: ReplyMatcher
    private var rateSeries: [RateCollector] = []

    package init(_ cases: [any PassiveCase], wireProtocol: any WireProtocol, source: String, capturePoint: CapturePoint,
                parameters: SuiteParameters) {
        self.cases = cases
        summary = PassiveSummary(source: source, wireProtocol: wireProtocol, capturePoint: capturePoint, parameters: parameters,
                                 replyMatching: ReplyMatching())
        replyMatcher = ReplyMatcher(wireProtocol: wireProtocol, rule: parameters.rule)
        judges = cases.map { $0.makeJudge(parameters) }
        rateSeries = Set(cases.compactMap(\.rateSeries)).map { RateCollector(kind: $0, stream: wireProtocol.transport == .byteStream) }
    }

    package mutating func observe(_ d: CaptureObservation.Datagram) {
        if summary.messages == 0 { summary.startNs = d.timeNs }
        summary.messages += 1
        if d.direction == .controllerToHost { summary.frames += 1 } else { summary.replies += 1 }
        let facts = d.framingError.map { MessageFacts(invalid: $0) } ?? summary.wireProtocol.facts(d.payload)
        replyMatcher.observe(d, facts)
        // By index: iterating a copy of the collection while mutating it would copy every series.
        for i in rateSeries.indices { rateSeries[i].observe(d, facts) }
        for i in judges.indices { judges[i].observe(d) }
    }

    package mutating func observe(streamEvent event: EventRecord) {
        if summary.streamEvents.count < CaptureObservation.streamEventsKept {
            summary.streamEvents.append(event)
        } else {
            summary.streamEventsDropped += 1
        }
    }

    /// The verdicts, in the cases' order, once the capture has ended.
    package mutating func finish(unfinished: [FramingRecordSource.Unfinished] = [], truncation: TraceTruncation? = nil) -> [CaseResult] {
        summary.unfinished = unfinished
        summary.truncation = truncation
        summary.replyMatching = replyMatcher.matching
        let nominalMs = 1000 / summary.wireProtocol.nominalRateHz
        for collector in rateSeries {
            let kind = collector.kind
            switch kind {
            case .senderStamps:
                summary.rates[kind] = RateWindows(collector.series, nominalMs: 100, ticksPerMs: 1, detectLoss: true) { $0 }
            case .captureTime:
                // A stream loses nothing, and its records arrive several to a segment: no loss to leave out.
                summary.rates[kind] = RateWindows(collector.series, nominalMs: nominalMs, ticksPerMs: 1e6, detectLoss: !collector.stream) { $0 }
            }
        }
        rateSeries = []
        return judges.map { judge in
            let started = SystemClock.monotonicNs()
            var result = judge.verdict(summary)
            result.durationNs = SystemClock.monotonicNs() - started
            return result
        }
    }

    /// Reads a capture (trace, pcap or pcapng through a record source) once, judging as it goes.
    package static func run(_ cases: [any PassiveCase], reading input: any TraceRecordSource,
                           parameters: SuiteParameters) throws(TraceError) -> (results: [CaseResult], summary: PassiveSummary) {
        var pass = PassivePass(cases, wireProtocol: input.wireProtocol, source: input.source, capturePoint: input.header.capturePoint,
                               parameters: parameters)
        var number = 0
        while let record = try input.next() {
            switch record {
            case .message(let m):
                number += 1
                pass.observe(CaptureObservation.Datagram(number: number, timeNs: m.timeNs, direction: m.direction, source: m.source,
                                                         destination: m.destination, payload: Array(m.payload), framingError: m.framingError))
            case .event(let event) where event.event.hasPrefix("stream_"):
                pass.observe(streamEvent: event)
            default:
                continue
            }
        }
        let results = pass.finish(unfinished: (input as? FramingRecordSource)?.unfinished ?? [], truncation: input.truncation)
        return (results, pass.summary)
    }
}

/// One kind of rate series, per controller, built as the messages pass.
struct RateCollector {
    let kind: RateSeriesKind
    let stream: Bool
    var series: [Endpoint: RateSeries] = [:]
    /// Per controller, how many of its messages came so far (valid or not: each was sent).
    private var ordinals: [Endpoint: Int] = [:]

    init(kind: RateSeriesKind, stream: Bool) {
        self.kind = kind
        self.stream = stream
    }

    mutating func observe(_ d: CaptureObservation.Datagram, _ facts: MessageFacts) {
        guard d.direction == .controllerToHost else { return }
        let ordinal = ordinals[d.source, default: 0]
        ordinals[d.source] = ordinal + 1
        switch kind {
        case .senderStamps:
            // Valid frames' stamps, at their position among all the controller's datagrams,
            // so an invalid frame still counts as a frame sent.
            guard facts.isValid, facts.direction == .controllerToHost, let senderTimeMs = facts.senderTimeMs else { return }
            series[d.source, default: RateSeries()].append(RateSample(time: senderTimeMs, ordinal: ordinal))
        case .captureTime:
            // Every message counts as one sent; after a gap in a captured stream, records cannot be told apart.
            guard d.framingError == nil else { return }
            let sample = RateSample(time: UInt64(bitPattern: d.timeNs), ordinal: ordinal)
            // Records that arrived together (one segment) take one time: keep the last of each,
            // so a window ends on a whole arrival and its mean counts every record in it.
            if stream, series[d.source]?.last?.time == sample.time {
                series[d.source]!.replaceLast(with: sample)
            } else {
                series[d.source, default: RateSeries()].append(sample)
            }
        }
    }
}

extension PassiveCase {
    /// The case over a capture already in memory (as the tests build them): one pass of its own.
    package func evaluate(_ context: PassiveContext) -> CaseResult {
        let observation = context.observation
        var pass = PassivePass([self], wireProtocol: observation.wireProtocol, source: observation.source,
                               capturePoint: observation.capturePoint, parameters: context.parameters)
        for event in observation.streamEvents { pass.observe(streamEvent: event) }
        for d in observation.datagrams { pass.observe(d) }
        return pass.finish(unfinished: observation.unfinished, truncation: observation.truncation)[0]
    }
}
