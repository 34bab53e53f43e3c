import KinetraceJSON
import Testing

/// UTF8Validation against the standard library's own UTF-8 validation, on
/// every short input around the edges of table 3-7.
@Suite struct UTF8ValidationTests {
    static func check(_ bytes: [UInt8]) -> Int? { bytes.withUnsafeBytes { UTF8Validation.firstInvalidOffset($0) } }

    static func standardLibraryAccepts(_ bytes: [UInt8]) -> Bool { String(validating: bytes, as: UTF8.self) != nil }

    /// Bytes at and around each boundary a second, third or fourth byte can cross.
    static let edges: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xFF]

    @Test func agreesWithTheStandardLibrary() {
        var inputs: [[UInt8]] = []
        for a in 0...255 {
            inputs.append([UInt8(a)])
            for b in 0...255 { inputs.append([UInt8(a), UInt8(b)]) }
        }
        for lead in 0xC0...0xFF {
            for b in Self.edges {
                for c in Self.edges {
                    inputs.append([UInt8(lead), b, c])
                    for d in Self.edges { inputs.append([UInt8(lead), b, c, d]) }
                }
            }
        }
        var disagreements: [[UInt8]] = []
        for input in inputs where (Self.check(input) == nil) != Self.standardLibraryAccepts(input) {
            disagreements.append(input)
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(10))")
        #expect(inputs.count == 256 + 256 * 256 + 64 * Self.edges.count * Self.edges.count * (1 + Self.edges.count))
    }

    /// The offset is the first byte of the first bad sequence, after any run of ASCII (the
    /// 32- and 8-byte paths, and the last word read overlapping) and any good sequence before it.
    @Test func theOffsetIsTheBadSequencesFirstByte() {
        for prefix in 0...70 {
            let ascii = [UInt8](repeating: UInt8(ascii: "a"), count: prefix)
            #expect(Self.check(ascii) == nil)
            #expect(Self.check(ascii + [0xE2, 0x82, 0xAC] + ascii) == nil)
            #expect(Self.check(ascii + [0xE2, 0x82]) == prefix, "cut at the end after \(prefix)")
            #expect(Self.check(ascii + [0xE2, 0x82, 0x22] + ascii) == prefix)
            #expect(Self.check(ascii + [0xC3, 0xA9] + ascii + [0xED, 0xA0, 0x80]) == 2 * prefix + 2)
            #expect(Self.check(ascii + [0xF4, 0x90, 0x80, 0x80, 0x80]) == prefix)
        }
        #expect(Self.check([]) == nil)
        // A bad byte at every position of 80 ASCII bytes, each path in turn.
        for position in 0..<80 {
            var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: 80)
            bytes[position] = 0xFF
            #expect(Self.check(bytes) == position)
            #expect(Self.check(Array(bytes[...position])) == position)
        }
    }
}
