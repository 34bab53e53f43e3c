/// Fixed-point text without Foundation's String(format:), for reports.
package enum FixedPoint {
    /// `value` with `decimals` digits after the point; past Int64, Swift's own spelling, never a trap.
    package static func text(_ value: Double, _ decimals: Int = 2) -> String {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        guard scaled.isFinite, scaled < 0x1p63 else { return "\(value)" }
        let whole = Int64(scaled / scale)
        var fraction = String(Int64(scaled) - whole * Int64(scale))
        fraction = String(repeating: "0", count: max(0, decimals - fraction.count)) + fraction
        let sign = value < 0 && scaled != 0 ? "-" : ""
        return decimals == 0 ? "\(sign)\(whole)" : "\(sign)\(whole).\(fraction)"
    }
}
