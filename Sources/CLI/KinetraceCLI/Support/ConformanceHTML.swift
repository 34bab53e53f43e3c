import KinetraceAnalysis
import KinetraceConformance
import KinetraceJUnit

/// A conformance report as one self-contained HTML5 page: inline CSS, no
/// scripts and no external resources, so the file can be archived with a CI
/// run, opened offline or printed. It carries what the text report does.
enum ConformanceHTML {
    /// `latency`: the capture's latency analysis, drawn below the cases (capture mode).
    static func render(_ report: SuiteReport, strict: Bool, latency: LatencyReport? = nil) -> String {
        let title = "kinetrace conform — \(report.target)"
        var html = ["<!DOCTYPE html>", #"<html lang="en">"#, "<head>", #"<meta charset="utf-8">"#,
                    #"<meta name="viewport" content="width=device-width, initial-scale=1">"#,
                    "<title>\(esc(title))</title>", "<style>", style, "</style>", "</head>", "<body>"]
        html += header(report, title: title, strict: strict)
        html += banner(report, strict: strict)
        html += table(report, strict: strict)
        if let latency { html += latencySection(latency) }
        html += ["</body>", "</html>"]
        return html.joined(separator: "\n") + "\n"
    }

    /// The verdict names in the order every report counts them.
    static let verdictNames = ["PASS", "FAIL", "NON-STRICT", "INFORMATIONAL", "INCONCLUSIVE", "ERROR"]

    // MARK: Sections

    static func header(_ report: SuiteReport, title: String, strict: Bool) -> [String] {
        let p = report.parameters
        // Only what the protocol has: no τ or window for a host that applies every record, no deadline without replies.
        var facts = [
            ("Suite", "kinetrace conform \(ConformanceSuite.version)"),
            ("Spec", report.specVersion),
            ("Mode", report.mode),
            ("Target", report.target),
            report.hostRule.isEmpty ? ("Gesture rule", "τ = \(number(p.rule.threshold)) g, R = \(p.rule.refractoryMs) ms") : ("Host", report.hostRule),
        ]
        if report.hostReplies { facts.append(("Reply deadline", "MUST \(number(p.replyDeadlineMs)) ms, SHOULD \(number(p.replyShouldMs)) ms")) }
        facts += [
            ("Timing samples", "at least \(p.minimumTimingSamples)"),
            ("Strict", strict ? "yes: a NON-STRICT fails the run" : "no: a NON-STRICT is reported, not failed"),
            ("Elapsed", "\(elapsedMs(report)) ms"),
        ]
        return ["<header>", "<h1>\(esc(title))</h1>", #"<dl class="facts">"#]
            + facts.map { "<div><dt>\(esc($0.0))</dt><dd>\(esc($0.1))</dd></div>" }
            + ["</dl>", "</header>"]
    }

    /// The overall outcome, with the same summary line as the text report.
    static func banner(_ report: SuiteReport, strict: Bool) -> [String] {
        let failed = report.failed(strict: strict)
        let status = report.status(strict: strict)
        let counts = report.counts
        let line = verdictNames.map { "\(counts[$0] ?? 0) \($0.lowercased())" }.joined(separator: ", ")
            + ": \(status) (\(elapsedMs(report)) ms)"
        let chips = verdictNames.map { name in
            let n = counts[name] ?? 0
            return #"<li class="badge \#(badgeClass(name))\#(n == 0 ? " zero" : "")">\#(esc(name)) <b>\#(n)</b></li>"#
        }
        return [#"<section class="banner \#(failed ? "bad" : "good")">"#, #"<p class="status">\#(esc(status))</p>"#,
                #"<ul class="counts">"#] + chips + ["</ul>", #"<p class="line">\#(esc(line))</p>"#, "</section>"]
    }

    static func table(_ report: SuiteReport, strict: Bool) -> [String] {
        var html = ["<table>",
                    "<thead><tr><th>Verdict</th><th>Case</th><th>Level</th><th>Requirements</th>"
                        + #"<th class="num">ms</th><th>Summary</th></tr></thead>"#]
        if report.results.isEmpty {
            html.append(#"<tbody class="case"><tr><td colspan="6">No case was selected.</td></tr></tbody>"#)
        }
        for r in report.results { html += rows(r, strict: strict) }
        html.append("</table>")
        return html
    }

    /// One case as its own <tbody>, so its summary and detail rows stay together on a printed page.
    static func rows(_ r: CaseResult, strict: Bool) -> [String] {
        let fails = r.fails(strict: strict)
        let name = r.verdict.name
        // The flag spells out a failure in words too: colour is lost on a grey printout.
        let flag = fails ? #"<span class="flag">fails the run</span>"# : ""
        var html = [#"<tbody class="case\#(fails ? " fails" : "")">"#,
                    "<tr>"
                        + #"<td><span class="badge \#(badgeClass(name))">\#(esc(name))</span>\#(flag)</td>"#
                        + #"<td class="id">\#(esc(r.info.id))</td>"#
                        + "<td>\(esc(r.info.level.rawValue))</td>"
                        + "<td>\(esc(r.info.requirements.joined(separator: ", ")))</td>"
                        + #"<td class="num">\#(esc(ConformanceRendering.durationMs(r)))</td>"#
                        + "<td>\(esc(r.info.summary))</td>"
                        + "</tr>"]
        let detail = details(r)
        if !detail.isEmpty {
            html += [#"<tr class="detail"><td></td><td colspan="5">"#] + detail + ["</td></tr>"]
        }
        // Plots take the table's whole width, not the detail column's.
        let figures = plots(r)
        if !figures.isEmpty {
            html += [#"<tr class="plots"><td colspan="6">"#] + figures + ["</td></tr>"]
        }
        html.append("</tbody>")
        return html
    }

    /// The reason, measurements and evidence under a case; empty when it has none.
    static func details(_ r: CaseResult) -> [String] {
        var html: [String] = []
        if let reason = r.verdict.reason { html.append(#"<p class="reason">\#(esc(reason))</p>"#) }
        if !r.measurements.isEmpty {
            let text = r.measurements.map(measurement).joined(separator: ", ")
            html.append(#"<p class="measurements"><span class="label">Measured</span> \#(esc(text))</p>"#)
        }
        if !r.evidence.isEmpty {
            html += [#"<p class="label">Evidence</p>"#, #"<ul class="evidence">"#]
                + r.evidence.map { "<li>\(esc($0))</li>" } + ["</ul>"]
        }
        return html
    }

    /// The case's plots, one figure per sample series; empty when it has none.
    static func plots(_ r: CaseResult) -> [String] {
        var html: [String] = []
        for series in r.samples where !series.values.isEmpty {
            let judged = judgedPercentile(r, series)
            // The SVG is generated here and escapes its own text, so it goes in as markup.
            html += [#"<figure class="plot">"#,
                     LatencyFigures.delayFigure(title: "\(r.info.id) \(series.name)", values: series.values, unit: series.unit,
                                                limit: series.limit, judged: judged),
                     "<figcaption>\(esc(series.name.prefix(1).uppercased() + series.name.dropFirst())) of each of \(series.values.count) answered triggers, in \(esc(series.unit)), in the order measured\(judged.map { "; the solid line marks the \($0.name), \(number($0.value)) \(esc(series.unit)), which the verdict holds to the limit" } ?? "")\(series.limit.map { "; the limit is \(number($0)) \(esc(series.unit)) (dashed, when it is on the scale)" } ?? "").</figcaption>",
                     "</figure>"]
        }
        return html
    }

    /// The percentile a timing case compares with its limit: the p99 it measured, as the verdict uses it.
    static func judgedPercentile(_ r: CaseResult, _ series: SampleSeries) -> (name: String, value: Double)? {
        guard series.limit != nil else { return nil }
        let p99 = r.measurements.first { $0.name == "p99" }?.value ?? percentile(series.values.sorted(), 99)
        return p99.isFinite ? ("p99", p99) : nil
    }

    /// The capture's latencies: Table I per measure and the paper's Figure 2.
    static func latencySection(_ latency: LatencyReport) -> [String] {
        let a = latency.analysis
        var html = [#"<section class="latency">"#, "<h2>Latency in the capture</h2>",
                    "<p>\(esc("Recorded at \(a.header.capturePoint) (clock \(a.header.clock)); \(SummaryRendering.ms(a.options.sigmas, 1))σ outlier removal; the same analysis as kinetrace latency."))</p>",
                    "<table>", "<thead><tr><th>Latency</th><th class=\"num\">N</th><th class=\"num\">kept</th>"
                        + ["mean", "p95", "max", "min", "sd", "p50", "p90", "p99", "p99.9"].map { #"<th class="num">\#($0)</th>"# }.joined()
                        + "</tr></thead>", "<tbody>"]
        for result in a.measures {
            let s = result.all
            var cells = ["<td>\(esc(result.measure.title))</td>", #"<td class="num">\#(s.histogram.count)</td>"#,
                         #"<td class="num">\#(s.table?.countAfter ?? 0)</td>"#]
            let table = s.table.map { [$0.meanMs, $0.p95Ms, $0.maxMs, $0.minMs, $0.sdMs] } ?? []
            cells += (table + s.percentiles.map(\.ms)).map { #"<td class="num">\#(LatencyRendering.number($0))</td>"# }
            html.append("<tr>" + cells.joined() + "</tr>")
        }
        html += ["</tbody>", "</table>"]
        for measure in [LatencyMeasure.oneWayRelative, .replyTurnaround] where a.result(for: measure) != nil {
            html += [#"<figure class="plot">"#, LatencyFigures.figure([latency], measure: measure),
                     "<figcaption>\(esc(measure.title)), ms. \(esc(measure.meaning(at: a.header.capturePoint)))</figcaption>", "</figure>"]
        }
        html.append("</section>")
        return html
    }

    // MARK: Formatting

    /// "name value unit", as the text report writes a measurement.
    static func measurement(_ m: Measurement) -> String {
        "\(m.name) \(number(m.value))" + (m.unit.isEmpty ? "" : " \(m.unit)")
    }

    /// A verdict name as a CSS class ("NON-STRICT" → "v-non-strict"); the prefix keeps it off other classes.
    static func badgeClass(_ name: String) -> String { "v-" + esc(name.lowercased()) }

    static func elapsedMs(_ report: SuiteReport) -> String { SummaryRendering.ms(Double(report.elapsedNs) / 1e6, 0) }

    static func number(_ value: Double) -> String { ConformanceRendering.number(value) }

    static func esc(_ text: String) -> String { JUnitXML.escaped(text, inAttribute: true) }

    // MARK: Style

    /// Print keeps the colours (print-color-adjust) and never splits a case across pages.
    static let style = """
    :root { color-scheme: light; --pass: #1a7f37; --fail: #c62828; --non-strict: #a15c00; --info: #50697a;
      --inconclusive: #6e6e6e; --error: #6a1b9a; --muted: #57606a; --rule: #d0d7de;
      --sans: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
      --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; }
    * { box-sizing: border-box; -webkit-print-color-adjust: exact; print-color-adjust: exact; }
    body { max-width: 78rem; margin: 2rem auto; padding: 0 1rem; color: #1b1f24; background: #fff;
      font: 15px/1.45 var(--sans); }
    .plot { margin: .75rem 0; break-inside: avoid; page-break-inside: avoid; }
    .plot { width: 100%; }
    .plot svg { display: block; width: 100%; height: auto; }
    .plot figcaption { color: var(--muted); font-size: .85rem; }
    .latency { margin-top: 2rem; }
    h1 { font-size: 1.5rem; margin: 0 0 .75rem; overflow-wrap: anywhere; }
    .facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(20rem, 1fr)); gap: .2rem 1.5rem; margin: 0 0 1.25rem; }
    .facts div { display: flex; gap: .75rem; }
    .facts dt { flex: 0 0 8rem; color: var(--muted); font-weight: 600; }
    .facts dd { margin: 0; overflow-wrap: anywhere; }
    .banner { border: 2px solid; border-left-width: .75rem; border-radius: 6px; padding: .75rem 1rem; margin: 0 0 1.5rem;
      break-inside: avoid; page-break-inside: avoid; }
    .banner.bad { border-color: var(--fail); background: #fdecea; }
    .banner.good { border-color: var(--pass); background: #e8f5e9; }
    .status { margin: 0 0 .5rem; font-size: 1.6rem; font-weight: 700; }
    .bad .status { color: var(--fail); }
    .good .status { color: var(--pass); }
    .counts { display: flex; flex-wrap: wrap; gap: .4rem; margin: 0 0 .5rem; padding: 0; list-style: none; }
    .counts .zero { opacity: .4; }
    .line { margin: 0; font: .85rem/1.4 var(--mono); overflow-wrap: anywhere; }
    .badge { display: inline-block; padding: .1rem .45rem; border-radius: 4px; color: #fff; font-size: .75rem;
      font-weight: 700; letter-spacing: .02em; white-space: nowrap; }
    .v-pass { background: var(--pass); }
    .v-fail { background: var(--fail); }
    .v-non-strict { background: var(--non-strict); }
    .v-informational { background: var(--info); }
    .v-inconclusive { background: var(--inconclusive); }
    .v-error { background: var(--error); }
    table { width: 100%; border-collapse: collapse; }
    th, td { padding: .4rem .5rem; text-align: left; vertical-align: top; }
    thead th { border-bottom: 2px solid #444; color: var(--muted); font-size: .8rem; text-transform: uppercase; }
    tbody.case { border-bottom: 1px solid var(--rule); break-inside: avoid; page-break-inside: avoid; }
    tbody.case td:first-child { border-left: .35rem solid transparent; white-space: nowrap; }
    tbody.fails { background: #fdecea; }
    tbody.fails td:first-child { border-left-color: var(--fail); }
    .flag { display: block; margin-top: .25rem; color: var(--fail); font-size: .75rem; font-weight: 700; }
    .id { font-family: var(--mono); font-weight: 600; }
    .num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
    .detail td, .plots td { padding-top: 0; }
    .detail p, .detail ul { margin: .1rem 0 .35rem; }
    .reason { font-weight: 600; white-space: pre-wrap; overflow-wrap: anywhere; }
    .fails .reason { color: var(--fail); }
    .measurements { font: .85rem/1.4 var(--mono); overflow-wrap: anywhere; }
    .label { color: var(--muted); font-family: var(--sans); font-size: .75rem; font-weight: 700; text-transform: uppercase; }
    p.label { margin-bottom: 0; }
    .evidence { padding-left: 1.25rem; font: .8rem/1.4 var(--mono); }
    .evidence li { white-space: pre-wrap; overflow-wrap: anywhere; }
    @page { margin: 1.5cm; }
    @media print {
      body { max-width: none; margin: 0; padding: 0; font-size: 10pt; }
      thead { display: table-header-group; }
    }
    """
}
