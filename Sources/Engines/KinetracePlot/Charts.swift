/// SVG charts for latency analysis: pure functions from data to SVG text.
/// Same input, byte-identical output; non-finite values are skipped, never printed.
package enum Charts {
    /// Points (e.g. latency per frame: x = frame index or seconds, y = ms), one colour per series, on padded axes.
    /// The legend names the series when there are 2+ or any reference line, and every reference line;
    /// each reference line's label goes where it covers the fewest points.
    package static func scatter(
        title: String, xLabel: String, yLabel: String, series: [PlotSeries],
        references: [ReferenceLine] = [], size: PlotSize = .standard
    ) -> Chart {
        ScatterRenderer.render(
            title: title, xLabel: xLabel, yLabel: yLabel, series: series, references: references, size: size
        ).chart
    }

    /// A histogram of values with `bins` equal-width bins over [min, max] (bins nil: Freedman–Diaconis rule, clamped to 10…80 bins). y axis: count.
    package static func histogram(
        title: String, xLabel: String, values: [Double], bins: Int? = nil,
        references: [ReferenceLine] = [], size: PlotSize = .standard
    ) -> Chart {
        HistogramRenderer.render(
            title: title, xLabel: xLabel, values: values, bins: bins, references: references, size: size
        ).chart
    }

    /// Lines through each series' points in the order given, each in its own colour and dash
    /// pattern, on axes padded so no point sits on the frame and covering `domain`; every
    /// series and reference line has a legend entry; point labels are placed where they
    /// cover no ink, and left out where there is no such place.
    package static func lines(
        title: String, xLabel: String, yLabel: String, series: [LineSeries],
        verticalReferences: [ReferenceLine] = [], domain: AxisDomain = AxisDomain(), size: PlotSize = .standard
    ) -> Chart {
        LineRenderer.render(
            title: title, xLabel: xLabel, yLabel: yLabel, series: series, verticalReferences: verticalReferences,
            domain: domain, size: size
        ).chart
    }

    /// Empirical CDF step curve of each series' values.
    package static func cdf(
        title: String, xLabel: String, series: [CDFSeries],
        references: [ReferenceLine] = [], size: PlotSize = .standard
    ) -> Chart {
        CDFRenderer.render(title: title, xLabel: xLabel, series: series, references: references, size: size).chart
    }

    /// Stacks charts vertically into one standalone SVG document (root <svg> with xmlns, width, height, viewBox,
    /// a white background rect, and a <title> element with `title`). No XML declaration, so the same string works
    /// as a .svg file and inline in HTML.
    package static func figure(title: String, charts: [Chart]) -> String {
        // A figure without charts is still a valid, renderable document of a small blank height.
        let width = max(1, charts.map(\.size.width).max() ?? PlotSize.standard.width)
        let totalHeight = charts.isEmpty ? 40 : max(1, charts.reduce(0) { $0 + max(0, $1.size.height) })
        var svg = SVGWriter(reservingCapacity: charts.reduce(512) { $0 + $1.body.utf8.count + 64 })
        svg.raw("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(totalHeight)\"")
        svg.raw(" viewBox=\"0 0 \(width) \(totalHeight)\" font-family=\"sans-serif\">")
        svg.raw("<title>\(xmlEscaped(title))</title>")
        svg.raw("<rect width=\"\(width)\" height=\"\(totalHeight)\" fill=\"#ffffff\"/>")
        var offset = 0
        for chart in charts {
            svg.raw("<g transform=\"translate(0 \(offset))\">\(chart.body)</g>")
            offset += max(0, chart.size.height)
        }
        svg.raw("</svg>\n")
        return svg.output
    }
}
