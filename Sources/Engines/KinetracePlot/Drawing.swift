// The parts every panel shares: grid, axes, titles, legend, reference lines, "no data".

enum LegendSwatch {
    case dot, line
}

extension SVGWriter {
    /// Opens a panel; `endPanel` closes it. The font is set here so a panel body
    /// also renders right when embedded on its own.
    mutating func beginPanel() {
        raw("<g font-family=\"sans-serif\">")
    }

    mutating func endPanel() {
        raw("</g>")
    }

    mutating func grid(_ frame: ChartFrame) {
        for tick in frame.yAxis.ticks {
            let y = frame.pixelY(tick)
            line(x1: frame.plotLeft, y1: y, x2: frame.plotRight, y2: y, stroke: Style.gridColour)
        }
        for tick in frame.xAxis.ticks {
            let x = frame.pixelX(tick)
            line(x1: x, y1: frame.plotTop, x2: x, y2: frame.plotBottom, stroke: Style.gridColour)
        }
    }

    /// Axis lines, ticks, tick labels, axis titles and the panel title.
    mutating func axes(_ frame: ChartFrame, title: String, xTitle: String, yTitle: String) {
        line(
            x1: frame.plotLeft, y1: frame.plotBottom, x2: frame.plotRight, y2: frame.plotBottom,
            stroke: Style.axisColour)
        line(
            x1: frame.plotLeft, y1: frame.plotTop, x2: frame.plotLeft, y2: frame.plotBottom,
            stroke: Style.axisColour)
        for (tick, label) in zip(frame.xAxis.ticks, frame.xAxis.labels) {
            let x = frame.pixelX(tick)
            line(x1: x, y1: frame.plotBottom, x2: x, y2: frame.plotBottom + Style.tickLength, stroke: Style.axisColour)
            text(label, x: x, y: frame.plotBottom + 17, fontSize: Style.tickFontSize, anchor: .middle)
        }
        for (tick, label) in zip(frame.yAxis.ticks, frame.yAxis.labels) {
            let y = frame.pixelY(tick)
            line(x1: frame.plotLeft - Style.tickLength, y1: y, x2: frame.plotLeft, y2: y, stroke: Style.axisColour)
            text(label, x: frame.plotLeft - Style.tickLabelGap, y: y + 4, fontSize: Style.tickFontSize, anchor: .end)
        }
        let xTitleText = fitted(xTitle, maxWidth: frame.plotWidth, fontSize: Style.axisTitleFontSize)
        text(
            xTitleText, x: frame.plotLeft + frame.plotWidth / 2, y: frame.height - 9,
            fontSize: Style.axisTitleFontSize, anchor: .middle)
        let yTitleText = fitted(yTitle, maxWidth: frame.plotHeight + 30, fontSize: Style.axisTitleFontSize)
        verticalText(
            yTitleText, x: Style.yTitleBaseline, y: frame.plotTop + frame.plotHeight / 2,
            fontSize: Style.axisTitleFontSize)
        let titleText = fitted(title, maxWidth: frame.width - 2 * Style.outerPadding, fontSize: Style.titleFontSize)
        text(titleText, x: Style.outerPadding, y: Style.titleBaseline, fontSize: Style.titleFontSize, bold: true)
    }

    mutating func legend(_ items: [PlacedLegendItem], top: Double, swatch: LegendSwatch) {
        for item in items {
            let baseline = top + Double(item.row) * Style.legendRowHeight + 12
            guard let colour = item.colour else {
                text(item.text, x: item.x, y: baseline, fontSize: Style.legendFontSize, fill: Style.mutedTextColour)
                continue
            }
            switch swatch {
            case .dot: circle(cx: item.x + 6, cy: baseline - 4, r: 4, fill: colour)
            case .line: line(x1: item.x, y1: baseline - 4, x2: item.x + 13, y2: baseline - 4, stroke: colour, width: 2.5)
            }
            text(item.text, x: item.x + Layout.legendSwatchWidth, y: baseline, fontSize: Style.legendFontSize)
        }
    }

    /// Vertical lines across the plot, labels in the rows above it.
    mutating func verticalReferences(_ labels: [PlacedReferenceLabel], frame: ChartFrame) {
        for label in labels {
            line(
                x1: label.lineX, y1: frame.plotTop - 3, x2: label.lineX, y2: frame.plotBottom,
                stroke: label.colour, width: 1.5, dashed: label.line.dashed)
            let baseline = frame.plotTop - 6 - Double(label.row) * Style.referenceRowHeight
            text(
                label.line.label, x: label.textX, y: baseline, fontSize: Style.referenceFontSize,
                anchor: label.anchor, fill: label.colour)
        }
    }

    /// Horizontal lines across the plot, labels at the right end just above
    /// each line on a pale backing; labels that would collide are pushed down.
    mutating func horizontalReferences(_ references: [(line: ReferenceLine, colour: String)], frame: ChartFrame) {
        let positioned = references.enumerated()
            .map { (index: $0.offset, reference: $0.element, y: frame.pixelY($0.element.line.value)) }
            .sorted { ($0.y, $0.index) < ($1.y, $1.index) }
        var previousBaseline = -Double.infinity
        for item in positioned {
            line(
                x1: frame.plotLeft, y1: item.y, x2: frame.plotRight, y2: item.y,
                stroke: item.reference.colour, width: 1.5, dashed: item.reference.line.dashed)
        }
        for item in positioned {
            let label = fitted(item.reference.line.label, maxWidth: frame.plotWidth - 8, fontSize: Style.referenceFontSize)
            let baseline = min(
                max(item.y - 4, previousBaseline + Style.referenceRowHeight, frame.plotTop + 11),
                frame.plotBottom - 3)
            previousBaseline = baseline
            let textWidth = estimatedTextWidth(label, fontSize: Style.referenceFontSize)
            let textRight = frame.plotRight - 4
            rect(x: textRight - textWidth - 2, y: baseline - 9, width: textWidth + 4, height: 12, fill: "#ffffff", opacity: 0.8)
            text(label, x: textRight, y: baseline, fontSize: Style.referenceFontSize, anchor: .end, fill: item.reference.colour)
        }
    }

    /// Centred notice on a backing, so a reference line through the middle does not strike it out.
    mutating func noData(_ frame: ChartFrame) {
        let centreX = frame.plotLeft + frame.plotWidth / 2, centreY = frame.plotTop + frame.plotHeight / 2
        let width = estimatedTextWidth("no data", fontSize: Style.noDataFontSize) + 12
        rect(x: centreX - width / 2, y: centreY - 10, width: width, height: 20, fill: "#ffffff")
        text(
            "no data", x: centreX, y: centreY + 4.5, fontSize: Style.noDataFontSize, anchor: .middle,
            fill: Style.mutedTextColour)
    }
}

/// Reference lines worth drawing (finite values), each with its colour from its position in the input.
func drawableReferences(_ references: [ReferenceLine]) -> [(line: ReferenceLine, colour: String)] {
    references.enumerated()
        .filter { isPlottable($0.element.value) }
        .map { (line: $0.element, colour: Style.referenceColour($0.offset)) }
}
