// Histograms: equal-width bins over [min, max] of the data, bars as rects.

struct HistogramRendering {
    var chart: Chart
    var frame: ChartFrame
    var binCount: Int
    var counts: [Int]
}

enum HistogramRenderer {
    static let automaticBinRange = 10...80
    /// Bins when all values are equal: odd, so the value sits in the middle bin.
    static let degenerateBinCount = 11

    static func render(
        title: String, xLabel: String, values: [Double], bins: Int?, references: [ReferenceLine],
        size requestedSize: PlotSize
    ) -> HistogramRendering {
        let size = requestedSize.clamped
        var dataExtent = Extent()
        var valueCount = 0
        for value in values where isPlottable(value) {
            dataExtent.include(value)
            valueCount += 1
        }
        let hasData = valueCount > 0
        let binRange = dataExtent.drawable
        let isDegenerate = hasData && !(binRange.lower == dataExtent.lower && binRange.upper == dataExtent.upper)

        // One bar per pixel at most: more bins could not be told apart and would only grow the file.
        let maxBins = max(1, size.width)
        let binCount: Int
        if let bins {
            binCount = min(max(bins, 1), maxBins)
        } else if isDegenerate || !hasData {
            binCount = degenerateBinCount
        } else {
            binCount = freedmanDiaconisBinCount(values, count: valueCount, lower: binRange.lower, upper: binRange.upper)
        }

        var counts = [Int](repeating: 0, count: binCount)
        if hasData {
            let scale = Double(binCount) / (binRange.upper - binRange.lower)
            for value in values where isPlottable(value) {
                counts[binIndex(value, lower: binRange.lower, scale: scale, binCount: binCount)] += 1
            }
        }

        let references = drawableReferences(references)
        var xExtent = Extent()
        xExtent.include(binRange.lower)
        xExtent.include(binRange.upper)
        for reference in references { xExtent.include(reference.line.value) }
        let yAxis = Layout.verticalAxis(
            (0, Double(max(1, counts.max() ?? 0))), panelHeight: size.height, integerSteps: true)
        let layout = Layout.make(
            size: size, xRange: xExtent.drawable, yAxis: yAxis, legend: referenceLegendEntries(references),
            verticalReferences: references)
        let frame = layout.frame

        var svg = SVGWriter()
        svg.beginPanel()
        svg.grid(frame)
        svg.plotAreaMarker(frame)
        let binWidth = (binRange.upper - binRange.lower) / Double(binCount)
        let barColour = Style.seriesColour(0)
        for (index, count) in counts.enumerated() where count > 0 {
            // Edges from the index, not by accumulation, so the last one lands exactly on the maximum.
            let left = frame.pixelX(binRange.lower + Double(index) * binWidth)
            let right = index == binCount - 1 ? frame.pixelX(binRange.upper) : frame.pixelX(binRange.lower + Double(index + 1) * binWidth)
            let gap = right - left >= 4 ? 1.0 : 0
            let top = frame.pixelY(Double(count))
            svg.rect(
                x: left, y: top, width: max(0.5, right - left - gap), height: frame.plotBottom - top,
                fill: barColour, opacity: 0.85)
        }
        svg.verticalReferences(layout.referenceLabels, frame: frame)
        svg.axes(frame, title: title, xTitle: xLabel, yTitle: "count")
        svg.legend(layout.legend, top: layout.legendTop)
        if !hasData { svg.noData(frame) }
        svg.endPanel()
        return HistogramRendering(
            chart: Chart(size: size, body: svg.output), frame: frame, binCount: binCount, counts: counts)
    }

    @inline(__always)
    static func binIndex(_ value: Double, lower: Double, scale: Double, binCount: Int) -> Int {
        // The maximum itself belongs to the last bin.
        Int(min(max((value - lower) * scale, 0), Double(binCount - 1)))
    }

    /// Freedman–Diaconis: bin width 2·IQR·n^(−1/3), clamped to 10…80 bins.
    /// The quartiles come from a 4096-bin pre-histogram (linear time, no sort);
    /// their error of < 1/4096 of the range is irrelevant for picking a bin count.
    static func freedmanDiaconisBinCount(_ values: [Double], count: Int, lower: Double, upper: Double) -> Int {
        guard count >= 2 else { return automaticBinRange.lowerBound }
        let fineBinCount = 4096
        var fine = [Int](repeating: 0, count: fineBinCount)
        let scale = Double(fineBinCount) / (upper - lower)
        for value in values where isPlottable(value) {
            fine[binIndex(value, lower: lower, scale: scale, binCount: fineBinCount)] += 1
        }
        let fineWidth = (upper - lower) / Double(fineBinCount)
        func quantile(_ fraction: Double) -> Double {
            let target = fraction * Double(count)
            var below = 0
            for (index, binCount) in fine.enumerated() where binCount > 0 {
                if Double(below + binCount) >= target {
                    let within = (target - Double(below)) / Double(binCount)
                    return lower + (Double(index) + within) * fineWidth
                }
                below += binCount
            }
            return upper
        }
        let interquartileRange = quantile(0.75) - quantile(0.25)
        // A zero IQR (heavy ties) means arbitrarily narrow bins: the upper clamp.
        guard interquartileRange > 0 else { return automaticBinRange.upperBound }
        let binWidth = 2 * interquartileRange / cubeRoot(Double(count))
        let ideal = ((upper - lower) / binWidth).rounded(.up)
        return Int(min(max(ideal, Double(automaticBinRange.lowerBound)), Double(automaticBinRange.upperBound)))
    }

    /// Cube root of a positive number by Newton's method (the stdlib has none without Foundation).
    static func cubeRoot(_ value: Double) -> Double {
        guard value > 0, value.isFinite else { return 1 }
        var root = Double(sign: .plus, exponent: value.exponent / 3, significand: 1)
        for _ in 0..<60 {
            let next = (2 * root + value / (root * root)) / 3
            if next == root { break }
            root = next
        }
        return root
    }
}
