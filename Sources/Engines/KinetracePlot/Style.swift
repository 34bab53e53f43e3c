/// Fixed look of every chart, in one place.
enum Style {
    static let titleFontSize = 14.0
    static let axisTitleFontSize = 12.0
    static let tickFontSize = 11.0
    static let legendFontSize = 11.0
    static let referenceFontSize = 10.0
    static let pointLabelFontSize = 10.0
    static let noDataFontSize = 13.0

    static let textColour = "#222222"
    static let mutedTextColour = "#777777"
    static let axisColour = "#444444"
    static let gridColour = "#e6e6e6"

    // Vertical bands, top to bottom.
    static let titleBaseline = 20.0
    static let titleBand = 28.0
    static let legendRowHeight = 16.0
    static let referenceRowHeight = 12.0
    static let gapAbovePlot = 8.0
    static let bottomMargin = 46.0
    // Horizontal bands, left to right.
    static let yTitleBand = 24.0
    static let yTitleBaseline = 16.0
    static let tickLabelGap = 8.0
    static let tickLength = 5.0
    static let outerPadding = 10.0

    /// Okabe–Ito, colour-blind safe; black is left for the axes and yellow
    /// goes last because it is faint on white.
    static let seriesColours = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442"]
    /// A dash pattern per series as well as a colour, so lines stay apart in
    /// greyscale print and for any colour vision ("none" is solid).
    static let seriesDashes = ["none", "7 4", "2 3", "9 3 2 3", "4 2", "12 4", "1 3"]
    /// Reference lines: near-black first (usually the mean), then Okabe–Ito
    /// accents, each with its own dash pattern, none of them a series' pattern but solid.
    static let referenceColours = ["#222222", "#D55E00", "#CC79A7", "#009E73"]
    static let referenceDashes = ["none", "6 3", "2 2", "10 3 3 3"]

    static func seriesColour(_ index: Int) -> String { seriesColours[index % seriesColours.count] }
    /// Past the palette the colours repeat, so the pattern moves on a step per round to keep pairs distinct.
    static func seriesDash(_ index: Int) -> String {
        seriesDashes[(index + index / seriesColours.count) % seriesDashes.count]
    }
    static func referenceColour(_ index: Int) -> String { referenceColours[index % referenceColours.count] }
    static func referenceDash(_ index: Int) -> String { referenceDashes[index % referenceDashes.count] }

    /// Fraction of the data span left free at each end of a padded axis, so no
    /// mark sits on the frame (precision 1.0 stays inside the plot).
    static let axisPadding = 0.04
}
