// Line charts: each series one <path> through its points in the order given,
// in its own colour and dash pattern, on padded axes; point labels placed
// greedily where they cover no line, point or other label.

struct LineRendering {
    var chart: Chart
    var frame: ChartFrame
    /// Labels drawn, as (series, point index) in the order placed.
    var placedLabels: [(series: Int, index: Int)]
}

enum LineRenderer {
    static let lineWidth = 2.0
    static let dotRadius = 2.6
    static let ringRadius = 6.0
    /// Space kept clear between a label and the ink around it.
    static let labelClearance = 2.0

    static func render(
        title: String, xLabel: String, yLabel: String, series: [LineSeries], verticalReferences: [ReferenceLine],
        domain: AxisDomain, size requestedSize: PlotSize
    ) -> LineRendering {
        let size = requestedSize.clamped
        var (xExtent, yExtent) = Extent.of(series.map(\.points))
        let hasData = !xExtent.isEmpty
        if let x = domain.x { xExtent.includeIfPlottable(x.lower); xExtent.includeIfPlottable(x.upper) }
        if let y = domain.y { yExtent.includeIfPlottable(y.lower); yExtent.includeIfPlottable(y.upper) }
        let references = drawableReferences(verticalReferences)
        for reference in references { xExtent.include(reference.line.value) }

        let yAxis = Layout.verticalAxis(yExtent.drawable, panelHeight: size.height, padded: true)
        let seriesEntries = series.enumerated().map { index, entry in
            entry.marks == .points
                ? LegendEntry(name: entry.name, colour: Style.seriesColour(index), swatch: .ring)
                : LegendEntry(name: entry.name, colour: Style.seriesColour(index), dash: Style.seriesDash(index), swatch: .line)
        }
        let layout = Layout.make(
            size: size, xRange: xExtent.drawable, yAxis: yAxis, legend: seriesEntries + referenceLegendEntries(references),
            verticalReferences: references, paddedX: true)
        let frame = layout.frame

        var svg = SVGWriter()
        svg.beginPanel()
        svg.grid(frame)
        svg.plotAreaMarker(frame)
        var occupied = PixelMask(frame: frame)
        for label in layout.referenceLabels {
            occupied.markSegment(
                from: (label.lineX, frame.plotTop), to: (label.lineX, frame.plotBottom), radius: 1 + labelClearance)
        }
        svg.verticalReferences(layout.referenceLabels, frame: frame)

        let pixels = series.map { entry in
            entry.points.indices.map { index -> (x: Double, y: Double)? in
                let point = entry.points[index]
                guard isPlottable(point.x), isPlottable(point.y) else { return nil }
                return (frame.pixelX(point.x), frame.pixelY(point.y))
            }
        }
        for (index, entry) in series.enumerated() {
            let colour = Style.seriesColour(index)
            let drawn = pixels[index].compactMap { $0 }
            guard !drawn.isEmpty else { continue }
            if entry.marks != .points {
                var path = ""
                for (offset, point) in drawn.enumerated() {
                    path += (offset == 0 ? "M" : " L") + "\(svgNumber(point.x)) \(svgNumber(point.y))"
                }
                svg.raw("<path class=\"series\" d=\"\(path)\" fill=\"none\" stroke=\"\(colour)\"")
                svg.raw(" stroke-width=\"\(svgNumber(lineWidth))\" stroke-dasharray=\"\(Style.seriesDash(index))\"")
                svg.raw(" stroke-linejoin=\"round\" stroke-linecap=\"round\"/>")
                for (a, b) in zip(drawn, drawn.dropFirst()) {
                    occupied.markSegment(from: a, to: b, radius: lineWidth / 2 + labelClearance)
                }
            }
            switch entry.marks {
            case .line: break
            case .lineAndPoints:
                svg.raw("<g class=\"points\">")
                for point in drawn {
                    svg.circle(cx: point.x, cy: point.y, r: dotRadius, fill: colour, cssClass: "point")
                    occupied.mark(x: point.x, y: point.y, radius: dotRadius + labelClearance)
                }
                svg.raw("</g>")
            case .points:
                svg.raw("<g class=\"points\">")
                for point in drawn {
                    svg.ring(cx: point.x, cy: point.y, r: ringRadius, stroke: colour, cssClass: "point")
                    occupied.mark(x: point.x, y: point.y, radius: ringRadius + 1 + labelClearance)
                }
                svg.raw("</g>")
            }
        }

        var placedLabels: [(series: Int, index: Int)] = []
        for (seriesIndex, entry) in series.enumerated() {
            for label in entry.labels where entry.points.indices.contains(label.index) {
                guard let point = pixels[seriesIndex][label.index],
                      let spot = labelSpot(label.text, at: point, occupied: occupied)
                else { continue }
                let width = estimatedTextWidth(label.text, fontSize: Style.pointLabelFontSize)
                occupied.mark(
                    x0: spot.x0 - labelClearance, y0: spot.y0 - labelClearance,
                    x1: spot.x0 + width + labelClearance, y1: spot.y0 + labelHeight + labelClearance)
                svg.text(
                    label.text, x: spot.x0, y: spot.y0 + labelHeight - 2, fontSize: Style.pointLabelFontSize,
                    cssClass: "point-label")
                placedLabels.append((seriesIndex, label.index))
            }
        }

        svg.axes(frame, title: title, xTitle: xLabel, yTitle: yLabel)
        svg.legend(layout.legend, top: layout.legendTop)
        if !hasData { svg.noData(frame) }
        svg.endPanel()
        return LineRendering(chart: Chart(size: size, body: svg.output), frame: frame, placedLabels: placedLabels)
    }

    static let labelHeight = 11.0

    /// The first spot around the point, nearest first, where the label covers no ink; nil when none is free.
    static func labelSpot(_ text: String, at point: (x: Double, y: Double), occupied: PixelMask) -> (x0: Double, y0: Double)? {
        let width = estimatedTextWidth(text, fontSize: Style.pointLabelFontSize), height = labelHeight
        for gap in [5.0, 10.0, 16.0] {
            let candidates: [(Double, Double)] = [
                (point.x - width / 2, point.y - gap - height),  // above
                (point.x - width / 2, point.y + gap),  // below
                (point.x + gap + 1, point.y - height / 2),  // right
                (point.x - gap - 1 - width, point.y - height / 2),  // left
                (point.x + 2, point.y - gap - height),  // above right
                (point.x - 2 - width, point.y - gap - height),  // above left
                (point.x + 2, point.y + gap),  // below right
                (point.x - 2 - width, point.y + gap),  // below left
            ]
            for (x0, y0) in candidates where occupied.count(x0: x0, y0: y0, x1: x0 + width, y1: y0 + height) == 0 {
                return (x0, y0)
            }
        }
        return nil
    }
}
