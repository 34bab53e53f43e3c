/// One data point of a scatter series.
package struct PlotPoint: Hashable, Sendable {
    package var x: Double
    package var y: Double
    package init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }
}

/// One named data series, drawn in its own colour.
package struct PlotSeries: Sendable {
    package var name: String
    package var points: [PlotPoint]
    package init(name: String, points: [PlotPoint]) {
        self.name = name
        self.points = points
    }
}

/// One named sample for an empirical CDF, drawn in its own colour.
package struct CDFSeries: Sendable {
    package var name: String
    package var values: [Double]
    package init(name: String, values: [Double]) {
        self.name = name
        self.values = values
    }
}

/// A labelled reference line: horizontal on scatter plots (a y value), vertical on histograms, CDFs and line charts (an x value).
/// Every reference line has a legend entry: lines with the same `legend` text share one entry and one style
/// (the −3σ and +3σ bounds), and each distinct entry gets its own colour and dash pattern.
package struct ReferenceLine: Hashable, Sendable {
    /// Drawn beside the line, with its value.
    package var label: String
    package var value: Double
    /// The legend entry; nil uses `label`.
    package var legend: String?
    package init(label: String, value: Double, legend: String? = nil) {
        self.label = label
        self.value = value
        self.legend = legend
    }

    var legendText: String { legend ?? label }
}

/// A point of a line series to label, by its index in the series.
package struct PointLabel: Hashable, Sendable {
    package var index: Int
    package var text: String
    package init(index: Int, text: String) {
        self.index = index
        self.text = text
    }
}

/// One named series of a line chart, in its own colour and dash pattern.
package struct LineSeries: Sendable {
    package enum Marks: Sendable {
        /// The points joined in the order given.
        case line
        /// Joined, with a dot on each point (each point is a setting worth seeing).
        case lineAndPoints
        /// Rings on the points, not joined (a highlighted setting).
        case points
    }

    package var name: String
    /// Joined in this order (a sweep's points in the order of the swept value).
    package var points: [PlotPoint]
    package var marks: Marks
    /// Labels to place, most important first; one that would overlap a line, a point
    /// or another label is left out, so a long list gives a readable subset.
    package var labels: [PointLabel]

    package init(name: String, points: [PlotPoint], marks: Marks = .line, labels: [PointLabel] = []) {
        self.name = name
        self.points = points
        self.marks = marks
        self.labels = labels
    }
}

/// Extra ranges an axis must cover besides the data (e.g. 0…1 for scores).
package struct AxisDomain: Sendable {
    package var x: (lower: Double, upper: Double)?
    package var y: (lower: Double, upper: Double)?
    package init(x: (lower: Double, upper: Double)? = nil, y: (lower: Double, upper: Double)? = nil) {
        self.x = x
        self.y = y
    }
}

/// Pixel size of one chart panel.
package struct PlotSize: Hashable, Sendable {
    package var width: Int
    package var height: Int
    package init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
    package static let standard = PlotSize(width: 720, height: 300)

    /// Panels are clamped to this range: smaller ones leave no room for the plot
    /// between the margins, larger ones would make the dedup bitmap needlessly big.
    static let minimum = PlotSize(width: 240, height: 200)
    static let maximum = PlotSize(width: 8000, height: 8000)

    var clamped: PlotSize {
        PlotSize(
            width: min(max(width, Self.minimum.width), Self.maximum.width),
            height: min(max(height, Self.minimum.height), Self.maximum.height))
    }
}

/// A chart panel: an SVG <g> fragment of a known size, to be stacked into a figure.
package struct Chart: Sendable {
    package var size: PlotSize
    /// SVG elements drawn in [0, width] × [0, height].
    package var body: String
    package init(size: PlotSize, body: String) {
        self.size = size
        self.body = body
    }
}
