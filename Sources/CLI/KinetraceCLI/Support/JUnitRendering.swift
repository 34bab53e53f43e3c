import ArgumentParser
import Foundation
import KinetraceConformance
import KinetraceGestures
import KinetraceJUnit
import KinetraceImpairment
import KinetraceReplay
import KinetraceSupport
import KinetraceTrace

/// conform, gestures eval and replay results as the one JUnit report (`KinetraceJUnit`),
/// and the report a harness error leaves.
enum JUnitRendering {
    /// A suite's timestamp in JUnit's form: RFC 3339 in UTC cut to the second, without the zone.
    static func timestamp(_ epochNs: Int64?) -> String? {
        epochNs.map { String(RFC3339.string(fromNanoseconds: $0).prefix(19)) }
    }

    // MARK: conform

    /// One testcase per case: FAIL (and NON-STRICT under --strict) a failure, INCONCLUSIVE
    /// skipped, ERROR an error; the rest pass with their verdict in system-out.
    static func conform(_ report: SuiteReport, strict: Bool, startedEpochNs: Int64?) -> JUnitReport {
        let p = report.parameters
        var properties = [
            JUnitProperty("suite_version", ConformanceSuite.version), JUnitProperty("spec_version", report.specVersion),
            JUnitProperty("mode", report.mode), JUnitProperty("target", report.target), JUnitProperty("strict", String(strict)),
            JUnitProperty("threshold", String(p.rule.threshold)), JUnitProperty("refractory_ms", String(p.rule.refractoryMs)),
            JUnitProperty("stale_resync_ms", String(p.rule.staleResyncMs)),
            JUnitProperty("min_samples", String(p.minimumTimingSamples)), JUnitProperty("max_controllers", String(p.maxControllers)),
            JUnitProperty("max_connections", String(p.maxConnections)),
        ]
        // What the protocol's host does, in its own words; a reply deadline only where there are replies.
        if !report.hostRule.isEmpty { properties.append(JUnitProperty("host_rule", report.hostRule)) }
        if report.hostReplies { properties.append(JUnitProperty("reply_deadline_ms", String(p.replyDeadlineMs))) }
        var cases = report.results.map { r -> JUnitCase in
            let detail = ([r.verdict.reason].compactMap { $0 } + r.evidence).joined(separator: "\n")
            let result: JUnitCase.Result
            switch r.verdict {
            case .fail(let why): result = .failed(JUnitProblem(type: r.verdict.name, message: why, detail: detail))
            case .nonStrict(let why) where strict: result = .failed(JUnitProblem(type: r.verdict.name, message: why, detail: detail))
            case .inconclusive(let why): result = .skipped(why)
            case .error(let why): result = .errored(JUnitProblem(type: r.verdict.name, message: why, detail: detail))
            default: result = .passed
            }
            let measured = r.measurements.map { "\($0.name)=\(ConformanceRendering.number($0.value))\($0.unit)" }.joined(separator: " ")
            var out = "\(r.verdict.name) [\(r.info.level.rawValue): \(r.info.requirements.joined(separator: ", "))]"
            if !measured.isEmpty { out += " " + measured }
            if case .passed = result, let reason = r.verdict.reason { out += "\n" + ([reason] + r.evidence).joined(separator: "\n") }
            return JUnitCase(name: r.info.id, className: r.info.requirements.joined(separator: " "), durationNs: r.durationNs,
                             result: result, systemOut: out)
        }
        // All skipped reads as green to a dashboard, yet the run exits 1: say so as a failure
        // (unless errors already show that the run did not judge).
        let errored = report.results.contains { if case .error = $0.verdict { return true } else { return false } }
        if report.judgedNothing && !errored {
            let problem = JUnitProblem(type: "NOTHING-JUDGED", message: report.status(strict: strict),
                                       detail: "every MUST and SHOULD case was INCONCLUSIVE: see their reasons")
            cases.append(JUnitCase(name: "judged something", className: "conform", result: .failed(problem)))
        } else if report.decisionsUnjudged && !errored && !report.results.contains(where: { $0.fails(strict: strict) }) {
            // Transport cases passed, but none of the host's decisions was judged: the run exits 1, so the report fails too.
            let problem = JUnitProblem(type: "DECISIONS-NOT-JUDGED", message: report.status(strict: strict),
                                       detail: "every case that judges the host's decisions was INCONCLUSIVE: see their reasons")
            cases.append(JUnitCase(name: "judged the host's decisions", className: "conform", result: .failed(problem)))
        }
        let suite = JUnitSuite(name: report.target, durationNs: report.elapsedNs, timestamp: timestamp(startedEpochNs),
                               properties: properties, cases: cases, systemOut: report.status(strict: strict))
        return JUnitReport(name: "kinetrace conform", suites: [suite], durationNs: report.elapsedNs)
    }

    // MARK: gestures eval

    /// One testcase per trace (its scores in system-out) and one per gate, failed when it regressed.
    /// `baselineChecks` is how many of `checks` compare with --baseline (the rest are --min-f1 and --min-recall).
    static func gestures(_ report: GestureReport, checks: [GestureBaseline.Check], baselineChecks: Int,
                         traceRegressions: [GestureBaseline.TraceRegression], baselinePath: String?,
                         timing: GestureTiming, startedEpochNs: Int64?) -> JUnitReport {
        let best = report.bestIndex
        let number = { (x: Double) in GestureRendering.number(x) }
        var properties = [JUnitProperty("detector", report.detector), JUnitProperty("setting", GestureRendering.settingText(report, best)),
                          JUnitProperty("gestures", report.gestures.joined(separator: " ")),
                          JUnitProperty("window_ms", "\(GestureRendering.number(report.window.beforeMs, 0)):\(GestureRendering.number(report.window.afterMs, 0))")]
        if let swept = report.sweptParameter { properties.append(JUnitProperty("swept", "\(swept) over \(report.settings.count) values")) }
        if let baselinePath { properties.append(JUnitProperty("baseline", baselinePath)) }
        let regressions = Dictionary(traceRegressions.map { ($0.source, $0) }, uniquingKeysWith: { first, _ in first })
        var cases = report.traces.enumerated().map { (i, t) -> JUnitCase in
            let s = t.scores[best].score
            var out = "TP \(s.truePositives) FP \(s.falsePositives) FN \(s.falseNegatives) precision \(GestureRendering.ratio(s.precision)) "
                + "recall \(GestureRendering.ratio(s.recall)) F1 \(GestureRendering.ratio(s.f1)); \(t.labels) labels, \(t.samples) samples"
            // A trace's drop says where a total drop comes from; only the totals gate the run.
            if let drop = regressions[t.source] { out += "\nF1 \(number(drop.current)) against the baseline's \(number(drop.baseline))" }
            return JUnitCase(name: t.source, className: report.detector,
                             durationNs: i < timing.perTraceNs.count ? timing.perTraceNs[i] : nil, systemOut: out)
        }
        for (i, c) in checks.enumerated() {
            let floor = c.baseline - c.margin
            let fromBaseline = i < baselineChecks
            let result: JUnitCase.Result = c.regressed
                ? .failed(JUnitProblem(type: fromBaseline ? "baseline-regression" : "below-minimum",
                                       message: "\(c.metric) \(number(c.current)) below \(number(floor))",
                                       detail: fromBaseline ? "baseline \(number(c.baseline)) − margin \(number(c.margin))" : ""))
                : .passed
            cases.append(JUnitCase(name: "\(c.metric) ≥ \(number(floor))", className: "gate", result: result,
                                   systemOut: "\(c.metric) \(number(c.current))"))
        }
        let suite = JUnitSuite(name: "\(report.detector) \(GestureRendering.settingText(report, best))", durationNs: timing.totalNs,
                               timestamp: timestamp(startedEpochNs), properties: properties, cases: cases)
        return JUnitReport(name: "kinetrace gestures eval", suites: [suite], durationNs: timing.totalNs)
    }

    // MARK: replay

    /// Evidence lines kept in a failure's text per kind (missing, unexpected); the counts are whole.
    static let evidenceKept = 100

    /// One testcase per controller, failed when its replies differ from the rule's prediction (the
    /// mismatch `--strict` exits 1 on). A protocol with no replies skips them: nothing to compare.
    /// A replay that stopped early skips them too and adds one errored testcase saying why.
    static func replay(_ report: ReplayReport, inputs: [String], protocolName: String, replies: Bool, strict: Bool,
                       network: String?, startedEpochNs: Int64?) -> JUnitReport {
        var properties = [JUnitProperty("target", report.target), JUnitProperty("protocol", protocolName),
                          JUnitProperty("inputs", inputs.joined(separator: " ")), JUnitProperty("seed", String(report.seed)),
                          JUnitProperty("outcome", report.outcome.rawValue), JUnitProperty("strict", String(strict))]
        if let network { properties.append(JUnitProperty("network", network)) }
        let className = "replay.\(protocolName)"
        var cases = report.controllers.enumerated().map { (i, c) -> JUnitCase in
            let missing = c.repliesPredicted - c.repliesMatched
            var out = "\(c.endpoint) replaying \(c.source): sent \(c.sent), lost \(c.lost)"
            if c.sendErrors > 0 { out += ", \(c.sendErrors) send errors" }
            if replies {
                out += "; replies \(c.repliesPredicted) predicted, \(c.repliesMatched) matched, \(missing) missing, \(c.repliesUnexpected) unexpected"
            }
            if c.roundTrips.count > 0, let p50 = c.roundTrips.percentileMs(50) { out += "; round trip p50 \(SummaryRendering.ms(p50, 3)) ms" }
            let result: JUnitCase.Result
            if report.outcome != .completed {
                result = .skipped("not judged: the replay stopped early (\(report.outcome.rawValue))")
            } else if !replies {
                result = .skipped("\(protocolName) hosts send no replies, so there is no prediction to compare with (conform judges their decisions)")
            } else if missing != 0 || c.repliesUnexpected != 0 {
                result = .failed(JUnitProblem(type: "reply-mismatch",
                                              message: "replies differ from the gesture rule's prediction: \(missing) of \(c.repliesPredicted) missing, \(c.repliesUnexpected) unexpected",
                                              detail: mismatchEvidence(report, controller: i)))
            } else {
                result = .passed
            }
            return JUnitCase(name: "controller \(i + 1) (\(c.source))", className: className, result: result, systemOut: out)
        }
        if report.outcome != .completed {
            let problem = JUnitProblem(type: report.outcome.rawValue, message: report.detail ?? report.outcome.rawValue,
                                       detail: report.hostExit.map { "host process \($0)" } ?? "")
            cases.insert(JUnitCase(name: "replay", className: className, durationNs: report.elapsedNs, result: .errored(problem)), at: 0)
        }
        let suite = JUnitSuite(name: "replay to \(report.target)", durationNs: report.elapsedNs, timestamp: timestamp(startedEpochNs),
                               properties: properties, cases: cases)
        return JUnitReport(name: "kinetrace replay", suites: [suite], durationNs: report.elapsedNs)
    }

    /// The controller's triggers without their reply and its replies nobody predicted, by stamp.
    private static func mismatchEvidence(_ report: ReplayReport, controller: Int) -> String {
        let mine = report.triggers.filter { $0.controller == controller }
        let missing = mine.filter { $0.predicted && $0.roundTripNs == nil }
        let unexpected = mine.filter { !$0.predicted }
        var lines = missing.prefix(evidenceKept).map { "missing: the reply to the sample stamped \($0.senderTimeMs)" }
        if missing.count > evidenceKept { lines.append("… and \(missing.count - evidenceKept) more missing") }
        lines += unexpected.prefix(evidenceKept).map { "unexpected: a reply echoing sender time \($0.senderTimeMs), which the rule does not trigger on" }
        if unexpected.count > evidenceKept { lines.append("… and \(unexpected.count - evidenceKept) more unexpected") }
        return lines.joined(separator: "\n")
    }

    // MARK: Harness errors

    /// A report for a run that stopped before it could judge anything: one errored testcase
    /// named for the run, whose type is the exit status's name and whose message is the
    /// error line the command printed.
    static func harnessError(command: String, arguments: [String], status: Int32, message: String, durationNs: Int64,
                             startedEpochNs: Int64) -> JUnitReport {
        let problem = JUnitProblem(type: exitStatusName(status), message: message,
                                   detail: "\(command) stopped with exit status \(status): \(message)")
        let testCase = JUnitCase(name: "run", className: command.replacingOccurrences(of: " ", with: "."), durationNs: durationNs,
                                 result: .errored(problem))
        let suite = JUnitSuite(name: command, durationNs: durationNs, timestamp: timestamp(startedEpochNs),
                               properties: [JUnitProperty("arguments", arguments.joined(separator: " "))], cases: [testCase],
                               systemOut: "harness error: nothing was judged")
        return JUnitReport(name: command, suites: [suite], durationNs: durationNs)
    }

    /// sysexits(3)'s meaning of each status `ExitStatus` uses, as a failure type.
    static func exitStatusName(_ status: Int32) -> String {
        switch status {
        case 65: return "data-error"
        case 66: return "no-input"
        case 69: return "unavailable"
        case 73: return "cannot-create"
        case 74: return "io-error"
        case 75: return "timed-out"
        case 76: return "protocol-failure"
        case 77: return "no-permission"
        case 130, 143: return "interrupted"
        default: return "exit-\(status)"
        }
    }
}

/// Writes a JUnit report for a harness error, so CI that reads the report sees the run
/// failed to judge instead of finding no file, or last run's. The command still exits
/// with its own status.
final class JUnitErrorGuard {
    let command: String
    let enabled: Bool
    let path: String?
    let startedEpochNs = SystemClock.realtimeNs()
    let startedNs = SystemClock.monotonicNs()
    /// Set before the command writes its own report: after that, nothing more is written,
    /// even when writing it failed (a second try would fail the same way).
    private(set) var reportWritten = false

    init(command: String, enabled: Bool, path: String?) {
        self.command = command
        self.enabled = enabled
        self.path = path
    }

    /// Writes the command's own report, once.
    func write(_ report: JUnitReport) throws {
        reportWritten = true
        try writeOutput(report.xml(), to: path)
    }

    /// Runs a command's body; an exit status other than 0, 1 and 64 (a usage error, found
    /// before anything ran) leaves an error report when none was written.
    func run(_ body: () throws -> Void) throws {
        ErrorLines.clear()
        do {
            try body()
        } catch let exit as ExitCode where ![0, 1, ExitCode.validationFailure.rawValue].contains(exit.rawValue) {
            writeErrorReport(status: exit.rawValue)
            throw exit
        }
    }

    private func writeErrorReport(status: Int32) {
        guard enabled, !reportWritten else { return }
        reportWritten = true
        let message = ErrorLines.last ?? "\(command) stopped with exit status \(status)"
        let report = JUnitRendering.harnessError(command: command, arguments: Array(CommandLine.arguments.dropFirst()),
                                                 status: status, message: message,
                                                 durationNs: SystemClock.monotonicNs() - startedNs, startedEpochNs: startedEpochNs)
        // The exit status already says what went wrong; a report that cannot be written adds its own line.
        try? writeOutput(report.xml(), to: path)
    }
}

/// The last error line printed, for the harness-error report to quote.
enum ErrorLines {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var latest: String?

    static func record(_ line: String) { lock.withLock { latest = line } }
    static func clear() { lock.withLock { latest = nil } }
    static var last: String? { lock.withLock { latest } }
}
