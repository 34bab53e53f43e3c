// Panel geometry: margins sized from the actual labels, the plot rectangle, and
// where the legend and the vertical reference labels go.

/// The plot rectangle of a panel and the axes mapped onto it. The rectangle
/// has whole-pixel edges, so the scatter's dedup grid is the pixel grid.
struct ChartFrame: Sendable {
    var width: Double
    var height: Double
    var plotLeft: Double
    var plotTop: Double
    var plotWidth: Double
    var plotHeight: Double
    var xAxis: Axis
    var yAxis: Axis

    var plotRight: Double { plotLeft + plotWidth }
    var plotBottom: Double { plotTop + plotHeight }

    func pixelX(_ value: Double) -> Double {
        plotLeft + (value - xAxis.lower) / (xAxis.upper - xAxis.lower) * plotWidth
    }

    func pixelY(_ value: Double) -> Double {
        plotBottom - (value - yAxis.lower) / (yAxis.upper - yAxis.lower) * plotHeight
    }
}

struct LegendEntry {
    var name: String
    var colour: String
    var dash: String = "none"
    var swatch: LegendSwatch = .line
}

/// A legend item (or the "+N more" note, which has no colour) placed in the header.
struct PlacedLegendItem {
    var text: String
    var colour: String?
    var dash: String = "none"
    var swatch: LegendSwatch = .line
    var x: Double
    var row: Int
}

/// A reference line and the label row above the plot its text went to.
struct PlacedReferenceLabel {
    var reference: DrawnReference
    var lineX: Double
    var textX: Double
    var anchor: TextAnchor
    var row: Int
}

struct ChartLayout {
    var frame: ChartFrame
    var legend: [PlacedLegendItem]
    var legendTop: Double
    var referenceLabels: [PlacedReferenceLabel]
}

enum Layout {
    static let maxLegendRows = 3
    static let maxReferenceRows = 3
    static let legendSwatchWidth = 27.0
    static let legendItemGap = 14.0

    /// Lays out a panel. The y axis is chosen first (its tick count depends only
    /// on the panel height), its label widths give the left margin, which gives
    /// the plot width and x axis, which place the header items, which give the plot top.
    static func make(
        size: PlotSize, xRange: (lower: Double, upper: Double), yAxis: Axis,
        legend entries: [LegendEntry], verticalReferences: [DrawnReference], paddedX: Bool = false
    ) -> ChartLayout {
        let width = Double(size.width), height = Double(size.height)
        let yLabelWidth = yAxis.labels.map { estimatedTextWidth($0, fontSize: Style.tickFontSize) }.max() ?? 0
        var plotLeft = (Style.yTitleBand + yLabelWidth + Style.tickLabelGap).rounded(.up)

        var rightMargin = 16.0
        var plotWidth = 0.0
        var xAxis = horizontalAxis(xRange, plotWidth: width - plotLeft - rightMargin, padded: paddedX)
        // The end x labels are centred on the plot edges; widen the margins until half of each fits.
        for _ in 0..<3 {
            // Only absurd labels on a minimum-width panel could squeeze the plot this far.
            plotWidth = max(20, (width - plotLeft - rightMargin).rounded(.down))
            xAxis = horizontalAxis(xRange, plotWidth: plotWidth, padded: paddedX)
            let labels = xAxis.labels
            func halfWidth(_ label: String?) -> Double {
                (estimatedTextWidth(label ?? "", fontSize: Style.tickFontSize) / 2 + 6).rounded(.up)
            }
            let neededLeft = halfWidth(labels.first), neededRight = halfWidth(labels.last)
            if neededLeft <= plotLeft && neededRight <= rightMargin { break }
            plotLeft = max(plotLeft, neededLeft)
            rightMargin = max(rightMargin, neededRight)
        }

        let legend = placeLegend(entries, startX: plotLeft, endX: width - Style.outerPadding)
        let legendRows = legend.map { $0.row + 1 }.max() ?? 0
        let legendTop = Style.titleBand

        func pixelX(_ value: Double) -> Double {
            plotLeft + (value - xAxis.lower) / (xAxis.upper - xAxis.lower) * plotWidth
        }
        let referenceLabels = placeReferenceLabels(
            verticalReferences.map { ($0, pixelX($0.line.value)) }, chartWidth: width)
        let referenceRows = referenceLabels.map { $0.row + 1 }.max() ?? 0

        let plotTop = Style.titleBand + Double(legendRows) * Style.legendRowHeight
            + Double(referenceRows) * Style.referenceRowHeight + Style.gapAbovePlot
        // The minimum panel height leaves at least ~30 px here even with full header rows.
        let plotHeight = max(10, (height - plotTop - Style.bottomMargin).rounded(.down))
        let frame = ChartFrame(
            width: width, height: height, plotLeft: plotLeft, plotTop: plotTop, plotWidth: plotWidth,
            plotHeight: plotHeight, xAxis: xAxis, yAxis: yAxis)
        return ChartLayout(frame: frame, legend: legend, legendTop: legendTop, referenceLabels: referenceLabels)
    }

    /// The y axis for a panel of this height: about one tick per 32 px, 3…8 ticks.
    static func verticalAxis(
        _ range: (lower: Double, upper: Double), panelHeight: Int, integerSteps: Bool = false, padded: Bool = false
    ) -> Axis {
        let approximatePlotHeight = Double(panelHeight) - 90
        let maxTicks = min(8, max(3, Int(approximatePlotHeight / 32)))
        if padded { return NiceScale.paddedAxis(lower: range.lower, upper: range.upper, maxTicks: maxTicks, padding: Style.axisPadding) }
        return NiceScale.axis(lower: range.lower, upper: range.upper, maxTicks: maxTicks, integerSteps: integerSteps)
    }

    /// The x axis: up to 8 ticks, fewer when the labels would crowd each other.
    private static func horizontalAxis(_ range: (lower: Double, upper: Double), plotWidth: Double, padded: Bool) -> Axis {
        var maxTicks = min(8, max(3, Int(plotWidth / 70)))
        while true {
            let axis = padded
                ? NiceScale.paddedAxis(lower: range.lower, upper: range.upper, maxTicks: maxTicks, padding: Style.axisPadding)
                : NiceScale.axis(lower: range.lower, upper: range.upper, maxTicks: maxTicks)
            let widest = axis.labels.map { estimatedTextWidth($0, fontSize: Style.tickFontSize) }.max() ?? 0
            let spacing = plotWidth / Double(max(1, axis.ticks.count - 1))
            if widest + 12 <= spacing || maxTicks <= 2 { return axis }
            maxTicks -= 1
        }
    }

    /// Legend items flow left to right and wrap; past the last row the rest are
    /// summarised as "+N more" so a huge series list cannot eat the plot.
    static func placeLegend(_ entries: [LegendEntry], startX: Double, endX: Double) -> [PlacedLegendItem] {
        guard !entries.isEmpty else { return [] }
        let moreNoteWidth = estimatedTextWidth("+9999 more", fontSize: Style.legendFontSize)
        let maxNameWidth = max(20, endX - startX - legendSwatchWidth)
        var placed: [PlacedLegendItem] = []
        var x = startX, row = 0
        for (index, entry) in entries.enumerated() {
            let name = fitted(entry.name, maxWidth: maxNameWidth, fontSize: Style.legendFontSize)
            let itemWidth = legendSwatchWidth + estimatedTextWidth(name, fontSize: Style.legendFontSize)
            let isLast = index == entries.count - 1
            let reserve = row == maxLegendRows - 1 && !isLast ? moreNoteWidth + legendItemGap : 0
            if x > startX && x + itemWidth + reserve > endX {
                if row == maxLegendRows - 1 {
                    placed.append(PlacedLegendItem(text: "+\(entries.count - index) more", colour: nil, x: x, row: row))
                    return placed
                }
                row += 1
                x = startX
            }
            placed.append(PlacedLegendItem(text: name, colour: entry.colour, dash: entry.dash, swatch: entry.swatch, x: x, row: row))
            x += itemWidth + legendItemGap
        }
        return placed
    }

    /// Labels of vertical reference lines sit in rows above the plot, next to
    /// their line; a label that would overlap one already placed moves up a row,
    /// so close lines (mean and p95) stay readable.
    static func placeReferenceLabels(
        _ references: [(reference: DrawnReference, x: Double)], chartWidth: Double
    ) -> [PlacedReferenceLabel] {
        // Left to right, ties by input order, so the stagger is deterministic.
        let order = references.indices.sorted { (references[$0].x, $0) < (references[$1].x, $1) }
        var occupied: [[(Double, Double)]] = Array(repeating: [], count: maxReferenceRows)
        var placed: [PlacedReferenceLabel] = []
        for index in order {
            let (reference, x) = references[index]
            let text = fitted(reference.line.label, maxWidth: chartWidth - 2 * Style.outerPadding, fontSize: Style.referenceFontSize)
            let textWidth = estimatedTextWidth(text, fontSize: Style.referenceFontSize)
            // Text to the right of the line, unless that would run off the panel.
            let anchor: TextAnchor = x + 3 + textWidth <= chartWidth - 4 ? .start : .end
            let textX = anchor == .start ? x + 3 : x - 3
            let span = anchor == .start ? (textX, textX + textWidth) : (textX - textWidth, textX)
            func overlaps(_ row: Int) -> Int {
                occupied[row].filter { span.0 < $0.1 + 4 && $0.0 < span.1 + 4 }.count
            }
            // The lowest free row; if none is free, the least crowded one.
            let row = (0..<maxReferenceRows).first { overlaps($0) == 0 }
                ?? (0..<maxReferenceRows).min { (overlaps($0), $0) < (overlaps($1), $1) } ?? 0
            occupied[row].append(span)
            placed.append(
                PlacedReferenceLabel(reference: reference, lineX: x, textX: textX, anchor: anchor, row: row))
        }
        return placed
    }
}
