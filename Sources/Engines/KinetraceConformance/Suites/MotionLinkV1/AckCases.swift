import KinetraceTrace
import KinetraceWire

/// Passive cases that need the host→controller direction.
func needsReplies(_ info: CaseInfo, _ summary: PassiveSummary) -> CaseResult? {
    summary.replies == 0
        ? CaseResult(info, .inconclusive("the capture holds no host→controller traffic"))
        : nil
}

/// Every host→controller datagram is a valid HapticAck.
package struct AckLayoutCase: PassiveCase {
    package let info = CaseInfo(
        id: "PC-ACK-LAYOUT", requirements: ["ML-TRANSPORT-4", "ML-ACK-1", "ML-ACK-2", "ML-ACK-3"], level: .must,
        summary: "Every host→controller datagram is a 20-byte HapticAck with a matching CRC, intensity and sharpness in [0, 1].")
    package init() {}

    package func makeJudge(_ parameters: SuiteParameters) -> any PassiveJudge { Judge(info: info) }

    struct Judge: PassiveJudge {
        let info: CaseInfo
        var invalid = Kept<(MessageRef, String)>()

        mutating func observe(_ d: CaptureObservation.Datagram) {
            guard d.direction == .hostToController else { return }
            switch d.decoded {
            case .success(.ack): return
            case .success(.frame): invalid.add((d.ref, "a MotionFrame sent to a controller"))
            case .failure(let error): invalid.add((d.ref, error.description))
            }
        }

        func verdict(_ summary: PassiveSummary) -> CaseResult {
            if let inconclusive = needsReplies(info, summary) { return inconclusive }
            let measurements = [Measurement("replies", Double(summary.replies)), Measurement("invalid", Double(invalid.total))]
            guard !invalid.isEmpty else { return CaseResult(info, .pass, measurements: measurements) }
            return CaseResult(info, .fail("\(invalid.total) of \(summary.replies) replies are not valid HapticAcks"), measurements: measurements,
                              evidence: evidence(invalid.items, total: invalid.total) { "\(summary.describe($0.0)): expected a valid HapticAck, found \($0.1)" })
        }
    }
}

/// Acks carry intensity and sharpness 1.0.
package struct AckValuesCase: PassiveCase {
    package let info = CaseInfo(
        id: "PC-ACK-VALUES", requirements: ["ML-ACK-4"], level: .should,
        summary: "Acks carry intensity and sharpness 1.0 (the paper's values) unless the host is configured otherwise.")
    package init() {}

    package func makeJudge(_ parameters: SuiteParameters) -> any PassiveJudge { Judge(info: info) }

    struct Judge: PassiveJudge {
        let info: CaseInfo
        var other = Kept<(MessageRef, HapticAck)>()
        var valid = 0

        mutating func observe(_ d: CaptureObservation.Datagram) {
            guard d.direction == .hostToController, case .success(.ack(let ack)) = d.decoded else { return }
            valid += 1
            if ack.intensity != 1 || ack.sharpness != 1 { other.add((d.ref, ack)) }
        }

        func verdict(_ summary: PassiveSummary) -> CaseResult {
            if let inconclusive = needsReplies(info, summary) { return inconclusive }
            guard valid > 0 else { return CaseResult(info, .inconclusive("no valid acks")) }
            guard !other.isEmpty else { return CaseResult(info, .pass, measurements: [Measurement("acks", Double(valid))]) }
            return CaseResult(info, .nonStrict("\(other.total) of \(valid) acks use other values"),
                              measurements: [Measurement("acks", Double(valid)), Measurement("other_values", Double(other.total))],
                              evidence: evidence(other.items, total: other.total) { "\(summary.describe($0.0)): expected 1.0 / 1.0, found \($0.1.intensity) / \($0.1.sharpness)" })
        }
    }
}

/// Exactly one ack per trigger, none for anything else.
package struct AckRuleCase: PassiveCase {
    package let info = CaseInfo(
        id: "PC-ACK-RULE", requirements: ["ML-ACK-RULE-1", "ML-ACK-RULE-5", "ML-GESTURE-1", "ML-GESTURE-2", "ML-GESTURE-3"],
        level: .must, summary: "The host acks every trigger the gesture rule finds exactly once, and nothing else.")
    package init() {}

    package func makeJudge(_ parameters: SuiteParameters) -> any PassiveJudge { SummaryJudge(body: verdict) }

    func verdict(_ context: PassiveSummary) -> CaseResult {
        if let inconclusive = needsReplies(info, context) { return inconclusive }
        let m = context.replyMatching
        let missing = m.triggers.filter { !$0.isAnswered }
        let repeated = m.triggers.filter { $0.replyCount > 1 }
        let rule = context.parameters.rule
        let measurements = [Measurement("triggers", Double(m.triggers.count)), Measurement("acks", Double(m.validReplies)),
                            Measurement("missing", Double(missing.count)), Measurement("repeated", Double(repeated.count)),
                            Measurement("unexpected", Double(m.unexpectedCount))]
        guard !missing.isEmpty || !repeated.isEmpty || !m.unexpected.isEmpty else {
            return CaseResult(info, m.triggers.isEmpty ? .inconclusive("no frame in the capture triggers (τ = \(rule.threshold) g)") : .pass,
                              measurements: measurements)
        }
        var lines = evidence(missing) { "\(context.describe($0.frame)): expected an ack echoing t_ms \($0.senderTimeMs), found none" }
        lines += evidence(repeated) { "\(context.describe($0.frame)): expected one ack, found \($0.replyCount)" }
        lines += evidence(m.unexpected, total: m.unexpectedCount) { "\(context.describe($0.reply)): expected no ack, found one that \($0.reason)" }
        var why = "\(missing.count) trigger(s) unacked, \(repeated.count) acked more than once, \(m.unexpectedCount) unexpected ack(s)"
        if context.capturePoint != .host && !missing.isEmpty {
            why += " (captured at \(context.capturePoint): frames lost after the capture point also show as unacked)"
        }
        return CaseResult(info, .fail(why), measurements: measurements, evidence: lines)
    }
}

/// Each ack goes to the address and port its trigger came from.
package struct AckDestinationCase: PassiveCase {
    package let info = CaseInfo(
        id: "PC-ACK-DESTINATION", requirements: ["ML-ACK-RULE-2"], level: .must,
        summary: "Each ack goes to the source address and port of the frame it answers.")
    package init() {}

    package func makeJudge(_ parameters: SuiteParameters) -> any PassiveJudge { SummaryJudge(body: verdict) }

    func verdict(_ context: PassiveSummary) -> CaseResult {
        if let inconclusive = needsReplies(info, context) { return inconclusive }
        let m = context.replyMatching
        let answered = m.triggers.filter(\.isAnswered).count
        let measurements = [Measurement("acks_to_their_trigger", Double(answered)), Measurement("misdirected", Double(m.misdirectedCount))]
        guard m.misdirected.isEmpty else {
            return CaseResult(info, .fail("\(m.misdirectedCount) ack(s) went to another controller than their trigger's"),
                              measurements: measurements,
                              evidence: evidence(m.misdirected, total: m.misdirectedCount) { "\(context.describe($0.reply)): expected it to go to \($0.owner)" })
        }
        return CaseResult(info, answered == 0 ? .inconclusive("no ack answers a trigger") : .pass, measurements: measurements)
    }
}

/// Acks leave within the deadline of their frame's arrival, on the capture clock.
package struct AckDeadlineCase: PassiveCase {
    package let info: CaseInfo

    /// ML-ACK-RULE-3 (MUST, `replyDeadlineMs`).
    package static let must = AckDeadlineCase(info: CaseInfo(
        id: "PC-ACK-DEADLINE", requirements: ["ML-ACK-RULE-3"], level: .must,
        summary: "Acks leave within 50 ms (--reply-deadline-ms) of their frame's arrival."))
    /// ML-ACK-RULE-4 (SHOULD, 10 ms).
    package static let should = AckDeadlineCase(info: CaseInfo(
        id: "PC-ACK-PROMPT", requirements: ["ML-ACK-RULE-4"], level: .should,
        summary: "Acks leave within 10 ms of their frame's arrival."))

    package func makeJudge(_ parameters: SuiteParameters) -> any PassiveJudge { SummaryJudge(body: verdict) }

    func verdict(_ context: PassiveSummary) -> CaseResult {
        var result = judge(context)
        let point = context.capturePoint
        if !context.replyMatching.delaysMs.isEmpty, point == .host || point == .network || point == .synthetic {
            let limit = info.level == .must ? context.parameters.replyDeadlineMs : context.parameters.replyShouldMs
            result.samples = [SampleSeries(name: "ack delay", unit: "ms", values: context.replyMatching.delaysMs, limit: limit)]
        }
        return result
    }

    private func judge(_ context: PassiveSummary) -> CaseResult {
        if let inconclusive = needsReplies(info, context) { return inconclusive }
        let point = context.capturePoint
        guard point == .host || point == .network || point == .synthetic else {
            return CaseResult(info, .inconclusive("captured at \(point): ack delays need a capture at the host or on its link"))
        }
        let limit = info.level == .must ? context.parameters.replyDeadlineMs : context.parameters.replyShouldMs
        let delays = context.replyMatching.delaysMs.sorted()
        let p50 = percentile(delays, 50), p99 = percentile(delays, 99)
        var measurements = [Measurement("samples", Double(delays.count))]
        if !delays.isEmpty {
            measurements += [Measurement("p50", p50, "ms"), Measurement("p99", p99, "ms"), Measurement("max", delays.last!, "ms"),
                             Measurement("limit", limit, "ms")]
        }
        guard delays.count >= context.parameters.minimumTimingSamples else {
            return CaseResult(info, .inconclusive("\(delays.count) answered trigger(s); at least \(context.parameters.minimumTimingSamples) are needed"),
                              measurements: measurements)
        }
        let late = delays.filter { $0 > limit }.count
        let numbers = "p50 \(fixed(p50, 3)) ms, p99 \(fixed(p99, 3)) ms, max \(fixed(delays.last!, 3)) ms"
        if p99 > limit {
            let why = "p99 ack delay over \(limit) ms: \(numbers); \(late) of \(delays.count) late"
            return CaseResult(info, info.level == .must ? .fail(why) : .nonStrict(why), measurements: measurements,
                              evidence: ["expected p99 ≤ \(limit) ms, found \(fixed(p99, 3)) ms"])
        }
        if late > 0 {
            // Inside the grace band: the bulk is on time, a few stragglers are not.
            return CaseResult(info, .nonStrict("\(late) of \(delays.count) acks over \(limit) ms, p99 within it: \(numbers)"),
                              measurements: measurements)
        }
        return CaseResult(info, .pass, measurements: measurements)
    }
}
