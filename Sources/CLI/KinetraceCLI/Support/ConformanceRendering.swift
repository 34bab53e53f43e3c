import Foundation
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

    /// The report as the library's `ConformanceReport` encodes it: the one definition of its shape.
    static func json(_ report: SuiteReport, strict: Bool) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Never thrown on: the document holds finite numbers only (ConformanceReport drops others).
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        guard let data = try? encoder.encode(ConformanceReport(report, strict: strict)) else { return "{}\n" }
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    static func durationMs(_ r: CaseResult) -> String { SummaryRendering.ms(Double(r.durationNs) / 1e6, 1) }

    static func number(_ value: Double) -> String {
        value.rounded() == value && abs(value) < 1e15 ? String(Int64(value)) : SummaryRendering.ms(value, 3)
    }
}

private extension String {
    func padding(_ width: Int) -> String { self + String(repeating: " ", count: Swift.max(0, width - count)) }
}
