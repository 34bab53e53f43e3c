// Text primitives for the SVG output: number formatting, XML escaping and a
// small element writer. Everything here is stdlib-only on purpose.

/// 10^exponent by repeated multiplication (exact up to 10^22, which covers every tick step we make).
func powerOfTen(_ exponent: Int) -> Double {
    // 10^-n as 1 / 10^n overflows to 0 past n = 308; go via 1e-300 to reach the subnormals.
    if exponent < -300 { return powerOfTen(exponent + 300) * 1e-300 }
    var result = 1.0
    for _ in 0..<min(Int(exponent.magnitude), 400) { result *= 10 }
    return exponent < 0 ? 1 / result : result
}

/// `value` with exactly `decimals` digits after the point (or fewer when trimming),
/// never "-0", and never "nan"/"inf" (non-finite input prints as "0").
func formatFixed(_ value: Double, decimals: Int, trimTrailingZeros: Bool = false) -> String {
    guard value.isFinite else { return "0" }
    let places = min(max(0, decimals), 300)
    let scaled = (value.magnitude * powerOfTen(places)).rounded(.toNearestOrAwayFromZero)
    guard scaled.isFinite, scaled < 9_007_199_254_740_992 else {
        // Past 2^53 the integer path is inexact.
        return formatScientific(value, significantDigits: 15)
    }
    let units = UInt64(scaled)
    if units == 0 {
        return places == 0 || trimTrailingZeros ? "0" : "0." + String(repeating: "0", count: places)
    }
    var digits = String(units)
    if places > 0 {
        if digits.count <= places {
            digits = String(repeating: "0", count: places + 1 - digits.count) + digits
        }
        let integerPart = digits.prefix(digits.count - places)
        var fraction = digits.suffix(places)
        if trimTrailingZeros {
            while fraction.last == "0" { fraction = fraction.dropLast() }
        }
        digits = fraction.isEmpty ? String(integerPart) : integerPart + "." + fraction
    }
    return value < 0 ? "-" + digits : digits
}

/// `value` as "m.mmme±x" with at most `significantDigits` digits (trailing zeros
/// dropped), for tick labels too large or too small for fixed point: 1e300, -2.5e-12.
func formatScientific(_ value: Double, significantDigits: Int) -> String {
    guard value.isFinite, value != 0 else { return "0" }
    let digits = min(max(1, significantDigits), 17)
    var exponent = NiceScale.decimalExponent(of: value.magnitude)
    func mantissa(_ exponent: Int) -> Double {
        // Pre-scaling keeps 10^-exponent finite for subnormal values.
        exponent < -290
            ? value.magnitude * 1e300 / powerOfTen(exponent + 300) : value.magnitude / powerOfTen(exponent)
    }
    var text = formatFixed(mantissa(exponent), decimals: digits - 1, trimTrailingZeros: true)
    if text.hasPrefix("10") {  // 9.99… rounded up to 10
        exponent += 1
        text = formatFixed(mantissa(exponent), decimals: digits - 1, trimTrailingZeros: true)
    }
    return (value < 0 ? "-" : "") + text + "e" + String(exponent)
}

/// A coordinate or length in the SVG: at most two decimals, trailing zeros dropped.
func svgNumber(_ value: Double) -> String {
    formatFixed(value, decimals: 2, trimTrailingZeros: true)
}

/// Text safe in both XML content and attribute values. Non-ASCII is written as
/// character references so the document is pure ASCII and needs no encoding
/// declaration, wherever it is inlined; characters XML 1.0 forbids become U+FFFD.
func xmlEscaped(_ text: String) -> String {
    var out = ""
    out.reserveCapacity(text.utf8.count)
    for scalar in text.unicodeScalars {
        switch scalar {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&#39;"
        case "\t", "\n", "\r": out += " "
        default:
            let value = scalar.value
            if value < 0x20 || value == 0xFFFE || value == 0xFFFF {
                out += "&#65533;"
            } else if value < 0x7F {
                out.unicodeScalars.append(scalar)
            } else {
                out += "&#\(value);"
            }
        }
    }
    return out
}

/// Estimated rendered width of `text`: 0.6 em per character is a slight
/// overestimate for sans-serif, so layouts err on the side of room.
func estimatedTextWidth(_ text: String, fontSize: Double) -> Double {
    Double(text.count) * fontSize * 0.6
}

/// `text` shortened with an ellipsis so its estimated width fits `maxWidth`.
func fitted(_ text: String, maxWidth: Double, fontSize: Double) -> String {
    guard estimatedTextWidth(text, fontSize: fontSize) > maxWidth else { return text }
    let keep = Int(maxWidth / (fontSize * 0.6)) - 1
    guard keep > 0 else { return "…" }
    return String(text.prefix(keep)) + "…"
}

enum TextAnchor: String {
    case start, middle, end
}

/// Appends SVG elements to a string; every number passes through `svgNumber`
/// and every text through `xmlEscaped`.
struct SVGWriter {
    private(set) var output = ""

    init(reservingCapacity capacity: Int = 8192) {
        output.reserveCapacity(capacity)
    }

    mutating func raw(_ markup: String) {
        output += markup
    }

    mutating func line(
        x1: Double, y1: Double, x2: Double, y2: Double, stroke: String, width: Double = 1, dash: String = "none",
        cssClass: String? = nil, dataValue: Double? = nil
    ) {
        output += "<line"
        if let cssClass { output += " class=\"\(cssClass)\"" }
        if let dataValue, dataValue.isFinite { output += " data-value=\"\(dataValue)\"" }
        output += " x1=\"\(svgNumber(x1))\" y1=\"\(svgNumber(y1))\" x2=\"\(svgNumber(x2))\" y2=\"\(svgNumber(y2))\""
        output += " stroke=\"\(stroke)\" stroke-width=\"\(svgNumber(width))\""
        if dash != "none" { output += " stroke-dasharray=\"\(dash)\"" }
        output += "/>"
    }

    mutating func rect(
        x: Double, y: Double, width: Double, height: Double, fill: String, opacity: Double? = nil
    ) {
        output += "<rect x=\"\(svgNumber(x))\" y=\"\(svgNumber(y))\" width=\"\(svgNumber(max(0, width)))\""
        output += " height=\"\(svgNumber(max(0, height)))\" fill=\"\(fill)\""
        if let opacity { output += " fill-opacity=\"\(svgNumber(opacity))\"" }
        output += "/>"
    }

    mutating func ring(cx: Double, cy: Double, r: Double, stroke: String, cssClass: String? = nil) {
        output += "<circle"
        if let cssClass { output += " class=\"\(cssClass)\"" }
        output += " cx=\"\(svgNumber(cx))\" cy=\"\(svgNumber(cy))\" r=\"\(svgNumber(r))\""
        output += " fill=\"#ffffff\" stroke=\"\(stroke)\" stroke-width=\"2\"/>"
    }

    mutating func circle(cx: Double, cy: Double, r: Double, fill: String, cssClass: String? = nil) {
        output += "<circle"
        if let cssClass { output += " class=\"\(cssClass)\"" }
        output += " cx=\"\(svgNumber(cx))\" cy=\"\(svgNumber(cy))\" r=\"\(svgNumber(r))\" fill=\"\(fill)\"/>"
    }

    mutating func text(
        _ content: String, x: Double, y: Double, fontSize: Double, anchor: TextAnchor = .start,
        fill: String = Style.textColour, bold: Bool = false, cssClass: String? = nil
    ) {
        output += "<text"
        if let cssClass { output += " class=\"\(cssClass)\"" }
        output += " x=\"\(svgNumber(x))\" y=\"\(svgNumber(y))\" font-size=\"\(svgNumber(fontSize))\""
        if anchor != .start { output += " text-anchor=\"\(anchor.rawValue)\"" }
        if bold { output += " font-weight=\"bold\"" }
        output += " fill=\"\(fill)\">\(xmlEscaped(content))</text>"
    }

    /// Text rotated a quarter turn anticlockwise around (x, y), for the y-axis title.
    mutating func verticalText(_ content: String, x: Double, y: Double, fontSize: Double) {
        output += "<text class=\"y-title\" transform=\"translate(\(svgNumber(x)) \(svgNumber(y))) rotate(-90)\""
        output += " font-size=\"\(svgNumber(fontSize))\" text-anchor=\"middle\" fill=\"\(Style.textColour)\">"
        output += "\(xmlEscaped(content))</text>"
    }
}
