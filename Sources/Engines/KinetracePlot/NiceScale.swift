// Data ranges and "nice" axes (ticks at 1, 2 or 5 × 10^k).

/// Values beyond this are skipped like NaN and ±inf: it keeps every span
/// (upper − lower) finite, so no later arithmetic can produce inf or NaN.
let plottableLimit = 1e300

/// False for NaN, ±inf and absurdly large values.
@inline(__always)
func isPlottable(_ value: Double) -> Bool {
    value.magnitude <= plottableLimit
}

/// Running minimum and maximum of plottable values.
struct Extent {
    private(set) var lower = Double.infinity
    private(set) var upper = -Double.infinity

    var isEmpty: Bool { !(lower <= upper) }

    /// Callers filter with `isPlottable` first (the hot scatter loop already has).
    @inline(__always)
    mutating func include(_ value: Double) {
        if value < lower { lower = value }
        if value > upper { upper = value }
    }

    mutating func includeIfPlottable(_ value: Double) {
        if isPlottable(value) { include(value) }
    }

    /// The x and y extents of every plottable point in `pointSets`.
    static func of(_ pointSets: [[PlotPoint]]) -> (x: Extent, y: Extent) {
        var x = Extent(), y = Extent()
        for points in pointSets {
            for point in points where isPlottable(point.x) && isPlottable(point.y) {
                x.include(point.x)
                y.include(point.y)
            }
        }
        return (x, y)
    }

    /// A range an axis can be drawn over; (0, 1) when there is nothing to show.
    var drawable: (lower: Double, upper: Double) {
        isEmpty ? (0, 1) : drawableRange(lower, upper)
    }
}

/// `lower...upper` widened when it is too narrow for ticks (a single value,
/// all-equal values): ±10 % around the value, or ±1 around zero.
func drawableRange(_ lower: Double, _ upper: Double) -> (lower: Double, upper: Double) {
    guard isPlottable(lower), isPlottable(upper), lower <= upper else { return (0, 1) }
    let magnitude = max(lower.magnitude, upper.magnitude)
    // Spans below ~1e-12 relative would need more significant digits than a Double has for distinct tick labels.
    if upper - lower >= max(magnitude * 1e-12, 1e-200) { return (lower, upper) }
    let centre = lower / 2 + upper / 2
    var pad = centre.magnitude * 0.1
    if !(pad >= 1e-200) { pad = 1 }
    return (centre - pad, centre + pad)
}

/// An axis: its drawn range (which starts and ends on a tick), the tick values and how to print them.
struct Axis: Hashable, Sendable {
    var lower: Double
    var upper: Double
    var step: Double
    var ticks: [Double]
    /// k of the step m × 10^k.
    var stepExponent: Int

    /// Digits after the point that the step needs (step 0.5 → 1, step 20 → 0).
    var decimals: Int { max(0, -stepExponent) }

    /// Fixed point normally; scientific (with just enough digits to tell the
    /// ticks apart) when fixed point would be too long or inexact.
    var labels: [String] {
        let largest = ticks.map(\.magnitude).max() ?? 0
        guard decimals > 9 || largest * powerOfTen(decimals) >= 1e15 else {
            return ticks.map { formatFixed($0, decimals: decimals) }
        }
        return ticks.map {
            $0 == 0 ? "0" : formatScientific($0, significantDigits: NiceScale.decimalExponent(of: $0.magnitude) - stepExponent + 1)
        }
    }
}

enum NiceScale {
    private static let mantissas: [Double] = [1, 2, 5]

    /// The finest 1-2-5 step whose ticks cover `lower...upper` with at most
    /// `maxTicks` ticks; the axis is rounded outward to whole steps.
    /// `integerSteps` keeps the step ≥ 1 (for counts).
    static func axis(lower: Double, upper: Double, maxTicks: Int = 8, integerSteps: Bool = false) -> Axis {
        let (low, high) = drawableRange(lower, upper)
        let maxTicks = max(2, maxTicks)
        var exponent = decimalExponent(of: (high - low) / Double(maxTicks - 1))
        if integerSteps { exponent = max(exponent, 0) }
        var mantissaIndex = 0
        while true {
            let mantissa = mantissas[mantissaIndex]
            let step = stepValue(mantissa: mantissa, exponent: exponent)
            // The epsilon keeps float noise (0.3 / 0.1 = 2.9999…) from adding a tick.
            let first = (low / step + 1e-9).rounded(.down)
            var last = (high / step - 1e-9).rounded(.up)
            if last <= first { last = first + 1 }
            let count = last - first + 1
            // Each candidate step is at least twice the previous one, so this ends within a few rounds.
            if count <= Double(maxTicks) {
                let ticks = (0..<Int(count)).map {
                    tickValue(index: first + Double($0), mantissa: mantissa, exponent: exponent)
                }
                return Axis(
                    lower: ticks[0], upper: ticks[ticks.count - 1], step: step, ticks: ticks, stepExponent: exponent)
            }
            mantissaIndex += 1
            if mantissaIndex == mantissas.count {
                mantissaIndex = 0
                exponent += 1
            }
        }
    }

    /// An axis over `lower...upper` widened by `padding` × the span at each end,
    /// with nice ticks inside it: unlike `axis`, its ends are not ticks, so a
    /// value at the data's extreme sits inside the plot, not on its frame.
    static func paddedAxis(lower: Double, upper: Double, maxTicks: Int = 8, padding: Double) -> Axis {
        let (low, high) = drawableRange(lower, upper)
        let pad = (high - low) * max(0, padding)
        let paddedLow = low - pad, paddedHigh = high + pad
        // Two spare ticks, as the outward rounding of `axis` adds up to two that the filter removes.
        let nice = axis(lower: paddedLow, upper: paddedHigh, maxTicks: max(2, maxTicks) + 2)
        let tolerance = (paddedHigh - paddedLow) * 1e-9
        let ticks = nice.ticks.filter { $0 >= paddedLow - tolerance && $0 <= paddedHigh + tolerance }
        return Axis(lower: paddedLow, upper: paddedHigh, step: nice.step, ticks: ticks, stepExponent: nice.stepExponent)
    }

    /// k with 10^k ≤ value < 10^(k+1), for a positive finite value.
    static func decimalExponent(of value: Double) -> Int {
        guard value > 0, value.isFinite else { return 0 }
        var exponent = Int((Double(value.exponent) * 0.301_029_995_663_981_2).rounded(.down))
        while powerOfTen(exponent + 1) <= value { exponent += 1 }
        while powerOfTen(exponent) > value { exponent -= 1 }
        return exponent
    }

    private static func stepValue(mantissa: Double, exponent: Int) -> Double {
        exponent >= 0 ? mantissa * powerOfTen(exponent) : mantissa / powerOfTen(-exponent)
    }

    /// index × step, divided rather than multiplied for negative exponents so 3 × 0.1 prints as 0.3;
    /// adding 0 turns −0 into +0.
    private static func tickValue(index: Double, mantissa: Double, exponent: Int) -> Double {
        let multiple = index * mantissa
        let value = exponent >= 0 ? multiple * powerOfTen(exponent) : multiple / powerOfTen(-exponent)
        return value + 0.0
    }
}
