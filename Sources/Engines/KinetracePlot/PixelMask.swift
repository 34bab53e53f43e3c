// Which pixels of a plot area already have ink on them, so labels can be put
// where they cover nothing. Coordinates are panel pixels; anything outside
// the plot area is ignored (labels are kept inside it).

struct PixelMask {
    private let left: Double
    private let top: Double
    private let columns: Int
    private let rows: Int
    private var cells: [UInt8]

    init(frame: ChartFrame) {
        left = frame.plotLeft
        top = frame.plotTop
        columns = max(1, Int(frame.plotWidth))
        rows = max(1, Int(frame.plotHeight))
        cells = [UInt8](repeating: 0, count: columns * rows)
    }

    private func columnRange(_ x0: Double, _ x1: Double) -> Range<Int> {
        let low = Int(max(0, (x0 - left).rounded(.down))), high = Int(min(Double(columns), (x1 - left).rounded(.up)))
        return low < high ? low..<high : 0..<0
    }

    private func rowRange(_ y0: Double, _ y1: Double) -> Range<Int> {
        let low = Int(max(0, (y0 - top).rounded(.down))), high = Int(min(Double(rows), (y1 - top).rounded(.up)))
        return low < high ? low..<high : 0..<0
    }

    mutating func mark(x0: Double, y0: Double, x1: Double, y1: Double) {
        guard x0.isFinite, y0.isFinite, x1.isFinite, y1.isFinite else { return }
        let columnsCovered = columnRange(x0, x1)
        for row in rowRange(y0, y1) {
            for column in columnsCovered { cells[row * columns + column] = 1 }
        }
    }

    mutating func mark(x: Double, y: Double, radius: Double) {
        mark(x0: x - radius, y0: y - radius, x1: x + radius, y1: y + radius)
    }

    /// A stroke of half-width `radius`, sampled every half pixel along its length.
    mutating func markSegment(from a: (x: Double, y: Double), to b: (x: Double, y: Double), radius: Double) {
        let dx = b.x - a.x, dy = b.y - a.y
        let length = (dx * dx + dy * dy).squareRoot()
        guard length.isFinite else { return }
        // Bounded: a segment can cross the plot only so often, however long its ends say it is.
        let steps = min(Int(length * 2) + 1, 4 * (columns + rows))
        for step in 0...steps {
            let t = Double(step) / Double(steps)
            mark(x: a.x + dx * t, y: a.y + dy * t, radius: radius)
        }
    }

    /// Marked pixels in the rectangle; a rectangle reaching outside the plot counts those pixels as marked.
    func count(x0: Double, y0: Double, x1: Double, y1: Double) -> Int {
        var outside = 0
        if x0 < left || y0 < top || x1 > left + Double(columns) || y1 > top + Double(rows) { outside = 1_000 }
        var marked = 0
        let columnsCovered = columnRange(x0, x1)
        for row in rowRange(y0, y1) {
            for column in columnsCovered { marked += Int(cells[row * columns + column]) }
        }
        return marked + outside
    }
}
