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
}

/// The protocol's host model run over the capture's controller→host messages
/// in capture order, and every valid host→controller reply matched against
/// the decisions that owe one (MotionLink: each trigger owes one ack).
public struct AckMatching: Sendable {
    public struct Trigger: Sendable {
        public var frame: CaptureObservation.Datagram
        public var tMs: UInt64
        public var acks: [CaptureObservation.Datagram] = []
    }

    public var triggers: [Trigger] = []
    /// Valid acks whose echo matches no trigger of their destination.
    public var unexpected: [(ack: CaptureObservation.Datagram, reason: String)] = []
    /// Valid acks echoing a trigger of another controller (sent to the wrong address).
    public var misdirected: [(ack: CaptureObservation.Datagram, owner: Endpoint)] = []
    public var validAcks = 0

    init(_ observation: CaptureObservation, rule: GestureRule) {
        let wireProtocol = observation.wireProtocol
        var model = wireProtocol.makeHostModel(rule: rule)
        var numbering = ControllerNumbering<Endpoint>()
        var index: [Endpoint: [UInt64: Int]] = [:]
        var byEcho: [UInt64: [Int]] = [:]
        for d in observation.datagrams {
            let facts = observation.facts(d)
            switch d.direction {
            case .controllerToHost:
                guard let decision = model.accept(facts, from: numbering.number(of: d.source), receivedNs: d.timeNs).decision,
                      decision.owesReply, let tMs = decision.sampleTimeMs else { continue }
                index[d.source, default: [:]][tMs] = triggers.count
                byEcho[tMs, default: []].append(triggers.count)
                triggers.append(Trigger(frame: d, tMs: tMs))
            case .hostToController:
                guard facts.isValid, facts.direction == .hostToController, let echo = facts.echoTimeMs else { continue }
                validAcks += 1
                if let i = index[d.destination]?[echo] {
                    triggers[i].acks.append(d)
                } else if let owner = byEcho[echo]?.map({ triggers[$0].frame.source }).first(where: { $0 != d.destination }) {
                    misdirected.append((d, owner))
                } else {
                    unexpected.append((d, "echoes t_ms \(echo), which no trigger of \(d.destination) has"))
                }
            }
        }
    }

    /// Ack delay on the capture clock for every trigger answered, ms.
    public var delaysMs: [Double] {
        triggers.compactMap { t in t.acks.first.map { Double($0.timeNs - t.frame.timeNs) / 1e6 } }
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

public func evidence<T>(_ items: [T], _ line: (T) -> String) -> [String] {
    var lines = items.prefix(evidenceLimit).map(line)
    if items.count > evidenceLimit { lines.append("… and \(items.count - evidenceLimit) more") }
    return lines
}

