import KinetraceAnalysis
import KinetracePlot

/// The paper's Figure 2 (latency per frame), with a histogram and a CDF, as
/// SVG for `kinetrace latency --plot` and the conformance HTML report. Titles
/// say what is drawn, never a figure number: the paper or report that uses
/// a plot numbers it.
enum LatencyFigures {
    /// Beyond this many controllers, one colour per controller stops being readable.
    static let maxSeries = 8

    static func figure(_ reports: [LatencyReport], measure: LatencyMeasure) -> String {
        let results = reports.compactMap { report in report.analysis.result(for: measure).map { (report, $0) } }
        guard let (first, firstResult) = results.first else { return Charts.figure(title: measure.title, charts: []) }
        let unit = measure.isRelative && firstResult.baseMs == 0 ? "ms relative to the median" : "ms"
        var charts: [Chart] = []
        if results.count == 1 {
            let a = first.analysis
            let split = a.controllers.count <= maxSeries
            let names = split ? a.controllers.map(\.description) : ["all \(a.controllers.count) controllers"]
            let samples = firstResult.samples  // a relative measure's are made on each call
            let series = grouped(samples, groups: names.count) { split ? $0.controller : 0 }
            let kept = LatencyTable.removingOutliers(samples.map(\.ms), sigmas: a.options.sigmas)
            charts.append(Charts.scatter(
                title: perSampleTitle(measure), xLabel: "\(measure.sampleNoun) (per controller)", yLabel: unit,
                series: zip(names, series).map { name, samples in
                    PlotSeries(name: name, points: samples.map { PlotPoint(x: Double($0.ordinal), y: $0.ms) })
                },
                references: references(firstResult.all, sigmas: a.options.sigmas)))
            charts.append(Charts.histogram(
                title: "Distribution after \(sigmaText(a.options.sigmas)) removal (\(kept.count) of \(samples.count) kept)",
                xLabel: unit, values: kept, references: tableReferences(firstResult.all)))
            charts.append(Charts.cdf(
                title: "Cumulative distribution, every sample", xLabel: unit,
                series: zip(names, series).map { CDFSeries(name: $0, values: $1.map(\.ms)) },
                references: tableReferences(firstResult.all)))
        } else {
            // Several sessions: one colour per trace, to compare them.
            charts.append(Charts.scatter(
                title: perSampleTitle(measure), xLabel: "\(measure.sampleNoun) (per controller)", yLabel: unit,
                series: results.map { report, result in
                    PlotSeries(name: report.source, points: result.samples.map { PlotPoint(x: Double($0.ordinal), y: $0.ms) })
                }))
            charts.append(Charts.cdf(
                title: "Cumulative distribution, every sample", xLabel: unit,
                series: results.map { CDFSeries(name: $0.source, values: $1.samples.map(\.ms)) }))
        }
        return Charts.figure(title: "kinetrace latency: \(measure.title), \(reports.map(\.source).joined(separator: ", "))", charts: charts)
    }

    /// Per-sample values from a conformance case (reply delays, backlogs): each value in the order
    /// measured and their histogram, with the limit the case held them to and, when the case judged
    /// a percentile against it, that percentile (`judged`, e.g. the p99 of the reply-delay cases).
    static func delayFigure(title: String, values: [Double], unit: String, limit: Double?,
                            judged: (name: String, value: Double)?) -> String {
        var references: [ReferenceLine] = []
        // A limit far above every value would squash the data into a line at the bottom: name it instead of drawing it.
        let largest = max(values.filter(\.isFinite).max() ?? 0, judged?.value ?? 0)
        let limitOffScale = limit.map { largest > 0 && $0 > 3 * largest } ?? false
        var scaleNote = ""
        // The judged percentile first, so it gets the strongest style (solid, near-black) and the limit the next.
        if let judged {
            references.append(ReferenceLine(label: "\(judged.name) \(compact(judged.value)) \(unit)", value: judged.value,
                                            legend: "\(judged.name), judged against the limit"))
        }
        if let limit {
            let limitText = "limit \(compact(limit)) \(unit)"
            if limitOffScale {
                scaleNote = " (\(limitText), off the scale)"
            } else {
                references.append(ReferenceLine(label: limitText, value: limit, legend: "limit"))
            }
        }
        let points = values.enumerated().map { PlotPoint(x: Double($0.offset + 1), y: $0.element) }
        return Charts.figure(title: title, charts: [
            Charts.scatter(title: "\(title) per trigger\(scaleNote)", xLabel: "trigger", yLabel: unit,
                           series: [PlotSeries(name: title, points: points)], references: references),
            Charts.histogram(title: "Distribution of \(title)\(scaleNote)", xLabel: unit, values: values, references: references),
        ])
    }

    /// A value with at most three decimals and no trailing zeros: 50, 0.809.
    private static func compact(_ value: Double) -> String {
        var text = LatencyRendering.number(value)
        if text.contains(".") {
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
        }
        return text
    }

    /// "One-way latency (raw) per frame".
    private static func perSampleTitle(_ measure: LatencyMeasure) -> String {
        let text = "\(measure.shortTitle) per \(measure.sampleNoun)"
        return text.prefix(1).uppercased() + text.dropFirst()
    }

    private static func grouped(_ samples: [LatencySample], groups: Int, by key: (LatencySample) -> Int) -> [[LatencySample]] {
        var out = Array(repeating: [LatencySample](), count: groups)
        for sample in samples { out[key(sample)].append(sample) }
        return out
    }

    private static func sigmaText(_ sigmas: Double) -> String { sigmas > 0 ? "\(SummaryRendering.ms(sigmas, 1))σ" : "no outlier" }

    /// Mean and p95 of Table I.
    private static func tableReferences(_ stats: SeriesStatistics) -> [ReferenceLine] {
        guard let t = stats.table else { return [] }
        return [ReferenceLine(label: "mean \(LatencyRendering.number(t.meanMs))", value: t.meanMs, legend: "mean (Table I)"),
                ReferenceLine(label: "p95 \(LatencyRendering.number(t.p95Ms))", value: t.p95Ms, legend: "p95 (Table I)")]
    }

    /// Table I's mean and p95, and the outlier bounds.
    private static func references(_ stats: SeriesStatistics, sigmas: Double) -> [ReferenceLine] {
        var lines = tableReferences(stats)
        if sigmas > 0, let removal = stats.removal, removal.sd > 0 {
            let k = SummaryRendering.ms(sigmas, 1)
            let legend = "±\(k)σ outlier bounds"
            // One minus sign throughout the label: the typographic one, as in "−3σ".
            func value(_ ms: Double) -> String { LatencyRendering.number(ms).replacingOccurrences(of: "-", with: "−") }
            lines.append(ReferenceLine(label: "−\(k)σ \(value(removal.lowerMs))", value: removal.lowerMs, legend: legend))
            lines.append(ReferenceLine(label: "+\(k)σ \(value(removal.upperMs))", value: removal.upperMs, legend: legend))
        }
        return lines
    }
}
