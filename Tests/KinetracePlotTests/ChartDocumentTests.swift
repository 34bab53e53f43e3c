import Foundation
import KinetraceTestSupport
import Testing

@testable import KinetracePlot

/// Every chart kind, on normal and on awkward data, must yield a document that
/// has no NaN/inf, parses as XML, and renders at the expected pixel size.
@Suite struct ChartDocumentTests {
    enum Kind: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case scatter, histogram, cdf, lines
        var testDescription: String { rawValue }
    }

    enum DataCase: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case normal, empty, onePoint, allEqual, allZero, nonFiniteMixed, onlyNonFinite, negatives, extremes, nearlyEqual
        var testDescription: String { rawValue }

        var values: [Double] {
            switch self {
            case .normal: SampleData.latencies(count: 600)
            case .empty: []
            case .onePoint: [70.4]
            case .allEqual: Array(repeating: 70, count: 50)
            case .allZero: Array(repeating: 0, count: 5)
            case .nonFiniteMixed: [.nan, 71.5, .infinity, 69.2, -.infinity, 70.1, .signalingNaN, 70]
            case .onlyNonFinite: [.nan, .infinity, -.infinity]
            case .negatives: [-3.1, -0.4, 0, 2.2, 4.7, -1.5]
            case .extremes: [-1e300, 1e300, .leastNonzeroMagnitude, .greatestFiniteMagnitude]
            case .nearlyEqual: [1e15, 1e15 + 0.125, 1e15 + 0.25]
            }
        }

        var references: [ReferenceLine] {
            switch self {
            case .normal:
                let values = self.values
                let mean = values.reduce(0, +) / Double(values.count)
                return [
                    ReferenceLine(label: "mean", value: mean),
                    ReferenceLine(label: "p95", value: SampleData.percentile(values, 0.95)),
                ]
            case .empty: return [ReferenceLine(label: "target 50 ms", value: 50)]
            case .nonFiniteMixed, .onlyNonFinite:
                return [ReferenceLine(label: "nan", value: .nan), ReferenceLine(label: "inf", value: .infinity)]
            case .negatives: return [ReferenceLine(label: "zero", value: 0), ReferenceLine(label: "−5", value: -5)]
            default: return []
            }
        }
    }

    static func chart(_ kind: Kind, _ data: DataCase) -> Chart {
        let values = data.values
        switch kind {
        case .scatter:
            let points = values.enumerated().map { PlotPoint(x: Double($0.offset), y: $0.element) }
            // A second series with the values on x, so odd values are exercised on both axes.
            let swapped = values.enumerated().map { PlotPoint(x: $0.element, y: Double($0.offset)) }
            return Charts.scatter(
                title: "latency per frame (\(data.rawValue))", xLabel: "frame", yLabel: "latency (ms)",
                series: [PlotSeries(name: "A", points: points), PlotSeries(name: "B", points: swapped)],
                references: data.references)
        case .histogram:
            return Charts.histogram(
                title: "latency distribution (\(data.rawValue))", xLabel: "latency (ms)", values: values,
                references: data.references)
        case .cdf:
            return Charts.cdf(
                title: "latency CDF (\(data.rawValue))", xLabel: "latency (ms)",
                series: [CDFSeries(name: "A", values: values), CDFSeries(name: "empty", values: [])],
                references: data.references)
        case .lines:
            let points = values.enumerated().map { PlotPoint(x: Double($0.offset), y: $0.element) }
            let swapped = values.enumerated().map { PlotPoint(x: $0.element, y: Double($0.offset)) }
            let labels = values.indices.map { PointLabel(index: $0, text: "v\($0)") }
            return Charts.lines(
                title: "scores (\(data.rawValue))", xLabel: "value", yLabel: "score",
                series: [LineSeries(name: "A", points: points, marks: .lineAndPoints, labels: labels),
                         LineSeries(name: "B", points: swapped), LineSeries(name: "best", points: Array(points.prefix(1)), marks: .points)],
                verticalReferences: data.references)
        }
    }

    @Test(arguments: Kind.allCases, DataCase.allCases)
    func documentIsFiniteParsesAndRenders(kind: Kind, data: DataCase) throws {
        let chart = Self.chart(kind, data)
        #expect(chart.size == .standard)
        let svg = Charts.figure(title: "\(kind) \(data)", charts: [chart])
        try SVGChecks.expectValidDocument(svg, width: 720, height: 300)
    }

    @Test(arguments: DataCase.allCases)
    func emptyDataSaysSo(data: DataCase) {
        let hasData = data.values.contains { $0.isFinite }
        for kind in Kind.allCases {
            #expect(Self.chart(kind, data).body.contains(">no data<") == !hasData, "\(kind)")
        }
    }

    @Test func stackedFigureHasTheDocumentParts() throws {
        let charts = [Kind.scatter, .histogram, .cdf].map { Self.chart($0, .normal) }
        let svg = Charts.figure(title: "latency & jitter", charts: charts)
        #expect(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"720\" height=\"900\" viewBox=\"0 0 720 900\""))
        #expect(!svg.contains("<?xml"))
        #expect(svg.contains("<title>latency &amp; jitter</title>"))
        #expect(svg.contains("<rect width=\"720\" height=\"900\" fill=\"#ffffff\"/>"))
        #expect(svg.contains("<g transform=\"translate(0 300)\">") && svg.contains("<g transform=\"translate(0 600)\">"))
        try SVGChecks.expectValidDocument(svg, width: 720, height: 900)
    }

    @Test func figureWithoutChartsStillRenders() throws {
        try SVGChecks.expectValidDocument(Charts.figure(title: "nothing", charts: []), width: 720, height: 40)
    }

    @Test func tinyAndHugeSizesAreClampedAndRender() throws {
        let values = SampleData.latencies(count: 50)
        let tiny = Charts.histogram(title: "tiny", xLabel: "ms", values: values, size: PlotSize(width: 0, height: -5))
        #expect(tiny.size == PlotSize(width: 240, height: 200))
        let wide = Charts.cdf(
            title: "wide", xLabel: "ms", series: [CDFSeries(name: "a", values: values)],
            size: PlotSize(width: 1600, height: 240))
        #expect(wide.size == PlotSize(width: 1600, height: 240))
        let huge = Charts.scatter(
            title: "huge", xLabel: "x", yLabel: "y", series: [], size: PlotSize(width: .max, height: .max))
        #expect(huge.size == PlotSize(width: 8000, height: 8000))
        try SVGChecks.expectValidDocument(Charts.figure(title: "sizes", charts: [tiny, wide]), width: 1600, height: 440)
    }

    @Test func manySeriesKeepTheLegendToThreeRows() throws {
        let series = (0..<40).map { index in
            PlotSeries(name: "series number \(index)", points: [PlotPoint(x: Double(index), y: Double(index % 7))])
        }
        let chart = Charts.scatter(title: "many", xLabel: "x", yLabel: "y", series: series)
        #expect(chart.body.contains("more</text>"))
        #expect(chart.body.components(separatedBy: "<path ").count - 1 == 40)
        try SVGChecks.expectValidDocument(Charts.figure(title: "many", charts: [chart]), width: 720, height: 300)
    }

    @Test func aLoneScatterSeriesIsInTheLegendOnlyBesideReferenceLines() {
        let points = [PlotPoint(x: 0, y: 1), PlotPoint(x: 1, y: 2)]
        let one = Charts.scatter(
            title: "t", xLabel: "x", yLabel: "y", series: [PlotSeries(name: "only-series", points: points)])
        #expect(!one.body.contains("only-series"))
        let withReference = Charts.scatter(
            title: "t", xLabel: "x", yLabel: "y", series: [PlotSeries(name: "only-series", points: points)],
            references: [ReferenceLine(label: "mean 1.5", value: 1.5, legend: "mean")])
        #expect(withReference.body.contains(">only-series<") && withReference.body.contains(">mean<"))
        let two = Charts.scatter(
            title: "t", xLabel: "x", yLabel: "y",
            series: [PlotSeries(name: "first-series", points: points), PlotSeries(name: "second-series", points: points)])
        #expect(two.body.contains(">first-series<") && two.body.contains(">second-series<"))
    }
}
