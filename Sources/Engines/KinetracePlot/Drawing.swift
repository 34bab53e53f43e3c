// The parts every panel shares: grid, axes, titles, legend, reference lines, "no data".

enum LegendSwatch {
    case dot, ring, line
}

/// A reference line with the style of its legend entry.
struct DrawnReference {
    var line: ReferenceLine
    var colour: String
    var dash: String
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
            fontSize: Style.axisTitleFontSize, anchor: .middle, cssClass: "x-title")
        let yTitleText = fitted(yTitle, maxWidth: frame.plotHeight + 30, fontSize: Style.axisTitleFontSize)
        verticalText(
            yTitleText, x: Style.yTitleBaseline, y: frame.plotTop + frame.plotHeight / 2,
            fontSize: Style.axisTitleFontSize)
        let titleText = fitted(title, maxWidth: frame.width - 2 * Style.outerPadding, fontSize: Style.titleFontSize)
        text(titleText, x: Style.outerPadding, y: Style.titleBaseline, fontSize: Style.titleFontSize, bold: true, cssClass: "title")
    }

    mutating func legend(_ items: [PlacedLegendItem], top: Double) {
        for item in items {
            let baseline = top + Double(item.row) * Style.legendRowHeight + 12
            guard let colour = item.colour else {
                text(item.text, x: item.x, y: baseline, fontSize: Style.legendFontSize, fill: Style.mutedTextColour)
                continue
            }
            raw("<g class=\"legend-entry\">")
            switch item.swatch {
            case .dot: circle(cx: item.x + 10, cy: baseline - 4, r: 4, fill: colour)
            case .ring: ring(cx: item.x + 10, cy: baseline - 4, r: 4.5, stroke: colour)
            case .line:
                line(x1: item.x, y1: baseline - 4, x2: item.x + 22, y2: baseline - 4, stroke: colour, width: 2, dash: item.dash)
            }
            text(item.text, x: item.x + Layout.legendSwatchWidth, y: baseline, fontSize: Style.legendFontSize, cssClass: "legend")
            raw("</g>")
        }
    }

    /// An invisible rectangle on the plot area carrying its axis ranges, so a
    /// reader of the SVG (or a test) can map coordinates back to values.
    mutating func plotAreaMarker(_ frame: ChartFrame) {
        raw("<rect class=\"plot-area\" x=\"\(svgNumber(frame.plotLeft))\" y=\"\(svgNumber(frame.plotTop))\"")
        raw(" width=\"\(svgNumber(frame.plotWidth))\" height=\"\(svgNumber(frame.plotHeight))\" fill=\"none\"")
        raw(" data-x-range=\"\(frame.xAxis.lower) \(frame.xAxis.upper)\" data-y-range=\"\(frame.yAxis.lower) \(frame.yAxis.upper)\"/>")
    }

    /// Vertical lines across the plot, labels in the rows above it.
    mutating func verticalReferences(_ labels: [PlacedReferenceLabel], frame: ChartFrame) {
        for label in labels {
            line(
                x1: label.lineX, y1: frame.plotTop - 3, x2: label.lineX, y2: frame.plotBottom,
                stroke: label.reference.colour, width: 1.5, dash: label.reference.dash,
                cssClass: "reference", dataValue: label.reference.line.value)
            let baseline = frame.plotTop - 6 - Double(label.row) * Style.referenceRowHeight
            text(
                label.reference.line.label, x: label.textX, y: baseline, fontSize: Style.referenceFontSize,
                anchor: label.anchor, fill: label.reference.colour, cssClass: "reference-label")
        }
    }

    /// Horizontal lines across the plot, each labelled where its label covers
    /// the fewest drawn pixels (`occupied`), other labels and other lines:
    /// near the right end if that is free, above or below the line.
    mutating func horizontalReferences(_ references: [DrawnReference], frame: ChartFrame, occupied: inout PixelMask) {
        let positioned = references.map { (reference: $0, y: frame.pixelY($0.line.value)) }
        for item in positioned {
            line(
                x1: frame.plotLeft, y1: item.y, x2: frame.plotRight, y2: item.y,
                stroke: item.reference.colour, width: 1.5, dash: item.reference.dash,
                cssClass: "reference", dataValue: item.reference.line.value)
        }
        var placed: [(x0: Double, y0: Double, x1: Double, y1: Double)] = []
        for (index, item) in positioned.enumerated() {
            let label = fitted(item.reference.line.label, maxWidth: frame.plotWidth - 8, fontSize: Style.referenceFontSize)
            let width = estimatedTextWidth(label, fontSize: Style.referenceFontSize) + 4
            let height = 12.0
            var best: (score: Int, x0: Double, y0: Double)?
            let steps = 8
            for step in 0...steps {
                // From the right end leftwards: readers look for a line's name at its end.
                let x0 = frame.plotRight - 4 - width - Double(step) * (frame.plotWidth - 8 - width) / Double(steps)
                guard x0 >= frame.plotLeft + 2 else { continue }
                for y0 in [item.y - 2 - height, item.y + 2] {
                    guard y0 >= frame.plotTop + 1, y0 + height <= frame.plotBottom - 1 else { continue }
                    var score = occupied.count(x0: x0, y0: y0, x1: x0 + width, y1: y0 + height)
                    for other in placed where x0 < other.x1 && other.x0 < x0 + width && y0 < other.y1 && other.y0 < y0 + height {
                        score += 100_000
                    }
                    for (otherIndex, other) in positioned.enumerated() where otherIndex != index && other.y > y0 && other.y < y0 + height {
                        score += 10_000
                    }
                    if best == nil || score < best!.score { best = (score, x0, y0) }
                }
            }
            // A plot too short for a label beside the line: on it, at the right end.
            let chosen = best ?? (0, frame.plotRight - 4 - width, min(max(item.y - height / 2, frame.plotTop), frame.plotBottom - height))
            placed.append((chosen.x0, chosen.y0, chosen.x0 + width, chosen.y0 + height))
            occupied.mark(x0: chosen.x0, y0: chosen.y0, x1: chosen.x0 + width, y1: chosen.y0 + height)
            rect(x: chosen.x0, y: chosen.y0, width: width, height: height, fill: "#ffffff", opacity: 0.85)
            text(
                label, x: chosen.x0 + 2, y: chosen.y0 + 9.5, fontSize: Style.referenceFontSize,
                fill: item.reference.colour, cssClass: "reference-label")
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

/// Reference lines worth drawing (finite values), each styled by its legend
/// entry's position among the distinct entries of the input.
func drawableReferences(_ references: [ReferenceLine]) -> [DrawnReference] {
    var groups: [String] = []
    var drawn: [DrawnReference] = []
    for line in references {
        let group = groups.firstIndex(of: line.legendText) ?? {
            groups.append(line.legendText)
            return groups.count - 1
        }()
        guard isPlottable(line.value) else { continue }
        drawn.append(DrawnReference(line: line, colour: Style.referenceColour(group), dash: Style.referenceDash(group)))
    }
    return drawn
}

/// One legend entry per distinct reference legend text, in order.
func referenceLegendEntries(_ references: [DrawnReference]) -> [LegendEntry] {
    var seen: Set<String> = []
    return references.compactMap { reference in
        guard seen.insert(reference.line.legendText).inserted else { return nil }
        return LegendEntry(name: reference.line.legendText, colour: reference.colour, dash: reference.dash, swatch: .line)
    }
}
