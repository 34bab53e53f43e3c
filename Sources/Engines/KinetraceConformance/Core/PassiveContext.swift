import KinetraceTrace
import KinetraceWire

/// What the host under test is supposed to do (`--threshold`, `--refractory-ms`, `--reply-deadline-ms`).
package struct SuiteParameters: Hashable, Sendable {
    package var rule = GestureRule.default
    /// The reply deadline a MUST case holds a host to; the SHOULD one is `replyShouldMs`.
    package var replyDeadlineMs: Double = 50
    package var replyShouldMs: Double = 10
    /// Timing verdicts need at least this many samples; fewer is INCONCLUSIVE.
    package var minimumTimingSamples = 20
    /// The host's controller cap , which the state-exhaustion case floods past.
    package var maxControllers = 65_536
    /// A byte-stream host's connection bound , which the flood case opens idle connections past.
    package var maxConnections = 1_024
    package init() {}
}

/// A passive case: a small policy type that looks at a capture and returns
/// a verdict with its measurements and evidence. It judges in one pass: its
/// judge sees each message once, in capture order (`PassivePass`).
package protocol PassiveCase: Sendable {
    var info: CaseInfo { get }
    func makeJudge(_ parameters: SuiteParameters) -> any PassiveJudge
    /// The rate series the case reads from the summary, if any (the pass builds each kind once).
    var rateSeries: RateSeriesKind? { get }
}

extension PassiveCase {
    package var rateSeries: RateSeriesKind? { nil }
}

/// A capture in memory with the suite's parameters, for judging cases one at a time
/// (`PassiveCase.evaluate`), as the tests do.
package struct PassiveContext: Sendable {
    package let observation: CaptureObservation
    package let parameters: SuiteParameters
    package let replies: ReplyMatching

    package init(_ observation: CaptureObservation, _ parameters: SuiteParameters) {
        self.observation = observation
        self.parameters = parameters
        replies = ReplyMatching(observation, rule: parameters.rule)
    }
}

/// The protocol's host model run over the capture's controller→host messages
/// in capture order, and every valid host→controller reply matched against
/// the decisions that owe one (a trigger of a protocol with replies owes one), built
/// message by message.
///
/// A trigger is a few numbers and a reference to its frame, not a copy of the frame.
package struct ReplyMatching: Sendable {
    package struct Trigger: Sendable {
        /// The triggering frame, for evidence.
        package var frame: MessageRef
        package var timeNs: Int64 { frame.timeNs }
        package var senderTimeMs: UInt64
        /// The first reply echoing this trigger, on the capture clock.
        package var firstReplyTimeNs: Int64?
        /// Replies echoing this trigger (a repeating host may send millions).
        package var replyCount = 0
        /// The frame's source, as an endpoint id.
        var sourceID: UInt32
        package var isAnswered: Bool { replyCount > 0 }
    }

    package var triggers: [Trigger] = []
    /// Valid replies whose echo matches no trigger of their destination: the first
    /// `evidenceKept`, and how many in all.
    package var unexpected: [(reply: MessageRef, reason: String)] = []
    package var unexpectedCount = 0
    /// Valid replies echoing a trigger of another controller (sent to the wrong address): the first
    /// `evidenceKept`, and how many in all.
    package var misdirected: [(reply: MessageRef, owner: Endpoint)] = []
    package var misdirectedCount = 0
    package var validReplies = 0
    /// Replies kept as evidence per kind: a hostile capture may hold millions.
    package static let evidenceKept = 1_000

    package init() {}

    /// The matching over a capture in memory.
    package init(_ observation: CaptureObservation, rule: GestureRule) {
        var matcher = ReplyMatcher(wireProtocol: observation.wireProtocol, rule: rule)
        for d in observation.datagrams { matcher.observe(d, observation.facts(d)) }
        self = matcher.matching
    }

    /// Reply delay on the capture clock for every trigger answered, ms.
    package var delaysMs: [Double] {
        triggers.compactMap { t in t.firstReplyTimeNs.map { Double($0 - t.timeNs) / 1e6 } }
    }
}

/// Builds an `ReplyMatching` message by message, in capture order.
struct ReplyMatcher {
    private(set) var matching = ReplyMatching()
    private var model: any HostModel
    private var numbering = ControllerNumbering<UInt32>()
    private var endpoints: [Endpoint] = []
    private var endpointIDs: [Endpoint: UInt32] = [:]
    // Per controller (endpoint id) and stamp, the trigger's index.
    private var index: [UInt32: [UInt64: Int]] = [:]
    // Per stamp, the newest trigger with it; `earlier` chains each to the one before.
    private var newestWithStamp: [UInt64: Int] = [:]
    private var earlier: [Int] = []

    init(wireProtocol: any WireProtocol, rule: GestureRule) {
        model = wireProtocol.makeHostModel(rule: rule)
    }

    private mutating func id(of endpoint: Endpoint) -> UInt32 {
        if let known = endpointIDs[endpoint] { return known }
        let id = UInt32(truncatingIfNeeded: endpoints.count)
        endpoints.append(endpoint)
        endpointIDs[endpoint] = id
        return id
    }

    /// The next message in capture order, with what the protocol makes of it.
    mutating func observe(_ d: CaptureObservation.Datagram, _ facts: MessageFacts) {
        if d.direction == .controllerToHost {
            let source = id(of: d.source)
            guard let decision = model.accept(facts, from: numbering.number(of: source), receivedNs: d.timeNs).decision,
                  decision.owesReply, let senderTimeMs = decision.sampleTimeMs else { return }
            let t = matching.triggers.count
            index[source, default: [:]][senderTimeMs] = t
            earlier.append(newestWithStamp[senderTimeMs] ?? -1)
            newestWithStamp[senderTimeMs] = t
            matching.triggers.append(ReplyMatching.Trigger(frame: d.ref, senderTimeMs: senderTimeMs, sourceID: source))
        } else {
            guard facts.isValid, facts.direction == .hostToController, let echo = facts.echoTimeMs else { return }
            matching.validReplies += 1
            let destination = id(of: d.destination)
            if let t = index[destination]?[echo] {
                if matching.triggers[t].replyCount == 0 { matching.triggers[t].firstReplyTimeNs = d.timeNs }
                matching.triggers[t].replyCount += 1
                return
            }
            // Another controller's trigger with this stamp: the reply went to the wrong address.
            var candidate = newestWithStamp[echo] ?? -1
            while candidate >= 0, matching.triggers[candidate].sourceID == destination { candidate = earlier[candidate] }
            if candidate >= 0 {
                matching.misdirectedCount += 1
                if matching.misdirected.count < ReplyMatching.evidenceKept {
                    matching.misdirected.append((d.ref, endpoints[Int(matching.triggers[candidate].sourceID)]))
                }
            } else {
                matching.unexpectedCount += 1
                if matching.unexpected.count < ReplyMatching.evidenceKept {
                    matching.unexpected.append((d.ref, "echoes sender time \(echo), which no trigger of \(d.destination) has"))
                }
            }
        }
    }
}

/// Nearest-rank percentile of sorted values.
package func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    let rank = Swift.max(1, Int((p / 100 * Double(sorted.count)).rounded(.up)))
    return sorted[Swift.min(rank, sorted.count) - 1]
}

/// How many evidence lines a case shows before "and N more".
package let evidenceLimit = 5

/// Evidence lines for the first few of `items`; `total` counts items beyond those kept.
package func evidence<T>(_ items: [T], total: Int? = nil, _ line: (T) -> String) -> [String] {
    var lines = items.prefix(evidenceLimit).map(line)
    let all = max(total ?? items.count, items.count)
    if all > evidenceLimit { lines.append("… and \(all - min(evidenceLimit, items.count)) more") }
    return lines
}

