/// One data point of a scatter series.
public struct PlotPoint: Hashable, Sendable {
    public var x: Double
    public var y: Double
    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }
}

/// One named data series, drawn in its own colour.
public struct PlotSeries: Sendable {
    public var name: String
    public var points: [PlotPoint]
    public init(name: String, points: [PlotPoint]) {
        self.name = name
        self.points = points
    }
}

/// One named sample for an empirical CDF, drawn in its own colour.
public struct CDFSeries: Sendable {
    public var name: String
    public var values: [Double]
    public init(name: String, values: [Double]) {
        self.name = name
        self.values = values
    }
}

/// A labelled reference line: horizontal on scatter plots (a y value), vertical on histograms and CDFs (an x value).
public struct ReferenceLine: Hashable, Sendable {
    public var label: String
    public var value: Double
    public var dashed: Bool
    public init(label: String, value: Double, dashed: Bool = true) {
        self.label = label
        self.value = value
        self.dashed = dashed
    }
}

/// Pixel size of one chart panel.
public struct PlotSize: Hashable, Sendable {
    public var width: Int
    public var height: Int
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
    public static let standard = PlotSize(width: 720, height: 300)

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
public struct Chart: Sendable {
    public var size: PlotSize
    /// SVG elements drawn in [0, width] × [0, height].
    public var body: String
    public init(size: PlotSize, body: String) {
        self.size = size
        self.body = body
    }
}
