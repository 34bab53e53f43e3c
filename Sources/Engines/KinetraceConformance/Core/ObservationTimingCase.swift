import KinetraceSupport
import KinetraceTransport
import KinetraceWire

/// A decision that shows nowhere on the wire is due on the observation channel as soon as it is
/// made (SA-OBS-3): within the run's reply deadline (`--reply-deadline-ms`) of the message that
/// caused it. Each of `count` fresh controllers sends one message that must be decided, paced
/// apart, and the observation about it is timed from when that message left. A host that reports
/// late fails; one that reports nothing is INCONCLUSIVE, never PASS.
package struct ObservationTimingCase: ActiveCase {
    package let info: CaseInfo
    /// The decision each message owes, as the protocol names it.
    let decision: String
    /// The `k`th message: one the protocol's host must decide on, whatever came before.
    let message: @Sendable (_ k: Int, _ parameters: SuiteParameters) -> [UInt8]
    let count: Int
    let spacingMs: Int
    /// Late observations the case tolerates before it fails: scheduling noise on a loaded machine, not a slow host.
    let lateAllowed: Int

    package init(info: CaseInfo, decision: String, count: Int = 20, spacingMs: Int = 25, lateAllowed: Int = 2,
                message: @escaping @Sendable (_ k: Int, _ parameters: SuiteParameters) -> [UInt8]) {
        self.info = info
        self.decision = decision
        self.count = count
        self.spacingMs = spacingMs
        self.lateAllowed = lateAllowed
        self.message = message
    }

    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let controllers = try p.controllers(count)
        var sent: [Int64] = []
        for (k, c) in controllers.enumerated() {
            let before = SystemClock.monotonicNs()
            p.send(message(k, parameters), from: c)
            sent.append(before)
            p.collect(forMs: spacingMs) { _ in p.hostFailure != nil || p.refused }
        }
        let deadlineNs = Int64(parameters.replyDeadlineMs * 1e6)
        let waitMs = max(200, Int(parameters.replyDeadlineMs * 4))
        p.collect(forMs: waitMs) { _ in
            p.hostFailure != nil || controllers.allSatisfy { !p.observed(decision, on: $0).isEmpty }
        }
        // The first observation about each controller, timed from its one message.
        var delaysMs: [Double] = [], missing: [Int] = [], late: [(Int, Double)] = []
        for (k, c) in controllers.enumerated() {
            guard let first = p.observed(decision, on: c).first else { missing.append(k); continue }
            let delay = first.monoNs - sent[k]
            delaysMs.append(Double(delay) / 1e6)
            if delay > deadlineNs { late.append((k, Double(delay) / 1e6)) }
        }
        let sorted = delaysMs.sorted()
        var measurements = [Measurement("messages", Double(count)), Measurement("observed", Double(delaysMs.count)),
                            Measurement("late", Double(late.count)), Measurement("deadline", parameters.replyDeadlineMs, "ms")]
        if !sorted.isEmpty {
            measurements += [Measurement("delay_p50", sorted[sorted.count / 2], "ms"), Measurement("delay_max", sorted.last!, "ms")]
        }
        if !p.canObserve {
            return CaseResult(info, .inconclusive(p.observationsMissing("when the host decides") ?? "the host has no observation channel"),
                              measurements: measurements)
        }
        if let verdict = p.unjudgedObservations("when the host decides") {
            return CaseResult(info, verdict, measurements: measurements)
        }
        var result = CaseResult(info, .pass, measurements: measurements)
        result.samples = [SampleSeries(name: "observation delay", unit: "ms", values: delaysMs, limit: parameters.replyDeadlineMs)]
        var evidence = late.prefix(5).map { "message \($0.0 + 1): expected its \(decision) within \(parameters.replyDeadlineMs) ms, observed after \(($0.1 * 10).rounded() / 10) ms" }
        evidence += missing.prefix(5).map { "message \($0 + 1): expected an observation of its \(decision), found none \(waitMs) ms after the last message" }
        if late.count > lateAllowed || !missing.isEmpty {
            result.verdict = .fail(late.count > lateAllowed
                ? "\(late.count) of \(count) decisions were reported later than \(parameters.replyDeadlineMs) ms after their message"
                : "\(missing.count) of \(count) messages that must be decided were not reported")
            result.evidence = evidence
        }
        return result
    }
}
