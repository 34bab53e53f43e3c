import KinetraceAnalysis
import KinetracePlot

/// The paper's Figure 2 (latency per frame), with a histogram and a CDF, as
/// SVG for `kinetrace latency --plot` and the conformance HTML report.
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
            let series = grouped(firstResult.samples, groups: names.count) { split ? $0.controller : 0 }
            let kept = LatencyTable.removingOutliers(firstResult.samples.map(\.ms), sigmas: a.options.sigmas)
            charts.append(Charts.scatter(
                title: "Figure 2: \(measure.shortTitle) per \(measure.sampleNoun)", xLabel: "\(measure.sampleNoun) (per controller)", yLabel: unit,
                series: zip(names, series).map { name, samples in
                    PlotSeries(name: name, points: samples.map { PlotPoint(x: Double($0.ordinal), y: $0.ms) })
                },
                references: references(firstResult.all, sigmas: a.options.sigmas)))
            charts.append(Charts.histogram(
                title: "Distribution after \(sigmaText(a.options.sigmas)) removal (\(kept.count) of \(firstResult.samples.count) kept)",
                xLabel: unit, values: kept, references: tableReferences(firstResult.all)))
            charts.append(Charts.cdf(
                title: "Cumulative distribution, every sample", xLabel: unit,
                series: zip(names, series).map { CDFSeries(name: $0, values: $1.map(\.ms)) },
                references: tableReferences(firstResult.all)))
        } else {
            // Several sessions: one colour per trace, to compare them.
            charts.append(Charts.scatter(
                title: "Figure 2: \(measure.shortTitle) per \(measure.sampleNoun)", xLabel: "\(measure.sampleNoun) (per controller)", yLabel: unit,
                series: results.map { report, result in
                    PlotSeries(name: report.source, points: result.samples.map { PlotPoint(x: Double($0.ordinal), y: $0.ms) })
                }))
            charts.append(Charts.cdf(
                title: "Cumulative distribution, every sample", xLabel: unit,
                series: results.map { CDFSeries(name: $0.source, values: $1.samples.map(\.ms)) }))
        }
        return Charts.figure(title: "kinetrace latency: \(measure.title), \(reports.map(\.source).joined(separator: ", "))", charts: charts)
    }

    /// Per-trigger delays from a conformance case: delay per trigger, histogram and CDF, with the deadline.
    static func delayFigure(title: String, delaysMs: [Double], deadlineMs: Double?) -> String {
        let stats = SeriesStatistics(delaysMs, sigmas: 0)
        var references = tableReferences(stats)
        if let deadlineMs { references.append(ReferenceLine(label: "deadline \(LatencyRendering.number(deadlineMs)) ms", value: deadlineMs, dashed: false)) }
        let points = delaysMs.enumerated().map { PlotPoint(x: Double($0.offset + 1), y: $0.element) }
        return Charts.figure(title: title, charts: [
            Charts.scatter(title: "\(title): delay per trigger", xLabel: "trigger", yLabel: "ms",
                           series: [PlotSeries(name: "ack delay", points: points)], references: references),
            Charts.histogram(title: "Distribution", xLabel: "ms", values: delaysMs, references: references),
        ])
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
        return [ReferenceLine(label: "mean \(LatencyRendering.number(t.meanMs))", value: t.meanMs, dashed: false),
                ReferenceLine(label: "p95 \(LatencyRendering.number(t.p95Ms))", value: t.p95Ms)]
    }

    /// Table I's mean and p95, and the outlier bounds.
    private static func references(_ stats: SeriesStatistics, sigmas: Double) -> [ReferenceLine] {
        var lines = tableReferences(stats)
        if sigmas > 0, let removal = stats.removal, removal.sd > 0 {
            let k = SummaryRendering.ms(sigmas, 1)
            lines.append(ReferenceLine(label: "−\(k)σ", value: removal.lowerMs))
            lines.append(ReferenceLine(label: "+\(k)σ", value: removal.upperMs))
        }
        return lines
    }
}
