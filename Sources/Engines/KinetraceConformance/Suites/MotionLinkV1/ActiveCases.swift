import KinetraceSupport
import KinetraceTrace
import KinetraceTransport
import KinetraceWire

/// Frames that trigger and that do not under the rule the suite is told the
/// host has: τ + 0.4 and τ − 0.45 g on ay (0.9 and 0.05 at the default τ).
struct Levels {
    let rule: GestureRule
    init(_ parameters: SuiteParameters) { rule = parameters.rule }
    func high(_ tMs: UInt64) -> MotionFrame { MotionFrame(tMs: tMs, ay: TriggerLevel.above(rule)) }
    func low(_ tMs: UInt64) -> MotionFrame { MotionFrame(tMs: tMs, ay: TriggerLevel.below(rule)) }
}

extension LiveProbe {
    func send(_ frame: MotionFrame, from controller: Int) { send(frame.encoded(), from: controller) }
}

/// Sends the negative probes, then one frame that must be acked, and waits
/// for that ack: on one socket, in order, the host has read (and would have
/// answered) everything before it by then.
func probe(_ probe: LiveProbe, controller: Int, negatives: [[UInt8]], positive: MotionFrame, timeoutMs: Int)
    -> (unexpected: [LiveProbe.Echo], positiveAcked: Bool) {
    for bytes in negatives { probe.send(bytes, from: controller) }
    probe.send(positive, from: controller)
    probe.collect(forMs: timeoutMs) { replies in
        replies.contains { r in
            if case .success(.ack(let a)) = MotionLinkV1.decodeResult(r.payload) { return a.echoTMs == positive.tMs } else { return false }
        }
    }
    probe.collect(forMs: 30)  // stragglers
    let acks = probe.echoes
    return (acks.filter { $0.echo != positive.tMs || $0.controller != controller }, acks.contains { $0.echo == positive.tMs && $0.controller == controller })
}

/// Verdict for "these must not be acked, then this must": both halves reported.
func judge(_ info: CaseInfo, _ outcome: (unexpected: [LiveProbe.Echo], positiveAcked: Bool),
           negatives: String, positive: String) -> CaseResult {
    var evidence: [String] = outcome.unexpected.map { "expected no ack, found one echoing t_ms \($0.echo) (\(negatives))" }
    if !outcome.positiveAcked { evidence.append("expected an ack to \(positive), found none") }
    let measurements = [Measurement("unexpected_replies", Double(outcome.unexpected.count)),
                        Measurement("expected_ack_received", outcome.positiveAcked ? 1 : 0)]
    if evidence.isEmpty { return CaseResult(info, .pass, measurements: measurements) }
    let why = !outcome.unexpected.isEmpty ? "acked \(negatives)" : "did not ack \(positive)"
    return CaseResult(info, .fail(why), measurements: measurements, evidence: evidence)
}

package struct ThresholdCase: ActiveCase {
    package let info = CaseInfo(id: "AC-TRIGGER-THRESHOLD", requirements: ["ML-GESTURE-3"], level: .must,
                               summary: "ay exactly at τ (or the largest float below it) does not trigger; the next float above it does.", timeoutMs: 2_000, judgesDecisions: true)
    package init() {}
    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let t0 = p.t0
        let c = try p.controllers(1).lowerBound
        let tau = parameters.rule.threshold
        var atTau = Float32(tau)
        if Double(atTau) > tau { atTau = atTau.nextDown }
        var above = Float32(tau)
        if Double(above) <= tau { above = above.nextUp }
        let outcome = probe(p, controller: c, negatives: [MotionFrame(tMs: t0, ay: atTau).encoded()],
                            positive: MotionFrame(tMs: t0 + 100, ay: above), timeoutMs: info.timeoutMs)
        return judge(info, outcome, negatives: "ay = \(atTau), not above τ = \(tau)", positive: "ay = \(above), just above τ")
    }
}

package struct RefractoryCase: ActiveCase {
    package let info = CaseInfo(id: "AC-TRIGGER-REFRACTORY", requirements: ["ML-GESTURE-3", "ML-GESTURE-4"], level: .must,
                               summary: "A second trigger-level frame inside R of frame time is not acked; one at R is.", timeoutMs: 2_000, judgesDecisions: true)
    package init() {}
    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let levels = Levels(parameters)
        let t0 = p.t0
        let c = try p.controllers(1).lowerBound
        let r = parameters.rule.refractoryMs
        // The first trigger's ack is expected; count it out of the negatives.
        p.send(levels.high(t0), from: c)
        let outcome = probe(p, controller: c, negatives: [levels.high(t0 + r - 1).encoded()], positive: levels.high(t0 + r), timeoutMs: info.timeoutMs)
        let unexpected = outcome.unexpected.filter { $0.echo != t0 }
        return judge(info, (unexpected, outcome.positiveAcked && p.echoes.contains { $0.echo == t0 }),
                     negatives: "a frame \(r - 1) ms after a trigger", positive: "frames at 0 and \(r) ms")
    }
}

package struct StaleCase: ActiveCase {
    package let info = CaseInfo(id: "AC-TRIGGER-STALE", requirements: ["ML-GESTURE-2"], level: .must,
                               summary: "Frames not newer than the newest accepted (duplicates, reordered) are ignored entirely.", timeoutMs: 2_000, judgesDecisions: true)
    package init() {}
    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let levels = Levels(parameters)
        let t0 = p.t0
        let c = try p.controllers(1).lowerBound
        let newest = t0 + 200
        let outcome = probe(p, controller: c,
                            negatives: [levels.low(newest).encoded(), levels.high(newest).encoded(), levels.high(newest - 100).encoded()],
                            positive: levels.high(newest + 100), timeoutMs: info.timeoutMs)
        return judge(info, outcome, negatives: "a repeated or older t_ms", positive: "the next newer frame")
    }
}

package struct DuplicateCase: ActiveCase {
    package let info = CaseInfo(id: "AC-TRIGGER-DUPLICATE", requirements: ["ML-GESTURE-2", "ML-ACK-RULE-1"], level: .must,
                               summary: "A duplicated triggering datagram is acked once.", timeoutMs: 2_000, judgesDecisions: true)
    package init() {}
    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let levels = Levels(parameters)
        let t0 = p.t0
        let c = try p.controllers(1).lowerBound
        let frame = levels.high(t0)
        p.send(frame, from: c)
        p.send(frame, from: c)
        let outcome = probe(p, controller: c, negatives: [], positive: levels.high(t0 + parameters.rule.refractoryMs), timeoutMs: info.timeoutMs)
        let firsts = p.echoes.filter { $0.echo == t0 }.count
        let extra = outcome.unexpected.filter { $0.echo != t0 } + Array(p.echoes.filter { $0.echo == t0 }.dropFirst())
        return judge(info, (extra, outcome.positiveAcked && firsts >= 1), negatives: "the duplicate", positive: "the original trigger")
    }
}

package struct InvalidInputCase: ActiveCase {
    package let info = CaseInfo(id: "AC-INVALID-DROPPED", requirements: ["ML-VALID-1", "ML-VALID-2", "ML-VALID-3", "ML-TRANSPORT-4"],
                               level: .must,
                               summary: "Every invalid datagram (every length 0–72 but 36, 548 and 1472 bytes, a bad CRC, NaN, ±inf, an ack) is dropped without an ack or a state change.",
                               timeoutMs: 3_000, judgesDecisions: true)
    package init() {}
    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let levels = Levels(parameters)
        let t0 = p.t0
        let c = try p.controllers(1).lowerBound
        // Every invalid datagram that carries a stamp carries one far ahead of the positive frame:
        // a host that took its t_ms as the newest (a state change, ML-VALID-2) would find the
        // positive stale and not ack it.
        var ahead = t0 + 1_000_000
        func later() -> UInt64 { ahead += 10; return ahead }
        let base = levels.high(later()).encoded()
        // Every length from 0 to 72 but 36 (each a prefix of a trigger, or a trigger with bytes after it),
        // an ack-sized 20 among them, and the largest unfragmented datagrams.
        var bad: [[UInt8]] = (0..<MotionFrame.size).map { Array(base.prefix($0)) }
        bad += (MotionFrame.size + 1...2 * MotionFrame.size).map { base + Array(repeating: 0, count: $0 - MotionFrame.size) }
        bad += [548, 1472].map { base + Array(repeating: 0xA5, count: $0 - MotionFrame.size) }
        var crc = levels.high(later()).encoded()
        crc[32] ^= 0xFF
        bad.append(crc)
        for value in [Float32.nan, .infinity, -.infinity] {
            var frame = levels.high(later())
            frame.ax = value
            var bytes = frame.encoded()
            // Re-checksum so only the non-finite value makes it invalid.
            let check = bytes.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<32])) }
            withUnsafeBytes(of: check.littleEndian) { for (i, b) in $0.enumerated() { bytes[32 + i] = b } }
            bad.append(bytes)
        }
        bad.append(HapticAck(echoTMs: later()).encoded())
        // The positive frame comes only just after the invalid ones: had any of them counted
        // as a trigger, or as the newest stamp, the refractory period or the stale rule would silence it.
        let outcome = probe(p, controller: c, negatives: bad, positive: levels.high(t0), timeoutMs: info.timeoutMs)
        return judge(info, outcome, negatives: "an invalid datagram", positive: "a valid trigger right after \(bad.count) invalid datagrams")
    }
}

package struct AckFormatCase: ActiveCase {
    package let info = CaseInfo(id: "AC-ACK-FORMAT", requirements: ["ML-ACK-1", "ML-ACK-2", "ML-ACK-3", "ML-ACK-RULE-1"], level: .must,
                               summary: "The ack to a trigger is a valid HapticAck echoing the frame's t_ms, intensity and sharpness in [0, 1].",
                               timeoutMs: 2_000, judgesDecisions: true)
    package init() {}
    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let levels = Levels(parameters)
        let t0 = p.t0
        let c = try p.controllers(1).lowerBound
        p.send(levels.high(t0), from: c)
        p.collect(forMs: info.timeoutMs) { !$0.isEmpty }
        guard let reply = p.replies.first else { return CaseResult(info, .fail("no reply to a trigger"), evidence: ["expected an ack echoing t_ms \(t0), found none"]) }
        switch MotionLinkV1.decodeResult(reply.payload) {
        case .success(.ack(let ack)) where ack.echoTMs == t0:
            return CaseResult(info, .pass, measurements: [Measurement("intensity", Double(ack.intensity)), Measurement("sharpness", Double(ack.sharpness))])
        case .success(.ack(let ack)):
            return CaseResult(info, .fail("the ack echoes the wrong timestamp"), evidence: ["expected echo_t_ms \(t0), found \(ack.echoTMs)"])
        case .success(.frame):
            return CaseResult(info, .fail("the reply is a MotionFrame"), evidence: ["expected a HapticAck, found \(Hex.encode(reply.payload))"])
        case .failure where reply.isTruncated:
            // Only the head of a long reply is kept: its length is the fault.
            return CaseResult(info, .fail("the reply is \(reply.length) bytes, not a \(HapticAck.size)-byte HapticAck"),
                              evidence: ["found a \(reply.length)-byte reply beginning \(Hex.encode(Array(reply.payload.prefix(32))))"])
        case .failure(let error):
            return CaseResult(info, .fail("the reply is not a valid HapticAck: \(error)"), evidence: ["found \(Hex.encode(reply.payload))"])
        }
    }
}

package struct IsolationCase: ActiveCase {
    package let info = CaseInfo(id: "AC-CONTROLLER-ISOLATION", requirements: ["ML-GESTURE-1", "ML-ACK-RULE-2"], level: .must,
                               summary: "Controllers keep separate state, and each ack goes to the address and port its frame came from.", timeoutMs: 2_000, judgesDecisions: true)
    package init() {}
    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let levels = Levels(parameters)
        let t0 = p.t0
        let pair = try p.controllers(2)
        let a = pair.lowerBound, b = a + 1
        p.send(levels.high(t0), from: a)
        p.send(levels.high(t0 + 100), from: b)  // inside a's refractory period: b's own state must still trigger
        p.collect(forMs: info.timeoutMs) { $0.count >= 2 }
        p.collect(forMs: 30)
        let acks = p.echoes
        var evidence: [String] = []
        if !acks.contains(where: { $0.controller == a && $0.echo == t0 }) { evidence.append("expected an ack on controller A for t_ms \(t0), found none") }
        if !acks.contains(where: { $0.controller == b && $0.echo == t0 + 100 }) {
            evidence.append("expected an ack on controller B for t_ms \(t0 + 100) (its own state), found none")
        }
        for wrong in acks where !(wrong.controller == a && wrong.echo == t0) && !(wrong.controller == b && wrong.echo == t0 + 100) {
            evidence.append("expected no ack on controller \(wrong.controller == a ? "A" : "B") for t_ms \(wrong.echo), found one")
        }
        return CaseResult(info, evidence.isEmpty ? .pass : .fail("state or acks are not kept per controller"),
                          measurements: [Measurement("acks", Double(acks.count))], evidence: evidence)
    }
}

package struct NoUnsolicitedCase: ActiveCase {
    package let info = CaseInfo(id: "AC-ACK-UNSOLICITED", requirements: ["ML-ACK-RULE-5"], level: .must,
                               summary: "A stream of frames that never trigger gets no ack.", timeoutMs: 2_000, judgesDecisions: true)
    package init() {}
    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let levels = Levels(parameters)
        let t0 = p.t0
        let c = try p.controllers(1).lowerBound
        for i in 0..<30 { p.send(levels.low(t0 + UInt64(i) * 100), from: c) }
        p.collect(forMs: 300)
        let replies = p.replies.count
        return CaseResult(info, replies == 0 ? .pass : .fail("\(replies) repl(ies) to frames that do not trigger"),
                          measurements: [Measurement("replies", Double(replies))],
                          evidence: replies == 0 ? [] : ["expected no reply to 30 frames with ay = \(levels.low(0).ay), found \(replies)"])
    }
}

/// Ack delay over many triggers (ML-ACK-RULE-3 MUST, -4 SHOULD), as round trips.
/// Frame time never runs ahead of the wall clock, as a phone's would not.
package struct AckTimingCase: ActiveCase {
    package enum Traffic: Sendable {
        /// One trigger from each of `controllers`, in batches of 20 every 10 ms.
        case oneTriggerEach(controllers: Int)
        /// `rounds` frames from each of `controllers`, `roundMs` apart in frame and wall time, a trigger every R.
        case stream(controllers: Int, rounds: Int, roundMs: UInt64)
    }

    package let info: CaseInfo
    let traffic: Traffic

    package static let must = AckTimingCase(info: CaseInfo(
        id: "AC-ACK-DEADLINE", requirements: ["ML-ACK-RULE-3", "ML-ACK-RULE-1"], level: .must,
        summary: "Over 100 triggers from 100 controllers, 20 every 10 ms, acks come within 50 ms (--reply-deadline-ms).", timeoutMs: 5_000, judgesDecisions: true),
        traffic: .oneTriggerEach(controllers: 100))
    package static let should = AckTimingCase(info: CaseInfo(
        id: "AC-ACK-PROMPT", requirements: ["ML-ACK-RULE-4"], level: .should,
        summary: "Over 100 triggers from 100 controllers, 20 every 10 ms, acks come within 10 ms.", timeoutMs: 5_000, judgesDecisions: true),
        traffic: .oneTriggerEach(controllers: 100))
    /// 1,000 frames/s from 50 controllers for 5 s (20 Hz each), a trigger every R of frame time.
    package static let load = AckTimingCase(info: CaseInfo(
        id: "AC-LOAD", requirements: ["ML-ACK-RULE-1", "ML-ACK-RULE-3"], level: .must,
        summary: "At 1,000 frames/s from 50 controllers for 5 s, every trigger is acked within the deadline.", timeoutMs: 15_000, judgesDecisions: true),
        traffic: .stream(controllers: 50, rounds: 100, roundMs: 50))

    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let levels = Levels(parameters)
        let t0 = p.t0
        var expected = 0
        var next = SystemClock.monotonicNs()
        switch traffic {
        case .oneTriggerEach(let controllers):
            let range = try p.controllers(controllers)
            for (batch, first) in stride(from: range.lowerBound, to: range.upperBound, by: 20).enumerated() {
                // Frame time advances with the wall clock: 10 ms a batch.
                let tMs = t0 + UInt64(batch) * 10
                for c in first..<min(first + 20, range.upperBound) { p.send(levels.high(tMs), from: c); expected += 1 }
                next += 10_000_000
                p.collect(untilMonotonicNs: next)
            }
        case .stream(let controllers, let rounds, let roundMs):
            let range = try p.controllers(controllers)
            let r = parameters.rule.refractoryMs
            let triggerEvery = max(1, Int((r + roundMs - 1) / roundMs))
            for round in 0..<rounds {
                let tMs = t0 + UInt64(round) * roundMs
                for c in range {
                    if round % triggerEvery == 0 { p.send(levels.high(tMs), from: c); expected += 1 } else { p.send(levels.low(tMs), from: c) }
                }
                next += Int64(roundMs) * 1_000_000
                p.collect(untilMonotonicNs: next)
            }
        }
        p.collect(forMs: info.timeoutMs) { $0.count >= expected }
        // Only the first ack to each sent trigger counts; repeats and echoes of nothing sent are faults (ML-ACK-RULE-1).
        var seen = Set<[UInt64]>(), delays: [Double] = [], extra = 0
        for ack in p.echoes {
            if let delay = ack.delayNs, seen.insert([UInt64(ack.controller), ack.echo]).inserted { delays.append(Double(delay) / 1e6) } else { extra += 1 }
        }
        let limit = info.level == .must ? parameters.replyDeadlineMs : parameters.replyShouldMs
        let series = SampleSeries(name: "ack delay", unit: "ms", values: delays, limit: limit)
        delays.sort()
        let measurements = [Measurement("triggers", Double(expected)), Measurement("acks", Double(p.echoes.count)),
                            Measurement("extra_acks", Double(extra))]
        guard !delays.isEmpty else {
            return CaseResult(info, .fail("no ack to \(expected) triggers"), measurements: measurements)
        }
        var result = evaluate(delays: delays, expected: expected, extra: extra, limit: limit, measurements: measurements)
        result.samples = [series]
        return result
    }

    private func evaluate(delays: [Double], expected: Int, extra: Int, limit: Double, measurements: [Measurement]) -> CaseResult {
        var measurements = measurements
        let p50 = percentile(delays, 50), p99 = percentile(delays, 99)
        measurements += [Measurement("p50", p50, "ms"), Measurement("p99", p99, "ms"), Measurement("max", delays.last!, "ms"),
                         Measurement("limit", limit, "ms")]
        let numbers = "p50 \(fixed(p50, 3)) ms, p99 \(fixed(p99, 3)) ms, max \(fixed(delays.last!, 3)) ms over \(delays.count) acks"
        if delays.count < expected || extra > 0 {
            let why = "\(expected - delays.count) of \(expected) triggers unacked, \(extra) ack(s) repeated or echoing no trigger; \(numbers)"
            return CaseResult(info, .fail(why), measurements: measurements)
        }
        if p99 > limit {
            let why = "p99 ack delay over \(fixed(limit, 0)) ms: \(numbers)"
            return CaseResult(info, info.level == .must ? .fail(why) : .nonStrict(why), measurements: measurements)
        }
        let late = delays.filter { $0 > limit }.count
        if late > 0 { return CaseResult(info, .nonStrict("\(late) acks over \(fixed(limit, 0)) ms, p99 within it: \(numbers)"), measurements: measurements) }
        return CaseResult(info, .pass, measurements: measurements)
    }
}
