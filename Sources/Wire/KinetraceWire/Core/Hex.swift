/// Lower-case hex, as trace files and the spec's test vectors write payloads.
package enum Hex {
    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes hex digits (either case); whitespace is ignored so spec
    /// vectors may be grouped. Returns nil, with the offending index, on bad input.
    package static func decode(_ text: some StringProtocol) -> Result<[UInt8], HexError> {
        var out: [UInt8] = []
        var high: UInt8?
        for (index, char) in text.utf8.enumerated() {
            if char == UInt8(ascii: " ") || char == UInt8(ascii: "\n") || char == UInt8(ascii: "\t") { continue }
            guard let nibble = nibble(char) else { return .failure(HexError(index: index)) }
            if let h = high { out.append(h << 4 | nibble); high = nil } else { high = nibble }
        }
        if high != nil { return .failure(HexError(index: text.utf8.count)) }
        return .success(out)
    }

    @inlinable
    package static func nibble(_ char: UInt8) -> UInt8? {
        switch char {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return char - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return char - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return char - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// Hex text that is not whole bytes of hex digits; `index` is the UTF-8 offset.
package struct HexError: Error, Hashable, Sendable {
    package var index: Int
}
