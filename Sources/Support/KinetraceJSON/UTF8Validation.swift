/// Well-formed UTF-8 as RFC 3629 defines it (Unicode's table 3-7): no
/// overlong forms, no surrogates (U+D800–U+DFFF), nothing above U+10FFFF,
/// no stray continuation bytes, no sequence cut short. JSONScanner does not
/// check this (the trace reader's hot path does not need it); a reader whose
/// spec requires UTF-8 calls this once on the whole text.
package enum UTF8Validation {
    /// The offset of the first byte of the first ill-formed sequence in
    /// `bytes`, or nil when all of it is well-formed.
    @inlinable
    package static func firstInvalidOffset(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        let count = bytes.count
        var i = 0
        let highBits: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func word(_ offset: Int) -> UInt64 { base.loadUnaligned(fromByteOffset: offset, as: UInt64.self) }
        while i < count {
            // ASCII 32 bytes, then 8, at a time: all of a message the game sends.
            while i &+ 32 <= count {
                let low = word(i) | word(i &+ 8)
                let high = word(i &+ 16) | word(i &+ 24)
                guard (low | high) & highBits == 0 else { break }
                i &+= 32
            }
            while i &+ 8 <= count, word(i) & highBits == 0 {
                i &+= 8
            }
            // The last bytes, as one word ending at the end (it may overlap bytes already checked).
            if i < count, i &+ 8 > count, count >= 8, word(count &- 8) & highBits == 0 {
                return nil
            }
            guard i < count else { return nil }
            let lead = base.load(fromByteOffset: i, as: UInt8.self)
            if lead < 0x80 {
                i &+= 1
                continue
            }
            // The sequence's length and the range its second byte must be in;
            // the narrower ranges are what exclude overlongs, surrogates and > U+10FFFF.
            let length: Int
            var low: UInt8 = 0x80, high: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; high = 0x9F
            case 0xF0: length = 4; low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; high = 0x8F
            default: return i  // a continuation byte, C0, C1 (always overlong) or F5–FF
            }
            guard i &+ length <= count else { return i }
            let second = base.load(fromByteOffset: i &+ 1, as: UInt8.self)
            guard second >= low, second <= high else { return i }
            var k = 2
            while k < length {
                guard base.load(fromByteOffset: i &+ k, as: UInt8.self) & 0xC0 == 0x80 else { return i }
                k &+= 1
            }
            i &+= length
        }
        return nil
    }

    /// Whether all of `bytes` is well-formed UTF-8.
    @inlinable
    package static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool { firstInvalidOffset(bytes) == nil }
}
