import Foundation
import KinetraceTestSupport
import Testing

@testable import KinetracePlot

@Suite struct ScatterDedupTests {
    static func normalPoints(count: Int, seed: UInt64) -> [PlotPoint] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { PlotPoint(x: Double($0), y: rng.normal(mean: 70, sd: 3.7)) }
    }

    @Test func millionPointsStaySmall() throws {
        let points = Self.normalPoints(count: 1_000_000, seed: 99)
        let started = ContinuousClock.now
        let rendering = ScatterRenderer.render(
            title: "1 M frames", xLabel: "frame", yLabel: "latency (ms)",
            series: [PlotSeries(name: "latency", points: points)], references: [], size: .standard)
        let elapsed = ContinuousClock.now - started
        let svg = Charts.figure(title: "big", charts: [rendering.chart])
        let frame = rendering.frame
        print("1 M-point scatter: \(svg.utf8.count) bytes, \(rendering.markCount) marks, \(elapsed) (this build)")
        #expect(svg.utf8.count < 2_000_000)
        #expect(rendering.markCount > 0)
        #expect(rendering.markCount <= Int(frame.plotWidth) * Int(frame.plotHeight))
        // Each mark is one "h" (horizontal run) in the single path of the series.
        let path = try #require(svg.components(separatedBy: " d=\"").dropFirst().first?.prefix { $0 != "\"" })
        #expect(path.filter { $0 == "h" }.count == rendering.markCount)
        #expect(svg.components(separatedBy: "<path ").count - 1 == 1)
        try SVGChecks.expectValidDocument(svg, width: 720, height: 300)
    }

    @Test func distinctPixelsAreKeptAndDuplicatesMerged() {
        let far = [PlotPoint(x: 0, y: 0), PlotPoint(x: 50, y: 100), PlotPoint(x: 100, y: 50)]
        let farRendering = ScatterRenderer.render(
            title: "", xLabel: "", yLabel: "", series: [PlotSeries(name: "a", points: far)], references: [],
            size: .standard)
        #expect(farRendering.markCount == 3)
        let repeated = Array(repeating: PlotPoint(x: 3, y: 4), count: 1000) + [PlotPoint(x: 3, y: .nan)]
        let repeatedRendering = ScatterRenderer.render(
            title: "", xLabel: "", yLabel: "", series: [PlotSeries(name: "a", points: repeated)], references: [],
            size: .standard)
        #expect(repeatedRendering.markCount == 1)
    }

    /// Replaying the path must cover exactly the pixel cells the points fall in: nothing lost, nothing invented.
    @Test func marksCoverExactlyTheTouchedPixels() throws {
        let points = Self.normalPoints(count: 5000, seed: 5)
        let rendering = ScatterRenderer.render(
            title: "", xLabel: "", yLabel: "", series: [PlotSeries(name: "a", points: points)], references: [],
            size: .standard)
        let frame = rendering.frame
        let path = try #require(rendering.chart.body.components(separatedBy: " d=\"").dropFirst().first?.prefix { $0 != "\"" })
        // Replay the relative path and check every run stays within the plot rectangle.
        var x = 0.0, y = 0.0
        var covered = Set<[Int]>()
        var scanner = Substring(path)
        func number() -> Double {
            let text = scanner.prefix { $0 == "-" || $0 == "." || $0.isNumber }
            scanner = scanner.dropFirst(text.count)
            return Double(text) ?? .nan
        }
        while let command = scanner.first {
            scanner = scanner.dropFirst()
            switch command {
            case "M": x = number(); scanner = scanner.dropFirst(); y = number()
            case "m": x += number(); scanner = scanner.dropFirst(); y += number()
            case "h":
                let length = number()
                for step in 0...Int(length) { covered.insert([Int(x - frame.plotLeft) + step, Int(y - frame.plotTop)]) }
                x += length
            default: Issue.record("unexpected path command \(command)"); return
            }
            #expect(x > frame.plotLeft && x < frame.plotRight && y > frame.plotTop && y < frame.plotBottom)
        }
        let columns = frame.plotWidth, rows = frame.plotHeight
        let expected = Set(points.map { point -> [Int] in
            let column = (point.x - frame.xAxis.lower) / (frame.xAxis.upper - frame.xAxis.lower) * columns
            let row = (frame.yAxis.upper - point.y) / (frame.yAxis.upper - frame.yAxis.lower) * rows
            return [Int(min(column, columns - 1)), Int(min(row, rows - 1))]
        })
        #expect(covered == expected)
        #expect(rendering.markCount <= expected.count)
    }
}

@Suite struct HistogramAndCDFTests {
    @Test func freedmanDiaconisBinsAndCounts() {
        let values = SampleData.latencies(count: 600) + [.nan, .infinity]
        let rendering = HistogramRenderer.render(
            title: "", xLabel: "", values: values, bins: nil, references: [], size: .standard)
        #expect((10...80).contains(rendering.binCount))
        // FD for N(70, 3.7), n = 600: width ≈ 2 · 4.99 / 8.43 ≈ 1.18 ms over a ~24 ms range ⇒ ~20 bins.
        #expect((14...28).contains(rendering.binCount))
        #expect(rendering.counts.reduce(0, +) == 600)
        // Bars only: the plot-area marker is the one <rect> with a class.
        #expect(rendering.chart.body.components(separatedBy: "<rect x=").count - 1 == rendering.counts.filter { $0 > 0 }.count)
    }

    @Test func explicitBinsAndTheMaximumInTheLastBin() {
        let rendering = HistogramRenderer.render(
            title: "", xLabel: "", values: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10], bins: 5, references: [], size: .standard)
        #expect(rendering.binCount == 5)
        #expect(rendering.counts == [2, 2, 2, 2, 3])
        let degenerate = HistogramRenderer.render(
            title: "", xLabel: "", values: [4, 4, 4], bins: nil, references: [], size: .standard)
        #expect(degenerate.counts.reduce(0, +) == 3)
        #expect(degenerate.counts[degenerate.binCount / 2] == 3)
        let silly = HistogramRenderer.render(
            title: "", xLabel: "", values: [1, 2], bins: -3, references: [], size: .standard)
        #expect(silly.binCount == 1 && silly.counts == [2])
    }

    @Test func yAxisCountsAreIntegers() {
        let rendering = HistogramRenderer.render(
            title: "", xLabel: "", values: [1, 2, 2, 3], bins: 3, references: [], size: .standard)
        #expect(rendering.frame.yAxis.labels.allSatisfy { Int($0) != nil })
        #expect(rendering.frame.yAxis.upper >= 2)
    }

    @Test func cdfIsDownsampledButKeepsTheEnds() throws {
        let values = SampleData.latencies(count: 200_000, seed: 11)
        let rendering = CDFRenderer.render(
            title: "", xLabel: "", series: [CDFSeries(name: "a", values: values)], references: [], size: .standard)
        let frame = rendering.frame
        #expect(rendering.vertexCounts[0] <= 2 * Int(frame.plotWidth) + 2)
        let curve = CDFRenderer.stepCurve(values.sorted(), frame: frame)
        let minimum = try #require(values.min()), maximum = try #require(values.max())
        #expect(curve[1].x == frame.pixelX(minimum) && curve[1].y == frame.pixelY(0))
        #expect(curve[curve.count - 2].x == frame.pixelX(maximum) && curve[curve.count - 2].y == frame.pixelY(1))
        // A CDF only goes right and up (up is smaller y in pixels).
        for (previous, next) in zip(curve, curve.dropFirst()) {
            #expect(next.x >= previous.x && next.y <= previous.y)
        }
        // Padded, so the flat ends at 0 and 1 are inside the plot, not on its frame.
        #expect(frame.yAxis.lower < 0 && frame.yAxis.upper > 1 && frame.yAxis.ticks.first == 0 && frame.yAxis.ticks.last == 1)
        #expect(rendering.chart.body.contains("fraction &#8804; x"))
    }

    @Test func smallCDFIsAnExactStaircase() {
        let rendering = CDFRenderer.render(
            title: "", xLabel: "", series: [CDFSeries(name: "a", values: [3, 1, 2, .nan])], references: [],
            size: .standard)
        let frame = rendering.frame
        let curve = CDFRenderer.stepCurve([1, 2, 3], frame: frame)
        let expected: [(Double, Double)] = [
            (frame.plotLeft, 0), (frame.pixelX(1), 0), (frame.pixelX(1), 1.0 / 3), (frame.pixelX(2), 1.0 / 3),
            (frame.pixelX(2), 2.0 / 3), (frame.pixelX(3), 2.0 / 3), (frame.pixelX(3), 1), (frame.plotRight, 1),
        ]
        #expect(curve.count == expected.count)
        for (vertex, (x, fraction)) in zip(curve, expected) {
            #expect(vertex.x == x && abs(vertex.y - frame.pixelY(fraction)) < 1e-9)
        }
    }
}

@Suite struct ReferenceAndDeterminismTests {
    @Test func referenceLinesOutsideTheDataExtendTheAxes() {
        let points = SampleData.latencies(count: 100).enumerated().map { PlotPoint(x: Double($0.offset), y: $0.element) }
        let scatter = ScatterRenderer.render(
            title: "", xLabel: "", yLabel: "", series: [PlotSeries(name: "a", points: points)],
            references: [ReferenceLine(label: "budget", value: 120), ReferenceLine(label: "floor", value: -8)],
            size: .standard)
        #expect(scatter.frame.yAxis.upper > 120 && scatter.frame.yAxis.lower < -8)

        let histogram = HistogramRenderer.render(
            title: "", xLabel: "", values: SampleData.latencies(count: 100),
            bins: nil, references: [ReferenceLine(label: "zero", value: 0)], size: .standard)
        #expect(histogram.frame.xAxis.lower <= 0)

        let cdf = CDFRenderer.render(
            title: "", xLabel: "", series: [CDFSeries(name: "a", values: SampleData.latencies(count: 100))],
            references: [ReferenceLine(label: "timeout", value: 250)], size: .standard)
        #expect(cdf.frame.xAxis.upper >= 250)
        #expect(cdf.frame.xAxis.labels.contains { (Double($0) ?? 0) >= 250 })
    }

    @Test func closeReferenceLabelsAreStaggered() {
        func drawn(_ label: String, _ value: Double) -> DrawnReference {
            DrawnReference(line: ReferenceLine(label: label, value: value), colour: "#000", dash: "none")
        }
        let labels = Layout.placeReferenceLabels(
            [(drawn("mean 70.40 ms", 70.4), 300), (drawn("p95 76.50 ms", 76.5), 310), (drawn("far", 90), 600)],
            chartWidth: 720)
        #expect(labels.map(\.row) == [0, 1, 0])
        let atRightEdge = Layout.placeReferenceLabels([(drawn("max 99.00 ms", 99), 715)], chartWidth: 720)
        #expect(atRightEdge[0].anchor == .end)
    }

    @Test func sameInputGivesByteIdenticalOutput() {
        func render() -> String {
            let values = SampleData.latencies(count: 5000, seed: 3)
            let points = values.enumerated().map { PlotPoint(x: Double($0.offset) / 60, y: $0.element) }
            let shifted = points.map { PlotPoint(x: $0.x, y: $0.y - 70) }
            let references = [ReferenceLine(label: "mean", value: 70), ReferenceLine(label: "p95", value: 76)]
            return Charts.figure(
                title: "run",
                charts: [
                    Charts.scatter(
                        title: "per frame", xLabel: "s", yLabel: "ms",
                        series: [PlotSeries(name: "abs", points: points), PlotSeries(name: "rel", points: shifted)],
                        references: references),
                    Charts.histogram(title: "hist", xLabel: "ms", values: values, references: references),
                    Charts.cdf(
                        title: "cdf", xLabel: "ms",
                        series: [CDFSeries(name: "a", values: values), CDFSeries(name: "b", values: values.map { $0 + 1 })],
                        references: references),
                ])
        }
        let first = render(), second = render()
        #expect(first == second)
        #expect(first.utf8.count > 1000)
    }
}

/// Writes the example figure when KINETRACE_PLOT_EXAMPLE names an output path
/// (for looking at the charts; not part of the normal run).
@Suite struct ExampleFigure {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["KINETRACE_PLOT_EXAMPLE"] != nil))
    func writeExample() throws {
        let path = try #require(ProcessInfo.processInfo.environment["KINETRACE_PLOT_EXAMPLE"])
        let values = SampleData.latencies(count: 600, mean: 70, sd: 3.7, seed: 1)
        let mean = values.reduce(0, +) / Double(values.count)
        let p95 = SampleData.percentile(values, 0.95)
        let references = [
            ReferenceLine(label: "mean \(formatFixed(mean, decimals: 2)) ms", value: mean),
            ReferenceLine(label: "p95 \(formatFixed(p95, decimals: 2)) ms", value: p95),
        ]
        let points = values.enumerated().map { PlotPoint(x: Double($0.offset), y: $0.element) }
        let svg = Charts.figure(
            title: "kinetrace latency example",
            charts: [
                Charts.scatter(
                    title: "Latency per frame", xLabel: "frame", yLabel: "latency (ms)",
                    series: [PlotSeries(name: "latency", points: points)], references: references),
                Charts.histogram(title: "Latency distribution", xLabel: "latency (ms)", values: values, references: references),
                Charts.cdf(
                    title: "Latency CDF", xLabel: "latency (ms)",
                    series: [CDFSeries(name: "run A", values: values), CDFSeries(name: "run B", values: values.map { $0 + 2.5 })],
                    references: references),
            ])
        try svg.write(toFile: path, atomically: true, encoding: .utf8)
    }
}
