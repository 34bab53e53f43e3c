// A timeline of one trace's signal: per panel (a controller's vector), the
// quantities as lines over time, the thresholds they are compared with, the
// samples that crossed, and two lanes above the plot: the labels (hit, missed)
// and false detections, and what the host decided or replied. Gaps in the
// samples are shaded, stream events drawn as vertical lines.
//
// Size stays bounded however many samples come in: each line is reduced to at
// most four points per pixel column (the first, lowest, highest and last of
// the column, `TimelineDecimator`), and marks beyond `Timeline.maxMarksPerKind`
// are merged to one per pixel column.

/// One quantity's line: time (seconds on the figure's axis) and value, in time order.
package struct TimelineSeries: Sendable {
    package var name: String
    package var points: [PlotPoint]
    package init(name: String, points: [PlotPoint]) {
        self.name = name
        self.points = points
    }
}

/// What became of a label or a detection, for the labels lane.
package struct TimelineOutcome: Hashable, Sendable {
    package enum Kind: String, CaseIterable, Hashable, Sendable {
        /// A label a detection matched: drawn at the label's onset, joined to the detection.
        case truePositive = "tp"
        /// A label nothing matched: drawn at its onset.
        case falseNegative = "fn"
        /// A detection no label claimed: drawn at the detection.
        case falsePositive = "fp"
    }

    package var kind: Kind
    /// The label's onset, seconds; nil for a false positive.
    package var labelTime: Double?
    /// The detection's time, seconds; nil for a false negative.
    package var detectionTime: Double?
    /// How long the labelled gesture lasted, seconds, when known.
    package var duration: Double?

    package init(kind: Kind, labelTime: Double?, detectionTime: Double?, duration: Double? = nil) {
        self.kind = kind
        self.labelTime = labelTime
        self.detectionTime = detectionTime
        self.duration = duration
    }

    /// Where its mark goes: the label's onset, or the detection.
    var markTime: Double? { kind == .falsePositive ? detectionTime : labelTime }
}

/// A stretch of time, seconds.
package struct TimelineSpan: Hashable, Sendable {
    package var start: Double
    package var end: Double
    package init(start: Double, end: Double) {
        self.start = start
        self.end = end
    }
}

/// Something that happened at one moment (a stream starting or ending), drawn as a labelled vertical line.
package struct TimelineEvent: Hashable, Sendable {
    package var time: Double
    package var text: String
    package init(time: Double, text: String) {
        self.time = time
        self.text = text
    }
}

/// One panel: one controller's vector.
package struct TimelinePanel: Sendable {
    package var title: String
    /// The y axis title, with the unit.
    package var yLabel: String
    package var series: [TimelineSeries]
    /// The series a threshold is compared with: drawn solid and heavier.
    package var watched: Int?
    /// Horizontal dashed lines, each with its label beside it and its legend entry.
    package var thresholds: [ReferenceLine]
    /// Samples that crossed a threshold (time, value), marked on the line.
    package var triggers: [PlotPoint]
    /// Times the protocol's host model decides, replies on the wire, and decisions the trace records.
    package var decisions: [Double]
    package var replies: [Double]
    package var recordedDecisions: [Double]
    /// Labels and detections, scored; nil when nothing was scored (no detector ran), which hides the lane.
    package var outcomes: [TimelineOutcome]?
    /// Stretches with no sample where some were due.
    package var gaps: [TimelineSpan]
    package var events: [TimelineEvent]
    /// Values the caller left out before they got here (non-finite ones, say); added to the panel's note.
    package var skippedValues: Int

    package init(title: String, yLabel: String, series: [TimelineSeries], watched: Int? = nil, thresholds: [ReferenceLine] = [],
                 triggers: [PlotPoint] = [], decisions: [Double] = [], replies: [Double] = [], recordedDecisions: [Double] = [],
                 outcomes: [TimelineOutcome]? = nil, gaps: [TimelineSpan] = [], events: [TimelineEvent] = [], skippedValues: Int = 0) {
        self.title = title
        self.yLabel = yLabel
        self.series = series
        self.watched = watched
        self.thresholds = thresholds
        self.triggers = triggers
        self.decisions = decisions
        self.replies = replies
        self.recordedDecisions = recordedDecisions
        self.outcomes = outcomes
        self.gaps = gaps
        self.events = events
        self.skippedValues = skippedValues
    }
}

/// A whole figure: a header, then the panels stacked on one time axis.
package struct TimelineFigure: Sendable {
    package var title: String
    /// One line under the title (what was scored, the window); empty for none.
    package var subtitle: String
    /// The time axis, seconds: every panel spans exactly this.
    package var window: TimelineSpan
    package var xLabel: String
    package var panels: [TimelinePanel]
    package var width: Int
    package var panelHeight: Int

    package init(title: String, subtitle: String = "", window: TimelineSpan, xLabel: String = "time since the trace's start (s)",
                 panels: [TimelinePanel], width: Int = 1000, panelHeight: Int = 380) {
        self.title = title
        self.subtitle = subtitle
        self.window = window
        self.xLabel = xLabel
        self.panels = panels
        self.width = width
        self.panelHeight = panelHeight
    }
}

/// The document, and what went into it (for tests and for the command's notes).
package struct TimelineRendering: Sendable {
    package var svg: String
    /// Vertices of every series path: at most four per pixel column per series.
    package var drawnPoints: Int
    /// Marks drawn per class (`mark-tp`, `mark-fn`, `mark-fp`, `mark-trigger`, `mark-decision`, `mark-reply`, `mark-recorded`).
    package var marks: [String: Int]
    /// Values skipped as not drawable (non-finite, absurdly large), over all panels, callers' counts included.
    package var skippedValues: Int
}

/// Reduces a stream of (time, value) points to at most four per column of a fixed grid over
/// [lower, upper]: the column's first, lowest, highest and last point, in time order. Memory is
/// the grid's, whatever the number of points; drawn one column per pixel, the line looks exactly
/// as the whole stream would.
package struct TimelineDecimator: Sendable {
    package let lower: Double
    package let upper: Double
    package let columns: Int
    private var count: [Int32]
    private var first: [PlotPoint]
    private var last: [PlotPoint]
    private var low: [PlotPoint]
    private var high: [PlotPoint]
    /// Points not drawable (NaN, ±infinity, beyond ±1e300), skipped.
    package private(set) var nonFinite = 0
    /// Points outside [lower, upper], skipped.
    package private(set) var outside = 0
    package private(set) var accepted = 0

    /// At most a million columns: more could not be told apart on any screen.
    package init(lower: Double, upper: Double, columns: Int) {
        self.lower = lower
        self.upper = upper
        self.columns = min(max(1, columns), 1_000_000)
        let zero = PlotPoint(x: 0, y: 0)
        count = Array(repeating: 0, count: self.columns)
        first = Array(repeating: zero, count: self.columns)
        last = first
        low = first
        high = first
    }

    package mutating func add(time: Double, value: Double) {
        guard isPlottable(time), isPlottable(value) else {
            nonFinite += 1
            return
        }
        guard time >= lower, time <= upper, isPlottable(lower), isPlottable(upper) else {
            outside += 1
            return
        }
        let span = upper - lower
        let column = span > 0 ? min(columns - 1, Int((time - lower) / span * Double(columns))) : 0
        let point = PlotPoint(x: time, y: value)
        accepted += 1
        if count[column] == 0 {
            first[column] = point
            last[column] = point
            low[column] = point
            high[column] = point
        } else {
            if time < first[column].x { first[column] = point }
            if time >= last[column].x { last[column] = point }
            if value < low[column].y { low[column] = point }
            if value > high[column].y { high[column] = point }
        }
        if count[column] < Int32.max { count[column] += 1 }
    }

    /// The kept points in time order.
    package var points: [PlotPoint] {
        var out: [PlotPoint] = []
        out.reserveCapacity(min(accepted, 4 * columns))
        for column in 0..<columns where count[column] > 0 {
            var kept = [first[column], low[column], high[column], last[column]]
            kept.sort { $0.x < $1.x }
            for point in kept where out.last != point { out.append(point) }
        }
        return out
    }
}

package enum Timeline {
    /// Marks of one kind in one panel drawn one by one up to this many; past it, one per pixel column.
    package static let maxMarksPerKind = 2_000
    /// Event lines labelled at most; the rest are drawn without their text.
    static let maxEventLabels = 40

    static let laneHeight = 20.0
    static let headerHeight = 52
    static let truePositiveColour = "#009E73"
    static let falseNegativeColour = "#CC0000"
    static let falsePositiveColour = "#E69F00"
    static let decisionColour = "#332288"
    static let replyColour = "#882255"
    static let recordedColour = "#666666"
    static let triggerColour = "#111111"
    static let gapColour = "#BBBBBB"
    static let eventColour = "#555555"
    /// Lines: the watched quantity first (blue, solid), the others lighter; none green, orange or red (the outcomes' colours).
    static let watchedColour = "#0072B2"
    static let otherColours = ["#56B4E9", "#AA3377", "#777777", "#332288", "#88CCEE"]
    static let otherDashes = ["7 4", "2 3", "9 3 2 3", "4 2", "12 4"]
    static let thresholdColours = ["#222222", "#666666", "#222222", "#666666"]
    static let thresholdDashes = ["6 3", "2 3", "10 3 3 3", "4 2"]

    package static func render(_ figure: TimelineFigure) -> TimelineRendering {
        let width = min(max(figure.width, PlotSize.minimum.width), PlotSize.maximum.width)
        let panelHeight = min(max(figure.panelHeight, 260), PlotSize.maximum.height)
        let window = drawableWindow(figure.window)

        // Only what falls in the window is drawn, counted in the legend, or given room.
        let panels = figure.panels.map { visible($0, in: window) }
        // One left margin for every panel, so their time axes line up.
        let plotHeights = panels.map { panelGeometry($0, width: Double(width), height: Double(panelHeight), plotLeft: 0).plotHeight }
        let yAxes = zip(panels, plotHeights).map { yAxis(for: $0, plotHeight: $1) }
        let widestYLabel = yAxes.flatMap(\.labels).map { estimatedTextWidth($0, fontSize: Style.tickFontSize) }.max() ?? 0
        let laneNameWidth = estimatedTextWidth("labels", fontSize: Style.legendFontSize)
        var plotLeft = max((Style.yTitleBand + widestYLabel + Style.tickLabelGap).rounded(.up), (laneNameWidth + 18).rounded(.up))
        var rightMargin = 16.0
        var xAxis = timeAxis(window, plotWidth: Double(width) - plotLeft - rightMargin)
        for _ in 0..<3 {
            xAxis = timeAxis(window, plotWidth: Double(width) - plotLeft - rightMargin)
            func half(_ label: String?) -> Double { (estimatedTextWidth(label ?? "", fontSize: Style.tickFontSize) / 2 + 6).rounded(.up) }
            let left = half(xAxis.labels.first), right = half(xAxis.labels.last)
            if left <= plotLeft && right <= rightMargin { break }
            plotLeft = max(plotLeft, left)
            rightMargin = max(rightMargin, right)
        }
        let plotWidth = max(20, (Double(width) - plotLeft - rightMargin).rounded(.down))

        var charts = [header(figure, width: width)]
        var drawnPoints = 0, skipped = 0
        var marks: [String: Int] = [:]
        for (index, panel) in panels.enumerated() {
            let drawn = renderPanel(panel, width: width, height: panelHeight, plotLeft: plotLeft, plotWidth: plotWidth,
                                    xAxis: xAxis, yAxis: yAxes[index], xLabel: figure.xLabel)
            charts.append(drawn.chart)
            drawnPoints += drawn.points
            skipped += drawn.skipped
            for (key, value) in drawn.marks { marks[key, default: 0] += value }
        }
        let title = figure.subtitle.isEmpty ? figure.title : "\(figure.title): \(figure.subtitle)"
        return TimelineRendering(svg: Charts.figure(title: title, charts: charts), drawnPoints: drawnPoints, marks: marks,
                                 skippedValues: skipped)
    }

    /// The panel with only the marks, gaps and events inside the window (lines are clipped as they are reduced).
    static func visible(_ panel: TimelinePanel, in window: (lower: Double, upper: Double)) -> TimelinePanel {
        func inside(_ time: Double) -> Bool { isPlottable(time) && time >= window.lower && time <= window.upper }
        var out = panel
        out.triggers = panel.triggers.filter { inside($0.x) && isPlottable($0.y) }
        out.decisions = panel.decisions.filter(inside)
        out.replies = panel.replies.filter(inside)
        out.recordedDecisions = panel.recordedDecisions.filter(inside)
        out.outcomes = panel.outcomes?.filter { $0.markTime.map(inside) ?? false }
        out.gaps = panel.gaps.filter { isPlottable($0.start) && isPlottable($0.end) && $0.end > window.lower && $0.start < window.upper }
        out.events = panel.events.filter { inside($0.time) }
        return out
    }

    /// The window as an axis can draw it: finite, ordered, and not empty.
    static func drawableWindow(_ window: TimelineSpan) -> (lower: Double, upper: Double) {
        drawableRange(window.start, window.end)
    }

    /// The figure's title and subtitle, above the panels; the subtitle wraps at its "; " onto a second line.
    static func header(_ figure: TimelineFigure, width: Int) -> Chart {
        var svg = SVGWriter()
        svg.beginPanel()
        let maxWidth = Double(width) - 2 * Style.outerPadding
        let fontSize = Style.legendFontSize + 1
        svg.text(fitted(figure.title, maxWidth: maxWidth, fontSize: 16), x: Style.outerPadding, y: 22, fontSize: 16, bold: true,
                 cssClass: "figure-title")
        var lines: [String] = []
        for part in figure.subtitle.split(separator: "; ", omittingEmptySubsequences: true).map(String.init) {
            if let last = lines.last, estimatedTextWidth(last + "; " + part, fontSize: fontSize) <= maxWidth || lines.count == 2 {
                lines[lines.count - 1] = last + "; " + part
            } else {
                lines.append(part)
            }
        }
        for (index, line) in lines.enumerated() {
            svg.text(fitted(line, maxWidth: maxWidth, fontSize: fontSize), x: Style.outerPadding, y: 42 + Double(index) * 16,
                     fontSize: fontSize, fill: Style.mutedTextColour, cssClass: "figure-subtitle")
        }
        svg.endPanel()
        return Chart(size: PlotSize(width: width, height: headerHeight + 16 * max(0, lines.count - 1)), body: svg.output)
    }

    // MARK: Geometry

    struct PanelGeometry {
        var legend: [PlacedLegendItem]
        var swatches: [Swatch]
        var lanes: [Lane]
        var eventRows: Int
        var plotTop: Double
        var plotHeight: Double
    }

    enum Lane: String {
        case labels, host
    }

    /// The legend, the lanes and the plot rectangle's vertical extent.
    static func panelGeometry(_ panel: TimelinePanel, width: Double, height: Double, plotLeft: Double) -> PanelGeometry {
        let entries = legendEntries(panel)
        let legend = Layout.placeLegend(entries.map(\.entry), startX: max(plotLeft, Style.outerPadding), endX: width - Style.outerPadding)
        let legendRows = legend.map { $0.row + 1 }.max() ?? 0
        var lanes: [Lane] = []
        if panel.outcomes != nil { lanes.append(.labels) }
        if !panel.decisions.isEmpty || !panel.replies.isEmpty || !panel.recordedDecisions.isEmpty { lanes.append(.host) }
        let eventRows = panel.events.isEmpty ? 0 : 2
        let plotTop = Style.titleBand + Double(legendRows) * Style.legendRowHeight + 6 + Double(lanes.count) * laneHeight
            + Double(eventRows) * Style.referenceRowHeight + Style.gapAbovePlot
        let plotHeight = max(40, (height - plotTop - Style.bottomMargin).rounded(.down))
        return PanelGeometry(legend: legend, swatches: entries.map(\.swatch), lanes: lanes, eventRows: eventRows,
                             plotTop: plotTop.rounded(.up), plotHeight: plotHeight)
    }

    static func yAxis(for panel: TimelinePanel, plotHeight: Double) -> Axis {
        var extent = Extent()
        for series in panel.series {
            for point in series.points where isPlottable(point.x) && isPlottable(point.y) { extent.include(point.y) }
        }
        for threshold in panel.thresholds { extent.includeIfPlottable(threshold.value) }
        let maxTicks = min(8, max(3, Int(plotHeight / 32)))
        let range = extent.isEmpty ? (lower: 0.0, upper: 1.0) : extent.drawable
        return NiceScale.paddedAxis(lower: range.lower, upper: range.upper, maxTicks: maxTicks, padding: Style.axisPadding)
    }

    /// Exactly the window, with nice ticks inside it: up to 10, fewer when their labels would crowd.
    static func timeAxis(_ window: (lower: Double, upper: Double), plotWidth: Double) -> Axis {
        var maxTicks = min(10, max(3, Int(plotWidth / 80)))
        while true {
            let axis = NiceScale.paddedAxis(lower: window.lower, upper: window.upper, maxTicks: maxTicks, padding: 0)
            let widest = axis.labels.map { estimatedTextWidth($0, fontSize: Style.tickFontSize) }.max() ?? 0
            let spacing = plotWidth / Double(max(1, axis.ticks.count - 1))
            if widest + 14 <= spacing || maxTicks <= 2 { return axis }
            maxTicks -= 1
        }
    }

    // MARK: Legend

    enum Swatch {
        case line(colour: String, dash: String, width: Double)
        case dot(String), cross(String), diamond(String), ring(String), triangleUp(String), triangleDown(String), square(String)
        case band(String)
    }

    static func legendEntries(_ panel: TimelinePanel) -> [(entry: LegendEntry, swatch: Swatch)] {
        var out: [(LegendEntry, Swatch)] = []
        for (index, series) in panel.series.enumerated() {
            let style = seriesStyle(index, watched: panel.watched)
            out.append((LegendEntry(name: series.name, colour: style.colour, dash: style.dash), .line(colour: style.colour, dash: style.dash, width: style.width)))
        }
        for (index, threshold) in uniqueThresholdLegends(panel.thresholds).enumerated() {
            let colour = thresholdColours[index % thresholdColours.count], dash = thresholdDashes[index % thresholdDashes.count]
            out.append((LegendEntry(name: threshold, colour: colour, dash: dash), .line(colour: colour, dash: dash, width: 1.5)))
        }
        if !panel.triggers.isEmpty {
            out.append((LegendEntry(name: "crossed τ (\(panel.triggers.count))", colour: triggerColour), .ring(triggerColour)))
        }
        if let outcomes = panel.outcomes {
            let counts = Dictionary(grouping: outcomes, by: \.kind).mapValues(\.count)
            out.append((LegendEntry(name: "TP: label hit (\(counts[.truePositive] ?? 0))", colour: truePositiveColour), .dot(truePositiveColour)))
            out.append((LegendEntry(name: "FN: label missed (\(counts[.falseNegative] ?? 0))", colour: falseNegativeColour), .cross(falseNegativeColour)))
            out.append((LegendEntry(name: "FP: false detection (\(counts[.falsePositive] ?? 0))", colour: falsePositiveColour),
                        .diamond(falsePositiveColour)))
        }
        if !panel.decisions.isEmpty {
            out.append((LegendEntry(name: "host model on the protocol's samples (\(panel.decisions.count))", colour: decisionColour), .triangleUp(decisionColour)))
        }
        if !panel.recordedDecisions.isEmpty {
            out.append((LegendEntry(name: "decision recorded (\(panel.recordedDecisions.count))", colour: recordedColour), .square(recordedColour)))
        }
        if !panel.replies.isEmpty {
            out.append((LegendEntry(name: "reply (\(panel.replies.count))", colour: replyColour), .triangleDown(replyColour)))
        }
        if !panel.gaps.isEmpty {
            out.append((LegendEntry(name: "gap > 2 sample periods (\(panel.gaps.count))", colour: gapColour), .band(gapColour)))
        }
        if !panel.events.isEmpty {
            out.append((LegendEntry(name: "stream event", colour: eventColour, dash: "3 2"), .line(colour: eventColour, dash: "3 2", width: 1)))
        }
        return out
    }

    static func uniqueThresholdLegends(_ thresholds: [ReferenceLine]) -> [String] {
        var seen: [String] = []
        for threshold in thresholds where isPlottable(threshold.value) && !seen.contains(threshold.legendText) { seen.append(threshold.legendText) }
        return seen
    }

    static func seriesStyle(_ index: Int, watched: Int?) -> (colour: String, dash: String, width: Double) {
        if index == watched || (watched == nil && index == 0) { return (watchedColour, "none", 1.7) }
        let other = watched.map { index > $0 ? index - 1 : index } ?? index - 1
        return (otherColours[other % otherColours.count], otherDashes[other % otherDashes.count], 1.3)
    }

    // MARK: One panel

    static func renderPanel(_ panel: TimelinePanel, width: Int, height: Int, plotLeft: Double, plotWidth: Double, xAxis: Axis, yAxis: Axis,
                            xLabel: String) -> (chart: Chart, points: Int, skipped: Int, marks: [String: Int]) {
        let geometry = panelGeometry(panel, width: Double(width), height: Double(height), plotLeft: plotLeft)
        let frame = ChartFrame(width: Double(width), height: Double(height), plotLeft: plotLeft, plotTop: geometry.plotTop,
                               plotWidth: plotWidth, plotHeight: geometry.plotHeight, xAxis: xAxis, yAxis: yAxis)
        var marks: [String: Int] = [:]
        var svg = SVGWriter()
        svg.beginPanel()
        svg.grid(frame)
        svg.plotAreaMarker(frame)
        var occupied = PixelMask(frame: frame)

        func inWindow(_ time: Double) -> Bool { isPlottable(time) && time >= xAxis.lower && time <= xAxis.upper }
        func clampedX(_ time: Double) -> Double { frame.pixelX(min(max(time, xAxis.lower), xAxis.upper)) }

        // Gaps, merged where they meet at pixel resolution.
        var gapRects: [(x0: Double, x1: Double)] = []
        for gap in panel.gaps.sorted(by: { $0.start < $1.start })
        where isPlottable(gap.start) && isPlottable(gap.end) && gap.end > xAxis.lower && gap.start < xAxis.upper {
            let x0 = clampedX(gap.start), x1 = max(clampedX(gap.end), x0 + 1)
            if let last = gapRects.last, x0 <= last.x1 + 1 { gapRects[gapRects.count - 1].x1 = max(last.x1, x1) } else { gapRects.append((x0, x1)) }
        }
        for rect in gapRects {
            svg.raw("<rect class=\"gap\" x=\"\(svgNumber(rect.x0))\" y=\"\(svgNumber(frame.plotTop))\" width=\"\(svgNumber(rect.x1 - rect.x0))\"")
            svg.raw(" height=\"\(svgNumber(frame.plotHeight))\" fill=\"\(gapColour)\" fill-opacity=\"0.35\"/>")
        }

        // Each label's span, tinted by its outcome; spans of one outcome that overlap on screen are
        // one rectangle, so a trace of 30,000 labels draws at most about one per pixel column.
        let outcomes = (panel.outcomes ?? []).filter { $0.markTime.map(inWindow) ?? false }
        for kind in [TimelineOutcome.Kind.truePositive, .falseNegative] {
            var spans: [(x0: Double, x1: Double)] = []
            for outcome in outcomes where outcome.kind == kind {
                guard let onset = outcome.labelTime else { continue }
                let x0 = frame.pixelX(onset)
                let x1 = max(x0 + 2, clampedX(onset + max(0, outcome.duration.flatMap { isPlottable($0) ? $0 : nil } ?? 0)))
                if let last = spans.last, x0 <= last.x1 { spans[spans.count - 1].x1 = max(last.x1, x1) } else { spans.append((x0, x1)) }
            }
            let colour = kind == .truePositive ? truePositiveColour : falseNegativeColour
            for span in spans {
                svg.raw("<rect class=\"label-span\" x=\"\(svgNumber(span.x0))\" y=\"\(svgNumber(frame.plotTop))\" width=\"\(svgNumber(span.x1 - span.x0))\"")
                svg.raw(" height=\"\(svgNumber(frame.plotHeight))\" fill=\"\(colour)\" fill-opacity=\"0.13\"/>")
            }
        }
        // Each false detection a thin line: one per pixel column.
        var falseColumns = Set<Int>()
        for outcome in outcomes where outcome.kind == .falsePositive {
            guard let time = outcome.detectionTime else { continue }
            let x = frame.pixelX(time)
            guard falseColumns.insert(Int(x.rounded())).inserted else { continue }
            svg.line(x1: x, y1: frame.plotTop, x2: x, y2: frame.plotBottom, stroke: falsePositiveColour, width: 1, dash: "3 2",
                     cssClass: "fp-line")
        }

        // Stream events: a line each, labelled in two rows above the plot where the text fits.
        // The same event at the same pixel (a connection's two directions starting together) is drawn once.
        var seenEvents = Set<String>()
        let events = panel.events.filter { inWindow($0.time) }.sorted { $0.time < $1.time }
            .filter { seenEvents.insert("\(Int(frame.pixelX($0.time)))|\($0.text)").inserted }
        var rowEnds = Array(repeating: -Double.infinity, count: geometry.eventRows)
        var unlabelled = 0
        for (index, event) in events.enumerated() {
            let x = frame.pixelX(event.time)
            svg.line(x1: x, y1: frame.plotTop - 2, x2: x, y2: frame.plotBottom, stroke: eventColour, width: 1, dash: "3 2", cssClass: "event")
            occupied.markSegment(from: (x, frame.plotTop), to: (x, frame.plotBottom), radius: 2)
            let text = fitted(event.text, maxWidth: 160, fontSize: Style.referenceFontSize)
            let textWidth = estimatedTextWidth(text, fontSize: Style.referenceFontSize)
            let anchorEnd = x + 3 + textWidth > Double(width) - 4
            let span = anchorEnd ? (x - 3 - textWidth, x - 3) : (x + 3, x + 3 + textWidth)
            guard index < maxEventLabels, let row = rowEnds.indices.first(where: { rowEnds[$0] + 4 < span.0 }) else {
                unlabelled += 1
                continue
            }
            rowEnds[row] = span.1
            let baseline = frame.plotTop - 4 - Double(row) * Style.referenceRowHeight
            svg.text(text, x: anchorEnd ? x - 3 : x + 3, y: baseline, fontSize: Style.referenceFontSize, anchor: anchorEnd ? .end : .start,
                     fill: eventColour, cssClass: "event-label")
        }

        // The lines, one column of pixels at a time, broken across gaps.
        var skipped = panel.skippedValues
        var points = 0
        let gaps = panel.gaps.filter { isPlottable($0.start) && isPlottable($0.end) }.sorted { $0.start < $1.start }
        let order = panel.series.indices.sorted { a, b in (a == panel.watched ? 1 : 0, a) < (b == panel.watched ? 1 : 0, b) }
        for index in order {
            let series = panel.series[index]
            var decimator = TimelineDecimator(lower: xAxis.lower, upper: xAxis.upper, columns: Int(plotWidth))
            for point in series.points { decimator.add(time: point.x, value: point.y) }
            skipped += decimator.nonFinite
            let kept = decimator.points
            guard !kept.isEmpty else { continue }
            points += kept.count
            let style = seriesStyle(index, watched: panel.watched)
            var path = ""
            path.reserveCapacity(kept.count * 14)
            var gapIndex = 0
            var previous: PlotPoint?
            var previousPixel: (x: Double, y: Double)?
            for point in kept {
                let pixel = (x: frame.pixelX(point.x), y: frame.pixelY(point.y))
                var breaks = previous == nil
                if let previous {
                    while gapIndex < gaps.count && gaps[gapIndex].end <= previous.x { gapIndex += 1 }
                    if gapIndex < gaps.count && gaps[gapIndex].start >= previous.x && gaps[gapIndex].end <= point.x { breaks = true }
                }
                path += (breaks ? "M" : "L") + "\(svgNumber(pixel.x)) \(svgNumber(pixel.y))"
                if !breaks, let previousPixel { occupied.markSegment(from: previousPixel, to: pixel, radius: style.width / 2 + 1) }
                previous = point
                previousPixel = pixel
            }
            svg.raw("<path class=\"series\" data-name=\"\(xmlEscaped(series.name))\" d=\"\(path)\" fill=\"none\" stroke=\"\(style.colour)\"")
            svg.raw(" stroke-width=\"\(svgNumber(style.width))\"")
            if style.dash != "none" { svg.raw(" stroke-dasharray=\"\(style.dash)\"") }
            svg.raw(" stroke-linejoin=\"round\" stroke-linecap=\"round\"/>")
        }

        // Thresholds, labelled where the label covers the least ink.
        let legends = uniqueThresholdLegends(panel.thresholds)
        let thresholds = panel.thresholds.filter { isPlottable($0.value) }.map { line -> DrawnReference in
            let group = legends.firstIndex(of: line.legendText) ?? 0
            return DrawnReference(line: line, colour: thresholdColours[group % thresholdColours.count],
                                  dash: thresholdDashes[group % thresholdDashes.count])
        }
        if !thresholds.isEmpty { svg.horizontalReferences(thresholds, frame: frame, occupied: &occupied) }

        // Samples that crossed, on the line.
        var keptTriggers = panel.triggers.filter { inWindow($0.x) && isPlottable($0.y) }
        if keptTriggers.count > maxMarksPerKind {
            var seen = Set<Int>()
            keptTriggers = keptTriggers.sorted { $0.x < $1.x }.filter { seen.insert(Int(frame.pixelX($0.x))).inserted }
        }
        for point in keptTriggers {
            svg.ring(cx: frame.pixelX(point.x), cy: frame.pixelY(point.y), r: 3.2, stroke: triggerColour, cssClass: "mark-trigger")
        }
        marks["mark-trigger"] = keptTriggers.count

        // The lanes.
        var laneTop = Style.titleBand + Double(geometry.legend.map { $0.row + 1 }.max() ?? 0) * Style.legendRowHeight + 6
        for lane in geometry.lanes {
            let centre = laneTop + laneHeight / 2
            svg.rect(x: frame.plotLeft, y: laneTop + 1, width: frame.plotWidth, height: laneHeight - 2, fill: "#F4F4F4")
            svg.text(lane.rawValue, x: frame.plotLeft - 8, y: centre + 4, fontSize: Style.legendFontSize, anchor: .end,
                     fill: Style.mutedTextColour, cssClass: "lane-name")
            switch lane {
            case .labels:
                drawOutcomes(outcomes, centre: centre, frame: frame, svg: &svg, marks: &marks, inWindow: inWindow)
            case .host:
                // Marks closer than a few pixels on average would run together: a rug of one tick per pixel column instead.
                let dense = frame.plotWidth / 4
                let up = onePerColumnIfMany(panel.decisions.filter(inWindow), frame: frame)
                if Double(up.count) > dense {
                    marks["mark-decision"] = rug(up, from: centre - 8, to: centre - 1, colour: decisionColour, cssClass: "rug-decision", frame: frame, svg: &svg)
                } else {
                    for time in up { svg.raw(triangle(x: frame.pixelX(time), y: centre - 3, up: true, colour: decisionColour, cssClass: "mark-decision")) }
                    marks["mark-decision"] = up.count
                }
                let recorded = onePerColumnIfMany(panel.recordedDecisions.filter(inWindow), frame: frame)
                if Double(recorded.count) > dense {
                    marks["mark-recorded"] = rug(recorded, from: centre - 3, to: centre + 3, colour: recordedColour, cssClass: "rug-recorded", frame: frame, svg: &svg)
                } else {
                    for time in recorded {
                        let x = frame.pixelX(time)
                        svg.raw("<rect class=\"mark-recorded\" x=\"\(svgNumber(x - 3))\" y=\"\(svgNumber(centre - 3))\" width=\"6\" height=\"6\" fill=\"\(recordedColour)\"/>")
                    }
                    marks["mark-recorded"] = recorded.count
                }
                let down = onePerColumnIfMany(panel.replies.filter(inWindow), frame: frame)
                if Double(down.count) > dense {
                    marks["mark-reply"] = rug(down, from: centre + 1, to: centre + 8, colour: replyColour, cssClass: "rug-reply", frame: frame, svg: &svg)
                } else {
                    for time in down { svg.raw(triangle(x: frame.pixelX(time), y: centre + 4, up: false, colour: replyColour, cssClass: "mark-reply")) }
                    marks["mark-reply"] = down.count
                }
            }
            laneTop += laneHeight
        }

        drawAxes(frame, title: panel.title, xTitle: xLabel, yTitle: panel.yLabel, svg: &svg)
        drawLegend(geometry.legend, swatches: geometry.swatches, svg: &svg)
        var notes: [String] = []
        if skipped > 0 { notes.append("\(skipped) non-finite value\(skipped == 1 ? "" : "s") skipped") }
        if unlabelled > 0 { notes.append("\(unlabelled) event\(unlabelled == 1 ? "" : "s") not labelled") }
        if !notes.isEmpty {
            svg.text(notes.joined(separator: "; "), x: Double(width) - Style.outerPadding, y: Style.titleBaseline, fontSize: Style.legendFontSize,
                     anchor: .end, fill: Style.mutedTextColour, cssClass: "note")
        }
        if points == 0 { svg.noData(frame) }
        svg.endPanel()
        return (Chart(size: PlotSize(width: width, height: height), body: svg.output), points, skipped, marks)
    }

    /// The labels lane: a dot per label hit, joined to its detection; a cross per label missed; a diamond per false detection.
    static func drawOutcomes(_ outcomes: [TimelineOutcome], centre: Double, frame: ChartFrame, svg: inout SVGWriter, marks: inout [String: Int],
                             inWindow: (Double) -> Bool) {
        for kind in TimelineOutcome.Kind.allCases {
            let mine = outcomes.filter { $0.kind == kind }
            let times = onePerColumnIfMany(mine.compactMap(\.markTime), frame: frame)
            let merged = times.count < mine.count
            let cssClass = "mark-\(kind.rawValue)"
            switch kind {
            case .truePositive:
                if !merged {
                    for outcome in mine {
                        guard let onset = outcome.labelTime, let detected = outcome.detectionTime, inWindow(detected) else { continue }
                        let x0 = frame.pixelX(onset), x1 = frame.pixelX(detected)
                        svg.line(x1: x0, y1: centre, x2: x1, y2: centre, stroke: truePositiveColour, width: 1.5, cssClass: "tp-delay")
                        svg.line(x1: x1, y1: centre - 5, x2: x1, y2: centre + 5, stroke: truePositiveColour, width: 1.5, cssClass: "tp-delay")
                    }
                }
                for time in times { svg.circle(cx: frame.pixelX(time), cy: centre, r: 4.2, fill: truePositiveColour, cssClass: cssClass) }
            case .falseNegative:
                for time in times {
                    let x = frame.pixelX(time), r = 4.0
                    svg.raw("<path class=\"\(cssClass)\" d=\"M\(svgNumber(x - r)) \(svgNumber(centre - r))L\(svgNumber(x + r)) \(svgNumber(centre + r))")
                    svg.raw("M\(svgNumber(x - r)) \(svgNumber(centre + r))L\(svgNumber(x + r)) \(svgNumber(centre - r))\"")
                    svg.raw(" stroke=\"\(falseNegativeColour)\" stroke-width=\"2.4\" stroke-linecap=\"round\" fill=\"none\"/>")
                }
            case .falsePositive:
                for time in times { svg.raw(diamond(x: frame.pixelX(time), y: centre, colour: falsePositiveColour, cssClass: cssClass)) }
            }
            marks[cssClass] = times.count
        }
    }

    /// A tick per pixel column holding any of `times`, as one path; returns the ticks drawn.
    static func rug(_ times: [Double], from y0: Double, to y1: Double, colour: String, cssClass: String, frame: ChartFrame,
                    svg: inout SVGWriter) -> Int {
        var columns = Set<Int>()
        for time in times { columns.insert(Int(frame.pixelX(time).rounded(.down))) }
        var path = ""
        for column in columns.sorted() { path += "M\(column).5 \(svgNumber(y0))V\(svgNumber(y1))" }
        svg.raw("<path class=\"\(cssClass)\" d=\"\(path)\" stroke=\"\(colour)\" stroke-width=\"1\" fill=\"none\"/>")
        return columns.count
    }

    /// The times as given when there are few; past `maxMarksPerKind`, one per pixel column.
    static func onePerColumnIfMany(_ times: [Double], frame: ChartFrame) -> [Double] {
        guard times.count > maxMarksPerKind else { return times }
        var seen = Set<Int>()
        return times.sorted().filter { seen.insert(Int(frame.pixelX($0))).inserted }
    }

    static func triangle(x: Double, y: Double, up: Bool, colour: String, cssClass: String) -> String {
        let h = up ? -4.5 : 4.5
        return "<path class=\"\(cssClass)\" d=\"M\(svgNumber(x)) \(svgNumber(y + h))L\(svgNumber(x + 4.5)) \(svgNumber(y - h * 0.6))"
            + "L\(svgNumber(x - 4.5)) \(svgNumber(y - h * 0.6))Z\" fill=\"\(colour)\"/>"
    }

    static func diamond(x: Double, y: Double, colour: String, cssClass: String) -> String {
        "<path class=\"\(cssClass)\" d=\"M\(svgNumber(x)) \(svgNumber(y - 5))L\(svgNumber(x + 5)) \(svgNumber(y))L\(svgNumber(x)) \(svgNumber(y + 5))"
            + "L\(svgNumber(x - 5)) \(svgNumber(y))Z\" fill=\"\(colour)\"/>"
    }

    /// Axis lines, ticks and their labels, the axis titles and the panel's title. The y title is
    /// kept to the plot's height, so it never reaches the lanes' names above it.
    static func drawAxes(_ frame: ChartFrame, title: String, xTitle: String, yTitle: String, svg: inout SVGWriter) {
        svg.line(x1: frame.plotLeft, y1: frame.plotBottom, x2: frame.plotRight, y2: frame.plotBottom, stroke: Style.axisColour)
        svg.line(x1: frame.plotLeft, y1: frame.plotTop, x2: frame.plotLeft, y2: frame.plotBottom, stroke: Style.axisColour)
        for (tick, label) in zip(frame.xAxis.ticks, frame.xAxis.labels) {
            let x = frame.pixelX(tick)
            svg.line(x1: x, y1: frame.plotBottom, x2: x, y2: frame.plotBottom + Style.tickLength, stroke: Style.axisColour)
            svg.text(label, x: x, y: frame.plotBottom + 17, fontSize: Style.tickFontSize, anchor: .middle)
        }
        for (tick, label) in zip(frame.yAxis.ticks, frame.yAxis.labels) {
            let y = frame.pixelY(tick)
            svg.line(x1: frame.plotLeft - Style.tickLength, y1: y, x2: frame.plotLeft, y2: y, stroke: Style.axisColour)
            svg.text(label, x: frame.plotLeft - Style.tickLabelGap, y: y + 4, fontSize: Style.tickFontSize, anchor: .end)
        }
        svg.text(fitted(xTitle, maxWidth: frame.plotWidth, fontSize: Style.axisTitleFontSize), x: frame.plotLeft + frame.plotWidth / 2,
                 y: frame.height - 9, fontSize: Style.axisTitleFontSize, anchor: .middle, cssClass: "x-title")
        svg.verticalText(fitted(yTitle, maxWidth: frame.plotHeight - 4, fontSize: Style.axisTitleFontSize), x: Style.yTitleBaseline,
                         y: frame.plotTop + frame.plotHeight / 2, fontSize: Style.axisTitleFontSize)
        svg.text(fitted(title, maxWidth: frame.width * 0.62, fontSize: Style.titleFontSize), x: Style.outerPadding, y: Style.titleBaseline,
                 fontSize: Style.titleFontSize, bold: true, cssClass: "title")
    }

    static func drawLegend(_ items: [PlacedLegendItem], swatches: [Swatch], svg: inout SVGWriter) {
        for (index, item) in items.enumerated() {
            let baseline = Style.titleBand + Double(item.row) * Style.legendRowHeight + 12
            guard item.colour != nil, index < swatches.count else {
                svg.text(item.text, x: item.x, y: baseline, fontSize: Style.legendFontSize, fill: Style.mutedTextColour)
                continue
            }
            let cx = item.x + 10, cy = baseline - 4
            svg.raw("<g class=\"legend-entry\">")
            switch swatches[index] {
            case .line(let colour, let dash, let width):
                svg.line(x1: item.x, y1: cy, x2: item.x + 22, y2: cy, stroke: colour, width: max(1.5, width), dash: dash)
            case .dot(let colour): svg.circle(cx: cx, cy: cy, r: 4.2, fill: colour)
            case .ring(let colour): svg.ring(cx: cx, cy: cy, r: 3.5, stroke: colour)
            case .diamond(let colour): svg.raw(diamond(x: cx, y: cy, colour: colour, cssClass: "swatch"))
            case .triangleUp(let colour): svg.raw(triangle(x: cx, y: cy, up: true, colour: colour, cssClass: "swatch"))
            case .triangleDown(let colour): svg.raw(triangle(x: cx, y: cy, up: false, colour: colour, cssClass: "swatch"))
            case .square(let colour): svg.rect(x: cx - 3, y: cy - 3, width: 6, height: 6, fill: colour)
            case .cross(let colour):
                svg.raw("<path d=\"M\(svgNumber(cx - 4)) \(svgNumber(cy - 4))L\(svgNumber(cx + 4)) \(svgNumber(cy + 4))M\(svgNumber(cx - 4)) ")
                svg.raw("\(svgNumber(cy + 4))L\(svgNumber(cx + 4)) \(svgNumber(cy - 4))\" stroke=\"\(colour)\" stroke-width=\"2.4\" stroke-linecap=\"round\"/>")
            case .band(let colour): svg.rect(x: item.x + 2, y: cy - 6, width: 18, height: 12, fill: colour, opacity: 0.5)
            }
            svg.text(item.text, x: item.x + Layout.legendSwatchWidth, y: baseline, fontSize: Style.legendFontSize, cssClass: "legend")
            svg.raw("</g>")
        }
    }
}
