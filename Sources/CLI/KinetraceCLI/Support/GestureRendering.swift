import KinetraceJSON
import KinetraceAnalysis
import KinetraceGestures
import KinetraceTrace

/// `kinetrace gestures eval` reports: a table for people, JSON for machines and
/// baselines (specs/gesture-eval-v1.schema.json); JUnit XML is `JUnitRendering.gestures`.
enum GestureRendering {
    static func number(_ x: Double, _ decimals: Int = 3) -> String { SummaryRendering.ms(x, decimals) }
    static func ratio(_ x: Double?) -> String { x.map { number($0) } ?? "-" }

    static func settingText(_ report: GestureReport, _ index: Int) -> String {
        guard index < report.settings.count else { return "the host's own rule" }
        return report.settings[index].description.map { "\($0.name)=\($0.value)" }.joined(separator: " ")
    }

    static func delays(_ score: GestureScore) -> (mean: Double, p50: Double, p95: Double, max: Double)? {
        let sorted = score.delaysMs.sorted()
        guard !sorted.isEmpty else { return nil }
        return (LatencyTable.mean(sorted), LatencyTable.percentile(sorted: sorted, 50)!, LatencyTable.percentile(sorted: sorted, 95)!, sorted.last!)
    }

    // MARK: Text

    static func text(_ report: GestureReport, checks: [GestureBaseline.Check], traceRegressions: [GestureBaseline.TraceRegression] = [],
                     baselinePath: String?, timing: GestureTiming, outcomes: [TraceOutcomes] = []) -> String {
        let best = report.bestIndex
        var lines = ["kinetrace gestures eval: \(report.detector) (\(settingText(report, best))), gestures \(report.gestures.joined(separator: ", ")); "
                     + "match window −\(number(report.window.beforeMs, 0))…+\(number(report.window.afterMs, 0)) ms", ""]
        if let swept = report.sweptParameter { lines.append("Per trace at the best \(swept):") }
        var table = [["trace", "samples", "from", "labels", "TP", "FP", "FN", "precision", "recall", "F1", "delay p50", "p95 ms"]]
        func row(_ name: String, samples: String, from: String, labels: String, _ s: GestureScore) -> [String] {
            let d = delays(s)
            return [name, samples, from, labels, String(s.truePositives), String(s.falsePositives), String(s.falseNegatives),
                    ratio(s.precision), ratio(s.recall), ratio(s.f1), d.map { number($0.p50, 0) } ?? "-", d.map { number($0.p95, 0) } ?? "-"]
        }
        for t in report.traces {
            table.append(row(t.source, samples: String(t.samples), from: t.sampleKinds.joined(separator: "+"), labels: String(t.labels), t.scores[best].score))
        }
        let total = report.totals[best]
        table.append(row("total", samples: String(report.traces.reduce(0) { $0 + $1.samples }), from: "",
                         labels: String(report.traces.reduce(0) { $0 + $1.labels }), total))
        if report.gestures.count > 1 {
            for g in report.gestures { table.append(row("  \(g)", samples: "", from: "", labels: "", report.totalsByGesture[best][g]!)) }
        }
        lines += align(table, rightFrom: 1)

        if let swept = report.sweptParameter {
            lines += ["", "Sweep of \(swept) over \(report.settings.count) values:"]
            var sweep = [[swept, "TP", "FP", "FN", "precision", "recall", "F1"]]
            for (i, s) in report.totals.enumerated() {
                let value = report.settings[i].description.first { $0.name == swept }!.value
                sweep.append([value + (i == best ? " *" : ""), String(s.truePositives), String(s.falsePositives), String(s.falseNegatives),
                              ratio(s.precision), ratio(s.recall), ratio(s.f1)])
            }
            lines += align(sweep, rightFrom: 1)
            lines.append("best F1 \(ratio(total.f1)) at \(settingText(report, best)) (precision \(ratio(total.precision)), recall \(ratio(total.recall)))")
        }
        if let d = delays(total) {
            lines += ["", "Detection delay (onset → detecting sample, controller clock): mean \(number(d.mean, 1)), p50 \(number(d.p50, 0)), "
                      + "p95 \(number(d.p95, 0)), max \(number(d.max, 0)) ms over \(total.truePositives) detections"]
        }
        lines += missesText(report, outcomes)
        if !checks.isEmpty {
            lines.append("")
            if let baselinePath { lines.append("Against the baseline \(baselinePath):") }
            for c in checks {
                let verdict = c.regressed ? "REGRESSED" : "ok"
                let limit = c.margin > 0 ? " (baseline \(number(c.baseline)) − margin \(number(c.margin)))" : " (at least \(number(c.baseline)))"
                lines.append("\(c.metric) \(number(c.current))\(limit): \(verdict)")
            }
            for r in traceRegressions {
                lines.append("  \(r.source): F1 \(number(r.baseline)) → \(number(r.current)) (reported, not gated)")
            }
        }
        let settings = max(1, report.settings.count)
        let seconds = { (ns: Int64) in self.number(Double(ns) / 1e9, 2) }
        lines += ["", "\(report.traces.reduce(0) { $0 + $1.samples }) samples × \(settings) setting(s) in \(seconds(timing.totalNs)) s"
                  + (timing.evaluateNs > 0 ? " (reading \(seconds(timing.readNs)) s, detecting and scoring \(seconds(timing.evaluateNs)) s)" : "")]
        return lines.joined(separator: "\n") + "\n"
    }

    /// Misses and false detections listed at most this many in the text; --format json lists every one.
    static let listedMisses = 20

    /// The misses and false detections, in trace and time order, the first `listedMisses` of them.
    static func missesText(_ report: GestureReport, _ outcomes: [TraceOutcomes]) -> [String] {
        var rows: [[String]] = []
        var total = 0
        for (t, trace) in zip(report.traces, outcomes) {
            for o in trace.outcomes where o.kind != .truePositive {
                total += 1
                guard rows.count < listedMisses else { continue }
                let ms = o.kind == .falseNegative ? o.labelMs : o.detectionMs.map { Double($0) }
                let at = ms.map { ms in trace.startNs.map { "at \(number((ms - Double($0) / 1e6) / 1000, 3)) s" } ?? "at \(number(ms, 0)) ms" } ?? ""
                rows.append([o.kind.rawValue, t.source, o.controller?.description ?? "(any controller)", o.gesture,
                             (o.kind == .falseNegative ? "label " : "detected ") + at])
            }
        }
        guard total > 0 else { return [] }
        let heading = total > rows.count
            ? "Misses (FN) and false detections (FP), the first \(rows.count) of \(total) (--format json lists every one); seconds since each trace's first record:"
            : "Misses (FN) and false detections (FP), seconds since each trace's first record:"
        var lines = ["", heading]
        lines += align(rows, rightFrom: 5).map { "  " + $0 }
        if total > rows.count { lines.append("  … and \(total - rows.count) more") }
        return lines
    }

    /// Columns padded to their widest cell; numbers (from `rightFrom` on) right-aligned.
    static func align(_ rows: [[String]], rightFrom: Int) -> [String] {
        let widths = rows[0].indices.map { c in rows.map { $0[c].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { c, cell in
                c >= rightFrom ? cell.leftPadding(widths[c]) : cell.rightPadding(widths[c])
            }.joined(separator: "  ").trimmingTrailingSpaces()
        }
    }

    // MARK: JSON

    static func scoreJSON(_ s: GestureScore) -> [String: JSONValue] {
        var object: [String: JSONValue] = [
            "tp": .integer(Int64(s.truePositives)), "fp": .integer(Int64(s.falsePositives)), "fn": .integer(Int64(s.falseNegatives)),
            "precision": s.precision.map { .number($0) } ?? .null, "recall": s.recall.map { .number($0) } ?? .null,
            "f1": s.f1.map { .number($0) } ?? .null,
        ]
        if let d = delays(s) {
            object["delay_ms"] = .object(["mean": .number(d.mean), "p50": .number(d.p50), "p95": .number(d.p95), "max": .number(d.max)])
        }
        return object
    }

    static func settingJSON(_ report: GestureReport, _ index: Int) -> JSONValue {
        guard index < report.settings.count else { return .object([:]) }
        let s = report.settings[index]
        return .object(Dictionary(uniqueKeysWithValues: s.kind.parameters.map { p in
            (p.name, p.choices.isEmpty ? JSONValue.number(s[p.name]) : .string(p.choices[Int(s[p.name])]))
        }))
    }

    /// One outcome: its kind, gesture and controller, and its times on the controller's clock
    /// (ms) and in seconds since the trace's first record.
    static func outcomeJSON(_ o: GestureOutcome, startNs: Int64?) -> JSONValue {
        func seconds(_ ms: Double?) -> JSONValue {
            guard let ms, let startNs else { return .null }
            return .number((ms - Double(startNs) / 1e6) / 1000)
        }
        let detection = o.detectionMs.map { Double($0) }
        return .object([
            "kind": .string(o.kind.rawValue), "gesture": .string(o.gesture),
            "controller": o.controller.map { .string($0.description) } ?? .null,
            "label_ms": o.labelMs.map { .number($0) } ?? .null, "detection_ms": detection.map { .number($0) } ?? .null,
            "delay_ms": o.delayMs.map { .number($0) } ?? .null,
            "label_s": seconds(o.labelMs), "detection_s": seconds(detection),
        ])
    }

    static func json(_ report: GestureReport, checks: [GestureBaseline.Check], traceRegressions: [GestureBaseline.TraceRegression] = [],
                     baselinePath: String?, timing: GestureTiming, outcomes: [TraceOutcomes] = []) -> String {
        let best = report.bestIndex
        var summary = scoreJSON(report.totals[best])
        summary["parameters"] = settingJSON(report, best)
        summary["by_gesture"] = .object(report.totalsByGesture[best].mapValues { .object(scoreJSON($0)) })
        var root: [String: JSONValue] = [
            "format": .string("kinetrace-gesture-eval"), "version": .integer(1), "tool": .string("kinetrace \(Kinetrace.version)"),
            "detector": .string(report.detector), "gestures": .array(report.gestures.map { .string($0) }),
            "window_ms": .object(["before": .number(report.window.beforeMs), "after": .number(report.window.afterMs)]),
            "summary": .object(summary),
            "traces": .array(report.traces.enumerated().map { i, t in
                var object = scoreJSON(t.scores[best].score)
                if i < outcomes.count {
                    object["start_ms"] = outcomes[i].startNs.map { .number(Double($0) / 1e6) } ?? .null
                    object["outcomes"] = .array(outcomes[i].outcomes.map { outcomeJSON($0, startNs: outcomes[i].startNs) })
                }
                object["source"] = .string(t.source)
                object["controllers"] = .integer(Int64(t.controllers))
                object["samples"] = .integer(Int64(t.samples))
                object["sample_kinds"] = .array(t.sampleKinds.map { .string($0) })
                object["labels"] = .integer(Int64(t.labels))
                object["detections"] = .integer(Int64(t.scores[best].detections))
                return .object(object)
            }),
            "elapsed_ms": .number(Double(timing.totalNs) / 1e6),
            "read_ms": .number(Double(timing.readNs) / 1e6),
            "evaluate_ms": .number(Double(timing.evaluateNs) / 1e6),
            "gates": .array(checks.map { c in
                .object(["metric": .string(c.metric), "current": .number(c.current), "required": .number(c.baseline - c.margin),
                         "baseline": .number(c.baseline), "margin": .number(c.margin), "passed": .bool(!c.regressed)])
            }),
            "passed": .bool(!checks.contains { $0.regressed }),
            "trace_regressions": .array(traceRegressions.map {
                .object(["source": .string($0.source), "baseline_f1": .number($0.baseline), "f1": .number($0.current)])
            }),
        ]
        if let baselinePath { root["baseline"] = .string(baselinePath) }
        if let swept = report.sweptParameter {
            root["sweep"] = .object([
                "parameter": .string(swept),
                "points": .array(report.totals.enumerated().map { i, s in
                    var object = scoreJSON(s)
                    object["value"] = .number(report.settings[i][swept])
                    object.removeValue(forKey: "delay_ms")
                    return .object(object)
                }),
                "best": .number(report.settings[best][swept]),
            ])
        }
        return JSONValue.object(root).jsonText + "\n"
    }

    /// The headline numbers of a stored `--format json` result.
    static func baseline(from value: JSONValue) -> GestureBaseline? {
        guard let root = value.objectValue, root["format"]?.stringValue == "kinetrace-gesture-eval",
              let summary = root["summary"]?.objectValue else { return nil }
        var perTrace: [String: Double] = [:]
        if case .array(let traces)? = root["traces"] {
            for t in traces { if let o = t.objectValue, let source = o["source"]?.stringValue, let f1 = o["f1"]?.doubleValue { perTrace[source] = f1 } }
        }
        let f1 = summary["f1"]?.doubleValue, recall = summary["recall"]?.doubleValue
        guard f1 != nil || recall != nil else { return nil }
        return GestureBaseline(f1: f1, recall: recall, precision: summary["precision"]?.doubleValue, traceF1: perTrace)
    }

    /// `kinetrace gestures list --format json`.
    static func catalogue() -> JSONValue {
        .array(DetectorKind.allCases.map { kind in
            .object(["name": .string(kind.rawValue), "summary": .string(kind.summary), "gestures": .array(kind.gestures.map { .string($0) }),
                     "needs_gravity": .bool(kind.needsGravity),
                     "parameters": .array(kind.parameters.map { p in
                         .object(["name": .string(p.name), "unit": .string(p.unit), "summary": .string(p.summary),
                                  "default": p.choices.isEmpty ? .number(p.defaultValue) : .string(p.choices[Int(p.defaultValue)]),
                                  "choices": .array(p.choices.map { .string($0) })])
                     })])
        })
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var s = Substring(self)
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
