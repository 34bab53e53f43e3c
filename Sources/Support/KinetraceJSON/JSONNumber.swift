/// Correctly rounded decimal → Double for JSON number tokens, without
/// making a String for the common case. A number with at most 19
/// significant digits and a decimal exponent within ±19 (every number a
/// JSONEncoder writes for a motion value) is converted exactly with 128-bit
/// integer arithmetic; anything else falls back to the standard library's
/// parser, which is exact too but allocates.
package enum JSONNumber {
    /// The value of a token that `JSONScanner.readNumberToken` accepted (grammar already checked).
    /// Infinite when the value overflows a Double, as the standard library's parser gives.
    @inlinable
    package static func double(_ token: UnsafeRawBufferPointer) -> Double {
        fastDouble(token) ?? slowDouble(token)
    }

    @usableFromInline
    static func slowDouble(_ token: UnsafeRawBufferPointer) -> Double {
        Double(String(decoding: token, as: UTF8.self)) ?? .nan
    }

    /// nil when the token needs the general algorithm.
    @inlinable
    package static func fastDouble(_ token: UnsafeRawBufferPointer) -> Double? {
        let count = token.count
        guard count > 0, let p = token.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
        var i = 0
        let negative = p[0] == UInt8(ascii: "-")
        if negative { i = 1 }
        // Leading zeros carry nothing (0.000123).
        var exponent = 0
        while i < count, p[i] == UInt8(ascii: "0") { i &+= 1 }
        var mantissa: UInt64 = 0
        var digits = 0
        while i < count, p[i] &- 0x30 < 10 {
            mantissa = mantissa &* 10 &+ UInt64(p[i] &- 0x30)
            digits &+= 1
            i &+= 1
        }
        if i < count, p[i] == UInt8(ascii: ".") {
            i &+= 1
            if mantissa == 0 {
                while i < count, p[i] == UInt8(ascii: "0") { exponent &-= 1; i &+= 1 }
            }
            while i < count, p[i] &- 0x30 < 10 {
                mantissa = mantissa &* 10 &+ UInt64(p[i] &- 0x30)
                digits &+= 1
                exponent &-= 1
                i &+= 1
            }
        }
        // More than 19 significant digits may have wrapped the mantissa: the general path decides.
        guard digits <= 19 else { return nil }
        if i < count, p[i] | 0x20 == UInt8(ascii: "e") {
            i &+= 1
            var exponentNegative = false
            if i < count, p[i] == UInt8(ascii: "+") || p[i] == UInt8(ascii: "-") {
                exponentNegative = p[i] == UInt8(ascii: "-")
                i &+= 1
            }
            var written = 0
            while i < count, p[i] &- 0x30 < 10 {
                written = min(written &* 10 &+ Int(p[i] &- 0x30), 100_000)
                i &+= 1
            }
            exponent &+= exponentNegative ? -written : written
        }
        guard i == count else { return nil }
        if mantissa == 0 { return negative ? -0.0 : 0.0 }
        guard exponent >= -19, exponent <= 19 else { return nil }
        let magnitude: Double
        if mantissa <= 1 << 53 && exponent >= -19 && exponent <= 19 && powerOfTenIsExact(exponent) {
            // Clinger: both operands exact, so one IEEE operation rounds correctly.
            magnitude = exponent >= 0 ? Double(mantissa) * Double(powerOfTen(exponent)) : Double(mantissa) / Double(powerOfTen(-exponent))
        } else if exponent >= 0 {
            // m × 10^e exactly in 128 bits, then rounded once.
            let product = mantissa.multipliedFullWidth(by: powerOfTen(exponent))
            magnitude = rounded(high: product.high, low: product.low, sticky: false, binaryExponent: 0)
        } else {
            // m / 10^k: shift m so the quotient has 63 or 64 bits; the remainder says whether it was exact.
            let divisor = powerOfTen(-exponent)
            let shift = 63 - (64 - mantissa.leadingZeroBitCount) + (64 - divisor.leadingZeroBitCount)
            let high = shift >= 64 ? mantissa << (shift - 64) : (shift == 0 ? 0 : mantissa >> (64 - shift))
            let low = shift >= 64 ? 0 : mantissa << shift
            let (quotient, remainder) = divisor.dividingFullWidth((high: high, low: low))
            magnitude = rounded(high: 0, low: quotient, sticky: remainder != 0, binaryExponent: -shift)
        }
        return negative ? -magnitude : magnitude
    }

    /// 10^k for 0 ≤ k ≤ 19.
    @inlinable @inline(__always)
    static func powerOfTen(_ k: Int) -> UInt64 {
        var result: UInt64 = 1
        for _ in 0..<k { result &*= 10 }
        return result
    }

    /// Whether 10^|k| is exactly a Double (5^|k| < 2^53: |k| ≤ 22; here ≤ 19 anyway).
    @inlinable @inline(__always)
    static func powerOfTenIsExact(_ k: Int) -> Bool { k >= -19 && k <= 19 }

    /// (high:low) × 2^binaryExponent, rounded to nearest even; `sticky` says non-zero bits were cut below `low`.
    @inlinable
    static func rounded(high: UInt64, low: UInt64, sticky: Bool, binaryExponent: Int) -> Double {
        var high = high, low = low, exponent = binaryExponent, sticky = sticky
        // Bring the value into `low` (at most 64 significant bits), remembering what falls off.
        if high != 0 {
            let shift = 64 - high.leadingZeroBitCount
            sticky = sticky || (low << (64 - shift)) != 0
            low = (low >> shift) | (high << (64 - shift))
            high = 0
            exponent += shift
        }
        let width = 64 - low.leadingZeroBitCount
        guard width > 53 else { return Double(sign: .plus, exponent: exponent, significand: Double(low)) }
        let cut = width - 53
        var kept = low >> cut
        let rest = low & ((1 << cut) - 1)
        let half: UInt64 = 1 << (cut - 1)
        if rest > half || (rest == half && (sticky || kept & 1 == 1)) {
            kept += 1
        }
        return Double(sign: .plus, exponent: exponent + cut, significand: Double(kept))
    }
}
