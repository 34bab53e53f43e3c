import KinetraceGestures
import KinetracePlot

/// `kinetrace gestures eval --plot`: for a sweep, the precision–recall trade-off and
/// F1 against the swept value; otherwise F1, precision and recall per trace.
enum GestureFigures {
    static func figure(_ report: GestureReport) -> String {
        let best = report.bestIndex
        var charts: [Chart] = []
        if let swept = report.sweptParameter {
            let values = report.settings.map { $0[swept] }
            let curve = report.totals.enumerated().compactMap { i, s -> PlotPoint? in
                guard let p = s.precision, let r = s.recall else { return nil }
                return PlotPoint(x: r, y: p)
            }
            var bestPoint: [PlotPoint] = []
            if let p = report.totals[best].precision, let r = report.totals[best].recall { bestPoint = [PlotPoint(x: r, y: p)] }
            charts.append(Charts.scatter(
                title: "Precision–recall over \(swept) (\(values.count) values)", xLabel: "recall", yLabel: "precision",
                series: [PlotSeries(name: "\(swept) values", points: curve),
                         PlotSeries(name: "best F1 at \(swept)=\(GestureRendering.number(values[best]))", points: bestPoint)]))
            charts.append(Charts.scatter(
                title: "F1, precision and recall against \(swept)", xLabel: swept, yLabel: "score",
                series: [("F1", \GestureScore.f1), ("precision", \GestureScore.precision), ("recall", \GestureScore.recall)].map { name, metric in
                    PlotSeries(name: name, points: report.totals.enumerated().compactMap { i, s in s[keyPath: metric].map { PlotPoint(x: values[i], y: $0) } })
                },
                references: [ReferenceLine(label: "best F1 \(GestureRendering.ratio(report.totals[best].f1)) at \(swept)=\(GestureRendering.number(values[best]))",
                                           value: report.totals[best].f1 ?? 0)]))
        } else {
            charts.append(Charts.scatter(
                title: "Per trace: \(report.detector) \(GestureRendering.settingText(report, best))", xLabel: "trace (in report order)", yLabel: "score",
                series: [("F1", \GestureScore.f1), ("precision", \GestureScore.precision), ("recall", \GestureScore.recall)].map { name, metric in
                    PlotSeries(name: name, points: report.traces.enumerated().compactMap { i, t in
                        t.scores[best].score[keyPath: metric].map { PlotPoint(x: Double(i + 1), y: $0) }
                    })
                }))
            let delays = report.totals[best].delaysMs
            if !delays.isEmpty {
                charts.append(Charts.histogram(title: "Detection delay (onset → detecting sample)", xLabel: "ms", values: delays))
            }
        }
        return Charts.figure(title: "kinetrace gestures eval: \(report.detector)", charts: charts)
    }
}
