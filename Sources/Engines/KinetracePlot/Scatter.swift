// Scatter plots. Size stays bounded however many points come in: each series
// is reduced to the set of plot pixels it touches (a bitmap, filled in one
// pass, no sorting or hashing), then drawn as ONE <path> per series. Each
// horizontal run of touched pixels becomes a subpath "m dx dy h len" with
// round caps: a zero-length run is a dot, a longer run a short bar of dots.
// With whole-pixel coordinates and relative moves a mark costs ~8 bytes, so a
// series can never exceed plot width × plot height marks (and in practice,
// with runs merged, far fewer).

struct ScatterRendering {
    var chart: Chart
    var frame: ChartFrame
    /// Subpaths drawn, over all series (each is a dot or a run of adjacent dots).
    var markCount: Int
}

enum ScatterRenderer {
    /// Dot diameter (the stroke width of the zero-length subpaths): larger for
    /// sparse series so a few hundred points are easy to see, smaller for dense ones.
    static func dotDiameter(pointCount: Int) -> Double { pointCount <= 5000 ? 3.2 : 2.4 }

    static func render(
        title: String, xLabel: String, yLabel: String, series: [PlotSeries], references: [ReferenceLine],
        size requestedSize: PlotSize
    ) -> ScatterRendering {
        let size = requestedSize.clamped
        var (xExtent, yExtent) = Extent.of(series.map(\.points))
        let hasData = !xExtent.isEmpty
        let references = drawableReferences(references)
        for reference in references { yExtent.include(reference.line.value) }

        let yAxis = Layout.verticalAxis(yExtent.drawable, panelHeight: size.height, padded: true)
        // A lone series needs a legend entry only beside reference lines' entries.
        let seriesEntries = series.count >= 2 || !references.isEmpty
            ? series.enumerated().map { LegendEntry(name: $0.element.name, colour: Style.seriesColour($0.offset), swatch: .dot) } : []
        let layout = Layout.make(
            size: size, xRange: xExtent.drawable, yAxis: yAxis, legend: seriesEntries + referenceLegendEntries(references),
            verticalReferences: [], paddedX: true)
        let frame = layout.frame

        var svg = SVGWriter()
        svg.beginPanel()
        svg.grid(frame)
        svg.plotAreaMarker(frame)
        var markCount = 0
        let translucent = series.count > 1
        for (index, entry) in series.enumerated() {
            let marks = pixelMarks(entry.points, frame: frame)
            guard marks.count > 0 else { continue }
            markCount += marks.count
            svg.raw("<path class=\"series\" d=\"\(marks.path)\" fill=\"none\" stroke=\"\(Style.seriesColour(index))\"")
            svg.raw(" stroke-width=\"\(svgNumber(dotDiameter(pointCount: entry.points.count)))\" stroke-linecap=\"round\"")
            if translucent { svg.raw(" stroke-opacity=\"0.75\"") }
            svg.raw("/>")
        }
        if !references.isEmpty {
            var occupied = PixelMask(frame: frame)
            for entry in series {
                let radius = dotDiameter(pointCount: entry.points.count) / 2 + 1
                for point in entry.points where isPlottable(point.x) && isPlottable(point.y) {
                    occupied.mark(x: frame.pixelX(point.x), y: frame.pixelY(point.y), radius: radius)
                }
            }
            svg.horizontalReferences(references, frame: frame, occupied: &occupied)
        }
        svg.axes(frame, title: title, xTitle: xLabel, yTitle: yLabel)
        svg.legend(layout.legend, top: layout.legendTop)
        if !hasData { svg.noData(frame) }
        svg.endPanel()
        return ScatterRendering(chart: Chart(size: size, body: svg.output), frame: frame, markCount: markCount)
    }

    /// The path data for one series and its number of subpaths.
    static func pixelMarks(_ points: [PlotPoint], frame: ChartFrame) -> (path: String, count: Int) {
        let columns = Int(frame.plotWidth), rows = Int(frame.plotHeight)
        guard columns > 0, rows > 0 else { return ("", 0) }
        let wordsPerRow = (columns + 63) / 64
        var touched = [UInt64](repeating: 0, count: wordsPerRow * rows)
        let xLower = frame.xAxis.lower, yUpper = frame.yAxis.upper
        let xScale = Double(columns) / (frame.xAxis.upper - frame.xAxis.lower)
        let yScale = Double(rows) / (frame.yAxis.upper - frame.yAxis.lower)
        let lastColumn = Double(columns - 1), lastRow = Double(rows - 1)
        var anyTouched = false
        touched.withUnsafeMutableBufferPointer { bits in
            for point in points where isPlottable(point.x) && isPlottable(point.y) {
                // The axes cover every point, so only the far edge (value == upper) needs the clamp.
                let column = Int(min(max((point.x - xLower) * xScale, 0), lastColumn))
                let row = Int(min(max((yUpper - point.y) * yScale, 0), lastRow))
                bits[row * wordsPerRow + (column >> 6)] |= 1 << UInt64(column & 63)
                anyTouched = true
            }
        }
        guard anyTouched else { return ("", 0) }

        // Row by row, left to right: runs of touched pixels, each a subpath relative to the last pen position.
        var path = ""
        path.reserveCapacity(4096)
        var count = 0
        var penColumn = 0, penRow = 0
        for row in 0..<rows {
            var column = 0
            while column < columns {
                let word = touched[row * wordsPerRow + (column >> 6)] >> UInt64(column & 63)
                if word == 0 {
                    column = (column | 63) + 1
                    continue
                }
                column += word.trailingZeroBitCount
                let start = column
                while column < columns && touched[row * wordsPerRow + (column >> 6)] & (1 << UInt64(column & 63)) != 0 {
                    column += 1
                }
                let length = column - 1 - start
                if count == 0 {
                    // Pixel centres: the first mark is absolute, the rest are whole-pixel steps from it.
                    path += "M\(svgNumber(frame.plotLeft + Double(start) + 0.5)) \(svgNumber(frame.plotTop + Double(row) + 0.5))h\(length)"
                } else {
                    path += "m\(start - penColumn) \(row - penRow)h\(length)"
                }
                penColumn = start + length
                penRow = row
                count += 1
            }
        }
        return (path, count)
    }
}
