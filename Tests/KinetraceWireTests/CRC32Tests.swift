import Testing
@testable import KinetraceWire

@Suite struct CRC32Tests {
    @Test func checkValueOfTheCatalogue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
    }

    @Test func emptyInputIsZero() {
        #expect(CRC32.checksum([UInt8]()) == 0)
    }

    @Test func agreesWithTheBitwiseDefinitionAtEveryLength() {
        // The slicing-by-8 loop must equal the one-bit-at-a-time definition,
        // including the byte-wise tail for lengths not a multiple of 8.
        var rng = Xorshift(seed: 42)
        for length in 0..<80 {
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            var c: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                c ^= UInt32(byte)
                for _ in 0..<8 { c = c & 1 != 0 ? (c >> 1) ^ 0xEDB8_8320 : c >> 1 }
            }
            #expect(CRC32.checksum(bytes) == ~c, "length \(length)")
        }
    }

    @Test func updateContinuesAChecksum() {
        let a = Array("12345".utf8), b = Array("6789".utf8)
        let whole = a.withUnsafeBytes { ra in b.withUnsafeBytes { rb in CRC32.update(CRC32.checksum(ra), rb) } }
        #expect(whole == 0xCBF4_3926)
    }
}

/// Tiny deterministic generator for test data.
struct Xorshift {
    var state: UInt64
    init(seed: UInt64) { state = seed | 1 }
    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }
}
