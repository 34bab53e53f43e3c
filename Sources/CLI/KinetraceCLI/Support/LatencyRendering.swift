import Foundation
import KinetraceJSON
import KinetraceSupport
import KinetraceAnalysis
import KinetraceTrace

/// `kinetrace latency` reports: a table per measure for people, JSON
/// (specs/latency-report-v2.schema.json) and CSV for machines.
enum LatencyRendering {
    static let percentileNames = ["p50", "p90", "p99", "p99.9"]

    // MARK: Text

    static func text(_ reports: [LatencyReport]) -> String { ReportStream.collected { write(text: reports, to: $0) } }

    /// The text a line at a time, written as it is made (a line per controller and measure).
    static func write(text reports: [LatencyReport], to stream: ReportStream) {
        let lines = LineSink(stream: stream)
        for (n, report) in reports.enumerated() {
            if n > 0 { lines.append("") }
            let a = report.analysis
            lines.append(report.source)
            lines.append("  recorded at \(a.header.capturePoint) (clock \(a.header.clock)), \(a.controllers.count) controller(s); "
                         + "outliers beyond \(SummaryRendering.ms(a.options.sigmas, 1))σ removed; median per \(a.options.medianScope.rawValue)"
                         + (a.options.baseMs != 0 ? "; base \(SummaryRendering.ms(a.options.baseMs, 3)) ms" : ""))
            if let replay = a.header.replay {
                // The header is input: its texts reach the terminal escaped.
                lines.append(TerminalText.escaped("  a replay of \(replay.source) (timestamps \(replay.timestamps))"
                                                  + (replay.networkLine.map { "; " + $0 } ?? "; no network")))
            }
            lines.append("  mean…sd: the paper's Table I over the samples kept; p50…p99.9: every sample, from an HDR histogram. The sender clock counts whole ms.")
            if a.invalidMessages > 0 || a.unpairedReplies > 0 || a.unusableStamps > 0 {
                lines.append("  \(a.invalidMessages) invalid message(s) left out; \(a.unpairedReplies) reply(ies) echo no sample in the trace"
                             + (a.unusableStamps > 0 ? "; \(a.unusableStamps) stamp(s) too far from the capture time to use" : ""))
            }
            for note in a.notes { lines.append("  " + note) }
            for result in a.measures {
                lines.append("")
                lines.append(result.measure.title + ", ms")
                lines.append("  " + result.measure.meaning(in: a.header))
                let offsets = a.clocksIncomparable && result.medians != nil
                table(result, controllers: a.controllers, medianName: offsets ? "median*" : "median") { lines.append("  " + $0) }
                if offsets { lines.append("  * median: the offset between the two clocks plus the typical latency; not a latency") }
                if let finals = result.finalValues {
                    lines.append("  after the last message: " + zip(a.controllers, finals).compactMap { controller, value in
                        value.map { "\(controller) \(number($0)) ms" } }.joined(separator: ", "))
                }
            }
            for missing in a.unavailable {
                lines.append("")
                lines.append("\(missing.measure.title): not available: \(missing.reason)")
            }
        }
    }

    /// `append` as on an array of lines, each written with its newline.
    private struct LineSink {
        let stream: ReportStream
        func append(_ line: String) { stream.line(line) }
    }

    /// The table's lines in turn: its rows are made one at a time, not held.
    private static func table(_ result: LatencyAnalysis.MeasureResult, controllers: [Endpoint], medianName: String = "median",
                              line: (String) -> Void) {
        let perController = controllers.count > 1 || result.medians != nil
        let allName = controllers.count == 1 && result.medians == nil ? controllers[0].description : "all"
        var nameWidth = max(10, allName.count)
        if perController {
            for (c, stats) in result.perController.enumerated() where stats != nil {
                nameWidth = max(nameWidth, controllers[c].description.count)
            }
        }
        var header = ["controller".rightPadding(nameWidth), "N".leftPadding(7), "kept".leftPadding(7)]
        header += ["mean", "p95", "max", "min", "sd"].map { $0.leftPadding(9) }
        header.append(" |")
        header += percentileNames.map { $0.leftPadding(9) }
        if result.medians != nil { header.append(medianName.leftPadding(10)) }
        line(header.joined(separator: " "))
        func row(_ name: String, _ stats: SeriesStatistics, _ median: Double?) {
            var cells = [name.rightPadding(nameWidth), String(stats.histogram.count).leftPadding(7),
                         String(stats.table?.countAfter ?? 0).leftPadding(7)]
            if let t = stats.table {
                cells += [t.meanMs, t.p95Ms, t.maxMs, t.minMs, t.sdMs].map { number($0).leftPadding(9) }
            } else {
                cells += Array(repeating: "-".leftPadding(9), count: 5)
            }
            cells.append(" |")
            cells += stats.percentiles.map { number($0.ms).leftPadding(9) }
            if let median { cells.append(number(median).leftPadding(10)) }
            line(cells.joined(separator: " "))
        }
        row(allName, result.all, nil)
        if perController {
            for (c, stats) in result.perController.enumerated() {
                if let stats { row(controllers[c].description, stats, result.medians?[c]) }
            }
        }
    }

    /// Three decimals: microseconds, the resolution of a capture's clock.
    static func number(_ ms: Double) -> String { SummaryRendering.ms(ms, 3) }

    // MARK: JSON

    /// Each controller's statistics are made and written in turn: 100,000 controllers' value
    /// trees took several times the text.
    static func json(_ reports: [LatencyReport]) -> String { ReportStream.collected { write(json: reports, to: $0) } }

    /// The JSON, handed to `stream` a chunk at a time between controllers' objects: the whole
    /// text (67 MB at a million frames) is never held.
    static func write(json reports: [LatencyReport], to stream: ReportStream) {
        let options = reports.first?.analysis.options ?? .init()
        var out = JSONOutput()
        out.object([
            "format": .string("kinetrace-latency"), "version": .integer(2), "tool": .string("kinetrace \(Kinetrace.version)"),
            "options": .object(["sigmas": .number(options.sigmas), "median_scope": .string(options.medianScope.rawValue),
                                "base_ms": .number(options.baseMs)]),
        ], written: ["traces": { out in out.array(count: reports.count) { i, out in writeTrace(reports[i], into: &out, stream: stream) } }])
        out.bytes.append(UInt8(ascii: "\n"))
        stream.take(&out, force: true)
    }

    private static func writeTrace(_ report: LatencyReport, into out: inout JSONOutput, stream: ReportStream) {
        let a = report.analysis
        var object: [String: JSONValue] = [
            "source": .string(report.source),
            "capture_point": .string(a.header.capturePoint.name), "clock": .string(a.header.clock.name),
            "controllers": .array(a.controllers.map { .string($0.description) }),
            "invalid_messages": .integer(Int64(a.invalidMessages)), "unpaired_replies": .integer(Int64(a.unpairedReplies)),
            "unusable_stamps": .integer(Int64(a.unusableStamps)),
            "unavailable": .array(a.unavailable.map { .object(["measure": .string($0.measure.rawValue), "reason": .string($0.reason)]) }),
        ]
        if !a.notes.isEmpty { object["notes"] = .array(a.notes.map { .string($0) }) }
        if let replay = a.header.replay { object["replay"] = replay.json }
        out.object(object, written: ["measures": { out in
            out.array(count: a.measures.count) { m, out in writeMeasure(a.measures[m], of: a, into: &out, stream: stream) }
        }])
    }

    private static func writeMeasure(_ result: LatencyAnalysis.MeasureResult, of a: LatencyAnalysis, into out: inout JSONOutput,
                                     stream: ReportStream) {
        var member: [String: JSONValue] = [
            "measure": .string(result.measure.rawValue), "title": .string(result.measure.title),
            "meaning": .string(result.measure.meaning(in: a.header)),
            "all": statisticsJSON(result.all),
        ]
        if result.measure.isRelative { member["base_ms"] = .number(result.baseMs) }
        let measured = result.perController.indices.filter { result.perController[$0] != nil }
        out.object(member, written: ["per_controller": { out in
            out.array(count: measured.count) { i, out in
                let c = measured[i]
                var object = statisticsJSON(result.perController[c]!).objectValue!
                object["controller"] = .string(a.controllers[c].description)
                if let medians = result.medians { object["median_ms"] = .number(medians[c]) }
                if let final = result.finalValues?[c] { object["final_ms"] = .number(final) }
                out.append(.object(object))
                stream.take(&out)
            }
        }])
    }

    private static func statisticsJSON(_ stats: SeriesStatistics) -> JSONValue {
        var object: [String: JSONValue] = [
            "n": .integer(Int64(stats.histogram.count)),
            "n_kept": .integer(Int64(stats.table?.countAfter ?? 0)),
            "percentiles_ms": .object(Dictionary(uniqueKeysWithValues: zip(percentileNames, stats.percentiles).map { ($0, .number($1.ms)) })),
        ]
        if let t = stats.table {
            object["table_ms"] = .object(["mean": .number(t.meanMs), "p95": .number(t.p95Ms), "max": .number(t.maxMs),
                                          "min": .number(t.minMs), "sd": .number(t.sdMs)])
        }
        if let removal = stats.removal {
            object["outlier_bounds_ms"] = .array([.number(removal.lowerMs), .number(removal.upperMs)])
        }
        return .object(object)
    }

    // MARK: CSV

    static let csvHeader = "trace,measure,controller,n,n_kept,mean_ms,p95_ms,max_ms,min_ms,sd_ms,p50_ms,p90_ms,p99_ms,p99_9_ms"

    /// One row per trace, measure and controller ("all" for the aggregate); full-precision numbers.
    static func csv(_ reports: [LatencyReport]) -> String { ReportStream.collected { write(csv: reports, to: $0) } }

    static func write(csv reports: [LatencyReport], to stream: ReportStream) {
        let lines = LineSink(stream: stream)
        lines.append(csvHeader)
        for report in reports {
            let a = report.analysis
            for result in a.measures {
                func row(_ name: String, _ stats: SeriesStatistics) {
                    var cells = [csvField(report.source), result.measure.rawValue, csvField(name),
                                 String(stats.histogram.count), String(stats.table?.countAfter ?? 0)]
                    if let t = stats.table {
                        cells += [t.meanMs, t.p95Ms, t.maxMs, t.minMs, t.sdMs].map { $0.description }
                    } else {
                        cells += Array(repeating: "", count: 5)
                    }
                    cells += stats.percentiles.map { $0.ms.description }
                    lines.append(cells.joined(separator: ","))
                }
                row("all", result.all)
                for (c, stats) in result.perController.enumerated() { if let stats { row(a.controllers[c].description, stats) } }
            }
        }
    }

    /// RFC 4180 quoting, only when needed.
    static func csvField(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

extension String {
    func rightPadding(_ width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
    func leftPadding(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}
