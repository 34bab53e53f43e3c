import Foundation
import KinetraceTestSupport
import Testing

@testable import KinetracePlot

/// The timeline model, data in and SVG out: bounded however many samples come in, the
/// threshold where its value says, one mark per outcome, gaps breaking the lines, and
/// whatever is not finite skipped and counted.
@Suite struct TimelineTests {
    /// A 1 kHz signal with a bump above τ every `period` seconds.
    static func signal(seconds: Double, rate: Double = 1000, period: Double = 2) -> [PlotPoint] {
        let count = Int(seconds * rate)
        return (0..<count).map { i in
            let t = Double(i) / rate
            let phase = t.truncatingRemainder(dividingBy: period)
            let bump = phase > 1 && phase < 1.05 ? 0.9 : 0
            return PlotPoint(x: t, y: 0.05 * sin(t * 37) + bump)
        }
    }

    static func panel(_ points: [PlotPoint], outcomes: [TimelineOutcome]? = nil, gaps: [TimelineSpan] = []) -> TimelinePanel {
        TimelinePanel(
            title: "10.0.0.10:50000 · user acceleration", yLabel: "user acceleration (g)",
            series: [TimelineSeries(name: "ax", points: points.map { PlotPoint(x: $0.x, y: $0.y * 0.3) }),
                     TimelineSeries(name: "ay", points: points),
                     TimelineSeries(name: "az", points: points.map { PlotPoint(x: $0.x, y: -$0.y * 0.2) })],
            watched: 1, thresholds: [ReferenceLine(label: "τ = 0.5 g", value: 0.5, legend: "τ = 0.5 g on ay (host rule)")],
            triggers: points.indices.dropFirst().filter { points[$0].y > 0.5 && points[$0 - 1].y <= 0.5 }.map { points[$0] },
            decisions: [1.0, 3.0], replies: [1.07, 3.07], outcomes: outcomes, gaps: gaps)
    }

    @Test func theDecimatorKeepsFourPointsAColumnWithTheExtremes() {
        var decimator = TimelineDecimator(lower: 0, upper: 100, columns: 50)
        var lowest = Double.infinity, highest = -Double.infinity
        for i in 0..<2_000_000 {
            let t = Double(i) / 20_000
            let v = sin(Double(i) * 0.001) * (1 + Double(i % 7))
            lowest = min(lowest, v)
            highest = max(highest, v)
            decimator.add(time: t, value: v)
        }
        decimator.add(time: 5, value: .nan)
        decimator.add(time: .infinity, value: 1)
        decimator.add(time: 101, value: 1)
        let points = decimator.points
        #expect(points.count <= 4 * 50 && points.count >= 50)
        #expect(points.map(\.x) == points.map(\.x).sorted(), "in time order")
        #expect(points.map(\.y).min() == lowest && points.map(\.y).max() == highest)
        #expect(decimator.nonFinite == 2 && decimator.outside == 1 && decimator.accepted == 2_000_000)
    }

    /// A million samples a series draw as at most four points per pixel column; the file stays small.
    @Test func aMillionSamplesDrawAsABoundedNumberOfPoints() throws {
        let points = Self.signal(seconds: 1000)
        #expect(points.count == 1_000_000)
        let figure = TimelineFigure(title: "big", window: TimelineSpan(start: 0, end: 1000), panels: [Self.panel(points)], width: 1000)
        let rendering = Timeline.render(figure)
        let area = try #require(SVGStructure.plotAreas(rendering.svg).first)
        #expect(rendering.drawnPoints <= 3 * 4 * Int(area.width), "\(rendering.drawnPoints) points")
        let drawn = SVGStructure.withClass("series", in: rendering.svg).map { SVGStructure.vertices($0["d"] ?? "").count }.reduce(0, +)
        #expect(drawn == rendering.drawnPoints)
        #expect(rendering.svg.utf8.count < 400_000, "\(rendering.svg.utf8.count) bytes")
        // The bumps survive decimation: the line still reaches above τ.
        let ay = try #require(SVGStructure.withClass("series", in: rendering.svg).first { $0["data-name"] == "ay" })
        #expect(SVGStructure.vertices(ay["d"]!).contains { $0.y < area.pixelY(0.85) })
        #expect(rendering.marks["mark-trigger"] == 500, "a crossing every 2 s")
    }

    /// Thirty thousand labels and detections in a window 1,000 pixels wide: the spans, the false
    /// detections' lines and the marks stay about one per pixel column, so the file stays small
    /// (each label's span was its own rectangle: 33,185 of them made a 3.9 MB figure).
    @Test func thirtyThousandLabelsDrawAsABoundedNumberOfMarks() throws {
        var outcomes: [TimelineOutcome] = []
        for i in 0..<30_000 {
            let t = Double(i) * 0.033
            switch i % 3 {
            case 0: outcomes.append(TimelineOutcome(kind: .truePositive, labelTime: t, detectionTime: t + 0.01, duration: 0.45))
            case 1: outcomes.append(TimelineOutcome(kind: .falseNegative, labelTime: t, detectionTime: nil, duration: 0.45))
            default: outcomes.append(TimelineOutcome(kind: .falsePositive, labelTime: nil, detectionTime: t))
            }
        }
        let figure = TimelineFigure(title: "dense", window: TimelineSpan(start: 0, end: 1000),
                                    panels: [Self.panel(Self.signal(seconds: 1000, rate: 50), outcomes: outcomes)], width: 1000)
        let rendering = Timeline.render(figure)
        let area = try #require(SVGStructure.plotAreas(rendering.svg).first)
        let columns = Int(area.width) + 1
        #expect(SVGStructure.withClass("label-span", in: rendering.svg).count <= 2 * columns)
        #expect(SVGStructure.withClass("fp-line", in: rendering.svg).count <= columns)
        #expect(rendering.svg.utf8.count < 1_500_000, "\(rendering.svg.utf8.count) bytes")
        // The legend still counts every outcome, merged or not.
        let legend = SVGStructure.withClass("legend", in: rendering.svg).map { SVGStructure.decodedText($0.text) }
        #expect(legend.contains("TP: label hit (10000)") && legend.contains("FN: label missed (10000)")
                && legend.contains("FP: false detection (10000)"), "\(legend)")
    }

    @Test func theThresholdIsADashedLineAtItsValue() throws {
        let rendering = Timeline.render(TimelineFigure(title: "t", window: TimelineSpan(start: 0, end: 10),
                                                       panels: [Self.panel(Self.signal(seconds: 10))]))
        let area = try #require(SVGStructure.plotAreas(rendering.svg).first)
        let line = try #require(SVGStructure.withClass("reference", in: rendering.svg).first)
        #expect(line.number("data-value") == 0.5)
        #expect(abs(line.number("y1")! - area.pixelY(0.5)) < 0.01 && line["y1"] == line["y2"])
        #expect(line["stroke-dasharray"] != nil)
        #expect(line.number("x1") == area.left && abs(line.number("x2")! - area.right) < 0.01)
        let label = try #require(SVGStructure.withClass("reference-label", in: rendering.svg).first)
        #expect(SVGStructure.decodedText(label.text) == "τ = 0.5 g")
        try SVGChecks.expectValidDocument(rendering.svg, width: 1000, height: Timeline.headerHeight + 380)
    }

    /// One mark per outcome in the window, of its kind's class; a false detection at its own time.
    @Test func eachOutcomeInTheWindowIsOneMarkOfItsKind() throws {
        let outcomes = [
            TimelineOutcome(kind: .truePositive, labelTime: 1.0, detectionTime: 1.13, duration: 0.45),
            TimelineOutcome(kind: .truePositive, labelTime: 3.0, detectionTime: 3.12, duration: 0.45),
            TimelineOutcome(kind: .falseNegative, labelTime: 5.0, detectionTime: nil, duration: 0.45),
            TimelineOutcome(kind: .falsePositive, labelTime: nil, detectionTime: 7.2),
            TimelineOutcome(kind: .falseNegative, labelTime: 42, detectionTime: nil),  // outside the window
        ]
        let rendering = Timeline.render(TimelineFigure(title: "t", window: TimelineSpan(start: 0, end: 10),
                                                       panels: [Self.panel(Self.signal(seconds: 10), outcomes: outcomes)]))
        let area = try #require(SVGStructure.plotAreas(rendering.svg).first)
        #expect(SVGStructure.withClass("mark-tp", in: rendering.svg).count == 2)
        #expect(SVGStructure.withClass("mark-fn", in: rendering.svg).count == 1)
        let fp = SVGStructure.withClass("mark-fp", in: rendering.svg)
        #expect(fp.count == 1)
        let fpX = try #require(fp.first?["d"].flatMap { $0.dropFirst().split(separator: " ").first }.flatMap { Double($0) })
        #expect(abs(fpX - area.pixelX(7.2)) < 0.05)
        #expect(rendering.marks["mark-tp"] == 2 && rendering.marks["mark-fn"] == 1 && rendering.marks["mark-fp"] == 1)
        #expect(SVGStructure.withClass("mark-decision", in: rendering.svg).count == 2)
        #expect(SVGStructure.withClass("mark-reply", in: rendering.svg).count == 2)
        // The legend names every kind with its count.
        let legend = SVGStructure.withClass("legend", in: rendering.svg).map { SVGStructure.decodedText($0.text) }
        for entry in ["TP: label hit (2)", "FN: label missed (1)", "FP: false detection (1)", "ax", "ay", "az"] {
            #expect(legend.contains(entry), "\(legend)")
        }
        // No text box overlaps another in the same panel (each panel has its own coordinates).
        let panels = rendering.svg.components(separatedBy: "<g transform=\"translate(0 ")
        #expect(panels.count == 3, "the header and one panel")
        for panel in panels {
            let texts = SVGStructure.elements(panel).filter { $0.name == "text" && $0["transform"] == nil }.compactMap(SVGStructure.textBox)
            for i in texts.indices { for j in texts.indices where j > i { #expect(!SVGStructure.overlap(texts[i], texts[j]), "\(texts[i]) \(texts[j])") } }
        }
    }

    @Test func aGapBreaksTheLineAndIsShaded() throws {
        let points = Self.signal(seconds: 10).filter { $0.x < 4 || $0.x > 6 }
        let gap = TimelineSpan(start: points.last { $0.x < 4 }!.x, end: points.first { $0.x > 6 }!.x)
        let rendering = Timeline.render(TimelineFigure(title: "t", window: TimelineSpan(start: 0, end: 10),
                                                       panels: [Self.panel(points, gaps: [gap])]))
        for path in SVGStructure.withClass("series", in: rendering.svg) {
            #expect(path["d"]!.filter { $0 == "M" }.count == 2)
        }
        #expect(SVGStructure.withClass("gap", in: rendering.svg).count == 1)
    }

    @Test func nonFiniteValuesAreSkippedAndCounted() throws {
        var points = Self.signal(seconds: 10)
        points[10].y = .nan
        points[20].y = .infinity
        points[30].x = -.infinity
        var panel = Self.panel(points)
        panel.skippedValues = 4
        let rendering = Timeline.render(TimelineFigure(title: "t", window: TimelineSpan(start: 0, end: 10), panels: [panel]))
        #expect(SVGChecks.nonFiniteAttributes(rendering.svg).isEmpty)
        // Three series each hold the three bad points (ax and az are scaled copies), and the caller's four.
        #expect(rendering.skippedValues == 4 + 9)
        let note = try #require(SVGStructure.withClass("note", in: rendering.svg).first)
        #expect(note.text == "13 non-finite values skipped")
        #expect(try SVGChecks.xmlParseError(rendering.svg) == nil)
    }

    @Test func stackedPanelsShareTheTimeAxis() throws {
        let panels = [Self.panel(Self.signal(seconds: 10)), Self.panel(Self.signal(seconds: 10).map { PlotPoint(x: $0.x, y: $0.y * 100) })]
        let rendering = Timeline.render(TimelineFigure(title: "t", window: TimelineSpan(start: 2, end: 8), panels: panels))
        let areas = SVGStructure.plotAreas(rendering.svg)
        #expect(areas.count == 2)
        #expect(Set(areas.map(\.left)).count == 1 && Set(areas.map(\.width)).count == 1)
        #expect(areas.allSatisfy { $0.xRange == (2, 8) })
    }

    @Test func dotsPerTraceCarryTheTraceNames() throws {
        let names = ["ducker.jsonl", "noisy.jsonl", "steady.jsonl", "steering.jsonl", "strong.jsonl", "tremor.jsonl", "walking.jsonl", "weak.jsonl"]
        let rendering = CategoryRenderer.render(
            title: "Per trace", xLabel: "trace", yLabel: "score", categories: names,
            series: [CategorySeries(name: "F1", values: names.map { _ in 0.9 }), CategorySeries(name: "recall", values: names.map { _ in nil })],
            yDomain: (0, 1), size: .standard)
        let labels = SVGStructure.withClass("category", in: Charts.figure(title: "t", charts: [rendering.chart])).map(\.text)
        #expect(labels == names)
        #expect(rendering.dotCount == names.count)
        try SVGChecks.expectValidDocument(Charts.figure(title: "t", charts: [rendering.chart]), width: 720, height: rendering.chart.size.height)
    }
}
