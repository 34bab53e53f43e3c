/// One evaluation: every setting tried (one, or a sweep's values) on every trace.
public struct GestureReport: Sendable {
    public var detector: String
    public var gestures: [String]
    /// Empty for a live run (the host decides).
    public var settings: [DetectorSettings]
    /// The swept parameter, when there is a sweep.
    public var sweptParameter: String?
    public var window: MatchWindow
    public var traces: [TraceSummary]
    /// Per setting, the sum over traces.
    public var totals: [GestureScore]
    public var totalsByGesture: [[String: GestureScore]]

    public struct TraceSummary: Sendable {
        public var source: String
        public var controllers: Int
        public var samples: Int
        public var sampleKinds: [String]
        public var labels: Int
        /// Per setting.
        public var scores: [TraceScore]

        public init(source: String, controllers: Int, samples: Int, sampleKinds: [String], labels: Int, scores: [TraceScore]) {
            self.source = source
            self.controllers = controllers
            self.samples = samples
            self.sampleKinds = sampleKinds
            self.labels = labels
            self.scores = scores
        }
    }

    public init(detector: String, gestures: [String], settings: [DetectorSettings], sweptParameter: String?,
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
    public var bestIndex: Int {
        var best = 0
        for s in totals.indices where (totals[s].f1 ?? -1) > (totals[best].f1 ?? -1) { best = s }
        return best
    }
}

/// A stored result's headline numbers, to gate a change against.
public struct GestureBaseline: Hashable, Sendable {
    public var f1: Double?
    public var recall: Double?
    public var precision: Double?
    /// Per trace source.
    public var traceF1: [String: Double]

    public init(f1: Double?, recall: Double?, precision: Double?, traceF1: [String: Double] = [:]) {
        self.f1 = f1
        self.recall = recall
        self.precision = precision
        self.traceF1 = traceF1
    }

    /// One headline number against the baseline.
    public struct Check: Hashable, Sendable {
        public var metric: String
        public var baseline: Double
        public var current: Double
        public var margin: Double
        /// A drop beyond the margin; a gain or a drop within it passes.
        public var regressed: Bool { current < baseline - margin - 1e-12 }

        public init(metric: String, baseline: Double, current: Double, margin: Double) {
            self.metric = metric
            self.baseline = baseline
            self.current = current
            self.margin = margin
        }
    }

    /// A trace whose F1 fell more than the margin below its baseline.
    public struct TraceRegression: Hashable, Sendable {
        public var source: String
        public var baseline: Double
        public var current: Double
    }

    /// Per-trace F1 drops, to say where a total drop comes from; they do not gate the run.
    public func traceRegressions(in report: GestureReport, margin: Double) -> [TraceRegression] {
        report.traces.compactMap { trace in
            guard let before = traceF1[trace.source] else { return nil }
            let now = trace.scores[report.bestIndex].score.f1 ?? 0
            return now < before - margin - 1e-12 ? TraceRegression(source: trace.source, baseline: before, current: now) : nil
        }
    }

    /// F1 and recall gate the run; precision and per-trace F1 are reported only.
    public func compare(with current: GestureScore, margin: Double) -> [Check] {
        var checks: [Check] = []
        if let f1 { checks.append(Check(metric: "f1", baseline: f1, current: current.f1 ?? 0, margin: margin)) }
        if let recall { checks.append(Check(metric: "recall", baseline: recall, current: current.recall ?? 0, margin: margin)) }
        return checks
    }
}
