import KinetraceReplay
import KinetraceSimulation
import KinetraceTrace
import KinetraceTransport
import KinetraceWire

/// The host's acks over a path impaired by one of the replayer's profiles
/// (loss, jitter, duplication, reordering, corruption). ML-GESTURE-2/-4 make
/// the outcome a function of what arrives, in arrival order, never of when:
/// so the acks owed are exactly the gesture rule run over what the planner
/// sends, and any difference is the host's.
public struct ImpairedPathCase: ActiveCase {
    public let info: CaseInfo
    public let profile: String
    let impairments: Impairments
    let controllers: Int
    let framesEach: Int
    public let seed: UInt64

    /// - Parameters:
    ///   - profile: the replayer profile's name; the case is `AC-IMPAIRED-<NAME>`.
    ///   - impairments: the profile's impairments (acks are not impaired: the check is the host's decisions).
    public init(profile: String, impairments: Impairments, controllers: Int = 8, framesEach: Int = 30, seed: UInt64 = 1) {
        info = CaseInfo(
            id: "AC-IMPAIRED-\(profile.uppercased())",
            requirements: ["ML-GESTURE-2", "ML-GESTURE-3", "ML-GESTURE-4", "ML-ACK-RULE-1"], level: .must,
            summary: "Under the \(profile) profile's impairments (\(controllers) controllers, \(framesEach) frames each at 10 Hz), the host acks exactly the triggers the rule gives for what arrives.",
            timeoutMs: 3_000)
        self.profile = profile
        self.impairments = impairments
        self.controllers = controllers
        self.framesEach = framesEach
        self.seed = seed
    }

    /// Frames at 10 Hz stamped from the case's origin; each is trigger-level with
    /// probability 0.4 (seeded), so losses and reorders change which ones trigger.
    public func input(t0: UInt64) -> ReplayInput {
        var rng = SeededGenerator(seed: seed).derived(0x494D_5041)  // "IMPA"
        var messages: [ReplayInput.Message] = []
        for k in 0..<framesEach {
            for c in 0..<controllers {
                let ay: Float = rng.unit() < 0.4 ? 0.9 : 0.05
                let frame = MotionFrame(tMs: t0 + UInt64(k) * 100, ay: ay)
                messages.append(ReplayInput.Message(offsetNs: Int64(k) * 100_000_000, controller: c, payload: frame.encoded(),
                                                    index: messages.count))
            }
        }
        let endpoints = (0..<controllers).map { Endpoint(host: "127.0.0.2", port: UInt16($0 + 1)) }
        return ReplayInput(messages: messages, controllers: endpoints)
    }

    public func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
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
        for step in ReplaySchedule(input: input(t0: p.t0), options: options) {
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
                if let tMs = send.tMs {
                    // Overtaken by jitter or held back: the host must treat it as stale.
                    if let newest = newestSent[send.controller], tMs < newest { outOfOrder += 1 }
                    newestSent[send.controller] = max(tMs, newestSent[send.controller] ?? 0)
                }
                if send.predictedTrigger, let tMs = send.tMs { predicted.insert(Pair(controller: first + send.controller, tMs: tMs)) }
            }
        }
        let settle = lastDeadline + Int64(info.timeoutMs) * 1_000_000
        p.collect(untilMonotonicNs: settle) { _ in predicted.isSubset(of: p.acks.map { Pair(controller: $0.controller, tMs: $0.echo) }) }
        p.collect(forMs: 50)  // stragglers and extra acks
        var acked: [Pair: Int] = [:]
        for ack in p.acks { acked[Pair(controller: ack.controller, tMs: ack.echo), default: 0] += 1 }
        let missing = predicted.subtracting(acked.keys).sorted()
        let unexpected = Set(acked.keys).subtracting(predicted).sorted()
        let repeated = acked.filter { $0.value > 1 }.keys.sorted()
        let measurements = [
            Measurement("seed", Double(seed)), Measurement("sent", Double(sent)), Measurement("lost", Double(lost)),
            Measurement("duplicated", Double(duplicated)), Measurement("reordered", Double(reordered)),
            Measurement("arrived_out_of_order", Double(outOfOrder)),
            Measurement("damaged", Double(damaged)), Measurement("acks_predicted", Double(predicted.count)),
            Measurement("acks_matched", Double(predicted.count - missing.count)), Measurement("acks_missing", Double(missing.count)),
            Measurement("acks_unexpected", Double(unexpected.count)), Measurement("acks_repeated", Double(repeated.count)),
        ]
        guard predicted.count > 0 else {
            return CaseResult(info, .inconclusive("the impaired schedule predicts no trigger"), measurements: measurements)
        }
        var evidence = missing.prefix(5).map { "expected an ack on controller \($0.controller - first + 1) for t_ms \($0.tMs), found none" }
        evidence += unexpected.prefix(5).map { "expected no ack on controller \($0.controller - first + 1) for t_ms \($0.tMs) (not a trigger as it arrived), found one" }
        evidence += repeated.prefix(5).map { "expected one ack on controller \($0.controller - first + 1) for t_ms \($0.tMs), found \(acked[$0]!)" }
        if evidence.isEmpty { return CaseResult(info, .pass, measurements: measurements) }
        let why = "\(missing.count) trigger(s) unacked, \(unexpected.count) unexpected ack(s), \(repeated.count) acked more than once, of \(predicted.count) owed"
        return CaseResult(info, .fail(why), measurements: measurements, evidence: evidence)
    }

    struct Pair: Hashable, Comparable {
        var controller: Int
        var tMs: UInt64
        static func < (a: Pair, b: Pair) -> Bool { (a.controller, a.tMs) < (b.controller, b.tMs) }
    }
}
