import Foundation
import KinetraceTestSupport
import Testing

@testable import KinetracePlot

/// The structure a published figure needs, read back from the SVG: curves
/// joined in order, labels that collide with nothing, nothing on the frame,
/// a distinct look and a legend entry for every line.
@Suite struct LineChartTests {
    /// A precision–recall sweep shaped like the corpus's: precision 1.0 along the top for
    /// high thresholds, then a drop at high recall for low ones. Index = threshold order.
    static func sweep(count: Int) -> (thresholds: [Double], points: [PlotPoint]) {
        let thresholds = (0..<count).map { 0.1 + 1.4 * Double($0) / Double(count - 1) }
        let points = thresholds.map { t -> PlotPoint in
            let recall = t < 0.35 ? 0.976 : max(0.05, 0.976 - (t - 0.35) * 0.8)
            let precision = t < 0.35 ? 0.42 + (t - 0.1) * 2.3 : 1.0
            return PlotPoint(x: recall, y: min(precision, 1.0))
        }
        return (thresholds, points)
    }

    static func prChart(count: Int) -> (svg: String, points: [PlotPoint], labels: [PointLabel]) {
        let (thresholds, points) = sweep(count: count)
        // Every value offered, best first: the chart must pick a readable subset itself.
        let labels = [PointLabel(index: count / 4, text: "best")]
            + thresholds.indices.map { PointLabel(index: $0, text: "\(formatFixed(thresholds[$0], decimals: 2)) g") }
        let chart = Charts.lines(
            title: "Precision–recall over threshold", xLabel: "recall", yLabel: "precision",
            series: [LineSeries(name: "precision–recall", points: points, marks: .lineAndPoints, labels: labels),
                     LineSeries(name: "best F1", points: [points[count / 4]], marks: .points)],
            domain: AxisDomain(x: (0, 1), y: (0, 1)), size: PlotSize(width: 720, height: 420))
        return (Charts.figure(title: "pr", charts: [chart]), points, labels)
    }

    @Test(arguments: [12, 29, 141])
    func theCurveIsOnePathThroughThePointsInOrder(count: Int) throws {
        let (svg, points, _) = Self.prChart(count: count)
        let area = try #require(SVGStructure.plotAreas(svg).first)
        let paths = SVGStructure.withClass("series", in: svg).filter { $0.name == "path" }
        try #require(paths.count == 1, "one joined path for the curve; the best point is a ring")
        let d = try #require(paths[0]["d"])
        #expect(d.filter { $0 == "M" }.count == 1, "a single subpath, never broken")
        let vertices = SVGStructure.vertices(d)
        try #require(vertices.count == points.count)
        for (vertex, point) in zip(vertices, points) {
            #expect(abs(vertex.x - area.pixelX(point.x)) < 0.01 && abs(vertex.y - area.pixelY(point.y)) < 0.01,
                    "vertex \(vertex) is not \(point)")
        }
    }

    @Test(arguments: [12, 29, 141])
    func labelsAreAReadableSubsetThatCoversNothing(count: Int) throws {
        let (svg, _, _) = Self.prChart(count: count)
        let labels = SVGStructure.withClass("point-label", in: svg)
        #expect(labels.count >= 3, "at least a few thresholds are labelled")
        #expect(labels.contains { $0.text == "best" }, "the first-priority label is placed")
        #expect(labels.allSatisfy { SVGStructure.decodedText($0.text).hasSuffix(" g") || $0.text == "best" })
        let boxes = labels.compactMap(SVGStructure.textBox)
        for (i, a) in boxes.enumerated() {
            for b in boxes[(i + 1)...] { #expect(!SVGStructure.overlap(a, b), "labels \(a) and \(b) overlap") }
        }
        let curve = SVGStructure.vertices(try #require(SVGStructure.withClass("series", in: svg).first?["d"]))
        for box in boxes {
            for (a, b) in zip(curve, curve.dropFirst()) {
                #expect(!SVGStructure.segment(a, b, crosses: box), "label \(box) lies on the curve \(a)–\(b)")
            }
        }
        let area = try #require(SVGStructure.plotAreas(svg).first)
        #expect(boxes.allSatisfy { area.holdsInside($0.x0, $0.y0, margin: 0) && area.holdsInside($0.x1, $0.y1, margin: 0) })
    }

    @Test func noPointSitsOnTheFrame() throws {
        let (svg, points, _) = Self.prChart(count: 29)
        #expect(points.contains { $0.y == 1.0 }, "the data reach precision 1.0")
        let area = try #require(SVGStructure.plotAreas(svg).first)
        let curve = SVGStructure.vertices(try #require(SVGStructure.withClass("series", in: svg).first?["d"]))
        for vertex in curve { #expect(area.holdsInside(vertex.x, vertex.y, margin: 3), "\(vertex) is on or near the frame") }
        for point in SVGStructure.withClass("point", in: svg) {
            let x = try #require(point.number("cx")), y = try #require(point.number("cy"))
            #expect(area.holdsInside(x, y, margin: 3), "point (\(x), \(y)) is on or near the frame")
        }
        // The same for a scatter whose points reach both ends of both axes.
        let corners = [PlotPoint(x: 0, y: 0), PlotPoint(x: 1, y: 1), PlotPoint(x: 0, y: 1), PlotPoint(x: 1, y: 0)]
        let scatter = ScatterRenderer.render(
            title: "", xLabel: "", yLabel: "", series: [PlotSeries(name: "a", points: corners)], references: [], size: .standard)
        for corner in corners {
            let x = scatter.frame.pixelX(corner.x), y = scatter.frame.pixelY(corner.y)
            #expect(x > scatter.frame.plotLeft + 3 && x < scatter.frame.plotRight - 3)
            #expect(y > scatter.frame.plotTop + 3 && y < scatter.frame.plotBottom - 3)
        }
    }

    @Test func eachSeriesHasItsOwnColourDashAndLegendEntry() throws {
        let names = ["F1", "precision", "recall", "fourth", "fifth", "sixth", "seventh", "eighth"]
        let series = names.enumerated().map { index, name in
            LineSeries(name: name, points: (0..<20).map { PlotPoint(x: Double($0), y: Double(($0 * (index + 3)) % 11) / 10) })
        }
        let references = [ReferenceLine(label: "best 0.9", value: 4, legend: "best F1"),
                          ReferenceLine(label: "−3σ", value: 1, legend: "±3σ"), ReferenceLine(label: "+3σ", value: 17, legend: "±3σ")]
        let svg = Charts.figure(title: "scores", charts: [Charts.lines(
            title: "Scores against threshold", xLabel: "threshold (g)", yLabel: "score", series: series,
            verticalReferences: references, size: PlotSize(width: 900, height: 360))])
        let paths = SVGStructure.withClass("series", in: svg)
        try #require(paths.count == names.count)
        let styles = paths.map { "\($0["stroke"] ?? "?")|\($0["stroke-dasharray"] ?? "?")" }
        #expect(Set(styles).count == names.count, "\(styles)")
        // Colours repeat past the palette's seven, but never with the same dash pattern; the first seven differ in both.
        #expect(Set(paths.prefix(7).map { $0["stroke"] }).count == 7 && Set(paths.prefix(7).map { $0["stroke-dasharray"] }).count == 7)
        let legend = SVGStructure.withClass("legend", in: svg).map(\.text)
        for name in names { #expect(legend.contains(name), "no legend entry for \(name)") }
        // One entry for both σ bounds, one for the best line: every drawn line has its entry.
        #expect(legend.contains("best F1") && legend.filter { SVGStructure.decodedText($0) == "±3σ" }.count == 1)
        #expect(SVGStructure.withClass("reference", in: svg).count == 3)
        #expect(legend.count == names.count + 2)
        // The legend swatch of each series shows its dash pattern.
        let swatches = SVGStructure.elements(svg).filter { $0.name == "line" && $0["stroke-width"] == "2" }
        for path in paths.prefix(7) where path["stroke-dasharray"] != "none" {
            #expect(swatches.contains { $0["stroke"] == path["stroke"] && $0["stroke-dasharray"] == path["stroke-dasharray"] })
        }
    }

    @Test func horizontalReferenceLabelsGoWhereThereAreNoPoints() throws {
        // Points fill the band around the line on the right half; the left half is empty.
        var rng = SplitMix64(seed: 11)
        let points = (0..<400).map { i in PlotPoint(x: 50 + Double(i) / 8, y: 10 + rng.normal(mean: 0, sd: 0.6)) }
        let rendering = ScatterRenderer.render(
            title: "", xLabel: "", yLabel: "", series: [PlotSeries(name: "delay", points: points)],
            references: [ReferenceLine(label: "p99 11.4 ms", value: 11.4, legend: "p99")], size: .standard)
        let svg = rendering.chart.body
        let label = try #require(SVGStructure.withClass("reference-label", in: svg).first)
        let box = try #require(SVGStructure.textBox(label))
        let frame = rendering.frame
        let covered = points.filter {
            let x = frame.pixelX($0.x), y = frame.pixelY($0.y)
            return x >= box.x0 - 2 && x <= box.x1 + 2 && y >= box.y0 - 2 && y <= box.y1 + 2
        }
        #expect(covered.isEmpty, "the label covers \(covered.count) points")
        let line = try #require(SVGStructure.withClass("reference", in: svg).first)
        #expect(line.number("data-value") == 11.4 && abs((line.number("y1") ?? 0) - frame.pixelY(11.4)) < 0.01)
    }

    @Test func thePRFigureRenders() throws {
        try SVGChecks.expectValidDocument(Self.prChart(count: 141).svg, width: 720, height: 420)
    }
}
