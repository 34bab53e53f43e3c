// Empirical CDFs: one step curve per series, fraction of values ≤ x.

struct CDFRendering {
    var chart: Chart
    var frame: ChartFrame
    /// Polyline vertices per series (0 for a series with no plottable values).
    var vertexCounts: [Int]
}

enum CDFRenderer {
    static func render(
        title: String, xLabel: String, series: [CDFSeries], references: [ReferenceLine], size requestedSize: PlotSize
    ) -> CDFRendering {
        let size = requestedSize.clamped
        let sortedSeries = series.map { $0.values.filter(isPlottable).sorted() }
        var xExtent = Extent()
        for values in sortedSeries {
            if let first = values.first, let last = values.last {
                xExtent.include(first)
                xExtent.include(last)
            }
        }
        let hasData = !xExtent.isEmpty
        let references = drawableReferences(references)
        for reference in references { xExtent.include(reference.line.value) }

        // Padded, so the curve's flat ends at 0 and 1 are not hidden on the frame.
        let yAxis = NiceScale.paddedAxis(lower: 0, upper: 1, maxTicks: 6, padding: Style.axisPadding)
        let seriesEntries = series.count >= 2 || !references.isEmpty
            ? series.enumerated().map {
                LegendEntry(name: $0.element.name, colour: Style.seriesColour($0.offset), dash: Style.seriesDash($0.offset))
            } : []
        let layout = Layout.make(
            size: size, xRange: xExtent.drawable, yAxis: yAxis, legend: seriesEntries + referenceLegendEntries(references),
            verticalReferences: references)
        let frame = layout.frame

        var svg = SVGWriter()
        svg.beginPanel()
        svg.grid(frame)
        svg.plotAreaMarker(frame)
        var vertexCounts: [Int] = []
        for (index, values) in sortedSeries.enumerated() {
            let vertices = stepCurve(values, frame: frame)
            vertexCounts.append(vertices.count)
            guard !vertices.isEmpty else { continue }
            var points = ""
            points.reserveCapacity(vertices.count * 14)
            for (offset, vertex) in vertices.enumerated() {
                if offset > 0 { points += " " }
                points += "\(svgNumber(vertex.x)),\(svgNumber(vertex.y))"
            }
            svg.raw("<polyline class=\"series\" points=\"\(points)\" fill=\"none\" stroke=\"\(Style.seriesColour(index))\"")
            svg.raw(" stroke-dasharray=\"\(Style.seriesDash(index))\" stroke-width=\"1.8\" stroke-linejoin=\"round\"/>")
        }
        svg.verticalReferences(layout.referenceLabels, frame: frame)
        svg.axes(frame, title: title, xTitle: xLabel, yTitle: "fraction ≤ x")
        svg.legend(layout.legend, top: layout.legendTop)
        if !hasData { svg.noData(frame) }
        svg.endPanel()
        return CDFRendering(chart: Chart(size: size, body: svg.output), frame: frame, vertexCounts: vertexCounts)
    }

    /// The step curve in pixels, from the left edge at 0 to the right edge at 1.
    /// Values falling in the same pixel column collapse to two vertices (where
    /// the curve enters and leaves the column), so a curve has at most
    /// 2 × plot width + 2 vertices; the first and last values stay exact.
    static func stepCurve(_ sorted: [Double], frame: ChartFrame) -> [(x: Double, y: Double)] {
        guard !sorted.isEmpty else { return [] }
        let total = Double(sorted.count)
        let lastColumn = Int(frame.plotWidth) - 1
        func column(_ x: Double) -> Int { min(max(Int((x - frame.plotLeft).rounded(.down)), 0), lastColumn) }

        var vertices: [(x: Double, y: Double)] = [(frame.plotLeft, frame.pixelY(0))]
        var groupStart = 0
        while groupStart < sorted.count {
            let startX = frame.pixelX(sorted[groupStart])
            let groupColumn = column(startX)
            var groupEnd = groupStart
            while groupEnd + 1 < sorted.count && column(frame.pixelX(sorted[groupEnd + 1])) == groupColumn {
                groupEnd += 1
            }
            vertices.append((startX, frame.pixelY(Double(groupStart) / total)))
            vertices.append((frame.pixelX(sorted[groupEnd]), frame.pixelY(Double(groupEnd + 1) / total)))
            groupStart = groupEnd + 1
        }
        vertices.append((frame.plotRight, frame.pixelY(1)))
        return vertices
    }
}
