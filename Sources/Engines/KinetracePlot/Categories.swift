// Category charts: named categories along x (traces, say), each series a dot per
// category, the series' dots side by side within a category, and every category
// named under its slot, turned when the names would not fit side by side.

/// One named series of a category chart: a value per category, nil where it has none.
package struct CategorySeries: Sendable {
    package var name: String
    package var values: [Double?]
    package init(name: String, values: [Double?]) {
        self.name = name
        self.values = values
    }
}

struct CategoryRendering {
    var chart: Chart
    var frame: ChartFrame
    /// Dots drawn, over all series.
    var dotCount: Int
    /// Categories whose name was written (every one, unless there are more than fit even turned).
    var labelledCategories: [Int]
    var turnedLabels: Bool
}

extension Charts {
    /// A dot per series and category (e.g. scores per trace), categories along x in the order given and
    /// named under their slots, on a y axis covering `yDomain` as well as the data; every series has a
    /// legend entry. Non-finite values are skipped.
    package static func categories(
        title: String, xLabel: String, yLabel: String, categories: [String], series: [CategorySeries],
        yDomain: (lower: Double, upper: Double)? = nil, size: PlotSize = .standard
    ) -> Chart {
        CategoryRenderer.render(title: title, xLabel: xLabel, yLabel: yLabel, categories: categories, series: series,
                                yDomain: yDomain, size: size).chart
    }
}

enum CategoryRenderer {
    static let dotRadius = 4.0
    /// Names are cut to this width, turned or not.
    static let maxLabelWidth = 150.0
    static let turnDegrees = 35.0
    /// sin and cos of 35°, written out: the charts use the standard library alone.
    static let turnSine = 0.573_576_436_351_046, turnCosine = 0.819_152_044_288_992

    static func render(
        title: String, xLabel: String, yLabel: String, categories: [String], series: [CategorySeries],
        yDomain: (lower: Double, upper: Double)?, size requestedSize: PlotSize
    ) -> CategoryRendering {
        let base = requestedSize.clamped
        let count = max(1, categories.count)
        var yExtent = Extent()
        for entry in series {
            for value in entry.values.prefix(categories.count) { if let value { yExtent.includeIfPlottable(value) } }
        }
        let hasData = !yExtent.isEmpty
        if let yDomain { yExtent.includeIfPlottable(yDomain.lower); yExtent.includeIfPlottable(yDomain.upper) }

        // Names side by side when each fits its slot; else turned, which needs room below the plot.
        let names = categories.map { fitted($0, maxWidth: maxLabelWidth, fontSize: Style.tickFontSize) }
        let widest = names.map { estimatedTextWidth($0, fontSize: Style.tickFontSize) }.max() ?? 0
        let roughSlot = (Double(base.width) - 90) / Double(count)
        let turned = widest + 8 > roughSlot
        // The bottom margin holds a line of names already; turned ones reach down by their width's sine.
        let extraBottom = turned ? (widest * turnSine + 2).rounded(.up) : 0
        let size = PlotSize(width: base.width, height: min(PlotSize.maximum.height, base.height + Int(extraBottom)))

        let yAxis = Layout.verticalAxis(yExtent.drawable, panelHeight: base.height, padded: true)
        let entries = series.enumerated().map { LegendEntry(name: $0.element.name, colour: Style.seriesColour($0.offset), swatch: .dot) }
        let width = Double(size.width), height = Double(size.height)
        let yLabelWidth = yAxis.labels.map { estimatedTextWidth($0, fontSize: Style.tickFontSize) }.max() ?? 0
        var plotLeft = (Style.yTitleBand + yLabelWidth + Style.tickLabelGap).rounded(.up)
        // A turned first name runs left from its slot's centre: keep it on the panel.
        if turned { plotLeft = max(plotLeft, (widest * turnCosine + 6 - roughSlot / 2).rounded(.up)) }
        let plotWidth = max(20, (width - plotLeft - 16).rounded(.down))
        let legend = Layout.placeLegend(entries, startX: plotLeft, endX: width - Style.outerPadding)
        let legendRows = legend.map { $0.row + 1 }.max() ?? 0
        let plotTop = Style.titleBand + Double(legendRows) * Style.legendRowHeight + Style.gapAbovePlot
        let plotHeight = max(10, (height - plotTop - Style.bottomMargin - extraBottom).rounded(.down))
        let xAxis = Axis(lower: 0.5, upper: Double(count) + 0.5, step: 1, ticks: [], stepExponent: 0)
        let frame = ChartFrame(width: width, height: height, plotLeft: plotLeft, plotTop: plotTop, plotWidth: plotWidth,
                               plotHeight: plotHeight, xAxis: xAxis, yAxis: yAxis)
        let slot = plotWidth / Double(count)

        var svg = SVGWriter()
        svg.beginPanel()
        svg.grid(frame)
        svg.plotAreaMarker(frame)
        var dots = 0
        let spacing = min(10, slot / Double(series.count + 1))
        for (index, entry) in series.enumerated() {
            let offset = (Double(index) - Double(series.count - 1) / 2) * spacing
            svg.raw("<g class=\"points\" data-name=\"\(xmlEscaped(entry.name))\">")
            for (category, value) in entry.values.prefix(categories.count).enumerated() {
                guard let value, isPlottable(value) else { continue }
                svg.circle(cx: frame.pixelX(Double(category + 1)) + offset, cy: frame.pixelY(value), r: dotRadius,
                           fill: Style.seriesColour(index), cssClass: "point")
                dots += 1
            }
            svg.raw("</g>")
        }

        // Names: every one when they fit, turned or not; past that, every k-th.
        let labelHeight = Style.tickFontSize + 3
        let step = turned ? max(1, Int((labelHeight / slot).rounded(.up))) : 1
        var labelled: [Int] = []
        for (index, name) in names.enumerated() where index % step == 0 {
            let x = frame.pixelX(Double(index + 1))
            svg.line(x1: x, y1: frame.plotBottom, x2: x, y2: frame.plotBottom + Style.tickLength, stroke: Style.axisColour)
            if turned {
                let y = frame.plotBottom + 14
                svg.raw("<text class=\"category\" transform=\"translate(\(svgNumber(x + 3)) \(svgNumber(y))) rotate(-\(svgNumber(turnDegrees)))\"")
                svg.raw(" font-size=\"\(svgNumber(Style.tickFontSize))\" text-anchor=\"end\" fill=\"\(Style.textColour)\">\(xmlEscaped(name))</text>")
            } else {
                svg.text(name, x: x, y: frame.plotBottom + 17, fontSize: Style.tickFontSize, anchor: .middle, cssClass: "category")
            }
            labelled.append(index)
        }
        svg.axes(frame, title: title, xTitle: xLabel, yTitle: yLabel)
        svg.legend(legend, top: Style.titleBand)
        if !hasData { svg.noData(frame) }
        svg.endPanel()
        return CategoryRendering(chart: Chart(size: size, body: svg.output), frame: frame, dotCount: dots, labelledCategories: labelled,
                                 turnedLabels: turned)
    }
}
