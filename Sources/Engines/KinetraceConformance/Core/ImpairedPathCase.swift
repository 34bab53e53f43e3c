import KinetraceImpairment
import KinetraceSupport
import KinetraceTrace
import KinetraceTransport
import KinetraceWire

/// The host's replies over a path impaired by one of the replayer's networks
/// (loss, jitter, duplication, reordering, corruption). When a protocol's
/// host decides on what arrives, in arrival order, never on when (a rule on
/// the sender's clock), the replies owed are exactly its host model run over
/// what the planner sends, and any difference is the host's.
package struct ImpairedPathCase: ActiveCase {
    package let info: CaseInfo
    package let network: String
    package let wireProtocol: any WireProtocol
    let impairments: Impairments
    let controllers: Int
    let framesEach: Int
    package let seed: UInt64
    /// A sample at trigger level `ay` or not, from a declaration's own messages (nil: `TriggerLevel.sample`).
    let makeSample: (@Sendable (_ triggers: Bool, _ senderTimeMs: UInt64) -> [UInt8])?
    /// Where decisions show when the host has no reply: observations of this name, matched by their
    /// sample time, else counted per controller.
    let observedDecision: String?

    /// - Parameters:
    ///   - network: the replay network's name; the case is `AC-IMPAIRED-<NAME>`.
    ///   - impairments: the network's impairments (replies are not impaired: the check is the host's decisions).
    ///   - requirements: the requirement IDs of the protocol's spec the case checks.
    package init(network: String, impairments: Impairments, wireProtocol: any WireProtocol, requirements: [String],
                controllers: Int = 8, framesEach: Int = 30, seed: UInt64 = 1, idPrefix: String = "AC-",
                observedDecision: String? = nil, makeSample: (@Sendable (Bool, UInt64) -> [UInt8])? = nil) {
        self.makeSample = makeSample
        self.observedDecision = observedDecision
        let hz = wireProtocol.nominalRateHz
        let rate = hz == hz.rounded() ? String(Int(hz)) : String(hz)
        info = CaseInfo(
            id: "\(idPrefix)IMPAIRED-\(network.uppercased())", requirements: requirements, level: .must,
            summary: "Under the \(network) network's impairments (\(controllers) controllers, \(framesEach) frames each at \(rate) Hz), the host answers exactly the triggers the rule gives for what arrives.",
            timeoutMs: 3_000, judgesDecisions: true)
        self.network = network
        self.wireProtocol = wireProtocol
        self.impairments = impairments
        self.controllers = controllers
        self.framesEach = framesEach
        self.seed = seed
    }

    /// Samples at the protocol's rate stamped from the case's origin; each is
    /// trigger-level with probability 0.4 (seeded), so losses and reorders change
    /// which ones trigger.
    package func input(t0: UInt64, rule: GestureRule) -> ReplayInput {
        var rng = SeededGenerator(seed: seed).derived(0x494D_5041)  // "IMPA"
        let periodMs = UInt64((1000 / wireProtocol.nominalRateHz).rounded())
        var messages: [ReplayInput.Message] = []
        for k in 0..<framesEach {
            for c in 0..<controllers {
                let triggers = rng.unit() < 0.4
                let senderTimeMs = t0 + UInt64(k) * periodMs
                let payload = makeSample?(triggers, senderTimeMs)
                    ?? TriggerLevel.sample(wireProtocol, ay: triggers ? TriggerLevel.above(rule) : TriggerLevel.below(rule), senderTimeMs: senderTimeMs)
                messages.append(ReplayInput.Message(offsetNs: Int64(k * Int(periodMs)) * 1_000_000, controller: c, payload: payload,
                                                    index: messages.count))
            }
        }
        let endpoints = (0..<controllers).map { Endpoint(host: "127.0.0.2", port: UInt16($0 + 1)) }
        return ReplayInput(wireProtocol: wireProtocol, messages: messages, controllers: endpoints)
    }

    /// The bundled replay networks that impair the controller→host path, each as a case.
    package static func bundled(_ wireProtocol: any WireProtocol, requirements: [String]) -> [ImpairedPathCase] {
        ["lab-5ghz", "crowded-event", "harsh"].compactMap { name in
            ReplayNetwork.bundled(name).map {
                ImpairedPathCase(network: name, impairments: $0.impairments, wireProtocol: wireProtocol, requirements: requirements)
            }
        }
    }

    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        var options = ReplayOptions()
        options.timestamps = .original
        options.impairments = impairments
        options.seed = seed
        options.rule = parameters.rule
        let first = try p.controllers(controllers).lowerBound
        var predicted: Set<Pair> = []
        var sent = 0, lost = 0, duplicated = 0, reordered = 0, damaged = 0, outOfOrder = 0
        var newestSent: [Int: UInt64] = [:]
        let anchor = SystemClock.monotonicNs() + 20_000_000
        var lastDeadline = anchor
        for step in ReplaySchedule(input: input(t0: p.t0, rule: parameters.rule), options: options) {
            switch step {
            case .impairment(let record):
                if record.decision.lost { lost += 1 }
                duplicated += record.decision.duplicates
                if record.decision.reordered { reordered += 1 }
                if !record.decision.flippedBits.isEmpty || record.decision.truncatedTo != nil { damaged += 1 }
            case .send(let send):
                lastDeadline = anchor + send.deadlineNs
                p.collect(untilMonotonicNs: lastDeadline)
                p.send(send.payload, from: first + send.controller)
                sent += 1
                if let senderTimeMs = send.senderTimeMs {
                    // Overtaken by jitter or held back: the host must treat it as stale.
                    if let newest = newestSent[send.controller], senderTimeMs < newest { outOfOrder += 1 }
                    newestSent[send.controller] = max(senderTimeMs, newestSent[send.controller] ?? 0)
                }
                if observedDecision == nil ? send.predictedTrigger : send.predictedDecision, let senderTimeMs = send.senderTimeMs { predicted.insert(Pair(controller: first + send.controller, senderTimeMs: senderTimeMs)) }
            }
        }
        let settle = lastDeadline + Int64(info.timeoutMs) * 1_000_000
        // Decisions as (controller, sender time): replies' echoes, or observations' sample times.
        func decisions() -> [Pair] {
            guard let name = observedDecision else { return p.echoes.map { Pair(controller: $0.controller, senderTimeMs: $0.echo) } }
            return p.observations.filter { $0.observation.decision == name }.map {
                Pair(controller: $0.controller, senderTimeMs: $0.observation.sampleTimeMs ?? 0)
            }
        }
        p.collect(untilMonotonicNs: settle) { _ in predicted.isSubset(of: decisions()) }
        p.collect(forMs: 50)  // stragglers and extra replies
        var answered: [Pair: Int] = [:]
        for decision in decisions() { answered[decision, default: 0] += 1 }
        if let name = observedDecision {
            if let verdict = p.unjudgedObservations("the host's \(name)s under impairment") {
                return CaseResult(info, verdict, measurements: [Measurement("seed", Double(seed)), Measurement("sent", Double(sent))])
            }
            // Observations without a sample time (the sample time is optional) are matched by count per controller.
            if p.observations.contains(where: { $0.observation.decision == name && $0.observation.sampleTimeMs == nil }) {
                var owed: [Int: Int] = [:], got: [Int: Int] = [:]
                for pair in predicted { owed[pair.controller, default: 0] += 1 }
                for o in p.observations where o.observation.decision == name { got[o.controller, default: 0] += 1 }
                let wrong = Set(owed.keys).union(got.keys).sorted().filter { owed[$0, default: 0] != got[$0, default: 0] }
                let measurements = [Measurement("seed", Double(seed)), Measurement("sent", Double(sent)), Measurement("lost", Double(lost)),
                                    Measurement("decisions_predicted", Double(predicted.count)), Measurement("decisions_seen", Double(got.values.reduce(0, +)))]
                guard !wrong.isEmpty else { return CaseResult(info, .pass, measurements: measurements) }
                return CaseResult(info, .fail("\(wrong.count) of \(controllers) controllers got another number of \(name)s than the rule gives for what arrived"),
                                  measurements: measurements,
                                  evidence: wrong.prefix(5).map { "controller \($0 - first + 1): expected \(owed[$0, default: 0]), found \(got[$0, default: 0])" })
            }
        }
        let missing = predicted.subtracting(answered.keys).sorted()
        let unexpected = Set(answered.keys).subtracting(predicted).sorted()
        let repeated = answered.filter { $0.value > 1 }.keys.sorted()
        let what = observedDecision == nil ? "replies" : "decisions"
        let measurements = [
            Measurement("seed", Double(seed)), Measurement("sent", Double(sent)), Measurement("lost", Double(lost)),
            Measurement("duplicated", Double(duplicated)), Measurement("reordered", Double(reordered)),
            Measurement("arrived_out_of_order", Double(outOfOrder)),
            Measurement("damaged", Double(damaged)), Measurement("\(what)_predicted", Double(predicted.count)),
            Measurement("\(what)_matched", Double(predicted.count - missing.count)), Measurement("\(what)_missing", Double(missing.count)),
            Measurement("\(what)_unexpected", Double(unexpected.count)), Measurement("\(what)_repeated", Double(repeated.count)),
        ]
        guard predicted.count > 0 else {
            return CaseResult(info, .inconclusive("the impaired schedule predicts no trigger"), measurements: measurements)
        }
        var evidence = missing.prefix(5).map { "expected a reply on controller \($0.controller - first + 1) for sender time \($0.senderTimeMs), found none" }
        evidence += unexpected.prefix(5).map { "expected no reply on controller \($0.controller - first + 1) for sender time \($0.senderTimeMs) (not a trigger as it arrived), found one" }
        evidence += repeated.prefix(5).map { "expected one reply on controller \($0.controller - first + 1) for sender time \($0.senderTimeMs), found \(answered[$0]!)" }
        if evidence.isEmpty { return CaseResult(info, .pass, measurements: measurements) }
        let why = "\(missing.count) trigger(s) unanswered, \(unexpected.count) unexpected reply(ies), \(repeated.count) answered more than once, of \(predicted.count) owed"
        return CaseResult(info, .fail(why), measurements: measurements, evidence: evidence)
    }

    /// The network's impairments, for a case made like this one.
    package var impairmentsForDerivation: Impairments { impairments }

    struct Pair: Hashable, Comparable {
        var controller: Int
        var senderTimeMs: UInt64
        static func < (a: Pair, b: Pair) -> Bool { (a.controller, a.senderTimeMs) < (b.controller, b.senderTimeMs) }
    }
}
