/// One evaluation: every setting tried (one, or a sweep's values) on every trace.
package struct GestureReport: Sendable {
    package var detector: String
    package var gestures: [String]
    /// Empty for a live run (the host decides).
    package var settings: [DetectorSettings]
    /// The swept parameter, when there is a sweep.
    package var sweptParameter: String?
    package var window: MatchWindow
    package var traces: [TraceSummary]
    /// Per setting, the sum over traces.
    package var totals: [GestureScore]
    package var totalsByGesture: [[String: GestureScore]]

    package struct TraceSummary: Sendable {
        package var source: String
        package var controllers: Int
        package var samples: Int
        package var sampleKinds: [String]
        package var labels: Int
        /// Per setting.
        package var scores: [TraceScore]

        package init(source: String, controllers: Int, samples: Int, sampleKinds: [String], labels: Int, scores: [TraceScore]) {
            self.source = source
            self.controllers = controllers
            self.samples = samples
            self.sampleKinds = sampleKinds
            self.labels = labels
            self.scores = scores
        }
    }

    package init(detector: String, gestures: [String], settings: [DetectorSettings], sweptParameter: String?,
                window: MatchWindow, traces: [TraceSummary]) {
        self.detector = detector
        self.gestures = gestures
        self.settings = settings
        self.sweptParameter = sweptParameter
        self.window = window
        self.traces = traces
        // A live run has no detector settings, only the host: one column of scores.
        let columns = 0..<max(settings.count, traces.first?.scores.count ?? 0)
        totals = columns.map { s in traces.reduce(GestureScore()) { $0 + $1.scores[s].score } }
        totalsByGesture = columns.map { s in
            Dictionary(uniqueKeysWithValues: gestures.map { g in
                (g, traces.reduce(GestureScore()) { $0 + ($1.scores[s].byGesture[g] ?? GestureScore()) })
            })
        }
    }

    /// The setting the summary reports: the only one, or the sweep's best F1 (ties: the first, i.e. the lowest value).
    package var bestIndex: Int {
        var best = 0
        for s in totals.indices where (totals[s].f1 ?? -1) > (totals[best].f1 ?? -1) { best = s }
        return best
    }
}

/// A stored result's headline numbers, to gate a change against.
package struct GestureBaseline: Hashable, Sendable {
    package var f1: Double?
    package var recall: Double?
    package var precision: Double?
    /// Per trace source.
    package var traceF1: [String: Double]

    package init(f1: Double?, recall: Double?, precision: Double?, traceF1: [String: Double] = [:]) {
        self.f1 = f1
        self.recall = recall
        self.precision = precision
        self.traceF1 = traceF1
    }

    /// One headline number against the baseline.
    package struct Check: Hashable, Sendable {
        package var metric: String
        package var baseline: Double
        package var current: Double
        package var margin: Double
        /// A drop beyond the margin; a gain or a drop within it passes.
        package var regressed: Bool { current < baseline - margin - 1e-12 }

        package init(metric: String, baseline: Double, current: Double, margin: Double) {
            self.metric = metric
            self.baseline = baseline
            self.current = current
            self.margin = margin
        }
    }

    /// A trace whose F1 fell more than the margin below its baseline.
    package struct TraceRegression: Hashable, Sendable {
        package var source: String
        package var baseline: Double
        package var current: Double
    }

    /// Per-trace F1 drops, to say where a total drop comes from; they do not gate the run.
    package func traceRegressions(in report: GestureReport, margin: Double) -> [TraceRegression] {
        report.traces.compactMap { trace in
            guard let before = traceF1[trace.source] else { return nil }
            let now = trace.scores[report.bestIndex].score.f1 ?? 0
            return now < before - margin - 1e-12 ? TraceRegression(source: trace.source, baseline: before, current: now) : nil
        }
    }

    /// F1 and recall gate the run; precision and per-trace F1 are reported only.
    package func compare(with current: GestureScore, margin: Double) -> [Check] {
        var checks: [Check] = []
        if let f1 { checks.append(Check(metric: "f1", baseline: f1, current: current.f1 ?? 0, margin: margin)) }
        if let recall { checks.append(Check(metric: "recall", baseline: recall, current: current.recall ?? 0, margin: margin)) }
        return checks
    }
}
