import KinetraceTrace
import KinetraceWire

/// What the host under test is supposed to do (`--threshold`, `--refractory-ms`, `--ack-deadline-ms`).
public struct SuiteParameters: Hashable, Sendable {
    public var rule = GestureRule.default
    /// ML-ACK-RULE-3's deadline (MUST); ML-ACK-RULE-4's is `ackShouldMs`.
    public var ackDeadlineMs: Double = 50
    public var ackShouldMs: Double = 10
    /// Timing verdicts need at least this many samples; fewer is INCONCLUSIVE.
    public var minimumTimingSamples = 20
    /// The host's controller cap (MotionLink ML-STATE-2), which the state-exhaustion case floods past.
    public var maxControllers = 65_536
    public init() {}
}

/// A passive case: a small policy type that looks at a capture and returns
/// a verdict with its measurements and evidence.
public protocol PassiveCase: Sendable {
    var info: CaseInfo { get }
    func evaluate(_ context: PassiveContext) -> CaseResult
}

/// A capture with the analyses several cases share, computed once.
public struct PassiveContext: Sendable {
    public let observation: CaptureObservation
    public let parameters: SuiteParameters
    public let acks: AckMatching

    public init(_ observation: CaptureObservation, _ parameters: SuiteParameters) {
        self.observation = observation
        self.parameters = parameters
        acks = AckMatching(observation, rule: parameters.rule)
    }

    public func describe(_ d: CaptureObservation.Datagram) -> String { d.describe(since: observation.startNs) }

    /// The frame that made a trigger.
    public func frame(of trigger: AckMatching.Trigger) -> CaptureObservation.Datagram { observation.datagrams[trigger.position] }
}

/// The protocol's host model run over the capture's controller→host messages
/// in capture order, and every valid host→controller reply matched against
/// the decisions that owe one (MotionLink: each trigger owes one ack).
///
/// A trigger is a few numbers, not a copy of its frame: a capture may hold
/// millions (`PassiveContext.frame(of:)` makes the frame when evidence needs it).
public struct AckMatching: Sendable {
    public struct Trigger: Sendable {
        /// The triggering frame's position among the capture's messages, and its capture time.
        public var position: Int
        public var timeNs: Int64
        public var tMs: UInt64
        /// The first ack echoing this trigger, on the capture clock.
        public var firstAckTimeNs: Int64?
        /// Acks echoing this trigger (a repeating host may send millions).
        public var ackCount = 0
        /// The frame's source, as the capture's endpoint id.
        var sourceID: UInt32
        public var isAnswered: Bool { ackCount > 0 }
    }

    public var triggers: [Trigger] = []
    /// Valid acks whose echo matches no trigger of their destination: the first
    /// `evidenceKept`, and how many in all.
    public var unexpected: [(ack: CaptureObservation.Datagram, reason: String)] = []
    public var unexpectedCount = 0
    /// Valid acks echoing a trigger of another controller (sent to the wrong address): the first
    /// `evidenceKept`, and how many in all.
    public var misdirected: [(ack: CaptureObservation.Datagram, owner: Endpoint)] = []
    public var misdirectedCount = 0
    public var validAcks = 0
    /// Acks kept as evidence per kind: a hostile capture may hold millions.
    public static let evidenceKept = 1_000

    init(_ observation: CaptureObservation, rule: GestureRule) {
        let wireProtocol = observation.wireProtocol
        let all = observation.datagrams
        var model = wireProtocol.makeHostModel(rule: rule)
        var numbering = ControllerNumbering<UInt32>()
        // Per controller (endpoint id) and stamp, the trigger's index.
        var index: [UInt32: [UInt64: Int]] = [:]
        // Per stamp, the newest trigger with it; `earlier` chains each to the one before.
        var newestWithStamp: [UInt64: Int] = [:]
        var earlier: [Int] = []
        for i in all.indices {
            let facts = observation.facts(at: i)
            if all.towardHost[i] {
                let source = all.sources[i]
                guard let decision = model.accept(facts, from: numbering.number(of: source), receivedNs: all.times[i]).decision,
                      decision.owesReply, let tMs = decision.sampleTimeMs else { continue }
                index[source, default: [:]][tMs] = triggers.count
                earlier.append(newestWithStamp[tMs] ?? -1)
                newestWithStamp[tMs] = triggers.count
                triggers.append(Trigger(position: i, timeNs: all.times[i], tMs: tMs, sourceID: source))
            } else {
                guard facts.isValid, facts.direction == .hostToController, let echo = facts.echoTimeMs else { continue }
                validAcks += 1
                let destination = all.destinations[i]
                if let t = index[destination]?[echo] {
                    if triggers[t].ackCount == 0 { triggers[t].firstAckTimeNs = all.times[i] }
                    triggers[t].ackCount += 1
                    continue
                }
                // Another controller's trigger with this stamp: the ack went to the wrong address.
                var candidate = newestWithStamp[echo] ?? -1
                while candidate >= 0, triggers[candidate].sourceID == destination { candidate = earlier[candidate] }
                if candidate >= 0 {
                    misdirectedCount += 1
                    if misdirected.count < Self.evidenceKept {
                        misdirected.append((all[i], all.endpoints[Int(triggers[candidate].sourceID)]))
                    }
                } else {
                    unexpectedCount += 1
                    if unexpected.count < Self.evidenceKept {
                        unexpected.append((all[i], "echoes t_ms \(echo), which no trigger of \(all.destination(at: i)) has"))
                    }
                }
            }
        }
    }

    /// Ack delay on the capture clock for every trigger answered, ms.
    public var delaysMs: [Double] {
        triggers.compactMap { t in t.firstAckTimeNs.map { Double($0 - t.timeNs) / 1e6 } }
    }
}

/// Nearest-rank percentile of sorted values.
public func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    let rank = Swift.max(1, Int((p / 100 * Double(sorted.count)).rounded(.up)))
    return sorted[Swift.min(rank, sorted.count) - 1]
}

/// How many evidence lines a case shows before "and N more".
public let evidenceLimit = 5

/// Evidence lines for the first few of `items`; `total` counts items beyond those kept.
public func evidence<T>(_ items: [T], total: Int? = nil, _ line: (T) -> String) -> [String] {
    var lines = items.prefix(evidenceLimit).map(line)
    let all = max(total ?? items.count, items.count)
    if all > evidenceLimit { lines.append("… and \(all - min(evidenceLimit, items.count)) more") }
    return lines
}

