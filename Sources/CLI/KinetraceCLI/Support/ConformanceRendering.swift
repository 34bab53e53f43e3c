import KinetraceJSON
import KinetraceConformance
import KinetraceTrace

/// Conformance reports for people (text) and machines (JSON); JUnit XML is `JUnitRendering.conform`.
enum ConformanceRendering {
    static func text(_ report: SuiteReport, strict: Bool) -> String {
        var lines = ["kinetrace conform \(ConformanceSuite.version) (\(report.specVersion)), \(report.mode), \(report.target)",
                     (report.hostRule.isEmpty ? "rule τ = \(report.parameters.rule.threshold), R = \(report.parameters.rule.refractoryMs) ms" : "host: \(report.hostRule)")
                        + (report.hostReplies ? "; reply deadline \(report.parameters.replyDeadlineMs) ms" : "") + (strict ? "; strict" : ""),
                     ""]
        for r in report.results {
            let verdict = r.verdict.name.padding(13)
            lines.append("\(verdict) \(r.info.id) [\(r.info.level.rawValue): \(r.info.requirements.joined(separator: ", "))] \(durationMs(r)) ms")
            lines.append("              \(r.info.summary)")
            if let reason = r.verdict.reason { lines.append("              \(reason)") }
            if !r.measurements.isEmpty {
                lines.append("              " + r.measurements.map { "\($0.name) \(number($0.value))\($0.unit.isEmpty ? "" : " " + $0.unit)" }.joined(separator: ", "))
            }
            for line in r.evidence { lines.append("                • \(line)") }
        }
        let counts = report.counts
        lines.append("")
        lines.append(["PASS", "FAIL", "NON-STRICT", "INFORMATIONAL", "INCONCLUSIVE", "ERROR"]
            .map { "\(counts[$0] ?? 0) \($0.lowercased())" }.joined(separator: ", ")
            + ": " + report.status(strict: strict)
            + " (\(SummaryRendering.ms(Double(report.elapsedNs) / 1e6, 0)) ms)")
        return lines.joined(separator: "\n") + "\n"
    }

    static func json(_ report: SuiteReport, strict: Bool) -> String {
        JSONValue.object([
            "format": .string("kinetrace-conform"), "version": .integer(2),
            "suite_version": .string(ConformanceSuite.version), "spec_version": .string(report.specVersion),
            "mode": .string(report.mode), "target": .string(report.target), "strict": .bool(strict),
            "parameters": .object(["threshold": .number(report.parameters.rule.threshold),
                                   "refractory_ms": .integer(Int64(report.parameters.rule.refractoryMs)),
                                   "reply_deadline_ms": .number(report.parameters.replyDeadlineMs),
                                   "min_samples": .integer(Int64(report.parameters.minimumTimingSamples)),
                                   "stale_resync_ms": .integer(Int64(report.parameters.rule.staleResyncMs)),
                                   "max_controllers": .integer(Int64(report.parameters.maxControllers)),
                                   "max_connections": .integer(Int64(report.parameters.maxConnections))]),
            "cases": .array(report.results.map { r in
                .object(["id": .string(r.info.id), "requirements": .array(r.info.requirements.map { .string($0) }),
                         "level": .string(r.info.level.rawValue), "summary": .string(r.info.summary),
                         "verdict": .string(r.verdict.name), "detail": r.verdict.reason.map { .string($0) } ?? .null,
                         "measurements": .object(Dictionary(uniqueKeysWithValues: r.measurements.map { ($0.name, .number($0.value)) })),
                         "evidence": .array(r.evidence.map { .string($0) }),
                         "duration_ms": .number(Double(r.durationNs) / 1e6)])
            }),
            "summary": .object(report.counts.mapValues { .integer(Int64($0)) }),
            "failed": .bool(report.failed(strict: strict)),
            "status": .string(report.status(strict: strict)),
            "decisions_judged": .bool(!report.decisionsUnjudged),
            "elapsed_ms": .number(Double(report.elapsedNs) / 1e6),
        ]).jsonText + "\n"
    }

    static func durationMs(_ r: CaseResult) -> String { SummaryRendering.ms(Double(r.durationNs) / 1e6, 1) }

    static func number(_ value: Double) -> String {
        value.rounded() == value && abs(value) < 1e15 ? String(Int64(value)) : SummaryRendering.ms(value, 3)
    }
}

private extension String {
    func padding(_ width: Int) -> String { self + String(repeating: " ", count: Swift.max(0, width - count)) }
}
