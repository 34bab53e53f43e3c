import KinetraceGestures
import KinetracePlot

/// `kinetrace gestures eval --plot`: for a sweep, the precision–recall curve
/// through the swept values in order, and F1, precision and recall against
/// the value; otherwise F1, precision and recall per trace.
enum GestureFigures {
    /// At most this many values get a label on the curve besides the best one (fewer when they would collide).
    static let maxValueLabels = 8

    static func figure(_ report: GestureReport) -> String {
        let best = report.bestIndex
        var charts: [Chart] = []
        if let swept = report.sweptParameter {
            charts += sweepCharts(report, swept: swept, best: best)
        } else {
            charts.append(Charts.categories(
                title: "Per trace: \(report.detector) \(GestureRendering.settingText(report, best))", xLabel: "trace (in report order)", yLabel: "score",
                categories: traceNames(report.traces.map(\.source)),
                series: [("F1", \GestureScore.f1), ("precision", \GestureScore.precision), ("recall", \GestureScore.recall)].map { name, metric in
                    CategorySeries(name: name, values: report.traces.map { $0.scores[best].score[keyPath: metric] })
                }, yDomain: (0, 1)))
            let delays = report.totals[best].delaysMs
            if !delays.isEmpty {
                charts.append(Charts.histogram(title: "Detection delay (onset → detecting sample)", xLabel: "ms", values: delays))
            }
        }
        return Charts.figure(title: "kinetrace gestures eval: \(report.detector)", charts: charts)
    }

    /// Each trace's file name, or its whole path where two traces share a name.
    static func traceNames(_ sources: [String]) -> [String] {
        let names = sources.map { $0.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? $0 }
        return zip(names, sources).map { name, source in names.filter { $0 == name }.count > 1 ? source : name }
    }

    static func sweepCharts(_ report: GestureReport, swept: String, best: Int) -> [Chart] {
        let values = report.settings.map { $0[swept] }
        let unit = DetectorKind(rawValue: report.detector)?.parameters.first { $0.name == swept }?.unit ?? ""
        func valueText(_ value: Double) -> String {
            let number = compact(value)
            return unit.isEmpty ? number : unit == "°" ? number + unit : "\(number) \(unit)"
        }
        let axisTitle = unit.isEmpty ? swept : "\(swept) (\(unit))"
        let square = PlotSize(width: PlotSize.standard.width, height: 420)

        // The curve in swept-value order; settings with no precision or recall (nothing found, nothing labelled) are left out.
        let kept = values.indices.filter { report.totals[$0].precision != nil && report.totals[$0].recall != nil }
        let curve = kept.map { PlotPoint(x: report.totals[$0].recall!, y: report.totals[$0].precision!) }
        var order = kept.firstIndex(of: best).map { [$0] } ?? []
        let roundStep = labelStep(values)
        order += kept.indices.filter { isMultiple(values[kept[$0]], of: roundStep) }
        order += [0, kept.count - 1].filter { kept.indices.contains($0) }
        var seen: Set<Int> = []
        let labels = order.filter { seen.insert($0).inserted }
            .prefix(maxValueLabels + 1)
            .map { PointLabel(index: $0, text: valueText(values[kept[$0]])) }

        let bestScore = report.totals[best]
        let bestText = "best F1 \(GestureRendering.ratio(bestScore.f1)) at \(swept) = \(valueText(values[best]))"
        var prSeries = [LineSeries(name: "precision–recall, one point per \(swept) value (labelled in \(unit.isEmpty ? "its unit" : unit))",
                                   points: curve, marks: .lineAndPoints, labels: labels)]
        if let p = bestScore.precision, let r = bestScore.recall {
            prSeries.append(LineSeries(name: bestText, points: [PlotPoint(x: r, y: p)], marks: .points))
        }
        let range = "\(valueText(values.first ?? 0)) to \(valueText(values.last ?? 0))"
        let prChart = Charts.lines(
            title: "Precision–recall as \(swept) goes from \(range) (\(values.count) values)", xLabel: "recall", yLabel: "precision",
            series: prSeries, domain: AxisDomain(x: (0, 1), y: (0, 1)), size: square)

        let metrics: [(String, KeyPath<GestureScore, Double?>)] = [("F1", \.f1), ("precision", \.precision), ("recall", \.recall)]
        let scoreChart = Charts.lines(
            title: "F1, precision and recall against \(swept)", xLabel: axisTitle, yLabel: "score",
            series: metrics.map { name, metric in
                LineSeries(name: name, points: values.indices.compactMap { i in
                    report.totals[i][keyPath: metric].map { PlotPoint(x: values[i], y: $0) }
                })
            },
            verticalReferences: [ReferenceLine(label: bestText, value: values[best], legend: "best F1")],
            domain: AxisDomain(y: (0, 1)))
        return [prChart, scoreChart]
    }

    /// A swept value as short as it can be written: 0.35, 1.5, 400 (the sweep's own steps, no trailing zeros).
    static func compact(_ value: Double) -> String {
        var text = GestureRendering.number(value, 6)
        if text.contains(".") {
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
        }
        return text
    }

    /// A 1-2-5 step giving at most `maxValueLabels` labelled values over the sweep.
    static func labelStep(_ values: [Double]) -> Double {
        guard let low = values.min(), let high = values.max(), high > low else { return 1 }
        var step = 1e-6
        while (high - low) / step > Double(maxValueLabels) {
            step *= mantissa(step) == 2 ? 2.5 : 2
        }
        return step
    }

    private static func mantissa(_ step: Double) -> Double {
        var m = step
        while m >= 10 { m /= 10 }
        while m < 1 { m *= 10 }
        return (m * 1000).rounded() / 1000
    }

    static func isMultiple(_ value: Double, of step: Double) -> Bool {
        let ratio = value / step
        return abs(ratio - ratio.rounded()) < 1e-6
    }
}
